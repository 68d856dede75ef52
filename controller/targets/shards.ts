// Cutting a long list into objects that each stay storable. etcd refuses requests over 1.5 MiB by default
// (--max-request-bytes) and the apiserver stores custom resources as JSON, so every object holds at most 1 MiB
// of list data, which leaves room for its metadata.
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
