// Stores parsed events in bulk (docs/data-model.md "Ingest path"). Per batch, in one transaction:
//   1. COPY the batch's rollup (per hour and address; per address, folded in as the events were parsed — see
//      batch.ts) into two small temporary staging tables — optimistically, as if every event were new;
//   2. store the events, skipping those already stored (so re-ingesting adds nothing), and count the rows
//      actually inserted. A batch is usually all new, so it is first COPYed straight into `events` (in the
//      order it arrived); a duplicate key aborts that COPY (inside a savepoint) and the batch goes the general
//      way: COPY into a staging table, then INSERT ... ON CONFLICT DO NOTHING;
//   3. take the ingest advisory lock;
//   4. only inserted rows may count: when some were already stored, the inserted ones are identified by this
//      transaction's xmin, read back and rolled up again;
//   5. one statement upserts the rollup into ip_hourly (additive) and addresses (greatest() of timestamps).
// Concurrent writers (the CLI's two connections, the HTTP route) thus store their events side by side — one
// batch's events COPY runs while the previous batch upserts its rollup — and upsert one at a time, so their
// upserts never deadlock on each other's rows. Only writers storing the same new events at the same moment can
// wait on each other's rows; if that ever closes a cycle, PostgreSQL aborts one of them and it is retried.
// Missing daily partitions are created before the batch's transaction, in one of their own.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Enricher, Enrichment } from '../enrich/enricher.ts';
import { parseAddress, type Address } from '../enrich/address.ts';
import type { Service, Source } from '../../common/vocabulary.ts';
import { batchOf, EVENT_COLUMNS, type EventBatch } from './batch.ts';
import { BinaryCopyWriter } from './copy-binary.ts';
import type { Action, AttackEvent } from './event.ts';
import { MAX_PORTS, MAX_SENSORS, recentSensors, rollUp, type AddressRow, type HourlyRow, type Rollup, type RollupEvent } from './rollup.ts';

const INGEST_LOCK = 0x626c6b66; // "blkf"
/** Serialises the creation of partitions (a short transaction of its own, holding no other lock). */
const PARTITION_LOCK = 0x626c6b70; // "blkp"
/** Attempts at a batch that PostgreSQL aborted to break a deadlock (40P01). */
const DEADLOCK_ATTEMPTS = 5;

// Temporary tables live in per-session local buffers (temp_buffers, 8 MB by default); a large batch
// needs more, or every COPY spills to disk. The setting only takes effect before the session's first use of
// a temporary table, which is what this statement is.
const STAGING = `
set temp_buffers = '128MB';
create temp table if not exists staging_events (
  ts timestamptz, id uuid, src_ip inet, dst_port integer, service text, proto text, source text, sensor text,
  action smallint, username text, command text
) on commit delete rows;
create temp table if not exists staging_hourly (
  hour timestamptz, ip inet, attacks integer, services integer, sources smallint, max_action smallint,
  ports integer[], sensors integer[], first_seen timestamptz, last_seen timestamptz
) on commit delete rows;
create temp table if not exists staging_addresses (
  ip inet, first_seen timestamptz, last_seen timestamptz, last_honeypot timestamptz, last_telescope timestamptz,
  last_interaction timestamptz, last_high timestamptz, last_critical timestamptz, service_last timestamptz[],
  sensor_ids integer[], sensor_last timestamptz[],
  country char(2), province text, city text, carrier text, isp text, asn integer, as_name text, net text,
  scanner_kind text, scanner_org text
) on commit delete rows;`;

const INSERT_EVENTS = `
insert into events (ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command)
select ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command
from staging_events
on conflict do nothing`;

/**
 * What a rollup needs of the staged rows this transaction inserted (used only when some staged rows were
 * already stored). A semi-join: an event staged twice was inserted once and is read once.
 */
const INSERTED_BY_US = `
select (extract(epoch from e.ts) * 1000)::float8 as ts, host(e.src_ip) as src, e.dst_port, e.service, e.source, e.sensor, e.action
from events e
where (e.ts, e.id) in (select ts, id from staging_events) and e.xmin = pg_current_xact_id()::xid`;

