// The tables enrichment looks addresses up in, built from their sources: the npm packages' files
// (@ip-location-db country and ASN ranges, ip2region) and the curated lists in data/. Building them takes
// about half a second, so snapshot.ts caches the result.
import { loadAsnTable, loadCountryTable, type AsnDictionary, type CsvTable } from './csv-ranges.ts';
import { loadAsnList, loadScannerOrganisations, type ScannerOrganisation } from './curated.ts';
import { RegionLookup } from './ip2region.ts';
import type { NetRules } from './net-type.ts';
import type { Ipv4Ranges } from './ranges.ts';

export interface AsnEntry {
  asn: number;
  name: string;
}

export const COUNTRY_PACKAGE = ['@ip-location-db/geo-whois-asn-country', 'geo-whois-asn-country'] as const;
export const ASN_PACKAGE = ['@ip-location-db/asn', 'asn'] as const;

/** What enrichment looks up: the IPv4 tables with their values, the curated lists, and the IPv6 tables. */
export interface EnrichmentTables {
  countryV4: Ipv4Ranges;
  /** Value index → ISO 3166-1 alpha-2 code. */
  countries: readonly string[];
  asnV4: Ipv4Ranges;
  asns: AsnDictionary;
  regions: RegionLookup;
  rules: NetRules;
  scanners: ScannerOrganisation[];
  /** The IPv6 tables (each with its own dictionary), read when first needed. */
  v6: () => { country: CsvTable<string>; asn: CsvTable<AsnEntry> };
}

const loadV6Tables = () => ({ country: loadCountryTable(...COUNTRY_PACKAGE), asn: loadAsnTable(...ASN_PACKAGE) });

/** The tables built from their sources: the npm packages' files and data/*.yaml. */
export function buildEnrichmentTables(): EnrichmentTables {
  const country = loadCountryTable(...COUNTRY_PACKAGE);
  const asn = loadAsnTable(...ASN_PACKAGE);
  const countries = Array.from({ length: country.dictionary.size }, (_, i) => country.dictionary.get(i) as string);
  return {
    countryV4: country.v4,
    countries,
    asnV4: asn.v4,
    asns: asn.dictionary,
    regions: new RegionLookup(),
    rules: loadNetRules(),
    scanners: loadScannerOrganisations(),
    // The tables read already have their IPv6 halves a call away; a snapshot's read the files then.
    v6: () => ({ country, asn }),
  };
}

function loadNetRules(): NetRules {
  return { edu: loadAsnList('edu-asns.yaml'), hosting: loadAsnList('hosting-asns.yaml'), mobile: loadAsnList('mobile-asns.yaml') };
}

/** The IPv6 tables of a snapshot: read from the packages' files when first needed. */
export const lazyV6Tables = (): EnrichmentTables['v6'] => {
  let tables: ReturnType<EnrichmentTables['v6']> | undefined;
  return () => (tables ??= loadV6Tables());
};

