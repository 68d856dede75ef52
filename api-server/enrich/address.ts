// Parsing of source addresses into the forms the lookups need: the canonical text (as PostgreSQL's inet
// prints it) and a number (IPv4) or two 64-bit halves (IPv6). Pure.
import ipaddr from 'ipaddr.js';
import { formatIPv4, parseIPv4 } from '../../common/ipv4.ts';
import { isNeverBlockV4, isNeverBlockV6 } from '../../common/never-block.ts';

export type Address =
  | { readonly kind: 4; readonly text: string; readonly num: number }
  | { readonly kind: 6; readonly text: string; readonly hi: bigint; readonly lo: bigint };

/** Parses an IPv4 or IPv6 address (no prefix length); IPv4-mapped IPv6 becomes IPv4. Undefined if invalid. */
export function parseAddress(input: string): Address | undefined {
  const num = parseIPv4(input);
  if (num >= 0) return { kind: 4, text: input, num };
  if (!input.includes(':') || !ipaddr.IPv6.isValid(input)) return undefined;
  // Zone ids (fe80::1%eth0) are not addresses of a remote source.
  if (input.includes('%')) return undefined;
  const v6 = ipaddr.IPv6.parse(input);
  if (v6.isIPv4MappedAddress()) {
    const [a = 0, b = 0, c = 0, d = 0] = v6.toIPv4Address().octets;
    return { kind: 4, text: `${a}.${b}.${c}.${d}`, num: (((a << 24) >>> 0) + (b << 16) + (c << 8) + d) };
  }
  const p = v6.parts;
  const half = (i: number) =>
    (BigInt(p[i] ?? 0) << 48n) | (BigInt(p[i + 1] ?? 0) << 32n) | (BigInt(p[i + 2] ?? 0) << 16n) | BigInt(p[i + 3] ?? 0);
  return { kind: 6, text: v6.toRFC5952String(), hi: half(0), lo: half(4) };
}

/** Parses a CIDR into its first and last address; throws on invalid input or host bits set. */
export function parseCidr(cidr: string): { first: Address; last: Address } {
  const [addr, lenText] = cidr.split('/');
  const first = addr === undefined ? undefined : parseAddress(addr);
  const len = Number(lenText);
  if (!first || !Number.isInteger(len) || len < 0 || len > (first.kind === 4 ? 32 : 128)) {
    throw new Error(`invalid CIDR "${cidr}"`);
  }
  if (first.kind === 4) {
    const hostBits = 32 - len;
    const size = 2 ** hostBits;
    if (first.num % size !== 0) throw new Error(`CIDR "${cidr}" has host bits set`);
    const num = first.num + size - 1;
    return { first, last: { kind: 4, text: formatIPv4(num), num } };
  }
  const full = (first.hi << 64n) | first.lo;
  const hostMask = (1n << BigInt(128 - len)) - 1n;
  if ((full & hostMask) !== 0n) throw new Error(`CIDR "${cidr}" has host bits set`);
  const end = full | hostMask;
  const mask64 = (1n << 64n) - 1n;
  return { first, last: { kind: 6, text: '', hi: end >> 64n, lo: end & mask64 } };
}

/**
 * Whether an address is not globally reachable (private, loopback, CGNAT, ...: common/never-block.ts). Such
 * a source is a sensor's own network or a health check, never an attacker to list.
 */
export function isNonGlobal(a: Address): boolean {
  return a.kind === 4 ? isNeverBlockV4(a.num) : isNeverBlockV6((a.hi << 64n) | a.lo);
}
