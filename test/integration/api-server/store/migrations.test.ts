import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { loadMigrations, migrate } from '../../../../api-server/store/migrate.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const log = createLogger({ level: 'silent' });

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  it('apply once, then are a no-op', async () => {
    const all = await loadMigrations();
    const first = await migrate(db.pool, log);
    expect(first.applied.map((m) => m.version)).toEqual(all.map((m) => m.version));
    const second = await migrate(db.pool, log);
    expect(second.applied).toEqual([]);
    const { rows } = await db.pool.query<{ n: string }>('select count(*) as n from schema_migrations');
    expect(Number(rows[0]?.n)).toBe(all.length);
  });

  it('serialise concurrent migrators (replicas starting together)', async () => {
    const other = await freshDatabase({ migrated: false });
    try {
      const results = await Promise.all([migrate(other.pool, log), migrate(other.pool, log), migrate(other.pool, log)]);
      expect(results.reduce((n, r) => n + r.applied.length, 0)).toBe((await loadMigrations()).length);
    } finally {
      await other.drop();
    }
  });

  it('refuse a migration edited after it was applied', async () => {
    const edited = (await loadMigrations()).map((m, i) => (i === 0 ? { ...m, checksum: 'different' } : m));
    await expect(migrate(db.pool, log, edited)).rejects.toThrow(/changed after it was applied/);
  });

  it('roll back a failing migration entirely', async () => {
    const all = await loadMigrations();
    const broken = [...all, { version: all.length + 1, name: 'broken', sql: 'create table half_done (x int); select 1/0;', checksum: 'x' }];
    await expect(migrate(db.pool, log, broken)).rejects.toThrow(/migration \d+_broken failed: division by zero/);
    const { rowCount } = await db.pool.query("select 1 from pg_tables where tablename = 'half_done'");
    expect(rowCount).toBe(0);
  });
});
