// The rollups' life: a complete day is answered from its rollups, not from its hourly rows and events; an
// hour ingest appends to is read raw until compaction builds it again; reclassification (countries) makes
// them all to be built again; retention drops them with the partitions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import { reclassify } from '../../../../api-server/enrich/reclassify.ts';
import type { AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { completeHours } from '../../../../api-server/query/rollups.ts';
import { queryHourlyAttacks, queryStats } from '../../../../api-server/query/stats.ts';
import { compactHourly } from '../../../../api-server/retention/compaction.ts';
import { applyRetention } from '../../../../api-server/retention/retention.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { sshLogin } from '../../../support/events.ts';

const H = 3_600_000;
const DAY = 24 * H;
/** The data: ten days before NOW's midnight, a few events an hour. */
const NOW = new Date(Date.UTC(2026, 10, 22, 12, 34, 56));
const MIDNIGHT = NOW.getTime() - (NOW.getTime() % DAY);
const FIRST_DAY = MIDNIGHT - 10 * DAY;
const IPS = ['222.85.85.85', '61.135.169.125', '162.142.125.7'];

function event(ts: number, ip: string, port: number): AttackEvent {
  return sshLogin({ ts, src: ip, dstPort: port, service: port === 22 ? 'ssh' : 'web' });
}

function tenDays(): AttackEvent[] {
  const events: AttackEvent[] = [];
  for (let h = 0; h < 10 * 24 + 12; h++) {
    IPS.forEach((ip, i) => {
      if ((h + i) % 3 !== 0) events.push(event(FIRST_DAY + h * H + i * 60_000 + 7, ip, h % 5 === 0 ? 80 : 22));
    });
  }
  return events;
}

describe('rollups', () => {
  let db: TestDatabase;
  let writer: EventWriter;
  beforeAll(async () => {
    db = await freshDatabase();
    writer = new EventWriter(db.pool, sharedEnricher);
  });
  afterAll(async () => db.drop());

  it('answer a complete day from its rollups, and an hour ingest appends to from its rows until compacted', async () => {
    await writer.write(tenDays());
    // Before any compaction nothing is complete: every hour is read raw.
    expect((await completeHours(db.pool, FIRST_DAY)).size).toBe(0);
    await compactHourly(db.pool);
    expect((await completeHours(db.pool, FIRST_DAY)).size).toBe(11 * 24);
    const stats = await queryStats(db.pool, NOW, 720);
    const series = await queryHourlyAttacks(db.pool, NOW, 720);
    expect(stats.total_attacks).toBe(tenDays().length);
    expect(await queryStats(db.pool, NOW, 720, { rollups: false })).toEqual(stats);

    // Rows and events of the first days changed behind the rollups' back (no writer does this): a long
    // window still answers as before, so it did not read them; the rows alone now answer otherwise.
    const tampered = new Date(FIRST_DAY + 3 * DAY);
    await db.pool.query('update ip_hourly set attacks = attacks + 1000 where hour < $1', [tampered]);
    await db.pool.query('update events set dst_port = 9999 where ts < $1', [tampered]);
    expect(await queryStats(db.pool, NOW, 720)).toEqual(stats);
    expect(await queryHourlyAttacks(db.pool, NOW, 720)).toEqual(series);
    expect((await queryStats(db.pool, NOW, 720, { rollups: false })).total_attacks).toBeGreaterThan(stats.total_attacks + 1000);

    // An event ingested into the second day: that hour is read raw (with the tampered rows) until compaction
    // builds the day again, from the rows as they are now.
    const late = FIRST_DAY + DAY + 5 * H;
    await writer.write([event(late + 123, IPS[0] as string, 443)]);
    const complete = await completeHours(db.pool, FIRST_DAY);
    expect(complete.has(late - (late % H))).toBe(false);
    expect(complete.has(late - (late % H) + H)).toBe(true);
    const raw = await db.pool.query<{ n: string }>('select sum(attacks)::text as n from ip_hourly where hour = $1', [new Date(late - (late % H))]);
    const withLate = await queryStats(db.pool, NOW, 720);
    expect(withLate.total_attacks).toBe(stats.total_attacks + Number(raw.rows[0]?.n) - (await hourTotal(db, late - (late % H))));
    await compactHourly(db.pool);
    expect((await completeHours(db.pool, FIRST_DAY)).has(late - (late % H))).toBe(true);
    // Built again from the rows as they are now, every day (the tampered ones too): the two ways agree.
    await db.pool.query(`insert into ip_hourly_dirty (day) select distinct (hour at time zone 'UTC')::date from ip_hourly on conflict do nothing`);
    await compactHourly(db.pool);
    expect(await queryStats(db.pool, NOW, 720)).toEqual(await queryStats(db.pool, NOW, 720, { rollups: false }));
  });

  it('are built again when reclassification changes countries', async () => {
    await db.pool.query('truncate events, ip_hourly, ip_daily, addresses, ip_hourly_dirty, attack_totals, port_totals, rollup_hours');
    await writer.write(tenDays());
    // Stale enrichment, as a release with new lookup tables finds it: 162.142.125.7 is not in Germany.
    await db.pool.query(`update addresses set country = 'DE' where ip = '162.142.125.7'`);
    await db.pool.query(`insert into ip_hourly_dirty (day) select distinct (hour at time zone 'UTC')::date from ip_hourly on conflict do nothing`);
    await compactHourly(db.pool);
    const countries = async (rollups: boolean) => (await queryStats(db.pool, NOW, 720, { rollups })).top_countries.map((c) => c.country).sort();
    expect(await countries(true)).toEqual(['CN', 'DE']);

    expect((await reclassify(db.pool, sharedEnricher())).changed).toBeGreaterThan(0);
    expect(await countries(true)).toEqual(['CN', 'US']);
    expect(await queryStats(db.pool, NOW, 720)).toEqual(await queryStats(db.pool, NOW, 720, { rollups: false }));
    expect((await completeHours(db.pool, FIRST_DAY)).size).toBe(0);
    await compactHourly(db.pool);
    expect((await completeHours(db.pool, FIRST_DAY)).size).toBe(11 * 24);
    expect(await queryStats(db.pool, NOW, 720)).toEqual(await queryStats(db.pool, NOW, 720, { rollups: false }));
  });

  it('go with their days at retention', async () => {
    const later = new Date(MIDNIGHT + 40 * DAY);
    await applyRetention(db.pool, later);
    const { rows } = await db.pool.query<{ daily: number; attacks: number; ports: number; hours: number; partitions: number }>(
      `select (select count(*)::int from ip_daily) as daily, (select count(*)::int from attack_totals) as attacks,
              (select count(*)::int from port_totals) as ports, (select count(*)::int from rollup_hours) as hours,
              (select count(*)::int from pg_inherits i join pg_class p on p.oid = i.inhparent where p.relname = 'ip_daily') as partitions`,
    );
    expect(rows[0]).toEqual({ daily: 0, attacks: 0, ports: 0, hours: 0, partitions: 0 });
  });
});

/** The attacks an hour's totals hold (what the rollups would have answered for it). */
async function hourTotal(db: TestDatabase, hour: number): Promise<number> {
  const { rows } = await db.pool.query<{ n: string | null }>('select sum(attacks)::text as n from attack_totals where hours = 1 and period = $1', [new Date(hour)]);
  return Number(rows[0]?.n ?? 0);
}
