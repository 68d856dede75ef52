// Cutting a long list into objects that each stay storable, so that a small change to the list rewrites few
// of them. etcd refuses requests over 1.5 MiB by default (--max-request-bytes) and the apiserver stores custom
// resources as JSON, so every object holds at most 1 MiB of list data, which leaves room for its metadata.
//
// Where the cuts fall depends on the addresses, not on positions in the list. The address space is a binary
// tree (the trie of prefixes: 0.0.0.0/0 splits into 0.0.0.0/1 and 128.0.0.0/1, and so on; IPv4 and IPv6 are
// the two halves of one root), and a part is a largest subtree whose entries fit the budget. Costs are counted
// as entries times the cost of the longest entry of their family, so every entry of a family weighs the same;
// then adding one entry to a part that was full splits that part into exactly two that fit (the first prefix
// that separates its entries leaves at least one entry on each side), and removing one merges at most two
// parts. Each part is named by the highest prefix of which it is the first part: a part that splits keeps its
// name for its first half, and the parts around it keep theirs. So a one-entry change writes at most two
// objects whatever the list; cutting at byte offsets instead moved every later boundary, and every object
// after the change was written again. Hash-based content-defined chunking (rsync, restic) gives no such bound:
// its minimum and maximum part sizes make the cuts depend on positions again.
import { createHash } from 'node:crypto';
import { parseIPv4 } from '../../common/ip.ts';
import { parseCidrStrict } from '../cidr.ts';
import type { TargetProblem } from './types.ts';

export const OBJECT_BUDGET = 1024 * 1024;

/** Bytes a CIDR takes in a JSON array of strings: the text, two quotes and a comma. */
export const jsonCost = (cidr: string) => cidr.length + 3;

/** The longest CIDR of each family as text: 255.255.255.255/32, ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128. */
export const LONGEST_CIDR = { v4: 18, v6: 43 } as const;

/** What one entry of each family may cost at most (the longest one's cost). */
export interface EntryCost {
  v4: number;
  v6: number;
}

/** One part of a cut list. */
export interface Shard {
  /**
   * Names the part's object: ROOT_KEY for the first part, otherwise a hash of the prefix the part is the first
   * part of. It stays the same as long as the parts before it within that prefix do not change.
   */
  key: string;
  cidrs: string[];
}

/** The key of the first part (so a list that fits one object keeps one name, whatever it holds). */
export const ROOT_KEY = '0';

