import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  cidrStrings,
  coveredBy,
  formatEntry,
  parseEntry,
  toIntervals,
  type CidrSet,
  type Entry,
} from '../../../controller/cidr.ts';
import { parseIPv4 } from '../../../common/ip.ts';

const parse = (texts: string[]): Entry[] => texts.map((t) => parseEntry(t)!);

describe('parseIPv4 / parseEntry', () => {
  it('accepts strict dotted quads and CIDRs of both families', () => {
    expect(parseIPv4('1.2.3.4')).toBe(0x01020304);
    expect(parseIPv4('255.255.255.255')).toBe(4294967295);
    expect(formatEntry(parseEntry(' 198.51.100.7/24 ')!)).toBe('198.51.100.0/24');
    expect(formatEntry(parseEntry('2001:DB8::1')!)).toBe('2001:db8::1/128');
    expect(formatEntry(parseEntry('2001:db8:1:2::/48')!)).toBe('2001:db8:1::/48');
  });

  it.each(['', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.4/33', '1.2.3.4/', '1.2.3.4/024', 'abc', '::1/129', 'fe80::1%eth0', '0x7f.0.0.1', '1.2.3.4 5'])(
    'refuses %j',
    (text) => expect(parseEntry(text)).toBeUndefined(),
  );
});

describe('aggregate', () => {
  it('merges adjacent and nested entries to the minimal set, IPv4 before IPv6, sorted', () => {
    const set = aggregate(
      parse(['203.0.113.1', '203.0.113.0', '203.0.113.2/31', '198.51.100.0/25', '198.51.100.128/25', '198.51.100.9', '2001:db8::1', '2001:db8::', '10.0.0.0/8']),
    );
    expect(cidrStrings(set)).toEqual(['10.0.0.0/8', '198.51.100.0/24', '203.0.113.0/30', '2001:db8::/127']);
  });

  it('covers the whole space and its edges', () => {
    expect(cidrStrings(aggregate(parse(['0.0.0.0/1', '128.0.0.0/1', '255.255.255.255'])))).toEqual(['0.0.0.0/0']);
    expect(cidrStrings(aggregate(parse(['::/1', '8000::/1'])))).toEqual(['::/0']);
  });

  it('punches holes for exclusions inside wider entries', () => {
    const exclude = toIntervals(parse(['198.51.100.7', '2001:db8::/65']));
    const set = aggregate(parse(['198.51.100.0/29', '2001:db8::/64']), exclude);
    expect(cidrStrings(set)).toEqual(['198.51.100.0/30', '198.51.100.4/31', '198.51.100.6/32', '2001:db8:0:0:8000::/65']);
    const set2 = aggregate(parse(['198.51.100.0/24']), toIntervals(parse(['198.51.100.128/26'])));
    expect(cidrStrings(set2)).toEqual(['198.51.100.0/25', '198.51.100.192/26']);
  });

  it('coveredBy tells whether an entry lies wholly inside intervals', () => {
    const iv = toIntervals(parse(['10.0.0.0/8', '192.168.0.0/16', 'fc00::/7']));
    expect(coveredBy(parseEntry('10.1.2.3')!, iv)).toBe(true);
    expect(coveredBy(parseEntry('10.0.0.0/7')!, iv)).toBe(false);
    expect(coveredBy(parseEntry('192.168.3.0/24')!, iv)).toBe(true);
    expect(coveredBy(parseEntry('8.8.8.8')!, iv)).toBe(false);
    expect(coveredBy(parseEntry('fd00::1')!, iv)).toBe(true);
  });

  // Model check on a small address space: the output covers exactly the input minus the exclusions, its blocks
  // are aligned, sorted and disjoint, and no two are mergeable siblings (which makes it minimal).
  function expand(set: CidrSet): number[] {
    const out: number[] = [];
    for (let i = 0; i < set.v4Network.length; i++) {
      const size = 2 ** (32 - set.v4Prefix[i]!);
      expect(set.v4Network[i]! % size).toBe(0);
      for (let a = 0; a < size; a++) out.push(set.v4Network[i]! + a);
    }
    return out;
  }
  const BASE = 0xc6336400; // 198.51.100.0
  const small = fc.record({ offset: fc.integer({ min: 0, max: 1023 }), prefix: fc.integer({ min: 24, max: 32 }) }).map(({ offset, prefix }) => {
    const size = 2 ** (32 - prefix);
    return { family: 4 as const, start: BASE + offset - (offset % size), prefix };
  });

  it('keeps every block of an output longer than its first allocation', () => {
    // Every other address of a range: nothing merges, so each is a /32 of its own (the output grows past 1024).
    const lone = Array.from({ length: 3000 }, (_, i) => ({ family: 4 as const, start: BASE + 2 * i, prefix: 32 }));
    const hole = toIntervals([{ family: 4, start: BASE + 2000, prefix: 30 }]);
    expect([...aggregate(lone).v4Network]).toEqual(lone.map((e) => e.start));
    expect([...aggregate(lone, hole).v4Network]).toEqual(lone.map((e) => e.start).filter((a) => a < BASE + 2000 || a > BASE + 2003));
  });

  it('is exact and minimal (property)', () => {
    fc.assert(
      fc.property(fc.array(small, { maxLength: 40 }), fc.array(small, { maxLength: 5 }), (entries, excluded) => {
        const set = aggregate(entries, toIntervals(excluded));
        const want = new Set<number>();
        for (const e of entries) for (let a = 0; a < 2 ** (32 - e.prefix); a++) want.add(e.start + a);
        for (const e of excluded) for (let a = 0; a < 2 ** (32 - e.prefix); a++) want.delete(e.start + a);
        const got = expand(set);
        expect(got).toEqual([...want].sort((a, b) => a - b));
        for (let i = 1; i < set.v4Network.length; i++) {
          const p = set.v4Prefix[i]!;
          const size = 2 ** (32 - p);
          const siblings = set.v4Prefix[i - 1] === p && set.v4Network[i - 1]! + size === set.v4Network[i] && set.v4Network[i - 1]! % (size * 2) === 0;
          expect(siblings).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
