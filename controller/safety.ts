// The safety stage between a pulled feed and anything applied (docs/controller.md "Safety", in its order):
// invalid entries dropped and counted; never-block ranges removed (reserved space, the cluster's own CIDRs,
// spec.allowlist, which punches holes in wider entries); entries broader than the minimum prefix refused;
// then the whole list is refused when it is too long or shrank too much. Pure: lines in, verdict out.
import {
  CidrCollector,
  cidrCount,
  containsIPv4,
  coveredBy,
  parseCidrStrict,
  parseEntry,
  toIntervals,
  type CidrSet,
  type Entry,
  type Intervals,
} from './cidr.ts';
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1/blocklist-subscription.ts';
import { IPv4BytesReader, parseIPv4, parseIPv4Bytes } from '../common/ip.ts';
import { NEVER_BLOCK } from '../common/never-block.ts';

export const DROP_REASONS = ['invalid', 'never_block', 'cluster', 'allowlist', 'too_broad'] as const;
type DropReason = (typeof DROP_REASONS)[number];

/** spec.safety: the limits a list is judged by (their defaults: SAFETY_DEFAULTS in the contract). */
export type SafetyLimits = BlocklistSubscriptionSpec['safety'];

interface SanitiseOptions {
  clusterCidrs?: readonly string[];
  allowlist?: readonly string[];
  limits: SafetyLimits;
}

interface Sanitised {
  set: CidrSet;
  /** entries accepted (before aggregation) */
  entries: number;
  cidrs: number;
  dropped: Record<DropReason, number>;
  /** a few dropped lines per reason, for the status message */
  examples: Partial<Record<DropReason, string[]>>;
}

const NEVER_BLOCK_INTERVALS = toIntervals(NEVER_BLOCK.map(parseCidrStrict));
const MAX_EXAMPLES = 3;
const utf8 = new TextDecoder('utf-8');
const NEWLINE = 10;

function unionIntervals(...lists: Intervals[]): Intervals {
  const toEntries = (iv: Intervals): Entry[] => {
    const out: Entry[] = [];
    // Intervals are not CIDR-aligned in general: cut them back into aligned blocks.
    for (let i = 0; i < iv.v4.length; i += 2) out.push(...rangeToEntries4(iv.v4[i]!, iv.v4[i + 1]!));
    for (let i = 0; i < iv.v6.length; i += 2) out.push(...rangeToEntries6(iv.v6[i]!, iv.v6[i + 1]!));
    return out;
  };
  return toIntervals(lists.flatMap(toEntries));
}

function rangeToEntries4(start: number, end: number): Entry[] {
  const out: Entry[] = [];
  let s = start;
  while (s <= end) {
    let p = 32;
    while (p > 0 && s % 2 ** (33 - p) === 0 && s + 2 ** (33 - p) - 1 <= end) p--;
    out.push({ family: 4, start: s, prefix: p });
    s += 2 ** (32 - p);
  }
  return out;
}

function rangeToEntries6(start: bigint, end: bigint): Entry[] {
  const out: Entry[] = [];
  let s = start;
  while (s <= end) {
    let bits = 0n;
    while (bits < 128n && (s & ((1n << (bits + 1n)) - 1n)) === 0n && s + (1n << (bits + 1n)) - 1n <= end) bits++;
    out.push({ family: 6, start: s, prefix: Number(128n - bits) });
    if (bits === 128n) break;
    s += 1n << bits;
  }
  return out;
}

/** Streams feed lines through the checks; call add() per line, then finish(). */
export class Sanitiser {
  private readonly collector = new CidrCollector();
  private readonly cluster: Intervals;
  private readonly allow: Intervals;
  private readonly exclude: Intervals;
  private readonly limits: SafetyLimits;
  private readonly dropped: Record<DropReason, number> = { invalid: 0, never_block: 0, cluster: 0, allowlist: 0, too_broad: 0 };
  private readonly examples: Partial<Record<DropReason, string[]>> = {};
  /** per first octet: true when some never-block, cluster or allowlist range touches that /8 */
  private readonly octetNeedsCheck = new Uint8Array(256);
  /** the unfinished last line of the previous chunk (write()) */
  private carry: Uint8Array | undefined;
  private readonly ipv4 = new IPv4BytesReader();
  private lines = 0;

  constructor(options: SanitiseOptions) {
    this.cluster = toIntervals((options.clusterCidrs ?? []).map(parseCidrStrict));
    this.allow = toIntervals((options.allowlist ?? []).map(parseCidrStrict));
    this.exclude = unionIntervals(NEVER_BLOCK_INTERVALS, this.cluster, this.allow);
    this.limits = options.limits;
    const ex = this.exclude.v4;
    for (let i = 0; i < ex.length; i += 2) {
      for (let octet = Math.floor(ex[i]! / 16777216); octet <= Math.floor(ex[i + 1]! / 16777216); octet++) this.octetNeedsCheck[octet] = 1;
    }
  }

  private drop(reason: DropReason, line: string): void {
    this.dropped[reason]++;
    const list = (this.examples[reason] ??= []);
    if (list.length < MAX_EXAMPLES) list.push(line.length > 60 ? `${line.slice(0, 60)}…` : line);
  }

