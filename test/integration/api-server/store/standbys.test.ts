// Reading from a standby (DATABASE_READ_URL), on two real PostgreSQL servers in streaming replication. A
// standby that lags (its replay paused) gives no 304 for a list that changed and never a list older than the
// one a client holds, from the store or from the response cache. With the primary stopped, lists and the
// website's charts are read from the standby, while writes and metered calls answer 503 with Retry-After;
// once the primary is back, everything works again in the same api-server. A long poll, woken on the primary,
// is answered from the primary while the standby lags, and so is a list after an exclusion the standby has
// not replayed.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { addExclusion } from '../../../../api-server/exclusions/store.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { loadEventSource, pushOneEvent } from '../../../support/load.ts';
import { startReplicatedStore, type ReplicatedStore } from '../../../support/replication.ts';

const TOKEN = 'standbys-ingest-token';
const LIST = '/api/export?hours=24&format=txt';
/** One instant for the whole file: a list's ETag names its minute, and 304s must not depend on the clock. */
const NOW = new Date();

interface Answer {
  status: number;
  etag: string;
  retryAfter: string | null;
  body: string;
}

async function get(api: TestApi, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${api.base}${path}`, { headers });
  return { status: res.status, etag: res.headers.get('etag') ?? '', retryAfter: res.headers.get('retry-after'), body: await res.text() };
}

async function push(api: TestApi, n: number): Promise<number> {
  const { path, init } = pushOneEvent(n, TOKEN, 'hp-standby');
  const res = await fetch(`${api.base}${path}`, init);
  await res.text();
  return res.status;
}

/** Lists read from the store so far, by the server read from. */
async function listReads(api: TestApi): Promise<{ primary: number; standby: number }> {
  const text = await (await fetch(`${api.base}/metrics`)).text();
  const read = (source: string) => Number(new RegExp(`^blockfeed_list_reads_total\\{[^}]*source="${source}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { primary: read('primary'), standby: read('standby') };
}

const holds = (body: string, n: number) => body.split('\n').includes(loadEventSource(n));

/** Long polls the server holds now. */
async function heldPolls(api: TestApi): Promise<number> {
  const text = await (await fetch(`${api.base}/metrics`)).text();
  return Number(/^blockfeed_long_polls (\d+)$/m.exec(text)?.[1] ?? 0);
}

