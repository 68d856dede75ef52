// The `ip_hourly` rows of one batch: per (address, hour) the attacks, services, sources, worst action, ports
// and sensors of the batch's events. They are appended to ip_hourly as they are (docs/data-model.md): rows of
// the same address and hour from other batches are summed by every reader and merged later by compaction.
// Addresses are the slots of the window's AddressFacts; rows live in typed arrays, chained per slot. Pure.
import { resized } from './typed-arrays.ts';

export const MAX_PORTS = 32;
const HOUR = 3_600_000;

/** Adds `port` to an ascending list of distinct ports that keeps the MAX_PORTS smallest. */
function addPort(ports: number[], port: number): void {
  let i = ports.length;
  while (i > 0 && (ports[i - 1] as number) > port) i--;
  if (i > 0 && ports[i - 1] === port) return;
  if (i >= MAX_PORTS) return;
  // Shifted by hand: splice allocates.
  let j = ports.length < MAX_PORTS ? ports.length : MAX_PORTS - 1;
  for (; j > i; j--) ports[j] = ports[j - 1] as number;
  ports[i] = port;
}

export class HourlyRows {
  count = 0;
  slot = new Int32Array(1024);
  hour = new Float64Array(1024);
  attacks = new Int32Array(1024);
  /** Bit i = SERVICES[i]. */
  services = new Int32Array(1024);
  /** Bit 0 honeypot, bit 1 telescope. */
  sources = new Uint8Array(1024);
  maxAction = new Uint8Array(1024);
  firstSeen = new Float64Array(1024);
  lastSeen = new Float64Array(1024);
  /** Distinct destination ports, ascending, at most MAX_PORTS. */
  ports: number[][] = [];
  /** Distinct local sensor numbers (SensorNames). */
  sensors: number[][] = [];
  private next = new Int32Array(1024);
  // The batch's first row of each address slot, valid where `stamp` equals this batch's generation (so that
  // clearing costs nothing per slot).
  private head = new Int32Array(4096);
  private stamp = new Int32Array(4096);
  private generation = 1;

  clear(): void {
    this.count = 0;
    this.generation++;
  }

  /** Folds one event into the row of (slot, its hour). `service`: index into SERVICES or -1; `port`: -1 = none. */
  add(slot: number, ts: number, source: number, action: number, service: number, port: number, sensor: number): void {
    const hour = ts - (ts % HOUR);
    if (slot >= this.head.length) this.growSlots(slot);
    let row = -1;
    if (this.stamp[slot] === this.generation) {
      for (let r = this.head[slot] as number; r >= 0; r = this.next[r] as number) {
        if (this.hour[r] === hour) {
          row = r;
          break;
        }
      }
    }
    if (row < 0) row = this.newRow(slot, hour, ts);
    this.attacks[row] = (this.attacks[row] as number) + 1;
    if (service >= 0) this.services[row] = (this.services[row] as number) | (1 << service);
    this.sources[row] = (this.sources[row] as number) | (source === 0 ? 1 : 2);
    if (action > (this.maxAction[row] as number)) this.maxAction[row] = action;
    if (port >= 0) addPort(this.ports[row] as number[], port);
    const sensors = this.sensors[row] as number[];
    if (!sensors.includes(sensor)) sensors.push(sensor);
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
    // Lists are reused with the row numbers (emptied, not reallocated).
    if (row < this.ports.length) {
      (this.ports[row] as number[]).length = 0;
      (this.sensors[row] as number[]).length = 0;
    } else {
      this.ports.push([]);
      this.sensors.push([]);
    }
    if (this.stamp[slot] === this.generation) this.next[row] = this.head[slot] as number;
    else {
      this.next[row] = -1;
      this.stamp[slot] = this.generation;
    }
    this.head[slot] = row;
    return row;
  }

  private growRows(): void {
    const n = this.slot.length * 2;
    this.slot = resized(this.slot, n);
    this.hour = resized(this.hour, n);
    this.attacks = resized(this.attacks, n);
    this.services = resized(this.services, n);
    this.sources = resized(this.sources, n);
    this.maxAction = resized(this.maxAction, n);
    this.firstSeen = resized(this.firstSeen, n);
    this.lastSeen = resized(this.lastSeen, n);
    this.next = resized(this.next, n);
  }

  private growSlots(slot: number): void {
    let n = this.head.length;
    while (n <= slot) n *= 2;
    this.head = resized(this.head, n);
    this.stamp = resized(this.stamp, n);
  }
}
