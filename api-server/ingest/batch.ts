// One batch of parsed events in the form the database takes: binary COPY rows, their ip_hourly rows, and
// their facts folded into the window's AddressFacts, with no object per event. Events come as AttackEvent
// objects from the parsers or as a RawEvent (byte ranges of the line) from a byte reader; both ways give the
// same row and the same content-derived id.
import { hash } from 'node:crypto';
import { SERVICE_INDEX, SERVICES } from '../../common/vocabulary.ts';
import { HONEYPOT, TELESCOPE, type AddressFacts } from './address-facts.ts';
import { BinaryCopyWriter } from './copy-binary.ts';
import type { AttackEvent, RawEvent } from './event.ts';
import { HourlyRows } from './hourly.ts';
import type { SensorNames } from './sensors.ts';

const DAY = 86_400_000;
const SEP = 0x1f;
const SERVICE_BYTES = SERVICES.map((s) => Buffer.from(s));
// Every event a byte reader gives is a TCP honeypot one (Cowrie's SSH and telnet).
const TCP = Buffer.from('tcp');
const HONEYPOT_BYTES = Buffer.from('honeypot');

/** Column order of the rows of EventBatch.rows(). */
export const EVENT_COLUMNS = 'ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command';

export class EventBatch {
  /** Events added (duplicates within the batch included). */
  count = 0;
  /** UTC days (ms / DAY) the events fall on: the partitions they need. */
  readonly days = new Set<number>();
  readonly hourly = new HourlyRows();
  private readonly out = new BinaryCopyWriter();
  private facts: AddressFacts;
  private readonly sensors: SensorNames;
  /** The canonical form of a raw event, hashed for its id. */
  private canonical = Buffer.allocUnsafe(1024);

  constructor(facts: AddressFacts, sensors: SensorNames) {
    this.facts = facts;
    this.sensors = sensors;
  }

  /** Empties the batch for reuse (its buffers keep their size), its events from now on folding into `facts`. */
  reuse(facts: AddressFacts): void {
    this.facts = facts;
    this.count = 0;
    this.days.clear();
    this.hourly.clear();
    this.out.clear();
  }

  add(e: AttackEvent): void {
    const service = e.service === null ? -1 : (SERVICE_INDEX.get(e.service) as number);
    const source = e.source === 'honeypot' ? HONEYPOT : TELESCOPE;
    this.fold(this.facts.slotOf(e.src), e.ts, source, e.action, service, e.dstPort ?? -1, this.sensors.local(e.sensor));
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
    const sensor = this.sensors.local(r.sensorBytes.toString('latin1', r.sensorStart, r.sensorEnd));
    this.fold(this.facts.slotOfV4(r.src), r.ts, HONEYPOT, r.action, r.service, r.port, sensor);
    const out = this.out;
    out.row(11);
    out.timestamp(r.ts);
    out.uuidLatin1(this.rawId(r));
    out.inet4(r.src);
    out.int32(r.port < 0 ? null : r.port);
    if (r.service < 0) out.null();
    else out.bytes(SERVICE_BYTES[r.service] as Buffer);
    out.bytes(TCP);
    out.bytes(HONEYPOT_BYTES);
    out.bytes(r.sensorBytes, r.sensorStart, r.sensorEnd);
    out.int16(r.action);
    if (r.userStart < 0) out.null();
    else out.bytes(r.line, r.userStart, r.userEnd);
    if (r.commandStart < 0) out.null();
    else out.bytes(r.line, r.commandStart, r.commandEnd, r.commandPrefix ?? undefined);
  }

  /** The events as a binary COPY stream in the column order of EVENT_COLUMNS (a view into the batch's buffer). */
  rows(): Buffer {
    return this.out.stream();
  }

  private fold(slot: number, ts: number, source: number, action: number, service: number, port: number, sensor: number): void {
    this.facts.fold(slot, ts, source, action, service, sensor);
    this.hourly.add(slot, ts, source, action, service, port, sensor);
    this.days.add(Math.floor(ts / DAY));
    this.count++;
  }

  /**
   * The first 16 bytes of SHA-256 over the canonical event — event.ts eventId, over the same bytes — as the
   * digest's bytes in a latin1 string (see BinaryCopyWriter.uuidLatin1).
   */
  private rawId(r: RawEvent): string {
    const needed = 64 + (r.srcEnd - r.srcStart) + (r.sensorEnd - r.sensorStart) + (r.userEnd - r.userStart) +
      (r.commandEnd - r.commandStart) + (r.commandPrefix?.length ?? 0) + (r.connectionEnd - r.connectionStart);
    if (needed > this.canonical.length) this.canonical = Buffer.allocUnsafe(needed * 2);
    const c = this.canonical;
    let at = writeDecimal(c, 0, r.ts);
    c[at++] = SEP;
    at = put(c, at, r.line, r.srcStart, r.srcEnd);
    if (r.port >= 0) at = writeDecimal(c, at, r.port);
    c[at++] = SEP;
    at = put(c, at, TCP, 0, TCP.length);
    at = put(c, at, HONEYPOT_BYTES, 0, HONEYPOT_BYTES.length);
    at = put(c, at, r.sensorBytes, r.sensorStart, r.sensorEnd);
    c[at++] = 48 + r.action;
    c[at++] = SEP;
    // Absent username / command as a NUL byte, so that null and '' differ.
    if (r.userStart < 0) c[at++] = 0;
    else for (let i = r.userStart; i < r.userEnd; i++) c[at++] = r.line[i] as number;
    c[at++] = SEP;
    if (r.commandStart < 0) c[at++] = 0;
    else {
      const prefix = r.commandPrefix;
      if (prefix) for (let i = 0; i < prefix.length; i++) c[at++] = prefix[i] as number;
      for (let i = r.commandStart; i < r.commandEnd; i++) c[at++] = r.line[i] as number;
    }
    // The connection only when there is one (see eventId).
    if (r.connectionStart >= 0) {
      c[at++] = SEP;
      for (let i = r.connectionStart; i < r.connectionEnd; i++) c[at++] = r.line[i] as number;
    }
    return hash('sha256', c.subarray(0, at), 'binary'); // 'binary' is latin1: one character per byte
  }
}

/** Copies src[from, to) and a separator to c at `at`; returns the position after them. (Short fields: a loop is faster than a native call.) */
function put(c: Buffer, at: number, src: Buffer, from: number, to: number): number {
  for (let i = from; i < to; i++) c[at++] = src[i] as number;
  c[at] = SEP;
  return at + 1;
}

/** Writes a non-negative integer's decimal digits at `at` (String() of a time in ms would cost more than the rest of the id's bytes); returns the position after them. */
function writeDecimal(buf: Buffer, at: number, value: number): number {
  let end = at + 1;
  for (let v = value; v >= 10; v = Math.floor(v / 10)) end++;
  for (let i = end - 1, v = value; i >= at; i--, v = Math.floor(v / 10)) buf[i] = 48 + (v % 10);
  return end;
}
