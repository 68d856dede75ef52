import { describe, expect, it } from 'vitest';
import { formatIPv4, ipv4Last, parseAddress, requireCidr } from '../../../../common/ip.ts';
import { Enricher } from '../../../../api-server/enrich/enricher.ts';
import { Ipv4RangesBuilder } from '../../../../api-server/enrich/ranges.ts';

const enricher = new Enricher();
const enrich = (ip: string) => {
  const a = parseAddress(ip);
  if (!a) throw new Error(`bad test address ${ip}`);
  return enricher.enrich(a);
};

describe('enrichment of known addresses', () => {
  it.each([
    // address, country, province, isp, net, asn
    ['222.85.85.85', 'CN', '河南省', '电信', 'broadband', 4134], // China Telecom (Chinanet), Henan
    ['61.135.169.125', 'CN', '北京市', '联通', 'broadband', 4808], // China Unicom Beijing
    ['117.136.0.1', 'CN', '北京市', '移动', 'broadband', 56048], // China Mobile
    ['202.112.0.1', 'CN', '北京市', null, 'edu', 4538], // CERNET
    ['120.24.78.68', 'CN', '广东省', null, 'idc', 37963], // Alibaba Cloud, Shenzhen
    ['240e:47d:c20:1627::1', 'CN', '广东省', '电信', 'broadband', 4134], // China Telecom IPv6
  ])('%s → %s %s %s %s AS%d', (ip, country, province, isp, net, asn) => {
    expect(enrich(ip)).toMatchObject({ country, province, isp, net, asn, scannerKind: null });
  });

  it('keeps the raw carrier and the AS name', () => {
    expect(enrich('202.112.0.1')).toMatchObject({ carrier: '教育网', asName: 'China Education and Research Network Center' });
    expect(enrich('120.24.78.68')).toMatchObject({ carrier: '阿里云', city: '深圳市' });
  });

  it('names Censys as a research scanner, IPv4 and IPv6', () => {
    expect(enrich('162.142.125.7')).toMatchObject({ country: 'US', scannerKind: 'research_scanner', scannerOrg: 'Censys', province: null });
    expect(enrich('2602:80d:1000::5')).toMatchObject({ scannerKind: 'research_scanner', scannerOrg: 'Censys' });
  });

  it('classes foreign clouds as idc by ASN and leaves unknown space empty', () => {
    expect(enrich('8.8.8.8')).toMatchObject({ country: 'US', asn: 15169, net: 'idc', isp: null });
    expect(enrich('10.1.2.3')).toMatchObject({ country: null, asn: null, scannerKind: null });
  });
});

describe('address and range primitives', () => {
  it('parses IPv4, IPv6 and IPv4-mapped IPv6 canonically, refuses the rest', () => {
    expect(parseAddress('1.2.3.4')).toEqual({ kind: 4, text: '1.2.3.4', num: 0x01020304 });
    expect(parseAddress('255.255.255.255')).toEqual({ kind: 4, text: '255.255.255.255', num: 0xffffffff });
    expect(parseAddress('0.0.0.0')).toEqual({ kind: 4, text: '0.0.0.0', num: 0 });
    for (const bad of ['1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.256', '1..3.4', '1.2.3.', ' 1.2.3.4', '1.2.3.4x', '1.2.3.-4']) {
      expect(parseAddress(bad), bad).toBeUndefined();
    }
    expect(parseAddress('::ffff:1.2.3.4')).toMatchObject({ kind: 4, text: '1.2.3.4' });
    expect(parseAddress('2001:DB8:0:0:0:0:0:1')).toMatchObject({ kind: 6, text: '2001:db8::1', hi: 0x20010db800000000n, lo: 1n });
    for (const bad of ['01.2.3.4', '1.2.3', '256.1.1.1', 'fe80::1%eth0', 'example.com', '']) expect(parseAddress(bad)).toBeUndefined();
  });

  it('parses CIDRs and refuses host bits', () => {
    const cidr = requireCidr('10.0.0.0/8');
    expect(cidr.kind === 4 && [formatIPv4(cidr.network), formatIPv4(ipv4Last(cidr.network, cidr.prefix))]).toEqual(['10.0.0.0', '10.255.255.255']);
    expect(() => requireCidr('10.0.0.1/8')).toThrow(/host bits/);
  });

  it('finds ranges by binary search, with gaps', () => {
    const b = new Ipv4RangesBuilder();
    b.add(100, 199, 7);
    b.add(10, 19, 5);
    b.add(300, 300, 9);
    const r = b.build();
    expect([0, 10, 19, 20, 150, 199, 200, 300, 301, 2 ** 32 - 1].map((ip) => r.find(ip))).toEqual([-1, 5, 5, -1, 7, 7, -1, 9, -1, -1]);
  });

  it('finds the same range as a scan over the table, for ranges spanning /16s and random tables', () => {
    let x = 1;
    const next = () => (x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0);
    for (let table = 0; table < 20; table++) {
      const b = new Ipv4RangesBuilder();
      const ranges: [number, number, number][] = [];
      // Non-overlapping ranges of very different widths: single addresses up to several /8s.
      let at = next() % 1000;
      for (let i = 0; at < 2 ** 32 - 1 && i < 200; i++) {
        const width = 2 ** (next() % (table % 2 ? 26 : 12));
        const end = Math.min(2 ** 32 - 1, at + width - 1);
        if (next() % 3) ranges.push([at, end, i]);
        at = end + 1 + (next() % (table % 3 ? 5000 : 2));
      }
      for (const [s, e, v] of ranges) b.add(s, e, v);
      const r = b.build();
      const probes = [0, 2 ** 32 - 1, ...ranges.flatMap(([s, e]) => [s, e, s - 1, e + 1]), ...Array.from({ length: 500 }, next)];
      for (const ip of probes.filter((p) => p >= 0 && p < 2 ** 32)) {
        const expected = ranges.find(([s, e]) => s <= ip && ip <= e)?.[2] ?? -1;
        expect(r.find(ip), `table ${table}, ${ip}`).toBe(expected);
      }
    }
  });
});
