// The `ip_hourly` rows of one batch: per (address, hour) the attacks, services, sources, worst action, ports
// and sensors of the batch's events. They are appended to ip_hourly as they are (docs/data-model.md): rows of
// the same address and hour from other batches are summed by every reader and merged later by compaction.
// Addresses are the slots of the window's AddressFacts; rows live in typed arrays (no object per row: see
// address-facts.ts), chained per slot. Pure.
import { HONEYPOT, resized } from './address-facts.ts';

export const MAX_PORTS = 32;
const HOUR = 3_600_000;

/**
 * Adds `port` to the ascending list of distinct ports ports[from, from + count), which keeps the MAX_PORTS
 * smallest; returns the list's new length.
 */
function addPort(ports: Uint16Array, from: number, count: number, port: number): number {
  let i = from + count;
  while (i > from && (ports[i - 1] as number) > port) i--;
  if (i > from && ports[i - 1] === port) return count;
  if (i >= from + MAX_PORTS) return count;
  const kept = count < MAX_PORTS ? count + 1 : MAX_PORTS;
  // Shifted by hand: lists are short, and most ports go at the end.
  for (let j = from + kept - 1; j > i; j--) ports[j] = ports[j - 1] as number;
  ports[i] = port;
  return kept;
}

export class HourlyRows {
  count = 0;
  slot = new Int32Array(0);
  hour = new Float64Array(0);
  attacks = new Int32Array(0);
  /** Bit i = SERVICES[i]. */
  services = new Int32Array(0);
  /** Bit 0 honeypot, bit 1 telescope. */
  sources = new Uint8Array(0);
  maxAction = new Uint8Array(0);
  firstSeen = new Float64Array(0);
  lastSeen = new Float64Array(0);
  /** Per row, distinct destination ports ascending: ports[row * MAX_PORTS, + portCount[row]) (64 bytes a row). */
  ports = new Uint16Array(0);
  portCount = new Uint8Array(0);
  /** Per row, distinct local sensor numbers (SensorNames): sensors[row][0, sensorCount[row]), lists reused batch after batch. */
  sensors: number[][] = [];
  sensorCount = new Int32Array(0);
  /** The row each slot had before its last one in this batch (-1: none). */
  private next = new Int32Array(0);
  /** The last row of each slot in this batch. */
  private readonly last = new Map<number, number>();

  constructor() {
    this.growRows(1024);
  }

  clear(): void {
    this.count = 0;
    this.last.clear();
  }

  /** Folds one event into the row of (slot, its hour). `service`: index into SERVICES or -1; `port`: -1 = none. */
  add(slot: number, ts: number, source: number, action: number, service: number, port: number, sensor: number): void {
    const hour = ts - (ts % HOUR);
    let row = this.last.get(slot) ?? -1;
    while (row >= 0 && this.hour[row] !== hour) row = this.next[row] as number;
    if (row < 0) row = this.newRow(slot, hour, ts);
    this.attacks[row] = (this.attacks[row] as number) + 1;
    if (service >= 0) this.services[row] = (this.services[row] as number) | (1 << service);
    this.sources[row] = (this.sources[row] as number) | (source === HONEYPOT ? 1 : 2);
    if (action > (this.maxAction[row] as number)) this.maxAction[row] = action;
    if (port >= 0) this.portCount[row] = addPort(this.ports, row * MAX_PORTS, this.portCount[row] as number, port);
    const sensors = this.sensors[row] as number[];
    const count = this.sensorCount[row] as number;
    let known = false;
    for (let i = 0; i < count && !known; i++) known = sensors[i] === sensor;
    if (!known) {
      sensors[count] = sensor;
      this.sensorCount[row] = count + 1;
    }
    if (ts < (this.firstSeen[row] as number)) this.firstSeen[row] = ts;
    if (ts > (this.lastSeen[row] as number)) this.lastSeen[row] = ts;
  }

  private newRow(slot: number, hour: number, ts: number): number {
    const row = this.count++;
    if (row >= this.slot.length) this.growRows();
    this.slot[row] = slot;
    this.hour[row] = hour;
    this.attacks[row] = 0;
    this.services[row] = 0;
    this.sources[row] = 0;
    this.maxAction[row] = 0;
    this.firstSeen[row] = ts;
    this.lastSeen[row] = ts;
    this.portCount[row] = 0;
    this.sensorCount[row] = 0;
    if (row >= this.sensors.length) this.sensors.push([]);
    this.next[row] = this.last.get(slot) ?? -1;
    this.last.set(slot, row);
    return row;
  }

  private growRows(n = this.slot.length * 2): void {
    this.slot = resized(this.slot, n);
    this.hour = resized(this.hour, n);
    this.attacks = resized(this.attacks, n);
    this.services = resized(this.services, n);
    this.sources = resized(this.sources, n);
    this.maxAction = resized(this.maxAction, n);
    this.firstSeen = resized(this.firstSeen, n);
    this.lastSeen = resized(this.lastSeen, n);
    this.next = resized(this.next, n);
    this.ports = resized(this.ports, n * MAX_PORTS);
    this.portCount = resized(this.portCount, n);
    this.sensorCount = resized(this.sensorCount, n);
  }
}
