// A snapshot of the enrichment tables (tables.ts) in one binary file: the IPv4 range arrays and ASN names as
// raw bytes, the small lists (country codes, regions, curated ASNs and scanner organisations) as JSON. Every
// process that enriches — each ingest, serve, reclassify — would otherwise spend half a second parsing the
// same CSV files; mapping the snapshot takes a few milliseconds.
//
// The file lives in node_modules/.cache/blockfeed/ (recreated with the packages it is made from) under a
// name derived from everything it is made of: the packages' versions, the data/ files' contents, this format's
// version and the machine's byte order. A missing, stale or damaged file is rebuilt from the sources; a
// directory that cannot be written to only means no snapshot is kept.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { AsnDictionary, packageFile } from './csv-ranges.ts';
import type { ScannerOrganisation } from './curated.ts';
import { RegionLookup, type Region } from './ip2region.ts';
import type { NetRules } from './net-type.ts';
import { Ipv4Ranges } from './ranges.ts';
import { ASN_PACKAGE, COUNTRY_PACKAGE, buildEnrichmentTables, lazyV6Tables, type EnrichmentTables } from './tables.ts';

/** Bump when the tables or this layout change in a way the file name would not show. */
const FORMAT = 1;
const MAGIC = Buffer.from('BFENRICH');
const CACHE_DIR = fileURLToPath(new URL('../../node_modules/.cache/blockfeed/', import.meta.url));
const DATA_DIR = fileURLToPath(new URL('../../data/', import.meta.url));

type ArrayName =
  | 'countryStarts' | 'countryEnds' | 'countryValues' | 'asnStarts' | 'asnEnds' | 'asnValues'
  | 'asnNumbers' | 'asnNameEnds' | 'asnNames' | 'regionStarts' | 'regionEnds' | 'regionValues';

interface Header {
  countries: string[];
  regions: Region[];
  rules: Record<keyof NetRules, { asns: number[]; carrierKeywords: string[] }>;
  scanners: ScannerOrganisation[];
  /** Byte offset and length of each array in the file. */
  arrays: Record<ArrayName, [offset: number, bytes: number]>;
}

/** The snapshot's file name: a digest of everything the tables are made of. */
export function snapshotName(): string {
  const h = createHash('sha256').update(`${FORMAT}\0${endianness()}\0`);
  for (const pkg of [COUNTRY_PACKAGE[0], ASN_PACKAGE[0], 'ip2region']) {
    const { version } = JSON.parse(readFileSync(packageFile(pkg, 'package.json'), 'utf8')) as { version: string };
    h.update(`${pkg}@${version}\0`);
  }
  // Every data file, so that one added later cannot leave a stale snapshot in use.
  for (const file of readdirSync(DATA_DIR).filter((f) => f.endsWith('.yaml')).sort()) {
    h.update(`${file}\0`).update(readFileSync(`${DATA_DIR}${file}`)).update('\0');
  }
  return `enrichment-${h.digest('hex').slice(0, 24)}.bin`;
}

/** The tables from the cached snapshot, or built from their sources (and the snapshot written). */
export function loadEnrichmentTables(dir = CACHE_DIR): EnrichmentTables {
  const file = `${dir}${snapshotName()}`;
  let bytes: Buffer | undefined;
  try {
    bytes = readFileSync(file);
  } catch {
    /* not made yet */
  }
  if (bytes) {
    const tables = readSnapshot(bytes);
    if (tables) return tables;
  }
  const tables = buildEnrichmentTables();
  try {
    mkdirSync(dir, { recursive: true });
    // Written aside and renamed: a reader sees the whole file or none.
    const partial = `${file}.${process.pid}-${threadId}.partial`;
    writeFileSync(partial, encodeSnapshot(tables));
    renameSync(partial, file);
  } catch {
    /* a read-only install: no snapshot, the tables are built each time */
  }
  return tables;
}

