// Property: the list SQL classifies every address as the rules of docs/data-model.md say, for every window.
// The rules are written twice on purpose — as SQL over `addresses` (query/list-sql.ts), which the lists run,
// and as pure functions (classify/classification.ts), the reference. Random per-address facts go into a real
// PostgreSQL; for windows at and around every lifetime boundary and random ones, each record's type, level
// and precision must equal the reference's, and the type, level and precision filters must select exactly
// the addresses the reference classifies so. Times fall on, just before and just after window starts.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEVELS, SERVICES, TYPES, type Level } from '../../../../common/vocabulary.ts';
import { classifyAddress, type AddressFacts, type Classification } from '../../../../api-server/classify/classification.ts';
import { addressesSql, recordsSql } from '../../../../api-server/query/list-sql.ts';
import { exportFilter } from '../../../../api-server/query/lists.ts';
import type { ExportQuery } from '../../../../api-server/query/endpoint-params.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const H = 3_600_000;
const NOW = Date.UTC(2026, 10, 22, 12, 30, 15, 250);
/** Windows (hours) where a lifetime or an endpoint's maximum changes, and the edges of the range. */
const WINDOWS = [1, 24, 25, 71, 72, 168, 720];

/** An instant: on, 1 ms before or 1 ms after a window start, or anywhere in the last 800 hours. */
const instant = fc.oneof(
  fc.tuple(fc.constantFrom(...WINDOWS), fc.constantFrom(-1, 0, 1)).map(([hours, ms]) => NOW - hours * H + ms),
  fc.integer({ min: 0, max: 800 * H }).map((ago) => NOW - ago),
);
const maybe = fc.option(instant, { nil: null });

const facts: fc.Arbitrary<AddressFacts> = fc
  .record({
    lastHoneypot: maybe,
    lastTelescope: maybe,
    lastInteraction: maybe,
    lastHigh: maybe,
    lastCritical: maybe,
    serviceLast: fc.array(maybe, { minLength: SERVICES.length, maxLength: SERVICES.length }),
    // addresses keeps at most 8 sensors, newest first.
    sensorLast: fc.array(instant, { minLength: 1, maxLength: 8 }).map((times) => times.sort((a, b) => b - a)),
    scannerKind: fc.constantFrom(null, 'research_scanner', 'asset_scanner'),
  })
  // Every address was seen by the honeypot or the telescope; last_seen is the later of the two.
  .filter((f) => f.lastHoneypot !== null || f.lastTelescope !== null)
  .map((f) => ({ ...f, lastSeen: Math.max(f.lastHoneypot ?? 0, f.lastTelescope ?? 0) }));

const at = (t: number | null) => (t === null ? null : new Date(t));
const ipOf = (i: number) => `11.0.${i >> 8}.${i & 255}`;

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(() => db.drop());

async function store(addresses: AddressFacts[]): Promise<void> {
  await db.pool.query('delete from addresses');
  for (const [i, f] of addresses.entries()) {
    const times = [f.lastSeen, ...f.sensorLast, ...[f.lastInteraction, f.lastHigh, f.lastCritical, ...f.serviceLast].filter((t) => t !== null)];
    await db.pool.query(
      `insert into addresses (ip, first_seen, last_seen, last_honeypot, last_telescope, last_interaction, last_high, last_critical,
         service_last, sensor_ids, sensor_last, scanner_kind)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        ipOf(i), at(Math.min(...times)), at(f.lastSeen), at(f.lastHoneypot), at(f.lastTelescope), at(f.lastInteraction), at(f.lastHigh),
        at(f.lastCritical), f.serviceLast.map(at), f.sensorLast.map((_, n) => n + 1), f.sensorLast.map(at), f.scannerKind,
      ],
    );
  }
}

/** The export query of a window with every address in it (research platforms included), and optional filters. */
function exportQuery(hours: number, filters: Partial<ExportQuery> = {}): ExportQuery {
  return { type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', hours, include_research: 1, format: 'json', download: 0, ...filters };
}

async function selected(query: ExportQuery): Promise<string[]> {
  const { rows } = await db.pool.query<{ host: string }>(addressesSql(exportFilter(query, new Date(NOW))));
  return rows.map((r) => r.host);
}

const RANK: Record<Level, number> = { medium: 1, high: 2, critical: 3 };

describe('the list SQL classifies as classify/classification.ts', () => {
  it('type, level and precision of every address, and what each filter selects, for every window', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(facts, { minLength: 1, maxLength: 25 }), fc.integer({ min: 1, max: 720 }), async (addresses, randomWindow) => {
        await store(addresses);
        for (const hours of [...WINDOWS, randomWindow]) {
          const since = NOW - hours * H;
          // The reference: every address in the window (last seen at or after its start), classified.
          const expected = new Map<string, Classification>();
          for (const [i, f] of addresses.entries()) if (f.lastSeen >= since) expected.set(ipOf(i), classifyAddress(f, since));

          const { rows } = await db.pool.query<{ ip: string } & Classification>(recordsSql(exportFilter(exportQuery(hours), new Date(NOW))));
          const shown = new Map(rows.map((r) => [r.ip, { type: r.type, level: r.level, precision: r.precision }]));
          expect(shown, `${hours} h`).toEqual(expected);

          const inWindow = [...expected];
          const where = (keep: (c: Classification) => boolean) => inWindow.filter(([, c]) => keep(c)).map(([ip]) => ip).sort();
          const sorted = (ips: string[]) => [...ips].sort();
          for (const type of TYPES) expect(sorted(await selected(exportQuery(hours, { type }))), `${hours} h type=${type}`).toEqual(where((c) => c.type === type));
          for (const level of LEVELS) {
            expect(sorted(await selected(exportQuery(hours, { level }))), `${hours} h level=${level}`).toEqual(where((c) => RANK[c.level] >= RANK[level]));
          }
          expect(sorted(await selected(exportQuery(hours, { precision: 'high' }))), `${hours} h precision=high`).toEqual(where((c) => c.precision === 'high'));
        }
      }),
      { numRuns: 100 },
    );
  });
});
