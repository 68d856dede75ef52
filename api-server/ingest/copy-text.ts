// PostgreSQL COPY text format: tab-separated, \N for NULL, backslash escapes. Pure.

const NEEDS_ESCAPE = /[\\\t\n\r]/;

export function copyText(value: string | null): string {
  if (value === null) return '\\N';
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

export function copyNumber(value: number | null): string {
  return value === null ? '\\N' : String(value);
}

const HOUR = 3_600_000;
let cachedHour = NaN;
let cachedPrefix = '';
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/** `YYYY-MM-DD HH:MM:SS.mmm+00`: a timestamptz literal, formatted without a Date per call. */
export function copyTimestamp(ms: number): string {
  const hour = ms - (ms % HOUR);
  if (hour !== cachedHour) {
    cachedHour = hour;
    cachedPrefix = new Date(hour).toISOString().slice(0, 14).replace('T', ' ');
  }
  const inHour = ms - hour;
  const millis = inHour % 1000;
  const seconds = Math.floor(inHour / 1000);
  return `${cachedPrefix}${pad2(Math.floor(seconds / 60))}:${pad2(seconds % 60)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}+00`;
}
