// Response cache (hits, validators, 304, lifetimes), streaming of large lists, truncation, and a client
// that hangs up cancelling its statement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { exportFilter } from '../../../../api-server/query/lists.ts';
import { openListSnapshot } from '../../../../api-server/query/stream.ts';
import { readListBody } from '../../../../api-server/render/list-body.ts';
import type { ExportQuery } from '../../../../api-server/query/endpoint-params.ts';
import { generateAddresses } from '../../../support/attack-fixtures.ts';
import type { TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { getWithKey, startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  ({ db, api, key } = await startFixtureApi('cache tests'));
});
afterAll(() => stopFixtureApi(db, api));

const get = (path: string, headers?: Record<string, string>) => getWithKey(api, key, path, headers);

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${api.base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return Number(line?.split(' ').at(-1) ?? 0);
}

describe('response cache', () => {
  it('a list is streamed once, then served from the cache with a strong ETag; If-None-Match answers 304', async () => {
    const hitsBefore = await metric('blockfeed_response_cache_lookups_total', 'endpoint="export",result="hit"');
    const first = await get('/api/export?hours=48&format=csv');
    const body = await first.text();
    expect(first.headers.get('cache-control')).toBe('private, max-age=3600');
    expect(first.headers.get('last-modified')).toBeTruthy();

    // Same parameters in another order and with the defaults spelled out: the same cache entry.
    const second = await get('/api/export?format=csv&type=all&hours=48&level=all');
    expect(await second.text()).toBe(body);
    const etag = second.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[0-9a-f]{8}\.\d+\.\d+\.[A-Za-z0-9_-]{32}"$/);
    expect(second.headers.get('last-modified')).toBe(first.headers.get('last-modified'));
    expect(Number(second.headers.get('age'))).toBeGreaterThanOrEqual(0);
    expect(await metric('blockfeed_response_cache_lookups_total', 'endpoint="export",result="hit"')).toBe(hitsBefore + 1);

    const notModified = await get('/api/export?hours=48&format=csv', { 'if-none-match': `W/"other", ${etag}` });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('etag')).toBe(etag);
    expect(await notModified.text()).toBe('');
    expect((await get('/api/export?hours=48&format=csv', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('the key is never part of the cache entry, but auth and limits still run first', async () => {
    await (await get('/api/scan-export?hours=5')).text();
    const other = await createKey(db.pool, 'pro', 'second customer');
    const viaOther = await fetch(`${api.base}/api/scan-export?hours=5`, { headers: { 'x-api-key': other.key } });
    expect(viaOther.headers.get('etag')).toBeTruthy();
    expect(viaOther.headers.get('ratelimit')).toMatch(/^"pro";r=9999;/);
    expect((await fetch(`${api.base}/api/scan-export?hours=5`)).status).toBe(401);
  });

  it('documents carry validators from the first answer', async () => {
    const first = await get('/api/stats?hours=100');
    expect(first.headers.get('cache-control')).toBe('public, max-age=7200');
    const etag = first.headers.get('etag') ?? '';
    expect(etag).not.toBe('');
    expect((await get('/api/stats?hours=100', { 'if-none-match': etag })).status).toBe(304);
  });

  it.each([
    ['/api/honeypot/dedup', 'public, max-age=300'],
    ['/api/honeypot/stats', 'public, max-age=300'],
    ['/api/honeypot/recent', 'public, max-age=60'],
    ['/api/recent', 'public, max-age=60'],
    ['/api/dedup?hours=24', 'private, max-age=1800'],
    ['/api/dedup?hours=25', 'private, max-age=3600'],
    ['/api/export?hours=71', 'private, max-age=3600'],
    ['/api/scan-export?hours=72', 'private, max-age=7200'],
    ['/api/stats?hours=720', 'public, max-age=7200'],
  ])('%s lives %s', async (path, cacheControl) => {
    const res = await get(path);
    await res.arrayBuffer();
    expect(res.headers.get('cache-control')).toBe(cacheControl);
  });

  it('errors are not cached', async () => {
    const res = await get('/api/export?hours=0');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('etag')).toBeNull();
  });

  // A URL answered before is served by the fast path (guard.ts): it must check exactly what the first did.
  it('a repeated URL is still authenticated, limited, logged and measured (the cached-answer fast path)', async () => {
    const path = '/api/recent?limit=7';
    const duration = (status: number) => metric('blockfeed_http_request_duration_seconds_count', `method="GET",route="/api/recent",status="${status}"`);
    expect((await get(path)).status).toBe(200);
    const hits = await metric('blockfeed_response_cache_lookups_total', 'endpoint="recent",result="hit"');
    const [ok, limited] = [await duration(200), await duration(429)];

    const invalid = await fetch(`${api.base}${path}`, { headers: { 'x-api-key': 'bf_00000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    const member = await createKey(db.pool, 'member', 'fast path member');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${api.base}${path}`, i === 0 ? { headers: { 'x-api-key': member.key } } : {});
      statuses.push(res.status);
      if (res.status === 200) {
        expect(res.headers.get('etag')).toBeTruthy();
        expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=5;w=60');
        expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"anonymous";r=${4 - i};t=\\d+$`));
      } else {
        expect(res.headers.get('retry-after')).toBeTruthy();
        expect(res.headers.get('etag')).toBeNull();
        expect(((await res.json()) as { type: string }).type).toBe('urn:blockfeed:problem:rate-limited');
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await metric('blockfeed_response_cache_lookups_total', 'endpoint="recent",result="hit"')).toBe(hits + 5);
    expect(await duration(200)).toBe(ok + 5);
    expect(await duration(429)).toBe(limited + 1);
    expect(api.log()).toMatch(/"url":"\/api\/recent\?limit=7".*"statusCode":429/);
  });
});

describe('large lists', () => {
  beforeAll(async () => {
    await generateAddresses(db.pool, 200_000, 24);
  });

  it('stream every address in order, in every format', async () => {
    const txt = await (await get('/api/scan-export?hours=24')).text();
    const ips = txt.split('\n').filter(Boolean);
    expect(ips).toHaveLength(200_003);
    expect(ips[0]).toBe('11.0.0.0');
    expect(ips.at(-4)).toBe('11.3.13.63');
    const json = (await (await get('/api/scan-export?hours=24&format=json')).json()) as { count: number; data: { ip: string }[] };
    expect(json.count).toBe(200_003);
    expect(json.data).toHaveLength(200_003);
    expect(json.data[1]?.ip).toBe('11.0.0.1');
  });

  it('a client that disconnects cancels the statement', async () => {
    const controller = new AbortController();
    const res = await get('/api/export?hours=24&format=json&level=medium', {});
    const reader = res.body?.getReader();
    await reader?.read();
    const aborted = fetch(`${api.base}/api/export?hours=23&format=json`, { headers: { 'x-api-key': key }, signal: controller.signal });
    const started = await aborted;
    const stream = started.body?.getReader();
    await stream?.read();
    controller.abort();
    await reader?.cancel();
    // The server's statements for those two requests end (cancelled), leaving no active export query.
    let active = 1;
    for (let i = 0; i < 100 && active > 0; i++) {
      const { rows } = await db.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where application_name = 'blockfeed-test-api' and state <> 'idle' and query like '%from addresses a%'`,
      );
      active = rows[0]?.n ?? 0;
      if (active) await new Promise((r) => setTimeout(r, 100));
    }
    expect(active).toBe(0);
    // The server is still fine.
    expect((await get('/api/stats?hours=3')).status).toBe(200);
  });

  it('above the record cap the most severe and most recent are kept, in address order', async () => {
    const log = createLogger({ level: 'silent' });
    const now = new Date();
    const query = { type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', hours: 720, include_research: 0, format: 'txt', download: 0 } as ExportQuery;
    const list = await readListBody(await openListSnapshot(db.pool, log), { filter: exportFilter(query, now), format: 'txt', generatedAt: now, windowHours: 720, limit: 3, count: true });
    const text = await new Response(list.body).text();
    expect(list.truncated).toBe(true);
    expect(list.count).toBe(3);
    // Critical .20 first, then high .30 and 2001:db8::1 (the generated addresses are all medium).
    expect(text).toBe('203.0.113.20\n203.0.113.30\n2001:db8::1\n');
    const json = await readListBody(await openListSnapshot(db.pool, log), { filter: exportFilter(query, now), format: 'json', generatedAt: now, windowHours: 720, limit: 4, count: true });
    const doc = JSON.parse(await new Response(json.body).text()) as { count: number; truncated: boolean; data: { ip: string }[] };
    expect(doc).toMatchObject({ count: 4, truncated: true });
    // The fourth: the most recent of the medium ones.
    expect(doc.data.map((r) => r.ip)).toHaveLength(4);
  });
});
