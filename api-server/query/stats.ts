// Platform statistics over a window: attacks and addresses from the rollups of ip_hourly, attacks per port
// from events (the hourly rows keep ports per address-hour, not attacks per port). Sources that may not be
// published (list-sql.ts) count nowhere: the statistics describe the attacks the lists hold.
//
// What a window reads (docs/data-model.md "Rollups"): the hourly rows and events alone answer it exactly,
// and are what a window of a day or less counts its attacks and addresses from. A longer one takes each
// complete day or hour from the rollups instead — attacks per country and per port — and its addresses from
// `addresses` (an address is in the window exactly when it was last seen in it), so that 30 days cost about
// what a day does. The hour the window starts in is always read raw: only its rows seen since the window
// start count, and only its events since then. The rollups count every source; when the window holds a
// source the guard refuses (ingest stores none), the statistic is computed the exact, slower way instead.
import type pg from 'pg';
import { publishableSql, timestampLiteral } from './list-sql.ts';
import { HOUR, completeHours, completeHoursOf, hourOf, planWindow, rangeSql, totalsSql, type RawRange, type WindowPlan } from './rollups.ts';

export interface StatsDocument {
  generated_at: string;
  window_hours: number;
  total_attacks: number;
  unique_ips: number;
  top_countries: { country: string; attacks: number; ips: number }[];
  top_ports: { port: number; service: string | null; attacks: number }[];
}

export interface RollupOption {
  /** false: the hourly rows and events alone, as before there were rollups (the reference the tests hold them to). */
  rollups?: boolean;
}

const TOP = 10;
/** Windows up to this many hours count attacks and addresses from the hourly rows (they span few of them). */
const ROWS_WINDOW_HOURS = 24;

/**
 * A window start W and how its hours are read: the hour containing W raw with its conditions when W falls
 * inside it, every later hour by `plan` (undefined: raw, with no rollups).
 */
interface StatsWindow {
  /** SQL literal of W. */
  w: string;
  /** The hour containing W, when W is not on the hour: read raw, only what happened since W. */
  partial?: RawRange;
  plan?: WindowPlan;
}

function statsWindow(since: Date, complete: ReadonlySet<number> | undefined): StatsWindow {
  const start = hourOf(since);
  const partial = since.getTime() > start ? { from: start, to: start + HOUR } : undefined;
  return { w: timestampLiteral(since), partial, plan: complete && planWindow(partial ? start + HOUR : start, complete) };
}

/** Per address, attacks in the window from the hourly rows (rows of the first hour seen since W), and whether it may be published. */
function rowsCte({ w }: StatsWindow): string {
  return `h_all as (
      select ip, sum(attacks)::bigint as attacks, ${publishableSql('ip')} as ok from ip_hourly
      where hour >= date_trunc('hour', ${w}, 'UTC') and last_seen >= ${w} group by ip)`;
}

function rowsFigures(): { total: string; unique: string; countries: string } {
  return {
    total: `(select coalesce(sum(attacks), 0)::float8 from h_all where ok)`,
    unique: `(select count(*)::int from h_all where ok)`,
    countries: `coalesce((select json_agg(c) from (
        select a.country::text as country, sum(h.attacks)::float8 as attacks, count(*)::int as ips
        from h_all h join addresses a on a.ip = h.ip where h.ok and a.country is not null
        group by a.country order by attacks desc, country limit ${TOP}) c), '[]')`,
  };
}

/** Attacks per port from the events since W, the guard applied to each. */
function eventPorts({ w }: StatsWindow): string {
  return `coalesce((select json_agg(p) from (
        select dst_port as port, min(service) as service, count(*)::float8 as attacks
        from events where ts >= ${w} and dst_port is not null and ${publishableSql('src_ip')}
        group by dst_port order by attacks desc, port limit ${TOP}) p), '[]')`;
}

/** The raw spans of a window's events: the partial first hour from W, then the plan's raw hours. */
function rawEventRanges(sw: StatsWindow, plan: WindowPlan): string {
  const ranges = plan.raw.map((r) => rangeSql('ts', r));
  if (sw.partial?.to !== undefined) ranges.unshift(`ts >= ${sw.w} and ts < ${timestampLiteral(new Date(sw.partial.to))}`);
  return ranges.map((r) => `(${r})`).join(' or ');
}

/** Attacks per port from the port totals of complete days and hours and the events of the rest (no guard: no refused source in the window). */
function rolledPortsCte(sw: StatsWindow, plan: WindowPlan): string {
  return `ports_rolled as (
      select port, sum(attacks) as attacks, min(service) as service from (
        select port, attacks, service from port_totals where ${totalsSql(plan.days, plan.hours)}
        union all
        select dst_port, 1, service from events where dst_port is not null and (${rawEventRanges(sw, plan)})
      ) p group by port)`;
}

const ROLLED_PORTS = `coalesce((select json_agg(p) from (
        select port, service, attacks::float8 as attacks from ports_rolled order by attacks desc, port limit ${TOP}) p), '[]')`;

