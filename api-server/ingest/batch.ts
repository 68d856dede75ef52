// One batch of parsed events on its way to the database, held in the form the database takes it: the events
// as binary `COPY` rows (copy-binary.ts) in a reusable byte buffer, their ip_hourly rows, and — folded into
// the window's AddressFacts as each event arrives — their per-address facts. A batch keeps no per-event
// objects, and the pipeline recycles a fixed few, so memory is bounded by the batch size.
//
// Events arrive two ways: as AttackEvent objects from the general parsers, and as a RawEvent — byte ranges
// of the line itself — from the byte-level reader of the common Cowrie line (formats/cowrie.ts), which
// never makes strings of the fields. Both ways give the same row and the same content-derived id.
import { hash } from 'node:crypto';
import { SERVICE_INDEX, SERVICES } from '../../common/vocabulary.ts';
import { type AddressFacts, HONEYPOT, TELESCOPE } from './address-facts.ts';
import { BinaryCopyWriter } from './copy-binary.ts';
import type { AttackEvent } from './event.ts';
import { HourlyRows } from './hourly.ts';
import type { SensorNames } from './sensors.ts';

const DAY = 86_400_000;
const SEP = 0x1f;
const SERVICE_BYTES = SERVICES.map((s) => Buffer.from(s));
const SOURCE_BYTES = [Buffer.from('honeypot'), Buffer.from('telescope')];
const NO_BYTES = Buffer.alloc(0);

// Every event a byte-level reader gives is a TCP one (Cowrie's SSH and telnet).
const TCP = Buffer.from('tcp');

/**
 * An event as byte ranges of its line plus numbers, filled in place by a byte-level parser (one object reused
 * for every line). Text fields must be valid UTF-8 that needs no cleaning (the parser checks that, or leaves
 * the line to the general path).
 */
export class RawEvent {
  /** The line the ranges below point into. */
  line: Buffer = NO_BYTES;
  ts = 0;
  /** IPv4 source as a number, its canonical text at line[srcStart, srcEnd). */
  src = 0;
  srcStart = 0;
  srcEnd = 0;
  /** Destination port, -1 = none. */
  port = -1;
  /** Index into SERVICES, -1 = none. */
  service = -1;
  source = HONEYPOT;
  /** Local sensor number (SensorNames) and its name's bytes. */
  sensor = 0;
  sensorBytes: Buffer = NO_BYTES;
  sensorStart = 0;
  sensorEnd = 0;
  action = 0;
  /** userBytes[userStart, userEnd), or null when userStart is -1. */
  userBytes: Buffer = NO_BYTES;
  userStart = -1;
  userEnd = -1;
  /** `commandPrefix` + commandBytes[commandStart, commandEnd), or null when commandStart is -1. */
  commandPrefix: Buffer | null = null;
  commandBytes: Buffer = NO_BYTES;
  commandStart = -1;
  commandEnd = -1;
}

export class EventBatch {
  /** Events added (duplicates within the batch included). */
  count = 0;
  /** UTC days (ms / DAY) the events fall on: the partitions they need. */
  readonly days = new Set<number>();
  readonly hourly = new HourlyRows();
  /**
   * The rows by UTC day: each day's go straight into its partition, sparing PostgreSQL the routing of every
   * row through the partitioned table.
   */
  private readonly byDay = new Map<number, BinaryCopyWriter>();
  private readonly spareWriters: BinaryCopyWriter[] = [];
  /** The writer of the day the last event fell on. */
  private out: BinaryCopyWriter;
  private readonly initialBytes: number;
  private facts: AddressFacts;
  private readonly sensors: SensorNames;
  private lastDay = -1;
  // The canonical form of a raw event, hashed for its id.
  private canonical = Buffer.allocUnsafe(1024);
  private canonicalViews: Buffer[] = [];
  /** The last event's time in ms but its last six digits (they change every ~17 minutes), and their digits. */
  private msHigh = -1;
  private readonly msHighDigits = Buffer.alloc(16);
  private msHighLength = 0;

