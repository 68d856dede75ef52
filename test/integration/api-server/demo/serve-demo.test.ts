// `serve --demo-if-empty` (make run) loads demo data on the first run only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../api-server/config.ts';
import { createLogger } from '../../../../common/logging.ts';
import { startServer } from '../../../../api-server/serve.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

describe('serve --demo-if-empty', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  const count = async () => (await db.pool.query<{ n: number }>('select count(*)::int as n from events')).rows[0]?.n;

  it('fills an empty store with demo events, and leaves a non-empty one alone', async () => {
    const ctx = { config: loadConfig({ env: { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1' } }), log: createLogger({ level: 'silent' }) };
    const first = await startServer(ctx, { demoIfEmpty: true });
    await first.close();
    const loaded = await count();
    expect(loaded).toBeGreaterThan(50_000);
    const { rows } = await db.pool.query<{ addresses: number; cn: number }>(
      "select count(*)::int as addresses, count(*) filter (where country = 'CN')::int as cn from addresses",
    );
    expect(rows[0]?.cn).toBeGreaterThan(0);
    const second = await startServer(ctx, { demoIfEmpty: true });
    await second.close();
    expect(await count()).toBe(loaded);
  });
});
