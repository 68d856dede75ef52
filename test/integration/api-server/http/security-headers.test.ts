// Security headers on every answer of the server — every route, every status, the cached-answer fast path,
// 304s, problem answers, requests Node cannot parse — and CORS exactly on the public endpoints.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../api-server/config.ts';
import { createLogger } from '../../../../common/logging.ts';
import { createRegistry } from '../../../../common/metrics.ts';
import { openDatabase } from '../../../../api-server/store/database.ts';
import { buildServer } from '../../../../api-server/app.ts';
import { CROSS_ORIGIN_READ_HEADERS, SECURITY_HEADERS } from '../../../../api-server/http/security-headers.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

let db: TestDatabase;
let api: TestApi;
let key: string;
let member: string;

beforeAll(async () => {
  ({ db, api, key } = await startFixtureApi('security headers'));
  member = (await createKey(db.pool, 'member', 'member')).key;
});
afterAll(() => stopFixtureApi(db, api));

const PUBLIC = ['/api/honeypot/dedup', '/api/honeypot/stats', '/api/honeypot/recent', '/api/stats', '/api/recent'];
const KEYED = ['/api/dedup', '/api/export', '/api/scan-export'];
/** Never cached, so without validators: the public one (variant A) and the keyed one. */
const CHECKS = ['/api/honeypot/check', '/api/check'];

/** The security headers, and the CORS headers exactly when `crossOrigin`. */
function expectHeaders(res: Response, crossOrigin: boolean, what: string): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(name), `${what}: ${name}`).toBe(value);
  for (const [name, value] of Object.entries(CROSS_ORIGIN_READ_HEADERS)) expect(res.headers.get(name), `${what}: ${name}`).toBe(crossOrigin ? value : null);
  expect(res.headers.get('access-control-allow-credentials'), what).toBeNull();
}

async function check(path: string, init: RequestInit, status: number, crossOrigin: boolean, base = api.base): Promise<Response> {
  const res = await fetch(`${base}${path}`, init);
  await res.arrayBuffer();
  expect(res.status, `${init.method ?? 'GET'} ${path}`).toBe(status);
  expectHeaders(res, crossOrigin, `${init.method ?? 'GET'} ${path} ${status}`);
  return res;
}

const withKey = (path: string, extra: Record<string, string> = {}): RequestInit => ({
  headers: { ...(path.startsWith('/api/honeypot/') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key }), ...extra },
});

