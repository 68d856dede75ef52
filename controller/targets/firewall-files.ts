// File formats of the ConfigMap target, and how a long list is cut into ConfigMaps below the 1 MiB object
// limit. Pure and deterministic: the same list gives byte-identical output, so an unchanged list writes nothing.
import type { ConfigMapFormat } from '../../api/v1alpha1/blocklist-subscription.ts';
import { LONGEST_CIDR, ROOT_KEY, cutByAddress, type Shard } from './shards.ts';

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
 * An ipset's maxelem is a cap, not an allocation: one value far above any list (safety.maxEntries is at most
 * 10,000,000), so that every shard creates the same sets whatever the list's length, and a shard's file
 * changes only when its own CIDRs do.
 */
const IPSET_MAXELEM = 2 ** 24;

/**
 * Renders one format for one shard (its CIDRs IPv4 first, as an AppliedList has them). `total` is the whole
 * list's length: only a list beyond IPSET_MAXELEM makes the sets larger.
 */
export function render(format: ConfigMapFormat, cidrs: readonly string[], total = cidrs.length): string {
  switch (format) {
    case 'txt':
      return eachLine(cidrs, '', '\n');
    case 'nginx':
      return eachLine(cidrs, 'deny ', ';\n');
    case 'ipset': {
      const maxelem = Math.max(IPSET_MAXELEM, 2 ** Math.ceil(Math.log2(Math.max(total, 1))));
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

/**
 * Cuts the list into shards whose rendered formats together stay within the budget (targets/shards.ts: a
 * one-CIDR change alters at most two shards). An empty list is one empty shard: the files exist, empty.
 */
export function planShards(cidrs: readonly string[], formats: readonly ConfigMapFormat[], budget = SHARD_DATA_BUDGET): Shard[] {
  const overhead = formats.reduce((n, f) => n + LINE_OVERHEAD[f], 0);
  const cost = { v4: LONGEST_CIDR.v4 * formats.length + overhead, v6: LONGEST_CIDR.v6 * formats.length + overhead };
  return cidrs.length ? cutByAddress(cidrs, cost, budget) : [{ key: ROOT_KEY, cidrs: [] }];
}
