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

/** Bytes one CIDR adds to a format, so shards can be planned before rendering. */
function lineCost(format: ConfigMapFormat, cidr: string): number {
  switch (format) {
    case 'txt':
      return cidr.length + 1;
    case 'nginx':
      return cidr.length + 7; // "deny " + ";\n"
    case 'ipset':
      return cidr.length + SET_V4.length + 11; // "add " + set + " " + cidr + " -exist\n"
    case 'nftables':
      return cidr.length + 4; // indent + ",\n"
  }
}

/**
 * Renders one format for one shard. `total` sizes the ipset (maxelem) so every shard creates the same set and
 * the shards restore in any order.
 */
export function render(format: ConfigMapFormat, cidrs: readonly string[], total = cidrs.length): string {
  switch (format) {
    case 'txt':
      return cidrs.map((c) => `${c}\n`).join('');
    case 'nginx':
      return cidrs.map((c) => `deny ${c};\n`).join('');
    case 'ipset': {
      const maxelem = Math.max(65536, total);
      const lines = [
        `create ${SET_V4} hash:net family inet maxelem ${maxelem} -exist\n`,
        `create ${SET_V6} hash:net family inet6 maxelem ${maxelem} -exist\n`,
      ];
      for (const c of cidrs) lines.push(`add ${isV6(c) ? SET_V6 : SET_V4} ${c} -exist\n`);
      return lines.join('');
    }
    case 'nftables': {
      const v4 = cidrs.filter((c) => !isV6(c));
      const v6 = cidrs.filter(isV6);
      const out = [
        `add table ${NFT_TABLE}\n`,
        `add set ${NFT_TABLE} ${NFT_SET_V4} { type ipv4_addr; flags interval; }\n`,
        `add set ${NFT_TABLE} ${NFT_SET_V6} { type ipv6_addr; flags interval; }\n`,
      ];
      const elements = (set: string, list: string[]) => {
        if (list.length) out.push(`add element ${NFT_TABLE} ${set} {\n${list.map((c) => `  ${c}`).join(',\n')}\n}\n`);
      };
      elements(NFT_SET_V4, v4);
      elements(NFT_SET_V6, v6);
      return out.join('');
    }
  }
}

/** Cuts the sorted list into consecutive shards whose rendered formats together stay within the budget. */
export function planShards(cidrs: readonly string[], formats: readonly ConfigMapFormat[], budget = SHARD_DATA_BUDGET): string[][] {
  return cutByCost(cidrs, (cidr) => formats.reduce((n, f) => n + lineCost(f, cidr), 0), budget);
}

/** The data of each shard ConfigMap: one key per format. */
export function renderShards(cidrs: readonly string[], formats: readonly ConfigMapFormat[], budget?: number): Record<string, string>[] {
  const sorted = [...new Set(formats)].sort();
  return planShards(cidrs, sorted, budget).map((shard) =>
    Object.fromEntries(sorted.map((f) => [FORMAT_KEYS[f], render(f, shard, cidrs.length)])),
  );
}
