// Each way of calling (no credential, X-API-Key, key=, bearer, invalid, revoked, member), the anonymous
// limit across two replicas on one database, tier quotas, trusted proxies, and that no secret reaches a log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../../../api-server/keys/store.ts';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { ADDRESSES } from '../../../support/api-fixture-set.ts';

const TIERS = 'member=none,basic=3,pro=10000,enterprise=unlimited';

let db: TestDatabase;
/** Every replica's clock stands still 5 s into a minute: a sequence of requests never straddles two windows. */
const frozenAt = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 5_000);
const clock = () => frozenAt;
/** Two replicas behind a trusted proxy (127.0.0.1), and one that trusts no proxy. */
let replica1: TestApi;
let replica2: TestApi;
let untrusting: TestApi;
const keys: Record<'basic' | 'pro' | 'enterprise' | 'member' | 'revoked', string> = { basic: '', pro: '', enterprise: '', member: '', revoked: '' };

beforeAll(async () => {
  db = await freshDatabase();
  await insertAddresses(db.pool, ADDRESSES);
  for (const tier of ['basic', 'pro', 'enterprise', 'member'] as const) keys[tier] = (await createKey(db.pool, tier, `${tier} user`)).key;
  const revoked = await createKey(db.pool, 'pro', 'former customer');
  await revokeKey(db.pool, String(revoked.record.id));
  keys.revoked = revoked.key;
  // Keys stay remembered for a minute, so only the revocation NOTIFY can make a replica forget one in time.
  replica1 = await startApi(db.url, { tierQuotas: TIERS, trustedProxies: ['127.0.0.1'], keyCacheSeconds: 60 }, { clock });
  replica2 = await startApi(db.url, { tierQuotas: TIERS, trustedProxies: ['127.0.0.0/8'], keyCacheSeconds: 60 }, { clock });
  untrusting = await startApi(db.url, { tierQuotas: TIERS }, { clock });
});
afterAll(async () => {
  for (const api of [replica1, replica2, untrusting]) await api?.close();
  await db?.drop();
});

let clientCounter = 0;
/** A fresh client address (sent as X-Forwarded-For through the trusted proxy), so tests do not share limits. */
function newClient(): string {
  clientCounter++;
  return `198.18.${Math.floor(clientCounter / 250)}.${clientCounter % 250}`;
}

async function call(api: TestApi, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(`${api.base}${path}`, { headers });
  await res.clone().arrayBuffer();
  return res;
}

interface Problem {
  type: string;
  status: number;
  detail: string;
}


