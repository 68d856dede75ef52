// IP addresses and CIDRs, IPv4 and IPv6, for both programs: parsing, canonical text, prefix arithmetic and
// membership of an address in a set of CIDRs (the never-block table is one, common/never-block.ts).
//
// Parsing is strict, so that every reader of an address agrees on what it names: an IPv4 address is exactly
// four decimal octets without leading zeros (which some parsers read as octal); an IPv6 address is RFC 4291
// text, its embedded dotted quad held to the same rule, without a zone id (fe80::1%eth0 names an interface
// of the reader's, not a remote host). Text out is canonical: dotted quads and RFC 5952.
//
// ipaddr.js parses and formats. Hand-written dotted-quad readers remain for the hot loops only, where a
// benchmark showed they pay for themselves (docs/design.md "IP addresses"): parseIPv4 for text,
// IPv4BytesReader and parseIPv4Bytes for ASCII bytes. A property test holds them to ipaddr.js.
import ipaddr from 'ipaddr.js';

/** An address with its canonical text: IPv4 as an unsigned 32-bit number, IPv6 as two 64-bit halves. */
export type Address =
  | { readonly kind: 4; readonly text: string; readonly num: number }
  | { readonly kind: 6; readonly text: string; readonly hi: bigint; readonly lo: bigint };

/** A network: its first address (host bits clear) and prefix length. */
export type Cidr = { readonly kind: 4; readonly network: number; readonly prefix: number } | { readonly kind: 6; readonly network: bigint; readonly prefix: number };

const MASK_64 = (1n << 64n) - 1n;
const ALL_V6 = (1n << 128n) - 1n;
/** A prefix length as text: decimal, no sign, no leading zeros. */
const PREFIX_TEXT = /^(0|[1-9][0-9]{0,2})$/;
/** The deprecated IPv4-compatible form "::a.b.c.d", which ipaddr.js reads as IPv4-mapped. */
const IPV4_COMPATIBLE = /^::(?=[0-9]+\.)/;

// --- Addresses ------------------------------------------------------------------------------------------

/**
 * One address, IPv4 or IPv6 (no prefix length, no surrounding space), or undefined. An IPv4-mapped IPv6
 * address (::ffff:192.0.2.1) is the IPv4 host it carries, as the socket that reported it meant.
 */
export function parseAddress(text: string): Address | undefined {
  const num = parseIPv4(text);
  if (num >= 0) return ipv4Address(num);
  const v6 = parseIPv6(text);
  if (!v6) return undefined;
  if (v6.isIPv4MappedAddress()) return ipv4Address(ipv4Value(v6.toIPv4Address().octets));
  const value = partsValue(v6.parts);
  return { kind: 6, text: v6.toRFC5952String(), hi: value >> 64n, lo: value & MASK_64 };
}

/** IPv6 text as ipaddr.js reads it, held to this module's rules; undefined when it breaks one. */
function parseIPv6(text: string): ipaddr.IPv6 | undefined {
  if (!text.includes(':') || text.includes('%') || !ipaddr.IPv6.isValid(text)) return undefined;
  if (!text.includes('.')) return ipaddr.IPv6.parse(text);
  // ipaddr.js reads the embedded dotted quad leniently (leading zeros, hex): hold it to the IPv4 rule.
  if (!ipaddr.IPv4.isValidFourPartDecimal(text.slice(text.lastIndexOf(':') + 1))) return undefined;
  // "::a.b.c.d" is ::a.b.c.d (RFC 4291, PostgreSQL, inet_pton), not ::ffff:a.b.c.d as ipaddr.js has it.
  return ipaddr.IPv6.parse(text.replace(IPV4_COMPATIBLE, '::0:'));
}

/** The address of an unsigned 32-bit number. */
export function ipv4Address(num: number): Address {
  return { kind: 4, text: formatIPv4(num), num };
}

/** An IPv6 address as one 128-bit number. */
export function ipv6Value(address: { readonly hi: bigint; readonly lo: bigint }): bigint {
  return (address.hi << 64n) | address.lo;
}

/** The dotted quad of an unsigned 32-bit number. */
export function formatIPv4(num: number): string {
  return `${num >>> 24}.${(num >>> 16) & 255}.${(num >>> 8) & 255}.${num & 255}`;
}

/** The RFC 5952 text of a 128-bit number. */
export function formatIPv6(value: bigint): string {
  const parts = new Array<number>(8);
  for (let i = 0; i < 8; i++) parts[i] = Number((value >> BigInt(112 - 16 * i)) & 0xffffn);
  return new ipaddr.IPv6(parts).toRFC5952String();
}