  constructor(facts: AddressFacts, sensors: SensorNames, initialBytes = 1 << 20) {
    this.facts = facts;
    this.sensors = sensors;
    this.initialBytes = initialBytes;
    this.out = new BinaryCopyWriter(initialBytes);
    this.spareWriters.push(this.out);
  }

  /** Folds the events added from now on into `facts` (a new window's). The batch must be empty. */
  foldInto(facts: AddressFacts): void {
    this.facts = facts;
  }

  add(e: AttackEvent): void {
    const slot = this.facts.slotOf(e.src);
    const sensor = this.sensors.local(e.sensor);
    const service = e.service === null ? -1 : (SERVICE_INDEX.get(e.service) as number);
    this.fold(slot, e.ts, e.source === 'honeypot' ? HONEYPOT : TELESCOPE, e.action, service, e.dstPort ?? -1, sensor);
    const out = this.out;
    out.row(11);
    out.timestamp(e.ts);
    out.uuid(e.id);
    out.inet(e.src);
    out.int32(e.dstPort);
    out.text(e.service);
    out.text(e.proto);
    out.text(e.source);
    out.text(e.sensor);
    out.int16(e.action);
    out.text(e.username);
    out.text(e.command);
  }

  addRaw(r: RawEvent): void {
    const slot = this.facts.slotOfV4(r.src);
    this.fold(slot, r.ts, r.source, r.action, r.service, r.port, r.sensor);
    const out = this.out;
    out.row(11);
    out.timestamp(r.ts);
    out.uuidLatin1(this.rawId(r));
    out.inet4(r.src);
    out.int32(r.port < 0 ? null : r.port);
    if (r.service < 0) out.null();
    else out.bytes(SERVICE_BYTES[r.service] as Buffer, 0, (SERVICE_BYTES[r.service] as Buffer).length);
    out.bytes(TCP, 0, TCP.length);
    const source = SOURCE_BYTES[r.source] as Buffer;
    out.bytes(source, 0, source.length);
    out.bytes(r.sensorBytes, r.sensorStart, r.sensorEnd);
    out.int16(r.action);
    if (r.userStart < 0) out.null();
    else out.bytes(r.userBytes, r.userStart, r.userEnd);
    if (r.commandStart < 0) out.null();
    else out.bytes(r.commandBytes, r.commandStart, r.commandEnd, r.commandPrefix ?? undefined);
  }

  /**
   * The events by UTC day (ms / DAY), each day's as a binary COPY stream in the column order of EVENT_COLUMNS
   * (views into the batch's buffers).
   */
  rowsByDay(): [day: number, rows: Buffer][] {
    return [...this.byDay].map(([day, out]) => [day, out.stream()]);
  }

  /** Empties the batch for reuse; its buffers keep their size. */
  clear(): void {
    this.count = 0;
    for (const out of this.byDay.values()) {
      out.clear();
      this.spareWriters.push(out);
    }
    this.byDay.clear();
    this.hourly.clear();
    this.days.clear();
    this.lastDay = -1;
  }

  private fold(slot: number, ts: number, source: number, action: number, service: number, port: number, sensor: number): void {
    this.facts.fold(slot, ts, source, action, service, sensor);
    this.hourly.add(slot, ts, source, action, service, port, sensor);
    const day = Math.floor(ts / DAY);
    if (day !== this.lastDay) {
      let out = this.byDay.get(day);
      if (out === undefined) {
        out = this.spareWriters.pop() ?? new BinaryCopyWriter(this.initialBytes);
        this.byDay.set(day, out);
        this.days.add(day);
      }
      this.out = out;
      this.lastDay = day;
    }
    this.count++;
  }

