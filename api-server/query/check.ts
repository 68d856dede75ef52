// "Is this address listed, and why?" (docs/http-api.md "The check"): for one address, whether each list a
// subscriber can pull holds it at the instant a list would describe, and the facts the lists judge it by.
//
// The check agrees with the lists by construction: every answer "in list L" is the list's own predicate —
// the filter built by query/lists.ts from the endpoint's own parameter schema (its defaults applied), its
// selectionSql and the shared guard listableSql, which whereSql joins for the lists — evaluated on the one
// address row instead of over the table. One statement, so one snapshot: the guard, the lists and the facts
// agree with each other. Nothing here reads events or ip_hourly (neither has an index by address, by design
// of ingest): the facts come from the address's row, found by its primary key.
import type pg from 'pg';
import type { ListEndpoint } from '../../common/list-filters.ts';
import { SERVICES, SOURCES, TYPES, type AddressType, type Level, type Precision, type Service, type Source } from '../../common/vocabulary.ts';
import { DedupParams, ExportParams, ScanExportParams, type QuerySchema } from './endpoint-params.ts';
import { classificationSql, listableSql, publishableSql, selectionSql, timestampLiteral, type ListFilter } from './list-sql.ts';
import { dedupFilter, exportFilter, scanExportFilter } from './lists.ts';
import { parseQuery } from './validate-query.ts';

/** A list a subscriber can pull, as the check names it: the endpoint, its window and (export) its type. */
export interface CheckedList {
  list: ListEndpoint;
  hours: number;
  /** export only: `all` (the default, research platforms left out) or one type. */
  type?: 'all' | AddressType;
}

interface ListSpec extends CheckedList {
  filter(asOf: Date): ListFilter;
}

/** A list's validated query: its parameters with the endpoint's defaults applied, as a request would have them. */
function queryOf<Q>(schema: QuerySchema<Q>, given: Record<string, string>): Q {
  const parsed = parseQuery(schema, given);
  if (!parsed.ok) throw new Error(`check: ${JSON.stringify(given)} is not a valid query: ${parsed.problems.map((p) => p.reason).join('; ')}`);
  return parsed.value as Q;
}

/** The windows a subscriber pulls most: a day, a week and (export, scan-export) the 30 days the store keeps. */
export const CHECK_WINDOWS = [24, 168, 720] as const;
const DEDUP_WINDOWS = [24, 168] as const;

/** Every list the check answers for, in the order it answers. */
export const CHECKED_LISTS: readonly ListSpec[] = [
  ...DEDUP_WINDOWS.map((hours): ListSpec => {
    const q = queryOf(DedupParams, { hours: String(hours) });
    return { list: 'dedup', hours, filter: (asOf) => dedupFilter(q, asOf) };
  }),
  ...(['all', ...TYPES] as const).flatMap((type) =>
    CHECK_WINDOWS.map((hours): ListSpec => {
      const q = queryOf(ExportParams, { hours: String(hours), type });
      return { list: 'export', hours, type, filter: (asOf) => exportFilter(q, asOf) };
    }),
  ),
  ...CHECK_WINDOWS.map((hours): ListSpec => {
    const q = queryOf(ScanExportParams, { hours: String(hours) });
    return { list: 'scan-export', hours, filter: (asOf) => scanExportFilter(q, asOf) };
  }),
];

/** The exclusion that keeps the address out of every list, as the check tells it (not its reason: that is the operator's). */
export interface CheckExclusion {
  network: string;
  since: Date;
  until: Date | null;
  /** `removal-request`: approved from a request made on the website; `operator`: added by the operator. */
  source: 'operator' | 'removal-request';
}

export interface WindowClassification {
  hours: number;
  /** Whether the address was seen in the window at all; the rest is null when not. */
  seen: boolean;
  type: AddressType | null;
  level: Level | null;
  precision: Precision | null;
}

