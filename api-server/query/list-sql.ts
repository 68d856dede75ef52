// From validated endpoint parameters to SQL over `addresses` (docs/data-model.md "Classification within a
// window"): the classification rules as SQL, held to their reference in classify/classification.ts by a
// property test. Pure. Everything is rendered as literals, not bind parameters, because the txt path runs the
// query inside COPY, which takes none; every value is either a vocabulary member or a timestamp we made,
// and is quoted anyway.
import { NEVER_BLOCK, NEVER_BLOCK_RANGES } from '../../common/never-block.ts';
import { SERVICES, normalizeProvince, type AddressType, type Isp, type Level, type Net, type Precision, type Service, type Source } from '../../common/vocabulary.ts';

/** Which "last seen" decides whether an address is in the window. */
export type WindowBasis = 'any' | 'honeypot' | 'telescope';

export interface ListFilter {
  /** The instant the list describes (query/lists.ts listInstant): which exclusions are in force. */
  asOf: Date;
  /** Window start W: an address is in the window when its relevant last-seen is >= W. */
  since: Date;
  basis: WindowBasis;
  type?: AddressType;
  service?: Service;
  /** Minimum level ("X or worse"). */
  level?: Level;
  precision?: Precision;
  net?: Net;
  isp?: Isp;
  province?: string;
  includeResearch: boolean;
}

function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

export function timestampLiteral(at: Date): string {
  return `${quoteLiteral(at.toISOString())}::timestamptz`;
}

/** The IPv4 never-block ranges (common/never-block.ts) as merged, sorted [first, last] address numbers. */
function neverBlockV4(): [number, number][] {
  const flat = NEVER_BLOCK_RANGES.v4;
  return Array.from({ length: flat.length / 2 }, (_, i): [number, number] => [flat[2 * i] as number, flat[2 * i + 1] as number]);
}

/** Per first octet: 0 when no range touches that /8, 1 when ranges cover all of it, 2 when part of it. */
function octetClasses(ranges: [number, number][]): number[] {
  const classes = new Array<number>(256).fill(0);
  for (const [first, last] of ranges) {
    for (let octet = Math.floor(first / 2 ** 24); octet <= Math.floor(last / 2 ** 24); octet++) {
      const whole = first <= octet * 2 ** 24 && last >= (octet + 1) * 2 ** 24 - 1;
      classes[octet] = whole ? 1 : Math.max(classes[octet] ?? 0, 2);
    }
  }
  return classes;
}

/** SQL true when the number `x` lies in one of the sorted ranges: a binary search. */
function inRangesSql(x: string, ranges: [number, number][]): string {
  if (ranges.length === 1) {
    const [[first, last]] = ranges as [[number, number]];
    return `(${x} between ${first} and ${last})`;
  }
  const mid = Math.floor(ranges.length / 2);
  return `(case when ${x} < ${ranges[mid]?.[0]} then ${inRangesSql(x, ranges.slice(0, mid))} else ${inRangesSql(x, ranges.slice(mid))} end)`;
}

const NEVER_BLOCK_V4 = neverBlockV4();
const OCTET_CLASSES_SQL = `'{${octetClasses(NEVER_BLOCK_V4).join(',')}}'::int2[]`;
const NEVER_BLOCK_V6_SQL = `'{${NEVER_BLOCK.filter((r) => r.includes(':')).join(',')}}'::inet[]`;

/**
 * True when the address in `column` may be published: outside the never-block table (RFC 6890 space that is
 * not globally reachable), the one the controller removes from every feed. Ingest is to drop such sources;
 * the API leaves them out as well, whatever the store holds (docs/http-api.md "Which addresses").
 *
 * Lists evaluate it for every address they select, so IPv4 takes the cheap way: the address as a number, its
 * first octet's class, and only in the five partly reserved /8s a search of the ranges. CPU per address
 * selected, over 1,000,000: ~48 ns this way, ~70 ns with the search alone, ~190 ns with `<<= any(...)`.
 */
