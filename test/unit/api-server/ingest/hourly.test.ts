import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HourlyRows, MAX_PORTS } from '../../../../api-server/ingest/hourly.ts';

const HOUR = 3_600_000;
interface Folded {
  slot: number;
  ts: number;
  port: number;
  sensor: number;
}

/** What one batch's rows must hold, computed the obvious way. */
function model(events: readonly Folded[]): Map<string, { attacks: number; ports: number[]; sensors: number[] }> {
  const rows = new Map<string, { attacks: number; ports: Set<number>; sensors: Set<number> }>();
  for (const e of events) {
    const key = `${e.slot}/${e.ts - (e.ts % HOUR)}`;
    const row = rows.get(key) ?? { attacks: 0, ports: new Set<number>(), sensors: new Set<number>() };
    row.attacks++;
    if (e.port >= 0) row.ports.add(e.port);
    row.sensors.add(e.sensor);
    rows.set(key, row);
  }
  return new Map([...rows].map(([k, r]) => [k, { attacks: r.attacks, ports: [...r.ports].sort((a, b) => a - b).slice(0, MAX_PORTS), sensors: [...r.sensors].sort((a, b) => a - b) }]));
}

function actual(h: HourlyRows): Map<string, { attacks: number; ports: number[]; sensors: number[] }> {
  const rows = new Map<string, { attacks: number; ports: number[]; sensors: number[] }>();
  for (let r = 0; r < h.count; r++) {
    rows.set(`${h.slot[r]}/${h.hour[r]}`, {
      attacks: h.attacks[r] as number,
      ports: [...h.ports.subarray(r * MAX_PORTS, r * MAX_PORTS + (h.portCount[r] as number))],
      sensors: (h.sensors[r] as number[]).slice(0, h.sensorCount[r]).sort((a, b) => a - b),
    });
  }
  return rows;
}

const event = fc.record({
  slot: fc.nat(2),
  ts: fc.integer({ min: 0, max: 3 * HOUR }),
  port: fc.oneof(fc.constant(-1), fc.nat(80), fc.nat(65_535)),
  sensor: fc.nat(12),
});

describe('HourlyRows', () => {
  it('holds per (address, hour) the attacks, the MAX_PORTS smallest ports and the sensors, batch after batch', () => {
    fc.assert(
      fc.property(fc.array(fc.array(event, { maxLength: 400, size: 'max' }), { minLength: 1, maxLength: 5 }), (batches) => {
        // One HourlyRows cleared between batches, as a batch reuses it: nothing of a batch may show in the next.
        const h = new HourlyRows();
        for (const events of batches) {
          h.clear();
          for (const e of events) h.add(e.slot, e.ts, 0, 0, -1, e.port, e.sensor);
          expect(actual(h)).toEqual(model(events));
        }
      }),
      { numRuns: 100 },
    );
  });
});
