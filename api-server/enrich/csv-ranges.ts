// Loads the @ip-location-db "-num" CSV files (start,end,value[,name]) into range tables. The files are sorted
// and non-overlapping; IPv4 bounds are decimal integers, IPv6 bounds decimal 128-bit integers. Parsed from
// bytes, so that the 20 MB files never become hundreds of thousands of strings (start-up RSS stays low).
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ipv4RangesBuilder, Ipv6RangesBuilder, type Ipv4Ranges, type Ipv6Ranges } from './ranges.ts';

const require = createRequire(import.meta.url);

/** Absolute path of a file inside an installed npm package. */
export function packageFile(pkg: string, file: string): string {
  return require.resolve(`${pkg}/${file}`);
}

const COMMA = 44;
const NEWLINE = 10;

/**
 * Calls `row(startAt, endAt, valueAt, restAt, eol)` with the byte offsets of each line's fields; `restAt` is
 * -1 when the line has only three fields.
 */
function eachRow(data: Buffer, row: (s: number, e: number, v: number, rest: number, eol: number) => void): void {
  let pos = 0;
  while (pos < data.length) {
    let eol = data.indexOf(NEWLINE, pos);
    if (eol < 0) eol = data.length;
    const c1 = data.indexOf(COMMA, pos);
    const c2 = c1 < 0 ? -1 : data.indexOf(COMMA, c1 + 1);
    if (c1 > pos && c2 > c1 && c2 < eol) {
      const c3 = data.indexOf(COMMA, c2 + 1);
      row(pos, c1 + 1, c2 + 1, c3 >= 0 && c3 < eol ? c3 + 1 : -1, data[eol - 1] === 13 ? eol - 1 : eol);
    }
    pos = eol + 1;
  }
}

function decimalAt(data: Buffer, at: number): number {
  let n = 0;
  for (let i = at; i < data.length; i++) {
    const d = (data[i] as number) - 48;
    if (d < 0 || d > 9) break;
    n = n * 10 + d;
  }
  return n;
}

function fieldText(data: Buffer, from: number, to: number): string {
  let text = data.toString('utf8', from, to);
  if (text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1).replaceAll('""', '"');
  return text;
}

function bigDecimalAt(data: Buffer, at: number): bigint {
  let end = at;
  while (end < data.length && (data[end] as number) >= 48 && (data[end] as number) <= 57) end++;
  return BigInt(data.toString('latin1', at, end));
}

/** The distinct values of a table, numbered in the order they were first seen. */
export interface Dictionary<T> {
  readonly size: number;
  /** Adds the value of the row whose value field starts at `valueAt` (`restAt`: the fourth field or -1). */
  add(data: Buffer, valueAt: number, restAt: number, eol: number): void;
  get(index: number): T | undefined;
}

export interface CsvTable<T> {
  v4: Ipv4Ranges;
  v6: () => Ipv6Ranges;
  /** value index → value */
  dictionary: Dictionary<T>;
}

class ArrayDictionary<T> implements Dictionary<T> {
  private readonly values: T[] = [];
  private readonly make: (data: Buffer, valueAt: number, restAt: number, eol: number) => T;

  constructor(make: (data: Buffer, valueAt: number, restAt: number, eol: number) => T) {
    this.make = make;
  }

  get size(): number {
    return this.values.length;
  }

  add(data: Buffer, valueAt: number, restAt: number, eol: number): void {
    this.values.push(this.make(data, valueAt, restAt, eol));
  }

  get(index: number): T | undefined {
    return this.values[index];
  }
}

/**
 * AS numbers and names kept as bytes (a Uint32Array of numbers, the names' UTF-8 in one buffer with offsets)
 * rather than ~85,000 objects and strings: the live heap sets how far V8 lets the heap grow between full
 * collections, so every ingest pays for it. A name becomes a string only when it is looked up.
 */
export class AsnDictionary implements Dictionary<{ asn: number; name: string }> {
  size = 0;
  private asns: Uint32Array = new Uint32Array(1 << 17);
  private ends: Uint32Array = new Uint32Array(1 << 17);
  private names: Buffer = Buffer.allocUnsafe(1 << 22);
  private used = 0;

  /** A dictionary of the entries `arrays` gave. */
  static fromArrays(arrays: { asns: Uint32Array; ends: Uint32Array; names: Buffer }): AsnDictionary {
    const d = new AsnDictionary();
    d.asns = arrays.asns;
    d.ends = arrays.ends;
    d.names = arrays.names;
    d.size = arrays.asns.length;
    d.used = arrays.names.length;
    return d;
  }

  /** The entries as three arrays (AS numbers, end of each name in `names`, the names' UTF-8). */
  arrays(): { asns: Uint32Array; ends: Uint32Array; names: Buffer } {
    return { asns: this.asns.subarray(0, this.size), ends: this.ends.subarray(0, this.size), names: this.names.subarray(0, this.used) };
  }