/** The raw hourly rows (ip, attacks) of a window: the partial first hour's seen since W, then the plan's raw hours. */
function rawRowsSql(sw: StatsWindow, plan: WindowPlan, columns: string): string {
  const branches = plan.raw.map((r) => `select ${columns} from ip_hourly where ${rangeSql('hour', r)}`);
  if (sw.partial) branches.unshift(`select ${columns} from ip_hourly where ${rangeSql('hour', sw.partial)} and last_seen >= ${sw.w}`);
  return branches.join('\n        union all ');
}

/** Addresses in the window per country (and the refused ones), and attacks per country from the rollups. */
function rolledCountsCtes(sw: StatsWindow, plan: WindowPlan): string {
  return `a as (
      select country, count(*) filter (where ok)::int as ips, count(*) filter (where not ok)::int as refused
      from (select country, ${publishableSql('ip')} as ok from addresses where last_seen >= ${sw.w}) x group by country),
    refused as (select coalesce(sum(refused), 0)::int as n from a),
    rolled as (
      select country, sum(attacks) as attacks from (
        select country, attacks from attack_totals where ${totalsSql(plan.days, plan.hours)}
        union all
        select a.country, r.attacks from (${rawRowsSql(sw, plan, 'ip, attacks')}) r left join addresses a on a.ip = r.ip
      ) t group by country)`;
}

function statsSql(sw: StatsWindow, hours: number): string {
  const rows = rowsFigures();
  const select = (f: { total: string; unique: string; countries: string; ports: string }) =>
    `select ${f.total} as total_attacks, ${f.unique} as unique_ips, ${f.countries} as top_countries, ${f.ports} as top_ports`;
  const plan = sw.plan;
  if (!plan) return `with ${rowsCte(sw)}\n    ${select({ ...rows, ports: eventPorts(sw) })}`;
  const either = (rolled: string, exact: string) => `case when (select n from refused) = 0 then ${rolled} else ${exact} end`;
  const ports = either(ROLLED_PORTS, eventPorts(sw));
  if (hours <= ROWS_WINDOW_HOURS) {
    return `with ${rowsCte(sw)},
    refused as (select count(*) filter (where not ok)::int as n from h_all),
    ${rolledPortsCte(sw, plan)}
    ${select({ ...rows, ports })}`;
  }
  // h_all is read only when the window holds a refused source (CASE evaluates one branch's subqueries).
  return `with ${rolledCountsCtes(sw, plan)},
    ${rolledPortsCte(sw, plan)},
    ${rowsCte(sw)}
    ${select({
      total: either(`(select coalesce(sum(attacks), 0)::float8 from rolled)`, rows.total),
      unique: either(`(select coalesce(sum(ips), 0)::int from a)`, rows.unique),
      countries: either(
        `coalesce((select json_agg(c) from (
          select r.country::text as country, r.attacks::float8 as attacks, a.ips
          from rolled r join a on a.country = r.country
          order by attacks desc, country limit ${TOP}) c), '[]')`,
        rows.countries,
      ),
      ports,
    })}`;
}

/** Runs `fn` in one read-only snapshot: the complete hours and the rollups read in it agree. */
async function inSnapshot<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin isolation level repeatable read read only');
    const result = await fn(client);
    await client.query('commit');
    client.release();
    return result;
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
}

/** Attacks in each hour of the window, oldest first, hours without any included (the website's chart). */
export interface HourlyAttacks {
  hour: Date;
  attacks: number;
}

/**
 * The hourly series behind `total_attacks`: the same rows (from the start of the hour containing the window
 * start, seen since it) summed per hour instead of per address, so it adds up to the total of /api/stats for
 * the same window. Complete hours come from their attack totals.
 */
export async function queryHourlyAttacks(pool: pg.Pool, now: Date, hours: number, { rollups = true }: RollupOption = {}): Promise<HourlyAttacks[]> {
  const since = new Date(now.getTime() - hours * HOUR);
  return inSnapshot(pool, async (client) => {
    const sw = statsWindow(since, rollups ? await completeHours(client, hourOf(since)) : new Set());
    const plan = sw.plan as WindowPlan;
    const { rows } = await client.query<HourlyAttacks>(
      `with per_hour as (
         select hour, sum(attacks)::float8 as attacks from (
           select period as hour, attacks from attack_totals where ${totalsSql([], completeHoursOf(plan))}
           union all
           ${rawRowsSql(sw, plan, 'hour, attacks')}
         ) r group by hour)
       select s.hour, coalesce(p.attacks, 0) as attacks
       from generate_series(date_trunc('hour', ${sw.w}, 'UTC'), date_trunc('hour', ${timestampLiteral(now)}, 'UTC'), interval '1 hour') as s(hour)
       left join per_hour p on p.hour = s.hour order by s.hour`,
    );
    return rows;
  });
}

export async function queryStats(pool: pg.Pool, now: Date, hours: number, { rollups = true }: RollupOption = {}): Promise<StatsDocument> {
  const since = new Date(now.getTime() - hours * HOUR);
  const row = await inSnapshot(pool, async (client) => {
    const sw = statsWindow(since, rollups ? await completeHours(client, hourOf(since)) : undefined);
    const { rows } = await client.query<Omit<StatsDocument, 'generated_at' | 'window_hours'>>(statsSql(sw, hours));
    return rows[0];
  });
  if (!row) throw new Error('stats query returned no row');
  return { generated_at: now.toISOString(), window_hours: hours, ...row };
}
