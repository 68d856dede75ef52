// Address and CIDR arithmetic for blocklists: parse feed entries, aggregate them to the minimal exact CIDR set
// (sorted, so output is deterministic), and subtract ranges that must never be blocked.
//
// A feed can hold a million addresses, so IPv4 stays numeric: single addresses go into a Uint32Array sorted
// natively, ranges into a Float64Array of (start * 64 + prefix) keys, and one linear sweep merges both. IPv6 is
// rare in feeds and uses BigInt. Addresses and CIDRs are parsed and formatted by common/ip.ts.
import { formatIPv4, formatIPv6, ipv4Last, ipv6Last, parseCidr } from '../common/ip.ts';

export interface Entry4 {
  family: 4;
  /** network address as an unsigned 32-bit number (host bits cleared) */
  start: number;
  prefix: number;
}
export interface Entry6 {
  family: 6;
  start: bigint;
  prefix: number;
}
export type Entry = Entry4 | Entry6;

/** An aggregated, sorted, non-overlapping CIDR set. */
export interface CidrSet {
  v4Network: Uint32Array;
  v4Prefix: Uint8Array;
  v6: { network: bigint; prefix: number }[];
}

const TWO32 = 4294967296;
const V6_BITS = 128n;
const V6_MAX = (1n << V6_BITS) - 1n;

/**
 * One feed entry: an address or CIDR, IPv4 or IPv6, surrounding whitespace ignored. Host bits of a CIDR are
 * cleared (198.51.100.7/24 means 198.51.100.0/24). An IPv4-mapped IPv6 address stays IPv6 (never-block
 * space). Returns undefined for anything else.
 */
export function parseEntry(raw: string): Entry | undefined {
  const cidr = parseCidr(raw.trim(), { bareAddress: true });
  if (!cidr) return undefined;
  return cidr.kind === 4 ? { family: 4, start: cidr.network, prefix: cidr.prefix } : { family: 6, start: cidr.network, prefix: cidr.prefix };
}

/** Parses a CIDR or address that must be valid (configuration, allowlists); throws naming it otherwise. */
export function parseCidrStrict(text: string): Entry {
  const entry = parseEntry(text);
  if (!entry) throw new Error(`"${text}" is not an IP address or CIDR`);
  return entry;
}

export function formatEntry(entry: Entry): string {
  return entry.family === 4 ? `${formatIPv4(entry.start)}/${entry.prefix}` : `${formatIPv6(entry.start)}/${entry.prefix}`;
}

/** Sorted, merged, inclusive intervals: the form exclusions are applied in. */
export interface Intervals {
  v4: Float64Array; // [start0, end0, start1, end1, ...]
  v6: bigint[];
}

