// Addresses and networks as people type them (the check's ip, the removal form, the operator's arguments):
// strict forms only, no host bits, IPv4-mapped IPv6 as IPv4, and the text PostgreSQL itself would print.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { parseAddressOrNetwork } from '../../../../api-server/store/networks.ts';

describe('parseAddressOrNetwork', () => {
  it.each([
    ['192.0.2.7', { family: 4, prefix: 32, cidr: '192.0.2.7/32', address: '192.0.2.7' }],
    ['192.0.2.0/24', { family: 4, prefix: 24, cidr: '192.0.2.0/24' }],
    ['192.0.2.7/32', { family: 4, prefix: 32, cidr: '192.0.2.7/32' }],
    ['0.0.0.0/0', { family: 4, prefix: 0, cidr: '0.0.0.0/0' }],
    ['2001:DB8:0:0:1:0:0:1', { family: 6, prefix: 128, cidr: '2001:db8::1:0:0:1/128', address: '2001:db8::1:0:0:1' }],
    ['2001:db8::/32', { family: 6, prefix: 32, cidr: '2001:db8::/32' }],
    ['::ffff:192.0.2.7', { family: 4, prefix: 32, cidr: '192.0.2.7/32', address: '192.0.2.7' }],
    ['::ffff:c000:207', { family: 4, prefix: 32, cidr: '192.0.2.7/32', address: '192.0.2.7' }],
    ['::ffff:192.0.2.0/120', { family: 4, prefix: 24, cidr: '192.0.2.0/24' }],
    ['::ffff:0:0/96', { family: 4, prefix: 0, cidr: '0.0.0.0/0' }],
    ['::/95', { family: 6, prefix: 95, cidr: '::/95' }],
  ])('%s', (text, network) => {
    expect(parseAddressOrNetwork(text)).toEqual({ ok: true, network });
  });

  it.each([
    ['010.0.0.1', 'is not an IPv4 or IPv6 address or network'],
    ['10.1', 'is not an IPv4 or IPv6 address or network'],
    ['0x0a.0.0.1', 'is not an IPv4 or IPv6 address or network'],
    ['167772161', 'is not an IPv4 or IPv6 address or network'],
    [' 192.0.2.7', 'is not an IPv4 or IPv6 address or network'],
    ['fe80::1%eth0', 'is not an IPv4 or IPv6 address or network'],
    ['example.org', 'is not an IPv4 or IPv6 address or network'],
    ['', 'is not an IPv4 or IPv6 address or network'],
    ['192.0.2.0/', 'has a prefix length that is not a number from 0 to 32'],
    ['192.0.2.0/024', 'has a prefix length that is not a number from 0 to 32'],
    ['192.0.2.0/33', 'has a prefix length that is not a number from 0 to 32'],
    ['2001:db8::/129', 'has a prefix length that is not a number from 0 to 128'],
    ['192.0.2.1/24', 'has host bits set after the prefix length; the network is 192.0.2.0/24'],
    ['2001:db8::1/64', 'has host bits set after the prefix length; the network is 2001:db8::/64'],
    ['1'.repeat(65), 'is longer than any address or network (64 characters)'],
  ])('refuses %j: %s', (text, problem) => {
    expect(parseAddressOrNetwork(text)).toEqual({ ok: false, problem });
  });

  it('reads every address as the address itself, in the form PostgreSQL prints, and every network by its masked address', () => {
    const bytes = (n: number) => fc.array(fc.nat(255), { minLength: n, maxLength: n });
    fc.assert(
      fc.property(fc.oneof(bytes(4), bytes(16)), fc.nat(128), (b, length) => {
        const address = ipaddr.fromByteArray(b);
        const text = address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
        const mapped = address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress();
        const parsed = parseAddressOrNetwork(text);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const expected = mapped ? (address as ipaddr.IPv6).toIPv4Address().toString() : text;
        expect(parsed.network.address).toBe(expected);
        expect(parsed.network.cidr).toBe(`${expected}/${mapped || address.kind() === 'ipv4' ? 32 : 128}`);

        const prefix = length % (b.length * 8 + 1);
        const network = ipaddr.fromByteArray(b.map((byte, i) => byte & ((0xff00 >> Math.max(0, Math.min(8, prefix - i * 8))) & 0xff)));
        const networkText = network.kind() === 'ipv6' ? (network as ipaddr.IPv6).toRFC5952String() : network.toString();
        const ofNetwork = parseAddressOrNetwork(`${networkText}/${prefix}`);
        expect(ofNetwork.ok).toBe(true);
        if (ofNetwork.ok) expect(ipaddr.parseCIDR(ofNetwork.network.cidr)[1]).toBe(network.kind() === 'ipv6' && prefix >= 96 && (network as ipaddr.IPv6).isIPv4MappedAddress() ? prefix - 96 : prefix);
        // The address itself under a shorter prefix has host bits set, unless it is the network.
        if (networkText !== text) expect(parseAddressOrNetwork(`${text}/${prefix}`)).toMatchObject({ ok: false, problem: expect.stringContaining('host bits') as string });
      }),
      { numRuns: 2000 },
    );
  });
});
