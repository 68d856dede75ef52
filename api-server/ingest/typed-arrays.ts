// Growing the typed arrays that hold an ingest's per-address and per-hour state (address-facts.ts, hourly.ts).

type Growable = Int32Array | Uint32Array | Uint16Array | Uint8Array | Float64Array;

/** A copy of `old` in a new array of its type with `length` elements, the added ones zero. */
export function resized<T extends Growable>(old: T, length: number): T {
  const next = new (old.constructor as new (length: number) => T)(length);
  next.set(old);
  return next;
}
