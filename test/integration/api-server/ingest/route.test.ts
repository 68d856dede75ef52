// POST /internal/v1/events through fastify inject on the real server composition and a real PostgreSQL.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { createRegistry } from '../../../../common/metrics.ts';
import { buildServer } from '../../../../api-server/app.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const TOKEN = 'test-ingest-token-0123456789';
const LINES = [
  '{"ts":"2026-11-21T08:00:00Z","src_ip":"222.85.85.85","dst_port":22,"source":"honeypot","sensor":"hp-push","username":"root"}',
  '{"ts":"2026-11-21T08:00:01Z","src_ip":"222.85.85.85","dst_port":22,"source":"honeypot","sensor":"hp-push","command":"id"}',
  '{"ts":"2026-11-21T08:00:02Z","src_ip":"bogus","dst_port":22,"source":"honeypot","sensor":"hp-push"}',
].join('\n');

describe('POST /internal/v1/events', () => {
  let db: TestDatabase;
  let app: FastifyInstance;
  let off: FastifyInstance;
  beforeAll(async () => {
    db = await freshDatabase();
    const database = { pool: db.pool, url: db.url, close: async () => {} };
    const log = createLogger({ level: 'silent' });
    app = await buildServer({ db: database, log, registry: createRegistry(), ingestToken: TOKEN });
    off = await buildServer({ db: database, log, registry: createRegistry() });
  });
  afterAll(async () => {
    await app.close();
    await off.close();
    await db.drop();
  });

  const post = (server: FastifyInstance, body: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }, url = '/internal/v1/events?format=native') =>
    server.inject({ method: 'POST', url, payload: body, headers: { 'content-type': 'application/x-ndjson', ...headers } });

  it('does not exist unless an ingest token is configured', async () => {
    expect((await post(off, LINES)).statusCode).toBe(404);
  });

  it('refuses a missing or wrong token with 401 problem+json', async () => {
    const none = await post(app, LINES, {});
    expect(none.statusCode).toBe(401);
    expect(none.headers['content-type']).toContain('application/problem+json');
    expect(none.json()).toMatchObject({ status: 401, title: 'Unauthorized' });
    expect((await post(app, LINES, { authorization: 'Bearer wrong-token-wrong-token' })).statusCode).toBe(401);
  });

  it('stores the good lines, reports the bad ones, and adds nothing when the same body comes again', async () => {
    const first = await post(app, LINES);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ lines: 3, accepted: 2, inserted: 2, duplicates: 0, skipped: 0, rejected: 1, nonGlobal: 0, errors: [{ line: 3, reason: 'src_ip "bogus" is not an IP address' }] });
    const again = await post(app, LINES);
    expect(again.json()).toMatchObject({ accepted: 2, inserted: 0, duplicates: 2 });
    const { rows } = await db.pool.query<{ n: number; critical: boolean }>(
      "select (select count(*)::int from events) as n, (select last_critical is not null from addresses where ip = '222.85.85.85') as critical",
    );
    expect(rows[0]).toEqual({ n: 2, critical: true });
  });

  it('drops events from non-global sources and counts them in its answer and a metric', async () => {
    const body = ['10.1.2.3', '127.0.0.5', 'fe80::1', '198.51.100.200']
      .map((src, i) => `{"ts":"2026-11-21T08:10:0${i}Z","src_ip":"${src}","dst_port":23,"source":"honeypot","sensor":"hp-push"}`)
      .join('\n');
    expect((await post(app, body)).json()).toMatchObject({ lines: 4, accepted: 1, inserted: 1, nonGlobal: 3 });
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^blockfeed_ingest_non_global_events_total 3$/m);
  });

  it('takes other formats and names the parameter it refuses', async () => {
    const csv = await post(app, 'ts,src_ip,dst_port,proto\n2026-11-21T09:00:00Z,117.136.0.1,445,tcp\n', undefined, '/internal/v1/events?format=telescope-csv&sensor=tel-push');
    expect(csv.json()).toMatchObject({ inserted: 1, skipped: 1 });
    const bad = await post(app, LINES, undefined, '/internal/v1/events?format=xml');
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    expect(bad.json()).toMatchObject({ errors: [{ name: 'format', allowed: expect.stringMatching(/native.*cowrie.*opencanary.*telescope-csv/) as string }] });
    expect((await post(app, LINES, {}, '/internal/v1/events?format=xml')).statusCode).toBe(401);
    const nothing = await post(app, 'garbage\n');
    expect(nothing.statusCode).toBe(400);
    expect(nothing.json()).toMatchObject({ errors: [{ name: 'body line 1' }] });
  });
});
