// Writers storing the same events at the same moment (two CLI ingests of one file, the HTTP route receiving
// a body twice) insert into `events` side by side and may wait on each other's rows, even in a cycle that
// PostgreSQL breaks by aborting one of them. Whatever happens, each event is stored and counted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import type { AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { sshLogin } from '../../../support/events.ts';

const BASE = Date.UTC(2026, 10, 20, 0);
const IPS = ['222.85.85.85', '61.135.169.125', '117.136.0.1', '8.8.8.8'];

/** `n` distinct events over two days (so batches also need partitions created side by side). */
function events(n: number): AttackEvent[] {
  return Array.from({ length: n }, (_, i) =>
    sshLogin({ ts: BASE + i * 173_000, src: IPS[i % IPS.length] as string, sensor: `hp-${i % 3}` }),
  );
}

/** A deterministic shuffle, so the two writers meet the same rows in different orders. */
function shuffled<T>(list: T[], seed: number): T[] {
  const out = [...list];
  let x = seed;
  for (let i = out.length - 1; i > 0; i--) {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('concurrent writers', () => {
  it('store and count each event once when they store the same events at the same time', async () => {
    const all = events(1000);
    const writers = [new EventWriter(db.pool, sharedEnricher), new EventWriter(db.pool, sharedEnricher)];
    const results = await Promise.all(
      writers.map(async (w, k) => {
        let inserted = 0;
        const order = shuffled(all, 11 + k);
        for (let i = 0; i < order.length; i += 100) inserted += await w.write(order.slice(i, i + 100));
        return inserted;
      }),
    );
    expect(results.reduce((a, b) => a + b, 0)).toBe(all.length);
    const { rows } = await db.pool.query<{ events: number; attacks: number }>(
      'select (select count(*)::int from events) as events, (select sum(attacks)::int from ip_hourly) as attacks',
    );
    expect(rows[0]).toEqual({ events: all.length, attacks: all.length });
  });
});
