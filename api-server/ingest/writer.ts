// Stores parsed events in bulk (docs/data-model.md "Ingest path"): COPY into temporary staging tables, then
// one statement inserts the new events (ON CONFLICT DO NOTHING, so re-ingesting adds nothing) and feeds only
// the rows actually inserted into the ip_hourly and addresses upserts. One transaction per batch; batches
// from concurrent writers (CLI and HTTP) are serialised by an advisory lock, so their upserts never deadlock.
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { SERVICES } from '../../common/vocabulary.ts';
import type { Enricher } from '../enrich/enricher.ts';
import { copyNumber, copyText } from './copy-text.ts';
import type { AttackEvent } from './event.ts';

const INGEST_LOCK = 0x626c6b66; // "blkf"

const STAGING = `
create temp table if not exists staging_events (
  ts_ms bigint, id uuid, src_ip inet, dst_port integer, service text, proto text, source text, sensor text,
  action smallint, username text, command text
) on commit delete rows;
create temp table if not exists staging_addresses (
  ip inet, country char(2), province text, city text, carrier text, isp text, asn integer, as_name text,
  net text, scanner_kind text, scanner_org text
) on commit delete rows;`;

const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
const SERVICE_ARRAY = `array[${SERVICES.map(lit).join(', ')}]::text[]`;
const SERVICE_LAST = `array[${SERVICES.map((s) => `max(ts) filter (where service = ${lit(s)})`).join(', ')}]`;
const SENSOR_MERGE = (column: 'id' | 'last') => `(
      select array_agg(${column} order by last desc, id) from (
        select id, max(last) as last
        from unnest(addresses.sensor_ids || excluded.sensor_ids, addresses.sensor_last || excluded.sensor_last) as u(id, last)
        group by id order by max(last) desc, id limit 8) as merged)`;

/** The statement that moves one staged batch into events, ip_hourly and addresses. Exported for tests. */
export const STORE_BATCH = `
with new_events as (
  insert into events (ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command)
  select timestamptz 'epoch' + ts_ms * interval '1 millisecond', id, src_ip, dst_port, service, proto, source, sensor,
         action, username, command
  from staging_events
  on conflict do nothing
  returning ts, src_ip, dst_port, service, source, sensor, action
),
tagged as (
  select e.*, s.id as sensor_id,
         coalesce(1 << (array_position(${SERVICE_ARRAY}, e.service) - 1), 0) as service_bit,
         case e.source when 'honeypot' then 1 else 2 end as source_bit
  from new_events e join sensors s on s.name = e.sensor
),
hourly as (
  insert into ip_hourly as h (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
  select date_bin('1 hour', ts, timestamptz '2000-01-01 00:00:00+00'), src_ip, count(*), bit_or(service_bit), bit_or(source_bit),
         max(action),
         coalesce((array_agg(distinct dst_port) filter (where dst_port is not null))[1:32], '{}'),
         array_agg(distinct sensor_id), min(ts), max(ts)
  from tagged
  group by 1, 2
  on conflict (hour, ip) do update set
    attacks = h.attacks + excluded.attacks,
    services = h.services | excluded.services,
    sources = h.sources | excluded.sources,
    max_action = greatest(h.max_action, excluded.max_action),
    ports = (select coalesce(array_agg(p order by p), '{}')
             from (select distinct p from unnest(h.ports || excluded.ports) as p order by p limit 32) as d),
    sensors = (select array_agg(distinct s order by s) from unnest(h.sensors || excluded.sensors) as s),
    first_seen = least(h.first_seen, excluded.first_seen),
    last_seen = greatest(h.last_seen, excluded.last_seen)
  returning 1
),
per_sensor as (
  select src_ip, sensor_id, max(ts) as last from tagged group by 1, 2
),
sensor_arrays as (
  select src_ip, (array_agg(sensor_id order by last desc, sensor_id))[1:8] as ids,
         (array_agg(last order by last desc, sensor_id))[1:8] as lasts
  from per_sensor group by 1
),
per_ip as (
  select src_ip, min(ts) as first_seen, max(ts) as last_seen,
         max(ts) filter (where source = 'honeypot') as last_honeypot,
         max(ts) filter (where source = 'telescope') as last_telescope,
         max(ts) filter (where source = 'honeypot' and action >= 1) as last_interaction,
         max(ts) filter (where action >= 1) as last_high,
         max(ts) filter (where action = 2) as last_critical,
         ${SERVICE_LAST} as service_last
  from tagged group by 1
),
upserted as (
  insert into addresses (ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high,
                         last_critical, service_last, sensor_ids, sensor_last, country, province, city, carrier, isp, asn,
                         as_name, net, scanner_kind, scanner_org)
  select p.src_ip, p.first_seen, p.last_seen, p.last_honeypot, p.last_telescope, p.last_interaction, p.last_high,
         p.last_critical, p.service_last, sa.ids, sa.lasts, a.country, a.province, a.city, a.carrier, a.isp, a.asn,
         a.as_name, a.net, a.scanner_kind, a.scanner_org
  from per_ip p
  join sensor_arrays sa on sa.src_ip = p.src_ip
  left join staging_addresses a on a.ip = p.src_ip
  on conflict (ip) do update set
    first_seen = least(addresses.first_seen, excluded.first_seen),
    last_seen = greatest(addresses.last_seen, excluded.last_seen),
    last_honeypot = greatest(addresses.last_honeypot, excluded.last_honeypot),
    last_telescope = greatest(addresses.last_telescope, excluded.last_telescope),
    last_interaction = greatest(addresses.last_interaction, excluded.last_interaction),
    last_high = greatest(addresses.last_high, excluded.last_high),
    last_critical = greatest(addresses.last_critical, excluded.last_critical),
    service_last = (select array_agg(greatest(o, n) order by i)
                    from unnest(addresses.service_last, excluded.service_last) with ordinality as u(o, n, i)),
    sensor_ids = ${SENSOR_MERGE('id')},
    sensor_last = ${SENSOR_MERGE('last')}
  returning 1
)
select (select count(*) from new_events)::integer as inserted,
       (select count(*) from upserted)::integer as addresses`;

