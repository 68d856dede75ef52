// Cutting a long list into objects that each stay storable. etcd refuses requests over 1.5 MiB by default
// (--max-request-bytes) and the apiserver stores custom resources as JSON, so every object holds at most 1 MiB
// of list data, which leaves room for its metadata.
import type { TargetProblem } from './types.ts';

export const OBJECT_BUDGET = 1024 * 1024;

/** Bytes a CIDR takes in a JSON array of strings: the text, two quotes and a comma. */
export const jsonCost = (cidr: string) => cidr.length + 3;

/**
 * Cuts `items` into consecutive runs whose summed cost stays within `budget`; always at least one run (empty
 * for an empty list), and an item that alone is over the budget gets a run of its own.
 */
export function cutByCost<T>(items: readonly T[], cost: (item: T) => number, budget: number): T[][] {
  const runs: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const c = cost(item);
    if (bytes + c > budget && current.length) {
      runs.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += c;
  }
  if (current.length || runs.length === 0) runs.push(current);
  return runs;
}

/**
 * The list cut into parts of at most OBJECT_BUDGET bytes of JSON for the objects of a target that may shard it
 * (deny rules add up, so the parts together block exactly the list), or the reason it is not applied: more
 * CIDRs than the target's limit. Never cut silently.
 */
export function shardList(all: readonly string[], maxCidrs: number, what: string): { shards: string[][] } | { problem: TargetProblem } {
  if (all.length > maxCidrs) {
    return { problem: { reason: 'TargetTooLarge', message: `${what}: the list has ${all.length} CIDRs, more than maxCIDRs ${maxCidrs}; what it held stays` } };
  }
  return { shards: all.length ? cutByCost(all, jsonCost, OBJECT_BUDGET) : [] };
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
