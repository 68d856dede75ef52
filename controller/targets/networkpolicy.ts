// NetworkPolicy target. Policies only ever allow, and allows add up, so a block is expressed as one policy per
// namespace that allows everything except the list, plus in-cluster peers. The except list is never spread over
// several policies or ipBlocks: their union would allow everything again. A list that does not fit one object
// is reported, and the previous policy stays in force.
import type { V1NetworkPolicy, V1NetworkPolicyPeer } from '@kubernetes/client-node';
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1.ts';
import {
  CONTENT_HASH_ANNOTATION,
  SUBSCRIPTION_ANNOTATION,
  contentHash,
  isNotFound,
  labelSelectorString,
  mapLimit,
  metadataOnly,
  objectName,
  ownedLabels,
  ownedSelector,
  ownerReference,
  readOptional,
  sameJson,
  sendJson,
} from '../k8s.ts';
import type { AppliedList, TargetContext, TargetOutcome } from './types.ts';

type Target = NonNullable<BlocklistSubscriptionSpec['targets'][number]['networkPolicy']>;

/** etcd's default request limit is 1.5 MiB; stay well below it so the object is always storable. */
const NETWORK_POLICY_BUDGET = 1024 * 1024;

export function policySpec(target: Target, list: AppliedList): V1NetworkPolicy['spec'] {
  const peers: V1NetworkPolicyPeer[] = [
    { ipBlock: { cidr: '0.0.0.0/0', ...(list.v4.length ? { except: [...list.v4] } : {}) } },
    { ipBlock: { cidr: '::/0', ...(list.v6.length ? { except: [...list.v6] } : {}) } },
    // Pods of every namespace stay reachable whatever addresses the cluster uses.
    { namespaceSelector: {} },
  ];
  const direction = target.direction ?? 'Ingress';
  return {
    podSelector: target.podSelector ?? {},
    policyTypes: [direction],
    ...(direction === 'Ingress' ? { ingress: [{ _from: peers }] } : { egress: [{ to: peers }] }),
  };
}

/** The spec as the apiserver spells it (client-node's types call `from` `_from`), serialised once. */
function policySpecJson(spec: V1NetworkPolicy['spec']): string {
  return JSON.stringify(spec, (_key, value: unknown) => {
    if (value && typeof value === 'object' && '_from' in value) {
      const { _from, ...rest } = value;
      return { ...rest, from: _from };
    }
    return value;
  });
}

export async function applyNetworkPolicies(ctx: TargetContext, target: Target): Promise<TargetOutcome> {
  const { apis, sub, list } = ctx;
  const outcome: TargetOutcome = { kind: 'NetworkPolicy', objects: [], writes: 0, problems: [] };
  const name = objectName('blockfeed', sub);
  const spec = policySpec(target, list);
  const specJson = policySpecJson(spec);
  const size = Buffer.byteLength(specJson);
  const [namespaces, owned] = await Promise.all([
    apis.core.listNamespace({ labelSelector: labelSelectorString(target.namespaceSelector) }),
    // Metadata only: which policies exist, at which version, with which content hash.
    apis.networking.listNetworkPolicyForAllNamespaces({ labelSelector: ownedSelector(sub) }, metadataOnly),
  ]);
  const selected = new Set(namespaces.items.filter((n) => !n.metadata?.deletionTimestamp).map((n) => n.metadata!.name!));
  const ownedItems = owned.items ?? []; // null in an empty metadata-only list
  const listed = new Map(ownedItems.filter((p) => p.metadata?.name === name).map((p) => [p.metadata!.namespace!, p.metadata!]));

  if (size > NETWORK_POLICY_BUDGET) {
    outcome.problems.push(
      `the list (${list.all.length} CIDRs, ${size} bytes) does not fit one NetworkPolicy (${NETWORK_POLICY_BUDGET} bytes); the previous policies stay`,
    );
  } else {
    // One independent object per namespace: written side by side.
    const written = await mapLimit([...selected].sort(), 8, async (namespace): Promise<number> => {
      const labels = ownedLabels(sub);
      const ownerReferences = namespace === sub.metadata.namespace ? [ownerReference(sub)] : undefined;
      const hash = contentHash([specJson, labels, sub.metadata.namespace, sub.metadata.name, ownerReferences]);
      const annotations = { [SUBSCRIPTION_ANNOTATION]: `${sub.metadata.namespace}/${sub.metadata.name}`, [CONTENT_HASH_ANNOTATION]: hash };
      outcome.objects.push({ kind: 'NetworkPolicy', namespace, name, cidrs: list.all.length });
      const key = `NetworkPolicy/${namespace}/${name}`;
      const meta = listed.get(namespace);
      let resourceVersion = meta?.resourceVersion;
      if (meta && meta.annotations?.[CONTENT_HASH_ANNOTATION] === hash) {
        if (apis.verified.get(key) === resourceVersion) return 0;
        // Same hash at a version this process has not seen (a restart, or an edit): compare for real.
        const current = await readOptional(() => apis.networking.readNamespacedNetworkPolicy({ name, namespace }));
        if (
          current &&
          sameJson(current.spec, spec) &&
          sameJson(pick(current.metadata?.labels, labels), labels) &&
          sameJson(current.metadata?.ownerReferences ?? [], ownerReferences ?? [])
        ) {
          apis.verified.set(key, current.metadata!.resourceVersion!);
          return 0;
        }
        resourceVersion = current?.metadata?.resourceVersion;
      }
      const metadata = { name, namespace, labels, annotations, ...(ownerReferences ? { ownerReferences } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
      // The spec is spliced in as text: serialised once for every namespace.
      const json = `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":${JSON.stringify(metadata)},"spec":${specJson}}`;
      const base = `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/networkpolicies`;
      const answer = resourceVersion ? await sendJson(apis, 'PUT', `${base}/${encodeURIComponent(name)}`, json) : await sendJson(apis, 'POST', base, json);
      if (answer.resourceVersion) apis.verified.set(key, answer.resourceVersion);
      apis.writes.count('NetworkPolicy');
      return 1;
    });
    outcome.writes += written.reduce((a, b) => a + b, 0);
    outcome.objects.sort((a, b) => a.namespace.localeCompare(b.namespace));

    // Namespaces no longer selected lose their policy.
    for (const p of ownedItems) {
      if (p.metadata?.name === name && selected.has(p.metadata.namespace!)) continue;
      outcome.writes += await deletePolicy(ctx, p.metadata!.namespace!, p.metadata!.name!);
    }
  }
  return outcome;
}

function pick(labels: Record<string, string> | undefined, like: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(like).map((k) => [k, labels?.[k] ?? '']));
}

async function deletePolicy(ctx: TargetContext | Omit<TargetContext, 'list'>, namespace: string, name: string): Promise<number> {
  try {
    await ctx.apis.networking.deleteNamespacedNetworkPolicy({ name, namespace });
    ctx.apis.writes.count('NetworkPolicy');
    return 1;
  } catch (err) {
    if (isNotFound(err)) return 0;
    throw err;
  }
}

/** Removes every policy this subscription wrote, in every namespace (finalizer). */
export async function cleanupNetworkPolicies(ctx: Omit<TargetContext, 'list'>): Promise<number> {
  const owned = await ctx.apis.networking.listNetworkPolicyForAllNamespaces({ labelSelector: ownedSelector(ctx.sub) }, metadataOnly);
  let writes = 0;
  for (const p of owned.items) writes += await deletePolicy(ctx, p.metadata!.namespace!, p.metadata!.name!);
  return writes;
}
