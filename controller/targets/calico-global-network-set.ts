// Calico target: the list in GlobalNetworkSets labelled per subscription, and by default a GlobalNetworkPolicy
// with a Deny ingress rule whose source selects them. Written as crd.projectcalico.org/v1, the CRDs every
// Calico with the Kubernetes datastore serves (the projectcalico.org/v3 API needs Calico's API server, or the
// v3 CRD mode of recent releases).
//
// The policy is pre-DNAT on host endpoints: it drops listed clients as they enter a node, before kube-proxy's
// DNAT, and a pre-DNAT policy has no end-of-tier drop, so all other traffic goes on to the policies that follow.
// (A normal policy selecting pods would put every selected pod into default deny.)
import type { CalicoGlobalNetworkSetTarget } from '../api/v1alpha1.ts';
import { objectName, subscriptionKey, SUBSCRIPTION_LABEL, type ResourceType } from '../k8s.ts';
import { TARGET_LABEL, applyCut, deleteOwned, ownedMetadata, targetSelector, type DesiredObject } from './objects.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'calicoGlobalNetworkSet';
const NETWORK_SET: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', kind: 'GlobalNetworkSet', plural: 'globalnetworksets', namespaced: false };
const NETWORK_POLICY: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', namespaced: false };

/** The Calico selector of a subscription's network sets. */
export function networkSetSelector(sub: Parameters<typeof subscriptionKey>[0]): string {
  return `${SUBSCRIPTION_LABEL} == '${subscriptionKey(sub)}' && ${TARGET_LABEL} == '${FIELD}'`;
}

/** The sets (<name>-0, <name>-1, ...) and the policy over them; no policy without sets (an empty list). */
export function desiredCalicoObjects(ctx: Pick<TargetContext, 'sub'>, target: CalicoGlobalNetworkSetTarget, shards: readonly string[][]): { sets: DesiredObject[]; policy: DesiredObject[] } {
  const { sub } = ctx;
  const base = objectName('blockfeed', sub);
  const owned = ownedMetadata(sub, FIELD);
  const sets = shards.map((nets, index) => ({ name: `${base}-${index}`, ...owned, content: { spec: { nets } } }));
  if (!target.policy.enabled || !sets.length) return { sets, policy: [] };
  const policy = {
    // The name a policy of the default tier is stored under in crd.projectcalico.org (calicoctl shows it without "default.").
    name: `default.${base}`,
    ...owned,
    content: {
      spec: {
        order: target.policy.order,
        selector: target.policy.selector,
        preDNAT: true,
        applyOnForward: true,
        types: ['Ingress'],
        ingress: [{ action: 'Deny', source: { selector: networkSetSelector(sub) } }],
      },
    },
  };
  return { sets, policy: [policy] };
}

function apply(ctx: TargetContext, target: CalicoGlobalNetworkSetTarget): Promise<TargetOutcome> {
  // Sets and policy side by side: the policy selects the sets by label, whichever are there.
  return applyCut(ctx, { field: FIELD, metricKind: NETWORK_SET.kind }, target.maxCIDRs, (shards) => {
    const { sets, policy } = desiredCalicoObjects(ctx, target, shards);
    return [
      { resource: NETWORK_SET, objects: sets, cidrs: (i) => shards[i]!.length },
      { resource: NETWORK_POLICY, objects: policy, cidrs: () => ctx.list.all.length },
    ];
  });
}

export const calicoGlobalNetworkSetTarget: TargetKind<'calicoGlobalNetworkSet'> = {
  field: FIELD,
  metricKind: NETWORK_SET.kind,
  resources: [NETWORK_SET, NETWORK_POLICY],
  rules: [{ apiGroups: ['crd.projectcalico.org'], resources: [NETWORK_SET.plural, NETWORK_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [NETWORK_POLICY, NETWORK_SET], { selector: targetSelector(ctx.sub, FIELD) }),
};