  /**
   * The first 16 bytes of SHA-256 over the canonical event (event.ts eventId, the same bytes for the same
   * event), as the digest's bytes in a latin1 string (see BinaryCopyWriter.uuidLatin1).
   */
  private rawId(r: RawEvent): string {
    const needed = 64 + (r.srcEnd - r.srcStart) + (r.sensorEnd - r.sensorStart) + (r.userEnd - r.userStart) +
      (r.commandEnd - r.commandStart) + (r.commandPrefix?.length ?? 0);
    if (needed > this.canonical.length) {
      this.canonical = Buffer.allocUnsafe(needed * 2);
      this.canonicalViews = [];
    }
    const c = this.canonical;
    const line = r.line;
    // Fields are short: copied byte by byte rather than through native calls.
    let at = this.writeMs(c, r.ts);
    c[at++] = SEP;
    for (let i = r.srcStart; i < r.srcEnd; i++) c[at++] = line[i] as number;
    c[at++] = SEP;
    if (r.port >= 0) at = writeDecimal(c, at, r.port);
    c[at++] = SEP;
    for (let i = 0; i < TCP.length; i++) c[at++] = TCP[i] as number;
    c[at++] = SEP;
    const source = SOURCE_BYTES[r.source] as Buffer;
    for (let i = 0; i < source.length; i++) c[at++] = source[i] as number;
    c[at++] = SEP;
    const sensor = r.sensorBytes;
    for (let i = r.sensorStart; i < r.sensorEnd; i++) c[at++] = sensor[i] as number;
    c[at++] = SEP;
    c[at++] = 48 + r.action;
    c[at++] = SEP;
    if (r.userStart < 0) c[at++] = 0;
    else for (let i = r.userStart, user = r.userBytes; i < r.userEnd; i++) c[at++] = user[i] as number;
    c[at++] = SEP;
    if (r.commandStart < 0) c[at++] = 0;
    else {
      const prefix = r.commandPrefix;
      if (prefix) for (let i = 0; i < prefix.length; i++) c[at++] = prefix[i] as number;
      for (let i = r.commandStart, command = r.commandBytes; i < r.commandEnd; i++) c[at++] = command[i] as number;
    }
    // One view per length, made once: a new view per event would be garbage per event.
    const view = (this.canonicalViews[at] ??= c.subarray(0, at));
    return hash('sha256', view, 'binary'); // 'binary' is latin1: one char per byte
  }

  /**
   * Writes a time in ms as decimal digits at the start of `buf`, as writeDecimal would; returns the length.
   * Its thirteen digits would take as many divisions of a double (~65 ns an event). The leading ones are
   * remembered from the last event, and the last six are divided as small integers (~30 ns).
   */
  private writeMs(buf: Buffer, ms: number): number {
    const high = Math.floor(ms / 1e6);
    if (high <= 0) return writeDecimal(buf, 0, ms);
    if (high !== this.msHigh) {
      this.msHighLength = writeDecimal(this.msHighDigits, 0, high);
      this.msHigh = high;
    }
    const digits = this.msHighDigits;
    const n = this.msHighLength;
    for (let i = 0; i < n; i++) buf[i] = digits[i] as number;
    let low = ms - high * 1e6;
    for (let i = n + 5; i >= n; i--) {
      const q = (low / 10) | 0;
      buf[i] = 48 + (low - q * 10);
      low = q;
    }
    return n + 6;
  }
}

/** Writes a non-negative integer's decimal digits at `at`; returns the position after them. */
function writeDecimal(buf: Buffer, at: number, value: number): number {
  let digits = 1;
  for (let v = value; v >= 10; v = Math.floor(v / 10)) digits++;
  let v = value;
  for (let i = at + digits - 1; i >= at; i--) {
    const q = Math.floor(v / 10);
    buf[i] = 48 + (v - q * 10);
    v = q;
  }
  return at + digits;
}

/** Column order of the rows of EventBatch.rowsByDay(). */
export const EVENT_COLUMNS = 'ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command';
