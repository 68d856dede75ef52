// Compact sorted range tables with binary search: IPv4 ranges in Uint32Arrays, IPv6 ranges as 64-bit halves
// in BigUint64Arrays, each range carrying a small integer value (an index into a dictionary kept by the
// caller). Built once from sorted, non-overlapping ranges. Pure apart from the arrays they own.

export class Ipv4Ranges {
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
  readonly values: Uint32Array;
  readonly size: number;

  constructor(starts: Uint32Array, ends: Uint32Array, values: Uint32Array, size: number) {
    this.starts = starts;
    this.ends = ends;
    this.values = values;
    this.size = size;
  }

  // firstFrom[p]: index of the first range starting at or after p << 16 (p = 0 … 65536). The search for an
  // address then only looks at the ranges that start in its /16 (and the one before them), a few cache lines
  // instead of the ~19 scattered probes of a search over the whole table. Built on first use.
  private firstFrom: Uint32Array | undefined;

  /** The value of the range holding `ip`, or -1. */
  find(ip: number): number {
    const firstFrom = (this.firstFrom ??= this.indexBySlash16());
    const p = ip >>> 16;
    // The answer is the last range starting at or before ip: at firstFrom[p] - 1 or later, before firstFrom[p + 1].
    let lo = Math.max(0, (firstFrom[p] as number) - 1);
    let hi = (firstFrom[p + 1] as number) - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.starts[mid] as number) <= ip) lo = mid + 1;
      else hi = mid - 1;
    }
    // hi = last range starting at or before ip
    return hi >= 0 && ip <= (this.ends[hi] as number) ? (this.values[hi] as number) : -1;
  }

  private indexBySlash16(): Uint32Array {
    const firstFrom = new Uint32Array(65537);
    let i = 0;
    for (let p = 0; p <= 65536; p++) {
      while (i < this.size && (this.starts[i] as number) < p * 65536) i++;
      firstFrom[p] = i;
    }
    return firstFrom;
  }
}

export class Ipv6Ranges {
  readonly startHi: BigUint64Array;
  readonly startLo: BigUint64Array;
  readonly endHi: BigUint64Array;
  readonly endLo: BigUint64Array;
  readonly values: Uint32Array;
  readonly size: number;

  constructor(arrays: { startHi: BigUint64Array; startLo: BigUint64Array; endHi: BigUint64Array; endLo: BigUint64Array; values: Uint32Array }, size: number) {
    this.startHi = arrays.startHi;
    this.startLo = arrays.startLo;
    this.endHi = arrays.endHi;
    this.endLo = arrays.endLo;
    this.values = arrays.values;
    this.size = size;
  }

  find(hi: bigint, lo: bigint): number {
    let a = 0;
    let b = this.size - 1;
    while (a <= b) {
      const mid = (a + b) >>> 1;
      const sh = this.startHi[mid] as bigint;
      if (sh < hi || (sh === hi && (this.startLo[mid] as bigint) <= lo)) a = mid + 1;
      else b = mid - 1;
    }
    if (b < 0) return -1;
    const eh = this.endHi[b] as bigint;
    return hi < eh || (hi === eh && lo <= (this.endLo[b] as bigint)) ? (this.values[b] as number) : -1;
  }
}

/** Accumulates IPv4 ranges (in any order) and freezes them into a sorted Ipv4Ranges. */
export class Ipv4RangesBuilder {
  private starts: Uint32Array;
  private ends: Uint32Array;
  private values: Uint32Array;
  private n = 0;

  /** `capacity`: the expected number of ranges (exact = no growth, no copies). */
  constructor(capacity = 1024) {
    this.starts = new Uint32Array(capacity);
    this.ends = new Uint32Array(capacity);
    this.values = new Uint32Array(capacity);
  }

  add(start: number, end: number, value: number): void {
    if (this.n === this.starts.length) {
      const grow = (a: Uint32Array) => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
      this.values = grow(this.values);
    }
    this.starts[this.n] = start;
    this.ends[this.n] = end;
    this.values[this.n] = value;
    this.n++;
  }

  build(): Ipv4Ranges {
    let sorted = true;
    for (let i = 1; i < this.n && sorted; i++) sorted = (this.starts[i - 1] as number) <= (this.starts[i] as number);
    if (sorted) {
      const fit = (a: Uint32Array) => (a.length === this.n ? a : a.slice(0, this.n));
      return new Ipv4Ranges(fit(this.starts), fit(this.ends), fit(this.values), this.n);
    }
    const order = Array.from({ length: this.n }, (_, i) => i);
    order.sort((a, b) => (this.starts[a] as number) - (this.starts[b] as number));
    const pick = (a: Uint32Array) => Uint32Array.from(order, (i) => a[i] as number);
    return new Ipv4Ranges(pick(this.starts), pick(this.ends), pick(this.values), this.n);
  }
}

export class Ipv6RangesBuilder {
  private rows: { sh: bigint; sl: bigint; eh: bigint; el: bigint; v: number }[] = [];

  add(start: bigint, end: bigint, value: number): void {
    const mask = (1n << 64n) - 1n;
    this.rows.push({ sh: start >> 64n, sl: start & mask, eh: end >> 64n, el: end & mask, v: value });
  }

  build(): Ipv6Ranges {
    this.rows.sort((a, b) => (a.sh < b.sh ? -1 : a.sh > b.sh ? 1 : a.sl < b.sl ? -1 : a.sl > b.sl ? 1 : 0));
    const r = this.rows;
    const ranges = new Ipv6Ranges(
      {
        startHi: BigUint64Array.from(r, (x) => x.sh),
        startLo: BigUint64Array.from(r, (x) => x.sl),
        endHi: BigUint64Array.from(r, (x) => x.eh),
        endLo: BigUint64Array.from(r, (x) => x.el),
        values: Uint32Array.from(r, (x) => x.v),
      },
      r.length,
    );
    this.rows = [];
    return ranges;
  }
}
