// The one IP module: the hand-written dotted-quad readers answer exactly as ipaddr.js's strict four-part
// decimal check, for text, for bytes and for a scan over a buffer; addresses and CIDRs round-trip through
// their canonical text; the sets and the never-block table hold exactly the addresses a plain scan of their
// CIDRs with ipaddr.js finds.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import {
  CidrMatcher,
  IPv4BytesReader,
  cidrText,
  formatIPv4,
  formatIPv6,
  ipv4Last,
  ipv6Last,
  ipv6Value,
  parseAddress,
  parseCidr,
  parseIPv4,
  parseIPv4Bytes,
  requireCidr,
  type Address,
} from '../../../common/ip.ts';
import { NEVER_BLOCK, isNeverBlock, isNeverBlockV4, isNeverBlockV6 } from '../../../common/never-block.ts';

const NEWLINE = 10;
const TWO_128 = 1n << 128n;

/** What ipaddr.js makes of an IPv4 text under its strict four-part decimal rule: the number, or -1. */
function referenceIPv4(text: string): number {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return -1;
  return ipaddr.IPv4.parse(text).octets.reduce((n, octet) => n * 256 + octet, 0);
}

const bytesValue = (bytes: number[]) => bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);

const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const u128 = fc.bigInt({ min: 0n, max: TWO_128 - 1n });
const octet = fc.integer({ min: 0, max: 255 });

/** Strings that are, or are nearly, dotted quads: the mistakes parsers disagree on, and plain noise. */
const ipv4Like = fc.oneof(
  u32.map(formatIPv4),
  // one octet written oddly: leading zeros, too large, hex, empty, signed, spaced
  fc
    .tuple(fc.array(octet, { minLength: 4, maxLength: 4 }), fc.nat(3), fc.constantFrom('0', '00', '256', '999', '1000', '0x1', '', '-1', '+1', ' 1', '1 ', '٣', '1e1'))
    .map(([octets, at, odd]) => octets.map((o, i) => (i === at ? odd : String(o))).join('.')),
  fc.array(octet, { minLength: 1, maxLength: 6 }).map((octets) => octets.join('.')),
  fc.tuple(u32.map(formatIPv4), fc.constantFrom('.', '..', '.1', '/24', ':80', '\n', '\0')).map(([a, tail]) => a + tail),
  fc.stringMatching(/^[0-9.]{0,18}$/),
  fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9', '.', 'x', ':', ' '), maxLength: 18 }),
);

