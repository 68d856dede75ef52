// Stores parsed events in bulk (docs/data-model.md "Ingest path"). Events are stored in windows: one
// transaction each, holding the attack-data lock from its first batch to its commit, so windows of all
// writers (CLI, HTTP route, other replicas) follow one another and never wait on each other's rows.
//
// Per batch (some thousands of events):
//   1. register new sensor names and create missing daily partitions (inside the window's transaction);
//   2. store the events, skipping those stored already (re-ingesting adds nothing). A batch is usually all
//      new, so it is COPYed straight into `events` inside a savepoint; a duplicate key aborts that, and the
//      batch goes the general way: COPY into a staging table, then one statement inserts what is new and
//      appends the ip_hourly rows of exactly those events;
//   3. on the direct way, append the batch's ip_hourly rows (computed while parsing) with one COPY.
//   4. look up which of the addresses first met in the window are in `addresses` already (index probes that
//      run while the next batch is parsed).
// At the window's end:
//   5. its per-address facts (AddressFacts, folded while parsing) are sent as they are encoded: the new
//      addresses COPYed straight into `addresses`, the known ones into a staging table that updates them;
//      commit.
// Duplicates may be folded into the facts: every fact is a maximum, so a stored event changes nothing.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setImmediate } from 'node:timers/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { SERVICES } from '../../common/vocabulary.ts';
import { ATTACK_DATA_LOCK } from '../db/locks.ts';
import type { Enricher, Enrichment } from '../enrich/enricher.ts';
import { AddressFacts, MAX_SENSORS } from './address-facts.ts';
import { EventBatch, EVENT_COLUMNS } from './batch.ts';
import { BinaryCopyWriter } from './copy-binary.ts';
import type { AttackEvent } from './event.ts';
import { MAX_PORTS, type HourlyRows } from './hourly.ts';
import { SensorNames } from './sensors.ts';

/** Attempts at a window of in-memory events that PostgreSQL aborted to break a deadlock (40P01). */
const DEADLOCK_ATTEMPTS = 5;
const DAY = 86_400_000;

// Temporary tables live in per-session local buffers (temp_buffers, 8 MB by default); a large batch
// needs more, or every COPY spills to disk. The setting only takes effect before the session's first use of
// a temporary table, which is what this statement is.
const STAGING = `
set temp_buffers = '128MB';
create temp table if not exists staging_events (
  ts timestamptz, id uuid, src_ip inet, dst_port integer, service text, proto text, source text, sensor text,
  action smallint, username text, command text
) on commit delete rows;
create temp table if not exists staging_addresses (
  ip inet, first_seen timestamptz, last_seen timestamptz, last_honeypot timestamptz, last_telescope timestamptz,
  last_interaction timestamptz, last_high timestamptz, last_critical timestamptz, service_last timestamptz[],
  sensor_ids integer[], sensor_last timestamptz[],
  country char(2), province text, city text, carrier text, isp text, asn integer, as_name text, net text,
  scanner_kind text, scanner_org text
) on commit delete rows;`;

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

/** country … scanner_org: the last columns of an address row (EnrichedColumns encodes them). */
const ENRICHMENT_COLUMNS = 10;
const ADDRESS_COLUMNS = `ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high, last_critical,
  service_last, sensor_ids, sensor_last, country, province, city, carrier, isp, asn, as_name, net, scanner_kind, scanner_org`;

// The common case: the address's most recent sensor saw it again, later. Only its time changes.
const SAME_SENSOR_AGAIN = `cardinality(s.sensor_ids) = 1 and a.sensor_ids[1] = s.sensor_ids[1]
      and s.sensor_last[1] >= a.sensor_last[1]`;
/**
 * Both sensor lists in one sub-select (merged once per row, not once per column: ~5% of the update). In the
 * common case its filter is false before any row is unnested, the aggregates are NULL, and the lists come
 * from `coalesce`. (A comparison with a missing element is NULL: not the common case, as in a CASE.)
 */
