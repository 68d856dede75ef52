// The check (GET /api/check, /api/honeypot/check): its parameter (one IPv4 or IPv6 address, anything else a
// 400 naming it), what it answers for a listed, an unseen, a non-global and an excluded address in json and
// txt, its limits (metered like the keyed lists, anonymous 5 a minute on the token API), and that an exclusion
// reaches the check and the cached lists at once. Real PostgreSQL, real sockets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addExclusion, removeExclusions } from '../../../../api-server/exclusions/store.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { CheckParams } from '../../../../api-server/query/endpoint-params.ts';
import { describeAllowed, type JsonSchemaLike } from '../../../../api-server/schema-text.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { insertAddresses, type FixtureAddress } from '../../../support/attack-fixtures.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const ADDRESSES: FixtureAddress[] = [
  // A critical attacker seen by two sensors, an hour ago.
  {
    ip: '203.0.113.20', honeypot: 1, interaction: 1, critical: 1, high: 1, services: { ssh: 1 }, confirmed: 1,
    country: 'CN', province: '广东省', isp: '电信', net: 'broadband', asn: 4134, ports: [22], attacks: 40,
  },
  // A telescope-only scanner on a web port.
  { ip: '198.51.100.10', telescope: 2, services: { web: 2 }, country: 'US', net: 'idc', asn: 64500, ports: [80] },
  // A research mapping platform: in no default list, in type=research_scanner.
  { ip: '192.0.2.40', telescope: 1, scannerKind: 'research_scanner', country: 'US', net: 'idc', ports: [443] },
  // Active 200 hours ago only: in the 30-day lists, not in the day's or the week's.
  { ip: '2001:db8::1', honeypot: 200, interaction: 200, services: { vnc: 200 }, net: 'mobile', country: 'DE', ports: [5900] },
];

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  db = await freshDatabase();
  await insertAddresses(db.pool, ADDRESSES);
  key = (await createKey(db.pool, 'enterprise', 'check tests')).key;
  api = await startApi(db.url);
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface Problem {
  status: number;
  errors?: { name: string; reason: string; allowed: string }[];
}

interface CheckAnswer {
  ip: string;
  checked_at: string;
  listed: boolean;
  lists: { list: string; hours: number; type?: string; listed: boolean }[];
  never_block: boolean;
  excluded: { network: string; since: string; until: string | null; source: string } | null;
  seen: boolean;
  [fact: string]: unknown;
}

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${api.base}${path}`, { headers: { 'x-api-key': key, ...headers } });

async function check(ip: string): Promise<CheckAnswer> {
  const res = await get(`/api/check?ip=${encodeURIComponent(ip)}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as CheckAnswer;
}

const listedIn = (answer: CheckAnswer) => answer.lists.filter((l) => l.listed).map((l) => `${l.list}:${l.hours}${l.type ? `:${l.type}` : ''}`);

