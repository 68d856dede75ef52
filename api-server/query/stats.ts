// Platform statistics over a window: totals and top countries from ip_hourly, top ports from events (the
// rollup keeps ports per address-hour, not attacks per port). Sources that may not be published (list-sql.ts)
// count nowhere: the statistics describe the attacks the lists hold.
import type pg from 'pg';
import { publishableSql, timestampLiteral } from './list-sql.ts';

export interface StatsDocument {
  generated_at: string;
  window_hours: number;
  total_attacks: number;
  unique_ips: number;
  top_countries: { country: string; attacks: number; ips: number }[];
  top_ports: { port: number; service: string | null; attacks: number }[];
}

const TOP = 10;

function statsSql(since: Date): string {
  const w = timestampLiteral(since);
  return `with h as (
      select ip, sum(attacks)::bigint as attacks from ip_hourly
      where hour >= date_trunc('hour', ${w}) and last_seen >= ${w} and ${publishableSql('ip')} group by ip)
    select (select coalesce(sum(attacks), 0)::float8 from h) as total_attacks,
      (select count(*)::int from h) as unique_ips,
      coalesce((select json_agg(c) from (
        select a.country::text as country, sum(h.attacks)::float8 as attacks, count(*)::int as ips
        from h join addresses a on a.ip = h.ip where a.country is not null
        group by a.country order by attacks desc, country limit ${TOP}) c), '[]') as top_countries,
      coalesce((select json_agg(p) from (
        select dst_port as port, min(service) as service, count(*)::float8 as attacks
        from events where ts >= ${w} and dst_port is not null and ${publishableSql('src_ip')}
        group by dst_port order by attacks desc, port limit ${TOP}) p), '[]') as top_ports`;
}

/** Attacks in each hour of the window, oldest first, hours without any included (the website's chart). */
export interface HourlyAttacks {
  hour: Date;
  attacks: number;
}

/**
 * The hourly series behind `total_attacks`: the same ip_hourly rows (from the start of the hour containing
 * the window start, seen since it) summed per hour instead of per address, so it adds up to the total of
 * /api/stats for the same window.
 */
export async function queryHourlyAttacks(pool: pg.Pool, now: Date, hours: number): Promise<HourlyAttacks[]> {
  const w = timestampLiteral(new Date(now.getTime() - hours * 3_600_000));
  const { rows } = await pool.query<HourlyAttacks>(
    `with per_hour as (
       select hour, sum(attacks)::float8 as attacks from ip_hourly
       where hour >= date_trunc('hour', ${w}) and last_seen >= ${w} group by hour)
     select s.hour, coalesce(p.attacks, 0) as attacks
     from generate_series(date_trunc('hour', ${w}, 'UTC'), date_trunc('hour', ${timestampLiteral(now)}, 'UTC'), interval '1 hour') as s(hour)
     left join per_hour p on p.hour = s.hour order by s.hour`,
  );
  return rows;
}

export async function queryStats(pool: pg.Pool, now: Date, hours: number): Promise<StatsDocument> {
  const { rows } = await pool.query<Omit<StatsDocument, 'generated_at' | 'window_hours'>>(statsSql(new Date(now.getTime() - hours * 3_600_000)));
  const row = rows[0];
  if (!row) throw new Error('stats query returned no row');
  return { generated_at: now.toISOString(), window_hours: hours, ...row };
}
