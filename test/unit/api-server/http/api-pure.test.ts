// Pure parts of the blocklist API: parameter parsing, formats, cache keys and lifetimes, limit policies, keys.
import { describe, expect, it } from 'vitest';
import { ExportParams, RecentParams } from '../../../../api-server/query/endpoint-params.ts';
import { csvCell } from '../../../../api-server/render/csv.ts';
import type { AddressRecord } from '../../../../api-server/query/list-sql.ts';
import { csvRecord, jsonClose, jsonOpen, jsonRecord } from '../../../../api-server/render/records.ts';
import { parseQuery } from '../../../../api-server/query/validate-query.ts';
import { cacheKey, cacheSeconds, etagMatches, headersOfHit, parseCacheLifetimes, type CacheLifetimes } from '../../../../api-server/http/cache.ts';
import { ENDPOINTS } from '../../../../api-server/http/endpoints.ts';
import { policyFor, policyHeader, rateLimitHeader } from '../../../../api-server/http/limits.ts';
import { generateKey, keyMatches, keyPrefix, revocationTarget } from '../../../../api-server/keys/secret.ts';
import { parseTierQuotas } from '../../../../api-server/keys/tiers.ts';
import { whereSql } from '../../../../api-server/query/list-sql.ts';

describe('parseQuery', () => {
  it('coerces, applies defaults and keeps enum values typed', () => {
    const r = parseQuery(ExportParams, { hours: '72', download: '1', province: '广东' });
    expect(r).toEqual({
      ok: true,
      value: { hours: 72, download: 1, province: '广东', type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', include_research: 0, format: 'txt' },
    });
  });
  it('names every problem with what is allowed', () => {
    const r = parseQuery(RecentParams, { limit: '0', format: 'xml', extra: 'x', key: ['a', 'b'] });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([
      { name: 'limit', reason: '0 is out of range', allowed: 'an integer from 1 to 1000' },
      { name: 'format', reason: 'unknown value "xml"', allowed: 'one of: txt, csv, json' },
      { name: 'extra', reason: 'unknown parameter', allowed: 'one of the parameters: limit, format, key' },
      { name: 'key', reason: 'given more than once', allowed: 'a string' },
    ]);
  });
  it.each(['1.5', '1e2', ' 3', '', '0x10'])('hours=%j is not an integer', (raw) => {
    expect(parseQuery(ExportParams, { hours: raw }).ok).toBe(false);
  });
});

const RECORD: AddressRecord = {
  ip: '203.0.113.7', first_seen: '2026-11-20T00:00:00Z', last_seen: '2026-11-21T00:00:00Z', attacks: 5, type: 'attacker', level: 'high',
  precision: 'standard', sources: ['honeypot', 'telescope'], services: ['ssh', 'web'], ports: [22, 80], country: 'CN', province: '广东省',
  isp: '电信', net: 'idc', asn: null,
};

describe('record formats', () => {
  it('csv quotes only when needed and joins lists with ;', () => {
    expect(csvRecord(RECORD)).toBe('203.0.113.7,2026-11-20T00:00:00Z,2026-11-21T00:00:00Z,5,attacker,high,standard,honeypot;telescope,ssh;web,22;80,CN,广东省,电信,idc,\r\n');
    expect(csvCell('a,"b"\n')).toBe('"a,""b""\n"');
  });
  it('json envelope parses as the documented document', () => {
    const text = jsonOpen({ generated_at: 'g', window_hours: 24, count: 1, truncated: false }) + jsonRecord(RECORD) + jsonClose();
    expect(JSON.parse(text)).toEqual({ generated_at: 'g', window_hours: 24, count: 1, truncated: false, data: [RECORD] });
  });
});

describe('cache', () => {
  it('keys ignore the credential and parameter order', () => {
    expect(cacheKey('B', 'export', { hours: 24, key: 'secret', format: 'txt' })).toBe(cacheKey('B', 'export', { format: 'txt', hours: 24 }));
    expect(cacheKey('A', 'dedup', { hours: 24 })).not.toBe(cacheKey('B', 'dedup', { hours: 24 }));
  });
  /** The lifetime of an endpoint's answers for a window, by its row of the endpoint table. */
  const lifetimeOf = (path: string, hours: number | undefined, lifetimes?: CacheLifetimes) => {
    const endpoint = ENDPOINTS.find((e) => e.path === path);
    if (!endpoint) throw new Error(`no endpoint ${path}`);
    return cacheSeconds(endpoint.cache, hours, lifetimes);
  };
  it.each([
    ['/api/honeypot/dedup', 168, 300], ['/api/honeypot/stats', 24, 300], ['/api/honeypot/recent', undefined, 60], ['/api/recent', undefined, 60],
    ['/api/export', 1, 1800], ['/api/export', 24, 1800], ['/api/export', 25, 3600], ['/api/export', 71, 3600], ['/api/export', 72, 7200],
    ['/api/dedup', 168, 7200], ['/api/scan-export', 48, 3600], ['/api/stats', 720, 7200],
  ] as const)('%s %s h lives %i s', (path, hours, seconds) => {
    expect(lifetimeOf(path, hours)).toBe(seconds);
  });
  it('lifetimes can be set per kind (BLOCKFEED_CACHE_LIFETIMES), the rest keep the spec values', () => {
    const lifetimes = parseCacheLifetimes('upTo24h=900,recent=30');
    expect(lifetimeOf('/api/export', 24, lifetimes)).toBe(900);
    expect(lifetimeOf('/api/recent', undefined, lifetimes)).toBe(30);
    expect(lifetimeOf('/api/export', 72, lifetimes)).toBe(7200);
    expect(lifetimeOf('/api/honeypot/dedup', 24, lifetimes)).toBe(300);
  });
  it('If-None-Match lists, weak forms and *', () => {
    expect(etagMatches('"a", "b"', '"b"')).toBe(true);
    expect(etagMatches('W/"b"', '"b"')).toBe(true);
    expect(etagMatches('*', '"b"')).toBe(true);
    expect(etagMatches('"c"', '"b"')).toBe(false);
    expect(etagMatches(undefined, '"b"')).toBe(false);
  });

  it('the header list of a hit has the exact Age of every request, not one rounded per clock second', () => {
    const generatedAt = new Date(10_000_500);
    const entry = { body: Buffer.from('{}'), etag: '"e"', generatedAt, ttlSeconds: 60, headers: { 'content-type': 'application/json' } };
    const field = (list: string[], name: string) => list[list.indexOf(name) + 1];
    const first = headersOfHit(entry, 'public', 10_001_000);
    expect(field(first, 'age')).toBe('0');
    expect(headersOfHit(entry, 'public', 10_001_499)).toBe(first); // same age: the same list
    const later = headersOfHit(entry, 'public', 10_001_600); // same clock second, one second older
    expect(field(later, 'age')).toBe('1');
    expect(field(later, 'cache-control')).toBe('public, max-age=59');
    expect(field(headersOfHit(entry, 'private', 10_001_600), 'cache-control')).toBe('private, max-age=59');
    expect(field(later, 'content-length')).toBe('2');
  });
});

describe('limits', () => {
  const key = { id: 7, prefix: 'abcdefgh', name: 'n', tier: 'basic', createdAt: new Date(), revokedAt: null, memberId: null, lastUsedAt: null };
  it('anonymous per address per minute; keys by tier on B only', () => {
    expect(policyFor({ kind: 'anonymous' }, { variant: 'A', access: 'public', endpoint: 'dedup' }, '192.0.2.1', 5)).toEqual({ name: 'anonymous', bucket: 'anon:192.0.2.1', limit: 5, windowSeconds: 60 });
    // One IPv6 client is its /64: rotating the interface identifier does not dodge the limit.
    const v6 = (address: string) => policyFor({ kind: 'anonymous' }, { variant: 'A', access: 'public', endpoint: 'dedup' }, address, 5)?.bucket;
    expect(v6('2001:db8:1:2::1')).toBe('anon:2001:db8:1:2::/64');
    expect(v6('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe(v6('2001:db8:1:2::1'));
    expect(v6('2001:db8:1:3::1')).not.toBe(v6('2001:db8:1:2::1'));
    expect(v6('::ffff:192.0.2.1')).toBe('anon:192.0.2.1');
    const basic = { kind: 'key' as const, key, quota: { kind: 'daily' as const, calls: 100 } };
    expect(policyFor(basic, { variant: 'A', access: 'public', endpoint: 'dedup' }, 'x', 5)).toBeUndefined();
    const p = policyFor(basic, { variant: 'B', access: 'key', endpoint: 'export' }, 'x', 5);
    expect(p).toEqual({ name: 'basic', bucket: 'quota:7', limit: 100, windowSeconds: 86_400 });
    expect(policyFor({ ...basic, quota: { kind: 'unlimited' } }, { variant: 'B', access: 'key', endpoint: 'export' }, 'x', 5)).toBeUndefined();
    if (p) {
      expect(policyHeader(p)).toBe('"basic";q=100;w=86400');
      expect(rateLimitHeader(p, { hits: 101, resetSeconds: 30 })).toBe('"basic";r=0;t=30');
    }
  });
  it('tier quotas parse from configuration', () => {
    expect([...parseTierQuotas('member=none,basic=100,enterprise=unlimited')]).toEqual([
      ['member', { kind: 'none' }], ['basic', { kind: 'daily', calls: 100 }], ['enterprise', { kind: 'unlimited' }],
    ]);
  });
});

describe('keys', () => {
  it('carry a lookup prefix and match only themselves', () => {
    const a = generateKey();
    const b = generateKey();
    expect(keyPrefix(a.key)).toBe(a.prefix);
    expect(keyMatches(a.key, a.hash)).toBe(true);
    expect(keyMatches(b.key, a.hash)).toBe(false);
    expect(keyPrefix('bf_short')).toBeUndefined();
  });

  it('are revoked by the key, its prefix (even one of digits only) or a numeric id', () => {
    const a = generateKey();
    expect(revocationTarget(a.key)).toEqual({ prefix: a.prefix });
    expect(revocationTarget(`bf_${a.prefix}`)).toEqual({ prefix: a.prefix });
    expect(revocationTarget(a.prefix)).toEqual({ prefix: a.prefix });
    // A prefix is eight hex characters and may be all digits: still a prefix, never an id.
    expect(revocationTarget('20481632')).toEqual({ prefix: '20481632' });
    expect(revocationTarget('bf_20481632')).toEqual({ prefix: '20481632' });
    expect(revocationTarget('42')).toEqual({ id: 42 });
    expect(revocationTarget('123456789')).toEqual({ id: 123456789 });
    expect(revocationTarget('9999999999')).toEqual({ prefix: '9999999999' }); // past any id: matches nothing
  });
});

describe('filters', () => {
  it('quote every value and exclude research platforms unless asked', () => {
    const since = new Date('2026-11-21T00:00:00Z');
    const sql = whereSql({ asOf: since, since, basis: 'any', province: "x'; drop table addresses; --", includeResearch: false });
    expect(sql).toContain(`a.province = 'x''; drop table addresses; --'`);
    expect(sql).toContain(`a.scanner_kind is distinct from 'research_scanner'`);
    expect(whereSql({ asOf: since, since, basis: 'telescope', type: 'research_scanner', includeResearch: false })).not.toContain('distinct from');
  });
});
