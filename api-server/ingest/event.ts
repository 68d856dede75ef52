// The one shape every input format is parsed into, and the content-derived event id. Pure.
import { hash } from 'node:crypto';
import { SERVICES, serviceOfPort, type Service, type Source } from '../../common/vocabulary.ts';
import type { Action } from '../classify/classification.ts';
import { parseAddress, type Address } from '../enrich/address.ts';
import type { RawEvent } from './batch.ts';
import type { SensorNames } from './sensors.ts';

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
}

/** What a parser makes of one line: an event, nothing to store (a sensor's housekeeping line), or an error. */
export type LineResult = { event: AttackEvent } | { skip: true } | { error: string };

export interface ParserOptions {
  /** Sensor name for lines that do not name one (`--sensor`). */
  sensor?: string;
}

/**
 * A parser for one input format; may keep state across the lines of one input (sessions, CSV header). It may
 * come with a byte-level reader for its most common lines (`bytes`), tried first on every line.
 */
export type LineParser = ((line: string) => LineResult) & { readonly bytes?: ByteLineReader };

/** What a ByteLineReader made of a line. */
export const BYTES_DECLINED = 0;
export const BYTES_EVENT = 1;
export const BYTES_SKIP = 2;

/**
 * Reads line[start, end) into `out` (BYTES_EVENT), or finds it a housekeeping line (BYTES_SKIP), or declines
 * it (BYTES_DECLINED): then the line goes to the parser itself, which must give what the reader would have
 * given had it not declined. State shared with the parser (sessions) is updated either way.
 */
export type ByteLineReader = (line: Buffer, start: number, end: number, out: RawEvent, sensors: SensorNames) => number;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SEP = '\u001f';