describe('every API route', () => {
  it('the OpenAPI document lists exactly the routes checked here', async () => {
    const doc = (await (await fetch(`${api.base}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).sort()).toEqual([...PUBLIC, ...KEYED, ...CHECKS].sort());
  });

  for (const path of CHECKS) {
    const crossOrigin = path.startsWith('/api/honeypot/');
    it(`${path}: 200 (twice, never from the cache), HEAD, 400${crossOrigin ? '' : ', 401 without a key, 403 for a member key'}`, async () => {
      for (let i = 0; i < 2; i++) expect((await check(`${path}?ip=203.0.113.20`, withKey(path), 200, crossOrigin)).headers.get('cache-control')).toBe('no-store');
      await check(`${path}?ip=203.0.113.20`, { ...withKey(path), method: 'HEAD' }, 200, crossOrigin);
      await check(`${path}?ip=203.0.113.0/24`, withKey(path), 400, crossOrigin);
      if (!crossOrigin) {
        await check(`${path}?ip=203.0.113.20`, {}, 401, false);
        await check(`${path}?ip=203.0.113.20`, { headers: { 'x-api-key': member } }, 403, false);
      }
    });
  }

  for (const path of [...PUBLIC, ...KEYED]) {
    const crossOrigin = PUBLIC.includes(path);
    it(`${path}: 200 from the store, 200 from the cache (fast path), 304, HEAD, 400`, async () => {
      const url = `${path}?format=json`.replace('stats?format=json', 'stats?hours=2');
      const first = await check(url, withKey(path), 200, crossOrigin);
      const cached = await check(url, withKey(path), 200, crossOrigin);
      const etag = cached.headers.get('etag') ?? first.headers.get('etag');
      expect(etag).toBeTruthy();
      await check(url, withKey(path, { 'if-none-match': etag ?? '' }), 304, crossOrigin);
      await check(url, { ...withKey(path), method: 'HEAD' }, 200, crossOrigin);
      await check(`${path}?hours=0&limit=0`, withKey(path), 400, crossOrigin);
    });
  }

  for (const path of KEYED) {
    it(`${path}: 401 without a key, 403 for a member key`, async () => {
      await check(path, {}, 401, false);
      await check(path, { headers: { 'x-api-key': member } }, 403, false);
    });
  }

  it('a public endpoint over the anonymous limit: 429, still readable cross-origin', async () => {
    const limited = await startApi(db.url, { anonymousPerMinute: 1 });
    try {
      await check('/api/stats?hours=3', {}, 200, true, limited.base);
      const res = await check('/api/stats?hours=3', {}, 429, true, limited.base);
      expect(res.headers.get('retry-after')).toBeTruthy();
      // The cached answer's fast path meters as well.
      await check('/api/honeypot/stats', {}, 429, true, limited.base);
    } finally {
      await limited.close();
    }
  });
});

describe('everything else', () => {
  it('health, readiness, metrics, OpenAPI (public), unknown paths, other methods', async () => {
    await check('/healthz', {}, 200, false);
    await check('/readyz', {}, 200, false);
    await check('/metrics', {}, 200, false);
    await check('/openapi.json', {}, 200, true);
    await check('/api/nope', {}, 404, false);
    // CORS goes by path: a public path's other answers are readable too (and hold nothing).
    await check('/api/stats', { method: 'DELETE' }, 404, true);
    await check('/api/stats', { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-headers': 'x-api-key' } }, 404, true);
    await check('/api/%zz', {}, 400, false);
  });

  it('the ingest route', async () => {
    const ingesting = await startApi(db.url, { ingestToken: 'a-long-enough-ingest-token' });
    try {
      await check('/internal/v1/events?format=native', { method: 'POST', body: '{}' }, 401, false, ingesting.base);
      const line = JSON.stringify({ ts: new Date().toISOString(), src_ip: '198.51.100.77', dst_port: 22, service: 'ssh', source: 'honeypot', sensor: 'hp-9' });
      await check('/internal/v1/events?format=native', { method: 'POST', body: line, headers: { authorization: 'Bearer a-long-enough-ingest-token', 'content-type': 'application/x-ndjson' } }, 200, false, ingesting.base);
    } finally {
      await ingesting.close();
    }
  });

  it('503 when the store is unreachable', async () => {
    const down = await startApi('postgres://nobody:x@127.0.0.1:1/none');
    try {
      await check('/api/stats', {}, 503, true, down.base);
      await check('/api/dedup', { headers: { 'x-api-key': key } }, 503, false, down.base);
      // A server that has started stays ready: the store's outage is answered by each request.
      await check('/readyz', {}, 200, false, down.base);
    } finally {
      await down.close();
    }
  });

  it('a request Node cannot parse: problem+json with the security headers', async () => {
    const { port } = new URL(api.base);
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET /api/stats HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toMatch(/^content-type: application\/problem\+json; charset=utf-8$/m);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(head).toContain(`\r\n${name}: ${value}`);
    expect(JSON.parse(body)).toMatchObject({ type: 'urn:blockfeed:problem:bad-request', status: 400 });
  });
});

describe('a page of the website', () => {
  it('sets its own Content-Security-Policy; the API keeps its own', async () => {
    const config = loadConfig({ env: {}, overrides: { databaseUrl: db.url } });
    const log = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
    const store = await openDatabase({ config, log });
    const app = await buildServer({ db: store, log, config, registry: createRegistry() });
    const pageCsp = "default-src 'self'; script-src 'self'; frame-ancestors 'none'";
    app.get('/member/', { config: { contentSecurityPolicy: pageCsp } }, async (_req, reply) => reply.type('text/html').send('<!doctype html><title>member centre</title>'));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const address = app.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const page = await fetch(`${base}/member/`);
      expect(page.headers.get('content-security-policy')).toBe(pageCsp);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      const stats = await fetch(`${base}/api/stats`);
      expectHeaders(stats, true, '/api/stats beside the page');
    } finally {
      await app.close();
      await store.close();
    }
  });
});
