// Stores parsed events in bulk, in windows: one transaction each, holding the attack-data lock from its first
// batch to its commit, so the windows of all writers (CLI, HTTP route, other replicas) follow one another and
// never wait on each other's rows. What happens per batch and per window, and why: docs/data-model.md "Ingest".
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { SERVICES } from '../../common/vocabulary.ts';
import { ATTACK_DATA_LOCK } from '../store/locks.ts';
import type { Enricher } from '../enrich/enricher.ts';
import { AddressFacts, MAX_SENSORS } from './address-facts.ts';
import { EventBatch, EVENT_COLUMNS } from './batch.ts';
import { BinaryCopyWriter } from './copy-binary.ts';
import type { AttackEvent } from './event.ts';
import { MAX_PORTS, type HourlyRows } from './hourly.ts';
import { SensorNames } from './sensors.ts';

/** Attempts at a window of in-memory events that PostgreSQL aborted to break a deadlock (40P01). */
const DEADLOCK_ATTEMPTS = 5;
const DAY = 86_400_000;

// Temporary tables live in per-session local buffers (temp_buffers, 8 MB by default); a large batch needs
// more, or every COPY spills to disk. The setting only takes effect before the session's first use of a
// temporary table, which is what this statement is.
const STAGING = `
set temp_buffers = '128MB';
create temp table if not exists staging_events (like events) on commit delete rows;
create temp table if not exists staging_addresses (like addresses including defaults) on commit delete rows;`;

const SERVICE_ARRAY = `array[${SERVICES.map((s) => `'${s}'`).join(', ')}]::text[]`;

/**
 * The general way (docs/data-model.md): inserts the staged events not stored yet and appends the ip_hourly
 * rows of exactly those (the same rows hourly.ts computes: distinct ports ascending, the MAX_PORTS smallest;
 * sensor ids ascending).
 */
const INSERT_NEW_EVENTS = `
with inserted as (
  insert into events (${EVENT_COLUMNS})
  select ${EVENT_COLUMNS} from staging_events
  on conflict do nothing
  returning ts, src_ip, dst_port, service, source, sensor, action
), hourly as (
  insert into ip_hourly (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
  select date_bin('1 hour', i.ts, timestamptz 'epoch'), i.src_ip, count(*),
         coalesce(bit_or(1 << (array_position(${SERVICE_ARRAY}, i.service) - 1)), 0),
         bit_or(case i.source when 'honeypot' then 1 else 2 end),
         max(i.action),
         coalesce((array_agg(distinct i.dst_port order by i.dst_port) filter (where i.dst_port is not null))[1:${MAX_PORTS}], '{}'),
         array_agg(distinct s.id order by s.id),
         min(i.ts), max(i.ts)
  from inserted i join sensors s on s.name = i.sensor
  group by 1, 2
  returning 1
)
select count(*)::int as inserted from inserted`;

/** country … scanner_org: the last columns of an address row. */
const ENRICHMENT_COLUMNS = 10;
const ADDRESS_COLUMNS = `ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high, last_critical,
  service_last, sensor_ids, sensor_last, country, province, city, carrier, isp, asn, as_name, net, scanner_kind, scanner_org`;

/** Both sensor lists merged: each sensor's later sighting, the MAX_SENSORS most recent, newest first. */
const SENSOR_LISTS = `(sensor_ids, sensor_last) = (
    select array_agg(id order by last desc, id), array_agg(last order by last desc, id)
    from (
      select id, max(last) as last
      from unnest(a.sensor_ids || s.sensor_ids, a.sensor_last || s.sensor_last) as u(id, last)
      group by id order by max(last) desc, id limit ${MAX_SENSORS}) as merged)`;

/**
 * Known addresses take the later of each fact (greatest() ignores NULL); new ones are never staged (see
 * KNOWN_ADDRESSES). Sequential scans are off because right after a bulk load the statistics can claim the
 * table is empty, and the planner then scans it once per staged row instead of probing the primary key.
 */
const UPDATE_KNOWN_ADDRESSES = `
set local enable_seqscan = off;
update addresses a set
  first_seen = least(a.first_seen, s.first_seen),
  last_seen = greatest(a.last_seen, s.last_seen),
  last_honeypot = greatest(a.last_honeypot, s.last_honeypot),
  last_telescope = greatest(a.last_telescope, s.last_telescope),
  last_interaction = greatest(a.last_interaction, s.last_interaction),
  last_high = greatest(a.last_high, s.last_high),
  last_critical = greatest(a.last_critical, s.last_critical),
  service_last = array[${SERVICES.map((_, i) => `greatest(a.service_last[${i + 1}], s.service_last[${i + 1}])`).join(', ')}],
  ${SENSOR_LISTS}
from staging_addresses s
where a.ip = s.ip;
reset enable_seqscan;`;

