// Identical requests that arrive while an uncached answer is being made share it: the store answers once.
// The test holds a lock a statement of the answer needs, so the first request waits in the store while
// the others arrive; how many of the api-server's statements wait behind the lock is how many answers are
// being made. Then the lock goes, and every request gets the same bytes — kept whole (a cache entry) or
// shared live (a list larger than an entry may be) — and a client that leaves takes nobody's answer with it.
// A first answer that fails is not shared: the others try once more themselves. A request for the current
// data joins only a list made of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../api-server/config.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { generateAddresses, insertAddresses } from '../../../support/attack-fixtures.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const N = 16;

interface Served {
  db: TestDatabase;
  api: TestApi;
  key: string;
}

/** A store with 20,000 addresses (a list of ~300 kB as txt) and an api-server on it. */
function served(overrides: Partial<Config> = {}): Served {
  const s = {} as Served;
  beforeAll(async () => {
    s.db = await freshDatabase();
    await insertAddresses(s.db.pool, [{ ip: '203.0.113.20', honeypot: 1, interaction: 1, critical: 1, services: { ssh: 1 }, country: 'CN', attacks: 40 }]);
    await generateAddresses(s.db.pool, 20_000, 48);
    s.key = (await createKey(s.db.pool, 'enterprise', 'coalescing')).key;
    s.api = await startApi(s.db.url, overrides);
  });
  afterAll(async () => {
    await s.api.close();
    await s.db.drop();
  });
  return s;
}

/** The api-server's statements waiting behind a lock. */
async function waitingStatements(s: Served): Promise<number> {
  const { rows } = await s.db.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity where application_name = 'blockfeed-test-api' and wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting until ${what}`);
}

async function lookups(s: Served, endpoint: string, result: string): Promise<number> {
  const text = await (await fetch(`${s.api.base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`blockfeed_response_cache_lookups_total{endpoint="${endpoint}",result="${result}"`));
  return Number(line?.split(' ').at(-1) ?? 0);
}

/**
 * Holds `table` locked while the first of `count` identical requests waits in the store and the others
 * arrive (each looked up in the cache, missing it), runs `meanwhile`, then lets go. Resolves with the responses, as
 * fetch's promises.
 */
async function herd(s: Served, path: string, endpoint: string, table: string, count: number, meanwhile: (requests: { signal: AbortController; response: Promise<Response> }[]) => Promise<void> = async () => undefined) {
  const locker = await s.db.pool.connect();
  try {
    await locker.query('begin');
    await locker.query(`lock table ${table} in access exclusive mode`);
    const looked = async () => (await lookups(s, endpoint, 'miss')) + (await lookups(s, endpoint, 'coalesced'));
    const [before, coalesced] = [await looked(), await lookups(s, endpoint, 'coalesced')];
    const request = () => {
      const signal = new AbortController();
      const response = fetch(`${s.api.base}${path}`, { headers: { 'x-api-key': s.key }, signal: signal.signal });
      response.catch(() => undefined);
      return { signal, response };
    };
    const first = request();
    await until('the first request waits in the store', async () => (await waitingStatements(s)) === 1);
    const others = Array.from({ length: count - 1 }, request);
    await until('the others arrived', async () => (await looked()) === before + count);
    // One answer is being made for all of them: one statement waits, the others joined it.
    expect(await waitingStatements(s)).toBe(1);
    expect(await lookups(s, endpoint, 'coalesced')).toBe(coalesced + count - 1);
    const requests = [first, ...others];
    await meanwhile(requests);
    return requests;
  } finally {
    await locker.query('commit');
    locker.release();
  }
}

