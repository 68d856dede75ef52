// Reads the curated YAML files in data/ (hosting, education and mobile ASNs with carrier keywords; research
// and asset scanner ranges). Validates the shape so a bad edit fails loudly at start-up.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const DATA_DIR = fileURLToPath(new URL('../../data/', import.meta.url));

export interface AsnList {
  asns: Set<number>;
  carrierKeywords: string[];
}

export interface ScannerOrganisation {
  name: string;
  kind: 'research_scanner' | 'asset_scanner';
  source: string;
  ranges: string[];
  asns: number[];
}

function readYaml(file: string): Record<string, unknown> {
  const doc: unknown = parseYaml(readFileSync(`${DATA_DIR}${file}`, 'utf8'));
  if (!doc || typeof doc !== 'object') throw new Error(`data/${file}: expected a mapping`);
  return doc as Record<string, unknown>;
}

export function loadAsnList(file: string): AsnList {
  const doc = readYaml(file);
  const entries = Array.isArray(doc.asns) ? (doc.asns as unknown[]) : [];
  const asns = new Set<number>();
  for (const e of entries) {
    const asn = (e as { asn?: unknown }).asn;
    if (typeof asn !== 'number' || !Number.isInteger(asn)) throw new Error(`data/${file}: entry without an integer asn`);
    asns.add(asn);
  }
  const keywords = Array.isArray(doc.carrier_keywords) ? doc.carrier_keywords.map(String) : [];
  return { asns, carrierKeywords: keywords };
}

export function loadScannerOrganisations(file = 'scanners.yaml'): ScannerOrganisation[] {
  const doc = readYaml(file);
  const orgs = Array.isArray(doc.organisations) ? (doc.organisations as Record<string, unknown>[]) : [];
  return orgs.map((o) => {
    if (o.kind !== 'research_scanner' && o.kind !== 'asset_scanner') throw new Error(`data/${file}: ${String(o.name)}: bad kind`);
    return {
      name: String(o.name),
      kind: o.kind,
      source: String(o.source),
      ranges: Array.isArray(o.ranges) ? o.ranges.map(String) : [],
      asns: Array.isArray(o.asns) ? o.asns.map(Number) : [],
    };
  });
}