describe('no credential', () => {
  it('the token API serves anonymous callers, announcing the limit', async () => {
    const res = await call(replica1, '/api/honeypot/dedup', { 'x-forwarded-for': newClient() });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=5;w=60');
    expect(res.headers.get('ratelimit')).toBe('"anonymous";r=4;t=55');
  });

  it("the key API's public stats and recent need no key", async () => {
    const client = newClient();
    expect((await call(replica1, '/api/stats', { 'x-forwarded-for': client })).status).toBe(200);
    expect((await call(replica1, '/api/recent', { 'x-forwarded-for': client })).status).toBe(200);
  });

  it("the key API's lists need a key: 401", async () => {
    for (const path of ['/api/dedup', '/api/export', '/api/scan-export']) {
      const res = await call(replica1, path);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as Problem).detail).toMatch(/X-API-Key/);
    }
  });

  it('the 6th anonymous request in a minute is 429, also alternating between two replicas', async () => {
    const client = newClient();
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await call(i % 2 === 0 ? replica1 : replica2, i % 3 === 0 ? '/api/honeypot/stats' : '/api/stats', { 'x-forwarded-for': client });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    // The window ends 55 s after the frozen clock.
    expect(last?.headers.get('retry-after')).toBe('55');
    expect(last?.headers.get('ratelimit')).toBe('"anonymous";r=0;t=55');
    expect(((await last?.json()) as Problem).type).toBe('urn:blockfeed:problem:rate-limited');
    // Another address is not affected.
    expect((await call(replica2, '/api/stats', { 'x-forwarded-for': newClient() })).status).toBe(200);
    expect(await (await fetch(`${replica2.base}/metrics`)).text()).toMatch(/^blockfeed_rate_limit_rejections_total\{policy="anonymous"\} [1-9]/m);
  });

  it('X-Forwarded-For counts only from a trusted proxy', async () => {
    const statuses: number[] = [];
    // Spoofed addresses change nothing on a server that trusts no proxy: all six are 127.0.0.1.
    for (let i = 0; i < 6; i++) statuses.push((await call(untrusting, '/api/recent', { 'x-forwarded-for': newClient() })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe('credentials', () => {
  it('X-API-Key and key= on the key API, metered by the tier quota', async () => {
    const header = await call(replica1, '/api/export', { 'x-api-key': keys.pro });
    expect(header.status).toBe(200);
    expect(header.headers.get('ratelimit-policy')).toBe('"pro";q=10000;w=86400');
    const query = await call(replica1, `/api/export?key=${keys.pro}`);
    expect(query.status).toBe(200);
    expect(query.headers.get('ratelimit')).toMatch(/^"pro";r=9998;t=\d+$/);
  });

  it('a bearer token on the token API is not limited', async () => {
    for (let i = 0; i < 8; i++) {
      const res = await call(i % 2 ? replica1 : replica2, '/api/honeypot/dedup', { authorization: `Bearer ${keys.basic}`, 'x-forwarded-for': '198.19.0.1' });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit')).toBeNull();
    }
  });

  it('an enterprise key is not metered', async () => {
    const res = await call(replica1, '/api/dedup', { 'x-api-key': keys.enterprise });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBeNull();
  });

  it.each([
    ['a bogus bearer token', '/api/honeypot/dedup', { authorization: 'Bearer nonsense' }],
    ['a well-formed unknown token', '/api/honeypot/stats', { authorization: 'Bearer bf_00000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['a non-bearer Authorization', '/api/honeypot/dedup', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a bogus X-API-Key', '/api/export', { 'x-api-key': 'nonsense' }],
    ['a bogus key= on a public endpoint', '/api/stats?key=nonsense', {}],
  ])('%s is 401', async (_what, path, headers) => {
    const res = await call(replica1, path, headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBeTruthy();
    expect(((await res.json()) as Problem).type).toBe('urn:blockfeed:problem:unauthorized');
  });

  it('a revoked key is 401 on both APIs', async () => {
    expect((await call(replica1, '/api/export', { 'x-api-key': keys.revoked })).status).toBe(401);
    expect((await call(replica2, '/api/honeypot/dedup', { authorization: `Bearer ${keys.revoked}` })).status).toBe(401);
  });

  it('revoking a key in use takes effect on every replica at once, not after the key cache expires', async () => {
    const { key, record } = await createKey(db.pool, 'enterprise', 'soon revoked');
    for (const api of [replica1, replica2]) expect((await call(api, '/api/dedup', { 'x-api-key': key })).status).toBe(200);
    await revokeKey(db.pool, record.prefix);
    // The replicas remember verified keys for 60 s; the NOTIFY must make them forget at once
    // (8 s of slack for a loaded CI machine).
    const deadline = Date.now() + 8000;
    let statuses: number[];
    do {
      statuses = [];
      for (const api of [replica1, replica2]) statuses.push((await call(api, '/api/dedup', { 'x-api-key': key })).status);
      if (statuses.every((s) => s === 401)) break;
      await new Promise((r) => setTimeout(r, 50));
    } while (Date.now() < deadline);
    expect(statuses).toEqual([401, 401]);
  });

  it('a member key has no API access: 403 pointing to the website download', async () => {
    for (const [path, headers] of [
      ['/api/export', { 'x-api-key': keys.member }],
      [`/api/dedup?key=${keys.member}`, {}],
      ['/api/honeypot/dedup', { authorization: `Bearer ${keys.member}` }],
    ] as const) {
      const res = await call(replica1, path, headers);
      expect(res.status).toBe(403);
      const problem = (await res.json()) as Problem;
      expect(problem.type).toBe('urn:blockfeed:problem:no-api-access');
      expect(problem.detail).toMatch(/download the basic blocklist from .* website/);
    }
    // The public endpoints stay public for members.
    expect((await call(replica1, '/api/stats', { 'x-api-key': keys.member, 'x-forwarded-for': newClient() })).status).toBe(200);
  });

  it('a quota is shared by the replicas and answered 429 with Retry-After when spent', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await call(i % 2 ? replica2 : replica1, `/api/scan-export?hours=${i + 1}`, { 'x-api-key': keys.basic });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last?.headers.get('ratelimit-policy')).toBe('"basic";q=3;w=86400');
    // The quota renews at the next UTC midnight.
    const midnight = Math.ceil(frozenAt.getTime() / 86_400_000) * 86_400_000;
    expect(Number(last?.headers.get('retry-after'))).toBe((midnight - frozenAt.getTime()) / 1000);
    const problem = (await last?.json()) as Problem;
    expect(problem.type).toBe('urn:blockfeed:problem:quota-exhausted');
    expect(problem.detail).toMatch(/3 calls per UTC day/);
  });
});

describe('logs', () => {
  it('never contain a secret, whatever form it was sent in', async () => {
    await call(replica1, `/api/export?key=${keys.enterprise}&hours=2`);
    await call(replica1, '/api/stats?key=bf_deadbeef_notarealkeybutsecretanyway000000');
    const logs = replica1.log() + replica2.log() + untrusting.log();
    expect(logs).toMatch(/"url":"\/api\/export\?key=\[REDACTED\]&hours=2"/);
    for (const secret of Object.values(keys)) {
      expect(logs).not.toContain(secret);
      expect(logs).not.toContain(secret.slice('bf_xxxxxxxx_'.length));
    }
    expect(logs).not.toContain('notarealkeybutsecretanyway');
    expect(logs).not.toContain('dXNlcjpwYXNz');
  });
});
