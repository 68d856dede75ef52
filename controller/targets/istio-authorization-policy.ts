// Istio target: AuthorizationPolicies (security.istio.io/v1, action DENY) holding the list as the source of
// their one rule, remoteIpBlocks (the original client, as the gateway trusts X-Forwarded-For or the PROXY
// protocol) or ipBlocks (the connection peer). DENY policies add up, so a long list is cut into several.
import type { IstioAuthorizationPolicyTarget } from '../api/v1alpha1.ts';
import { objectName, type ResourceType } from '../k8s.ts';
import { applyCut, deleteOwned, ownedMetadata, ownerReferencesIn, targetSelector, type DesiredObject } from './objects.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'istioAuthorizationPolicy';
const AUTHORIZATION_POLICY: ResourceType = { group: 'security.istio.io', version: 'v1', kind: 'AuthorizationPolicy', plural: 'authorizationpolicies', namespaced: true };

/** One DENY policy per part of the list: <name>-0, <name>-1, ... */
export function desiredAuthorizationPolicies(ctx: Pick<TargetContext, 'sub'>, target: IstioAuthorizationPolicyTarget, shards: readonly string[][]): DesiredObject[] {
  const { sub } = ctx;
  const namespace = target.namespace ?? sub.metadata.namespace;
  const source = target.clientAddress === 'PeerIp' ? 'ipBlocks' : 'remoteIpBlocks';
  const attach = target.targetRefs ? { targetRefs: target.targetRefs } : target.selector ? { selector: target.selector } : {};
  return shards.map((cidrs, index) => ({
    namespace,
    name: `${objectName('blockfeed', sub)}-${index}`,
    ...ownedMetadata(sub, FIELD),
    ownerReferences: ownerReferencesIn(sub, namespace),
    content: { spec: { action: 'DENY', ...attach, rules: [{ from: [{ source: { [source]: cidrs } }] }] } },
  }));
}

function apply(ctx: TargetContext, target: IstioAuthorizationPolicyTarget): Promise<TargetOutcome> {
  // Every namespace: policies left in a namespace the target no longer names go too.
  return applyCut(ctx, { field: FIELD, metricKind: AUTHORIZATION_POLICY.kind }, target.maxCIDRs, (shards) => [
    { resource: AUTHORIZATION_POLICY, objects: desiredAuthorizationPolicies(ctx, target, shards), cidrs: (i) => shards[i]!.length },
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