  add(data: Buffer, valueAt: number, restAt: number, eol: number): void {
    if (this.size === this.asns.length) {
      this.asns = grow(this.asns);
      this.ends = grow(this.ends);
    }
    const name = restAt < 0 ? '' : fieldText(data, restAt, eol);
    const bytes = Buffer.byteLength(name);
    if (this.used + bytes > this.names.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.names.length * 2, this.used + bytes));
      this.names.copy(bigger, 0, 0, this.used);
      this.names = bigger;
    }
    this.used += this.names.write(name, this.used);
    this.asns[this.size] = decimalAt(data, valueAt);
    this.ends[this.size] = this.used;
    this.size++;
  }

  get(index: number): { asn: number; name: string } | undefined {
    if (index < 0 || index >= this.size) return undefined;
    const start = index === 0 ? 0 : (this.ends[index - 1] as number);
    return { asn: this.asns[index] as number, name: this.names.toString('utf8', start, this.ends[index]) };
  }
}

function grow(a: Uint32Array): Uint32Array {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
}

/**
 * Reads `<prefix>-ipv4-num.csv` now and `<prefix>-ipv6-num.csv` on first use (IPv6 sources are rare, and
 * 128-bit bounds are the slow part). `keyOf` returns a number identifying a row's value (an ASN, a
 * country code's two bytes); `make` builds the dictionary entry the first time a key is seen.
 */
export function loadCsvTable<T, D extends Dictionary<T>>(
  pkg: string,
  prefix: string,
  keyOf: (data: Buffer, valueAt: number) => number,
  dictionary: D,
): CsvTable<T> & { dictionary: D } {
  const index = new Map<number, number>();
  const intern = (data: Buffer, v: number, rest: number, eol: number): number => {
    const k = keyOf(data, v);
    let i = index.get(k);
    if (i === undefined) {
      i = dictionary.size;
      dictionary.add(data, v, rest, eol);
      index.set(k, i);
    }
    return i;
  };
  let v6: Ipv6Ranges | undefined;
  return {
    v4: readIpv4(packageFile(pkg, `${prefix}-ipv4-num.csv`), intern),
    v6: () => (v6 ??= readIpv6(packageFile(pkg, `${prefix}-ipv6-num.csv`), intern)),
    dictionary,
  };
}

// Separate functions so that no closure that outlives loading keeps a file's bytes alive.
type Intern = (data: Buffer, v: number, rest: number, eol: number) => number;

const CHUNK = 1 << 22;

/**
 * Calls `each` with consecutive runs of whole lines, read 4 MiB at a time into one reused buffer (the file is
 * never held at once, and no garbage is left per chunk). `each` must copy what it keeps.
 */
function eachChunk(path: string, each: (lines: Buffer) => void): void {
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(CHUNK);
  try {
    let carry = 0;
    for (;;) {
      const n = readSync(fd, buf, carry, CHUNK - carry, null);
      const end = carry + n;
      if (n === 0) {
        if (end > 0) each(buf.subarray(0, end));
        return;
      }
      const lastNewline = buf.lastIndexOf(NEWLINE, end - 1);
      if (lastNewline < 0) throw new Error(`${path}: a line longer than ${CHUNK} bytes`);
      each(buf.subarray(0, lastNewline + 1));
      buf.copy(buf, 0, lastNewline + 1, end);
      carry = end - lastNewline - 1;
    }
  } finally {
    closeSync(fd);
  }
}

function countLines(path: string): number {
  let lines = 0;
  eachChunk(path, (data) => {
    for (let at = data.indexOf(NEWLINE); at >= 0; at = data.indexOf(NEWLINE, at + 1)) lines++;
  });
  return lines + 1;
}

function readIpv4(path: string, intern: Intern): Ipv4Ranges {
  const b4 = new Ipv4RangesBuilder(countLines(path));
  eachChunk(path, (data) => eachRow(data, (s, e, v, rest, eol) => b4.add(decimalAt(data, s), decimalAt(data, e), intern(data, v, rest, eol))));
  return b4.build();
}

function readIpv6(path: string, intern: Intern): Ipv6Ranges {
  const b6 = new Ipv6RangesBuilder();
  eachChunk(path, (data) => eachRow(data, (s, e, v, rest, eol) => b6.add(bigDecimalAt(data, s), bigDecimalAt(data, e), intern(data, v, rest, eol))));
  return b6.build();
}
/** A country table: the value is an ISO 3166-1 alpha-2 code. */
export function loadCountryTable(pkg: string, prefix: string): CsvTable<string> {
  return loadCsvTable(
    pkg,
    prefix,
    (data, v) => ((data[v] as number) << 8) | (data[v + 1] as number),
    new ArrayDictionary((data, v) => data.toString('latin1', v, v + 2)),
  );
}

/** An ASN table: the value is the AS number, the rest of the line its registered name. */
export function loadAsnTable(pkg: string, prefix: string): CsvTable<{ asn: number; name: string }> & { dictionary: AsnDictionary } {
  return loadCsvTable(
    pkg,
    prefix,
    (data, v) => decimalAt(data, v),
    new AsnDictionary(),
  );
}