/** What the store knows of an address it has seen (within retention). */
export interface AddressFacts {
  firstSeen: Date;
  lastSeen: Date;
  /** Per capture origin, when it last saw the address. */
  sources: { source: Source; lastSeen: Date }[];
  /** Per service attacked, when last. */
  services: { service: Service; lastSeen: Date }[];
  /** Last honeypot interaction (action ≥ 1), authentication attempt (high) and command or exploit (critical). */
  lastInteraction: Date | null;
  lastAuthentication: Date | null;
  lastCommand: Date | null;
  /** When each of the most recent sensors (at most 8, distinct) last saw it, newest first: precision's evidence. */
  sightings: Date[];
  /** The latest instant it was seen by two sensors, or by both capture origins. */
  confirmedAt: Date | null;
  windows: WindowClassification[];
  country: string | null;
  province: string | null;
  city: string | null;
  carrier: string | null;
  isp: string | null;
  asn: number | null;
  asName: string | null;
  net: string | null;
  scanner: { kind: 'research_scanner' | 'asset_scanner'; org: string | null } | null;
}

export interface AddressCheck {
  ip: string;
  /** The instant the answers describe: the lists' instant (whole minutes). */
  checkedAt: Date;
  /** In at least one of the lists. */
  listed: boolean;
  lists: (CheckedList & { listed: boolean })[];
  /** In never-block space (RFC 6890, not globally reachable): never in any list. */
  neverBlock: boolean;
  excluded: CheckExclusion | null;
  /** null: not seen by the sensors within retention. */
  facts: AddressFacts | null;
}

interface CheckRow {
  seen: boolean;
  publishable: boolean;
  listed: boolean[];
  first_seen: Date | null;
  last_seen: Date | null;
  last_honeypot: Date | null;
  last_telescope: Date | null;
  last_interaction: Date | null;
  last_high: Date | null;
  last_critical: Date | null;
  service_last: (Date | null)[] | null;
  sensor_last: Date[] | null;
  confirmed_at: Date | null;
  window_seen: boolean[];
  window_type: (AddressType | null)[];
  window_level: (Level | null)[];
  window_precision: (Precision | null)[];
  country: string | null;
  province: string | null;
  city: string | null;
  carrier: string | null;
  isp: string | null;
  asn: number | null;
  as_name: string | null;
  net: string | null;
  scanner_kind: 'research_scanner' | 'asset_scanner' | null;
  scanner_org: string | null;
  excluded_network: string | null;
  excluded_since: Date | null;
  excluded_until: Date | null;
  excluded_request: number | null;
}

/**
 * The check's statement for the instant `asOf`; `$1` is the address. The guard of the lists is evaluated once
 * (`g.listable`, on the address asked about; `offset 0` keeps PostgreSQL from copying it into every list's
 * expression, each with its own aggregate of the exclusions) and each list's selection on its row; an address
 * the store has not seen has no row, and is in no list.
 */
function checkSqlAt(asOf: Date): string {
  const at = timestampLiteral(asOf);
  const lists = CHECKED_LISTS.map((l) => `coalesce(g.listable and (${selectionSql(l.filter(asOf))}), false)`);
  const windows = CHECK_WINDOWS.map((hours) => ({ since: new Date(asOf.getTime() - hours * 3_600_000), hours }));
  const inWindow = (since: Date) => `a.last_seen >= ${timestampLiteral(since)}`;
  const perWindow = (pick: (c: ReturnType<typeof classificationSql>) => string) =>
    `array[${windows.map(({ since }) => `case when ${inWindow(since)} then ${pick(classificationSql(since))} end`).join(', ')}]`;
  return `select a.ip is not null as seen, g.publishable,
    array[${lists.join(',\n      ')}] as listed,
    a.first_seen, a.last_seen, a.last_honeypot, a.last_telescope, a.last_interaction, a.last_high, a.last_critical,
    a.service_last, a.sensor_last, a.confirmed_at,
    array[${windows.map(({ since }) => `coalesce(${inWindow(since)}, false)`).join(', ')}] as window_seen,
    ${perWindow((c) => c.type)} as window_type,
    ${perWindow((c) => c.level)} as window_level,
    ${perWindow((c) => c.precision)} as window_precision,
    a.country::text as country, a.province, a.city, a.carrier, a.isp, a.asn, a.as_name, a.net, a.scanner_kind, a.scanner_org,
    x.network::text as excluded_network, x.created_at as excluded_since, x.until as excluded_until, x.removal_request_id as excluded_request
  from (select $1::inet as ip) q
  cross join lateral (select ${publishableSql('q.ip')} as publishable, ${listableSql('q.ip', asOf)} as listable offset 0) g
  left join addresses a on a.ip = q.ip
  left join lateral (select e.network, e.created_at, e.until, e.removal_request_id from exclusions e
    where e.network >>= q.ip and e.removed_at is null and (e.until is null or e.until > ${at})
    order by e.created_at, e.id limit 1) x on true`;
}

