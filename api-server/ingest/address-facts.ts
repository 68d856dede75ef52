// The `addresses` facts of one ingest window, folded in event by event (docs/data-model.md "Ingest path"):
// per address the first and last sighting and the last time each window-dependent fact held. Every fact is a
// maximum (or, for first_seen, a minimum), so folding in an event that turns out to be stored already changes
// nothing — which is why a window folds every parsed event here without waiting to learn which were new.
//
// Kept in typed arrays indexed by a slot per address and found through an open-addressing table, not in
// objects: a window holds up to hundreds of thousands of addresses for seconds, and as objects they would be
// promoted and traced by every major collection. Pure apart from the arrays it owns.
import { SERVICES } from '../../common/vocabulary.ts';
import { formatIPv4 } from '../../common/ipv4.ts';
import { type Address } from '../enrich/address.ts';
import { resized } from './typed-arrays.ts';

export const MAX_SENSORS = 8;
// Slots below this sort with their IPv4 address as one exact double (2^32 * 2^21 = 2^53).
const SLOT_SPAN = 2 ** 21;
const SERVICE_COUNT = SERVICES.length;

/** Source codes of the per-event folds. */
export const HONEYPOT = 0;
export const TELESCOPE = 1;

function mix(x: number): number {
  let h = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return h ^ (h >>> 16);
}

export class AddressFacts {
  /** Addresses held. */
  size = 0;
  private capacity = 0;
  // Key of each slot as four 32-bit words of the IPv6 form (IPv4 as ::ffff:a.b.c.d).
  private keys = new Uint32Array(0);
  /** Slot + 1 per table position, 0 = free. */
  private table = new Int32Array(0);
  /** IPv6 addresses by slot (IPv4 ones are rebuilt from their number when needed). */
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

  /** Forgets every address; the arrays keep their size. */
  clear(): void {
    this.size = 0;
    this.checked = 0;
    this.table.fill(0);
    this.v6.clear();
  }

  /** The slot of an IPv4 address given as a number, made (with no facts yet) if new. */
  slotOfV4(num: number): number {
    const mask = this.table.length - 1;
    const keys = this.keys;
    for (let at = mix(num) & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at] as number;
      if (entry === 0) return this.add(at, 0, 0, 0xffff, num);
      const k = (entry - 1) * 4;
      if (keys[k + 3] === num && keys[k + 2] === 0xffff && keys[k] === 0 && keys[k + 1] === 0) return entry - 1;
    }
  }

  /** The slot of an address, made if new. */
  slotOf(address: Address): number {
    if (address.kind === 4) return this.slotOfV4(address.num);
    const w0 = Number(address.hi >> 32n);
    const w1 = Number(address.hi & 0xffffffffn);
    const w2 = Number(address.lo >> 32n);
    const w3 = Number(address.lo & 0xffffffffn);
    const mask = this.table.length - 1;
    const keys = this.keys;
    for (let at = mix(w0 ^ mix(w1 ^ mix(w2 ^ mix(w3)))) & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at] as number;
      if (entry === 0) {
        const slot = this.add(at, w0, w1, w2, w3);
        this.v6.set(slot, address);
        return slot;
      }
      const k = (entry - 1) * 4;
      if (keys[k] === w0 && keys[k + 1] === w1 && keys[k + 2] === w2 && keys[k + 3] === w3) return entry - 1;
    }
  }

  /** Whether the slot holds an IPv4 address. */
  isV4(slot: number): boolean {
    return !this.v6.has(slot);
  }

  /** IPv4 address of a slot as a number (valid when isV4). */
  v4(slot: number): number {
    return this.keys[slot * 4 + 3] as number;
  }

  /** The address of a slot. */
  address(slot: number): Address {
    const v6 = this.v6.get(slot);
    if (v6) return v6;
    const num = this.v4(slot);
    return { kind: 4, text: formatIPv4(num), num };
  }

  /**
   * The slots in the order PostgreSQL sorts their addresses (IPv4 before IPv6, each by its bytes). Rows
   * written in this order go into the `addresses` key at its right edge, or next to the last one, instead of
   * each at a random place in it (which costs a descent of the index and a cold page per row).
   * `packedUpTo`: the most slots sorted as packed numbers (lower only to test the other way).
   */
  slotsInAddressOrder(packedUpTo = SLOT_SPAN): Int32Array {
    const order = new Int32Array(this.size);
    const v6: number[] = [];
    let n4 = 0;
    for (let slot = 0; slot < this.size; slot++) {
      if (this.v6.has(slot)) v6.push(slot);
      else order[n4++] = slot;
    }
    const v4 = order.subarray(0, n4);
    if (this.size <= packedUpTo) {
      // Each as one number, address * SLOT_SPAN + slot: a numeric sort needs no comparator calls.
      const packed = Float64Array.from(v4, (slot) => this.v4(slot) * SLOT_SPAN + slot).sort();
      for (let i = 0; i < n4; i++) v4[i] = (packed[i] as number) % SLOT_SPAN;
    } else v4.sort((a, b) => this.v4(a) - this.v4(b));
    const keys = this.keys;
    v6.sort((a, b) => {
      for (let w = 0; w < 4; w++) {
        const d = (keys[a * 4 + w] as number) - (keys[b * 4 + w] as number);
        if (d !== 0) return d;
      }
      return 0;
    });
    order.set(v6, n4);
    return order;
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

  private add(at: number, w0: number, w1: number, w2: number, w3: number): number {
    if (this.size === this.capacity) {
      this.grow(this.capacity * 2);
      const slot = this.size++;
      this.setKey(slot, w0, w1, w2, w3);
      this.place(slot);
      return slot;
    }
    const slot = this.size++;
    this.table[at] = slot + 1;
    this.setKey(slot, w0, w1, w2, w3);
    return slot;
  }

  private setKey(slot: number, w0: number, w1: number, w2: number, w3: number): void {
    const k = slot * 4;
    this.keys[k] = w0;
    this.keys[k + 1] = w1;
    this.keys[k + 2] = w2;
    this.keys[k + 3] = w3;
    this.firstSeen[slot] = Infinity;
    this.lastSeen[slot] = 0;
    this.lastHoneypot[slot] = 0;
    this.lastTelescope[slot] = 0;
    this.lastInteraction[slot] = 0;
    this.lastHigh[slot] = 0;
    this.lastCritical[slot] = 0;
    this.serviceLast.fill(0, slot * SERVICE_COUNT, (slot + 1) * SERVICE_COUNT);
    this.sensorCount[slot] = 0;
    this.known[slot] = 0;
  }

  private place(slot: number): void {
    const k = slot * 4;
    const keys = this.keys;
    const hash = keys[k + 2] === 0xffff && keys[k] === 0 && keys[k + 1] === 0
      ? mix(keys[k + 3] as number)
      : mix((keys[k] as number) ^ mix((keys[k + 1] as number) ^ mix((keys[k + 2] as number) ^ mix(keys[k + 3] as number))));
    const mask = this.table.length - 1;
    let at = hash & mask;
    while (this.table[at] !== 0) at = (at + 1) & mask;
    this.table[at] = slot + 1;
  }

  private grow(capacity: number): void {
    this.keys = resized(this.keys, capacity * 4);
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
    this.capacity = capacity;
    // A table at most half full keeps probe sequences short.
    this.table = new Int32Array(capacity * 2);
    for (let slot = 0; slot < this.size; slot++) this.place(slot);
  }
}
