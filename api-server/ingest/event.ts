// The shapes every input format is parsed into (AttackEvent, or RawEvent from a byte reader), what a parser
// is, the content-derived event id, and the field checks the parsers share. Pure.
import { hash } from 'node:crypto';
import { SERVICES, serviceOfPort, type Service, type Source } from '../../common/vocabulary.ts';
import type { Action } from '../classify/classification.ts';
import { parseAddress, type Address } from '../../common/ip.ts';

export interface AttackEvent {
  /** Milliseconds since the epoch (UTC). */
  ts: number;
  /** A uuid given by the input, else derived from the content (eventId). */
  id: string;
  src: Address;
  dstPort: number | null;
  service: Service | null;
  proto: string | null;
  source: Source;
  sensor: string;
  action: Action;
  username: string | null;
  command: string | null;
  /**
   * The sensor's name for the connection the event came on (Cowrie's session id, OpenCanary's source port),
   * when the id counts it: two attempts in the same millisecond on different connections are two events.
   * Not stored; absent for inputs that name no connection, and for events at or before the store's
   * legacyIdsUntil (docs/data-model.md "Event ids").
   */
  connection?: string | null;
}

/**
 * An event as byte ranges of its line plus numbers, filled in place by a byte reader (one object reused for
 * every line), so that the common line makes no string and no object. It is a TCP honeypot event (what
 * Cowrie's reader gives). Text fields are printable ASCII that needs no cleaning: the reader checks that, or
 * declines the line.
 */
export class RawEvent {
  /** The line the ranges below point into. */
  line: Buffer = Buffer.alloc(0);
  ts = 0;
  /** IPv4 source as a number; its canonical text at line[srcStart, srcEnd). */
  src = 0;
  srcStart = 0;
  srcEnd = 0;
  /** Destination port, -1 = none. */
  port = -1;
  /** Index into SERVICES, -1 = none. */
  service = -1;
  /** The sensor's name: sensorBytes[sensorStart, sensorEnd) (the line, or the fallback name's bytes). */
  sensorBytes: Buffer = this.line;
  sensorStart = 0;
  sensorEnd = 0;
  action: Action = 0;
  /** line[userStart, userEnd), or null when userStart is -1. */
  userStart = -1;
  userEnd = -1;
  /** `commandPrefix` + line[commandStart, commandEnd), or null when commandStart is -1. */
  commandPrefix: Buffer | null = null;
  commandStart = -1;
  commandEnd = -1;
  /** AttackEvent.connection as line[connectionStart, connectionEnd), or none when connectionStart is -1. */
  connectionStart = -1;
  connectionEnd = -1;
}

/** What a parser makes of one line: an event, nothing to store (a sensor's housekeeping line), or an error. */
export type LineResult = { event: AttackEvent } | { skip: true } | { error: string };

export interface ParserOptions {
  /** Sensor name for lines that do not name one (`--sensor`). */
  sensor?: string;
  /**
   * Events at or before this instant (ms) get their ids without their connection, as they were given before
   * ids counted connections, so that a file stored then adds nothing when ingested again (the store's
   * legacyIdsUntil(); none by default).
   */
  legacyIdsUntil?: number;
}