/**
 * The statement as the server runs it: `$1` the address, `$2` the instant. The list SQL writes its instants as
 * literals (the lists run inside COPY, which takes no parameters); here they become arithmetic on `$2`, so
 * that the text never changes and each connection prepares it once. Planning it costs PostgreSQL about a
 * millisecond, four times what running it costs (make bench-check). Built at a reference instant whose
 * literals are then replaced; one left over would be a window this list of windows lacks, so it throws.
 */
export const CHECK_SQL = ((): string => {
  const reference = new Date(Date.UTC(2000, 0, 1));
  let sql = checkSqlAt(reference).replaceAll(timestampLiteral(reference), '$2::timestamptz');
  for (const hours of new Set<number>([...DEDUP_WINDOWS, ...CHECK_WINDOWS])) {
    sql = sql.replaceAll(timestampLiteral(new Date(reference.getTime() - hours * 3_600_000)), `($2::timestamptz - interval '${hours} hours')`);
  }
  if (/'(1999|2000)-/.test(sql)) throw new Error('the check statement holds an instant that is not a parameter');
  return sql;
})();

function factsOf(row: CheckRow): AddressFacts | null {
  if (!row.seen || !row.first_seen || !row.last_seen) return null;
  const sources = SOURCES.flatMap((source) => {
    const lastSeen = source === 'honeypot' ? row.last_honeypot : row.last_telescope;
    return lastSeen ? [{ source, lastSeen }] : [];
  });
  const services = SERVICES.flatMap((service, i) => {
    const lastSeen = row.service_last?.[i];
    return lastSeen ? [{ service, lastSeen }] : [];
  });
  return {
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
    sources,
    services,
    lastInteraction: row.last_interaction,
    lastAuthentication: row.last_high,
    lastCommand: row.last_critical,
    sightings: row.sensor_last ?? [],
    confirmedAt: row.confirmed_at,
    windows: CHECK_WINDOWS.map((hours, i) => ({
      hours,
      seen: row.window_seen[i] ?? false,
      type: row.window_type[i] ?? null,
      level: row.window_level[i] ?? null,
      precision: row.window_precision[i] ?? null,
    })),
    country: row.country,
    province: row.province,
    city: row.city,
    carrier: row.carrier,
    isp: row.isp,
    asn: row.asn,
    asName: row.as_name,
    net: row.net,
    scanner: row.scanner_kind ? { kind: row.scanner_kind, org: row.scanner_org } : null,
  };
}

/**
 * Checks one address (as validate-query.ts normalised it: IPv4-mapped IPv6 is IPv4) at `asOf`, the instant a
 * list asked for now would describe (lists.ts listInstant).
 */
export async function checkAddress(pool: pg.Pool, ip: string, asOf: Date): Promise<AddressCheck> {
  const { rows } = await pool.query<CheckRow>({ name: 'blockfeed-check', text: CHECK_SQL, values: [ip, asOf] });
  const row = rows[0];
  if (!row) throw new Error('the check returned no row');
  const lists = CHECKED_LISTS.map(({ list, hours, type }, i) => ({ list, hours, ...(type ? { type } : {}), listed: row.listed[i] ?? false }));
  return {
    ip,
    checkedAt: asOf,
    listed: lists.some((l) => l.listed),
    lists,
    neverBlock: !row.publishable,
    excluded:
      row.excluded_network && row.excluded_since
        ? { network: row.excluded_network, since: row.excluded_since, until: row.excluded_until, source: row.excluded_request === null ? 'operator' : 'removal-request' }
        : null,
    facts: factsOf(row),
  };
}