function eventRow(e: AttackEvent): string {
  return `${e.ts}\t${e.id}\t${e.src.text}\t${copyNumber(e.dstPort)}\t${copyText(e.service)}\t${copyText(e.proto)}\t${e.source}\t${copyText(e.sensor)}\t${e.action}\t${copyText(e.username)}\t${copyText(e.command)}\n`;
}

/** Joins rows into ~256 KiB strings: few, large writes into the COPY stream. */
function* chunks<T>(items: Iterable<T>, row: (item: T) => string): Generator<string> {
  let buf = '';
  for (const item of items) {
    buf += row(item);
    if (buf.length > 262_144) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

async function copyInto(client: pg.PoolClient, sql: string, rows: Iterable<string>): Promise<void> {
  await pipeline(Readable.from(rows), client.query(copyFrom(sql)));
}

/** UTC day (YYYY-MM-DD) of a time in ms. */
const dayOf = (ms: number) => new Date(ms - (ms % 86_400_000)).toISOString().slice(0, 10);

export interface BatchResult {
  /** Events newly stored (duplicates of stored events are not counted). */
  inserted: number;
}

export class EventWriter {
  private readonly pool: pg.Pool;
  private readonly enricher: Enricher;
  private readonly prepared = new WeakSet<pg.PoolClient>();

  constructor(pool: pg.Pool, enricher: Enricher) {
    this.pool = pool;
    this.enricher = enricher;
  }

  async write(events: readonly AttackEvent[]): Promise<BatchResult> {
    if (events.length === 0) return { inserted: 0 };
    const days = new Set<string>();
    const sensors = new Set<string>();
    const addresses = new Map<string, AttackEvent['src']>();
    let lastDay = -1;
    for (const e of events) {
      const day = Math.floor(e.ts / 86_400_000);
      if (day !== lastDay) {
        days.add(dayOf(e.ts));
        lastDay = day;
      }
      sensors.add(e.sensor);
      if (!addresses.has(e.src.text)) addresses.set(e.src.text, e.src);
    }
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      if (!this.prepared.has(client)) {
        await client.query(STAGING);
        this.prepared.add(client);
      }
      await client.query('begin');
      try {
        await client.query('select pg_advisory_xact_lock($1)', [INGEST_LOCK]);
        await client.query('select ensure_attack_partitions(d, d) from unnest($1::date[]) as d', [[...days]]);
        await client.query('insert into sensors (name) select unnest($1::text[]) on conflict (name) do nothing', [[...sensors]]);
        await copyInto(client, 'copy staging_events from stdin', chunks(events, eventRow));
        await copyInto(client, 'copy staging_addresses from stdin', chunks(addresses.values(), (a) => this.addressRow(a)));
        const { rows } = await client.query<{ inserted: number }>(STORE_BATCH);
        await client.query('commit');
        return { inserted: rows[0]?.inserted ?? 0 };
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw err;
      }
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      // A connection that failed mid-batch (e.g. a COPY cut short) is closed rather than reused.
      client.release(failure);
    }
  }

  private addressRow(a: AttackEvent['src']): string {
    const x = this.enricher.enrich(a);
    return `${a.text}\t${copyText(x.country)}\t${copyText(x.province)}\t${copyText(x.city)}\t${copyText(x.carrier)}\t${copyText(x.isp)}\t${copyNumber(x.asn)}\t${copyText(x.asName)}\t${x.net}\t${copyText(x.scannerKind)}\t${copyText(x.scannerOrg)}\n`;
  }
}
