// Addresses and networks typed by people — the check's `ip` parameter, the removal form, the operator's
// exclusion arguments — read into the form the store keeps them in. One function, so that every surface
// accepts and refuses the same text. The reading is common/ip.ts's (strict dotted quads, no IPv6 zone, a
// prefix length without leading zeros); on top of it come the rules for text a person types: a bound on its
// length, no host bits set under the prefix (10.0.0.1/8 is refused with the network it would be), and
// IPv4-mapped IPv6 (::ffff:192.0.2.1, ::ffff:192.0.2.0/120) as the IPv4 address or network it carries, as
// ingest stores sources. Each refusal says which rule the text broke.
import { cidrText, parseAddress, parseCidr, type Cidr } from '../../common/ip.ts';

export interface Network {
  family: 4 | 6;
  /** The network in CIDR notation, as PostgreSQL prints a cidr: `192.0.2.0/24`, `2001:db8::/32`, `192.0.2.7/32`. */
  cidr: string;
  prefix: number;
  /** The address as PostgreSQL's host() prints it, when the text named one address (no prefix length). */
  address?: string;
}

export type NetworkParse = { ok: true; network: Network } | { ok: false; problem: string };

/** Longer than any address with a prefix length (an IPv6 address with an embedded IPv4 one is 45 characters). */
const MAX_LENGTH = 64;

const bitsOf = (family: 4 | 6) => (family === 4 ? 32 : 128);

/** An IPv6 network inside ::ffff:0:0/96 as the IPv4 network it maps; any other network as it is. */
function unmapped(cidr: Cidr): Cidr {
  if (cidr.kind === 4 || cidr.prefix < 96 || cidr.network >> 32n !== 0xffffn) return cidr;
  return { kind: 4, network: Number(cidr.network & 0xffffffffn), prefix: cidr.prefix - 96 };
}

/** Reads `text` as one address (`192.0.2.7`) or a network (`192.0.2.0/24`), IPv4 or IPv6. */
export function parseAddressOrNetwork(text: string): NetworkParse {
  if (text.length > MAX_LENGTH) return { ok: false, problem: `is longer than any address or network (${MAX_LENGTH} characters)` };
  const slash = text.indexOf('/');
  const written = parseCidr(slash === -1 ? text : text.slice(0, slash), { bareAddress: true });
  if (!written) return { ok: false, problem: 'is not an IPv4 or IPv6 address or network' };
  if (slash === -1) {
    // An address alone: parseAddress reads what parseCidr read, IPv4-mapped IPv6 as IPv4.
    const address = parseAddress(text);
    if (!address) throw new Error(`common/ip.ts read ${JSON.stringify(text)} as a CIDR but not as an address`);
    return { ok: true, network: { family: address.kind, prefix: bitsOf(address.kind), cidr: `${address.text}/${bitsOf(address.kind)}`, address: address.text } };
  }
  const parsed = parseCidr(text);
  if (!parsed) return { ok: false, problem: `has a prefix length that is not a number from 0 to ${bitsOf(written.kind)}` };
  if (parsed.hostBitsSet) return { ok: false, problem: `has host bits set after the prefix length; the network is ${cidrText(parsed)}` };
  const network = unmapped(parsed);
  return { ok: true, network: { family: network.kind, prefix: network.prefix, cidr: cidrText(network) } };
}