describe('identical requests, the answer kept whole', () => {
  const s = served();

  it('a statistic is computed once for all of them', async () => {
    const requests = await herd(s, '/api/stats?hours=720', 'stats', 'ip_hourly', N);
    const answers = await Promise.all(requests.map(async ({ response }) => {
      const res = await response;
      return { status: res.status, etag: res.headers.get('etag'), body: await res.text() };
    }));
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(new Set(answers.map((a) => a.etag)).size).toBe(1);
    expect(JSON.parse(answers[0]?.body ?? '{}')).toMatchObject({ unique_ips: 20_001 });
  });

  it('a list is read once, every request gets its bytes, and one that leaves takes nothing from the others', async () => {
    const requests = await herd(s, '/api/export?hours=720&format=json', 'export', 'addresses', N, async (all) => {
      // The first request's client and one waiter's go away before any byte.
      all[0]?.signal.abort();
      all[1]?.signal.abort();
    });
    const answers = await Promise.all(requests.slice(2).map(async ({ response }) => {
      const res = await response;
      return { status: res.status, etag: res.headers.get('etag'), body: await res.text() };
    }));
    expect(answers.map((a) => a.status)).toEqual(Array(N - 2).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(new Set(answers.map((a) => a.etag)).size).toBe(1);
    expect((JSON.parse(answers[0]?.body ?? '{}') as { count: number; data: unknown[] }).data).toHaveLength(20_001);
    // It became the cache entry: the next request is a hit.
    const hits = await lookups(s, 'export', 'hit');
    const again = await fetch(`${s.api.base}/api/export?hours=720&format=json`, { headers: { 'x-api-key': s.key } });
    expect(await again.text()).toBe(answers[0]?.body);
    expect(await lookups(s, 'export', 'hit')).toBe(hits + 1);
  });

  it('a first answer that fails is not shared: the others try once more', async () => {
    const requests = await herd(s, '/api/export?hours=700&format=csv', 'export', 'addresses', N, async () => {
      // The first request's statement is cancelled: its answer fails before its first byte.
      await s.db.pool.query(`select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'blockfeed-test-api' and wait_event_type = 'Lock'`);
    });
    const first = await requests[0]?.response;
    expect(first?.status).toBe(500);
    const answers = await Promise.all(requests.slice(1).map(async ({ response }) => {
      const res = await response;
      return { status: res.status, body: await res.text() };
    }));
    expect(answers.map((a) => a.status)).toEqual(Array(N - 1).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers[0]?.body.split('\r\n').filter(Boolean)).toHaveLength(20_002);
  });
});

describe('identical requests for the current data (Cache-Control: no-cache, long polls)', () => {
  const s = served();

  /**
   * A plain request for `path` waits in the store (every list statement reads the exclusions, locked here),
   * `between` runs, then a request for the current data arrives; `fresh` resolves once it is placed (joined,
   * or making its own). Then the lock goes. Resolves with both bodies.
   */
  async function plainThenFresh(path: string, between: () => Promise<void>, placed: () => Promise<boolean>) {
    const locker = await s.db.pool.connect();
    const get = (headers: Record<string, string>) => fetch(`${s.api.base}${path}`, { headers: { 'x-api-key': s.key, ...headers } }).then((r) => r.text());
    try {
      await locker.query('begin');
      await locker.query('lock table exclusions in access exclusive mode');
      const plain = get({});
      await until('the plain request waits in the store', async () => (await waitingStatements(s)) === 1);
      await between();
      const fresh = get({ 'cache-control': 'no-cache' });
      await until('the fresh request is placed', placed);
      await locker.query('rollback');
      return { plain: await plain, fresh: await fresh };
    } finally {
      // A no-op after the rollback above; without it (a check failed) the lock would outlive the test.
      await locker.query('rollback');
      locker.release();
    }
  }

  it('joins a list being made of the data it asks for', async () => {
    const coalesced = await lookups(s, 'dedup', 'coalesced');
    const { plain, fresh } = await plainThenFresh('/api/dedup?hours=46', async () => undefined, async () => (await lookups(s, 'dedup', 'coalesced')) === coalesced + 1);
    expect(fresh).toBe(plain);
  });

  it('makes its own when the list being made was begun before a change', async () => {
    const { plain, fresh } = await plainThenFresh(
      '/api/dedup?hours=45',
      () => insertAddresses(s.db.pool, [{ ip: '203.0.113.99', honeypot: 1, services: { ssh: 1 }, country: 'DE', attacks: 3 }]),
      async () => (await waitingStatements(s)) === 2,
    );
    expect(plain).not.toContain('203.0.113.99\n');
    expect(fresh).toContain('203.0.113.99\n');
  });
});

describe('identical requests, a list larger than a cache entry', () => {
  // Entries of at most 16 kB: the list (~300 kB) is shared as it streams.
  const s = served({ cacheMaxBytes: 64 * 1024 });

  it('is read once and streamed to all of them; the ones that leave take nothing from the others', async () => {
    const requests = await herd(s, '/api/dedup?hours=48', 'dedup', 'addresses', N);
    // The first request's client reads the beginning and leaves; so does a waiter's.
    for (const leaving of requests.slice(0, 2)) {
      const reader = (await leaving.response).body?.getReader();
      await reader?.read();
      leaving.signal.abort();
    }
    const bodies = await Promise.all(requests.slice(2).map(async ({ response }) => (await response).text()));
    expect(new Set(bodies).size).toBe(1);
    expect(bodies[0]?.split('\n').filter(Boolean)).toHaveLength(20_001);
  });

  it('is abandoned, its statement cancelled, when every request has left', async () => {
    const requests = await herd(s, '/api/dedup?hours=47', 'dedup', 'addresses', 4, async (all) => {
      for (const r of all) r.signal.abort();
    });
    await Promise.allSettled(requests.map((r) => r.response));
    await until('no statement of the list runs', async () => {
      const { rows } = await s.db.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where application_name = 'blockfeed-test-api' and state <> 'idle' and query like '%from addresses a%'`,
      );
      return rows[0]?.n === 0;
    });
    // And the next request makes it anew.
    const res = await fetch(`${s.api.base}/api/dedup?hours=47`, { headers: { 'x-api-key': s.key } });
    expect((await res.text()).split('\n').filter(Boolean)).toHaveLength(20_001);
  });
});
