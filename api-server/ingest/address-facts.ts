// The `addresses` facts of one ingest window, folded in event by event: per address the first and last
// sighting and the last time each window-dependent fact held. Every fact is a maximum (first_seen a minimum),
// so folding in an event stored already changes nothing. Kept in typed arrays indexed by a slot per address,
// not objects, which every major collection would trace (docs/data-model.md "Ingest"). Pure apart from them.
import { SERVICES } from '../../common/vocabulary.ts';
import { ipv4Address, type Address } from '../../common/ip.ts';

export const MAX_SENSORS = 8;
const SERVICE_COUNT = SERVICES.length;

/** Source codes of the per-event folds. */
export const HONEYPOT = 0;
export const TELESCOPE = 1;

export class AddressFacts {
  /** Addresses held. */
  size = 0;
  /** Slots by address: IPv4 as its number (as an int32, which V8 keeps unboxed), IPv6 as its text. */
  private readonly slots = new Map<number | string, number>();
  /** IPv4 address of each slot as a number; IPv6 addresses by slot. */
  private v4s = new Uint32Array(0);
  private readonly v6 = new Map<number, Address>();

  firstSeen = new Float64Array(0);
  lastSeen = new Float64Array(0);
  // 0 = never (no event is older than 2000).
  lastHoneypot = new Float64Array(0);
  lastTelescope = new Float64Array(0);
  lastInteraction = new Float64Array(0);
  lastHigh = new Float64Array(0);
  lastCritical = new Float64Array(0);
  /** SERVICE_COUNT per slot. */
  serviceLast = new Float64Array(0);
  /** Up to MAX_SENSORS (local sensor number, last sighting) per slot, in no particular order. */
  sensorLocal = new Int32Array(0);
  sensorTime = new Float64Array(0);
  sensorCount = new Uint8Array(0);
  /** 1 where the address is in `addresses` already (looked up by the writer for slots below `checked`). */
  known = new Uint8Array(0);
  checked = 0;

  constructor(initialCapacity = 4096) {
    this.grow(initialCapacity);
  }

  /** The slot of an IPv4 address given as a number, made (with no facts yet) if new. */
  slotOfV4(num: number): number {
    let slot = this.slots.get(num | 0);
    if (slot === undefined) {
      slot = this.add();
      this.slots.set(num | 0, slot);
      this.v4s[slot] = num;
    }
    return slot;
  }

  /** The slot of an address, made if new. */
  slotOf(address: Address): number {
    if (address.kind === 4) return this.slotOfV4(address.num);
    let slot = this.slots.get(address.text);
    if (slot === undefined) {
      slot = this.add();
      this.slots.set(address.text, slot);
      this.v6.set(slot, address);
    }
    return slot;
  }

  /** Whether the slot holds an IPv4 address. */
  isV4(slot: number): boolean {
    return !this.v6.has(slot);
  }

  /** IPv4 address of a slot as a number (valid when isV4). */
  v4(slot: number): number {
    return this.v4s[slot] as number;
  }

  /** The address of a slot. */
  address(slot: number): Address {
    const v6 = this.v6.get(slot);
    if (v6) return v6;
    return ipv4Address(this.v4(slot));
  }

  /** Folds one event of the address in `slot` into its facts. `service` is an index into SERVICES or -1. */
  fold(slot: number, ts: number, source: number, action: number, service: number, sensor: number): void {
    if (ts < (this.firstSeen[slot] as number)) this.firstSeen[slot] = ts;
    if (ts > (this.lastSeen[slot] as number)) this.lastSeen[slot] = ts;
    if (source === HONEYPOT) {
      if (ts > (this.lastHoneypot[slot] as number)) this.lastHoneypot[slot] = ts;
      if (action >= 1 && ts > (this.lastInteraction[slot] as number)) this.lastInteraction[slot] = ts;
    } else if (ts > (this.lastTelescope[slot] as number)) this.lastTelescope[slot] = ts;
    if (action >= 1 && ts > (this.lastHigh[slot] as number)) this.lastHigh[slot] = ts;
    if (action === 2 && ts > (this.lastCritical[slot] as number)) this.lastCritical[slot] = ts;
    if (service >= 0) {
      const s = slot * SERVICE_COUNT + service;
      if (ts > (this.serviceLast[s] as number)) this.serviceLast[s] = ts;
    }
    this.foldSensor(slot, ts, sensor);
  }

