// NetworkPolicy target. Policies only ever allow, and allows add up, so a block is expressed as one policy per
// namespace that allows everything except the list, plus in-cluster peers. The except list is never spread over
// several policies or ipBlocks: their union would allow everything again. A list that does not fit one object
// is reported, and the previous policy stays in force.
import type { NetworkPolicyTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { labelSelectorString, objectName, ownedSelector } from '../runtime/k8s.ts';
import { type ResourceType } from '../runtime/resources.ts';
import { oneObjectProblem } from './shards.ts';
import { lookup, ownedMetadata, ownerReferencesIn, syncObjects, deleteOwned, type DesiredObject, type Listing } from '../runtime/objects.ts';
import type { AppliedList, TargetContext, TargetKind, TargetOutcome } from './types.ts';

const NAMESPACE: ResourceType = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const NETWORK_POLICY: ResourceType = { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true };

/** The policy spec, as the apiserver spells it. */
export function policySpec(target: NetworkPolicyTarget, list: AppliedList): Record<string, unknown> {
  const peers = [
    { ipBlock: { cidr: '0.0.0.0/0', ...(list.v4.length ? { except: list.v4 } : {}) } },
    { ipBlock: { cidr: '::/0', ...(list.v6.length ? { except: list.v6 } : {}) } },
    // Pods of every namespace stay reachable whatever addresses the cluster uses.
    { namespaceSelector: {} },
  ];
  const direction = target.direction ?? 'Ingress';
  return {
    podSelector: target.podSelector ?? {},
    policyTypes: [direction],
    ...(direction === 'Ingress' ? { ingress: [{ from: peers }] } : { egress: [{ to: peers }] }),
  };
}

/** One policy per selected namespace, all with the same spec. */
export function desiredPolicies(ctx: Pick<TargetContext, 'sub' | 'list'>, target: NetworkPolicyTarget, namespaces: readonly string[]): DesiredObject[] {
  const content = { spec: policySpec(target, ctx.list) };
  const name = objectName('blockfeed', ctx.sub);
  return [...namespaces].sort().map((namespace) => ({
    namespace,
    name,
    ...ownedMetadata(ctx.sub, 'networkPolicy'),
    ownerReferences: ownerReferencesIn(ctx.sub, namespace),
    content,
  }));
}

const selectedNamespaces = (target: NetworkPolicyTarget): Listing => ({ resource: NAMESPACE, selector: labelSelectorString(target.namespaceSelector) });

async function apply(ctx: TargetContext, target: NetworkPolicyTarget): Promise<TargetOutcome> {
  const { sub, list } = ctx;
  const outcome: TargetOutcome = { kind: 'NetworkPolicy', objects: [], writes: 0, problems: [] };
  const problem = oneObjectProblem(list.all, 'NetworkPolicy');
  if (problem) {
    outcome.problems.push(problem);
    return outcome;
  }
  let desired: DesiredObject[] = [];
  // Every namespace: policies in namespaces no longer selected are deleted.
  const result = await syncObjects(
    ctx,
    NETWORK_POLICY,
    async () => {
      const namespaces = await lookup(ctx, selectedNamespaces(target));
      return (desired = desiredPolicies(ctx, target, namespaces.filter((n) => !n.deletionTimestamp).map((n) => n.name)));
    },
    { selector: ownedSelector(sub) },
  );
  outcome.writes = result.written + result.deleted;
  outcome.objects = desired.map((d) => ({ kind: 'NetworkPolicy', namespace: d.namespace, name: d.name, cidrs: list.all.length }));
  return outcome;
}

export const networkPolicyTarget: TargetKind<'networkPolicy'> = {
  field: 'networkPolicy',
  metricKind: 'NetworkPolicy',
  resources: [NETWORK_POLICY],
  rules: [
    // selected namespaces by label
    { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
    // one policy per selected namespace; its own policies found by label across namespaces, and watched for drift
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
  ],
  lookups: (target) => [selectedNamespaces(target)],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [NETWORK_POLICY], { selector: ownedSelector(ctx.sub) }),
};
