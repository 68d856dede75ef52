// Cilium target: the list in CiliumCIDRGroups (cilium.io/v2, cluster-scoped; Cilium gives each group one
// identity, which keeps large lists cheap), and by default a CiliumClusterwideNetworkPolicy denying ingress
// from them (ingressDeny, fromCIDRSet, cidrGroupRef) with default deny off: it blocks the list and nothing else.
// The Cilium operator checks each policy as the agents do before they enforce it, and writes the verdict into
// the policy's status; a policy it finds invalid makes the target Degraded (TargetNotEnforced).
import type { CiliumCIDRGroupTarget } from '../api/v1alpha1.ts';
import { objectName, type ResourceType } from '../k8s.ts';
import { applyCut, conditionText, deleteOwned, ownedMetadata, targetSelector, type DesiredObject, type Refusal, type StatusCondition } from './objects.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'ciliumCIDRGroup';
const CIDR_GROUP: ResourceType = { group: 'cilium.io', version: 'v2', kind: 'CiliumCIDRGroup', plural: 'ciliumcidrgroups', namespaced: false };
const CLUSTERWIDE_POLICY: ResourceType = { group: 'cilium.io', version: 'v2', kind: 'CiliumClusterwideNetworkPolicy', plural: 'ciliumclusterwidenetworkpolicies', namespaced: false };

/**
 * Why the Cilium operator says the agents will not enforce the policy: its `Valid` condition is False (the
 * message is the agents' own validation error). Cilium's conditions carry no generation; the operator rewrites
 * this one whenever the policy changes.
 */
export const ciliumRefusal: Refusal = (object) => {
  const conditions = (object as { status?: { conditions?: StatusCondition[] } }).status?.conditions ?? [];
  const invalid = conditions.filter((c) => c.type === 'Valid' && c.status === 'False');
  return invalid.length ? invalid.map(conditionText).join('; ') : undefined;
};

/** The groups (<name>-0, <name>-1, ...) and the policy over them; no policy without groups (an empty list). */
export function desiredCiliumObjects(ctx: Pick<TargetContext, 'sub'>, target: CiliumCIDRGroupTarget, shards: readonly string[][]): { groups: DesiredObject[]; policy: DesiredObject[] } {
  const { sub } = ctx;
  const base = objectName('blockfeed', sub);
  const owned = ownedMetadata(sub, FIELD);
  const groups = shards.map((cidrs, index) => ({ name: `${base}-${index}`, ...owned, content: { spec: { externalCIDRs: cidrs } } }));
  if (!target.policy.enabled || !groups.length) return { groups, policy: [] };
  const { endpointSelector, nodeSelector } = target.policy;
  const policy = {
    name: base,
    ...owned,
    content: {
      spec: {
        description: `blockfeed: deny ingress from the list of BlocklistSubscription ${sub.metadata.namespace}/${sub.metadata.name}`,
        ...(nodeSelector ? { nodeSelector } : { endpointSelector: endpointSelector ?? {} }),
        // A deny-only policy would otherwise put every selected endpoint into default deny.
        enableDefaultDeny: { ingress: false, egress: false },
        ingressDeny: [{ fromCIDRSet: groups.map((g) => ({ cidrGroupRef: g.name })) }],
      },
    },
  };
  return { groups, policy: [policy] };
}

function apply(ctx: TargetContext, target: CiliumCIDRGroupTarget): Promise<TargetOutcome> {
  // Groups and policy side by side: Cilium selects the groups a policy names by label, so one that does not
  // exist (yet, or any more) matches nothing.
  return applyCut(ctx, { field: FIELD, metricKind: CIDR_GROUP.kind }, target.maxCIDRs, (shards) => {
    const { groups, policy } = desiredCiliumObjects(ctx, target, shards);
    return [
      { resource: CIDR_GROUP, objects: groups, cidrs: (i) => shards[i]!.length },
      { resource: CLUSTERWIDE_POLICY, objects: policy, cidrs: () => ctx.list.all.length, refusal: ciliumRefusal },
    ];
  });
}

export const ciliumCIDRGroupTarget: TargetKind<'ciliumCIDRGroup'> = {
  field: FIELD,
  metricKind: CIDR_GROUP.kind,
  resources: [CIDR_GROUP, CLUSTERWIDE_POLICY],
  rules: [{ apiGroups: ['cilium.io'], resources: [CIDR_GROUP.plural, CLUSTERWIDE_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }],
  apply,
  // The policy first: it must not outlive the groups it names.
  cleanup: (ctx) => deleteOwned(ctx, [CLUSTERWIDE_POLICY, CIDR_GROUP], { selector: targetSelector(ctx.sub, FIELD) }),
};
