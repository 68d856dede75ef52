// Long polls on the lists (wait=, docs/http-api.md "Live lists"), on real servers and a real PostgreSQL: a
// held request is answered when a write commits — through the push route, on this server or another process on
// the same database — and not before; at the wait's end it is a 304; the minute turning wakes nobody; a bad
// wait is a 400 naming it; the bounds on waits per key and per server hold; a HEAD reads no list; polls woken
// by one change read the list once; and a request that asks for fresh data is not answered from a cached copy
// of older data.
import { get } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEtagInstant } from '../../../../api-server/http/cache.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { freePort, startServe, type ServeProcess } from '../../../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const TOKEN = 'long-poll-test-ingest-token';
const LIST = '/api/dedup?hours=1';

/** The instant the API's clock reads; tests move it. Starts 5 s into the current minute. */
let now = Math.floor(Date.now() / 60_000) * 60_000 + 5_000;
const clock = () => new Date(now);

let db: TestDatabase;
let key: string;
let api: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  await insertAddresses(db.pool, [{ ip: '198.51.100.10', honeypot: 0.1, country: 'US' }]);
  key = (await createKey(db.pool, 'enterprise', 'long polls')).key;
  api = await startApi(db.url, { ingestToken: TOKEN }, { clock });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface Answer {
  status: number;
  etag: string;
  body: string;
  /** When the answer's head arrived (Date.now()). */
  at: number;
  headers: Headers;
}

async function request(base: string, path: string, headers: Record<string, string> = {}, method = 'GET', apiKey = key, signal?: AbortSignal): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method, headers: { 'x-api-key': apiKey, ...headers }, signal: signal ?? AbortSignal.timeout(50_000) });
  const at = Date.now();
  return { status: res.status, etag: res.headers.get('etag') ?? '', body: await res.text(), at, headers: res.headers };
}

/** The api-server's gauge of held long polls. */
async function heldPolls(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^blockfeed_long_polls(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** List answers the api-server has made from the store. */
async function listReads(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return [...text.matchAll(/^blockfeed_list_reads_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** Resolves once the server holds `n` long polls (the poll has reached its wait, so what follows must wake it). */
async function untilHeld(base: string, n: number): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    if ((await heldPolls(base)) === n) return;
  }
  throw new Error(`the server did not come to hold ${n} long polls`);
}

/** The status of a GET through node:http, which adds no header of its own (fetch() adds Cache-Control). */
function plainStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'x-api-key': key, ...headers } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).once('error', reject);
  });
}

