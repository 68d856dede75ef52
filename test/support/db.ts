// Per-test-file databases on the run's embedded PostgreSQL (see postgres-global.ts).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { withDatabase } from '../../api-server/store/database.ts';

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  readonly pool: pg.Pool;
  drop(): Promise<void>;
}

async function maintenance<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('pgMaintenanceUrl') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A new database for one test file: a clone of the migrated template (fast), or empty when `migrated` is
 * false (for tests of the migrations themselves).
 */
export async function freshDatabase({ migrated = true }: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await maintenance(async (c) => {
    const template = migrated ? ` template ${c.escapeIdentifier(inject('pgTemplate'))}` : ' template template0';
    // Cloning a template needs it to have no other sessions; retry briefly if a sibling file is cloning too.
    for (let attempt = 0; ; attempt++) {
      try {
        await c.query(`create database ${c.escapeIdentifier(name)}${template}`);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
  const url = withDatabase(inject('pgMaintenanceUrl'), name);
  const pool = new pg.Pool({ connectionString: url, max: 5 });
  return {
    name,
    url,
    pool,
    drop: async () => {
      await pool.end();
      // pool.end() resolves before its sockets have closed. Forcing the drop then would kill those sessions
      // and their clients would raise an uncaught "terminating connection" error, so wait for them instead.
      await maintenance(async (c) => {
        for (let attempt = 0; ; attempt++) {
          try {
            await c.query(`drop database if exists ${c.escapeIdentifier(name)}${attempt >= 100 ? ' with (force)' : ''}`);
            return;
          } catch (err) {
            if ((err as { code?: string }).code !== '55006' || attempt >= 100) throw err;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      });
    },
  };
}
