// What a client address is counted as by the rate limits and throttles: an IPv4 address as itself, an IPv6
// address by its /64 in canonical text, however the address was spelt.
import { describe, expect, it } from 'vitest';
import { clientSubject } from '../../../../api-server/store/rate-counters.ts';

describe('clientSubject', () => {
  it('counts an IPv4 client, mapped or not, as its address', () => {
    expect(clientSubject('192.0.2.1')).toBe('192.0.2.1');
    expect(clientSubject('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientSubject('::FFFF:c000:201')).toBe('192.0.2.1');
  });

  it('counts an IPv6 client by its /64, one text for every spelling', () => {
    for (const address of ['2001:db8::1', '2001:DB8:0:0:ffff:ffff:ffff:ffff', '2001:0db8:0000:0000::5']) {
      expect(clientSubject(address), address).toBe('2001:db8::/64');
    }
    expect(clientSubject('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
  });

  it('keeps what is not an address as it is', () => {
    expect(clientSubject('unknown')).toBe('unknown');
  });
});
