// Everything known about a source address without looking at its activity: country, ASN, province, city,
// carrier, network type and scanner identity. The tables load once per process (about a second, ~60 MB).
import { type Isp, type Net } from '../../common/vocabulary.ts';
import { ScannerRanges } from '../classify/scanners.ts';
import { type Address } from './address.ts';
import { loadAsnTable, loadCountryTable, type CsvTable } from './csv-ranges.ts';
import { loadAsnList, loadScannerOrganisations } from './curated.ts';
import { RegionLookup } from './ip2region.ts';
import { netType, normalizeIsp, type NetRules } from './net-type.ts';

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

interface AsnEntry {
  asn: number;
  name: string;
}

export class Enricher {
  private readonly country: CsvTable<string>;
  private readonly asn: CsvTable<AsnEntry>;
  readonly regions: RegionLookup;
  private readonly rules: NetRules;
  private readonly scanners: ScannerRanges;

  constructor() {
    this.country = loadCountryTable('@ip-location-db/geo-whois-asn-country', 'geo-whois-asn-country');
    this.asn = loadAsnTable('@ip-location-db/asn', 'asn');
    this.regions = new RegionLookup();
    this.rules = { edu: loadAsnList('edu-asns.yaml'), hosting: loadAsnList('hosting-asns.yaml'), mobile: loadAsnList('mobile-asns.yaml') };
    this.scanners = new ScannerRanges(loadScannerOrganisations());
  }

  enrich(address: Address): Enrichment {
    let countryIndex: number;
    let asnIndex: number;
    if (address.kind === 4) {
      countryIndex = this.country.v4.find(address.num);
      asnIndex = this.asn.v4.find(address.num);
    } else {
      countryIndex = this.country.v6().find(address.hi, address.lo);
      asnIndex = this.asn.v6().find(address.hi, address.lo);
    }
    const region = address.kind === 4 ? this.regions.lookupV4(address.num) : this.regions.lookupV6(address.text);
    const asnEntry = asnIndex < 0 ? undefined : this.asn.dictionary.get(asnIndex);
    const asn = asnEntry?.asn ?? null;
    const carrier = region?.carrier ?? null;
    const scanner = this.scanners.match(address, asn);
    return {
      country: (countryIndex < 0 ? undefined : this.country.dictionary.get(countryIndex)) ?? null,
      province: region?.province ?? null,
      city: region?.city ?? null,
      carrier,
      isp: normalizeIsp(carrier),
      asn,
      asName: asnEntry?.name ?? null,
      net: netType(this.rules, asn, carrier),
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
