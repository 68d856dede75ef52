// What every target receives and reports.
import type { Logger } from '../../common/logging.ts';
import type { BlocklistSubscription, TargetStatus } from '../api/v1alpha1.ts';
import type { Apis } from '../k8s.ts';

/** The aggregated list as applied: CIDR strings, IPv4 then IPv6, each ascending. */
export interface AppliedList {
  all: readonly string[];
  v4: readonly string[];
  v6: readonly string[];
}

export interface TargetContext {
  apis: Apis;
  sub: BlocklistSubscription;
  list: AppliedList;
  log: Logger;
}

export interface TargetOutcome {
  kind: 'NetworkPolicy' | 'Ingress' | 'ConfigMap';
  objects: TargetStatus[];
  /** objects written (created, replaced, deleted) */
  writes: number;
  /** reasons the list could not be applied somewhere; what was there stays */
  problems: string[];
}

export function splitFamilies(all: readonly string[]): AppliedList {
  const v6Start = all.findIndex((c) => c.includes(':'));
  return v6Start === -1 ? { all, v4: all, v6: [] } : { all, v4: all.slice(0, v6Start), v6: all.slice(v6Start) };
}