describe('the hand-written dotted-quad readers agree with ipaddr.js', () => {
  it('on text, over any part of a longer string', () => {
    fc.assert(
      fc.property(ipv4Like, fc.stringMatching(/^[0-9.]{0,3}$/), fc.stringMatching(/^[0-9.]{0,3}$/), (text, before, after) => {
        expect(parseIPv4(text)).toBe(referenceIPv4(text));
        const padded = before + text + after;
        expect(parseIPv4(padded, before.length, before.length + text.length)).toBe(referenceIPv4(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('on bytes, never reading outside the range', () => {
    fc.assert(
      fc.property(ipv4Like, fc.stringMatching(/^[0-9.]{0,3}$/), fc.stringMatching(/^[0-9.]{0,3}$/), (text, before, after) => {
        const buf = Buffer.from(before + text + after, 'latin1');
        expect(parseIPv4Bytes(buf, before.length, before.length + text.length)).toBe(referenceIPv4(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('when scanning a buffer of lines: an address, then its newline', () => {
    fc.assert(
      fc.property(fc.array(ipv4Like.filter((t) => !t.includes('\n')), { minLength: 1, maxLength: 8 }), (lines) => {
        const buf = Buffer.from(`${lines.join('\n')}\n`, 'latin1');
        const reader = new IPv4BytesReader();
        let at = 0;
        for (const line of lines) {
          const address = reader.read(buf, at, buf.length);
          const plain = address >= 0 && buf[reader.end] === NEWLINE;
          expect(plain ? address : -1, line).toBe(referenceIPv4(line));
          if (plain) expect(reader.end).toBe(at + line.length);
          at = buf.indexOf(NEWLINE, at) + 1;
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('addresses', () => {
  it('round-trip IPv4 through the dotted quad', () => {
    fc.assert(
      fc.property(u32, (num) => {
        expect(parseAddress(formatIPv4(num))).toEqual({ kind: 4, text: formatIPv4(num), num });
      }),
    );
  });

  it('read IPv6 in any RFC 4291 spelling as ipaddr.js does, and write it as RFC 5952', () => {
    const spellings = (value: bigint): string[] => {
      const parts = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
      const last32 = Number(value & 0xffffffffn);
      return [
        new ipaddr.IPv6(parts).toRFC5952String(),
        parts.map((p) => p.toString(16).padStart(4, '0')).join(':'),
        parts.map((p) => p.toString(16).toUpperCase()).join(':'),
        `${parts.slice(0, 6).map((p) => p.toString(16)).join(':')}:${formatIPv4(last32)}`,
      ];
    };
    fc.assert(
      fc.property(fc.oneof(u128, u128.map((v) => v & ~((1n << 64n) - 1n)), u128.map((v) => v >> 64n)), (value) => {
        const canonical = new ipaddr.IPv6(Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn))).toRFC5952String();
        expect(formatIPv6(value)).toBe(canonical);
        const mapped = value >> 32n === 0xffffn;
        for (const text of spellings(value)) {
          const a = parseAddress(text);
          if (mapped) expect(a, text).toEqual({ kind: 4, text: formatIPv4(Number(value & 0xffffffffn)), num: Number(value & 0xffffffffn) });
          else expect(a, text).toEqual({ kind: 6, text: canonical, hi: value >> 64n, lo: value & ((1n << 64n) - 1n) });
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('write the RFC 5952 forms', () => {
    const text = (input: string) => parseAddress(input)?.text;
    expect(text('2001:DB8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1'); // the first of two equal runs of zeros
    expect(text('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1'); // one zero group stays
    expect(text('2001:0db8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::1');
    expect(text('0:0:0:0:0:0:0:0')).toBe('::');
    expect(text('1:0:0:0:0:0:0:0')).toBe('1::');
  });

  it('take an IPv4-mapped address for the IPv4 host it carries', () => {
    expect(parseAddress('::ffff:192.0.2.1')).toEqual({ kind: 4, text: '192.0.2.1', num: 0xc0000201 });
    expect(parseAddress('::FFFF:c000:0201')).toEqual({ kind: 4, text: '192.0.2.1', num: 0xc0000201 });
  });

  it('read "::a.b.c.d" as RFC 4291 and PostgreSQL do, not as IPv4-mapped', () => {
    expect(parseAddress('::192.0.2.1')).toEqual({ kind: 6, text: '::c000:201', hi: 0n, lo: 0xc0000201n });
    expect(parseAddress('::0.0.0.1')?.text).toBe('::1');
  });

  it('refuse what parsers disagree on, zone ids, and everything else', () => {
    for (const bad of [
      '', ' 192.0.2.1', '192.0.2.1 ', '192.0.2', '192.0.2.1.5', '192.0.2.01', '0192.0.2.1', '0x7f.0.0.1', '127.1', '2130706433',
      '192.0.2.256', '::ffff:192.0.2.01', '::ffff:0x7f.0.0.1', '::ffff:192.0.2', '::ffff:192.0.2.256', 'fe80::1%eth0', 'fe80::1%25eth0',
      '[2001:db8::1]', '2001:db8::1/64', '2001:db8:::1', '1::2::3', '12345::1', '1:2:3:4:5:6:7:8:9', 'example.com', 'g::1',
    ]) {
      expect(parseAddress(bad), bad).toBeUndefined();
    }
  });
});

describe('CIDRs', () => {
  it('give the network ipaddr.js gives, and say when the text had host bits set', () => {
    fc.assert(
      fc.property(u32, fc.integer({ min: 0, max: 32 }), (num, prefix) => {
        const text = `${formatIPv4(num)}/${prefix}`;
        const network = referenceIPv4(ipaddr.IPv4.networkAddressFromCIDR(text).toString());
        expect(parseCidr(text)).toEqual({ kind: 4, network, prefix, hostBitsSet: network !== num });
        expect(ipv4Last(network, prefix)).toBe(referenceIPv4(ipaddr.IPv4.broadcastAddressFromCIDR(text).toString()));
      }),
    );
    fc.assert(
      fc.property(u128, fc.integer({ min: 0, max: 128 }), (value, prefix) => {
        const text = `${formatIPv6(value)}/${prefix}`;
        const network = bytesValue(ipaddr.IPv6.networkAddressFromCIDR(text).toByteArray());
        expect(parseCidr(text)).toEqual({ kind: 6, network, prefix, hostBitsSet: network !== value });
        expect(ipv6Last(network, prefix)).toBe(bytesValue(ipaddr.IPv6.broadcastAddressFromCIDR(text).toByteArray()));
        expect(cidrText({ kind: 6, network, prefix })).toBe(`${formatIPv6(network)}/${prefix}`);
      }),
    );
  });

  it('keep an IPv4-mapped network in IPv6 space', () => {
    expect(parseCidr('::ffff:0:0/96')).toEqual({ kind: 6, network: 0xffffn << 32n, prefix: 96, hostBitsSet: false });
    expect(parseCidr('::ffff:192.0.2.1', { bareAddress: true })).toMatchObject({ kind: 6, prefix: 128 });
  });

  it('take a bare address as its /32 or /128 only when asked', () => {
    expect(parseCidr('192.0.2.1')).toBeUndefined();
    expect(parseCidr('192.0.2.1', { bareAddress: true })).toEqual({ kind: 4, network: 0xc0000201, prefix: 32, hostBitsSet: false });
    expect(parseCidr('2001:db8::1', { bareAddress: true })).toMatchObject({ kind: 6, prefix: 128, hostBitsSet: false });
  });

  it('refuse odd prefix lengths and addresses', () => {
    for (const bad of ['192.0.2.0/', '192.0.2.0/33', '192.0.2.0/024', '192.0.2.0/+24', '192.0.2.0/24 ', '192.0.2.0/0x18', '192.0.2.0/24/8', '::/129', '192.0.02.0/24', 'fe80::%eth0/64']) {
      expect(parseCidr(bad, { bareAddress: true }), bad).toBeUndefined();
    }
  });

  it('are required whole and in network form where they are data', () => {
    expect(requireCidr('198.51.100.0/24')).toMatchObject({ kind: 4, network: 0xc6336400, prefix: 24 });
    expect(() => requireCidr('198.51.100.7/24')).toThrow('CIDR "198.51.100.7/24" has host bits set');
    expect(() => requireCidr('198.51.100.0')).toThrow('invalid CIDR "198.51.100.0"');
  });
});

describe('membership', () => {
  /** CIDR texts, IPv4 and IPv6, in network form. */
  const cidrArb = fc.oneof(
    fc.tuple(u32, fc.integer({ min: 0, max: 32 })).map(([n, p]) => ipaddr.IPv4.networkAddressFromCIDR(`${formatIPv4(n)}/${p}`).toString() + `/${p}`),
    fc.tuple(u128, fc.integer({ min: 0, max: 128 })).map(([v, p]) => ipaddr.IPv6.networkAddressFromCIDR(`${formatIPv6(v)}/${p}`).toString() + `/${p}`),
  );
  /** Whether ipaddr.js finds the address in any of the CIDRs. */
  const referenceHas = (cidrs: readonly string[], address: Address) => {
    const parsed = ipaddr.parse(address.text);
    return cidrs.some((c) => {
      const range = ipaddr.parseCIDR(c);
      return range[0].kind() === parsed.kind() && parsed.match(range);
    });
  };
  /** Addresses near the edges of the CIDRs, and anywhere. */
  const addressesNear = (cidrs: readonly string[]) =>
    fc.oneof(
      u32.map((n) => parseAddress(formatIPv4(n)) as Address),
      u128.filter((v) => v >> 32n !== 0xffffn).map((v) => parseAddress(formatIPv6(v)) as Address),
      fc.tuple(fc.constantFrom(...cidrs), fc.constantFrom(-1, 0, 1), fc.boolean()).map(([c, step, atEnd]) => {
        const cidr = requireCidr(c);
        if (cidr.kind === 4) {
          const edge = (atEnd ? ipv4Last(cidr.network, cidr.prefix) : cidr.network) + step;
          return parseAddress(formatIPv4(Math.min(2 ** 32 - 1, Math.max(0, edge)))) as Address;
        }
        const edge = (atEnd ? ipv6Last(cidr.network, cidr.prefix) : cidr.network) + BigInt(step);
        const value = edge < 0n ? 0n : edge >= TWO_128 ? TWO_128 - 1n : edge;
        return parseAddress(formatIPv6(value)) as Address;
      }),
    );

  it('finds exactly the addresses ipaddr.js finds in the CIDRs', () => {
    fc.assert(
      fc.property(
        fc.array(cidrArb, { minLength: 1, maxLength: 12 }).chain((cidrs) => fc.tuple(fc.constant(cidrs), fc.array(addressesNear(cidrs), { minLength: 1, maxLength: 20 }))),
        ([cidrs, addresses]) => {
          const matcher = new CidrMatcher(cidrs.map(requireCidr));
          for (const a of addresses) {
            expect(matcher.has(a), `${a.text} in ${cidrs.join(' ')}`).toBe(referenceHas(cidrs, a));
            if (a.kind === 4) expect(matcher.hasIPv4(a.num)).toBe(referenceHas(cidrs, a));
            else expect(matcher.hasIPv6(ipv6Value(a))).toBe(referenceHas(cidrs, a));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('holds the never-block table as ipaddr.js reads it', () => {
    fc.assert(
      fc.property(addressesNear(NEVER_BLOCK), (a) => {
        const expected = referenceHas(NEVER_BLOCK, a);
        expect(isNeverBlock(a), a.text).toBe(expected);
        expect(a.kind === 4 ? isNeverBlockV4(a.num) : isNeverBlockV6(ipv6Value(a))).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });
});
