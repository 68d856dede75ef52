// Address space no blocklist may contain, in one table for both programs: the api-server never publishes
// or classifies such a source, and the controller removes it from every feed before applying one. It is the
// RFC 6890 special-purpose space that is not globally reachable. The documentation ranges (192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are deliberately absent: they never carry real traffic, so
// listing them harms nobody, and the demo data and tests use them as attacker addresses.
import ipaddr from 'ipaddr.js';

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
  '::/127', // unspecified, loopback
  '::ffff:0:0/96', // IPv4-mapped
  '100::/64', // discard
  '2001::/23', // IETF protocol assignments
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'ff00::/8', // multicast
];

// The table as ranges, for testing one address at a time (the ingest tests every source). IPv4 ranges are
// kept as flat [first, last] pairs of a typed array: the ingest asks once per event, so a plain loop.
const V4_RANGES: number[] = [];
const V6_RANGES: [bigint, bigint][] = [];
for (const cidr of NEVER_BLOCK) {
  const [network, length] = ipaddr.parseCIDR(cidr);
  const bytes = network.toByteArray();
  const bits = bytes.length * 8;
  const first = bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);
  const last = first | ((1n << BigInt(bits - length)) - 1n);
  if (bits === 32) V4_RANGES.push(Number(first), Number(last));
  else V6_RANGES.push([first, last]);
}
const V4_BOUNDS = Float64Array.from(V4_RANGES);

/** Whether an IPv4 address (as an unsigned 32-bit number) lies in never-block space. */
export function isNeverBlockV4(address: number): boolean {
  for (let i = 0; i < V4_BOUNDS.length; i += 2) if (address >= (V4_BOUNDS[i] as number) && address <= (V4_BOUNDS[i + 1] as number)) return true;
  return false;
}

/** Whether an IPv6 address (as a 128-bit number) lies in never-block space. */
export function isNeverBlockV6(address: bigint): boolean {
  return V6_RANGES.some(([first, last]) => address >= first && address <= last);
}
