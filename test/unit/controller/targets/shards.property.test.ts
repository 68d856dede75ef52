// How lists are cut into objects (targets/shards.ts): whatever the list, the parts hold it exactly, in order,
// each within the budget, under distinct names; and adding or removing one CIDR changes at most two parts
// (a part's name and content taken together), so a sync after a one-address change writes at most two objects.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregate, cidrStrings, parseCidrStrict, type Entry } from '../../../../controller/cidr.ts';
import { OBJECT_BUDGET, cutByAddress, jsonCost, shardList, type Shard } from '../../../../controller/targets/shards.ts';

/** The JSON cost bound of an entry, as shardList counts it. */
const COST = { v4: 21, v6: 46 };

const v4Entry = (start: number, prefix: number): Entry => ({ family: 4, start: start - (start % 2 ** (32 - prefix)), prefix });
/** Addresses spread over the whole space, or crowded into a few blocks (deep prefixes, lopsided splits). */
const v4Entries = fc.oneof(
  fc.array(fc.tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.integer({ min: 20, max: 32 })), { maxLength: 300 }),
  fc
    .tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.array(fc.tuple(fc.nat({ max: 4095 }), fc.integer({ min: 28, max: 32 })), { maxLength: 300 }))
    .map(([base, offsets]) => offsets.map(([o, p]): [number, number] => [(base + o) % 2 ** 32, p])),
);
const v6Entries = fc.array(fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 16n - 1n }), fc.integer({ min: 48, max: 128 })), { maxLength: 40 });

/** An aggregated list as the controller applies it: IPv4 then IPv6, ascending, no overlaps. */
const lists = fc.tuple(v4Entries, v6Entries).map(([four, six]) =>
  cidrStrings(
    aggregate([
      ...four.map(([start, prefix]) => v4Entry(start, prefix)),
      // 2001:db8::/32 and a few blocks around it
      ...six.map(([n, prefix]): Entry => ({ family: 6, start: ((0x2001_0db8n << 96n) | (n << 80n)) & ~((1n << BigInt(128 - prefix)) - 1n), prefix })),
    ]),
  ),
);

/** Where a CIDR sorts in an applied list: family, then network address. */
const order = (cidr: string) => {
  const e = parseCidrStrict(cidr);
  return e.family === 4 ? BigInt(e.start) : (1n << 129n) + e.start;
};

/** `list` with `cidr` put in its place; undefined when an entry already starts at its address. */
function inserted(list: readonly string[], cidr: string): string[] | undefined {
  const at = order(cidr);
  const i = list.findIndex((c) => order(c) >= at);
  if (i !== -1 && order(list[i]!) === at) return undefined;
  return i === -1 ? [...list, cidr] : [...list.slice(0, i), cidr, ...list.slice(i)];
}

/** The objects that differ between two cuts: a name written with other content, created, or deleted. */
function objectsWritten(before: readonly Shard[], after: readonly Shard[]): number {
  const was = new Map(before.map((s) => [s.key, s.cidrs.join(',')]));
  const now = new Map(after.map((s) => [s.key, s.cidrs.join(',')]));
  return [...new Set([...was.keys(), ...now.keys()])].filter((k) => was.get(k) !== now.get(k)).length;
}

function expectWellCut(list: readonly string[], shards: readonly Shard[], budget: number): void {
  expect(shards.flatMap((s) => s.cidrs)).toEqual(list);
  expect(new Set(shards.map((s) => s.key)).size).toBe(shards.length);
  for (const s of shards) {
    expect(s.cidrs.length).toBeGreaterThan(0);
    expect(s.key).toMatch(/^(0|[0-9a-z]{8})$/);
    expect(s.cidrs.reduce((n, c) => n + (c.includes(':') ? COST.v6 : COST.v4), 0)).toBeLessThanOrEqual(budget);
    expect(s.cidrs.reduce((n, c) => n + jsonCost(c), 0)).toBeLessThanOrEqual(budget);
  }
}

