// Platform statistics over a window: totals and top countries from ip_hourly, top ports from events (the
// rollup keeps ports per address-hour, not attacks per port).
import type pg from 'pg';
import { timestampLiteral } from './list-sql.ts';

interface StatsDocument {
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
      where hour >= date_trunc('hour', ${w}) and last_seen >= ${w} group by ip)
    select (select coalesce(sum(attacks), 0)::float8 from h) as total_attacks,
      (select count(*)::int from h) as unique_ips,
      coalesce((select json_agg(c) from (
        select a.country::text as country, sum(h.attacks)::float8 as attacks, count(*)::int as ips
        from h join addresses a on a.ip = h.ip where a.country is not null
        group by a.country order by attacks desc, country limit ${TOP}) c), '[]') as top_countries,
      coalesce((select json_agg(p) from (
        select dst_port as port, min(service) as service, count(*)::float8 as attacks
        from events where ts >= ${w} and dst_port is not null
        group by dst_port order by attacks desc, port limit ${TOP}) p), '[]') as top_ports`;
}

export async function queryStats(pool: pg.Pool, now: Date, hours: number): Promise<StatsDocument> {
  const { rows } = await pool.query<Omit<StatsDocument, 'generated_at' | 'window_hours'>>(statsSql(new Date(now.getTime() - hours * 3_600_000)));
  const row = rows[0];
  if (!row) throw new Error('stats query returned no row');
  return { generated_at: now.toISOString(), window_hours: hours, ...row };
}
