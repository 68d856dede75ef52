// Compaction of ip_hourly (docs/data-model.md): ingest appends a batch's partial rows per (hour, address) and
// marks the day in ip_hourly_dirty; this merges the rows of each marked day into one per (hour, address) —
// attacks summed, services, sources and worst action combined, the MAX_PORTS smallest distinct ports, the
// distinct sensors — and clears the mark. Readers sum per address anyway, so compaction changes no answer,
// only how many rows they read. Then it builds the day's rollups for long windows (docs/data-model.md
// "Rollups") from the merged rows and the day's events, and lists the day's hours in rollup_hours. It holds
// the attack-data lock, so no ingest window appends meanwhile.
import type pg from 'pg';
import { ATTACK_DATA_LOCK } from '../store/locks.ts';
import { inTransaction } from '../store/transaction.ts';
import { MAX_PORTS } from '../ingest/hourly.ts';

/** Merges the partial rows of the UTC day [$1, $2). */
const MERGE_DAY = `
with dup as (
  select hour, ip from ip_hourly where hour >= $1 and hour < $2
  group by hour, ip having count(*) > 1
), gone as (
  delete from ip_hourly h using dup
  where h.hour >= $1 and h.hour < $2 and h.hour = dup.hour and h.ip = dup.ip
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

/**
 * The rollups of the UTC day [$1, $2) from its (merged) ip_hourly rows and its events, replacing what was
 * built before. Every source counts (the queries' publishable guard is applied when they read them); the
 * country is the one the address has now.
 */
const BUILD_ROLLUPS = [
  'delete from ip_daily where day = ($1::timestamptz at time zone \'UTC\')::date',
  `insert into ip_daily (day, ip, attacks, ports)
   select ($1::timestamptz at time zone 'UTC')::date, h.ip, h.attacks, coalesce(p.ports, '{}')
   from (select ip, sum(attacks)::int as attacks from ip_hourly where hour >= $1 and hour < $2 group by ip) h
   left join (select ip, array_agg(distinct port order by port) as ports
              from ip_hourly, unnest(ports) as port where hour >= $1 and hour < $2 group by ip) p using (ip)
   order by h.ip`,
  'delete from attack_totals where period >= $1 and period < $2',
  `insert into attack_totals (period, hours, country, attacks)
   select h.hour, 1, a.country, sum(h.attacks) from ip_hourly h left join addresses a on a.ip = h.ip
   where h.hour >= $1 and h.hour < $2 group by h.hour, a.country`,
  `insert into attack_totals (period, hours, country, attacks)
   select $1, 24, country, sum(attacks) from attack_totals where hours = 1 and period >= $1 and period < $2 group by country`,
  'delete from port_totals where period >= $1 and period < $2',
  `insert into port_totals (period, hours, port, attacks, service)
   select date_bin('1 hour', ts, timestamptz 'epoch'), 1, dst_port, count(*), min(service)
   from events where ts >= $1 and ts < $2 and dst_port is not null group by 1, 3`,
  `insert into port_totals (period, hours, port, attacks, service)
   select $1, 24, port, sum(attacks), min(service) from port_totals where hours = 1 and period >= $1 and period < $2 group by port`,
  `insert into rollup_hours (hour) select generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour')
   on conflict do nothing`,
];

export interface CompactionResult {
  days: number;
  /** Rows written in place of the partial rows they merged. */
  mergedRows: number;
}

/** Merges the partial ip_hourly rows of every day ingest marked and builds its rollups; one transaction per day. */
export async function compactHourly(pool: pg.Pool): Promise<CompactionResult> {
  const { rows: days } = await pool.query<{ day: string }>(`select to_char(day, 'YYYY-MM-DD') as day from ip_hourly_dirty order by day`);
  let mergedRows = 0;
  for (const { day } of days) {
    const start = new Date(`${day}T00:00:00Z`);
    const end = new Date(start.getTime() + 86_400_000);
    await inTransaction(pool, async (client) => {
      await client.query('select pg_advisory_xact_lock($1)', [ATTACK_DATA_LOCK]);
      mergedRows += (await client.query(MERGE_DAY, [start, end])).rowCount ?? 0;
      for (const sql of BUILD_ROLLUPS) await client.query(sql, sql.includes('$2') ? [start, end] : [start]);
      await client.query('delete from ip_hourly_dirty where day = $1::date', [day]);
    });
  }
  return { days: days.length, mergedRows };
}