  /** One feed line. Blank lines and comments (#, ;) are skipped; anything after whitespace is a comment. */
  add(rawLine: string): void {
    let line = rawLine;
    const cut = line.search(/[\s#;]/);
    if (cut !== -1) {
      line = rawLine.trim();
      if (line === '' || line[0] === '#' || line[0] === ';') return;
      const cut2 = line.search(/[\s#;]/);
      if (cut2 !== -1) line = line.slice(0, cut2);
    }
    if (line === '') return;
    const v4 = parseIPv4(line);
    const entry: Entry | undefined = v4 >= 0 ? { family: 4, start: v4, prefix: 32 } : parseEntry(line);
    if (!entry) return this.drop('invalid', rawLine.trim());
    if (coveredBy(entry, NEVER_BLOCK_INTERVALS)) return this.drop('never_block', line);
    if (coveredBy(entry, this.cluster)) return this.drop('cluster', line);
    if (coveredBy(entry, this.allow)) return this.drop('allowlist', line);
    // Judged on the entry as published: the pieces left around a hole may be narrow, the entry was not.
    if (entry.prefix < (entry.family === 4 ? this.limits.minPrefixV4 : this.limits.minPrefixV6)) return this.drop('too_broad', line);
    if (v4 >= 0) this.collector.addIPv4(v4);
    else this.collector.add(entry);
  }

  /**
   * One feed line as bytes (no newline). A plain IPv4 address, the bulk of any feed, is checked without
   * making a string; anything else goes through add().
   */
  addBytes(buf: Uint8Array, start: number, end: number): void {
    let e = end;
    if (e > start && buf[e - 1] === 13) e--; // CRLF
    const v4 = parseIPv4Bytes(buf, start, e);
    if (v4 < 0) {
      this.add(utf8.decode(buf.subarray(start, end)));
      return;
    }
    this.addIPv4(v4, buf, start, e);
  }

  /** A parsed plain address; the byte range is only read to name a dropped one. */
  private addIPv4(v4: number, buf: Uint8Array, start: number, e: number): void {
    // Most /8s hold no excluded range at all: one table look-up instead of three searches.
    if (this.octetNeedsCheck[Math.floor(v4 / 16777216)] === 0) {
      this.collector.addIPv4(v4);
      return;
    }
    if (containsIPv4(NEVER_BLOCK_INTERVALS.v4, v4)) return this.drop('never_block', utf8.decode(buf.subarray(start, e)));
    if (containsIPv4(this.cluster.v4, v4)) return this.drop('cluster', utf8.decode(buf.subarray(start, e)));
    if (containsIPv4(this.allow.v4, v4)) return this.drop('allowlist', utf8.decode(buf.subarray(start, e)));
    this.collector.addIPv4(v4);
  }

  /**
   * A chunk of the raw feed body: lines are cut and plain IPv4 addresses parsed in one pass over the bytes,
   * so a million-line feed makes no strings and no per-line calls into the buffer. Any other line (CIDR,
   * IPv6, comment, CRLF, garbage) goes through addBytes(). Call end() after the last chunk.
   */
  write(chunk: Uint8Array): void {
    let i = 0;
    if (this.carry) {
      const nl = chunk.indexOf(NEWLINE);
      const head = nl === -1 ? chunk : chunk.subarray(0, nl);
      const joined = new Uint8Array(this.carry.length + head.length);
      joined.set(this.carry);
      joined.set(head, this.carry.length);
      this.carry = joined;
      if (nl === -1) return;
      this.carry = undefined;
      this.lines++;
      this.addBytes(joined, 0, joined.length);
      i = nl + 1;
    }
    const n = chunk.length;
    const reader = this.ipv4;
    while (i < n) {
      // The fast path reads a line as a plain dotted quad directly followed by its newline.
      const address = reader.read(chunk, i, n);
      if (address >= 0 && reader.end < n && chunk[reader.end] === NEWLINE) {
        this.lines++;
        this.addIPv4(address, chunk, i, reader.end);
        i = reader.end + 1;
        continue;
      }
      // Anything else, and a line the chunk cuts: the whole line, found by its newline.
      const nl = chunk.indexOf(NEWLINE, i);
      if (nl === -1) {
        this.carry = chunk.slice(i);
        return;
      }
      this.lines++;
      this.addBytes(chunk, i, nl);
      i = nl + 1;
    }
  }

  /** The last line of a body written with write() (one without a final newline); answers the lines seen. */
  end(): number {
    if (this.carry?.length) {
      this.lines++;
      this.addBytes(this.carry, 0, this.carry.length);
    }
    this.carry = undefined;
    return this.lines;
  }

  finish(): Sanitised {
    const set = this.collector.aggregate(this.exclude);
    // Every accepted entry went into the collector as one entry.
    return { set, entries: this.collector.size, cidrs: cidrCount(set), dropped: { ...this.dropped }, examples: this.examples };
  }
}

export function sanitise(lines: Iterable<string>, options: SanitiseOptions): Sanitised {
  const s = new Sanitiser(options);
  for (const line of lines) s.add(line);
  return s.finish();
}

type Verdict = { ok: true } | { ok: false; reason: 'TooManyEntries' | 'ShrankTooMuch'; message: string };

/** Whole-list checks against the limits and the last applied list's size. */
export function judge(result: Pick<Sanitised, 'entries'>, previousEntries: number | undefined, limits: SafetyLimits): Verdict {
  if (result.entries > limits.maxEntries) {
    return { ok: false, reason: 'TooManyEntries', message: `list has ${result.entries} entries, more than safety.maxEntries ${limits.maxEntries}` };
  }
  if (previousEntries && previousEntries > 0 && limits.maxShrinkPercent < 100) {
    const shrink = ((previousEntries - result.entries) / previousEntries) * 100;
    if (shrink > limits.maxShrinkPercent) {
      return {
        ok: false,
        reason: 'ShrankTooMuch',
        message: `list shrank by ${shrink.toFixed(1)}% (${previousEntries} to ${result.entries} entries), more than safety.maxShrinkPercent ${limits.maxShrinkPercent}`,
      };
    }
  }
  return { ok: true };
}
