// Scanner identity: is an address inside the published ranges (or ASNs) of a research or asset scanning
// organisation (data/scanners.yaml)? Part of an address's enrichment.
import { ipv4Last, ipv6Last, requireCidr, type Address } from '../../common/ip.ts';
import { type ScannerOrganisation } from './curated.ts';
import { Ipv4RangesBuilder, Ipv6RangesBuilder, type Ipv4Ranges, type Ipv6Ranges } from './ranges.ts';

export interface ScannerMatch {
  kind: ScannerOrganisation['kind'];
  org: string;
}

export class ScannerRanges {
  private readonly v4: Ipv4Ranges;
  private readonly v6: Ipv6Ranges;
  private readonly orgs: ScannerOrganisation[];
  private readonly byAsn = new Map<number, number>();

  constructor(orgs: ScannerOrganisation[]) {
    this.orgs = orgs;
    const b4 = new Ipv4RangesBuilder();
    const b6 = new Ipv6RangesBuilder();
    orgs.forEach((o, i) => {
      for (const cidr of o.ranges) {
        const range = requireCidr(cidr);
        if (range.kind === 4) b4.add(range.network, ipv4Last(range.network, range.prefix), i);
        else b6.add(range.network, ipv6Last(range.network, range.prefix), i);
      }
      for (const asn of o.asns) this.byAsn.set(asn, i);
    });
    this.v4 = b4.build();
    this.v6 = b6.build();
  }

  /** The organisation whose own ranges hold the address, else the one its AS belongs to. */
  match(address: Address, asn: number | null): ScannerMatch | undefined {
    const byRange = address.kind === 4 ? this.v4.find(address.num) : this.v6.find(address.hi, address.lo);
    const org = this.orgs[byRange >= 0 || asn === null ? byRange : (this.byAsn.get(asn) ?? -1)];
    return org ? { kind: org.kind, org: org.name } : undefined;
  }
}
