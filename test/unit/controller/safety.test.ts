import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cidrStrings } from '../../../controller/cidr.ts';
import { SAFETY_DEFAULTS } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { Sanitiser, judge, sanitise } from '../../../controller/safety.ts';

const limits = SAFETY_DEFAULTS;

describe('sanitise', () => {
  it('drops invalid, never-block, cluster, allowlisted and too-broad entries, counting each reason', () => {
    const result = sanitise(
      [
        '# a comment',
        '',
        '203.0.113.7',
        '203.0.113.7',
        '2001:db8::7',
        'not-an-ip',
        '300.1.1.1',
        '10.1.2.3',
        '127.0.0.1',
        '224.0.0.1',
        '100.64.1.1',
        'fe80::1',
        '198.18.0.0/16',
        '45.60.1.0/24',
        '0.0.0.0/0',
        '45.0.0.0/8',
        '2a00::/16',
        '198.51.100.0/24',
        '192.0.2.9 ; comment after the address',
        '44.10.0.0/24\r',
      ],
      { clusterCidrs: ['45.60.0.0/16'], allowlist: ['198.51.100.0/25', '44.10.0.0/28'], limits },
    );
    expect(result.dropped).toEqual({ invalid: 2, never_block: 6, cluster: 1, allowlist: 0, too_broad: 3 });
    expect(cidrStrings(result.set)).toEqual([
      '44.10.0.16/28',
      '44.10.0.32/27',
      '44.10.0.64/26',
      '44.10.0.128/25',
      '192.0.2.9/32',
      '198.51.100.128/25',
      '203.0.113.7/32',
      '2001:db8::7/128',
    ]);
    expect(result.entries).toBe(6);
  });

  it('counts entries wholly inside the allowlist as allowlisted', () => {
    const r = sanitise(['198.51.100.9', '198.51.100.10'], { allowlist: ['198.51.100.0/24'], limits });
    expect(r.dropped.allowlist).toBe(2);
    expect(r.cidrs).toBe(0);
  });

  it('never applies the whole address space, even when the minimum prefix allows it', () => {
    const r = sanitise(['0.0.0.0/0', '::/0'], { limits: { ...limits, minPrefixV4: 0, minPrefixV6: 0 } });
    const out = cidrStrings(r.set);
    expect(out).not.toContain('0.0.0.0/0');
    expect(out.some((c) => c.startsWith('10.') || c.startsWith('127.') || c.startsWith('192.168.'))).toBe(false);
  });
});

describe('Sanitiser.addBytes', () => {
  it('agrees with add() line for line (property)', () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 255 }).map(String), fc.constantFrom('256', '01', '', 'x'));
    const line = fc.oneof(
      fc.tuple(octet, octet, octet, octet).map((p) => p.join('.')),
      fc.constantFrom('10.0.0.1', '127.0.0.1', '45.60.1.1', '198.51.100.3', '# c', '', '2001:db8::1', '1.2.3.4 ; x', '1.2.3.4\r', ' 1.2.3.4'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
        const opts = { clusterCidrs: ['45.60.0.0/16'], allowlist: ['198.51.100.0/24'], limits };
        const byString = sanitise(lines, opts);
        const bytes = new Sanitiser(opts);
        const enc = new TextEncoder();
        for (const l of lines) {
          const buf = enc.encode(`xx${l}yy`);
          bytes.addBytes(buf, 2, buf.length - 2);
        }
        const byBytes = bytes.finish();
        expect(byBytes.dropped).toEqual(byString.dropped);
        expect(cidrStrings(byBytes.set)).toEqual(cidrStrings(byString.set));
        expect(byBytes.entries).toBe(byString.entries);
      }),
      { numRuns: 300 },
    );
  });
});

describe('Sanitiser.write', () => {
  it('agrees with add() however the body is cut into chunks (property)', () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 255 }).map(String), fc.constantFrom('256', '01', '00', '', 'x', '1000'));
    const line = fc.oneof(
      fc.tuple(octet, octet, octet, octet).map((p) => p.join('.')),
      fc.constantFrom('10.0.0.1', '127.0.0.1', '45.60.1.1', '198.51.100.3', '# c', '', '2001:db8::1', '1.2.3.4 ; x', '1.2.3.4\r', ' 1.2.3.4', '1.2.3.4.5', '1..2.3', '203.0.113.0/24'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.boolean(), fc.array(fc.nat(), { maxLength: 6 }), (lines, finalNewline, cuts) => {
        const opts = { clusterCidrs: ['45.60.0.0/16'], allowlist: ['198.51.100.0/24'], limits };
        const byString = sanitise(lines, opts);
        const body = new TextEncoder().encode(lines.join('\n') + (finalNewline && lines.length ? '\n' : ''));
        const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
        const chunked = new Sanitiser(opts);
        let from = 0;
        for (const p of [...points, body.length]) {
          chunked.write(body.subarray(from, p));
          from = p;
        }
        chunked.end();
        const byChunks = chunked.finish();
        expect(byChunks.dropped).toEqual(byString.dropped);
        expect(cidrStrings(byChunks.set)).toEqual(cidrStrings(byString.set));
        expect(byChunks.entries).toBe(byString.entries);
      }),
      { numRuns: 500 },
    );
  });
});

describe('Sanitiser.write on a long body', () => {
  it('agrees with add() whatever the chunk size, a 300 KB line included', () => {
    const lines: string[] = [];
    for (let i = 0; i < 60_000; i++) lines.push(`45.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    lines.splice(20_000, 0, 'x'.repeat(300_000), '10.1.2.3', '', '203.0.113.0/24', '2001:db8::1', '198.51.100.7\r');
    const opts = { clusterCidrs: ['45.60.0.0/16'], allowlist: ['198.51.100.0/24'], limits: { ...limits, maxEntries: 1e6 } };
    const byString = sanitise(lines, opts);
    const body = new TextEncoder().encode(lines.join('\n') + '\n');
    for (const size of [body.length, 300_001, 65_536, 4_093]) {
      const chunked = new Sanitiser(opts);
      for (let at = 0; at < body.length; at += size) chunked.write(body.subarray(at, at + size));
      expect(chunked.end()).toBe(lines.length);
      const byChunks = chunked.finish();
      expect(byChunks.dropped).toEqual(byString.dropped);
      expect(byChunks.entries).toBe(byString.entries);
      expect(cidrStrings(byChunks.set)).toEqual(cidrStrings(byString.set));
    }
  });
});

describe('judge', () => {
  it('refuses a list over maxEntries', () => {
    expect(judge({ entries: 11 }, undefined, { ...limits, maxEntries: 10 })).toMatchObject({ ok: false, reason: 'TooManyEntries' });
  });
  it('refuses a list that shrank more than maxShrinkPercent, accepts one that did not', () => {
    expect(judge({ entries: 10 }, 100, limits)).toMatchObject({ ok: false, reason: 'ShrankTooMuch' });
    expect(judge({ entries: 50 }, 100, limits)).toEqual({ ok: true });
    expect(judge({ entries: 0 }, 100, { ...limits, maxShrinkPercent: 100 })).toEqual({ ok: true });
    expect(judge({ entries: 5 }, undefined, limits)).toEqual({ ok: true });
  });
});
