import { describe, expect, it } from 'vitest';
import { FORMAT_KEYS, planShards, render } from '../../../../controller/targets/firewall-files.ts';

const cidrs = ['192.0.2.0/24', '203.0.113.7/32', '2001:db8::/32'];

describe('formats', () => {
  it('renders txt and nginx one line per CIDR', () => {
    expect(render('txt', cidrs)).toBe('192.0.2.0/24\n203.0.113.7/32\n2001:db8::/32\n');
    expect(render('nginx', cidrs)).toBe('deny 192.0.2.0/24;\ndeny 203.0.113.7/32;\ndeny 2001:db8::/32;\n');
  });

  it('renders an ipset restore file with one set per family', () => {
    expect(render('ipset', cidrs)).toBe(
      'create blockfeed-v4 hash:net family inet maxelem 16777216 -exist\n' +
        'create blockfeed-v6 hash:net family inet6 maxelem 16777216 -exist\n' +
        'add blockfeed-v4 192.0.2.0/24 -exist\nadd blockfeed-v4 203.0.113.7/32 -exist\nadd blockfeed-v6 2001:db8::/32 -exist\n',
    );
  });

  it('renders nftables set elements, omitting an empty family', () => {
    const out = render('nftables', cidrs.slice(0, 2));
    expect(out).toContain('add set inet blockfeed blocklist_v4 { type ipv4_addr; flags interval; }\n');
    expect(out).toContain('add element inet blockfeed blocklist_v4 {\n  192.0.2.0/24,\n  203.0.113.7/32\n}\n');
    expect(out).not.toContain('add element inet blockfeed blocklist_v6');
  });

  it('renders an empty list as empty files, or the sets and nothing in them', () => {
    expect(render('txt', [])).toBe('');
    expect(render('nginx', [])).toBe('');
    expect(render('ipset', [])).toBe(
      'create blockfeed-v4 hash:net family inet maxelem 16777216 -exist\ncreate blockfeed-v6 hash:net family inet6 maxelem 16777216 -exist\n',
    );
    expect(render('nftables', [])).toBe(
      'add table inet blockfeed\n' +
        'add set inet blockfeed blocklist_v4 { type ipv4_addr; flags interval; }\n' +
        'add set inet blockfeed blocklist_v6 { type ipv6_addr; flags interval; }\n',
    );
  });

  it('gives every shard the same sets, whatever the list: a shard changes only with its own CIDRs', () => {
    expect(render('ipset', cidrs, 70_000)).toBe(render('ipset', cidrs, 3));
    expect(render('ipset', cidrs, 200_000)).toBe(render('ipset', cidrs, 3));
    // only a list beyond the sets' size makes them larger
    expect(render('ipset', [], 20_000_000)).toContain('maxelem 33554432 -exist\n');
  });

  it('shards below the budget, in order, deterministically', () => {
    const many = Array.from({ length: 5000 }, (_, i) => `45.${Math.floor(i / 256)}.${i % 256}.0/24`);
    const formats = ['nginx', 'txt'] as const;
    const shards = planShards(many, formats, 20_000);
    expect(shards.length).toBeGreaterThan(5);
    for (const s of shards) expect(formats.reduce((n, f) => n + Buffer.byteLength(render(f, s.cidrs)), 0)).toBeLessThanOrEqual(20_000);
    expect(shards.map((s) => render('txt', s.cidrs)).join('')).toBe(render('txt', many));
    expect(planShards(many, formats, 20_000)).toEqual(shards);
    expect(planShards([], ['txt'])).toEqual([{ key: '0', cidrs: [] }]);
    expect(FORMAT_KEYS.txt).toBe('list.txt');
  });
});