async function push(base: string, ip: string): Promise<number> {
  const line = JSON.stringify({ ts: new Date(Date.now() - 30_000).toISOString(), src_ip: ip, dst_port: 22, service: 'ssh', source: 'honeypot', sensor: 'hp-live', username: 'root' });
  const res = await fetch(`${base}/internal/v1/events?format=native`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-ndjson' }, body: line });
  expect(res.status, await res.text()).toBe(200);
  return Date.now();
}

describe('long polls (wait=)', () => {
  it('answer with the new list as soon as a push through the push route is acknowledged', async () => {
    const first = await request(api.base, LIST);
    expect(first.status).toBe(200);
    const poll = request(api.base, `${LIST}&wait=45`, { 'if-none-match': first.etag });
    await untilHeld(api.base, 1);
    const acknowledged = await push(api.base, '198.51.100.21');
    const answer = await poll;
    // Woken by the write, not by the end of the wait (which is a 304): the new list, with the pushed address.
    expect(answer.status).toBe(200);
    expect(answer.etag).not.toBe(first.etag);
    expect(answer.body).toContain('198.51.100.21\n');
    console.log(`long poll answered ${answer.at - acknowledged} ms after the push was acknowledged`);
    expect(await heldPolls(api.base)).toBe(0);
  });

  it('woken together by one change, read the new list once and all get it', async () => {
    // LIST itself: the answer they share becomes its cached copy, current for the tests that follow.
    const list = LIST;
    const clients = await Promise.all(Array.from({ length: 6 }, async (_, i) => (await createKey(db.pool, 'enterprise', `cluster ${i}`)).key));
    const first = await request(api.base, list);
    const polls = clients.map((k) => request(api.base, `${list}&wait=45`, { 'if-none-match': first.etag }, 'GET', k));
    await untilHeld(api.base, clients.length);
    const reads = await listReads(api.base);
    await push(api.base, '198.51.100.26');
    const answers = await Promise.all(polls);
    expect(answers.map((a) => a.status)).toEqual(Array(clients.length).fill(200));
    expect(new Set(answers.map((a) => a.etag)).size).toBe(1);
    expect(answers[0]?.body).toContain('198.51.100.26\n');
    expect(await listReads(api.base)).toBe(reads + 1);
  });

  it('answer 304 with the client ETag when the wait ends and nothing changed', async () => {
    const first = await request(api.base, LIST);
    const answer = await request(api.base, `${LIST}&wait=1`, { 'if-none-match': first.etag });
    expect(answer.status).toBe(304);
    expect(answer.etag).toBe(first.etag);
  });

  it('are not woken by the minute turning: an ETag of an earlier minute waits while the data is the same', async () => {
    const first = await request(api.base, LIST);
    now += 61_000;
    // The list of this minute would have another ETag (its window moved)...
    expect(listEtagInstant(first.etag)!.getTime()).toBeLessThan(Math.floor(now / 60_000) * 60_000);
    // ...but a long poll compares only the data: held to the end, then 304 with the ETag it was sent.
    const poll = request(api.base, `${LIST}&wait=2`, { 'if-none-match': first.etag });
    await untilHeld(api.base, 1);
    now += 60_000;
    const answer = await poll;
    expect(answer.status).toBe(304);
    expect(answer.etag).toBe(first.etag);
  });

  it('answer at once when the client is behind the data, holds another query or sends no ETag', async () => {
    const first = await request(api.base, LIST);
    await insertAddresses(db.pool, [{ ip: '198.51.100.22', honeypot: 0.1, country: 'US' }], clock());
    const behind = await request(api.base, `${LIST}&wait=45`, { 'if-none-match': first.etag });
    expect(behind.status).toBe(200);
    expect(behind.body).toContain('198.51.100.22\n');
    const otherQuery = await request(api.base, '/api/dedup?hours=2&wait=45', { 'if-none-match': behind.etag });
    expect(otherQuery.status).toBe(200);
    expect((await request(api.base, `${LIST}&wait=45`)).status).toBe(200);
  });

  it('are not woken by a write that rolls back', async () => {
    const first = await request(api.base, LIST);
    const poll = request(api.base, `${LIST}&wait=2`, { 'if-none-match': first.etag });
    await untilHeld(api.base, 1);
    const writer = new pg.Client({ connectionString: db.url });
    await writer.connect();
    try {
      await writer.query('begin');
      // A statement on addresses bumps the version (a statement trigger fires for no rows too) and notifies.
      await writer.query('update addresses set last_seen = last_seen where false');
      await writer.query('rollback');
    } finally {
      await writer.end();
    }
    expect((await poll).status).toBe(304);
  });

  it('wake a HEAD with the new validators and no body; a HEAD reads no list', async () => {
    const first = await request(api.base, LIST);
    const poll = request(api.base, `${LIST}&wait=45`, { 'if-none-match': first.etag }, 'HEAD');
    await untilHeld(api.base, 1);
    await push(api.base, '198.51.100.23');
    const head = await poll;
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    // No Content-Length: it would have to be the body's, which was not read.
    expect(head.headers.get('content-length')).toBeNull();
    expect(head.headers.get('x-blocklist-data-changed')).toMatch(/^\d{4}-\d\d-\d\dT/);
    const get = await request(api.base, LIST, { 'cache-control': 'no-cache' });
    expect(get.etag).toBe(head.etag);
    // With addresses locked, reading a list would wait; a HEAD of a list not cached needs only the data version.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table addresses in access exclusive mode');
      const uncached = await request(api.base, '/api/dedup?hours=3', {}, 'HEAD');
      expect(uncached.status).toBe(200);
      expect(uncached.etag).not.toBe('');
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
  });

  it('serve a cached copy to a plain request and the current data to one that asks for it (no-cache)', async () => {
    const path = '/api/dedup?hours=4';
    const cached = await request(api.base, path);
    await insertAddresses(db.pool, [{ ip: '198.51.100.24', honeypot: 0.1, country: 'US' }], clock());
    // Within its lifetime, the cached copy answers: a 304 to the client that holds it. (Not through fetch: a
    // conditional fetch() adds Cache-Control: no-cache, as the Fetch standard has it. Gzip, as fetch took it.)
    expect(await plainStatus(`${api.base}${path}`, { 'if-none-match': cached.etag, 'accept-encoding': 'gzip' })).toBe(304);
    const fresh = await request(api.base, path, { 'if-none-match': cached.etag, 'cache-control': 'no-cache' });
    expect(fresh.status).toBe(200);
    expect(fresh.body).toContain('198.51.100.24\n');
    // The fresh copy is now the cached one.
    expect((await request(api.base, path)).etag).toBe(fresh.etag);
  });

  it('refuse a bad wait with a 400 naming it and what it allows; variant A takes none', async () => {
    for (const bad of ['0', '61', 'soon']) {
      const res = await fetch(`${api.base}${LIST}&wait=${bad}`, { headers: { 'x-api-key': key } });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const problem = (await res.json()) as { errors: { name: string; allowed: string }[] };
      expect(problem.errors).toEqual([expect.objectContaining({ name: 'wait', allowed: expect.stringMatching(/1\D+60/) as string })]);
    }
    const variantA = await fetch(`${api.base}/api/honeypot/dedup?wait=10`, { headers: { authorization: `Bearer ${key}` } });
    expect(variantA.status).toBe(400);
    expect(((await variantA.json()) as { errors: { name: string; reason: string }[] }).errors[0]).toMatchObject({ name: 'wait', reason: 'unknown parameter' });
  });

  it('left nothing in the server log above info (each held request answered once)', async () => {
    // A last request whose access line, once written, follows every line the tests above caused.
    await request(api.base, '/api/dedup?hours=7');
    for (let i = 0; i < 100 && !api.log().includes('hours=7'); i++) await new Promise((r) => setTimeout(r, 20));
    const complaints = api.log().split('\n').filter((line) => /"level":"(warn|error|fatal)"/.test(line));
    expect(complaints).toEqual([]);
  });
});

describe('the bounds on long polls', () => {
  let bounded: TestApi;
  let closed = false;
  let other: string;
  beforeAll(async () => {
    other = (await createKey(db.pool, 'enterprise', 'long polls, second key')).key;
    bounded = await startApi(db.url, { longPollsPerKey: 2, longPollsMax: 3 }, { clock });
  });
  afterAll(async () => {
    if (!closed) await bounded?.close();
  });

  it('hold per key and per server, and a client that leaves frees its place', async () => {
    const etagOf = async (apiKey: string) => (await request(bounded.base, LIST, {}, 'GET', apiKey)).etag;
    const mine = await etagOf(key);
    const theirs = await etagOf(other);
    const leaving = new AbortController();
    const held = [
      request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': mine }, 'GET', key, leaving.signal).catch(() => undefined),
      request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': mine }),
    ];
    await untilHeld(bounded.base, 2);
    const perKey = await request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': mine });
    expect(perKey.status).toBe(429);
    expect(JSON.parse(perKey.body)).toMatchObject({ type: 'urn:blockfeed:problem:too-many-waits' });
    held.push(request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': theirs }, 'GET', other));
    await untilHeld(bounded.base, 3);
    const perServer = await request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': theirs }, 'GET', other);
    expect(perServer.status).toBe(503);
    leaving.abort();
    await untilHeld(bounded.base, 2);
    held.push(request(bounded.base, `${LIST}&wait=20`, { 'if-none-match': mine }));
    await untilHeld(bounded.base, 3);
    // Closing the server answers every held poll at once.
    closed = true;
    await bounded.close();
    const answers = await Promise.all(held);
    expect(answers.slice(1).map((a) => a?.status)).toEqual([304, 304, 304]);
  });
});

describe('two api-server processes on one database', () => {
  const servers: ServeProcess[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
  });

  it('a push on one wakes a long poll on the other', async () => {
    for (let i = 0; i < 2; i++) {
      servers.push(await startServe({ DATABASE_URL: db.url, BLOCKFEED_INGEST_TOKEN: TOKEN, PORT: String(await freePort()), LOG_LEVEL: 'warn' }));
    }
    const [one, two] = servers.map((s) => `http://127.0.0.1:${s.port}`) as [string, string];
    const first = await request(two, LIST);
    const poll = request(two, `${LIST}&wait=45`, { 'if-none-match': first.etag });
    await untilHeld(two, 1);
    const acknowledged = await push(one, '198.51.100.31');
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('198.51.100.31\n');
    console.log(`long poll on the second process answered ${answer.at - acknowledged} ms after the push to the first was acknowledged`);
  });
});
