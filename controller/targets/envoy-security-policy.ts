// Envoy Gateway target: a SecurityPolicy (gateway.envoyproxy.io/v1alpha1) in each namespace of the targetRefs,
// attached to those Gateways, listeners or routes, whose authorization allows by default and denies the list in
// one rule (principal.clientCIDRs). Envoy Gateway applies one SecurityPolicy per target (the oldest wins a
// conflict), so the list is never spread over several: one object holds it, within maxCIDRs and 1 MiB.
// Envoy Gateway reports in each policy's status whether it enforces it for each Gateway: a policy it did not
// accept (a conflict, an invalid reference), or one that other SecurityPolicies override on some routes, makes
// the target Degraded (TargetNotEnforced) for as long as the status says so. The other side of a conflict is
// reported too: someone else's SecurityPolicy on a target ours also attaches to, refused as Conflicted (ours
// took its place: their authentication or authorization is off), makes the target Degraded (TargetContested).
import type { EnvoySecurityPolicyTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { objectName } from '../runtime/k8s.ts';
import { type ResourceType } from '../runtime/resources.ts';
import { UNMANAGED_SELECTOR, deleteOwned, listWhole, ownedMetadata, ownerReferencesIn, syncObjects, targetSelector, type DesiredObject, type Refusal } from '../runtime/objects.ts';
import { aboutGeneration, conditionText, refusalProblems, type StatusCondition } from './apply.ts';
import { oneObjectProblem } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const FIELD = 'envoySecurityPolicy';
const SECURITY_POLICY: ResourceType = { group: 'gateway.envoyproxy.io', version: 'v1alpha1', kind: 'SecurityPolicy', plural: 'securitypolicies', namespaced: true };

/** A Gateway API object a SecurityPolicy attaches to, in the policy's namespace. */
interface PolicyTargetRef {
  group?: string;
  kind?: string;
  name?: string;
  sectionName?: string;
}

/** A SecurityPolicy as read from the API, as far as the target reads it. */
export interface SecurityPolicyObject {
  metadata?: { namespace?: string; name?: string; generation?: number };
  spec?: { targetRef?: PolicyTargetRef; targetRefs?: PolicyTargetRef[] };
  status?: { ancestors?: { ancestorRef?: { kind?: string; namespace?: string; name?: string; sectionName?: string }; conditions?: StatusCondition[] }[] };
}

/** `<ancestor>: <condition>` for every condition about the policy's current generation that `pick` picks. */
function ancestorConditions({ metadata, status }: SecurityPolicyObject, pick: (c: StatusCondition) => boolean): string[] {
  const found: string[] = [];
  for (const ancestor of status?.ancestors ?? []) {
    const ref = ancestor.ancestorRef;
    const gateway = `${ref?.kind ?? 'Gateway'} ${ref?.namespace ? `${ref.namespace}/` : ''}${ref?.name ?? '?'}${ref?.sectionName ? `/${ref.sectionName}` : ''}`;
    for (const c of ancestor.conditions ?? []) if (pick(c) && aboutGeneration(c, metadata?.generation)) found.push(`${gateway}: ${conditionText(c)}`);
  }
  return found;
}

/**
 * Why Envoy Gateway does not enforce a SecurityPolicy, per Gateway in its status: not Accepted, or Overridden
 * (other SecurityPolicies take its place on some routes). Conditions about an older generation say nothing
 * about this one.
 */
export const envoyRefusal: Refusal = (object) => {
  const refusals = ancestorConditions(object, (c) => (c.type === 'Accepted' && c.status === 'False') || (c.type === 'Overridden' && c.status === 'True'));
  return refusals.length ? refusals.join('; ') : undefined;
};

const refKey = (r: PolicyTargetRef) => JSON.stringify([r.group ?? '', r.kind ?? '', r.name ?? '', r.sectionName ?? '']);
const refText = (r: PolicyTargetRef) => `${r.kind ?? '?'} ${r.name ?? '?'}${r.sectionName ? `/${r.sectionName}` : ''}`;

/**
 * Others' SecurityPolicies that Envoy Gateway refuses as Conflicted and that attach to a target one of `ours`
 * (in the same namespace) attaches to: Envoy Gateway enforces one SecurityPolicy per target, the oldest, so
 * ours holds the target in their place (or a third one holds it, which our own status then says too). By name,
 * with Envoy Gateway's words. References by label (targetSelectors) are not resolved: only targetRefs (and the
 * older targetRef).
 */
export function contestedPolicies(ours: readonly DesiredObject[], others: readonly SecurityPolicyObject[]): string[] {
  const found: string[] = [];
  for (const other of others) {
    const mine = ours.find((o) => o.namespace === other.metadata?.namespace);
    if (!mine) continue;
    const taken = new Set(((mine.content.spec as { targetRefs: PolicyTargetRef[] }).targetRefs ?? []).map(refKey));
    const refs = [...(other.spec?.targetRefs ?? []), ...(other.spec?.targetRef ? [other.spec.targetRef] : [])];
    const shared = refs.filter((r) => taken.has(refKey(r)));
    if (!shared.length) continue;
    const conflicts = ancestorConditions(other, (c) => c.type === 'Accepted' && c.status === 'False' && c.reason === 'Conflicted');
    if (!conflicts.length) continue;
    const name = `${other.metadata?.namespace}/${other.metadata?.name}`;
    found.push(`SecurityPolicy ${name} attaches to ${shared.map(refText).join(', ')} too, and Envoy Gateway does not enforce it: ${conflicts.join('; ')}`);
  }
  return found;
}

/** Others' SecurityPolicies: the contested objects of the target (TargetKind.contested). */
const OTHERS_POLICIES = { resource: SECURITY_POLICY, selector: UNMANAGED_SELECTOR };

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
  // Others' policies in the same namespaces are read while ours are written; a kind not served is reported by
  // syncObjects, first.
  const others = Promise.all(desired.map((d) => listWhole<SecurityPolicyObject>(ctx, OTHERS_POLICIES, d.namespace))).then((lists) => lists.flat());
  others.catch(() => undefined);
  const result = await syncObjects(ctx, SECURITY_POLICY, desired, { selector: targetSelector(ctx.sub, FIELD) }, envoyRefusal);
  outcome.writes = result.written + result.deleted;
  outcome.problems.push(...refusalProblems(ctx, SECURITY_POLICY, desired, FIELD));
  for (const message of contestedPolicies(desired, await others)) outcome.problems.push({ reason: 'TargetContested', message: `${FIELD}: ${message}` });
  outcome.objects = desired.map((d) => ({ kind: SECURITY_POLICY.kind, namespace: d.namespace, name: d.name, cidrs: list.all.length }));
  return outcome;
}

export const envoySecurityPolicyTarget: TargetKind<'envoySecurityPolicy'> = {
  field: FIELD,
  metricKind: SECURITY_POLICY.kind,
  resources: [SECURITY_POLICY],
  contested: [OTHERS_POLICIES],
  rules: [{ apiGroups: [SECURITY_POLICY.group], resources: [SECURITY_POLICY.plural], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] }],
  apply,
  cleanup: (ctx) => deleteOwned(ctx, [SECURITY_POLICY], { selector: targetSelector(ctx.sub, FIELD) }),
};