const SENSOR_LISTS = `(sensor_ids, sensor_last) = (
    select coalesce(m.ids, a.sensor_ids), coalesce(m.lasts, array[s.sensor_last[1]] || a.sensor_last[2:])
    from (
      select array_agg(id order by last desc, id) as ids, array_agg(last order by last desc, id) as lasts
      from (
        select id, max(last) as last
        from unnest(a.sensor_ids || s.sensor_ids, a.sensor_last || s.sensor_last) as u(id, last)
        where not coalesce(${SAME_SENSOR_AGAIN}, false)
        group by id order by max(last) desc, id limit ${MAX_SENSORS}) as merged) as m)`;

/**
 * Known addresses take the later of each fact (greatest() ignores NULL). The rows are staged first; new
 * addresses never are: the writer knows them (see KNOWN_ADDRESSES) and COPYs them straight into `addresses`.
 *
 * The join to `addresses` is by its primary key. Right after a bulk load or a truncate the table's statistics
 * can claim it is nearly empty, and the planner then scans all of it once per staged row (seen: minutes
 * instead of a second); with sequential scans off it looks each address up in the index.
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
 * Which of the given addresses (IPv4 as numbers, IPv6 as text) are stored already: their 1-based positions.
 * Asked under the attack-data lock, so no other writer adds addresses before the window commits.
 */
const KNOWN_ADDRESSES = `
select i::int as i from unnest($1::int8[]) with ordinality as u(n, i)
where exists (select 1 from addresses a where a.ip = '0.0.0.0'::inet + u.n)
union all
select -(i::int) from unnest($2::text[]) with ordinality as u(t, i)
where exists (select 1 from addresses a where a.ip = u.t::inet)`;

async function copyInto(client: pg.PoolClient, sql: string, rows: Buffer): Promise<void> {
  await pipeline(Readable.from([rows]), client.query(copyFrom(sql)));
}

/** Rows per piece of a COPY sent while it is encoded. */
const PIECE_ROWS = 4096;

/**
 * A binary COPY of `rows` (encoded one by one by `encode` into `out`), sent in pieces as they are encoded, so
 * that PostgreSQL stores the first rows while the later ones are being encoded.
 */
async function copyEncoded(client: pg.PoolClient, sql: string, out: BinaryCopyWriter, rows: Iterable<number>, encode: (row: number) => void): Promise<void> {
  out.clear();
  const pieces = (async function* () {
    let n = 0;
    for (const row of rows) {
      encode(row);
      if (++n % PIECE_ROWS === 0) {
        yield out.takeChunk();
        // A turn of the event loop, for the socket to take the piece.
        await setImmediate();
      }
    }
    yield out.takeChunk();
    yield BinaryCopyWriter.TRAILER;
  })();
  await pipeline(pieces, client.query(copyFrom(sql)));
}

// Addresses whose enrichment columns are remembered: two generations of at most this many each.
const ENRICHED_REMEMBERED = 50_000;

/**
 * Enrichment columns, encoded (copy-binary.ts) as a latin1 string, remembered by what names them (Enricher
 * keyV4): the ~80,000 addresses of a million Cowrie events have ~10,000 distinct enrichments, and encoding
 * each once instead of per address takes ~0.25 s off the end of such an ingest. Bounded without per-entry
 * cost: when the young generation fills, the old one is dropped whole. The tables do not change while a
 * process runs, so remembered columns are what a fresh lookup would give.
 */
class EnrichedColumns {
  private young = new Map<number | string, string>();
  private old = new Map<number | string, string>();
  private readonly load: () => Enricher;
  private enricher: Enricher | undefined;
  private readonly scratch = new BinaryCopyWriter(1024);

  constructor(load: () => Enricher) {
    this.load = load;
  }

  /** The lookup tables (loaded on first use: only a window's commit needs them). */
  tables(): Enricher {
    return (this.enricher ??= this.load());
  }