/**
 * Which of the given addresses are stored already: their 1-based positions. Asked under the attack-data lock,
 * so no other writer adds addresses before the window commits.
 */
const KNOWN_ADDRESSES = `select i::int as i from unnest($1::inet[]) with ordinality as u(ip, i)
  where exists (select 1 from addresses a where a.ip = u.ip)`;

const HOURLY_COLUMNS = 'hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen';

/**
 * The instant (ms) up to which events get ids without their connection, as the events stored before ids
 * counted connections have (migration 0008); undefined when there is none (ParserOptions.legacyIdsUntil).
 */
export async function legacyIdsUntil(pool: pg.Pool): Promise<number | undefined> {
  const { rows } = await pool.query<{ value: number }>("select value from instance_settings where key = 'event_ids_legacy_until'");
  return rows[0]?.value;
}

async function copyInto(client: pg.PoolClient, sql: string, rows: Buffer): Promise<void> {
  await pipeline(Readable.from([rows]), client.query(copyFrom(sql)));
}

export class EventWriter {
  readonly sensors = new SensorNames();
  /** Encodes the rows of ip_hourly and addresses; one window at a time uses it (they take turns). */
  readonly encoder = new BinaryCopyWriter();
  /** The enrichment tables, loaded when a window first needs them (its commit), not before. */
  readonly enricher: () => Enricher;
  private readonly pool: pg.Pool;
  private readonly prepared = new WeakSet<pg.PoolClient>();
  /** The last window opened: the next one starts its transaction once this one has ended. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(pool: pg.Pool, enricher: () => Enricher) {
    this.pool = pool;
    this.enricher = enricher;
  }

  /** A new window; its transaction begins with its first batch, after the writer's previous window ended. */
  window(): IngestWindow {
    const window = new IngestWindow(this, this.last);
    this.last = window.ended;
    return window;
  }

  /** Stores `events` in a window of their own (the demo, tests); resolves with how many were new. */
  async write(events: readonly AttackEvent[]): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const window = this.window();
      const batch = new EventBatch(window.facts, this.sensors);
      try {
        for (const e of events) batch.add(e);
        if (batch.count) await window.store(batch);
        return await window.commit();
      } catch (err) {
        await window.abort();
        // Only a deadlock with a transaction that does not take the attack-data lock is worth another try.
        if ((err as { code?: string }).code !== '40P01' || attempt >= DEADLOCK_ATTEMPTS) throw err;
      }
    }
  }

  /** @internal a connection for a window, with the staging tables made */
  async connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    if (!this.prepared.has(client)) {
      try {
        await client.query(STAGING);
      } catch (err) {
        // Not handed to a window, so no window releases it: given back here, and closed (it failed).
        client.release(err as Error);
        throw err;
      }
      this.prepared.add(client);
    }
    return client;
  }
}

/**
 * One transaction of a writer: batches are stored into it one after another (`store`), then `commit` writes
 * the window's address facts. A window is used by one caller at a time.
 */
export class IngestWindow {
  readonly facts = new AddressFacts();
  /** Resolves (never rejects) when the window has committed or rolled back. */
  readonly ended: Promise<void>;
  /** Events newly stored so far. */
  inserted = 0;
  private readonly writer: EventWriter;
  private readonly previous: Promise<unknown>;
  /** A local sensor number's sensors.id (for the rows of ip_hourly and addresses). */
  private readonly dbId = (local: number) => this.writer.sensors.dbId(local);
  private client: pg.PoolClient | undefined;
  private failed: Error | undefined;
  private done = false;
  private end!: () => void;
  // After a batch held duplicates, the next ones are likely to (a file ingested again): they go the general
  // way at once, until one turns out all new.
  private direct = true;
  /** Sensor names this window registered, to forget if it rolls back. */
  private readonly newSensors: string[] = [];
  /** Days this window ensured the partitions of, and so appended ip_hourly rows to (compaction merges them). */
  private readonly days = new Set<number>();

  constructor(writer: EventWriter, previous: Promise<unknown>) {
    this.writer = writer;
    this.previous = previous;
    this.ended = new Promise((resolve) => (this.end = resolve));
  }