function ipv4Value(octets: readonly number[]): number {
  return octets.reduce((n, octet) => n * 256 + octet, 0);
}

function partsValue(parts: readonly number[]): bigint {
  return parts.reduce((n, part) => (n << 16n) | BigInt(part), 0n);
}

// --- CIDRs and prefix arithmetic ------------------------------------------------------------------------

/** The first address of the /prefix holding an IPv4 address. */
function ipv4Network(address: number, prefix: number): number {
  const size = 2 ** (32 - prefix);
  return address - (address % size);
}

/** The last address of an IPv4 network. */
export function ipv4Last(network: number, prefix: number): number {
  return network + 2 ** (32 - prefix) - 1;
}

/** The first address of the /prefix holding an IPv6 address. */
export function ipv6Network(address: bigint, prefix: number): bigint {
  const hostBits = BigInt(128 - prefix);
  return (address >> hostBits) << hostBits;
}

/** The last address of an IPv6 network. */
export function ipv6Last(network: bigint, prefix: number): bigint {
  return network | (ALL_V6 >> BigInt(prefix));
}

/** A CIDR as parseCidr read it: the network, and whether the text had host bits set (198.51.100.7/24). */
export type ParsedCidr = Cidr & { readonly hostBitsSet: boolean };

/**
 * "address/prefix" (the address strict as parseAddress has it, the prefix decimal without leading zeros and
 * at most 32 or 128), or undefined; with `bareAddress`, an address alone is its /32 or /128. An IPv4-mapped
 * IPv6 network stays IPv6: ::ffff:0:0/96 is a range of IPv6 space.
 */
export function parseCidr(text: string, { bareAddress = false }: { bareAddress?: boolean } = {}): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  let written: number | undefined;
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!PREFIX_TEXT.test(prefixText)) return undefined;
    written = Number(prefixText);
  } else if (!bareAddress) return undefined;
  const addressEnd = slash === -1 ? text.length : slash;
  const v4 = parseIPv4(text, 0, addressEnd);
  if (v4 >= 0) {
    const prefix = written ?? 32;
    if (prefix > 32) return undefined;
    const network = ipv4Network(v4, prefix);
    return { kind: 4, network, prefix, hostBitsSet: network !== v4 };
  }
  const v6 = parseIPv6(text.slice(0, addressEnd));
  if (!v6) return undefined;
  const address = partsValue(v6.parts);
  const prefix = written ?? 128;
  if (prefix > 128) return undefined;
  const network = ipv6Network(address, prefix);
  return { kind: 6, network, prefix, hostBitsSet: network !== address };
}

/** A CIDR in network form that must be valid (tables in code and data files); throws naming it otherwise. */
export function requireCidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`invalid CIDR "${text}"`);
  if (parsed.hostBitsSet) throw new Error(`CIDR "${text}" has host bits set`);
  return parsed;
}

/** The canonical text of a CIDR: "198.51.100.0/24", "2001:db8::/32". */
export function cidrText(cidr: Cidr): string {
  return `${cidr.kind === 4 ? formatIPv4(cidr.network) : formatIPv6(cidr.network)}/${cidr.prefix}`;
}

// --- Membership -----------------------------------------------------------------------------------------

/**
 * A set of CIDRs, for asking whether one address lies in any of them: the CIDRs merged into sorted,
 * disjoint ranges (adjacent ones joined) and searched by halves.
 */
export class CidrMatcher {
  /** IPv4 ranges as [first, last, first, last, ...], ascending. */
  readonly v4: Float64Array;
  /** IPv6 ranges, the same way. */
  readonly v6: readonly bigint[];

  constructor(cidrs: Iterable<Cidr>) {
    const v4: [number, number][] = [];
    const v6: [bigint, bigint][] = [];
    for (const c of cidrs) {
      if (c.kind === 4) v4.push([c.network, ipv4Last(c.network, c.prefix)]);
      else v6.push([c.network, ipv6Last(c.network, c.prefix)]);
    }
    this.v4 = Float64Array.from(merged(v4, (last, first) => first <= last + 1));
    this.v6 = merged(v6, (last, first) => first <= last + 1n);
  }

  has(address: Address): boolean {
    return address.kind === 4 ? this.hasIPv4(address.num) : this.hasIPv6(ipv6Value(address));
  }

