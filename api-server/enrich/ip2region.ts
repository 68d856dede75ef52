// Province, city and carrier from the ip2region data shipped in the npm package `ip2region`. The IPv4 file
// (ip2region.db, "v1" layout: an 8-byte super block pointing at 12-byte index blocks of start, end and a
// data pointer whose top byte is the record length) is turned into a compact range table with one interned
// region per distinct record; IPv6 goes through the package's own reader, loaded on first use.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { normalizeProvince } from '../../common/vocabulary.ts';
import { packageFile } from './csv-ranges.ts';
import { Ipv4RangesBuilder, type Ipv4Ranges } from './ranges.ts';

export interface Region {
  /** Country in Chinese as ip2region names it (中国, 美国, ...), empty when unknown. */
  country: string;
  /** Normalized Chinese province (广东省), only for addresses in China. */
  province: string | null;
  city: string | null;
  /** ip2region's raw carrier (电信, 联通, 移动, 教育网, 阿里云, 中国电信CTNET网络, ...), null when unknown. */
  carrier: string | null;
}

function region(country: string, province: string, city: string, carrier: string): Region {
  const inChina = country === '中国';
  return {
    country,
    province: inChina && province ? (normalizeProvince(province) ?? null) : null,
    city: inChina && city ? city : null,
    // ip2region writes 未知地区 (unknown region) where it has no carrier.
    carrier: carrier && carrier !== '未知地区' ? carrier : null,
  };
}

function fromRecord(text: string): Region {
  // country|area|province|city|carrier, "0" = unknown
  const f = text.split('|').map((s) => (s === '0' ? '' : s));
  return region(f[0] ?? '', f[2] ?? '', f[3] ?? '', f[4] ?? '');
}

interface Ip2RegionV6 {
  search(ip: string): { country: string; province: string; city: string; isp: string } | null;
}

function readIpv4Regions(): { v4: Ipv4Ranges; regions: Region[] } {
  const data = readFileSync(packageFile('ip2region', 'data/ip2region.db'));
  const first = data.readUInt32LE(0);
  const last = data.readUInt32LE(4);
  const builder = new Ipv4RangesBuilder((last - first) / 12 + 1);
  const byPointer = new Map<number, number>();
  const regions: Region[] = [];
  for (let pos = first; pos <= last; pos += 12) {
    const ptr = data.readUInt32LE(pos + 8);
    let index = byPointer.get(ptr);
    if (index === undefined) {
      const length = ptr >>> 24;
      const at = ptr & 0xffffff;
      index = regions.length;
      regions.push(fromRecord(data.toString('utf8', at + 4, at + length)));
      byPointer.set(ptr, index);
    }
    builder.add(data.readUInt32LE(pos), data.readUInt32LE(pos + 4), index);
  }
  return { v4: builder.build(), regions };
}

export class RegionLookup {
  readonly v4: Ipv4Ranges;
  readonly regions: readonly Region[];
  private v6?: Ip2RegionV6;

  /** From its parts (a snapshot, enrich/snapshot.ts), or read from the package's IPv4 file. */
  constructor(parts: { v4: Ipv4Ranges; regions: readonly Region[] } = readIpv4Regions()) {
    this.v4 = parts.v4;
    this.regions = parts.regions;
  }

  /** Every IPv4 range with its region (the demo picks real Chinese addresses from these). */
  *rangesV4(): Generator<{ start: number; end: number; region: Region }> {
    for (let i = 0; i < this.v4.size; i++) {
      const region = this.regions[this.v4.values[i] as number];
      if (region) yield { start: this.v4.starts[i] as number, end: this.v4.ends[i] as number, region };
    }
  }

  lookupV4(ip: number): Region | undefined {
    const i = this.v4.find(ip);
    return i < 0 ? undefined : this.regions[i];
  }

  lookupV6(text: string): Region | undefined {
    if (!this.v6) {
      const require = createRequire(import.meta.url);
      const mod = require('ip2region') as { default: new (opts: object) => Ip2RegionV6 };
      this.v6 = new mod.default({});
    }
    const r = this.v6.search(text);
    return r ? region(r.country, r.province, r.city, r.isp) : undefined;
  }
}
