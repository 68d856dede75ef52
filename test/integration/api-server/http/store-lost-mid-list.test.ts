// A list whose connection to the store dies while its statement runs, before its first byte, is a 503 with
// Retry-After — never a hang — in every format; the server answers again once the store does. The api-server
// reaches PostgreSQL through a TCP relay the test cuts while the list's statement waits on a lock. (A cursor
// whose connection died waits for an answer that never comes before it reports anything; the answer must
// not wait with it.)
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../../../api-server/keys/store.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { ADDRESSES } from '../../../support/api-fixture-set.ts';

/** Relays connections to `target`; cut() ends every one of them at once, as a store that died. */
async function relay(target: URL): Promise<{ port: number; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let db: TestDatabase;
let api: TestApi;
let key: string;
let store: Awaited<ReturnType<typeof relay>>;

beforeAll(async () => {
  db = await freshDatabase();
  await insertAddresses(db.pool, ADDRESSES);
  key = (await createKey(db.pool, 'enterprise', 'store lost')).key;
  store = await relay(new URL(db.url));
  const url = new URL(db.url);
  url.host = `127.0.0.1:${store.port}`;
  // No response cache: every request reads the store.
  api = await startApi(url.toString(), { cacheMaxBytes: 0 });
});
afterAll(async () => {
  await api.close();
  await store.close();
  await db.drop();
});

/** Until a backend of the api-server waits on a lock (its list statement, behind the test's lock). */
async function listStatementWaits(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where application_name = 'blockfeed-test-api' and wait_event_type = 'Lock'`,
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  const { rows } = await db.pool.query(`select application_name, state, wait_event_type, wait_event, left(query, 80) as q from pg_stat_activity where datname = current_database()`);
  throw new Error(`the list statement never waited on the lock: ${JSON.stringify(rows)}`);
}

describe('the store lost in the middle of a list', () => {
  // csv reads a cursor without counting first; json counts first; txt runs COPY.
  for (const format of ['csv', 'json', 'txt']) {
    it(`${format}: a 503 with Retry-After, not a hang, and 200 again after`, async () => {
      const locker = await db.pool.connect();
      try {
        await locker.query('begin');
        await locker.query('lock table addresses in access exclusive mode');
        const answer = fetch(`${api.base}/api/dedup?hours=168&format=${format}`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(8000) });
        await listStatementWaits();
        store.cut();
        const res = await answer;
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(((await res.json()) as { type: string }).type).toBe('urn:blockfeed:problem:store-unavailable');
      } finally {
        await locker.query('rollback');
        locker.release();
      }
      const again = await fetch(`${api.base}/api/dedup?hours=168&format=${format}`, { headers: { 'x-api-key': key } });
      expect(again.status).toBe(200);
      expect(await again.text()).toContain('203.0.113.20');
    });
  }
});
