import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAddress, type Address } from '../../../api-server/enrich/address.ts';
import { AddressFacts } from '../../../api-server/ingest/address-facts.ts';

/** PostgreSQL's order of inet host addresses: IPv4 before IPv6, each by its bytes. */
function pgOrder(a: Address, b: Address): number {
  if (a.kind !== b.kind) return a.kind === 4 ? -1 : 1;
  if (a.kind === 4 && b.kind === 4) return a.num - b.num;
  if (a.kind === 6 && b.kind === 6) return a.hi !== b.hi ? (a.hi < b.hi ? -1 : 1) : a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0;
  return 0;
}

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const ipv6 = fc.ipV6().filter((text) => parseAddress(text)?.kind === 6);

describe('AddressFacts.slotsInAddressOrder', () => {
  it('gives every slot once, in the order PostgreSQL sorts the addresses', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 4, arbitrary: ipv4 }, { weight: 1, arbitrary: ipv6 }), { maxLength: 300 }), (texts) => {
        const facts = new AddressFacts(16);
        for (const text of texts) facts.slotOf(parseAddress(text) as Address);
        // Both ways of sorting the IPv4 slots: packed numbers, and a comparator for windows too large to pack.
        for (const packedUpTo of [undefined, 0]) {
          const order = [...facts.slotsInAddressOrder(packedUpTo)];
          expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: facts.size }, (_, i) => i));
          const addresses = order.map((slot) => facts.address(slot));
          expect(addresses.map((a) => a.text)).toEqual([...addresses].sort(pgOrder).map((a) => a.text));
        }
      }),
    );
  });
});