export function publishableSql(column: string): string {
  const x = `(${column} - '0.0.0.0'::inet)`;
  const v4 = `(case (${OCTET_CLASSES_SQL})[(${x} >> 24)::int + 1] when 0 then false when 1 then true else ${inRangesSql(x, NEVER_BLOCK_V4)} end)`;
  return `not (case when family(${column}) = 4 then ${v4} else ${column} <<= any(${NEVER_BLOCK_V6_SQL}) end)`;
}

/**
 * Every exclusion in force at `at` (docs/data-model.md "Exclusions") as one multirange of addresses: an
 * uncorrelated subquery, so PostgreSQL computes it once per statement, and testing an address is a binary
 * search in it. Over 1,000,000 addresses and 1,000 exclusions that costs about what the rest of the row's
 * conditions cost; `exists (select 1 from exclusions where network >>= ip ...)` probed the GiST index once
 * per address and took 15 times as long as the whole export (make bench-export).
 */
function excludedSpansSql(at: Date): string {
  return `(select coalesce(range_agg(e.span), '{}') from exclusions e
    where e.removed_at is null and (e.until is null or e.until > ${timestampLiteral(at)}))`;
}

/**
 * The guard of every list: true when the address in `column` may be listed at instant `at`. It is publishable
 * (outside the never-block table) and no exclusion of the operator's covers it. Lists, exports, scan lists
 * and the check (check.ts) all apply this one function.
 */
export function listableSql(column: string, at: Date): string {
  return `${publishableSql(column)}
  and not (${column} <@ ${excludedSpansSql(at)})`;
}

/** A Postgres text[] literal of the service names, indexed like addresses.service_last. */
const SERVICE_ARRAY_SQL = `array[${SERVICES.map(quoteLiteral).join(',')}]::text[]`;

/** 3 = critical, 2 = high, 1 = medium, within the window starting at `w` (a SQL expression). */
function severitySql(w: string): string {
  return `case when a.last_critical >= ${w} then 3
    when a.last_high >= ${w} or (select count(*) from unnest(a.service_last) s where s >= ${w}) >= 3 then 2
    else 1 end`;
}

const LEVEL_RANK: Record<Level, number> = { medium: 1, high: 2, critical: 3 };

/**
 * The conditions (joined with `and`) a filter puts on an address row `a`, besides the guard every list shares
 * (listableSql): the window and the filters. whereSql is the two together; the check evaluates them apart, the
 * guard once and these per list.
 */
export function selectionSql(f: ListFilter): string {
  const w = timestampLiteral(f.since);
  const conds: string[] = [];
  conds.push(
    f.basis === 'honeypot' ? `a.last_honeypot >= ${w}` : f.basis === 'telescope' ? `a.last_telescope >= ${w}` : `a.last_seen >= ${w}`,
  );
  switch (f.type) {
    case 'research_scanner':
    case 'asset_scanner':
      conds.push(`a.scanner_kind = ${quoteLiteral(f.type)}`);
      break;
    case 'attacker':
      conds.push(`a.scanner_kind is null and a.last_interaction >= ${w}`);
      break;
    case 'scanner':
      conds.push(`a.scanner_kind is null and (a.last_interaction is null or a.last_interaction < ${w})`);
      break;
    case undefined:
      break;
  }
  if (f.type !== 'research_scanner' && !f.includeResearch) conds.push(`a.scanner_kind is distinct from 'research_scanner'`);
  if (f.service) conds.push(`a.service_last[${SERVICES.indexOf(f.service) + 1}] >= ${w}`);
  if (f.level === 'critical') conds.push(`a.last_critical >= ${w}`);
  else if (f.level && LEVEL_RANK[f.level] > 1) conds.push(`${severitySql(w)} >= ${LEVEL_RANK[f.level]}`);
  if (f.precision === 'high') conds.push(`a.confirmed_at >= ${w}`);
  if (f.net) conds.push(`a.net = ${quoteLiteral(f.net)}`);
  if (f.isp) conds.push(`a.isp = ${quoteLiteral(f.isp)}`);
  if (f.province) conds.push(`a.province = ${quoteLiteral(normalizeProvince(f.province) ?? f.province)}`);
  return conds.join('\n  and ');
}

