// Address space no blocklist may contain, in one table for both programs: the api-server never publishes
// or classifies such a source, and the controller removes it from every feed before applying one. It is the
// RFC 6890 special-purpose space that is not globally reachable, and the deprecated IPv4-compatible IPv6
// addresses, which common/ip.ts reads as IPv6 as PostgreSQL does. The documentation ranges (192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are deliberately absent: they never carry real traffic, so
// listing them harms nobody, and the demo data and tests use them as attacker addresses.
import { CidrMatcher, requireCidr, type Address } from './ip.ts';

/** Ranges no blocklist may contain: loopback, private, link-local, CGNAT, multicast and other reserved space. */
export const NEVER_BLOCK: readonly string[] = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // CGNAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, includes broadcast
  '::/96', // unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d (RFC 4291 2.5.5.1)
  '::ffff:0:0/96', // IPv4-mapped
  '100::/64', // discard
  '2001::/23', // IETF protocol assignments
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'ff00::/8', // multicast
];

/** The table as merged ranges, for testing one address at a time (the ingest tests every source). */
export const NEVER_BLOCK_RANGES = new CidrMatcher(NEVER_BLOCK.map(requireCidr));

/**
 * Whether an address lies in never-block space. As a source, such an address is a sensor's own network or a
 * health check, never an attacker to list.
 */
export function isNeverBlock(address: Address): boolean {
  return NEVER_BLOCK_RANGES.has(address);
}

/** Whether an IPv4 address (as an unsigned 32-bit number) lies in never-block space. */
export function isNeverBlockV4(address: number): boolean {
  return NEVER_BLOCK_RANGES.hasIPv4(address);
}

/** Whether an IPv6 address (as a 128-bit number) lies in never-block space. */
export function isNeverBlockV6(address: bigint): boolean {
  return NEVER_BLOCK_RANGES.hasIPv6(address);
}