const SENSOR_MERGE = (column: 'id' | 'last') => `(
      select array_agg(${column} order by last desc, id) from (
        select id, max(last) as last
        from unnest(a.sensor_ids || excluded.sensor_ids, a.sensor_last || excluded.sensor_last) as u(id, last)
        group by id order by max(last) desc, id limit ${MAX_SENSORS}) as merged)`;
// The common case: the address's most recent sensor saw it again, later. Only its time changes.
const SAME_SENSOR_AGAIN = `cardinality(excluded.sensor_ids) = 1 and a.sensor_ids[1] = excluded.sensor_ids[1]
      and excluded.sensor_last[1] >= a.sensor_last[1]`;

const UPSERT_ROLLUPS = `
with hourly as (
  insert into ip_hourly as h (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
  select hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen from staging_hourly
  on conflict (hour, ip) do update set
    attacks = h.attacks + excluded.attacks,
    services = h.services | excluded.services,
    sources = h.sources | excluded.sources,
    max_action = greatest(h.max_action, excluded.max_action),
    ports = case when excluded.ports <@ h.ports then h.ports else (
      select coalesce(array_agg(p order by p), '{}')
      from (select distinct p from unnest(h.ports || excluded.ports) as p order by p limit ${MAX_PORTS}) as d) end,
    sensors = case when excluded.sensors <@ h.sensors then h.sensors else (
      select array_agg(distinct s order by s) from unnest(h.sensors || excluded.sensors) as s) end,
    first_seen = least(h.first_seen, excluded.first_seen),
    last_seen = greatest(h.last_seen, excluded.last_seen)
  returning 1
)
insert into addresses as a (ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high,
                            last_critical, service_last, sensor_ids, sensor_last, country, province, city, carrier, isp,
                            asn, as_name, net, scanner_kind, scanner_org)
select ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high, last_critical, service_last,
       sensor_ids, sensor_last, country, province, city, carrier, isp, asn, as_name, net, scanner_kind, scanner_org
from staging_addresses
on conflict (ip) do update set
  first_seen = least(a.first_seen, excluded.first_seen),
  last_seen = greatest(a.last_seen, excluded.last_seen),
  last_honeypot = greatest(a.last_honeypot, excluded.last_honeypot),
  last_telescope = greatest(a.last_telescope, excluded.last_telescope),
  last_interaction = greatest(a.last_interaction, excluded.last_interaction),
  last_high = greatest(a.last_high, excluded.last_high),
  last_critical = greatest(a.last_critical, excluded.last_critical),
  service_last = (select array_agg(greatest(o, n) order by i)
                  from unnest(a.service_last, excluded.service_last) with ordinality as u(o, n, i)),
  sensor_ids = case when ${SAME_SENSOR_AGAIN} then a.sensor_ids else ${SENSOR_MERGE('id')} end,
  sensor_last = case when ${SAME_SENSOR_AGAIN} then array[excluded.sensor_last[1]] || a.sensor_last[2:] else ${SENSOR_MERGE('last')} end`;

async function copyInto(client: pg.PoolClient, sql: string, rows: Buffer): Promise<void> {
  await pipeline(Readable.from([rows]), client.query(copyFrom(sql)));
}

interface InsertedRow {
  ts: number;
  src: string;
  dst_port: number | null;
  service: Service | null;
  source: Source;
  sensor: string;
  action: Action;
}

const DAY = 86_400_000;
// Addresses whose enrichment columns are remembered: two generations of at most this many each.
const ENRICHED_REMEMBERED = 50_000;

/**
 * The enrichment columns of addresses seen lately, encoded (copy-binary.ts) as a latin1 string: an address
 * recurs in batch after batch, and the lookups and their encoding need doing once per run, not once per batch.
 * Bounded like the Cowrie parser's sessions: when the young generation fills, the old one is dropped whole. The
 * tables do not change while a process runs, so remembered columns are what a fresh lookup would give.
 */
class EnrichedColumns {
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  private readonly enricher: Enricher;
  private readonly scratch = new BinaryCopyWriter(1024);