describe('the ip parameter', () => {
  const allowed = describeAllowed(CheckParams.properties.ip as unknown as JsonSchemaLike);

  it.each([
    ['missing', '', 'missing'],
    ['a network', 'ip=203.0.113.0/24', '"203.0.113.0/24" is a network; give one address'],
    ['a /32', 'ip=203.0.113.20/32', '"203.0.113.20/32" is a network; give one address'],
    ['a name', 'ip=example.org', '"example.org" is not an IPv4 or IPv6 address or network'],
    ['octal', 'ip=010.0.0.1', '"010.0.0.1" is not an IPv4 or IPv6 address or network'],
    ['short IPv4', 'ip=10.1', '"10.1" is not an IPv4 or IPv6 address or network'],
    ['an IPv6 zone', 'ip=fe80::1%25eth0', '"fe80::1%eth0" is not an IPv4 or IPv6 address or network'],
    ['empty', 'ip=', '"" is not an IPv4 or IPv6 address or network'],
  ])('%s is a 400 problem naming ip', async (_what, query, reason) => {
    for (const path of ['/api/check', '/api/honeypot/check']) {
      const res = await get(`${path}?${query}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await res.json()) as Problem;
      expect(problem.errors).toEqual([{ name: 'ip', reason, allowed }]);
    }
  });

  it('given twice, with an unknown parameter or an unknown format: a 400 naming each', async () => {
    const problem = (await (await get('/api/check?ip=203.0.113.20&ip=203.0.113.21&hours=24&format=csv')).json()) as Problem;
    expect(problem.errors?.map((e) => [e.name, e.reason])).toEqual([
      ['ip', 'given more than once'],
      ['hours', 'unknown parameter'],
      ['format', 'unknown value "csv"'],
    ]);
  });

  it('IPv4-mapped IPv6 is the IPv4 address; IPv6 is written as PostgreSQL writes it', async () => {
    expect((await check('::ffff:203.0.113.20')).ip).toBe('203.0.113.20');
    expect((await check('2001:DB8:0:0:0:0:0:1')).ip).toBe('2001:db8::1');
  });

  it('/openapi.json documents both checks with ip required', async () => {
    const doc = (await (await fetch(`${api.base}/openapi.json`)).json()) as { paths: Record<string, { get: { parameters: { name: string; required?: boolean }[] } }> };
    for (const path of ['/api/check', '/api/honeypot/check']) {
      expect(doc.paths[path]?.get.parameters.map((p) => [p.name, p.required === true])).toEqual([['ip', true], ['format', false]]);
    }
  });
});

describe('the answer', () => {
  it('a listed attacker: each list and window, and why', async () => {
    const answer = await check('203.0.113.20');
    expect(answer).toMatchObject({ ip: '203.0.113.20', listed: true, never_block: false, excluded: null, seen: true });
    expect(answer.checked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);
    expect(listedIn(answer)).toEqual([
      'dedup:24', 'dedup:168',
      'export:24:all', 'export:168:all', 'export:720:all',
      'export:24:attacker', 'export:168:attacker', 'export:720:attacker',
    ]);
    expect(answer.lists).toHaveLength(2 + 5 * 3 + 3);
    expect(answer).toMatchObject({
      sources: [{ source: 'honeypot' }],
      services: [{ service: 'ssh' }],
      windows: [
        { hours: 24, seen: true, type: 'attacker', level: 'critical', precision: 'high' },
        { hours: 168, seen: true, type: 'attacker', level: 'critical', precision: 'high' },
        { hours: 720, seen: true, type: 'attacker', level: 'critical', precision: 'high' },
      ],
      country: 'CN', province: '广东省', isp: '电信', asn: 4134, net: 'broadband', scanner: null, research_scanner: false,
    });
    expect((answer.sightings as unknown[]).length).toBe(2);
  });

  it('a research platform is in its own type only; an old attacker in the 30-day lists only', async () => {
    const research = await check('192.0.2.40');
    expect(listedIn(research)).toEqual(['export:24:research_scanner', 'export:168:research_scanner', 'export:720:research_scanner']);
    expect(research).toMatchObject({ research_scanner: true, scanner: { kind: 'research_scanner' } });
    expect(listedIn(await check('2001:db8::1'))).toEqual(['export:720:all', 'export:720:attacker']);
    expect(listedIn(await check('198.51.100.10'))).toEqual([
      'dedup:24', 'dedup:168', 'export:24:all', 'export:168:all', 'export:720:all',
      'export:24:scanner', 'export:168:scanner', 'export:720:scanner', 'scan-export:24', 'scan-export:168', 'scan-export:720',
    ]);
  });

  it('an address never seen, and a non-global one', async () => {
    expect(await check('203.0.113.99')).toMatchObject({ listed: false, seen: false, never_block: false, excluded: null });
    const local = await check('10.1.2.3');
    expect(local).toMatchObject({ listed: false, seen: false, never_block: true });
    expect(local).not.toHaveProperty('first_seen');
  });

  it('txt: one "name: value" a line', async () => {
    const res = await get('/api/check?ip=203.0.113.20&format=txt');
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const text = await res.text();
    expect(text).toMatch(/^ip: 203\.0\.113\.20\nchecked_at: \S+Z\nlisted: yes\nlist dedup hours=24: yes\n/);
    expect(text).toContain('\nlist export hours=24 type=scanner: no\n');
    expect(text).toContain('\nexcluded: no\n');
    expect(text).toContain('\nwindow hours=24: type=attacker level=critical precision=high\n');
    expect(text).toContain('\nprovince: 广东省\n');
    expect(text.endsWith('\n')).toBe(true);
  });
});

describe('exclusions', () => {
  it('reach the check and the cached lists at once, and end when removed', async () => {
    const lines = async (path: string) => (await (await get(path)).text()).split('\n').filter(Boolean);
    // Both lists answered once, so kept in the response cache.
    expect(await lines('/api/export?hours=24')).toContain('203.0.113.20');
    expect(await lines('/api/dedup?hours=24')).toContain('203.0.113.20');

    const added = await addExclusion(db.pool, { network: '203.0.113.0/27', reason: 'a customer of ours', createdBy: 'test' });
    if (!('added' in added)) throw new Error('not added');
    const answer = await check('203.0.113.20');
    expect(answer).toMatchObject({ listed: false, seen: true, excluded: { network: '203.0.113.0/27', source: 'operator', until: null } });
    expect(answer.excluded?.since).toBe(`${added.added.createdAt.toISOString().slice(0, 19)}Z`);
    expect(listedIn(answer)).toEqual([]);
    // The cached copies are dropped by the notice, on this server as on every other.
    await expect.poll(() => lines('/api/export?hours=24'), { timeout: 8000 }).not.toContain('203.0.113.20');
    expect(await lines('/api/dedup?hours=24')).not.toContain('203.0.113.20');
    expect(await lines('/api/export?hours=24')).toContain('198.51.100.10');

    await removeExclusions(db.pool, { id: added.added.id }, 'test');
    expect(await check('203.0.113.20')).toMatchObject({ listed: true, excluded: null });
    await expect.poll(() => lines('/api/export?hours=24'), { timeout: 8000 }).toContain('203.0.113.20');
  });
});

describe('limits', () => {
  it('/api/check is metered by the tier quota; /api/honeypot/check allows 5 anonymous calls a minute', async () => {
    const pro = (await createKey(db.pool, 'pro', 'metered')).key;
    const metered = await get('/api/check?ip=203.0.113.20', { 'x-api-key': pro });
    expect(metered.status).toBe(200);
    expect(metered.headers.get('ratelimit-policy')).toBe('"pro";q=10000;w=86400');
    expect(metered.headers.get('ratelimit')).toMatch(/^"pro";r=9999;t=\d+$/);

    const limited = await startApi(db.url, { anonymousPerMinute: 5 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await fetch(`${limited.base}/api/honeypot/check?ip=203.0.113.${i}`)).status);
      // Six calls within one minute, unless they straddle its end (then the limit starts over).
      expect([[200, 200, 200, 200, 200, 429], [200, 200, 200, 200, 200, 200]]).toContainEqual(statuses);
    } finally {
      await limited.close();
    }
  });
});
