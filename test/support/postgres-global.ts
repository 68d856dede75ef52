// vitest globalSetup for the integration tier: one embedded PostgreSQL per test run (throwaway, fsync off),
// plus a migrated template database that each test file clones into a fresh database of its own.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createLogger } from '../../common/logging.ts';
import { startEmbedded } from '../../api-server/store/embedded.ts';
import { ensureDatabaseExists, withDatabase } from '../../api-server/store/database.ts';
import { migrate } from '../../api-server/store/migrate.ts';
import pg from 'pg';

export const TEMPLATE_DB = 'blockfeed_template';

/** Settings for clusters whose data may be lost: durability off, speed on. */
export const THROWAWAY_SETTINGS = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' };

declare module 'vitest' {
  export interface ProvidedContext {
    pgMaintenanceUrl: string;
    pgTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-test-pg-'));
  await chmod(dir, 0o755); // the server runs as the `postgres` user when tests run as root
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL === 'debug' ? 'debug' : 'warn' });
  const server = await startEmbedded({ dataDir: dir, log, settings: THROWAWAY_SETTINGS });
  await ensureDatabaseExists(server.url, TEMPLATE_DB);
  const pool = new pg.Pool({ connectionString: withDatabase(server.url, TEMPLATE_DB), max: 2 });
  try {
    await migrate(pool, log);
  } finally {
    await pool.end();
  }
  project.provide('pgMaintenanceUrl', server.url);
  project.provide('pgTemplate', TEMPLATE_DB);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
