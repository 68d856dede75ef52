// Network type and carrier normalization: pure rules over the ASN and ip2region's carrier text.
import type { Isp, Net } from '../../common/vocabulary.ts';
import type { AsnList } from './curated.ts';

export interface NetRules {
  edu: AsnList;
  hosting: AsnList;
  mobile: AsnList;
}

const includesAny = (text: string | null, keywords: readonly string[]) => !!text && keywords.some((k) => text.includes(k));

/** edu → idc → mobile → broadband, as data/README.md orders them. */
export function netType(rules: NetRules, asn: number | null, carrier: string | null): Net {
  if ((asn !== null && rules.edu.asns.has(asn)) || includesAny(carrier, rules.edu.carrierKeywords)) return 'edu';
  if ((asn !== null && rules.hosting.asns.has(asn)) || includesAny(carrier, rules.hosting.carrierKeywords)) return 'idc';
  if ((asn !== null && rules.mobile.asns.has(asn)) || includesAny(carrier, rules.mobile.carrierKeywords)) return 'mobile';
  return 'broadband';
}

/** The `isp` filter value of a carrier: 电信, 联通 or 移动 (China Telecom, Unicom, Mobile), else null. */
export function normalizeIsp(carrier: string | null): Isp | null {
  if (!carrier) return null;
  if (carrier.includes('电信')) return '电信';
  if (carrier.includes('联通')) return '联通';
  if (carrier.includes('移动')) return '移动';
  return null;
}
