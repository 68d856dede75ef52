// Cilium target: the list in CiliumCIDRGroups (cilium.io/v2, cluster-scoped; Cilium gives each group one
// identity, which keeps large lists cheap), and by default a CiliumClusterwideNetworkPolicy denying ingress
// from them (ingressDeny, fromCIDRSet, cidrGroupSelector) with default deny off: it blocks the list and nothing
// else. The policy selects the groups by label, not by name, so it stays the same when the list is cut anew.
// The Cilium operator checks each policy as the agents do before they enforce it, and writes the verdict into
// the policy's status; a policy it finds invalid makes the target Degraded (TargetNotEnforced). Agents that
// ignore enableDefaultDeny would turn the policy into default deny for every endpoint it selects: then it is
// not written (TargetUnsafe), and the groups alone are.
import type { CiliumCIDRGroupTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { SUBSCRIPTION_LABEL, apiRequest, objectName, subscriptionKey } from '../runtime/k8s.ts';
import { type ResourceType } from '../runtime/resources.ts';
import { TARGET_LABEL, deleteOwned, ownedMetadata, targetSelector, type DesiredObject, type Refusal } from '../runtime/objects.ts';
import { applyCut, conditionText, type StatusCondition } from './apply.ts';
import type { Shard } from './shards.ts';
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

/** The agents' configuration, as Cilium's Helm chart and cilium-cli name it, in whichever namespace Cilium runs. */
const AGENT_CONFIG = 'cilium-config';
const NON_DEFAULT_DENY = 'enable-non-default-deny-policies';
/** What the agents read as false (Go's strconv.ParseBool). */
const FALSE = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

interface AgentConfig {
  metadata: { namespace?: string };
  data?: Record<string, string>;
}

/**
 * Why the policy must not be written: Cilium's agents run with non-default-deny policies off (Helm value
 * enableNonDefaultDenyPolicies: false), and then ignore enableDefaultDeny, so this deny-only policy would put
 * every endpoint it selects into default deny for ingress. Pure; no configuration found is Cilium's default, on.
 */
export function forcedDefaultDeny(configs: readonly AgentConfig[]): string | undefined {
  const off = configs.find((c) => FALSE.has(c.data?.[NON_DEFAULT_DENY]?.trim() ?? ''));
  if (!off) return undefined;
  return (
    `Cilium's agents run with ${NON_DEFAULT_DENY}=false (ConfigMap ${off.metadata.namespace ?? ''}/${AGENT_CONFIG}), so they ignore ` +
    'enableDefaultDeny and the policy would put every endpoint it selects into default deny'
  );
}

async function agentConfigs(ctx: TargetContext): Promise<AgentConfig[]> {
  const path = `/api/v1/configmaps?fieldSelector=${encodeURIComponent(`metadata.name=${AGENT_CONFIG}`)}`;
  return (JSON.parse(await apiRequest(ctx.apis, 'GET', path)) as { items: AgentConfig[] }).items;
}

/** The groups (<name>-<key>: shards.ts names the parts) and the policy over them; no policy without groups (an empty list). */
export function desiredCiliumObjects(ctx: Pick<TargetContext, 'sub'>, target: CiliumCIDRGroupTarget, shards: readonly Shard[]): { groups: DesiredObject[]; policy: DesiredObject[] } {
  const { sub } = ctx;
  const base = objectName('blockfeed', sub);
  const owned = ownedMetadata(sub, FIELD);
  const groups = shards.map(({ key, cidrs }) => ({ name: `${base}-${key}`, ...owned, content: { spec: { externalCIDRs: cidrs } } }));
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
        // the subscription's groups, whichever there are
        ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { [SUBSCRIPTION_LABEL]: subscriptionKey(sub), [TARGET_LABEL]: FIELD } } }] }],
      },
    },
  };
  return { groups, policy: [policy] };
}

async function apply(ctx: TargetContext, target: CiliumCIDRGroupTarget): Promise<TargetOutcome> {
  const unsafe = target.policy.enabled ? forcedDefaultDeny(await agentConfigs(ctx)) : undefined;
  // Groups and policy side by side: the policy selects the groups by label, whichever exist.
  const outcome = await applyCut(ctx, { field: FIELD, metricKind: CIDR_GROUP.kind }, target.maxCIDRs, (shards) => {
    const { groups, policy } = desiredCiliumObjects(ctx, target, shards);
    return [
      { resource: CIDR_GROUP, objects: groups, cidrs: (i) => shards[i]!.cidrs.length },
      // An unsafe policy is not written, and one written before goes: no block is better than a cut-off cluster.
      { resource: CLUSTERWIDE_POLICY, objects: unsafe ? [] : policy, cidrs: () => ctx.list.all.length, refusal: ciliumRefusal },
    ];
  });
  if (unsafe) {
    const fix = 'set it to true (Helm value enableNonDefaultDenyPolicies), or set policy.enabled: false and deny the groups in a policy of your own';
    outcome.problems.push({ reason: 'TargetUnsafe', message: `${FIELD}: the CiliumClusterwideNetworkPolicy is not written: ${unsafe}; ${fix}` });
  }
  return outcome;
}

export const ciliumCIDRGroupTarget: TargetKind<'ciliumCIDRGroup'> = {
  field: FIELD,
  metricKind: CIDR_GROUP.kind,
  resources: [CIDR_GROUP, CLUSTERWIDE_POLICY],
  rules: [
    { apiGroups: ['cilium.io'], resources: [CIDR_GROUP.plural, CLUSTERWIDE_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
    // the agents' configuration (forcedDefaultDeny)
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
  ],
  apply,
  // The policy first: it must not outlive the groups it names.
  cleanup: (ctx) => deleteOwned(ctx, [CLUSTERWIDE_POLICY, CIDR_GROUP], { selector: targetSelector(ctx.sub, FIELD) }),
};