/** The WHERE conditions selecting the addresses a filter asks for: its selection, under the lists' guard. */
export function whereSql(f: ListFilter): string {
  return `${selectionSql(f)}\n  and ${listableSql('a.ip', f.asOf)}`;
}

/**
 * The matching addresses, at most `limit`: when more match, the most severe and then most recent are kept.
 * The result is always in address order. `select` lists the output columns over alias `a`.
 */
function matching(f: ListFilter, limit: number | undefined, truncate: boolean): string {
  const where = whereSql(f);
  if (!truncate || limit === undefined) return `(select a.* from addresses a where ${where}) a`;
  const w = timestampLiteral(f.since);
  return `(select a.* from addresses a where ${where}
    order by ${severitySql(w)} desc, a.last_seen desc, a.ip limit ${limit}) a`;
}

/** `select count(*)` that stops counting at `cap` (so "more than a million" costs no more than a million). */
export function cappedCountSql(f: ListFilter, cap: number): string {
  return `select count(*)::int as n from (select 1 from addresses a where ${whereSql(f)} limit ${cap}) x`;
}

/** One address per row, for COPY ... TO STDOUT (text format: exactly one address a line). */
export function addressesSql(f: ListFilter, limit?: number, truncate = false): string {
  return `select host(a.ip) from ${matching(f, limit, truncate)} order by a.ip`;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`;

/** A row of recordsSql: an address with its classification, activity and enrichment within the window. */
export interface AddressRecord {
  ip: string;
  /** ISO 8601 UTC. */
  first_seen: string;
  last_seen: string;
  attacks: number;
  type: AddressType;
  level: Level;
  precision: Precision;
  sources: Source[];
  services: Service[];
  ports: number[];
  country: string | null;
  province: string | null;
  isp: Isp | null;
  net: Net | null;
  asn: number | null;
}

/** An address row's type, level and precision within the window starting at `since`, as SQL expressions over `a`. */
export function classificationSql(since: Date): { type: string; level: string; precision: string } {
  const w = timestampLiteral(since);
  return {
    type: `coalesce(a.scanner_kind, case when a.last_interaction >= ${w} then 'attacker' else 'scanner' end)`,
    level: `(array['medium','high','critical'])[${severitySql(w)}]`,
    precision: `case when a.confirmed_at >= ${w} then 'high' else 'standard' end`,
  };
}

/**
 * The rollup rows a record's attacks and ports are counted over: every ip_hourly row from the start of the
 * hour containing the window start (query/rollups.ts answers the same rows from coarser rollups).
 */
export function hourlyRowsSql(since: Date): string {
  return `select ip, attacks, ports from ip_hourly where hour >= date_trunc('hour', ${timestampLiteral(since)}, 'UTC')`;
}

/**
 * Full records (json, csv): classification in the window plus attacks and ports summed over `rows`, the
 * window's rollup rows (ip, attacks, ports).
 */
export function recordsSql(f: ListFilter, limit?: number, truncate = false, rows = hourlyRowsSql(f.since)): string {
  const w = timestampLiteral(f.since);
  const classified = classificationSql(f.since);
  return `select host(a.ip) as ip,
    to_char(a.first_seen at time zone 'UTC', ${ISO}) as first_seen,
    to_char(a.last_seen at time zone 'UTC', ${ISO}) as last_seen,
    coalesce(h.attacks, 0)::int as attacks,
    ${classified.type} as type,
    ${classified.level} as level,
    ${classified.precision} as precision,
    array_remove(array[case when a.last_honeypot >= ${w} then 'honeypot' end,
                       case when a.last_telescope >= ${w} then 'telescope' end], null) as sources,
    array(select (${SERVICE_ARRAY_SQL})[i] from generate_subscripts(a.service_last, 1) i
          where a.service_last[i] >= ${w} order by i) as services,
    coalesce(p.ports, '{}') as ports,
    a.country::text as country, a.province, a.isp, a.net, a.asn
  from ${matching(f, limit, truncate)}
  left join (select ip, sum(attacks) as attacks from (${rows}) w group by ip) h on h.ip = a.ip
  left join (select ip, array_agg(distinct port order by port) as ports
             from (${rows}) w, unnest(ports) as port group by ip) p on p.ip = a.ip
  order by a.ip`;
}
