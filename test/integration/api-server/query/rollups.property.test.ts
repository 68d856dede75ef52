// Property: the rollups answer every window exactly as the hourly rows and events alone do. Random events
// over five weeks go in through the ingest writer; compaction builds the rollups of the days it finds, and
// more events arrive after it, so some hours are complete and some are not; sometimes the store also holds
// a source the publishable guard refuses (written past the ingest, which drops such sources). Then for
// random windows of 1–720 hours ending at random instants, every statistic, the hourly series and every
// list record (attacks and ports above all) are the same either way, to the count.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { serviceOfPort } from '../../../../common/vocabulary.ts';
import type { Action } from '../../../../api-server/classify/classification.ts';
import { parseAddress } from '../../../../common/ip.ts';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import { EventBatch } from '../../../../api-server/ingest/batch.ts';
import { withId, type AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import type { ExportQuery } from '../../../../api-server/query/endpoint-params.ts';
import { recordsSql, type AddressRecord } from '../../../../api-server/query/list-sql.ts';
import { exportFilter } from '../../../../api-server/query/lists.ts';
import { completeHours } from '../../../../api-server/query/rollups.ts';
import { queryHourlyAttacks, queryStats } from '../../../../api-server/query/stats.ts';
import { openListSnapshot } from '../../../../api-server/query/stream.ts';
import { readListBody } from '../../../../api-server/render/list-body.ts';
import { compactHourly } from '../../../../api-server/retention/compaction.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const H = 3_600_000;
const DAYS = 35;
/** Midnight UTC: the data spans [BASE, BASE + DAYS days). */
const BASE = Date.UTC(2026, 9, 20);
const IPS = ['222.85.85.85', '61.135.169.125', '117.136.0.1', '162.142.125.7', '2001:db8::7', '8.8.8.8', '203.0.113.9', '1.1.1.1'];
const SENSORS = ['hp-1', 'hp-2', 'tel-1'];
// Forty ports: an address can have more than the 32 an hourly row keeps.
const PORTS = [22, 23, 80, 443, 445, 3389, 5432, 6379, 8080, ...Array.from({ length: 31 }, (_, i) => 40_000 + i)];
const log = createLogger({ level: 'silent' });

const eventArb = fc
  .record({
    at: fc.integer({ min: 0, max: DAYS * 24 * 60 - 1 }),
    ms: fc.integer({ min: 0, max: 59_999 }),
    ip: fc.constantFrom(...IPS),
    port: fc.option(fc.constantFrom(...PORTS), { nil: null, freq: 8 }),
    telescope: fc.boolean(),
    sensor: fc.constantFrom(...SENSORS),
    action: fc.constantFrom<Action>(0, 1, 2),
  })
  .map(({ at, ms, ip, port, telescope, sensor, action }): AttackEvent =>
    withId({
      ts: BASE + at * 60_000 + ms,
      src: parseAddress(ip) as AttackEvent['src'],
      dstPort: port,
      service: port === null ? null : (serviceOfPort(port) ?? null),
      proto: 'tcp',
      source: telescope ? 'telescope' : 'honeypot',
      sensor,
      action: telescope ? 0 : action,
      username: null,
      command: null,
    }),
  );

/** A burst: many events of one address in one hour, so that hours hold more than one row and many ports. */
const burstArb = fc
  .record({ hour: fc.integer({ min: 0, max: DAYS * 24 - 1 }), ip: fc.constantFrom(...IPS), size: fc.integer({ min: 5, max: 40 }) })
  .chain(({ hour, ip, size }) =>
    fc.array(eventArb, { minLength: size, maxLength: size }).map((events) =>
      events.map(({ id: _, ...e }) => withId({ ...e, ts: BASE + hour * H + (e.ts % H), src: parseAddress(ip) as AttackEvent['src'] })),
    ),
  );

/** A window: its end at any instant of the data's span (often on an hour or a midnight), 1–720 hours long. */
const windowArb = fc.record({
  end: fc.oneof(
    fc.integer({ min: BASE + 24 * H, max: BASE + (DAYS + 1) * 24 * H }),
    fc.integer({ min: 1, max: DAYS + 1 }).map((d) => BASE + d * 24 * H),
    fc.integer({ min: 24, max: (DAYS + 1) * 24 }).map((h) => BASE + h * H),
  ),
  hours: fc.oneof(fc.integer({ min: 1, max: 720 }), fc.constantFrom(1, 24, 25, 168, 719, 720)),
});

async function store(writer: EventWriter, events: AttackEvent[], batchSize: number): Promise<void> {
  const window = writer.window();
  try {
    for (let i = 0; i < events.length; i += batchSize) {
      const batch = new EventBatch(window.facts, writer.sensors);
      for (const e of events.slice(i, i + batchSize)) batch.add(e);
      if (batch.count) await window.store(batch);
    }
    await window.commit();
  } finally {
    await window.abort();
  }
}

/** Writes a source the guard refuses straight into the tables (ingest would drop it). */
async function storeRefused(db: TestDatabase, at: number): Promise<void> {
  const ts = new Date(at);
  // Its day may have no partition yet: no other event fell on it.
  await db.pool.query(`select ensure_attack_partitions(($1::timestamptz at time zone 'UTC')::date, ($1::timestamptz at time zone 'UTC')::date)`, [ts]);
  await db.pool.query(`insert into events (ts, id, src_ip, dst_port, service, source, sensor) values ($1, gen_random_uuid(), '10.9.8.7', 22, 'ssh', 'honeypot', 'hp-1')`, [ts]);
  await db.pool.query(
    `insert into ip_hourly (hour, ip, attacks, services, sources, ports, first_seen, last_seen) values (date_bin('1 hour', $1::timestamptz, 'epoch'), '10.9.8.7', 1, 1, 1, '{22}', $1, $1)`,
    [ts],
  );
  await db.pool.query(`insert into addresses (ip, first_seen, last_seen, last_honeypot, country) values ('10.9.8.7', $1, $1, $1, 'ZZ') on conflict do nothing`, [ts]);
  // A write past the ingest: its day is marked for compaction as ingest would (its hour, incomplete, by the trigger).
  await db.pool.query(`insert into ip_hourly_dirty (day) values (($1::timestamptz at time zone 'UTC')::date) on conflict do nothing`, [ts]);
}

const query = (hours: number): ExportQuery => ({
  type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', hours, include_research: 1, format: 'json', download: 0,
});

/** The list's records as the API reads them: through a snapshot, from the coarsest complete rollups. */
async function recordsFromRollups(db: TestDatabase, now: Date, hours: number): Promise<AddressRecord[]> {
  const list = await readListBody(await openListSnapshot(db.pool, log), { filter: exportFilter(query(hours), now), format: 'json', generatedAt: now, windowHours: hours, count: true });
  return (JSON.parse(await new Response(list.body).text()) as { data: AddressRecord[] }).data;
}

/** The same records from the hourly rows alone. */
async function recordsFromHourlyRows(db: TestDatabase, now: Date, hours: number): Promise<AddressRecord[]> {
  const { rows } = await db.pool.query<AddressRecord>(recordsSql(exportFilter(query(hours), now)));
  return rows;
}

describe('rollups', () => {
  let db: TestDatabase;
  let writer: EventWriter;
  beforeAll(async () => {
    db = await freshDatabase();
    writer = new EventWriter(db.pool, sharedEnricher);
  });
  afterAll(async () => db.drop());

  it('answer every window as the hourly rows and events do, to the count', async () => {
    let compared = 0;
    let rolled = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArb, { minLength: 30, maxLength: 250 }),
        fc.array(burstArb, { maxLength: 3 }),
        fc.array(eventArb, { maxLength: 40 }),
        fc.integer({ min: 7, max: 120 }),
        fc.option(fc.integer({ min: 0, max: DAYS * 24 * 60 - 1 }), { nil: undefined, freq: 4 }),
        fc.array(windowArb, { minLength: 4, maxLength: 8 }),
        async (events, bursts, later, batchSize, refusedAt, windows) => {
          await db.pool.query('truncate events, ip_hourly, ip_daily, addresses, ip_hourly_dirty, attack_totals, port_totals, rollup_hours');
          await store(writer, [...events, ...bursts.flat()], batchSize);
          if (refusedAt !== undefined) await storeRefused(db, BASE + refusedAt * 60_000);
          await compactHourly(db.pool);
          // After compaction: their hours are no longer complete, the other hours' rollups stand.
          await store(writer, later, batchSize);

          for (const { end, hours } of windows) {
            const now = new Date(end);
            const [statsRows, statsRollups] = [await queryStats(db.pool, now, hours, { rollups: false }), await queryStats(db.pool, now, hours)];
            expect(statsRollups, `stats over ${hours} h to ${now.toISOString()}`).toEqual(statsRows);
            const [seriesRows, seriesRollups] = [await queryHourlyAttacks(db.pool, now, hours, { rollups: false }), await queryHourlyAttacks(db.pool, now, hours)];
            expect(seriesRollups, `hourly series over ${hours} h to ${now.toISOString()}`).toEqual(seriesRows);
            const reference = await recordsFromHourlyRows(db, now, hours);
            expect(await recordsFromRollups(db, now, hours), `records over ${hours} h to ${now.toISOString()}`).toEqual(reference);
            if (reference.some((r) => r.attacks > 0)) compared++;
            if ((await completeHours(db.pool, now.getTime() - hours * H)).size >= 48) rolled++;
          }
        },
      ),
      { numRuns: 20 },
    );
    // The windows held data, and many were answered from whole days of rollups.
    expect(compared).toBeGreaterThan(40);
    expect(rolled).toBeGreaterThan(20);
  }, 240_000);
});
