// Compaction of ip_hourly (docs/data-model.md): ingest appends a batch's partial rows per (hour, address) and
// marks the day in ip_hourly_dirty; this merges the rows of each marked day into one per (hour, address) —
// attacks summed, services, sources and worst action combined, the MAX_PORTS smallest distinct ports, the
// distinct sensors — and clears the mark. Readers sum per address anyway, so compaction changes no answer,
// only how many rows they read. It holds the attack-data lock, so no ingest window appends meanwhile.
import type pg from 'pg';
import { ATTACK_DATA_LOCK } from '../store/locks.ts';
import { MAX_PORTS } from '../ingest/hourly.ts';

const MERGE_DAY = `
with dup as (
  select hour, ip from ip_hourly where hour >= $1::date and hour < $1::date + 1
  group by hour, ip having count(*) > 1
), gone as (
  delete from ip_hourly h using dup
  where h.hour >= $1::date and h.hour < $1::date + 1 and h.hour = dup.hour and h.ip = dup.ip
  returning h.*
), merged as (
  select hour, ip, sum(attacks)::int as attacks, bit_or(services) as services, bit_or(sources) as sources,
         max(max_action) as max_action, min(first_seen) as first_seen, max(last_seen) as last_seen
  from gone group by hour, ip
), ports as (
  select hour, ip, (array_agg(p order by p))[1:${MAX_PORTS}] as ports
  from (select distinct hour, ip, p from gone, unnest(gone.ports) as p) as x group by hour, ip
), sensors as (
  select hour, ip, array_agg(s order by s) as sensors
  from (select distinct hour, ip, s from gone, unnest(gone.sensors) as s) as x group by hour, ip
)
insert into ip_hourly (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
select m.hour, m.ip, m.attacks, m.services, m.sources, m.max_action, coalesce(p.ports, '{}'), coalesce(s.sensors, '{}'),
       m.first_seen, m.last_seen
from merged m left join ports p using (hour, ip) left join sensors s using (hour, ip)`;

export interface CompactionResult {
  days: number;
  /** Rows written in place of the partial rows they merged. */
  mergedRows: number;
}

/** Merges the partial ip_hourly rows of every day ingest marked; one transaction per day. */
export async function compactHourly(pool: pg.Pool): Promise<CompactionResult> {
  const { rows: days } = await pool.query<{ day: string }>(`select to_char(day, 'YYYY-MM-DD') as day from ip_hourly_dirty order by day`);
  let mergedRows = 0;
  const client = await pool.connect();
  try {
    for (const { day } of days) {
      await client.query('begin');
      try {
        await client.query('select pg_advisory_xact_lock($1)', [ATTACK_DATA_LOCK]);
        mergedRows += (await client.query(MERGE_DAY, [day])).rowCount ?? 0;
        await client.query('delete from ip_hourly_dirty where day = $1::date', [day]);
        await client.query('commit');
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw err;
      }
    }
  } finally {
    client.release();
  }
  return { days: days.length, mergedRows };
}