describe('lists from a standby', () => {
  let store: ReplicatedStore;
  let uncached: TestApi;
  let cached: TestApi;
  let enterprise: string;
  let pro: string;
  const list = (api: TestApi, etag?: string) => get(api, LIST, { 'x-api-key': enterprise, ...(etag ? { 'if-none-match': etag } : {}) });

  beforeAll(async () => {
    store = await startReplicatedStore(createLogger({ level: 'silent' }));
    enterprise = (await createKey(store.primary, 'enterprise', 'standby reader')).key;
    pro = (await createKey(store.primary, 'pro', 'metered reader')).key;
    const settings = {
      databaseReadUrl: store.standbyUrl,
      ingestToken: TOKEN,
      anonymousPerMinute: 10_000,
      // Every request verifies its key: what the store says decides, not what was remembered.
      keyCacheSeconds: 0,
      sessionSecret: 'a-session-secret-of-32-characters-at-least',
    };
    uncached = await startApi(store.primaryUrl, { ...settings, cacheMaxBytes: 0 }, { clock: () => NOW });
    cached = await startApi(store.primaryUrl, settings, { clock: () => NOW });
  });

  afterAll(async () => {
    await uncached?.close();
    await cached?.close();
    await store?.close();
  });

  it('a lagging standby gives no 304 for a list that changed, and no list older than the one a client holds', async () => {
    expect(await push(uncached, 1)).toBe(200);
    await store.caughtUp();
    const before = await listReads(uncached);
    const first = await list(uncached);
    expect(first.status).toBe(200);
    expect(holds(first.body, 1), first.body).toBe(true);
    expect(first.etag).toMatch(/^"[0-9a-f]{8}\.\d+\.\d+\.[A-Za-z0-9_-]{32}"$/);
    expect(await listReads(uncached)).toEqual({ primary: before.primary, standby: before.standby + 1 });

    await store.pauseReplay();
    expect(await push(uncached, 2)).toBe(200);
    // A client that holds no list gets the standby's, as it is: without the event it has not applied yet.
    const lagging = await list(uncached);
    expect(lagging.status).toBe(200);
    expect(holds(lagging.body, 2)).toBe(false);
    expect(lagging.etag).toBe(first.etag);

    // The client holding the first list: it changed, so no 304 but the new list, from the primary.
    const changed = await list(uncached, first.etag);
    expect(changed.status).toBe(200);
    expect(holds(changed.body, 2)).toBe(true);
    expect(changed.etag).not.toBe(first.etag);
    // Holding the new list: a 304, not the standby's older one.
    const same = await list(uncached, changed.etag);
    expect(same.status).toBe(304);
    expect(same.etag).toBe(changed.etag);

    // The cache holds what the standby gave a client without a list; a client with the newer one is not
    // taken back by it.
    const cachedFirst = await list(cached);
    expect(cachedFirst.etag).toBe(first.etag);
    expect((await list(cached)).etag).toBe(first.etag);
    const notBack = await list(cached, changed.etag);
    expect(notBack.status).toBe(304);
    expect(notBack.etag).toBe(changed.etag);

    // Caught up, the standby answers the same question itself.
    await store.resumeReplay();
    await store.caughtUp();
    const reads = await listReads(uncached);
    expect((await list(uncached, changed.etag)).status).toBe(304);
    expect(await listReads(uncached)).toEqual({ primary: reads.primary, standby: reads.standby + 1 });
  });

  it('a long poll woken by a push while the standby lags answers with the new list, read on the primary', async () => {
    // NOTIFY reaches only the primary's listeners; the standby has not applied what woke the poll.
    const current = await list(uncached);
    expect(current.status).toBe(200);
    await store.pauseReplay();
    const poll = get(uncached, `${LIST}&wait=30`, { 'x-api-key': enterprise, 'if-none-match': current.etag });
    for (let i = 0; (await heldPolls(uncached)) < 1; i++) {
      if (i > 500) throw new Error('the long poll was not held');
      await new Promise((r) => setTimeout(r, 10));
    }
    const reads = await listReads(uncached);
    expect(await push(uncached, 10)).toBe(200);
    const woken = await poll;
    // Not a 304 from the standby's list (the client's own), nor that list again: the new one, from the primary.
    expect(woken.status).toBe(200);
    expect(holds(woken.body, 10)).toBe(true);
    expect(woken.etag).not.toBe(current.etag);
    expect(await listReads(uncached)).toEqual({ primary: reads.primary + 1, standby: reads.standby });
    await store.resumeReplay();
    await store.caughtUp();
  });

  it('an exclusion made while the standby lags: no cached list and no list from the standby brings the address back', async () => {
    expect(await push(cached, 20)).toBe(200);
    await store.caughtUp();
    // Read anew (not the copy kept by the first test), and kept.
    const listed = await get(cached, LIST, { 'x-api-key': enterprise, 'cache-control': 'no-cache' });
    expect(holds(listed.body, 20), listed.body).toBe(true);
    expect((await list(cached)).etag).toBe(listed.etag);

    await store.pauseReplay();
    await addExclusion(store.primary, { network: `${loadEventSource(20)}/32`, reason: 'a false positive', createdBy: 'test' });
    // The notice reaches the server a moment after the commit; until then it may still serve its cached copy.
    let after = await list(cached);
    for (const deadline = Date.now() + 10_000; holds(after.body, 20) && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) after = await list(cached);
    expect(holds(after.body, 20), 'the excluded address is back in the list').toBe(false);
    expect(holds(after.body, 1)).toBe(true);
    // Read on the primary (the standby has not replayed the exclusion), and kept: the same list again.
    const again = await list(cached);
    expect([again.etag, holds(again.body, 20)]).toEqual([after.etag, false]);
    const check = JSON.parse((await get(cached, `/api/check?ip=${loadEventSource(20)}`, { 'x-api-key': enterprise })).body) as { listed: boolean; excluded: unknown };
    expect(check.listed).toBe(false);
    expect(check.excluded).not.toBeNull();
    await store.resumeReplay();
    await store.caughtUp();
  });

  it('with the primary stopped: lists and charts from the standby, 503 for writes and metered calls; then all resumes', async () => {
    // The standby lags behind a list the client holds when the primary goes away.
    await store.pauseReplay();
    const before = await list(uncached);
    expect(await push(uncached, 3)).toBe(200);
    const third = await list(uncached, before.etag);
    expect(third.status).toBe(200);
    expect(holds(third.body, 3)).toBe(true);
    await store.stopPrimary();

    // No older list for the client that holds the third one: 503, to retry.
    const behind = await list(uncached, third.etag);
    expect([behind.status, behind.retryAfter]).toEqual([503, '5']);
    // Nor is a key taken from a standby with WAL still to apply (a revocation may be in it).
    const unverified = await list(uncached);
    expect([unverified.status, unverified.retryAfter]).toEqual([503, '5']);

    await store.resumeReplay();
    for (;;) {
      const { rows } = await store.standby.query<{ done: boolean }>('select pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn() as done');
      if (rows[0]?.done) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const reads = await listReads(uncached);
    const fromStandby = await list(uncached);
    expect(fromStandby.status).toBe(200);
    expect(holds(fromStandby.body, 3)).toBe(true);
    expect(fromStandby.etag).toBe(third.etag);
    expect((await list(uncached, third.etag)).status).toBe(304);
    expect(await listReads(uncached)).toEqual({ primary: reads.primary, standby: reads.standby + 2 });
    const home = await fetch(`${uncached.base}/?hours=24`);
    expect(home.status).toBe(200);
    expect(await home.text()).toMatch(/<svg/);
    expect((await fetch(`${uncached.base}/readyz`)).status).toBe(200);

    // What needs the primary: a push, and every metered call (its counter is a write): 503 with Retry-After.
    const { path, init } = pushOneEvent(4, TOKEN, 'hp-standby');
    const pushed = await fetch(`${uncached.base}${path}`, init);
    expect([pushed.status, pushed.headers.get('retry-after')]).toEqual([503, '5']);
    const stats = await get(uncached, '/api/stats?hours=24');
    expect([stats.status, stats.retryAfter]).toEqual([503, '5']);
    const metered = await get(uncached, LIST, { 'x-api-key': pro });
    expect([metered.status, metered.retryAfter]).toEqual([503, '5']);

    // The primary back: the same api-server writes, meters and lists again.
    await store.startPrimary();
    let status = 0;
    for (const deadline = Date.now() + 30_000; status !== 200 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) status = await push(uncached, 4);
    expect(status).toBe(200);
    await store.caughtUp();
    expect((await get(uncached, '/api/stats?hours=24')).status).toBe(200);
    const after = await list(uncached, third.etag);
    expect(after.status).toBe(200);
    expect(holds(after.body, 4)).toBe(true);
    const meteredAfter = await get(uncached, LIST, { 'x-api-key': pro });
    expect(meteredAfter.status).toBe(200);
    expect(meteredAfter.body).toBe(after.body);
  });

  it('writes sent to a standby answer 503 (a failover address that still leads to one), not 500', async () => {
    const onStandby = await startApi(store.standbyUrl, { ingestToken: TOKEN }, { clock: () => NOW });
    try {
      const { path, init } = pushOneEvent(5, TOKEN, 'hp-standby');
      const res = await fetch(`${onStandby.base}${path}`, init);
      expect([res.status, res.headers.get('retry-after')]).toEqual([503, '5']);
    } finally {
      await onStandby.close();
    }
    // The standby refused it as PostgreSQL does: read-only.
    const client = new pg.Client({ connectionString: store.standbyUrl });
    await client.connect();
    try {
      expect((await client.query<{ r: boolean }>('select pg_is_in_recovery() as r')).rows[0]?.r).toBe(true);
    } finally {
      await client.end();
    }
  });
});
