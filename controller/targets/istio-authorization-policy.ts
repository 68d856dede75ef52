// Istio target: AuthorizationPolicies (security.istio.io/v1, action DENY) holding the list as the source of
// their one rule, remoteIpBlocks (the original client, as the gateway trusts X-Forwarded-For or the PROXY
// protocol) or ipBlocks (the connection peer). DENY policies add up, so a long list is cut into several.
// In ambient mode istiod reports in each policy's status whether ztunnel or the waypoint enforces it as written;
// one that either refuses, or enforces without what it cannot (remoteIpBlocks at ztunnel), makes the target
// Degraded (TargetNotEnforced) for as long as the status says so.
import type { IstioAuthorizationPolicyTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { objectName } from '../runtime/k8s.ts';
import { type ResourceType } from '../runtime/resources.ts';
import { deleteOwned, ownedMetadata, ownerReferencesIn, targetSelector, type DesiredObject, type Refusal } from '../runtime/objects.ts';
import { aboutGeneration, applyCut, conditionText, type StatusCondition } from './apply.ts';
import type { Shard } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'istioAuthorizationPolicy';
const AUTHORIZATION_POLICY: ResourceType = { group: 'security.istio.io', version: 'v1', kind: 'AuthorizationPolicy', plural: 'authorizationpolicies', namespaced: true };

interface PolicyStatus {
  metadata?: { generation?: number };
  status?: { conditions?: StatusCondition[] };
}

/** The conditions istiod writes about who enforces an AuthorizationPolicy in ambient mode. */
const ENFORCERS = new Set(['ZtunnelAccepted', 'WaypointAccepted']);

/**
 * Why istiod says an AuthorizationPolicy is not enforced as written, for its current generation: ztunnel or
 * the waypoint does not accept it, or accepts it without the values it cannot enforce (UnsupportedValue).
 */
export const istioRefusal: Refusal = (object) => {
  const { metadata, status } = object as PolicyStatus;
  const refusals = (status?.conditions ?? []).filter(
    (c) => ENFORCERS.has(c.type ?? '') && (c.status === 'False' || c.reason === 'UnsupportedValue') && aboutGeneration(c, metadata?.generation),
  );
  return refusals.length ? refusals.map(conditionText).join('; ') : undefined;
};

/** One DENY policy per part of the list: <name>-<key> (shards.ts names the parts). */
export function desiredAuthorizationPolicies(ctx: Pick<TargetContext, 'sub'>, target: IstioAuthorizationPolicyTarget, shards: readonly Shard[]): DesiredObject[] {
  const { sub } = ctx;
  const namespace = target.namespace ?? sub.metadata.namespace;
  const source = target.clientAddress === 'PeerIp' ? 'ipBlocks' : 'remoteIpBlocks';
  const attach = target.targetRefs ? { targetRefs: target.targetRefs } : target.selector ? { selector: target.selector } : {};
  return shards.map(({ key, cidrs }) => ({
    namespace,
    name: `${objectName('blockfeed', sub)}-${key}`,
    ...ownedMetadata(sub, FIELD),
    ownerReferences: ownerReferencesIn(sub, namespace),
    content: { spec: { action: 'DENY', ...attach, rules: [{ from: [{ source: { [source]: cidrs } }] }] } },
  }));
}

function apply(ctx: TargetContext, target: IstioAuthorizationPolicyTarget): Promise<TargetOutcome> {
  // Every namespace: policies left in a namespace the target no longer names go too.
  return applyCut(ctx, { field: FIELD, metricKind: AUTHORIZATION_POLICY.kind }, target.maxCIDRs, (shards) => [
    { resource: AUTHORIZATION_POLICY, objects: desiredAuthorizationPolicies(ctx, target, shards), cidrs: (i) => shards[i]!.cidrs.length, refusal: istioRefusal },
  ]);
}

export const istioAuthorizationPolicyTarget: TargetKind<'istioAuthorizationPolicy'> = {
  field: FIELD,
  metricKind: AUTHORIZATION_POLICY.kind,
  resources: [AUTHORIZATION_POLICY],
  rules: [{ apiGroups: [AUTHORIZATION_POLICY.group], resources: [AUTHORIZATION_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [AUTHORIZATION_POLICY], { selector: targetSelector(ctx.sub, FIELD) }),
};
