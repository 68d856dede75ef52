// The most recent raw events (newest first). Research mapping platforms are left out as on every endpoint, and
// so are sources that may not be published (list-sql.ts).
import type pg from 'pg';
import { publishableSql } from './list-sql.ts';

export interface RecentEvent {
  /** ISO 8601 UTC. */
  ts: string;
  ip: string;
  country: string | null;
  port: number | null;
  service: string | null;
  source: string;
  /** What was typed on the honeypot, if anything (variant A shows it). */
  command?: string | null;
}

/** Raw events are kept 30 days + margin; looking further back would only scan dropped partitions' absence. */
const LOOKBACK_DAYS = 32;

export async function queryRecent(pool: pg.Pool, limit: number): Promise<RecentEvent[]> {
  const { rows } = await pool.query<RecentEvent>(
    `select to_char(e.ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ts, host(e.src_ip) as ip,
       a.country::text as country, e.dst_port as port, e.service, e.source, e.command
     from events e left join addresses a on a.ip = e.src_ip
     where e.ts >= now() - make_interval(days => ${LOOKBACK_DAYS})
       and a.scanner_kind is distinct from 'research_scanner'
       and ${publishableSql('e.src_ip')}
     order by e.ts desc, e.id
     limit $1`,
    [limit],
  );
  return rows;
}