  /**
   * Keeps the MAX_SENSORS sensors that saw the address last, each with its last sighting: a sensor already
   * kept gets the later time; a new one takes a free place or the place of the one seen longest ago, if it is
   * more recent than that. (Which of two sensors with the very same last millisecond is kept is unspecified:
   * no fact read from `addresses` depends on it.)
   */
  private foldSensor(slot: number, ts: number, sensor: number): void {
    const base = slot * MAX_SENSORS;
    const count = this.sensorCount[slot] as number;
    let oldest = -1;
    for (let i = base; i < base + count; i++) {
      if (this.sensorLocal[i] === sensor) {
        if (ts > (this.sensorTime[i] as number)) this.sensorTime[i] = ts;
        return;
      }
      if (oldest < 0 || (this.sensorTime[i] as number) < (this.sensorTime[oldest] as number)) oldest = i;
    }
    if (count < MAX_SENSORS) {
      this.sensorLocal[base + count] = sensor;
      this.sensorTime[base + count] = ts;
      this.sensorCount[slot] = count + 1;
    } else if (ts > (this.sensorTime[oldest] as number)) {
      this.sensorLocal[oldest] = sensor;
      this.sensorTime[oldest] = ts;
    }
  }

  /**
   * Puts a slot's sensors in the order `addresses` keeps them — newest first, ties by sensors.id — with their
   * local numbers replaced by sensors.id (`dbId`); returns how many there are. In place: the slot's sensors
   * are then at sensorLocal / sensorTime [slot * MAX_SENSORS, + count).
   */
  orderSensors(slot: number, dbId: (local: number) => number): number {
    const base = slot * MAX_SENSORS;
    const n = this.sensorCount[slot] as number;
    const ids = this.sensorLocal;
    const times = this.sensorTime;
    for (let i = base; i < base + n; i++) ids[i] = dbId(ids[i] as number);
    // Insertion sort: at most MAX_SENSORS entries.
    for (let i = base + 1; i < base + n; i++) {
      const id = ids[i] as number;
      const t = times[i] as number;
      let j = i - 1;
      while (j >= base && ((times[j] as number) < t || ((times[j] as number) === t && (ids[j] as number) > id))) {
        ids[j + 1] = ids[j] as number;
        times[j + 1] = times[j] as number;
        j--;
      }
      ids[j + 1] = id;
      times[j + 1] = t;
    }
    return n;
  }

  /** A new slot, with no facts yet. */
  private add(): number {
    const slot = this.size++;
    if (slot === this.firstSeen.length) this.grow(slot * 2);
    this.firstSeen[slot] = Infinity;
    return slot;
  }

  private grow(capacity: number): void {
    this.v4s = resized(this.v4s, capacity);
    this.firstSeen = resized(this.firstSeen, capacity);
    this.lastSeen = resized(this.lastSeen, capacity);
    this.lastHoneypot = resized(this.lastHoneypot, capacity);
    this.lastTelescope = resized(this.lastTelescope, capacity);
    this.lastInteraction = resized(this.lastInteraction, capacity);
    this.lastHigh = resized(this.lastHigh, capacity);
    this.lastCritical = resized(this.lastCritical, capacity);
    this.serviceLast = resized(this.serviceLast, capacity * SERVICE_COUNT);
    this.sensorLocal = resized(this.sensorLocal, capacity * MAX_SENSORS);
    this.sensorTime = resized(this.sensorTime, capacity * MAX_SENSORS);
    this.sensorCount = resized(this.sensorCount, capacity);
    this.known = resized(this.known, capacity);
  }
}

/** A copy of a typed array in a new one of its type with `length` elements, the added ones zero. */
export function resized<T extends Int32Array | Uint32Array | Uint16Array | Uint8Array | Float64Array>(old: T, length: number): T {
  const next = new (old.constructor as new (length: number) => T)(length);
  next.set(old);
  return next;
}
