// PostgreSQL's binary COPY format, written straight into a reusable byte buffer: a header, then per row a
// field count and each field as a 32-bit length (-1 = NULL) followed by the type's binary "send" form, then a
// trailer. PostgreSQL reads timestamps, uuids, addresses and arrays as the bytes it stores instead of parsing
// their text, and the writer formats no strings. Pure apart from the buffer it owns.
import type { Address } from '../enrich/address.ts';

/** 'PGCOPY\n\377\r\n\0', then 32-bit flags and header-extension length, both 0. */
const HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** PostgreSQL's timestamp epoch (2000-01-01 UTC) in Unix milliseconds. */
const PG_EPOCH_MS = 946_684_800_000;
const TWO_32 = 4_294_967_296;
// Worst case of UTF-8 bytes per UTF-16 code unit.
const MAX_BYTES_PER_UNIT = 3;
// inet's binary form: family (PGSQL_AF_INET 2 / PGSQL_AF_INET6 3), prefix bits, is_cidr, address length
// (inet4 writes IPv4's 2, 32, 0, 4 one by one: it runs for every event).
const INET6 = [3, 128, 0, 16] as const;
// Element type oids of the arrays written here.
const INT4_OID = 23;
const TIMESTAMPTZ_OID = 1184;

/** Hex digit character code → its value (ids are validated or generated hex already). */
const NIBBLE = new Uint8Array(128);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) NIBBLE[65 + i] = NIBBLE[97 + i] = 10 + i;
/** Where each byte's two hex digits start in `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. */
const UUID_DIGITS = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

export class BinaryCopyWriter {
  private buffer: Buffer;
  // Numbers are stored through a DataView: its setters compile to plain stores, where Buffer's writeInt32BE
  // and friends are library calls with argument checks (a few million of them per ingest).
  private view: DataView;
  private length = 0;
  /** Scratch for idArray. */
  private ids = new Int32Array(8);

