// The never-block table as a matcher: the first and last address of every range are in it, the addresses just
// outside are not (unless another range begins there), and documentation ranges stay listable.
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../../common/ip.ts';
import { NEVER_BLOCK, isNeverBlock, isNeverBlockV4, isNeverBlockV6 } from '../../../common/never-block.ts';

const toNumber = (address: string) => ipaddr.parse(address).toByteArray().reduce((n, b) => (n << 8n) | BigInt(b), 0n);
const inside = (n: bigint, v4: boolean) => (v4 ? isNeverBlockV4(Number(n)) : isNeverBlockV6(n));

describe('never-block matcher', () => {
  it('holds each range from its first to its last address, and nothing just outside', () => {
    for (const cidr of NEVER_BLOCK) {
      const [network, length] = ipaddr.parseCIDR(cidr);
      const v4 = network.kind() === 'ipv4';
      const first = toNumber(network.toString());
      const last = first | ((1n << BigInt((v4 ? 32 : 128) - length)) - 1n);
      expect(inside(first, v4), cidr).toBe(true);
      expect(inside(last, v4), cidr).toBe(true);
      const neighbours = [first - 1n, last + 1n].filter((n) => n >= 0n && n < (v4 ? 1n << 32n : 1n << 128n));
      for (const n of neighbours) {
        const inAnother = NEVER_BLOCK.some((other) => {
          const [net, len] = ipaddr.parseCIDR(other);
          if ((net.kind() === 'ipv4') !== v4) return false;
          const start = toNumber(net.toString());
          return n >= start && n <= (start | ((1n << BigInt((v4 ? 32 : 128) - len)) - 1n));
        });
        expect(inside(n, v4), `${cidr} neighbour ${n}`).toBe(inAnother);
      }
    }
  });

  it('leaves global and documentation addresses listable', () => {
    for (const address of ['8.8.8.8', '203.0.113.7', '198.51.100.1', '192.0.2.1']) expect(isNeverBlockV4(Number(toNumber(address))), address).toBe(false);
    for (const address of ['2001:db8::1', '2606:4700::1111']) expect(isNeverBlockV6(toNumber(address)), address).toBe(false);
  });

  it('holds the deprecated IPv4-compatible form of a global IPv4 address, which is read as IPv6', () => {
    for (const text of ['::203.0.113.7', '::8.8.8.8', '::1', '::']) {
      const address = parseAddress(text);
      expect(address?.kind, text).toBe(6);
      expect(isNeverBlock(address!), text).toBe(true);
    }
  });
});