/** Reads the lines of one input, in order; may keep state across them (sessions, a CSV header). */
export interface LineParser {
  /** One line, without its terminator. */
  line(text: string): LineResult;
  /**
   * A faster reader of the most common lines, from their bytes buf[start, end), tried first: it fills `out`
   * ('event'), finds a housekeeping line ('skip'), or declines ('declined'), and then the line goes to `line`.
   * Wherever it answers, it answers as `line` would: same outcome, same stored row (property-tested). State
   * shared with `line` (sessions) is kept either way.
   */
  bytes?(buf: Buffer, start: number, end: number, out: RawEvent): 'event' | 'skip' | 'declined';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SEP = '\u001f';

/** First 16 bytes of SHA-256 over the canonical event, formatted as a uuid (docs/data-model.md "Event ids"). */
export function eventId(e: Omit<AttackEvent, 'id'>): string {
  // Fields joined by U+001F; absent username / command as U+0000 so that null and '' differ. The connection
  // is appended only when there is one, so that an event without one keeps the id it had before ids counted
  // connections.
  const connection = e.connection == null ? '' : `${SEP}${e.connection}`;
  const canonical = `${e.ts}${SEP}${e.src.text}${SEP}${e.dstPort ?? ''}${SEP}${e.proto ?? ''}${SEP}${e.source}${SEP}${e.sensor}${SEP}${e.action}${SEP}${e.username ?? '\u0000'}${SEP}${e.command ?? '\u0000'}${connection}`;
  const h = hash('sha256', canonical, 'hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Whether an event at `ts` has its connection in its id: only after the store's legacyIdsUntil (ParserOptions). */
export function idCountsConnection(ts: number, legacyIdsUntil: number | undefined): boolean {
  return legacyIdsUntil === undefined || ts > legacyIdsUntil;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * The text b[from, to) as `YYYY-MM-DDTHH:MM:SS[.fraction]Z` — what Cowrie and most sensors write — read from
 * its digits; NaN for any other shape (requireTime then reads it the general way, and gives the same instant
 * for this shape). Every position of the shape is an ASCII digit or separator: a non-ASCII character, whose
 * UTF-8 bytes are all above 127, fails where it stands.
 */
export function isoUtcMs(b: Buffer, from: number, to: number): number {
  const n = to - from;
  if (n < 20 || b[to - 1] !== 90 /* Z */ || b[from + 10] !== 84 /* T */) return NaN;
  if (b[from + 4] !== 45 || b[from + 7] !== 45 || b[from + 13] !== 58 || b[from + 16] !== 58) return NaN;
  let ms = 0;
  if (n > 20) {
    if (b[from + 19] !== 46 /* . */) return NaN;
    // Milliseconds: further digits are dropped, as the general way does.
    for (let i = 20, scale = 100; i < n - 1; i++, scale /= 10) ms += digitAt(b, from + i) * (scale >= 1 ? scale : 0);
  }
  const year = twoDigits(b, from) * 100 + twoDigits(b, from + 2);
  const month = twoDigits(b, from + 5);
  const day = twoDigits(b, from + 8);
  const hour = twoDigits(b, from + 11);
  const minute = twoDigits(b, from + 14);
  const second = twoDigits(b, from + 17);
  if (!(month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 59)) return NaN;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms);
}

/** The digit at b[i], or NaN. */
function digitAt(b: Buffer, i: number): number {
  const d = (b[i] as number) - 48;
  return d >= 0 && d <= 9 ? d : NaN;
}

const twoDigits = (b: Buffer, i: number) => digitAt(b, i) * 10 + digitAt(b, i + 1);

// Timestamps before this, or more than a day ahead of the clock, are typos or broken sensor clocks.
const EARLIEST = Date.UTC(2000, 0, 1);

/** Whether requireTime accepts an instant: not before 2000, not more than a day ahead of `now`. */
export function inTimeRange(ms: number, now: number): boolean {
  return ms >= EARLIEST && ms <= now + 86_400_000;
}

/** `YYYY-MM-DD…` names a day that exists (Date.parse would roll 2026-02-31 over into March). */
function isCalendarDate(text: string): boolean {
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(Number(text.slice(0, 4)), month);
}

export const MAX_TEXT = 4096;
/** Longest sensor name. */
export const MAX_SENSOR_NAME = 128;

export class FieldError extends Error {}

export function requireAddress(value: unknown, field: string): Address {
  if (typeof value !== 'string' || value === '') throw new FieldError(`${field} is missing`);
  const a = parseAddress(value.trim());
  if (!a) throw new FieldError(`${field} "${value.slice(0, 64)}" is not an IP address`);
  return a;
}

/** ISO 8601 with a zone, or `YYYY-MM-DD HH:MM:SS[.ffffff]` taken as UTC, or epoch seconds (number). */
export function requireTime(value: unknown, field: string, now = Date.now()): number {
  let ms: number;
  if (typeof value === 'number') ms = Math.round(value * 1000);
  else if (typeof value === 'string' && value !== '') {
    let text = value.trim();
    if (/^\d+(\.\d+)?$/.test(text)) ms = Math.round(Number(text) * 1000);
    else {
      const bytes = Buffer.from(text);
      ms = isoUtcMs(bytes, 0, bytes.length);
      if (ms !== ms) {
        if (/^\d{4}-\d\d-\d\d \d/.test(text)) text = text.replace(' ', 'T');
        if (/T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(text)) text += 'Z';
        // Date.parse wants at most millisecond precision.
        text = text.replace(/(\.\d{3})\d+/, '$1');
        ms = /^\d{4}-\d\d-\d\dT/.test(text) && isCalendarDate(text) ? Date.parse(text) : NaN;
      }
    }
  } else throw new FieldError(`${field} is missing`);
  if (!Number.isFinite(ms)) throw new FieldError(`${field} ${JSON.stringify(value)} is not an ISO 8601 time`);
  if (!inTimeRange(ms, now)) throw new FieldError(`${field} ${JSON.stringify(value)} is out of range (2000 to tomorrow)`);
  return ms;
}

export function optionalPort(value: unknown, field: string): number | null {
  if (value === undefined || value === null || value === '') return null;
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new FieldError(`${field} ${JSON.stringify(value)} is not a port (0-65535)`);
  }
  return n;
}

export function optionalText(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new FieldError(`${field} must be a string`);
  // NUL cannot be stored in PostgreSQL text; very long values are truncated rather than refused.
  const clean = value.includes('\u0000') ? value.replaceAll('\u0000', '') : value;
  return clean.length > MAX_TEXT ? clean.slice(0, MAX_TEXT) : clean;
}

export function requireSensor(value: unknown, fallback: string | undefined, field: string): string {
  const name = value === undefined || value === null || value === '' ? fallback : value;
  if (typeof name !== 'string' || name.trim() === '') throw new FieldError(`${field} is missing (or pass --sensor)`);
  if (name.length > MAX_SENSOR_NAME) throw new FieldError(`${field} is longer than ${MAX_SENSOR_NAME} characters`);
  return name.trim();
}

export function serviceFor(service: unknown, port: number | null, field: string): Service | null {
  if (service !== undefined && service !== null && service !== '') {
    if (typeof service !== 'string' || !(SERVICES as readonly string[]).includes(service)) {
      throw new FieldError(`${field} ${JSON.stringify(service)} is not one of ${SERVICES.join(', ')}`);
    }
    return service as Service;
  }
  return port === null ? null : (serviceOfPort(port) ?? null);
}

/** Completes an event with its content-derived id unless the input gave one. */
export function withId(e: Omit<AttackEvent, 'id'>, givenId?: unknown): AttackEvent {
  if (givenId === undefined || givenId === null) return { ...e, id: eventId(e) };
  if (typeof givenId !== 'string' || !UUID.test(givenId)) throw new FieldError(`id ${JSON.stringify(givenId)} is not a uuid`);
  return { ...e, id: givenId.toLowerCase() };
}

/** Runs a field-level parse, turning FieldError and JSON errors into a line error. */
export function guarded(parse: () => LineResult): LineResult {
  try {
    return parse();
  } catch (err) {
    if (err instanceof FieldError) return { error: err.message };
    if (err instanceof SyntaxError) return { error: `not valid JSON (${err.message.split('\n')[0]})` };
    throw err;
  }
}

export function parseJsonObject(line: string): Record<string, unknown> {
  const v: unknown = JSON.parse(line);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new FieldError('expected a JSON object');
  return v as Record<string, unknown>;
}
