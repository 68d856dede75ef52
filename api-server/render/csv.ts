// RFC 4180 cells: quoted only when they contain a delimiter, a quote or a line break; lists joined by `;`.
// Cells hold attacker-typed text (honeypot commands), and a spreadsheet runs a cell that begins with `=`,
// `+`, `-`, `@`, a tab or a carriage return as a formula; such a cell gets a leading `'` (OWASP's CSV
// injection rule), which keeps the value readable and makes every spreadsheet show it as text.

type CellValue = string | number | boolean | null | undefined | readonly (string | number)[];

/** First characters that make a spreadsheet read a cell as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: CellValue): string {
  if (value === null || value === undefined) return '';
  const raw = Array.isArray(value) ? value.join(';') : String(value);
  const text = FORMULA_START.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV line, CRLF-terminated as RFC 4180 asks. */
export function csvLine(cells: readonly CellValue[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
