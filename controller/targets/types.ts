// What every target receives and reports, and what a kind of target is (targets/index.ts lists them all).
import type { V1PolicyRule } from '@kubernetes/client-node';
import type { BlocklistSubscriptionSpec, TargetObject } from '../../api/v1alpha1/blocklist-subscription.ts';
import type { ResourceType } from '../runtime/resources.ts';
import type { Listing, WriteContext } from '../runtime/objects.ts';

/** The aggregated list as applied: CIDR strings, IPv4 then IPv6, each ascending. */
export interface AppliedList {
  all: readonly string[];
  v4: readonly string[];
  v6: readonly string[];
}

/** What a target applies, and where. */
export interface TargetContext extends WriteContext {
  list: AppliedList;
}

/**
 * Why a target does not hold the list; what it held before stays. Each is the Degraded condition's reason when
 * it happens: TargetTooLarge (the list is beyond what the object kind or the enforcement point takes),
 * TargetNotInstalled (the API of the enforcement point is not served: its CRDs are not installed),
 * TargetNotFound (an object the target names, or needs to take effect, does not exist), TargetConflict (an
 * object it would write exists and is someone else's), TargetNotEnforced (the enforcement point says, in the
 * object's status, that it does not enforce the object as written, or not everywhere it is attached),
 * TargetUnsafe (the enforcement point's configuration would make the object block more than the list: it is not
 * written), TargetContested (the target holds the list, but an object of someone else's that the enforcement
 * point takes only one of per target, like ours, is refused: the two contest the same target).
 */
export type ProblemReason = 'TargetTooLarge' | 'TargetNotInstalled' | 'TargetNotFound' | 'TargetConflict' | 'TargetNotEnforced' | 'TargetUnsafe' | 'TargetContested';

export interface TargetProblem {
  reason: ProblemReason;
  message: string;
}

export interface TargetOutcome {
  /** the kind label of the metrics (blockfeed_target_cidrs{kind}) */
  kind: string;
  objects: TargetObject[];
  /** objects written (created, replaced, deleted) */
  writes: number;
  problems: TargetProblem[];
}

type TargetSpec = BlocklistSubscriptionSpec['targets'][number];
export type TargetField = keyof TargetSpec;

/** One kind of target: a field of spec.targets[] and everything the controller does for it. */
export interface TargetKind<F extends TargetField = TargetField> {
  field: F;
  /** the kind label of its metrics */
  metricKind: string;
  /**
   * The kinds of object it writes, each labelled as the subscription's: watched for drift (runtime/drift.ts) and
   * removed by clean-up. Empty for a target that edits objects it does not own (ingress-nginx).
   */
  resources: readonly ResourceType[];
  /** The API calls it makes, generated into the chart's ClusterRole through rbac.ts. */
  rules: readonly V1PolicyRule[];
  /**
   * Objects of others that contest the target's objects' place at the enforcement point (Envoy Gateway enforces
   * one SecurityPolicy per target): apply() reads them, and the drift watch watches them (metadata only), so
   * that a change to one in a namespace where the target wrote an object of the kind has it checked again.
   */
  contested?: readonly Listing[];
  /** Lists apply() reads that do not depend on the list (lookup()): a sync starts them while the feed is pulled. */
  lookups?(spec: NonNullable<TargetSpec[F]>): Listing[];
  apply(ctx: TargetContext, spec: NonNullable<TargetSpec[F]>): Promise<TargetOutcome>;
  /** Removes what it wrote for the subscription (it is being deleted, or the target left its spec). */
  cleanup(ctx: WriteContext): Promise<number>;
}

export function splitFamilies(all: readonly string[]): AppliedList {
  const v6Start = all.findIndex((c) => c.includes(':'));
  return v6Start === -1 ? { all, v4: all, v6: [] } : { all, v4: all.slice(0, v6Start), v6: all.slice(v6Start) };
}
