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
