// The byte-level twin of flat-json.ts, for the hot path of a bulk ingest: reads one line of UTF-8 bytes as
// a flat JSON object and records where the wanted fields' values are, without making a single string. Only
// the plainest lines qualify — ASCII only, no nesting, keys without escapes; anything else (and anything
// that is not valid JSON) is refused, and the caller hands the line to the general path, so what a line
// means never depends on which reader read it. String values may hold escapes (a shell command's quotes):
// such fields are marked `escaped`, and decodeAscii gives their characters.
//
// The scan itself is WebAssembly (flat-json-scan.wat): string contents, most of a line, are scanned sixteen
// bytes at a time. Each line is copied into the scanner's memory first (~30 ms per million lines).
import { readFileSync } from 'node:fs';
import { BACKSLASH, ZERO } from './json-grammar.ts';

/** What a field's value is (`kind`); ABSENT when the line does not have the field. */
export const ABSENT = 0;
export const STRING = 1;
export const NUMBER = 2;
export const TRUE = 3;
export const FALSE = 4;
export const NULL = 5;

interface ScanExports {
  memory: WebAssembly.Memory;
  want: (fields: number) => void;
  read: (at: number, end: number, bias: number) => number;
  [layout: string]: unknown;
}

let compiled: WebAssembly.Module | undefined;

/** The scanner, compiled once per thread (a few milliseconds); every FlatFields has an instance of its own. */
function scanner(): ScanExports {
  compiled ??= new WebAssembly.Module(readFileSync(new URL('./flat-json-scan.wasm', import.meta.url)));
  return new WebAssembly.Instance(compiled).exports as unknown as ScanExports;
}

/** Where each wanted field's value was found in the last line read (indexes are the wanted keys' order). */
export class FlatFields {
  readonly kind: Uint8Array;
  /** 1 where a string value holds escapes (its bytes are then not its characters: see decodeAscii). */
  readonly escaped: Uint8Array;
  /** For strings the characters between the quotes; for numbers and literals the token. */
  readonly start: Int32Array;
  readonly end: Int32Array;
  private readonly scan: ScanExports['read'];
  /** Where a line is copied to be read: a longer line than it holds is refused (for the general path). */
  private readonly lineCopy: Buffer;
  private readonly lineAt: number;

  constructor(wanted: readonly string[]) {
    const exports = scanner();
    const at = (name: string) => (exports[name] as WebAssembly.Global).value as number;
    const memory = exports.memory.buffer;
    if (wanted.length > at('MAX_FIELDS')) throw new Error(`FlatFields: at most ${at('MAX_FIELDS')} fields`);
    // The wanted names, grouped by length: BY_LENGTH gives each length's first entry and count.
    const bytes = new Uint8Array(memory);
    const view = new DataView(memory);
    const order = wanted.map((name, id) => ({ name: Buffer.from(name), id })).sort((a, b) => a.name.length - b.name.length);
    let names = at('NAMES');
    order.forEach(({ name, id }, entry) => {
      if (name.length > at('MAX_NAME') || name.some((c) => c < 32 || c > 126)) throw new Error(`FlatFields: ${JSON.stringify(wanted[id])} is not a plain key`);
      if (names + name.length > at('NAMES_END')) throw new Error('FlatFields: the wanted names are too long');
      bytes.set(name, names);
      view.setUint32(at('ENTRIES') + entry * 8, names, true);
      view.setUint32(at('ENTRIES') + entry * 8 + 4, id, true);
      names += name.length;
      const byLength = at('BY_LENGTH') + name.length * 2;
      if (bytes[byLength + 1] === 0) bytes[byLength] = entry;
      (bytes[byLength + 1] as number)++;
    });
    exports.want(wanted.length);
    this.scan = exports.read;
    this.kind = new Uint8Array(memory, at('KIND'), wanted.length);
    this.escaped = new Uint8Array(memory, at('ESCAPED'), wanted.length);
    this.start = new Int32Array(memory, at('START'), wanted.length);
    this.end = new Int32Array(memory, at('END'), wanted.length);
    this.lineAt = at('LINE');
    this.lineCopy = Buffer.from(memory, at('LINE'), at('LINE_END') - at('LINE'));
  }

  /**
   * Reads line[start, end) (no line terminator); true when it is a flat object of plain ASCII values, and the
   * wanted fields' places are recorded (as indexes into `line`). False: the caller must read the line another way.
   */
  read(line: Buffer, start: number, end: number): boolean {
    if (end - start > this.lineCopy.length) return false;
    line.copy(this.lineCopy, 0, start, end);
    return this.scan(this.lineAt, this.lineAt + end - start, start - this.lineAt) === 1;
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

const UNESCAPED: Record<number, number> = { 34: 34, 92: 92, 47: 47, 98: 8, 102: 12, 110: 10, 114: 13, 116: 9 };

/**
 * The characters of the escaped string value line[start, end) (as read: valid escapes, ASCII) written into
 * `out` from 0; returns their count, or -1 when one is not ASCII or is NUL (such values go the general way).
 */
export function decodeAscii(line: Buffer, start: number, end: number, out: Buffer): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = line[i] as number;
    if (c !== BACKSLASH) {
      out[n++] = c;
      continue;
    }
    const e = line[i + 1] as number;
    if (e === 117) {
      const code = (hexValue(line[i + 2] as number) << 12) | (hexValue(line[i + 3] as number) << 8) | (hexValue(line[i + 4] as number) << 4) | hexValue(line[i + 5] as number);
      if (code === 0 || code > 126) return -1;
      out[n++] = code;
      i += 5;
    } else {
      out[n++] = UNESCAPED[e] as number;
      i++;
    }
  }
  return n;
}

/** Whether line[start, end) spells `text` (ASCII). */
export function bytesEqual(line: Buffer, start: number, end: number, text: Buffer): boolean {
  if (end - start !== text.length) return false;
  for (let k = 0; k < text.length; k++) if (line[start + k] !== text[k]) return false;
  return true;
}

/**
 * A plain JSON integer token (no sign, fraction or exponent; at most 9 digits) as a number, or -1. Wider
 * forms are left to the general path.
 */
export function plainInteger(line: Buffer, start: number, end: number): number {
  if (end - start < 1 || end - start > 9) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = (line[i] as number) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}