/** Merges entries into sorted disjoint intervals (adjacent ones joined). */
export function toIntervals(entries: readonly Entry[]): Intervals {
  const v4 = entries
    .filter((e): e is Entry4 => e.family === 4)
    .map((e) => [e.start, ipv4Last(e.start, e.prefix)] as const)
    .sort((a, b) => a[0] - b[0]);
  const v6 = entries
    .filter((e): e is Entry6 => e.family === 6)
    .map((e) => [e.start, ipv6Last(e.start, e.prefix)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out4: number[] = [];
  for (const [s, e] of v4) {
    const last = out4.length - 1;
    if (last > 0 && s <= out4[last]! + 1) out4[last] = Math.max(out4[last]!, e);
    else out4.push(s, e);
  }
  const out6: bigint[] = [];
  for (const [s, e] of v6) {
    const last = out6.length - 1;
    if (last > 0 && s <= out6[last]! + 1n) out6[last] = out6[last]! > e ? out6[last]! : e;
    else out6.push(s, e);
  }
  return { v4: Float64Array.from(out4), v6: out6 };
}

/** True when a single IPv4 address lies inside one of the intervals; allocation-free for the hot path. */
export function containsIPv4(list: Float64Array, address: number): boolean {
  let lo = 0;
  let hi = list.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (address < list[mid * 2]!) hi = mid - 1;
    else if (address > list[mid * 2 + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** True when the whole entry lies inside one of the intervals (binary search). */
export function coveredBy(entry: Entry, intervals: Intervals): boolean {
  if (entry.family === 4) {
    const list = intervals.v4;
    const end = ipv4Last(entry.start, entry.prefix);
    let lo = 0;
    let hi = list.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = list[mid * 2]!;
      const e = list[mid * 2 + 1]!;
      if (entry.start < s) hi = mid - 1;
      else if (entry.start > e) lo = mid + 1;
      else return end <= e;
    }
    return false;
  }
  const end = ipv6Last(entry.start, entry.prefix);
  for (let i = 0; i < intervals.v6.length; i += 2) {
    if (entry.start >= intervals.v6[i]! && end <= intervals.v6[i + 1]!) return true;
  }
  return false;
}

/** Collects entries for aggregation; IPv4 addresses stay in typed arrays. */
export class CidrCollector {
  private singles = new Uint32Array(1024);
  private singleCount = 0;
  /** feeds are usually sorted already; then the sort is skipped */
  private singlesInOrder = true;
  private ranges = new Float64Array(64);
  private rangeCount = 0;
  private readonly v6: Entry6[] = [];

  get size(): number {
    return this.singleCount + this.rangeCount + this.v6.length;
  }

  addIPv4(address: number): void {
    if (this.singleCount === this.singles.length) {
      const grown = new Uint32Array(this.singles.length * 2);
      grown.set(this.singles);
      this.singles = grown;
    }
    if (this.singleCount > 0 && address < this.singles[this.singleCount - 1]!) this.singlesInOrder = false;
    this.singles[this.singleCount++] = address;
  }

  add(entry: Entry): void {
    if (entry.family === 6) {
      this.v6.push(entry);
    } else if (entry.prefix === 32) {
      this.addIPv4(entry.start);
    } else {
      if (this.rangeCount === this.ranges.length) {
        const grown = new Float64Array(this.ranges.length * 2);
        grown.set(this.ranges);
        this.ranges = grown;
      }
      // start * 64 + prefix sorts by start, wider first, and stays exact in a double (< 2^38).
      this.ranges[this.rangeCount++] = entry.start * 64 + entry.prefix;
    }
  }

  /** The minimal exact CIDR set covering everything added, minus `exclude`, sorted. */
  aggregate(exclude: Intervals = { v4: new Float64Array(0), v6: [] }): CidrSet {
    const singles = this.singlesInOrder ? this.singles.subarray(0, this.singleCount) : this.singles.subarray(0, this.singleCount).sort();
    const ranges = this.ranges.subarray(0, this.rangeCount).sort();
    const out = new V4Output(exclude.v4);
    if (ranges.length === 0) {
      // The common case, a feed of single addresses: one pass over the natively sorted array.
      let k = 0;
      while (k < singles.length) {
        const s = singles[k]!;
        let e = s;
        k++;
        while (k < singles.length && singles[k]! <= e + 1) e = singles[k++]!;
        out.emit(s, e);
      }
      return { ...out.result(), v6: aggregate6(this.v6, exclude.v6) };
    }
    let i = 0;
    let j = 0;
    let curStart = -1;
    let curEnd = -1;
    while (i < singles.length || j < ranges.length) {
      let s: number;
      let e: number;
      const rangeKey = j < ranges.length ? ranges[j]! : Infinity;
      const rangeStart = Math.floor(rangeKey / 64);
      if (i < singles.length && singles[i]! <= rangeStart) {
        s = singles[i++]!;
        e = s;
      } else {
        s = rangeStart;
        e = ipv4Last(s, rangeKey - rangeStart * 64);
        j++;
      }
      if (curEnd >= 0 && s <= curEnd + 1) {
        if (e > curEnd) curEnd = e;
      } else {
        if (curEnd >= 0) out.emit(curStart, curEnd);
        curStart = s;
        curEnd = e;
      }
    }
    if (curEnd >= 0) out.emit(curStart, curEnd);
    return { ...out.result(), v6: aggregate6(this.v6, exclude.v6) };
  }
}

/** Largest aligned block starting at s that fits in [s, e]: prefix length. */
function blockPrefix4(s: number, e: number): number {
  const length = e - s + 1;
  const maxBits = length >= TWO32 ? 32 : 31 - Math.clz32(length);
  let alignBits = 32;
  if (s !== 0) {
    const low = (s & -s) >>> 0;
    alignBits = 31 - Math.clz32(low);
  }
  return 32 - Math.min(maxBits, alignBits);
}

class V4Output {
  private network: Uint32Array;
  private prefix: Uint8Array;
  private count = 0;
  private x = 0;
  private readonly exclude: Float64Array;

  // Grown as needed: sized to the input, a million-address feed would allocate 5 MB for the ~24,000 CIDRs
  // it aggregates to.
  constructor(exclude: Float64Array) {
    this.exclude = exclude;
    this.network = new Uint32Array(1024);
    this.prefix = new Uint8Array(1024);
  }

  emit(start: number, end: number): void {
    let s = start;
    const ex = this.exclude;
    if (start === end && (this.x >= ex.length || ex[this.x]! > end) && this.count < this.network.length) {
      // A lone address clear of every exclusion: the bulk of a feed, so no decomposition.
      if (this.x >= ex.length || ex[this.x + 1]! >= s) {
        this.network[this.count] = start;
        this.prefix[this.count++] = 32;
        return;
      }
    }
    // Exclusions are sorted; skip those wholly before this interval, then punch each overlapping one.
    while (this.x < ex.length && ex[this.x + 1]! < s) this.x += 2;
    let k = this.x;
    while (k < ex.length && ex[k]! <= end) {
      const exStart = ex[k]!;
      const exEnd = ex[k + 1]!;
      if (exStart > s) this.decompose(s, exStart - 1);
      s = Math.max(s, exEnd + 1);
      if (s > end) return;
      k += 2;
    }
    this.decompose(s, end);
  }

  private decompose(start: number, end: number): void {
    let s = start;
    while (s <= end) {
      const p = blockPrefix4(s, end);
      this.push(s, p);
      s += 2 ** (32 - p);
    }
  }

  private push(network: number, prefix: number): void {
    if (this.count === this.network.length) {
      const n = new Uint32Array(this.count * 2);
      n.set(this.network);
      this.network = n;
      const p = new Uint8Array(this.count * 2);
      p.set(this.prefix);
      this.prefix = p;
    }
    this.network[this.count] = network;
    this.prefix[this.count++] = prefix;
  }

  result(): { v4Network: Uint32Array; v4Prefix: Uint8Array } {
    return { v4Network: this.network.slice(0, this.count), v4Prefix: this.prefix.slice(0, this.count) };
  }
}

function aggregate6(entries: readonly Entry6[], exclude: readonly bigint[]): { network: bigint; prefix: number }[] {
  const merged = toIntervals(entries).v6;
  const out: { network: bigint; prefix: number }[] = [];
  const decompose = (start: bigint, end: bigint) => {
    let s = start;
    while (s <= end) {
      let bits = 0n;
      while (bits < V6_BITS && (s & ((1n << (bits + 1n)) - 1n)) === 0n && s + (1n << (bits + 1n)) - 1n <= end) bits++;
      out.push({ network: s, prefix: Number(V6_BITS - bits) });
      if (bits === V6_BITS) return;
      s += 1n << bits;
      if (s > V6_MAX) return;
    }
  };
  for (let i = 0; i < merged.length; i += 2) {
    let s = merged[i]!;
    const e = merged[i + 1]!;
    let done = false;
    for (let k = 0; k < exclude.length && !done; k += 2) {
      const exS = exclude[k]!;
      const exE = exclude[k + 1]!;
      if (exE < s || exS > e) continue;
      if (exS > s) decompose(s, exS - 1n);
      s = exE + 1n;
      if (s > e) done = true;
    }
    if (!done) decompose(s, e);
  }
  return out;
}

/** Aggregates entries without exclusions (convenience for small lists and tests). */
export function aggregate(entries: Iterable<Entry>, exclude?: Intervals): CidrSet {
  const collector = new CidrCollector();
  for (const e of entries) collector.add(e);
  return collector.aggregate(exclude);
}

export function cidrCount(set: CidrSet): number {
  return set.v4Network.length + set.v6.length;
}

/** The set as CIDR strings (IPv4 then IPv6, each ascending); single addresses keep their /32 or /128. */
export function cidrStrings(set: CidrSet): string[] {
  const out = new Array<string>(cidrCount(set));
  for (let i = 0; i < set.v4Network.length; i++) out[i] = `${formatIPv4(set.v4Network[i]!)}/${set.v4Prefix[i]!}`;
  for (let i = 0; i < set.v6.length; i++) out[set.v4Network.length + i] = `${formatIPv6(set.v6[i]!.network)}/${set.v6[i]!.prefix}`;
  return out;
}

/** Addresses covered by the IPv4 part (for shrink checks and metrics). */