  of(facts: AddressFacts, slot: number): string {
    const enricher = this.tables();
    // IPv4 addresses by what names their enrichment (many share one), IPv6 ones by their text.
    const key = (facts.isV4(slot) ? enricher.keyV4(facts.v4(slot)) : undefined) ?? facts.address(slot).text;
    let columns = this.young.get(key);
    if (columns !== undefined) return columns;
    columns = this.old.get(key) ?? this.encode(enricher.enrich(facts.address(slot)));
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
  readonly sensors = new SensorNames();
  private readonly pool: pg.Pool | Promise<pg.Pool>;
  private readonly enriched: EnrichedColumns;
  private readonly spareFacts: AddressFacts[] = [];
  private readonly spareWriters: BinaryCopyWriter[] = [];
  private readonly spareBatches: EventBatch[] = [];
  private readonly prepared = new WeakSet<pg.PoolClient>();
  /** Days whose partitions exist (created by a committed window); recent ones only, as retention drops old ones. */
  readonly ensuredDays = new Set<number>();
  /** The last window opened: the next one starts its transaction once this one has ended. */
  private last: Promise<unknown> = Promise.resolve();

  /**
   * `pool` may still be opening (the CLI's worker parses its first batch meanwhile): the first store waits
   * for it, and fails with it. `enricher` is called when the enrichment tables are first needed (`idle`, or
   * a window's commit), and not before: loading them takes tens of milliseconds.
   */
  constructor(pool: pg.Pool | Promise<pg.Pool>, enricher: () => Enricher) {
    this.pool = pool;
    this.enriched = new EnrichedColumns(enricher);
  }

  /**
   * For a caller about to wait for the database: the writer's deferred set-up (the enrichment tables) is
   * done now, in time that would otherwise be idle, rather than at the start or in a commit.
   */
  idle(): void {
    this.enriched.tables();
  }

  /** A new window; its transaction begins with its first batch, after the writer's previous window ended. */
  window(): IngestWindow {
    const previous = this.last;
    const window = new IngestWindow(this, this.spareFacts.pop() ?? new AddressFacts(), previous);
    this.last = window.ended;
    return window;
  }

  /** Stores `events` in a window of their own (the demo, tests). */
  async write(events: readonly AttackEvent[]): Promise<BatchResult> {
    for (let attempt = 1; ; attempt++) {
      const window = this.window();
      const batch = window.batch();
      try {
        for (const e of events) batch.add(e);
        if (batch.count) await window.store(batch);
        return { inserted: await window.commit() };
      } catch (err) {
        await window.abort();
        // Only a deadlock with a transaction that does not take the attack-data lock is worth another try.
        if ((err as { code?: string }).code !== '40P01' || attempt >= DEADLOCK_ATTEMPTS) throw err;
      } finally {
        window.release(batch);
      }
    }
  }

  /** @internal the pieces a window borrows */
  async connect(): Promise<pg.PoolClient> {
    return (await this.pool).connect();
  }

  /** @internal */
  async prepare(client: pg.PoolClient): Promise<void> {
    if (this.prepared.has(client)) return;
    await client.query(STAGING);
    this.prepared.add(client);
  }

  /** @internal a batch (recycled) folding into `facts` */
  batchFor(facts: AddressFacts): EventBatch {
    const batch = this.spareBatches.pop() ?? new EventBatch(facts, this.sensors);
    batch.foldInto(facts);
    return batch;
  }

  /** @internal */
  releaseBatch(batch: EventBatch): void {
    batch.clear();
    // A few are enough: one being filled, one being stored, one for a window that is committing.
    if (this.spareBatches.length < 3) this.spareBatches.push(batch);
  }

  /** @internal */
  encoder(): BinaryCopyWriter {
    return this.spareWriters.pop() ?? new BinaryCopyWriter();
  }

  /** @internal */
  returnEncoder(out: BinaryCopyWriter): void {
    out.clear();
    this.spareWriters.push(out);
  }

  /** @internal */
  returnFacts(facts: AddressFacts): void {
    facts.clear();
    this.spareFacts.push(facts);
  }

  /** @internal encoded enrichment of a slot's address */
  enrichment(facts: AddressFacts, slot: number): string {
    return this.enriched.of(facts, slot);
  }
}

/**
 * One transaction of a writer: batches are stored into it one after another (`store`), then `commit` writes
 * the window's address facts. A window is used by one caller at a time.
 */
export class IngestWindow {
  readonly facts: AddressFacts;
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
  /** Sensor names and days this window registered or created, to forget if it rolls back. */
  private readonly newSensors: string[] = [];
  private readonly newDays = new Set<number>();
  /** Days this window appended ip_hourly rows to (compaction merges them later). */
  private readonly touchedDays = new Set<number>();

