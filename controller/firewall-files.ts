// File formats of the ConfigMap target, and how a long list is cut into ConfigMaps below the 1 MiB object
// limit. Pure and deterministic: the same list gives byte-identical output, so an unchanged list writes nothing.
import type { ConfigMapFormat } from './api/v1alpha1.ts';
import { cutByCost } from './targets/shards.ts';

export const FORMAT_KEYS: Readonly<Record<ConfigMapFormat, string>> = {
  txt: 'list.txt',
  nginx: 'deny.conf',
  ipset: 'ipset.restore',
  nftables: 'nftables.conf',
};

/** Data bytes allowed in one ConfigMap: 1 MiB minus room for metadata, keys and format headers. */
const SHARD_DATA_BUDGET = 1024 * 1024 - 64 * 1024;

const isV6 = (cidr: string) => cidr.includes(':');

const SET_V4 = 'blockfeed-v4';
const SET_V6 = 'blockfeed-v6';
const NFT_TABLE = 'inet blockfeed';
const NFT_SET_V4 = 'blocklist_v4';
const NFT_SET_V6 = 'blocklist_v6';

/** Bytes a format's line adds to its CIDR, so shards can be planned before rendering (both sets' names are as long). */
const LINE_OVERHEAD: Readonly<Record<ConfigMapFormat, number>> = {
  txt: 1, // "\n"
  nginx: 7, // "deny " + ";\n"
  ipset: SET_V4.length + 11, // "add " + set + " " + " -exist\n"
  nftables: 4, // indent + ",\n"
};

/**
 * Each CIDR between `before` and `after`, as one string: joined, not one string per line (a list has tens of
 * thousands of lines, and a sync renders every format of it).
 */
const eachLine = (cidrs: readonly string[], before: string, after: string) => (cidrs.length ? `${before}${cidrs.join(`${after}${before}`)}${after}` : '');

/**
 * Renders one format for one shard (its CIDRs IPv4 first, as an AppliedList has them). `total` sizes the ipset
 * (maxelem) so every shard creates the same set and the shards restore in any order.
 */
export function render(format: ConfigMapFormat, cidrs: readonly string[], total = cidrs.length): string {
  switch (format) {
    case 'txt':
      return eachLine(cidrs, '', '\n');
    case 'nginx':
      return eachLine(cidrs, 'deny ', ';\n');
    case 'ipset': {
      const maxelem = Math.max(65536, total);
      return (
        `create ${SET_V4} hash:net family inet maxelem ${maxelem} -exist\n` +
        `create ${SET_V6} hash:net family inet6 maxelem ${maxelem} -exist\n` +
        eachLine(cidrs.filter((c) => !isV6(c)), `add ${SET_V4} `, ' -exist\n') +
        eachLine(cidrs.filter(isV6), `add ${SET_V6} `, ' -exist\n')
      );
    }
    case 'nftables': {
      const elements = (set: string, list: readonly string[]) => (list.length ? `add element ${NFT_TABLE} ${set} {\n  ${list.join(',\n  ')}\n}\n` : '');
      return (
        `add table ${NFT_TABLE}\n` +
        `add set ${NFT_TABLE} ${NFT_SET_V4} { type ipv4_addr; flags interval; }\n` +
        `add set ${NFT_TABLE} ${NFT_SET_V6} { type ipv6_addr; flags interval; }\n` +
        elements(NFT_SET_V4, cidrs.filter((c) => !isV6(c))) +
        elements(NFT_SET_V6, cidrs.filter(isV6))
      );
    }
  }
}

/** Cuts the sorted list into consecutive shards whose rendered formats together stay within the budget. */
export function planShards(cidrs: readonly string[], formats: readonly ConfigMapFormat[], budget = SHARD_DATA_BUDGET): string[][] {
  const overhead = formats.reduce((n, f) => n + LINE_OVERHEAD[f], 0);
  return cutByCost(cidrs, (cidr) => cidr.length * formats.length + overhead, budget);
}

/** The data of each shard ConfigMap: one key per format. */
export function renderShards(cidrs: readonly string[], formats: readonly ConfigMapFormat[], budget?: number): Record<string, string>[] {
  const sorted = [...new Set(formats)].sort();
  return planShards(cidrs, sorted, budget).map((shard) =>
    Object.fromEntries(sorted.map((f) => [FORMAT_KEYS[f], render(f, shard, cidrs.length)])),
  );
}