  constructor(enricher: Enricher) {
    this.enricher = enricher;
  }

  of(address: AddressRow['address']): string {
    const key = address.text;
    let columns = this.young.get(key);
    if (columns !== undefined) return columns;
    columns = this.old.get(key) ?? this.encode(this.enricher.enrich(address));
    if (this.young.size >= ENRICHED_REMEMBERED) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, columns);
    return columns;
  }

  private encode(x: Enrichment): string {
    const out = this.scratch;
    out.clear();
    out.text(x.country);
    out.text(x.province);
    out.text(x.city);
    out.text(x.carrier);
    out.text(x.isp);
    out.int32(x.asn);
    out.text(x.asName);
    out.text(x.net);
    out.text(x.scannerKind);
    out.text(x.scannerOrg);
    return out.fieldsWritten();
  }
}

export interface BatchResult {
  /** Events newly stored (duplicates of stored events are not counted). */
  inserted: number;
}

export class EventWriter {
  private readonly pool: pg.Pool;
  private readonly enriched: EnrichedColumns;
  /** Reusable buffers for the staging COPYs (one per batch being stored). */
  private readonly spareWriters: BinaryCopyWriter[] = [];
  private readonly prepared = new WeakSet<pg.PoolClient>();
  private readonly sensorIds = new Map<string, number>();
  private readonly ensuredDays = new Set<number>();

  constructor(pool: pg.Pool, enricher: Enricher) {
    this.pool = pool;
    this.enriched = new EnrichedColumns(enricher);
  }

  async write(events: readonly AttackEvent[]): Promise<BatchResult> {
    return this.writeBatch(batchOf(events));
  }

