// An in-process api-server on a test database, listening on a real socket, with its log captured.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig, type Config } from '../../api-server/config.ts';
import { createLogger } from '../../common/logging.ts';
import { createRegistry } from '../../common/metrics.ts';
import { openDatabase } from '../../api-server/store/database.ts';
import { buildServer } from '../../api-server/app.ts';
import { freshDatabase, type TestDatabase } from './db.ts';

export interface TestApi {
  base: string;
  app: FastifyInstance;
  log(): string;
  close(): Promise<void>;
}

export async function startApi(databaseUrl: string, overrides: Partial<Config> = {}, options: { clock?: () => Date; port?: number } = {}): Promise<TestApi> {
  const config = loadConfig({ env: {}, overrides: { databaseUrl, logLevel: 'info', ...overrides } });
  let captured = '';
  const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => ((captured += chunk.toString()), cb()) });
  const log = createLogger({ level: config.logLevel, destination: sink });
  const db = await openDatabase({ config, log, applicationName: 'blockfeed-test-api' });
  const app = await buildServer({ db, log, config, registry: createRegistry(), ingestToken: config.ingestToken, clock: options.clock });
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    base: `http://127.0.0.1:${port}`,
    app,
    log: () => captured,
    close: async () => {
      await app.close();
      await db.close();
    },
  };
}

/**
 * The status `url` answers once it answers `wanted`, or the last one after `timeoutMs`: for effects announced
 * asynchronously (a revocation's NOTIFY), with room for a loaded machine.
 */
export async function settledStatus(url: string, headers: Record<string, string>, wanted: number, timeoutMs = 8000): Promise<number> {
  let status = 0;
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    status = (await fetch(url, { headers })).status;
    if (status === wanted) break;
  }
  return status;
}

/** A fresh database and an api-server on it for the calling file or describe block, made and removed by its hooks. */
export function apiOnFreshDatabase(overrides: Partial<Config> = {}): { readonly db: TestDatabase; readonly api: TestApi } {
  const made: { db?: TestDatabase; api?: TestApi } = {};
  beforeAll(async () => {
    made.db = await freshDatabase();
    made.api = await startApi(made.db.url, overrides);
  });
  afterAll(async () => {
    await made.api?.close();
    await made.db?.drop();
  });
  return {
    get db() {
      if (!made.db) throw new Error('the database is made in beforeAll');
      return made.db;
    },
    get api() {
      if (!made.api) throw new Error('the api-server is started in beforeAll');
      return made.api;
    },
  };
}

/** A GET with `key` as each API takes it (Bearer on the token API, X-API-Key on the key API); anything but 200 throws. */
export async function getWithKey(api: Pick<TestApi, 'base'>, key: string, path: string): Promise<string> {
  const res = await fetch(`${api.base}${path}`, { headers: path.startsWith('/api/honeypot/') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key } });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 300)}`);
  return body;
}

/** The addresses of a list or recent answer in txt, csv or json. */
export function addressesIn(body: string, format: string): string[] {
  if (format === 'txt') return body.split('\n').filter(Boolean);
  if (format === 'json') return (JSON.parse(body) as { data: { ip: string }[] }).data.map((r) => r.ip);
  const rows = body.split('\r\n').filter(Boolean);
  const column = rows[0]?.split(',').indexOf('ip') ?? -1;
  if (column < 0) throw new Error(`a csv answer without an ip column: ${rows[0]}`);
  return rows.slice(1).map((r) => r.split(',')[column] ?? '');
}
