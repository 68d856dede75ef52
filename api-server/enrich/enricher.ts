// Everything known about a source address without looking at its activity: country, ASN, province, city,
// carrier, network type and scanner identity. The IPv4 tables come from a snapshot when one is cached
// (snapshot.ts: milliseconds) or are built from the npm packages and data/ (tables.ts: about half a second);
// the IPv6 tables are read on first use.
import { type Isp, type Net } from '../../common/vocabulary.ts';
import { ScannerRanges } from './scanners.ts';
import { type Address } from '../../common/ip.ts';
import type { RegionLookup } from './ip2region.ts';
import { netType, normalizeIsp } from './net-type.ts';
import { loadEnrichmentTables } from './snapshot.ts';
import type { AsnEntry, EnrichmentTables } from './tables.ts';

export interface Enrichment {
  country: string | null;
  province: string | null;
  city: string | null;
  carrier: string | null;
  isp: Isp | null;
  asn: number | null;
  asName: string | null;
  net: Net;
  scannerKind: 'research_scanner' | 'asset_scanner' | null;
  scannerOrg: string | null;
}

export class Enricher {
  readonly regions: RegionLookup;
  private readonly tables: EnrichmentTables;
  private readonly scanners: ScannerRanges;

  constructor(tables: EnrichmentTables = loadEnrichmentTables()) {
    this.tables = tables;
    this.regions = tables.regions;
    this.scanners = new ScannerRanges(tables.scanners);
  }

  enrich(address: Address): Enrichment {
    const t = this.tables;
    let country: string | undefined;
    let asnEntry: AsnEntry | undefined;
    if (address.kind === 4) {
      const c = t.countryV4.find(address.num);
      country = c < 0 ? undefined : t.countries[c];
      const a = t.asnV4.find(address.num);
      asnEntry = a < 0 ? undefined : t.asns.get(a);
    } else {
      const v6 = t.v6();
      const c = v6.country.v6().find(address.hi, address.lo);
      country = c < 0 ? undefined : v6.country.dictionary.get(c);
      const a = v6.asn.v6().find(address.hi, address.lo);
      asnEntry = a < 0 ? undefined : v6.asn.dictionary.get(a);
    }
    const region = address.kind === 4 ? this.regions.lookupV4(address.num) : this.regions.lookupV6(address.text);
    const asn = asnEntry?.asn ?? null;
    const carrier = region?.carrier ?? null;
    const scanner = this.scanners.match(address, asn);
    return {
      country: country ?? null,
      province: region?.province ?? null,
      city: region?.city ?? null,
      carrier,
      isp: normalizeIsp(carrier),
      asn,
      asName: asnEntry?.name ?? null,
      net: netType(t.rules, asn, carrier),
      scannerKind: scanner?.kind ?? null,
      scannerOrg: scanner?.org ?? null,
    };
  }
}

let shared: Enricher | undefined;

/** The process's one Enricher, loaded on first use. */
export function sharedEnricher(): Enricher {
  return (shared ??= new Enricher());
}
