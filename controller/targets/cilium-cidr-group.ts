// Cilium target: the list in CiliumCIDRGroups (cilium.io/v2, cluster-scoped; Cilium gives each group one
// identity, which keeps large lists cheap), and by default a CiliumClusterwideNetworkPolicy denying ingress
// from them (ingressDeny, fromCIDRSet, cidrGroupRef) with default deny off: it blocks the list and nothing else.
import type { CiliumCIDRGroupTarget } from '../api/v1alpha1.ts';
import { objectName, type ResourceType } from '../k8s.ts';
import { deleteOwned, ownedMetadata, syncObjects, targetSelector, type DesiredObject } from './objects.ts';
import { shardList } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'ciliumCIDRGroup';
const CIDR_GROUP: ResourceType = { group: 'cilium.io', version: 'v2', kind: 'CiliumCIDRGroup', plural: 'ciliumcidrgroups', namespaced: false };
const CLUSTERWIDE_POLICY: ResourceType = { group: 'cilium.io', version: 'v2', kind: 'CiliumClusterwideNetworkPolicy', plural: 'ciliumclusterwidenetworkpolicies', namespaced: false };

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

async function apply(ctx: TargetContext, target: CiliumCIDRGroupTarget): Promise<TargetOutcome> {
  const outcome: TargetOutcome = { kind: CIDR_GROUP.kind, objects: [], writes: 0, problems: [] };
  const cut = shardList(ctx.list.all, target.maxCIDRs, FIELD);
  if ('problem' in cut) {
    outcome.problems.push(cut.problem);
    return outcome;
  }
  const { groups, policy } = desiredCiliumObjects(ctx, target, cut.shards);
  const selector = targetSelector(ctx.sub, FIELD);
  // Groups first, so the policy never names a group that is not there yet.
  const written = await syncObjects(ctx, CIDR_GROUP, groups, { selector });
  const policyWritten = await syncObjects(ctx, CLUSTERWIDE_POLICY, policy, { selector });
  outcome.writes = written.written + written.deleted + policyWritten.written + policyWritten.deleted;
  outcome.objects = [
    ...groups.map((g, i) => ({ kind: CIDR_GROUP.kind, name: g.name, cidrs: cut.shards[i]!.length })),
    ...policy.map((p) => ({ kind: CLUSTERWIDE_POLICY.kind, name: p.name, cidrs: ctx.list.all.length })),
  ];
  return outcome;
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