  /** Stores a batch's events and ip_hourly rows. Resolves with the events newly stored. */
  async store(batch: EventBatch): Promise<number> {
    try {
      const client = await this.begin();
      await this.registerSensors(client);
      await this.ensurePartitions(client, batch.days);
      const inserted = await this.insertEvents(client, batch);
      await this.lookUpNewAddresses(client);
      this.inserted += inserted;
      return inserted;
    } catch (err) {
      this.failed ??= err as Error;
      throw err;
    }
  }

  /** Writes the window's address facts and commits; resolves with the events newly stored by the window. */
  async commit(): Promise<number> {
    if (this.failed) throw this.failed;
    const client = this.client;
    if (client === undefined) {
      this.finish();
      return 0;
    }
    try {
      await this.lookUpNewAddresses(client);
      await this.mergeAddresses(client);
      await client.query('insert into ip_hourly_dirty (day) select unnest($1::date[]) on conflict do nothing', [[...this.days].map(dayText)]);
      await client.query('commit');
    } catch (err) {
      this.failed ??= err as Error;
      await this.abort();
      throw err;
    }
    this.finish();
    return this.inserted;
  }

  /** Rolls back (after a failure, or to give up); safe to call more than once. */
  async abort(): Promise<void> {
    if (this.done) return;
    if (this.client) {
      await this.client.query('rollback').catch(() => undefined);
      for (const name of this.newSensors) this.writer.sensors.register(name, -1);
    }
    this.finish(this.failed);
  }

  private finish(failure?: Error): void {
    if (this.done) return;
    this.done = true;
    // A connection that failed mid-window (e.g. a COPY cut short) is closed rather than reused.
    this.client?.release(failure);
    this.client = undefined;
    this.end();
  }

  private async begin(): Promise<pg.PoolClient> {
    if (this.failed) throw this.failed;
    if (this.client) return this.client;
    await this.previous;
    this.client = await this.writer.connect();
    await this.client.query(`begin; select pg_advisory_xact_lock(${ATTACK_DATA_LOCK})`);
    return this.client;
  }

  private async registerSensors(client: pg.PoolClient): Promise<void> {
    const names = this.writer.sensors.unregistered();
    if (!names.length) return;
    await client.query('insert into sensors (name) select unnest($1::text[]) on conflict (name) do nothing', [names]);
    const { rows } = await client.query<{ id: number; name: string }>('select id, name from sensors where name = any($1::text[])', [names]);
    for (const r of rows) this.writer.sensors.register(r.name, r.id);
    this.newSensors.push(...names);
  }

  private async ensurePartitions(client: pg.PoolClient, days: Set<number>): Promise<void> {
    const needed = [...days].filter((d) => !this.days.has(d));
    if (!needed.length) return;
    await client.query('select ensure_attack_partitions(d, d) from unnest($1::date[]) as d', [needed.map(dayText)]);
    for (const d of needed) this.days.add(d);
  }

  /** Stores the batch's events that are not stored yet, with their ip_hourly rows; returns how many that was. */
  private async insertEvents(client: pg.PoolClient, batch: EventBatch): Promise<number> {
    if (this.direct) {
      await client.query('savepoint direct_copy');
      try {
        await copyInto(client, `copy events (${EVENT_COLUMNS}) from stdin with (format binary)`, batch.rows());
        await client.query('release savepoint direct_copy');
        if (batch.hourly.count) {
          const out = this.writer.encoder;
          out.clear();
          encodeHourly(out, batch.hourly, this.facts, this.dbId);
          await copyInto(client, `copy ip_hourly (${HOURLY_COLUMNS}) from stdin with (format binary)`, out.stream());
        }
        return batch.count;
      } catch (err) {
        if ((err as { code?: string }).code !== '23505') throw err;
        await client.query('rollback to savepoint direct_copy; release savepoint direct_copy');
      }
    }
    await copyInto(client, `copy staging_events (${EVENT_COLUMNS}) from stdin with (format binary)`, batch.rows());
    const { rows } = await client.query<{ inserted: number }>(INSERT_NEW_EVENTS);
    await client.query('truncate staging_events');
    const inserted = rows[0]?.inserted ?? 0;
    this.direct = inserted === batch.count;
    return inserted;
  }

