// Address space no blocklist may contain, in one table for both programs: the api-server never publishes
// or classifies such a source, and the controller removes it from every feed before applying one. It is the
// RFC 6890 special-purpose space that is not globally reachable. The documentation ranges (192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are deliberately absent: they never carry real traffic, so
// listing them harms nobody, and the demo data and tests use them as attacker addresses.

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
