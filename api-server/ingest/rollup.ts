// Per-batch pre-aggregation of events into the rows ip_hourly and addresses are upserted from: the same
// facts the SQL would compute from the inserted rows, computed while the database is busy with the previous
// batch. Events are folded in one at a time as they are parsed, so that a batch never keeps its events as
// objects (they die young instead of being promoted while the batch waits for the database). Sensors are
// kept by name here and mapped to sensors.id when the rollup is staged. Pure.
import { SERVICES } from '../../common/vocabulary.ts';
import type { AddressActivity } from '../classify/classification.ts';
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
  /** The smallest distinct ports, ascending, at most MAX_PORTS (the rule the SQL merge applies too). */
  ports: number[];
  /** distinct sensor names */
  sensors: string[];
  firstSeen: number;
  lastSeen: number;
}

/** One address's activity in a batch, folded the way `addresses` keeps it (classify/classification.ts). */
export interface AddressRow extends AddressActivity {
  address: Address;
  firstSeen: number;
  /** Distinct sensor names and, at the same index, each one's last sighting. */
  sensorNames: string[];
  sensorTimes: number[];
  /** The address's rows for ip_hourly (a batch spans few hours, so this stays short). */
  hours: HourlyRow[];
}

const SERVICE_INDEX = new Map<string, number>(SERVICES.map((s, i) => [s, i]));
const later = (a: number | null, b: number) => (a === null || b > a ? b : a);

/**
 * Keyed by address text. Small arrays rather than Sets, Maps and composite keys: a batch's rollup lives until
 * the batch is stored, long enough to be promoted to the old generation, so its object count is what sets the
 * ingest's heap growth.
 */
export interface Rollup {
  addresses: Map<string, AddressRow>;
}

/** The fields of an event a rollup reads. */
export type RollupEvent = Pick<AttackEvent, 'ts' | 'src' | 'dstPort' | 'service' | 'source' | 'sensor' | 'action'>;

export const emptyRollup = (): Rollup => ({ addresses: new Map() });

/** Aggregates `events` (already free of duplicates). */
export function rollUp(events: Iterable<RollupEvent>): Rollup {
  const rollup = emptyRollup();
  for (const e of events) addToRollup(rollup, e);
  return rollup;
}

/** Adds `port` to an ascending list of distinct ports capped at MAX_PORTS. */
function addPort(ports: number[], port: number): void {
  let i = ports.length;
  while (i > 0 && (ports[i - 1] as number) > port) i--;
  if (i > 0 && ports[i - 1] === port) return;
  if (i >= MAX_PORTS) return;
  ports.splice(i, 0, port);
  if (ports.length > MAX_PORTS) ports.length = MAX_PORTS;
}

/** Folds one event into `rollup`. */
export function addToRollup({ addresses }: Rollup, e: RollupEvent): void {
  const ip = e.src.text;
  const ts = e.ts;
  const hour = ts - (ts % HOUR);
  const sensor = e.sensor;
  const serviceIndex = e.service === null ? undefined : SERVICE_INDEX.get(e.service);

  let a = addresses.get(ip);
  if (!a) {
    a = {
      address: e.src, firstSeen: ts, lastSeen: ts, lastHoneypot: null, lastTelescope: null, lastInteraction: null,
      lastHigh: null, lastCritical: null, serviceLast: SERVICES.map(() => null), sensorNames: [], sensorTimes: [], hours: [],
    };
    addresses.set(ip, a);
  }
  if (ts < a.firstSeen) a.firstSeen = ts;
  if (ts > a.lastSeen) a.lastSeen = ts;
  if (e.source === 'honeypot') {
    a.lastHoneypot = later(a.lastHoneypot, ts);
    if (e.action >= 1) a.lastInteraction = later(a.lastInteraction, ts);
  } else a.lastTelescope = later(a.lastTelescope, ts);
  if (e.action >= 1) a.lastHigh = later(a.lastHigh, ts);
  if (e.action === 2) a.lastCritical = later(a.lastCritical, ts);
  if (serviceIndex !== undefined) a.serviceLast[serviceIndex] = later(a.serviceLast[serviceIndex] ?? null, ts);
  const s = a.sensorNames.indexOf(sensor);
  if (s < 0) {
    a.sensorNames.push(sensor);
    a.sensorTimes.push(ts);
  } else if (ts > (a.sensorTimes[s] as number)) a.sensorTimes[s] = ts;

  let h: HourlyRow | undefined;
  for (const row of a.hours) {
    if (row.hour === hour) {
      h = row;
      break;
    }
  }
  if (!h) {
    h = { hour, ip, attacks: 0, services: 0, sources: 0, maxAction: 0, ports: [], sensors: [], firstSeen: ts, lastSeen: ts };
    a.hours.push(h);
  }
  h.attacks++;
  if (serviceIndex !== undefined) h.services |= 1 << serviceIndex;
  h.sources |= e.source === 'honeypot' ? 1 : 2;
  if (e.action > h.maxAction) h.maxAction = e.action;
  if (e.dstPort !== null) addPort(h.ports, e.dstPort);
  if (!h.sensors.includes(sensor)) h.sensors.push(sensor);
  if (ts < h.firstSeen) h.firstSeen = ts;
  if (ts > h.lastSeen) h.lastSeen = ts;
}

/** Every ip_hourly row of the rollup. */
export function* hourlyRows(rollup: Rollup): Generator<HourlyRow> {
  for (const a of rollup.addresses.values()) yield* a.hours;
}

/** Sensors newest first (ties by id), at most MAX_SENSORS; `sensorId` maps names to sensors.id. */
export function recentSensors(a: Pick<AddressRow, 'sensorNames' | 'sensorTimes'>, sensorId: (name: string) => number): [id: number, last: number][] {
  const byId = a.sensorNames.map((name, i): [id: number, last: number] => [sensorId(name), a.sensorTimes[i] as number]);
  return byId.sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, MAX_SENSORS);
}
