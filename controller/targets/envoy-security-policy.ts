// Envoy Gateway target: a SecurityPolicy (gateway.envoyproxy.io/v1alpha1) in each namespace of the targetRefs,
// attached to those Gateways, listeners or routes, whose authorization allows by default and denies the list in
// one rule (principal.clientCIDRs). Envoy Gateway applies one SecurityPolicy per target (the oldest wins a
// conflict), so the list is never spread over several: one object holds it, within maxCIDRs and 1 MiB.
import type { EnvoySecurityPolicyTarget } from '../api/v1alpha1.ts';
import { objectName, type ResourceType } from '../k8s.ts';
import { deleteOwned, ownedMetadata, ownerReferencesIn, syncObjects, targetSelector, type DesiredObject } from './objects.ts';
import { oneObjectProblem } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'envoySecurityPolicy';
const SECURITY_POLICY: ResourceType = { group: 'gateway.envoyproxy.io', version: 'v1alpha1', kind: 'SecurityPolicy', plural: 'securitypolicies', namespaced: true };

/** One SecurityPolicy per namespace of the targetRefs; none for an empty list. */
export function desiredSecurityPolicies(ctx: Pick<TargetContext, 'sub' | 'list'>, target: EnvoySecurityPolicyTarget): DesiredObject[] {
  const { sub, list } = ctx;
  if (!list.all.length) return [];
  const byNamespace = new Map<string, EnvoySecurityPolicyTarget['targetRefs']>();
  for (const ref of target.targetRefs) {
    const namespace = ref.namespace ?? sub.metadata.namespace;
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), ref]);
  }
  const authorization = { defaultAction: 'Allow', rules: [{ name: 'blockfeed-deny-list', action: 'Deny', principal: { clientCIDRs: list.all } }] };
  return [...byNamespace].sort(([a], [b]) => a.localeCompare(b)).map(([namespace, refs]) => ({
    namespace,
    name: objectName('blockfeed', sub),
    ...ownedMetadata(sub, FIELD),
    ownerReferences: ownerReferencesIn(sub, namespace),
    content: {
      spec: {
        targetRefs: refs.map((r) => ({ group: r.group, kind: r.kind, name: r.name, ...(r.sectionName ? { sectionName: r.sectionName } : {}) })),
        authorization,
      },
    },
  }));
}

async function apply(ctx: TargetContext, target: EnvoySecurityPolicyTarget): Promise<TargetOutcome> {
  const outcome: TargetOutcome = { kind: SECURITY_POLICY.kind, objects: [], writes: 0, problems: [] };
  const { list } = ctx;
  const problem = oneObjectProblem(list.all, 'SecurityPolicy', target.maxCIDRs);
  if (problem) {
    outcome.problems.push({ ...problem, message: `${FIELD}: ${problem.message}` });
    return outcome;
  }
  const desired = desiredSecurityPolicies(ctx, target);
  const result = await syncObjects(ctx, SECURITY_POLICY, desired, { selector: targetSelector(ctx.sub, FIELD) });
  outcome.writes = result.written + result.deleted;
  outcome.objects = desired.map((d) => ({ kind: SECURITY_POLICY.kind, namespace: d.namespace, name: d.name, cidrs: list.all.length }));
  return outcome;
}

export const envoySecurityPolicyTarget: TargetKind<'envoySecurityPolicy'> = {
  field: FIELD,
  metricKind: SECURITY_POLICY.kind,
  resources: [SECURITY_POLICY],
  rules: [{ apiGroups: [SECURITY_POLICY.group], resources: [SECURITY_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [SECURITY_POLICY], { selector: targetSelector(ctx.sub, FIELD) }),
};
