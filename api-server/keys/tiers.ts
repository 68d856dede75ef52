// Tier quotas from configuration ("member=none,basic=100,pro=10000,enterprise=unlimited"). Pure.
import { UserError } from '../../common/errors.ts';

/** `none`: no API access (website download only); a number: calls per UTC day; `unlimited`. */
export type Quota = { kind: 'none' } | { kind: 'daily'; calls: number } | { kind: 'unlimited' };

export function parseTierQuotas(text: string): Map<string, Quota> {
  const tiers = new Map<string, Quota>();
  for (const part of text.split(',')) {
    const [name, value] = part.split('=').map((s) => s.trim());
    if (!name || value === undefined) throw new UserError(`BLOCKFEED_TIER_QUOTAS: "${part}" must look like tier=100, tier=none or tier=unlimited`);
    tiers.set(name, value === 'none' ? { kind: 'none' } : value === 'unlimited' ? { kind: 'unlimited' } : { kind: 'daily', calls: Number(value) });
  }
  return tiers;
}

/** Tier quotas count calls per UTC day. */
export const QUOTA_WINDOW_SECONDS = 86_400;

/** The rate counter a key's daily quota is metered in (the API counts it, the member centre shows it). */
export function quotaBucket(keyId: number): string {
  return `quota:${keyId}`;
}
