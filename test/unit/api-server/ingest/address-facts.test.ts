import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SERVICES } from '../../../../common/vocabulary.ts';
import { parseAddress, type Address } from '../../../../common/ip.ts';
import { AddressFacts, HONEYPOT, MAX_SENSORS, TELESCOPE } from '../../../../api-server/ingest/address-facts.ts';

// A few dozen addresses, so that each meets many events (and more sensors than it keeps).
const ipv4 = fc.tuple(fc.constantFrom(1, 198, 255), fc.nat(7)).map(([a, b]) => `${a}.51.100.${b}`);
const ipv6 = fc.constantFrom('2001:db8::1', '2001:db8::2', '240e:47d:c20:1627::1', '::1');
const event = fc.record({
  ip: fc.oneof({ weight: 4, arbitrary: ipv4 }, { weight: 1, arbitrary: ipv6 }),
  ts: fc.integer({ min: 1, max: 1_000_000 }),
  source: fc.constantFrom(HONEYPOT, TELESCOPE),
  action: fc.constantFrom(0, 1, 2),
  service: fc.integer({ min: -1, max: SERVICES.length - 1 }),
  sensor: fc.nat(11),
});

/** The facts of one address, computed the obvious way (0 = never). */
function model(events: { ts: number; source: number; action: number; service: number; sensor: number }[]) {
  const last = (keep: (e: (typeof events)[number]) => boolean) => Math.max(0, ...events.filter(keep).map((e) => e.ts));
  const bySensor = new Map<number, number>();
  for (const e of events) bySensor.set(e.sensor, Math.max(bySensor.get(e.sensor) ?? 0, e.ts));
  return {
    firstSeen: Math.min(...events.map((e) => e.ts)),
    lastSeen: last(() => true),
    lastHoneypot: last((e) => e.source === HONEYPOT),
    lastTelescope: last((e) => e.source === TELESCOPE),
    lastInteraction: last((e) => e.source === HONEYPOT && e.action >= 1),
    lastHigh: last((e) => e.action >= 1),
    lastCritical: last((e) => e.action === 2),
    serviceLast: SERVICES.map((_, s) => last((e) => e.service === s)),
    // The most recent sightings of the MAX_SENSORS sensors seen last (which of equal times is unspecified).
    sensorLast: [...bySensor.values()].sort((a, b) => b - a).slice(0, MAX_SENSORS),
  };
}

describe('AddressFacts', () => {
  it('holds per address the facts of its events, whatever the order and however the table grows', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 600, size: 'max' }), (events) => {
        const facts = new AddressFacts(2);
        for (const e of events) facts.fold(facts.slotOf(parseAddress(e.ip) as Address), e.ts, e.source, e.action, e.service, e.sensor);
        const byText = Map.groupBy(events, (e) => (parseAddress(e.ip) as Address).text);
        expect(facts.size).toBe(byText.size);
        for (let slot = 0; slot < facts.size; slot++) {
          const address = facts.address(slot);
          expect(facts.slotOf(address)).toBe(slot);
          const n = facts.orderSensors(slot, (local) => local);
          const f = (a: Float64Array) => a[slot];
          expect({
            firstSeen: f(facts.firstSeen), lastSeen: f(facts.lastSeen), lastHoneypot: f(facts.lastHoneypot), lastTelescope: f(facts.lastTelescope),
            lastInteraction: f(facts.lastInteraction), lastHigh: f(facts.lastHigh), lastCritical: f(facts.lastCritical),
            serviceLast: [...facts.serviceLast.subarray(slot * SERVICES.length, (slot + 1) * SERVICES.length)],
            sensorLast: [...facts.sensorTime.subarray(slot * MAX_SENSORS, slot * MAX_SENSORS + n)],
          }).toEqual(model(byText.get(address.text) ?? []));
        }
      }),
      { numRuns: 100 },
    );
  });
});
