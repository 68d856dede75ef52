// Envoy Gateway target: a SecurityPolicy (gateway.envoyproxy.io/v1alpha1) in each namespace of the targetRefs,
// attached to those Gateways, listeners or routes, whose authorization allows by default and denies the list in
// one rule (principal.clientCIDRs). Envoy Gateway applies one SecurityPolicy per target (the oldest wins a
// conflict), so the list is never spread over several: one object holds it, within maxCIDRs and 1 MiB.
// Envoy Gateway reports in each policy's status whether it enforces it for each Gateway: a policy it did not
// accept (a conflict, an invalid reference), or one that other SecurityPolicies override on some routes, makes
// the target Degraded (TargetNotEnforced) for as long as the status says so.
import type { EnvoySecurityPolicyTarget } from '../api/v1alpha1.ts';
import { objectName, type ResourceType } from '../k8s.ts';
import {
  aboutGeneration,
  conditionText,
  deleteOwned,
  ownedMetadata,
  ownerReferencesIn,
  refusalProblems,
  syncObjects,
  targetSelector,
  type DesiredObject,
  type Refusal,
  type StatusCondition,
} from './objects.ts';
import { oneObjectProblem } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'envoySecurityPolicy';
const SECURITY_POLICY: ResourceType = { group: 'gateway.envoyproxy.io', version: 'v1alpha1', kind: 'SecurityPolicy', plural: 'securitypolicies', namespaced: true };

interface PolicyStatus {
  metadata?: { generation?: number };
  status?: { ancestors?: { ancestorRef?: { kind?: string; namespace?: string; name?: string; sectionName?: string }; conditions?: StatusCondition[] }[] };
}

/**
 * Why Envoy Gateway does not enforce a SecurityPolicy, per Gateway in its status: not Accepted, or Overridden
 * (other SecurityPolicies take its place on some routes). Conditions about an older generation say nothing
 * about this one.
 */
export const envoyRefusal: Refusal = (object) => {
  const { metadata, status } = object as PolicyStatus;
  const refusals: string[] = [];
  for (const ancestor of status?.ancestors ?? []) {
    const ref = ancestor.ancestorRef;
    const gateway = `${ref?.kind ?? 'Gateway'} ${ref?.namespace ? `${ref.namespace}/` : ''}${ref?.name ?? '?'}${ref?.sectionName ? `/${ref.sectionName}` : ''}`;
    for (const c of ancestor.conditions ?? []) {
      const refused = (c.type === 'Accepted' && c.status === 'False') || (c.type === 'Overridden' && c.status === 'True');
      if (refused && aboutGeneration(c, metadata?.generation)) refusals.push(`${gateway}: ${conditionText(c)}`);
    }
  }
  return refusals.length ? refusals.join('; ') : undefined;
};

/** One SecurityPolicy per namespace of the targetRefs; none for an empty list. */
export function desiredSecurityPolicies(ctx: Pick<TargetContext, 'sub' | 'list'>, target: EnvoySecurityPolicyTarget): DesiredObject[] {
  const { sub, list } = ctx;
  if (!list.all.length) return [];
  const byNamespace = new Map<string, EnvoySecurityPolicyTarget['targetRefs']>();
  const seen = new Set<string>();
  for (const ref of target.targetRefs) {
    // '' (the CRD's default) is the subscription's namespace.
    const namespace = ref.namespace || sub.metadata.namespace;
    // The CRD refuses a reference given twice, but not one given once with the subscription's namespace and once
    // without: the same object under two keys of the list-map. It is attached once.
    const key = JSON.stringify([namespace, ref.group, ref.kind, ref.name, ref.sectionName ?? '']);
    if (seen.has(key)) continue;
    seen.add(key);
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
  const result = await syncObjects(ctx, SECURITY_POLICY, desired, { selector: targetSelector(ctx.sub, FIELD) }, envoyRefusal);
  outcome.writes = result.written + result.deleted;
  outcome.problems.push(...refusalProblems(ctx, SECURITY_POLICY, desired, FIELD));
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
