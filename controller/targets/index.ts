// Every kind of target, in one list: reconcile dispatches through it, clean-up walks it, the drift watch learns
// from it which objects are the controller's, rbac.ts takes each kind's API calls from it, and metrics name
// each kind by it. A new enforcement point is one module here plus its schema in api/v1alpha1/.
import { TARGET_FIELDS, type BlocklistSubscriptionSpec } from '../../api/v1alpha1/blocklist-subscription.ts';
import { calicoGlobalNetworkSetTarget } from './calico-global-network-set.ts';
import { ciliumCIDRGroupTarget } from './cilium-cidr-group.ts';
import { configMapTarget } from './configmap.ts';
import { envoySecurityPolicyTarget } from './envoy-security-policy.ts';
import { ingressNginxTarget } from './ingress-nginx.ts';
import { istioAuthorizationPolicyTarget } from './istio-authorization-policy.ts';
import { networkPolicyTarget } from './networkpolicy.ts';
import type { Listing } from '../runtime/objects.ts';
import type { TargetContext, TargetField, TargetKind, TargetOutcome } from './types.ts';

type AnyTargetKind = { [F in TargetField]: TargetKind<F> }[TargetField];

export const TARGET_KINDS: readonly AnyTargetKind[] = [
  networkPolicyTarget,
  ingressNginxTarget,
  configMapTarget,
  envoySecurityPolicyTarget,
  istioAuthorizationPolicyTarget,
  ciliumCIDRGroupTarget,
  calicoGlobalNetworkSetTarget,
];

// The schema and this list name the same kinds (a unit test says so too).
if (TARGET_KINDS.map((k) => k.field).join() !== TARGET_FIELDS.join()) throw new Error('targets/index.ts and api/v1alpha1/ list different targets');

/**
 * The name a CustomResourceDefinition would have (`<plural>.<group>`) for every API the targets call: the
 * controller watches for these to be installed (a target waiting for its enforcement point is then applied).
 * Built-in kinds are in it too, and never appear as CRDs.
 */
export const TARGET_APIS: ReadonlySet<string> = new Set(
  TARGET_KINDS.flatMap((k) => k.rules).flatMap((rule) => (rule.apiGroups ?? []).filter(Boolean).flatMap((group) => (rule.resources ?? []).map((plural) => `${plural}.${group}`))),
);

type TargetSpec = BlocklistSubscriptionSpec['targets'][number];

/** The kind of one entry of spec.targets (the CRD makes sure exactly one field is set). */
export function kindOf(target: TargetSpec): AnyTargetKind {
  const kind = TARGET_KINDS.find((k) => target[k.field] !== undefined);
  if (!kind) throw new Error(`a target sets none of ${TARGET_FIELDS.join(', ')}`);
  return kind;
}

export function kindByField(field: string): AnyTargetKind | undefined {
  return TARGET_KINDS.find((k) => k.field === field);
}

/** Applies one entry of spec.targets with its kind's code. */
export function applyTarget(ctx: TargetContext, target: TargetSpec): Promise<TargetOutcome> {
  const kind = kindOf(target);
  // kindOf() found the field set: its value has the kind's own spec type.
  return (kind.apply as (ctx: TargetContext, spec: unknown) => Promise<TargetOutcome>)(ctx, target[kind.field]);
}

/** The lookups of one entry of spec.targets (TargetKind.lookups). */
export function lookupsOf(target: TargetSpec): Listing[] {
  const kind = kindOf(target);
  return (kind.lookups as ((spec: unknown) => Listing[]) | undefined)?.(target[kind.field]) ?? [];
}