  /** Whether an IPv4 address, as a number, lies in the set. Allocation-free: the ingest asks once per event. */
  hasIPv4(address: number): boolean {
    const ranges = this.v4;
    let lo = 0;
    let hi = ranges.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (address < (ranges[mid * 2] as number)) hi = mid - 1;
      else if (address > (ranges[mid * 2 + 1] as number)) lo = mid + 1;
      else return true;
    }
    return false;
  }

  /** Whether an IPv6 address, as a 128-bit number, lies in the set. */
  hasIPv6(address: bigint): boolean {
    const ranges = this.v6;
    let lo = 0;
    let hi = ranges.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (address < (ranges[mid * 2] as bigint)) hi = mid - 1;
      else if (address > (ranges[mid * 2 + 1] as bigint)) lo = mid + 1;
      else return true;
    }
    return false;
  }
}

/** [first, last] ranges sorted and merged where they overlap or touch, flattened. */
function merged<T extends number | bigint>(ranges: [T, T][], touches: (last: T, first: T) => boolean): T[] {
  ranges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: T[] = [];
  for (const [first, last] of ranges) {
    const end = out.length - 1;
    if (end > 0 && touches(out[end] as T, first)) {
      if (last > (out[end] as T)) out[end] = last;
    } else out.push(first, last);
  }
  return out;
}

// --- The hand-written dotted-quad readers ---------------------------------------------------------------
// Both read exactly what ipaddr.IPv4.isValidFourPartDecimal accepts: four octets of one to three decimal
// digits, at most 255, no leading zero, separated by single dots.

const DOT = 46;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/** The IPv4 address in text[from, to) as an unsigned 32-bit number, or -1. */
export function parseIPv4(text: string, from = 0, to = text.length): number {
  let i = from;
  let address = 0;
  for (let octets = 0; ; ) {
    if (i >= to) return -1;
    let c = text.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) return -1;
    let octet = c - DIGIT_0;
    i++;
    if (octet !== 0 && i < to && (c = text.charCodeAt(i)) >= DIGIT_0 && c <= DIGIT_9) {
      octet = octet * 10 + (c - DIGIT_0);
      i++;
      if (i < to && (c = text.charCodeAt(i)) >= DIGIT_0 && c <= DIGIT_9) {
        octet = octet * 10 + (c - DIGIT_0);
        i++;
      }
    }
    if (octet > 255) return -1;
    address = address * 256 + octet;
    if (++octets === 4) return i === to ? address : -1;
    if (i >= to || text.charCodeAt(i) !== DOT) return -1;
    i++;
  }
}

/**
 * Reads IPv4 addresses from ASCII bytes without making strings (ingest lines, feed bodies). A reader keeps
 * where its last read stopped, so that a caller scanning a buffer needs no second pass to find the end.
 */
export class IPv4BytesReader {
  /** The index just after the last address read. */
  end = 0;

  /**
   * The address buf[from, to) begins with, as an unsigned 32-bit number, or -1; `end` is then just after it.
   * What follows is the caller's to judge: "192.0.2.1\n" is an address and its newline, "192.0.2.01" an
   * address the caller must refuse, as the digit after it shows.
   */
  read(buf: Uint8Array, from: number, to: number): number {
    let i = from;
    let address = 0;
    for (let octets = 0; ; ) {
      if (i >= to) return -1;
      let c = buf[i] as number;
      if (c < DIGIT_0 || c > DIGIT_9) return -1;
      let octet = c - DIGIT_0;
      i++;
      if (octet !== 0 && i < to && (c = buf[i] as number) >= DIGIT_0 && c <= DIGIT_9) {
        octet = octet * 10 + (c - DIGIT_0);
        i++;
        if (i < to && (c = buf[i] as number) >= DIGIT_0 && c <= DIGIT_9) {
          octet = octet * 10 + (c - DIGIT_0);
          i++;
        }
      }
      if (octet > 255) return -1;
      address = address * 256 + octet;
      if (++octets === 4) {
        this.end = i;
        return address;
      }
      if (i >= to || buf[i] !== DOT) return -1;
      i++;
    }
  }
}

const exactReader = new IPv4BytesReader();

/** The IPv4 address in the ASCII bytes buf[from, to) as an unsigned 32-bit number, or -1. */
export function parseIPv4Bytes(buf: Uint8Array, from: number, to: number): number {
  const address = exactReader.read(buf, from, to);
  return address >= 0 && exactReader.end === to ? address : -1;
}
