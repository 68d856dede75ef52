import { describe, expect, it } from 'vitest';
import { classifyAddress, confirmedAt, type AddressFacts } from '../../../../api-server/classify/classification.ts';

const H = 3_600_000;
const NOW = Date.UTC(2026, 10, 22, 12);
const ago = (hours: number) => NOW - hours * H;
const since = ago(24); // a 24-hour window

const base: AddressFacts = {
  lastSeen: ago(1),
  lastHoneypot: null,
  lastTelescope: null,
  lastInteraction: null,
  lastHigh: null,
  lastCritical: null,
  serviceLast: [],
  sensorLast: [ago(1)],
  scannerKind: null,
};

describe('classifyAddress within a 24 h window', () => {
  it.each<[string, Partial<AddressFacts>, string, string, string]>([
    ['telescope-only prober', { lastTelescope: ago(2) }, 'scanner', 'medium', 'standard'],
    ['honeypot connect only', { lastHoneypot: ago(2) }, 'scanner', 'medium', 'standard'],
    ['brute forcer', { lastHoneypot: ago(2), lastInteraction: ago(2), lastHigh: ago(2) }, 'attacker', 'high', 'standard'],
    ['command runner', { lastHoneypot: ago(2), lastInteraction: ago(2), lastHigh: ago(2), lastCritical: ago(3) }, 'attacker', 'critical', 'standard'],
    ['critical long ago, brute force now', { lastInteraction: ago(2), lastHigh: ago(2), lastCritical: ago(100) }, 'attacker', 'high', 'standard'],
    ['interaction outside the window', { lastTelescope: ago(1), lastInteraction: ago(48), lastHigh: ago(48) }, 'scanner', 'medium', 'standard'],
    ['three services probed', { lastTelescope: ago(1), serviceLast: [ago(1), ago(2), null, ago(5)] }, 'scanner', 'high', 'standard'],
    ['three services, one outside', { lastTelescope: ago(1), serviceLast: [ago(1), ago(2), null, ago(50)] }, 'scanner', 'medium', 'standard'],
    ['two sensors in the window', { lastTelescope: ago(1), sensorLast: [ago(1), ago(20)] }, 'scanner', 'medium', 'high'],
    ['second sensor outside the window', { lastTelescope: ago(1), sensorLast: [ago(1), ago(30)] }, 'scanner', 'medium', 'standard'],
    ['honeypot and telescope', { lastHoneypot: ago(3), lastTelescope: ago(5) }, 'scanner', 'medium', 'high'],
    ['telescope long ago', { lastHoneypot: ago(3), lastTelescope: ago(500) }, 'scanner', 'medium', 'standard'],
    ['research scanner wins over attacker', { scannerKind: 'research_scanner', lastInteraction: ago(1), lastHigh: ago(1) }, 'research_scanner', 'high', 'standard'],
    ['asset scanner', { scannerKind: 'asset_scanner', lastTelescope: ago(1) }, 'asset_scanner', 'medium', 'standard'],
  ])('%s', (_name, facts, type, level, precision) => {
    expect(classifyAddress({ ...base, ...facts }, since)).toEqual({ type, level, precision });
  });
});

describe('confirmedAt', () => {
  it('is the later of the second sensor sighting and the later-starting source', () => {
    expect(confirmedAt({ sensorLast: [ago(1)], lastHoneypot: ago(1), lastTelescope: null })).toBeNull();
    expect(confirmedAt({ sensorLast: [ago(1), ago(9)], lastHoneypot: ago(1), lastTelescope: null })).toBe(ago(9));
    expect(confirmedAt({ sensorLast: [ago(1), ago(9)], lastHoneypot: ago(1), lastTelescope: ago(4) })).toBe(ago(4));
  });
});