/** The snapshot's bytes. */
export function encodeSnapshot(t: EnrichmentTables): Buffer {
  const { asns, ends, names } = t.asns.arrays();
  const arrays: [ArrayName, Uint8Array][] = [
    ['countryStarts', t.countryV4.starts], ['countryEnds', t.countryV4.ends], ['countryValues', t.countryV4.values],
    ['asnStarts', t.asnV4.starts], ['asnEnds', t.asnV4.ends], ['asnValues', t.asnV4.values],
    ['asnNumbers', asns], ['asnNameEnds', ends], ['asnNames', names],
    ['regionStarts', t.regions.v4.starts], ['regionEnds', t.regions.v4.ends], ['regionValues', t.regions.v4.values],
  ].map(([name, a]) => [name as ArrayName, new Uint8Array((a as Uint8Array).buffer, (a as Uint8Array).byteOffset, (a as Uint8Array).byteLength)]);
  const header: Omit<Header, 'arrays'> = {
    countries: [...t.countries],
    regions: [...t.regions.regions],
    rules: {
      edu: { asns: [...t.rules.edu.asns], carrierKeywords: t.rules.edu.carrierKeywords },
      hosting: { asns: [...t.rules.hosting.asns], carrierKeywords: t.rules.hosting.carrierKeywords },
      mobile: { asns: [...t.rules.mobile.asns], carrierKeywords: t.rules.mobile.carrierKeywords },
    },
    scanners: t.scanners,
  };
  // The arrays follow the header, each at a multiple of 8 (typed arrays are viewed in place when read).
  const placed = {} as Header['arrays'];
  let at = 0;
  for (const [name, a] of arrays) {
    placed[name] = [at, a.byteLength];
    at += Math.ceil(a.byteLength / 8) * 8;
  }
  const json = Buffer.from(JSON.stringify({ ...header, arrays: placed }));
  const start = Math.ceil((MAGIC.length + 4 + json.length) / 8) * 8;
  const out = Buffer.alloc(start + at);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(json.length, MAGIC.length);
  json.copy(out, MAGIC.length + 4);
  for (const [name, a] of arrays) out.set(a, start + placed[name][0]);
  return out;
}

/** The tables in a snapshot's bytes, or undefined if they are not a whole snapshot of this format. */
export function readSnapshot(bytes: Buffer): EnrichmentTables | undefined {
  try {
    if (bytes.length < MAGIC.length + 4 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const jsonLength = bytes.readUInt32LE(MAGIC.length);
    const header = JSON.parse(bytes.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + jsonLength)) as Header;
    const start = Math.ceil((MAGIC.length + 4 + jsonLength) / 8) * 8;
    // Typed arrays need aligned offsets: a buffer that does not start on a multiple of 8 is copied once.
    const aligned = bytes.byteOffset % 8 === 0 ? bytes : Buffer.from(bytes);
    const u32 = (name: ArrayName) => {
      const [offset, length] = header.arrays[name];
      if (start + offset + length > aligned.length) throw new RangeError(`${name} past the end`);
      return new Uint32Array(aligned.buffer, aligned.byteOffset + start + offset, length / 4);
    };
    const ranges = (s: ArrayName, e: ArrayName, v: ArrayName) => {
      const starts = u32(s);
      return new Ipv4Ranges(starts, u32(e), u32(v), starts.length);
    };
    const [namesAt, namesLength] = header.arrays.asnNames;
    const rule = (r: { asns: number[]; carrierKeywords: string[] }) => ({ asns: new Set(r.asns), carrierKeywords: r.carrierKeywords });
    return {
      countryV4: ranges('countryStarts', 'countryEnds', 'countryValues'),
      countries: header.countries,
      asnV4: ranges('asnStarts', 'asnEnds', 'asnValues'),
      asns: AsnDictionary.fromArrays({
        asns: u32('asnNumbers'),
        ends: u32('asnNameEnds'),
        names: aligned.subarray(start + namesAt, start + namesAt + namesLength),
      }),
      regions: new RegionLookup({ v4: ranges('regionStarts', 'regionEnds', 'regionValues'), regions: header.regions }),
      rules: { edu: rule(header.rules.edu), hosting: rule(header.rules.hosting), mobile: rule(header.rules.mobile) },
      scanners: header.scanners,
      v6: lazyV6Tables(),
    };
  } catch {
    return undefined;
  }
}
