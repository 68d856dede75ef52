// Calico target: the list in GlobalNetworkSets labelled per subscription, and by default a GlobalNetworkPolicy
// with a Deny ingress rule whose source selects them. Written as crd.projectcalico.org/v1, the CRDs every
// Calico with the Kubernetes datastore serves (the projectcalico.org/v3 API needs Calico's API server, or the
// v3 CRD mode of recent releases).
//
// The policy is pre-DNAT on host endpoints: it drops listed clients as they enter a node, before kube-proxy's
// DNAT, and a pre-DNAT policy has no end-of-tier drop, so all other traffic goes on to the policies that follow.
// (A normal policy selecting pods would put every selected pod into default deny.) In a cluster without host
// endpoints the policy applies to nothing: the target then says so (TargetNotFound) and waits for them.
import type { CalicoGlobalNetworkSetTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { isNotFound, listMeta, objectName, subscriptionKey, SUBSCRIPTION_LABEL } from '../runtime/k8s.ts';
import { type ResourceType } from '../runtime/resources.ts';
import { TARGET_LABEL, deleteOwned, ownedMetadata, targetSelector, type DesiredObject } from '../runtime/objects.ts';
import { applyCut } from './apply.ts';
import type { Shard } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'calicoGlobalNetworkSet';
const NETWORK_SET: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', kind: 'GlobalNetworkSet', plural: 'globalnetworksets', namespaced: false };
const NETWORK_POLICY: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', namespaced: false };
/** What a pre-DNAT policy applies to: a node's interfaces (one per node with automatic host endpoints). */
const HOST_ENDPOINT: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', kind: 'HostEndpoint', plural: 'hostendpoints', namespaced: false };

/** The Calico selector of a subscription's network sets. */
export function networkSetSelector(sub: Parameters<typeof subscriptionKey>[0]): string {
  return `${SUBSCRIPTION_LABEL} == '${subscriptionKey(sub)}' && ${TARGET_LABEL} == '${FIELD}'`;
}

/** The sets (<name>-<key>: shards.ts names the parts) and the policy over them; no policy without sets (an empty list). */
export function desiredCalicoObjects(ctx: Pick<TargetContext, 'sub'>, target: CalicoGlobalNetworkSetTarget, shards: readonly Shard[]): { sets: DesiredObject[]; policy: DesiredObject[] } {
  const { sub } = ctx;
  const base = objectName('blockfeed', sub);
  const owned = ownedMetadata(sub, FIELD);
  const sets = shards.map(({ key, cidrs }) => ({ name: `${base}-${key}`, ...owned, content: { spec: { nets: cidrs } } }));
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

/**
 * Whether the cluster has any host endpoint for the policy to apply to. (Which ones its selector picks, only
 * Calico's selector language tells.) True when HostEndpoints are not served: Calico's other kinds are then
 * missing too, and the target says so.
 */
async function hasHostEndpoints(ctx: TargetContext): Promise<boolean> {
  try {
    return (await listMeta(ctx.apis, HOST_ENDPOINT, '', { limit: 1 })).length > 0;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

async function apply(ctx: TargetContext, target: CalicoGlobalNetworkSetTarget): Promise<TargetOutcome> {
  const withPolicy = target.policy.enabled && ctx.list.all.length > 0;
  const [outcome, hostEndpoints] = await Promise.all([
    // Sets and policy side by side: the policy selects the sets by label, whichever are there.
    applyCut(ctx, { field: FIELD, metricKind: NETWORK_SET.kind }, target.maxCIDRs, (shards) => {
      const { sets, policy } = desiredCalicoObjects(ctx, target, shards);
      return [
        { resource: NETWORK_SET, objects: sets, cidrs: (i) => shards[i]!.cidrs.length },
        { resource: NETWORK_POLICY, objects: policy, cidrs: () => ctx.list.all.length },
      ];
    }),
    withPolicy ? hasHostEndpoints(ctx) : true,
  ]);
  if (!hostEndpoints) {
    // Written all the same: it takes effect as soon as host endpoints appear.
    const fix = "turn on Calico's automatic host endpoints (KubeControllersConfiguration default, spec.controllers.node.hostEndpoint.autoCreate: Enabled) or create HostEndpoints";
    outcome.problems.push({ reason: 'TargetNotFound', message: `${FIELD}: the GlobalNetworkPolicy applies to host endpoints only, and the cluster has none, so nothing is blocked; ${fix}` });
  }
  return outcome;
}

export const calicoGlobalNetworkSetTarget: TargetKind<'calicoGlobalNetworkSet'> = {
  field: FIELD,
  metricKind: NETWORK_SET.kind,
  resources: [NETWORK_SET, NETWORK_POLICY],
  rules: [
    { apiGroups: ['crd.projectcalico.org'], resources: [NETWORK_SET.plural, NETWORK_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
    // whether the policy applies anywhere (hasHostEndpoints)
    { apiGroups: ['crd.projectcalico.org'], resources: [HOST_ENDPOINT.plural], verbs: ['list'] },
  ],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [NETWORK_POLICY, NETWORK_SET], { selector: targetSelector(ctx.sub, FIELD) }),
};