  constructor(initialBytes = 1 << 16) {
    this.buffer = Buffer.allocUnsafe(Math.max(initialBytes, 64));
    this.view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.length);
    this.clear();
  }

  /** Forgets the rows written; the buffer keeps its size. */
  clear(): void {
    this.length = HEADER.copy(this.buffer, 0);
  }

  /** Whether no row has been written since the last clear. */
  get empty(): boolean {
    return this.length === HEADER.length;
  }

  /** The rows as a complete COPY stream (a view into the buffer, valid until the next write or clear). */
  stream(): Buffer {
    this.reserve(2);
    // The trailer (-1 as int16) goes after the rows without being counted, so more rows may follow it.
    this.buffer[this.length] = 0xff;
    this.buffer[this.length + 1] = 0xff;
    return this.buffer.subarray(0, this.length + 2);
  }

  /**
   * The bytes written so far — the header first, if not taken yet — as a buffer of their own; the writer goes
   * on empty, without a header. For a COPY sent in pieces as it is encoded; the last piece is TRAILER.
   */
  takeChunk(): Buffer {
    const chunk = Buffer.from(this.buffer.subarray(0, this.length));
    this.length = 0;
    return chunk;
  }

  /** End of a binary COPY stream (-1 as int16). */
  static readonly TRAILER = Buffer.from([0xff, 0xff]);

  /**
   * The bytes written since the writer was cleared, as a latin1 string (one character per byte): fields encoded
   * once and written again with `raw` — a single copy where encoding them anew would take a call per field.
   */
  fieldsWritten(): string {
    return this.buffer.toString('latin1', HEADER.length, this.length);
  }

  /** Bytes given as a latin1 string (see fieldsWritten). */
  raw(bytes: string): void {
    this.reserve(bytes.length);
    this.length += this.buffer.write(bytes, this.length, 'latin1');
  }

  row(fields: number): void {
    this.reserve(2);
    this.view.setInt16(this.length, fields);
    this.length += 2;
  }

  null(): void {
    this.int32Raw(-1);
  }

  int16(value: number): void {
    this.reserve(6);
    this.int32Raw(2);
    this.view.setInt16(this.length, value);
    this.length += 2;
  }

  int32(value: number | null): void {
    if (value === null) return this.null();
    this.int32Raw(4);
    this.int32Raw(value);
  }

  timestamp(ms: number | null): void {
    if (ms === null) return this.null();
    this.int32Raw(8);
    this.timestampRaw(ms);
  }

  text(value: string | null): void {
    if (value === null) return this.null();
    this.reserve(4 + value.length * MAX_BYTES_PER_UNIT);
    const at = this.length + 4;
    const bytes = value.length === 0 ? 0 : this.buffer.write(value, at);
    this.view.setInt32(this.length, bytes);
    this.length = at + bytes;
  }

  /** A text field holding the bytes src[start, end) (already valid UTF-8), after the bytes of `prefix` if given. */
  bytes(src: Buffer, start: number, end: number, prefix?: Buffer): void {
    const n = end - start + (prefix ? prefix.length : 0);
    this.reserve(4 + n);
    const buf = this.buffer;
    this.view.setInt32(this.length, n);
    let at = this.length + 4;
    if (prefix) for (let i = 0; i < prefix.length; i++) buf[at++] = prefix[i] as number;
    // Short fields (most are) are copied faster byte by byte than through a native call.
    if (end - start <= 32) for (let i = start; i < end; i++) buf[at++] = src[i] as number;
    else at += src.copy(buf, at, start, end);
    this.length = at;
  }

  /**
   * A uuid given as the first 16 characters of a latin1 string, one byte per character (e.g. a digest taken
   * as latin1, which Node makes faster than hex and which needs no decoding here).
   */
  uuidLatin1(bytes: string): void {
    this.int32Raw(16);
    this.reserve(16);
    const buf = this.buffer;
    const at = this.length;
    for (let b = 0; b < 16; b++) buf[at + b] = bytes.charCodeAt(b);
    this.length = at + 16;
  }

  /** An IPv4 inet given as its number. */
  inet4(num: number): void {
    this.reserve(12);
    const buf = this.buffer;
    const at = this.length;
    this.view.setInt32(at, 8);
    buf[at + 4] = 2;
    buf[at + 5] = 32;
    buf[at + 6] = 0;
    buf[at + 7] = 4;
    this.view.setUint32(at + 8, num);
    this.length = at + 12;
  }

  /** A uuid given as its canonical text. */
  uuid(id: string): void {
    this.int32Raw(16);
    this.reserve(16);
    const buf = this.buffer;
    const at = this.length;
    for (let b = 0; b < 16; b++) {
      const i = UUID_DIGITS[b] as number;
      buf[at + b] = ((NIBBLE[id.charCodeAt(i) & 127] as number) << 4) | (NIBBLE[id.charCodeAt(i + 1) & 127] as number);
    }
    this.length = at + 16;
  }

  inet(address: Address): void {
    if (address.kind === 4) return this.inet4(address.num);
    this.reserve(24);
    this.int32Raw(20);
    this.buffer.set(INET6, this.length);
    this.view.setBigUint64(this.length + 4, address.hi);
    this.view.setBigUint64(this.length + 12, address.lo);
    this.length += 20;
  }

  /**
   * values[start, start + count) as int4[]. (Indexed loops throughout: an iterator allocates per element.) One
   * method per array type, so that V8 sees one type at each and never recompiles the encoders for another.
   */
  int32Array(values: Int32Array, start = 0, count = values.length - start): void {
    if (count === 0) return this.emptyArray(INT4_OID);
    this.arrayHeader(20 + count * 8, false, INT4_OID, count);
    for (let i = start; i < start + count; i++) {
      this.int32Raw(4);
      this.int32Raw(values[i] as number);
    }
  }

  /** values[start, start + count) as int4[] (see int32Array). */
  uint16Array(values: Uint16Array, start = 0, count = values.length - start): void {
    if (count === 0) return this.emptyArray(INT4_OID);
    this.arrayHeader(20 + count * 8, false, INT4_OID, count);
    for (let i = start; i < start + count; i++) {
      this.int32Raw(4);
      this.int32Raw(values[i] as number);
    }
  }

  /** values[0, n) mapped by `id` and sorted ascending, as int4[]. */
  idArray(values: readonly number[], id: (value: number) => number, n = values.length): void {
    if (n > this.ids.length) this.ids = new Int32Array(n * 2);
    const ids = this.ids;
    for (let i = 0; i < n; i++) ids[i] = id(values[i] as number);
    if (n === 2 && (ids[1] as number) < (ids[0] as number)) {
      const first = ids[0] as number;
      ids[0] = ids[1] as number;
      ids[1] = first;
    } else if (n > 2) ids.subarray(0, n).sort(); // a view per call, for the few rows with three or more
    this.int32Array(ids, 0, n);
  }

  /** values[start, start + count) as timestamptz[]; `null` is NULL, and so is 0 where `zeroIsNull`. */
  timestampArray(values: ArrayLike<number | null>, start = 0, count = values.length - start, zeroIsNull = false): void {
    if (count === 0) return this.emptyArray(TIMESTAMPTZ_OID);
    let nulls = 0;
    for (let i = start; i < start + count; i++) {
      const v = values[i];
      if (v === null || (zeroIsNull && v === 0)) nulls++;
    }
    this.arrayHeader(20 + nulls * 4 + (count - nulls) * 12, nulls > 0, TIMESTAMPTZ_OID, count);
    for (let i = start; i < start + count; i++) {
      const v = values[i] as number | null;
      if (v === null || (zeroIsNull && v === 0)) this.int32Raw(-1);
      else {
        this.int32Raw(8);
        this.timestampRaw(v);
      }
    }
  }

  /** Field length, then: dimensions (1), has-nulls flag, element type, and the one dimension's size and lower bound (1). */
  private arrayHeader(bytes: number, hasNulls: boolean, elementOid: number, size: number): void {
    this.reserve(4 + bytes);
    this.int32Raw(bytes);
    this.int32Raw(1);
    this.int32Raw(hasNulls ? 1 : 0);
    this.int32Raw(elementOid);
    this.int32Raw(size);
    this.int32Raw(1);
  }

  private emptyArray(elementOid: number): void {
    this.reserve(16);
    this.int32Raw(12);
    this.int32Raw(0);
    this.int32Raw(0);
    this.int32Raw(elementOid);
  }

  private int32Raw(value: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, value);
    this.length += 4;
  }

  private timestampRaw(ms: number): void {
    this.reserve(8);
    const micros = (ms - PG_EPOCH_MS) * 1000;
    const high = Math.floor(micros / TWO_32);
    this.view.setInt32(this.length, high);
    this.view.setUint32(this.length + 4, micros - high * TWO_32);
    this.length += 8;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(bigger, 0, 0, this.length);
    this.buffer = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
  }
}