  constructor(writer: EventWriter, facts: AddressFacts, previous: Promise<unknown>) {
    this.writer = writer;
    this.facts = facts;
    this.previous = previous;
    this.ended = new Promise((resolve) => (this.end = resolve));
  }

  /** An empty batch folding into this window. */
  batch(): EventBatch {
    return this.writer.batchFor(this.facts);
  }

  /** Gives a batch back to the writer for reuse (by this window or another). */
  release(batch: EventBatch): void {
    this.writer.releaseBatch(batch);
  }

  /** Stores a batch's events and ip_hourly rows. Resolves with the events newly stored. */
  async store(batch: EventBatch): Promise<number> {
    const client = await this.begin();
    try {
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
    if (this.client === undefined) {
      this.finish();
      return 0;
    }
    const client = this.client;
    try {
      await this.mergeAddresses(client);
      await client.query('insert into ip_hourly_dirty (day) select unnest($1::date[]) on conflict do nothing', [[...this.touchedDays].map(dayText)]);
      await client.query('commit');
    } catch (err) {
      this.failed ??= err as Error;
      await this.abort();
      throw err;
    }
    const recent = firstSafeDay();
    for (const day of this.newDays) if (day >= recent) this.writer.ensuredDays.add(day);
    this.finish();
    return this.inserted;
  }

  /** Rolls back (after a failure, or to give up); safe to call more than once. */
  async abort(): Promise<void> {
    if (this.done) return;
    const client = this.client;
    if (client) {
      await client.query('rollback').catch(() => undefined);
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
    this.writer.returnFacts(this.facts);
    this.end();
  }

  private async begin(): Promise<pg.PoolClient> {
    if (this.failed) throw this.failed;
    if (this.client) return this.client;
    await this.previous;
    const client = await this.writer.connect();
    this.client = client;
    await this.writer.prepare(client);
    await client.query(`begin; select pg_advisory_xact_lock(${ATTACK_DATA_LOCK})`);
    return client;
  }

  private async registerSensors(client: pg.PoolClient): Promise<void> {
    const names = this.writer.sensors.unregistered();
    if (!names.length) return;
    await client.query('insert into sensors (name) select unnest($1::text[]) on conflict (name) do nothing', [names]);
    const { rows } = await client.query<{ id: number; name: string }>('select id, name from sensors where name = any($1::text[])', [names]);
    for (const r of rows) this.writer.sensors.register(r.name, r.id);
    this.newSensors.push(...names);
  }

  /** Creates the missing daily partitions; days this writer ensured are skipped unless retention may have dropped them. */
  private async ensurePartitions(client: pg.PoolClient, days: Set<number>): Promise<void> {
    const recent = firstSafeDay();
    for (const d of days) this.touchedDays.add(d);
    const needed = [...days].filter((d) => (d < recent || !this.writer.ensuredDays.has(d)) && !this.newDays.has(d));
    if (!needed.length) return;
    await client.query('select ensure_attack_partitions(d, d) from unnest($1::date[]) as d', [needed.map(dayText)]);
    for (const d of needed) this.newDays.add(d);
  }

  /** Stores the batch's events that are not stored yet, with their ip_hourly rows; returns how many that was. */
  private async insertEvents(client: pg.PoolClient, batch: EventBatch): Promise<number> {
    if (this.direct) {
      await client.query('savepoint direct_copy');
      try {
        for (const [day, rows] of batch.rowsByDay()) {
          await copyInto(client, `copy ${partitionOf(day)} (${EVENT_COLUMNS}) from stdin with (format binary)`, rows);
        }
        await client.query('release savepoint direct_copy');
        await this.appendHourly(client, batch.hourly);
        return batch.count;
      } catch (err) {
        if ((err as { code?: string }).code !== '23505') throw err;
        await client.query('rollback to savepoint direct_copy; release savepoint direct_copy');
      }
    }
    for (const [, rows] of batch.rowsByDay()) {
      await copyInto(client, `copy staging_events (${EVENT_COLUMNS}) from stdin with (format binary)`, rows);
    }
    const { rows } = await client.query<{ inserted: number }>(INSERT_NEW_EVENTS);
    await client.query('truncate staging_events');
    const inserted = rows[0]?.inserted ?? 0;
    this.direct = inserted === batch.count;
    return inserted;
  }

  private async appendHourly(client: pg.PoolClient, hourly: HourlyRows): Promise<void> {
    if (hourly.count === 0) return;
    const out = this.writer.encoder();
    try {
      encodeHourly(out, hourly, this.facts, this.dbId);
      await copyInto(client, 'copy ip_hourly (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen) from stdin with (format binary)', out.stream());
    } finally {
      this.writer.returnEncoder(out);
    }
  }

  /** Marks which of the addresses met since the last look-up are in `addresses` already. */
  private async lookUpNewAddresses(client: pg.PoolClient): Promise<void> {
    const facts = this.facts;
    const from = facts.checked;
    const to = facts.size;
    if (from === to) return;
    const { v4, v4Slots, v6, v6Slots } = addressesToLookUp(facts, from, to);
    facts.checked = to;
    const { rows } = await client.query<{ i: number }>(KNOWN_ADDRESSES, [v4, v6]);
    for (const { i } of rows) facts.known[i > 0 ? (v4Slots[i - 1] as number) : (v6Slots[-i - 1] as number)] = 1;
  }

  /** Writes the window's address facts: new addresses inserted, known ones updated. */
  private async mergeAddresses(client: pg.PoolClient): Promise<void> {
    const facts = this.facts;
    if (facts.size === 0) return;
    await this.lookUpNewAddresses(client);
    const out = this.writer.encoder();
    // Once the window's last batch is stored, its sensors are ordered in place for the rows (local numbers
    // become sensors.id).
    const encode = (slot: number) => {
      out.row(21);
      if (facts.isV4(slot)) out.inet4(facts.v4(slot));
      else out.inet(facts.address(slot));
      out.timestamp(facts.firstSeen[slot] as number);
      out.timestamp(facts.lastSeen[slot] as number);
      out.timestamp(orNull(facts.lastHoneypot[slot] as number));
      out.timestamp(orNull(facts.lastTelescope[slot] as number));
      out.timestamp(orNull(facts.lastInteraction[slot] as number));
      out.timestamp(orNull(facts.lastHigh[slot] as number));
      out.timestamp(orNull(facts.lastCritical[slot] as number));
      out.timestampArray(facts.serviceLast, slot * SERVICES.length, SERVICES.length, true);
      const sensorCount = facts.orderSensors(slot, this.dbId);
      out.int32Array(facts.sensorLocal, slot * MAX_SENSORS, sensorCount);
      out.timestampArray(facts.sensorTime, slot * MAX_SENSORS, sensorCount);
      // A known address keeps its enrichment (the update does not read these columns): no lookup for it.
      if (facts.known[slot] === 1) for (let c = 0; c < ENRICHMENT_COLUMNS; c++) out.null();
      else out.raw(this.writer.enrichment(facts, slot));
    };
    // In key order: see slotsInAddressOrder.
    const order = facts.slotsInAddressOrder();
    const slots = (known: 0 | 1) =>
      (function* () {
        for (let i = 0; i < order.length; i++) if (facts.known[order[i] as number] === known) yield order[i] as number;
      })();
    let anyKnown = false;
    for (let slot = 0; slot < facts.size && !anyKnown; slot++) anyKnown = facts.known[slot] === 1;
    try {
      await copyEncoded(client, `copy addresses (${ADDRESS_COLUMNS}) from stdin with (format binary)`, out, slots(0), encode);
      if (anyKnown) {
        await copyEncoded(client, 'copy staging_addresses from stdin with (format binary)', out, slots(1), encode);
        await client.query(UPDATE_KNOWN_ADDRESSES);
      }
    } finally {
      this.writer.returnEncoder(out);
    }
  }
}

/**
 * The first UTC day whose partitions retention cannot have dropped since this process saw them made (it
 * keeps 30 days and a margin; 25 leaves room), so that the writer may remember them as existing.
 */
const firstSafeDay = () => Math.floor(Date.now() / DAY) - 25;

/**
 * A batch's ip_hourly rows, in the column order of appendHourly's COPY. A function of its own, as is every
 * loop over rows here: V8 then optimizes it as a whole after a few calls. Inside a longer async method the
 * loop was compiled on its own each call, and the code after it recompiled each time (~10 ms a batch).
 */
function encodeHourly(out: BinaryCopyWriter, hourly: HourlyRows, facts: AddressFacts, dbId: (local: number) => number): void {
  for (let r = 0; r < hourly.count; r++) {
    const slot = hourly.slot[r] as number;
    out.row(10);
    out.timestamp(hourly.hour[r] as number);
    if (facts.isV4(slot)) out.inet4(facts.v4(slot));
    else out.inet(facts.address(slot));
    out.int32(hourly.attacks[r] as number);
    out.int32(hourly.services[r] as number);
    out.int16(hourly.sources[r] as number);
    out.int16(hourly.maxAction[r] as number);
    out.uint16Array(hourly.ports, r * MAX_PORTS, hourly.portCount[r]);
    out.idArray(hourly.sensors[r] as number[], dbId, hourly.sensorCount[r]);
    out.timestamp(hourly.firstSeen[r] as number);
    out.timestamp(hourly.lastSeen[r] as number);
  }
}

/**
 * The addresses of slots [from, to) as KNOWN_ADDRESSES takes them, with their slots. IPv4 ones go as one
 * array literal: pg would quote and escape each of ~80,000 numbers itself. (A function of its own: see
 * encodeHourly.)
 */
function addressesToLookUp(facts: AddressFacts, from: number, to: number): { v4: string; v4Slots: number[]; v6: string[]; v6Slots: number[] } {
  let v4 = '{';
  const v4Slots: number[] = [];
  const v6: string[] = [];
  const v6Slots: number[] = [];
  for (let slot = from; slot < to; slot++) {
    if (facts.isV4(slot)) {
      v4 += v4Slots.length === 0 ? String(facts.v4(slot)) : `,${facts.v4(slot)}`;
      v4Slots.push(slot);
    } else {
      v6.push(facts.address(slot).text);
      v6Slots.push(slot);
    }
  }
  return { v4: `${v4}}`, v4Slots, v6, v6Slots };
}

/** The partition of `events` holding a UTC day (ensure_attack_partitions names them so). */
const partitionOf = (day: number) => `events_${dayText(day).replaceAll('-', '')}`;
const dayText = (day: number) => new Date(day * DAY).toISOString().slice(0, 10);
const orNull = (t: number): number | null => (t === 0 ? null : t);
