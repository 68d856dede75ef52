// Compiles the WebAssembly text modules (api-server/**/*.wat) to the binaries committed beside them (`make
// wasm`). The binaries are committed so that running blockfeed needs no compiler; a unit test compiles the
// text again and compares, so a binary cannot drift from its source.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabtModule from 'wabt';

export const WASM_SOURCES = ['api-server/ingest/flat-json-scan.wat'].map((path) => fileURLToPath(new URL(`../${path}`, import.meta.url)));

export const binaryPathOf = (source: string) => source.replace(/\.wat$/, '.wasm');

/** The binary of a .wat file: no debug names, so the bytes depend on the source alone. */
export async function compileWat(source: string): Promise<Uint8Array> {
  const wabt = await wabtModule();
  const parsed = wabt.parseWat(source, readFileSync(source, 'utf8'), { simd: true, bulk_memory: true });
  try {
    parsed.resolveNames();
    parsed.validate();
    return parsed.toBinary({ log: false, write_debug_names: false }).buffer;
  } finally {
    parsed.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const source of WASM_SOURCES) {
    writeFileSync(binaryPathOf(source), await compileWat(source));
    process.stdout.write(`wrote ${binaryPathOf(source)}\n`);
  }
}