/** A prefix of the address space as a name: 8 characters, [0-9a-z]. */
function prefixKey(family: 4 | 6, bits: number, prefix: bigint, salt: number): string {
  const digest = createHash('sha256').update(`${family}/${bits}/${prefix.toString(16)}${salt ? `#${salt}` : ''}`).digest();
  // 40 bits in base 36 fill 8 characters
  return digest.readUIntBE(0, 5).toString(36).padStart(8, '0');
}

/** Parsed once per list: the targets of a subscription cut the same list, one after the other. */
const parsed = new WeakMap<readonly string[], { v4: Uint32Array; v6: bigint[] }>();

/**
 * The network addresses of a list ordered as the controller applies it (IPv4 then IPv6, each ascending by
 * address, no two entries starting at the same address: an aggregated list). Anything else is a bug upstream.
 */
function networkAddresses(list: readonly string[]): { v4: Uint32Array; v6: bigint[] } {
  let addresses = parsed.get(list);
  if (!addresses) {
    addresses = parseAddresses(list);
    parsed.set(list, addresses);
  }
  return addresses;
}

function parseAddresses(list: readonly string[]): { v4: Uint32Array; v6: bigint[] } {
  let v4Count = list.findIndex((c) => c.includes(':'));
  if (v4Count === -1) v4Count = list.length;
  const v4 = new Uint32Array(v4Count);
  for (let i = 0; i < v4Count; i++) {
    const cidr = list[i]!;
    const slash = cidr.indexOf('/');
    const address = parseIPv4(cidr, 0, slash === -1 ? cidr.length : slash);
    if (address < 0 || (i > 0 && address <= v4[i - 1]!)) throw new Error(`cannot cut the list: ${cidr} is not an IPv4 CIDR after ${list[i - 1] ?? 'nothing'}`);
    v4[i] = address;
  }
  const v6: bigint[] = [];
  for (let i = v4Count; i < list.length; i++) {
    const entry = parseCidrStrict(list[i]!);
    if (entry.family !== 6 || (v6.length > 0 && entry.start <= v6[v6.length - 1]!)) throw new Error(`cannot cut the list: ${list[i]} is not an IPv6 CIDR after ${list[i - 1]}`);
    v6.push(entry.start);
  }
  return { v4, v6 };
}

/**
 * Cuts a list ordered as the controller applies it into parts whose cost stays within `budget`, each entry of
 * a family costing at most `cost` (see the file's header: a one-entry change alters at most two parts). An empty
 * list has no parts.
 */
export function cutByAddress(list: readonly string[], cost: EntryCost, budget: number): Shard[] {
  const heaviest = Math.max(cost.v4, cost.v6);
  if (budget < 2 * heaviest) throw new Error(`a budget of ${budget} bytes is below two entries`);
  const { v4, v6 } = networkAddresses(list);
  const shards: Shard[] = [];
  const keys = new Set<string>();
  const emit = (from: number, to: number, key: string) => {
    if (to > from) shards.push({ key, cidrs: list.slice(from, to) });
  };
  /** The key of the part that starts a prefix; a (vanishingly rare) clash of hashes is resolved in address order. */
  const keyOf = (family: 4 | 6, bits: number, prefix: bigint) => {
    let key = prefixKey(family, bits, prefix, 0);
    for (let salt = 1; keys.has(key); salt++) key = prefixKey(family, bits, prefix, salt);
    keys.add(key);
    return key;
  };

  // A subtree of one family: entries [from, to) share the first `bits` bits; `key` names its first part.
  const descend = (family: 4 | 6, from: number, to: number, bits: number, key: string): void => {
    const width = family === 4 ? 32 : 128;
    if (to === from) return;
    // Entries start at distinct addresses, so a whole-width prefix holds at most one.
    if ((to - from) * (family === 4 ? cost.v4 : cost.v6) <= budget || bits === width) return emit(from, to, key);
    // The first entry whose next bit is 1: entries are ascending, so those with 0 come first.
    const bitOf = family === 4 ? (i: number) => (v4[i]! >>> (31 - bits)) & 1 : (i: number) => Number((v6[i - v4.length]! >> BigInt(127 - bits)) & 1n);
    let lo = from;
    let hi = to;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bitOf(mid) === 1) hi = mid;
      else lo = mid + 1;
    }
    descend(family, from, lo, bits + 1, key);
    if (lo === to) return;
    const start = family === 4 ? BigInt(v4[lo]!) : v6[lo - v4.length]!;
    // The upper half's first part is named after the upper half, unless the lower half is empty.
    descend(family, lo, to, bits + 1, lo > from ? keyOf(family, bits + 1, start >> BigInt(width - bits - 1)) : key);
  };

  const all = list.length;
  // The root holds both families, whose entries weigh differently; its threshold leaves room for the heaviest
  // entry, so that a root that no longer fits splits into two halves that do.
  if (v4.length * cost.v4 + v6.length * cost.v6 <= budget - heaviest) {
    emit(0, all, ROOT_KEY);
  } else {
    descend(4, 0, v4.length, 0, ROOT_KEY);
    descend(6, v4.length, all, 0, v4.length > 0 ? keyOf(6, 0, 0n) : ROOT_KEY);
  }
  return shards;
}

/** The cost bound of one entry in an object's JSON list. */
const JSON_COST: EntryCost = { v4: LONGEST_CIDR.v4 + 3, v6: LONGEST_CIDR.v6 + 3 };

/**
 * The list cut into parts of at most OBJECT_BUDGET bytes of JSON for the objects of a target that may shard it
 * (deny rules add up, so the parts together block exactly the list), or the reason it is not applied: more
 * CIDRs than the target's limit. Never cut silently.
 */
export function shardList(all: readonly string[], maxCidrs: number, what: string): { shards: Shard[] } | { problem: TargetProblem } {
  if (all.length > maxCidrs) {
    return { problem: { reason: 'TargetTooLarge', message: `${what}: the list has ${all.length} CIDRs, more than maxCIDRs ${maxCidrs}; what it held stays` } };
  }
  // A JSON array is one byte longer than its entries' costs: two brackets, one comma fewer.
  return { shards: cutByAddress(all, JSON_COST, OBJECT_BUDGET - 1) };
}

/**
 * Why a list cannot go into the one object of a target that may not shard it (an allow-except NetworkPolicy,
 * an Envoy SecurityPolicy), or undefined when it fits: within maxCIDRs and OBJECT_BUDGET bytes of JSON.
 */
export function oneObjectProblem(all: readonly string[], what: string, maxCidrs = Infinity): TargetProblem | undefined {
  const bytes = all.reduce((n, c) => n + jsonCost(c), 0);
  if (all.length <= maxCidrs && bytes <= OBJECT_BUDGET) return undefined;
  const limit = all.length > maxCidrs ? `maxCIDRs ${maxCidrs}` : `one ${what} (${OBJECT_BUDGET} bytes; the list takes ${bytes})`;
  return { reason: 'TargetTooLarge', message: `the list (${all.length} CIDRs) does not fit ${limit}; the previous ${what} stays` };
}