/** Budgets from two entries up: small ones make many parts of few entries. */
const budgets = fc.integer({ min: 2 * COST.v6, max: 2000 });
const newAddress = fc.oneof(
  fc.nat({ max: 2 ** 32 - 1 }).map((n) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/32`),
  fc.bigInt({ min: 0n, max: 2n ** 32n - 1n }).map((n) => `2001:db8:${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}::1/128`),
);

describe('cutting a list into objects', () => {
  it('holds the list exactly, in order, every part within the budget, under distinct names; the same list cuts the same', () => {
    fc.assert(
      fc.property(lists, budgets, (list, budget) => {
        const shards = cutByAddress(list, COST, budget);
        expectWellCut(list, shards, budget);
        expect(cutByAddress([...list], COST, budget)).toEqual(shards);
      }),
      { numRuns: 1000 },
    );
  });

  it('changes at most two parts when a CIDR is added', () => {
    fc.assert(
      fc.property(lists, budgets, newAddress, (list, budget, cidr) => {
        const after = inserted(list, cidr);
        fc.pre(after !== undefined);
        const shards = cutByAddress(after, COST, budget);
        expectWellCut(after, shards, budget);
        expect(objectsWritten(cutByAddress(list, COST, budget), shards)).toBeLessThanOrEqual(2);
      }),
      { numRuns: 3000 },
    );
  });

  it('changes at most two parts when a CIDR is removed', () => {
    fc.assert(
      fc.property(lists, budgets, fc.nat(), (list, budget, pick) => {
        fc.pre(list.length > 0);
        const after = list.filter((_, i) => i !== pick % list.length);
        const shards = cutByAddress(after, COST, budget);
        expectWellCut(after, shards, budget);
        expect(objectsWritten(cutByAddress(list, COST, budget), shards)).toBeLessThanOrEqual(2);
      }),
      { numRuns: 3000 },
    );
  });

  it('cuts a large list into objects of at most 1 MiB of JSON, and one address near its front rewrites one of them', () => {
    // every other address of 45.0.0.0/12: 400,000 CIDRs that do not aggregate, about 7 MB of JSON
    const list = Array.from({ length: 400_000 }, (_, i) => {
      const n = (45 << 24) + 2 * i;
      return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/32`;
    });
    const cut = shardList(list, 1_000_000, 'x');
    if (!('shards' in cut)) throw new Error('not cut');
    expect(cut.shards.length).toBeGreaterThan(5);
    expect(cut.shards.flatMap((s) => s.cidrs)).toEqual(list);
    for (const s of cut.shards) expect(Buffer.byteLength(JSON.stringify(s.cidrs))).toBeLessThanOrEqual(OBJECT_BUDGET);
    const after = shardList(inserted(list, '45.0.0.3/32')!, 1_000_000, 'x');
    if (!('shards' in after)) throw new Error('not cut');
    expect(objectsWritten(cut.shards, after.shards)).toBe(1);
  });

  it('never cuts a list beyond the limit, and leaves no part for an empty one', () => {
    expect(shardList(['45.33.32.156/32', '45.33.32.158/32'], 1, 'ciliumCIDRGroup')).toEqual({
      problem: { reason: 'TargetTooLarge', message: 'ciliumCIDRGroup: the list has 2 CIDRs, more than maxCIDRs 1; what it held stays' },
    });
    expect(shardList([], 10, 'x')).toEqual({ shards: [] });
    expect(shardList(['45.33.32.156/32', '2001:db8::/32'], 10, 'x')).toEqual({ shards: [{ key: '0', cidrs: ['45.33.32.156/32', '2001:db8::/32'] }] });
  });

  it('refuses a list out of order rather than cut it wrongly', () => {
    expect(() => cutByAddress(['45.33.32.158/32', '45.33.32.156/32'], COST, 1000)).toThrow(/45\.33\.32\.156\/32 is not an IPv4 CIDR after 45\.33\.32\.158\/32/);
    expect(() => cutByAddress(['2001:db8::/32', '45.33.32.156/32'], COST, 1000)).toThrow(/not an IPv6 CIDR/);
  });
});