  /** Marks which of the addresses met since the last look-up are in `addresses` already. */
  private async lookUpNewAddresses(client: pg.PoolClient): Promise<void> {
    const facts = this.facts;
    const from = facts.checked;
    if (from === facts.size) return;
    const texts = Array.from({ length: facts.size - from }, (_, i) => facts.address(from + i).text);
    facts.checked = facts.size;
    const { rows } = await client.query<{ i: number }>(KNOWN_ADDRESSES, [texts]);
    for (const { i } of rows) facts.known[from + i - 1] = 1;
  }

  /** Writes the window's address facts: new addresses inserted (with their enrichment), known ones updated. */
  private async mergeAddresses(client: pg.PoolClient): Promise<void> {
    const facts = this.facts;
    const out = this.writer.encoder;
    out.clear();
    const enricher = this.writer.enricher();
    for (let slot = 0; slot < facts.size; slot++) if (facts.known[slot] === 0) encodeNewAddress(out, facts, slot, this.dbId, enricher);
    if (!out.empty) await copyInto(client, `copy addresses (${ADDRESS_COLUMNS}) from stdin with (format binary)`, out.stream());
    out.clear();
    // A known address keeps its enrichment (the update does not read those columns): no lookup for it.
    for (let slot = 0; slot < facts.size; slot++) {
      if (facts.known[slot] === 0) continue;
      encodeFacts(out, facts, slot, this.dbId);
      for (let c = 0; c < ENRICHMENT_COLUMNS; c++) out.null();
    }
    if (out.empty) return;
    await copyInto(client, `copy staging_addresses (${ADDRESS_COLUMNS}) from stdin with (format binary)`, out.stream());
    await client.query(UPDATE_KNOWN_ADDRESSES);
  }
}

/** A new address's row: its facts, then its enrichment. */
function encodeNewAddress(out: BinaryCopyWriter, facts: AddressFacts, slot: number, dbId: (local: number) => number, enricher: Enricher): void {
  encodeFacts(out, facts, slot, dbId);
  const x = enricher.enrich(facts.address(slot));
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
}

function encodeAddress(out: BinaryCopyWriter, facts: AddressFacts, slot: number): void {
  if (facts.isV4(slot)) out.inet4(facts.v4(slot));
  else out.inet(facts.address(slot));
}

/**
 * The activity columns of an address row (ip … sensor_last), its sensors ordered in place as `addresses` keeps
 * them (local numbers become sensors.id). A function of its own, as is every loop over rows here: V8 then
 * optimizes it as a whole.
 */
function encodeFacts(out: BinaryCopyWriter, facts: AddressFacts, slot: number, dbId: (local: number) => number): void {
  out.row(21);
  encodeAddress(out, facts, slot);
  out.timestamp(facts.firstSeen[slot] as number);
  out.timestamp(facts.lastSeen[slot] as number);
  out.timestamp(orNull(facts.lastHoneypot[slot] as number));
  out.timestamp(orNull(facts.lastTelescope[slot] as number));
  out.timestamp(orNull(facts.lastInteraction[slot] as number));
  out.timestamp(orNull(facts.lastHigh[slot] as number));
  out.timestamp(orNull(facts.lastCritical[slot] as number));
  out.timestampArray(facts.serviceLast, slot * SERVICES.length, SERVICES.length);
  const sensorCount = facts.orderSensors(slot, dbId);
  out.int4Array(facts.sensorLocal, slot * MAX_SENSORS, sensorCount);
  out.timestampArray(facts.sensorTime, slot * MAX_SENSORS, sensorCount);
}

/** A batch's ip_hourly rows, in the column order of HOURLY_COLUMNS. */
function encodeHourly(out: BinaryCopyWriter, hourly: HourlyRows, facts: AddressFacts, dbId: (local: number) => number): void {
  for (let r = 0; r < hourly.count; r++) {
    const slot = hourly.slot[r] as number;
    out.row(10);
    out.timestamp(hourly.hour[r] as number);
    encodeAddress(out, facts, slot);
    out.int32(hourly.attacks[r] as number);
    out.int32(hourly.services[r] as number);
    out.int16(hourly.sources[r] as number);
    out.int16(hourly.maxAction[r] as number);
    out.int4Array(hourly.ports, r * MAX_PORTS, hourly.portCount[r]);
    out.int4Array((hourly.sensors[r] as number[]).slice(0, hourly.sensorCount[r]).map(dbId).sort((a, b) => a - b));
    out.timestamp(hourly.firstSeen[r] as number);
    out.timestamp(hourly.lastSeen[r] as number);
  }
}

const dayText = (day: number) => new Date(day * DAY).toISOString().slice(0, 10);
const orNull = (t: number): number | null => (t === 0 ? null : t);
