// RFC 4180 cells: quoted only when they contain a delimiter, a quote or a line break; lists joined by `;`.

type CellValue = string | number | boolean | null | undefined | readonly (string | number)[];

export function csvCell(value: CellValue): string {
  if (value === null || value === undefined) return '';
  const text = Array.isArray(value) ? value.join(';') : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV line, CRLF-terminated as RFC 4180 asks. */
export function csvLine(cells: readonly CellValue[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