/** First 16 bytes of SHA-256 over the canonical event, formatted as a uuid (docs/data-model.md). */
export function eventId(e: Omit<AttackEvent, 'id'>): string {
  // Fields joined by U+001F; absent username / command as U+0000 so that null and '' differ.
  const canonical = `${e.ts}${SEP}${e.src.text}${SEP}${e.dstPort ?? ''}${SEP}${e.proto ?? ''}${SEP}${e.source}${SEP}${e.sensor}${SEP}${e.action}${SEP}${e.username ?? '\u0000'}${SEP}${e.command ?? '\u0000'}`;
  const h = hash('sha256', canonical, 'hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * `YYYY-MM-DDTHH:MM:SS[.fraction]Z` — what Cowrie and most sensors write — read from its digits, without the
 * regular expressions and Date.parse of the general path. NaN when the text has any other shape.
 */
function fastIsoUtc(t: string): number {
  const n = t.length;
  if (n < 20 || t.charCodeAt(n - 1) !== 90 /* Z */ || t.charCodeAt(10) !== 84 /* T */) return NaN;
  const d = (i: number) => t.charCodeAt(i) - 48;
  const two = (i: number) => d(i) * 10 + d(i + 1);
  if (t.charCodeAt(4) !== 45 || t.charCodeAt(7) !== 45 || t.charCodeAt(13) !== 58 || t.charCodeAt(16) !== 58) return NaN;
  let ms = 0;
  if (n > 20) {
    if (t.charCodeAt(19) !== 46 /* . */) return NaN;
    for (let i = 20, scale = 100; i < n - 1; i++, scale /= 10) {
      const digit = d(i);
      if (digit < 0 || digit > 9) return NaN;
      if (scale >= 1) ms += digit * scale;
    }
  }
  const year = two(0) * 100 + two(2);
  const month = two(5);
  const day = two(8);
  const hour = two(11);
  const minute = two(14);
  const second = two(17);
  if (!(month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 59 && year >= 0)) return NaN;
  // Date.UTC would roll 31 February over into March: such text is left to the general path.
  if (day > 28 && day > daysInMonth(year, month)) return NaN;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms);
}

/** The start of the UTC hour named by `YYYY-MM-DDTHH:` at b[start…] (every character checked), or NaN. */
function hourOfIsoBytes(b: Buffer, start: number): number {
  if (b[start + 4] !== 45 || b[start + 7] !== 45 || b[start + 10] !== 84 /* T */ || b[start + 13] !== 58) return NaN;
  const digit = (i: number) => {
    const d = (b[start + i] as number) - 48;
    return d >= 0 && d <= 9 ? d : NaN;
  };
  const two = (i: number) => digit(i) * 10 + digit(i + 1);
  const year = two(0) * 100 + two(2);
  const month = two(5);
  const day = two(8);
  const hour = two(11);
  if (!(month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && year >= 0)) return NaN;
  // Date.UTC would roll 31 February over into March.
  if (day > 28 && day > daysInMonth(year, month)) return NaN;
  return Date.UTC(year, month - 1, day, hour);
}

/** Milliseconds into the hour of `MM:SS[.fraction]Z` at b[start + 14, end), as fastIsoUtc reads it, or NaN. */
function msInHourOfIsoBytes(b: Buffer, start: number, end: number): number {
  const n = end - start;
  if (n < 20 || b[end - 1] !== 90 /* Z */ || b[start + 16] !== 58) return NaN;
  let ms = 0;
  if (n > 20) {
    if (b[start + 19] !== 46 /* . */) return NaN;
    for (let i = start + 20, scale = 100; i < end - 1; i++, scale /= 10) {
      const d = (b[i] as number) - 48;
      if (d < 0 || d > 9) return NaN;
      if (scale >= 1) ms += d * scale;
    }
  }
  const m1 = (b[start + 14] as number) - 48;
  const m2 = (b[start + 15] as number) - 48;
  const s1 = (b[start + 17] as number) - 48;
  const s2 = (b[start + 18] as number) - 48;
  if (!(m1 >= 0 && m1 <= 5 && m2 >= 0 && m2 <= 9 && s1 >= 0 && s1 <= 5 && s2 >= 0 && s2 <= 9)) return NaN;
  return (m1 * 10 + m2) * 60_000 + (s1 * 10 + s2) * 1000 + ms;
}

/**
 * fastIsoUtc over bytes, stricter (every date and time character must be a digit): NaN for anything else,
 * which the caller leaves to the general path. Remembers the last hour read: the lines of a log mostly share
 * it, and then only minutes, seconds and fraction are read.
 */
export class IsoUtcBytes {
  private readonly prefix = Buffer.alloc(14);
  private hour = NaN;

  read(b: Buffer, start: number, end: number): number {
    if (end - start < 20) return NaN;
    let same = this.hour === this.hour;
    for (let i = 0; same && i < 14; i++) same = b[start + i] === this.prefix[i];
    if (!same) {
      const hour = hourOfIsoBytes(b, start);
      if (hour !== hour) return NaN;
      b.copy(this.prefix, 0, start, start + 14);
      this.hour = hour;
    }
    return this.hour + msInHourOfIsoBytes(b, start, end);
  }
}

/** Whether requireTime accepts an instant: not before 2000, not more than a day ahead of `now`. */
export function inTimeRange(ms: number, now: number): boolean {
  return ms >= EARLIEST && ms <= now + 86_400_000;
}

// Timestamps before this, or more than a day ahead of the clock, are typos or broken sensor clocks.
/** `YYYY-MM-DD…` names a day that exists (Date.parse would roll 2026-02-31 over into March). */
function isCalendarDate(text: string): boolean {
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

const EARLIEST = Date.UTC(2000, 0, 1);
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
    const fast = fastIsoUtc(value);
    if (fast === fast) return checkRange(fast, value, field, now);
    let text = value.trim();
    if (/^\d+(\.\d+)?$/.test(text)) ms = Math.round(Number(text) * 1000);
    else {
      if (/^\d{4}-\d\d-\d\d \d/.test(text)) text = text.replace(' ', 'T');
      if (/T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(text)) text += 'Z';
      // Date.parse wants at most millisecond precision.
      text = text.replace(/(\.\d{3})\d+/, '$1');
      ms = /^\d{4}-\d\d-\d\dT/.test(text) && isCalendarDate(text) ? Date.parse(text) : NaN;
    }
  } else throw new FieldError(`${field} is missing`);
  if (!Number.isFinite(ms)) throw new FieldError(`${field} ${JSON.stringify(value)} is not an ISO 8601 time`);
  return checkRange(ms, value, field, now);
}

function checkRange(ms: number, value: unknown, field: string, now: number): number {
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
  if (name.length > MAX_SENSOR_NAME) throw new FieldError(`${field} is longer than 128 characters`);
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
  if (givenId !== undefined && givenId !== null) {
    if (typeof givenId !== 'string' || !UUID.test(givenId)) throw new FieldError(`id ${JSON.stringify(givenId)} is not a uuid`);
    return complete(e, givenId.toLowerCase());
  }
  return complete(e, eventId(e));
}

/** The event with its id, built field by field (one object shape for every event, unlike a spread). */
function complete(e: Omit<AttackEvent, 'id'>, id: string): AttackEvent {
  return {
    ts: e.ts, id, src: e.src, dstPort: e.dstPort, service: e.service, proto: e.proto, source: e.source, sensor: e.sensor,
    action: e.action, username: e.username, command: e.command,
  };
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
