// Per-batch pre-aggregation of events into the rows ip_hourly and addresses are upserted from: the same
// facts the SQL would compute from the inserted rows, computed while the database is busy with the previous
// batch. Events are folded in one at a time as they are parsed, so that a batch never keeps its events as
// objects (they die young instead of being promoted while the batch waits for the database). Sensors are
// kept by name here and mapped to sensors.id when the rollup is staged. Pure.
import { SERVICES } from '../../common/vocabulary.ts';
import type { Address } from '../enrich/address.ts';
import type { AttackEvent } from './event.ts';

const HOUR = 3_600_000;
export const MAX_PORTS = 32;
export const MAX_SENSORS = 8;

export interface HourlyRow {
  hour: number;
  ip: string;
  attacks: number;
  services: number;
  sources: number;
  maxAction: number;
  ports: Set<number>;
  /** sensor names */
  sensors: Set<string>;
  firstSeen: number;
  lastSeen: number;
}

export interface AddressRow {
  address: Address;
  firstSeen: number;
  lastSeen: number;
  lastHoneypot: number | null;
  lastTelescope: number | null;
  lastInteraction: number | null;
  lastHigh: number | null;
  lastCritical: number | null;
  serviceLast: (number | null)[];
  /** sensor name → last sighting */
  sensorLast: Map<string, number>;
}

const SERVICE_INDEX = new Map<string, number>(SERVICES.map((s, i) => [s, i]));
const later = (a: number | null, b: number) => (a === null || b > a ? b : a);

export interface Rollup {
  hourly: Map<string, HourlyRow>;
  addresses: Map<string, AddressRow>;
}

/** The fields of an event a rollup reads. */
export type RollupEvent = Pick<AttackEvent, 'ts' | 'src' | 'dstPort' | 'service' | 'source' | 'sensor' | 'action'>;

export const emptyRollup = (): Rollup => ({ hourly: new Map(), addresses: new Map() });

/** Aggregates `events` (already free of duplicates). */
export function rollUp(events: Iterable<RollupEvent>): Rollup {
  const rollup = emptyRollup();
  for (const e of events) addToRollup(rollup, e);
  return rollup;
}

/** Folds one event into `rollup`. */
export function addToRollup({ hourly, addresses }: Rollup, e: RollupEvent): void {
  const ip = e.src.text;
  const hour = e.ts - (e.ts % HOUR);
  const sensor = e.sensor;
  const serviceIndex = e.service === null ? undefined : SERVICE_INDEX.get(e.service);
  const key = `${hour}|${ip}`;
  let h = hourly.get(key);
  if (!h) {
    h = { hour, ip, attacks: 0, services: 0, sources: 0, maxAction: 0, ports: new Set(), sensors: new Set(), firstSeen: e.ts, lastSeen: e.ts };
    hourly.set(key, h);
  }
  h.attacks++;
  if (serviceIndex !== undefined) h.services |= 1 << serviceIndex;
  h.sources |= e.source === 'honeypot' ? 1 : 2;
  if (e.action > h.maxAction) h.maxAction = e.action;
  if (e.dstPort !== null) h.ports.add(e.dstPort);
  h.sensors.add(sensor);
  if (e.ts < h.firstSeen) h.firstSeen = e.ts;
  if (e.ts > h.lastSeen) h.lastSeen = e.ts;

  let a = addresses.get(ip);
  if (!a) {
    a = {
      address: e.src, firstSeen: e.ts, lastSeen: e.ts, lastHoneypot: null, lastTelescope: null, lastInteraction: null,
      lastHigh: null, lastCritical: null, serviceLast: SERVICES.map(() => null), sensorLast: new Map(),
    };
    addresses.set(ip, a);
  }
  if (e.ts < a.firstSeen) a.firstSeen = e.ts;
  if (e.ts > a.lastSeen) a.lastSeen = e.ts;
  if (e.source === 'honeypot') {
    a.lastHoneypot = later(a.lastHoneypot, e.ts);
    if (e.action >= 1) a.lastInteraction = later(a.lastInteraction, e.ts);
  } else a.lastTelescope = later(a.lastTelescope, e.ts);
  if (e.action >= 1) a.lastHigh = later(a.lastHigh, e.ts);
  if (e.action === 2) a.lastCritical = later(a.lastCritical, e.ts);
  if (serviceIndex !== undefined) a.serviceLast[serviceIndex] = later(a.serviceLast[serviceIndex] ?? null, e.ts);
  const seen = a.sensorLast.get(sensor);
  if (seen === undefined || e.ts > seen) a.sensorLast.set(sensor, e.ts);
}

/** Distinct ports, smallest first, at most MAX_PORTS (the rule the SQL merge applies too). */
export function portList(ports: Set<number>): number[] {
  return [...ports].sort((a, b) => a - b).slice(0, MAX_PORTS);
}

/** Sensors newest first (ties by id), at most MAX_SENSORS; `sensorId` maps names to sensors.id. */
export function recentSensors(sensorLast: Map<string, number>, sensorId: (name: string) => number): [id: number, last: number][] {
  const byId: [id: number, last: number][] = [];
  for (const [name, last] of sensorLast) byId.push([sensorId(name), last]);
  return byId.sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, MAX_SENSORS);
}
