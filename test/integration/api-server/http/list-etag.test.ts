// A list's ETag is known before its body: the first (streamed) answer carries it, so a subscription's second
// pull is already a 304, on any replica, even when no cache holds the list; and two answers share an ETag
// only when their bytes are equal.
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

const TOKEN = 'list-etag-test-ingest-token';
const LISTS = ['/api/dedup', '/api/export', '/api/scan-export', '/api/honeypot/dedup'];
const FORMATS = ['txt', 'csv', 'json'];

let db: TestDatabase;
let key: string;
/** The instant the APIs' clock reads; tests move it. Starts 5 s into the current minute. */
let now = Math.floor(Date.now() / 60_000) * 60_000 + 5_000;
const clock = () => new Date(now);
/** With the response cache (as served), and two replicas without one. */
let cached: TestApi;
let replicaA: TestApi;
let replicaB: TestApi;

beforeAll(async () => {
  ({ db, api: cached, key } = await startFixtureApi('etag tests', { clock }));
  replicaA = await startApi(db.url, { cacheMaxBytes: 0, ingestToken: TOKEN }, { clock });
  replicaB = await startApi(db.url, { cacheMaxBytes: 0 }, { clock });
});
afterAll(async () => {
  for (const api of [replicaA, replicaB]) await api?.close();
  await stopFixtureApi(db, cached);
});

async function get(api: TestApi, path: string, etag?: string): Promise<{ status: number; etag: string; body: string }> {
  const auth = path.startsWith('/api/honeypot/') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key };
  // Bounded, so that a request stuck behind a lock fails the test rather than hanging it.
  const res = await fetch(`${api.base}${path}`, { headers: { ...auth, ...(etag ? { 'if-none-match': etag } : {}) }, signal: AbortSignal.timeout(20_000) });
  const body = await res.text();
  return { status: res.status, etag: res.headers.get('etag') ?? '', body };
}

describe('list ETags', () => {
  it('the first answer of every list carries an ETag, and the second pull is a 304', async () => {
    for (const list of LISTS) {
      for (const format of FORMATS) {
        const path = `${list}?format=${format}&hours=100`;
        const first = await get(cached, path);
        expect(first.status, path).toBe(200);
        expect(first.etag, path).toMatch(/^"[0-9a-f]{8}\.\d+\.\d+\.[A-Za-z0-9_-]{32}"$/);
        const second = await get(cached, path, first.etag);
        expect(second.status, path).toBe(304);
        expect(second.etag).toBe(first.etag);
        // The cached copy is the same answer.
        expect(await get(cached, path)).toEqual(first);
      }
    }
  });

  it('replicas without a cache agree, and answer a matching If-None-Match without reading the list', async () => {
    const path = '/api/export?format=json&hours=48';
    const a = await get(replicaA, path);
    const b = await get(replicaB, path);
    expect(b).toEqual(a);
    // With addresses locked, reading the list would wait; the 304 needs only the data version.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table addresses in access exclusive mode');
      expect((await get(replicaB, path, a.etag)).status).toBe(304);
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
  });

  it('a new minute is a new ETag; within the minute the ETag holds', async () => {
    const path = '/api/dedup?format=json';
    const first = await get(replicaA, path);
    now += 30_000;
    expect((await get(replicaA, path, first.etag)).status).toBe(304);
    now += 30_000;
    const next = await get(replicaA, path, first.etag);
    expect(next.status).toBe(200);
    expect(next.etag).not.toBe(first.etag);
    expect((JSON.parse(next.body) as { generated_at: string }).generated_at).toBe(new Date(Math.floor(now / 60_000) * 60_000).toISOString());
  });

  it('new data is a new ETag, written by a test or by the push route', async () => {
    const path = '/api/dedup?hours=3';
    const before = await get(replicaA, path);
    await insertAddresses(db.pool, [{ ip: '198.51.100.201', honeypot: 1, country: 'US' }]);
    const after = await get(replicaA, path, before.etag);
    expect(after.status).toBe(200);
    expect(after.etag).not.toBe(before.etag);
    expect(after.body).toContain('198.51.100.201\n');

    const line = JSON.stringify({ ts: new Date(Date.now() - 60_000).toISOString(), src_ip: '198.51.100.202', dst_port: 22, source: 'honeypot', sensor: 'hp-etag' });
    const pushed = await fetch(`${replicaA.base}/internal/v1/events?format=native`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: line });
    expect(pushed.status, await pushed.text()).toBe(200);
    const later = await get(replicaA, path, after.etag);
    expect(later.status).toBe(200);
    expect(later.body).toContain('198.51.100.202\n');
  });

  it('two answers share an ETag only when their bytes are equal', async () => {
    const seen = new Map<string, string>();
    const step = fc.oneof(
      fc.record({ kind: fc.constant('wait' as const), seconds: fc.integer({ min: 0, max: 150 }) }),
      fc.record({ kind: fc.constant('address' as const), last: fc.integer({ min: 1, max: 200 }), octet: fc.integer({ min: 1, max: 250 }) }),
      fc.record({ kind: fc.constant('get' as const), list: fc.constantFrom(...LISTS), format: fc.constantFrom(...FORMATS), hours: fc.constantFrom(1, 24, 100) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        for (const s of steps) {
          if (s.kind === 'wait') now += s.seconds * 1000;
          else if (s.kind === 'address') {
            await insertAddresses(db.pool, [{ ip: `203.0.113.${s.octet}`, telescope: s.last / 10, services: { web: s.last / 10 } }]).catch((err: { code?: string }) => {
              if (err.code !== '23505') throw err; // that address is there already
            });
          } else {
            for (const api of [replicaA, replicaB]) {
              const answer = await get(api, `${s.list}?format=${s.format}&hours=${s.hours}`);
              expect(answer.status).toBe(200);
              const known = seen.get(answer.etag);
              if (known !== undefined) expect(answer.body).toBe(known);
              seen.set(answer.etag, answer.body);
            }
          }
        }
      }),
      { numRuns: 15 },
    );
    expect(seen.size).toBeGreaterThan(1);
  });
});