  async writeBatch(batch: EventBatch): Promise<BatchResult> {
    if (batch.count === 0) return { inserted: 0 };
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.tryBatch(batch);
      } catch (err) {
        if ((err as { code?: string }).code !== '40P01' || attempt >= DEADLOCK_ATTEMPTS) throw err;
      }
    }
  }

  private async tryBatch(batch: EventBatch): Promise<BatchResult> {
    const unknownSensors = [...batch.sensors].filter((name) => !this.sensorIds.has(name));
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      if (!this.prepared.has(client)) {
        await client.query(STAGING);
        this.prepared.add(client);
      }
      if (unknownSensors.length) await this.resolveSensors(client, unknownSensors);
      await this.ensurePartitions(client, batch.days);
      await client.query('begin');
      try {
        // Staging and the events COPY need no lock (temporary tables are per session; other writers' events
        // are other rows), so they overlap with another writer's upsert. The rollup is staged optimistically,
        // as if the whole batch were new.
        await this.stageRollup(client, batch.rollup);
        const inserted = await this.insertEvents(client, batch);
        if (inserted > 0) {
          await client.query('select pg_advisory_xact_lock($1)', [INGEST_LOCK]);
          if (inserted < batch.count) {
            await client.query('truncate staging_hourly, staging_addresses');
            await this.stageRollup(client, rollUp(await this.insertedByUs(client)));
          }
          await client.query(UPSERT_ROLLUPS);
        }
        await client.query('commit');
        return { inserted };
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

  /**
   * Creates missing daily partitions, in a transaction of its own that holds only the partition lock (so it
   * waits for writers inserting into `events` without any of them waiting for it). Days this writer already
   * ensured are skipped unless they are old enough for retention to have dropped them since.
   */
  private async ensurePartitions(client: pg.PoolClient, days: Set<number>): Promise<void> {
    const recent = Math.floor(Date.now() / DAY) - 25;
    const needed = [...days].filter((d) => d < recent || !this.ensuredDays.has(d));
    if (!needed.length) return;
    const dayList = needed.map((d) => new Date(d * DAY).toISOString().slice(0, 10));
    await client.query('begin');
    try {
      await client.query('select pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
      await client.query('select ensure_attack_partitions(d, d) from unnest($1::date[]) as d', [dayList]);
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
    for (const d of needed) if (d >= recent) this.ensuredDays.add(d);
  }

  /** Stores the events that are not stored yet; returns how many that was. */
  private async insertEvents(client: pg.PoolClient, batch: EventBatch): Promise<number> {
    await client.query('savepoint direct_copy');
    try {
      await copyInto(client, `copy events (${EVENT_COLUMNS}) from stdin with (format binary)`, batch.rows());
      await client.query('release savepoint direct_copy');
      return batch.count;
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
      // Back in the top-level transaction, so the rows inserted next carry its xid (see INSERTED_BY_US).
      await client.query('rollback to savepoint direct_copy; release savepoint direct_copy');
    }
    await copyInto(client, `copy staging_events (${EVENT_COLUMNS}) from stdin with (format binary)`, batch.rows());
    const { rowCount } = await client.query(INSERT_EVENTS);
    return rowCount ?? 0;
  }

  private async resolveSensors(client: pg.PoolClient, names: string[]): Promise<void> {
    await client.query('insert into sensors (name) select unnest($1::text[]) on conflict (name) do nothing', [names]);
    const { rows } = await client.query<{ id: number; name: string }>('select id, name from sensors where name = any($1::text[])', [names]);
    for (const r of rows) this.sensorIds.set(r.name, r.id);
  }

  private async insertedByUs(client: pg.PoolClient): Promise<RollupEvent[]> {
    const { rows } = await client.query<InsertedRow>(INSERTED_BY_US);
    return rows.map((r) => ({
      ts: r.ts,
      src: parseAddress(r.src) as RollupEvent['src'],
      dstPort: r.dst_port,
      service: r.service,
      source: r.source,
      sensor: r.sensor,
      action: r.action,
    }));
  }

  private async stageRollup(client: pg.PoolClient, rollup: Rollup): Promise<void> {
    const sensorId = (name: string) => this.sensorIds.get(name) as number;
    const out = this.spareWriters.pop() ?? new BinaryCopyWriter();
    try {
      for (const a of rollup.addresses.values()) for (const h of a.hours) hourlyRow(out, h, a.address, sensorId);
      await copyInto(client, 'copy staging_hourly from stdin with (format binary)', out.stream());
      out.clear();
      for (const a of rollup.addresses.values()) addressRow(out, a, sensorId, this.enriched.of(a.address));
      await copyInto(client, 'copy staging_addresses from stdin with (format binary)', out.stream());
    } finally {
      out.clear();
      this.spareWriters.push(out);
    }
  }
}

/** A row of staging_hourly. */
function hourlyRow(out: BinaryCopyWriter, h: HourlyRow, address: Address, sensorId: (name: string) => number): void {
  out.row(10);
  out.timestamp(h.hour);
  out.inet(address);
  out.int32(h.attacks);
  out.int32(h.services);
  out.int16(h.sources);
  out.int16(h.maxAction);
  out.int32Array(h.ports);
  out.idArray(h.sensors, sensorId);
  out.timestamp(h.firstSeen);
  out.timestamp(h.lastSeen);
}

/** A row of staging_addresses; `enrichment` is its last eleven columns, encoded (EnrichedColumns). */
function addressRow(out: BinaryCopyWriter, a: AddressRow, sensorId: (name: string) => number, enrichment: string): void {
  out.row(21);
  out.inet(a.address);
  out.timestamp(a.firstSeen);
  out.timestamp(a.lastSeen);
  out.timestamp(a.lastHoneypot);
  out.timestamp(a.lastTelescope);
  out.timestamp(a.lastInteraction);
  out.timestamp(a.lastHigh);
  out.timestamp(a.lastCritical);
  out.timestampArray(a.serviceLast);
  if (a.sensorNames.length === 1) {
    // The common case: one sensor saw the address in this batch.
    out.idArray(a.sensorNames, sensorId);
    out.timestampArray(a.sensorTimes);
  } else {
    const sensors = recentSensors(a, sensorId);
    out.int32Array(sensors.map((s) => s[0]));
    out.timestampArray(sensors.map((s) => s[1]));
  }
  out.raw(enrichment);
}
