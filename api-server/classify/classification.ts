// Classification rules of docs/data-model.md "Classification within a window" as pure functions: an
// address's type, level and precision within a window, from the per-address facts kept in `addresses`. The
// lists apply the same rules in SQL (query/list-sql.ts), which runs them over millions of rows; these are the
// reference that SQL is held to, for random facts and windows in a real PostgreSQL
// (test/integration/api-server/http/list-classification.property.test.ts).
import { SERVICES, type AddressType, type Level, type Precision } from '../../common/vocabulary.ts';

/** What an event did: 0 = probe / connection, 1 = authentication attempt, 2 = command execution, download or exploit. */
export type Action = 0 | 1 | 2;

/** When an address was last active in each window-dependent way (times in ms; null = never). */
export interface AddressActivity {
  lastSeen: number;
  lastHoneypot: number | null;
  lastTelescope: number | null;
  lastInteraction: number | null;
  lastHigh: number | null;
  lastCritical: number | null;
  /** Index i = SERVICES[i]. */
  serviceLast: (number | null)[];
}

/** The facts `addresses` keeps per address. */
export interface AddressFacts extends AddressActivity {
  /** Most recent sighting per sensor, newest first. */
  sensorLast: number[];
  scannerKind: 'research_scanner' | 'asset_scanner' | null;
}

const inWindow = (t: number | null | undefined, since: number) => t !== null && t !== undefined && t >= since;

/** When the address was last seen by two different sensors or by both sources (null = never). */
export function confirmedAt(f: Pick<AddressFacts, 'sensorLast' | 'lastHoneypot' | 'lastTelescope'>): number | null {
  const second = f.sensorLast[1] ?? null;
  const both = f.lastHoneypot !== null && f.lastTelescope !== null ? Math.min(f.lastHoneypot, f.lastTelescope) : null;
  if (second === null) return both;
  return both === null ? second : Math.max(second, both);
}

export interface Classification {
  type: AddressType;
  level: Level;
  precision: Precision;
}

/** Type, level and precision of an address over the window starting at `since` (ms). */
export function classifyAddress(f: AddressFacts, since: number): Classification {
  const type: AddressType = f.scannerKind ?? (inWindow(f.lastInteraction, since) ? 'attacker' : 'scanner');
  const services = f.serviceLast.slice(0, SERVICES.length).filter((t) => inWindow(t, since)).length;
  const level: Level = inWindow(f.lastCritical, since) ? 'critical' : inWindow(f.lastHigh, since) || services >= 3 ? 'high' : 'medium';
  const precision: Precision = inWindow(confirmedAt(f), since) ? 'high' : 'standard';
  return { type, level, precision };
}
