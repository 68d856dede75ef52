// NetworkPolicy target. Policies only ever allow, and allows add up, so a block is expressed as one policy per
// namespace that allows everything except the list, plus in-cluster peers. The except list is never spread over
// several policies or ipBlocks: their union would allow everything again. A list that does not fit one object
// is reported, and the previous policy stays in force.
import type { V1NetworkPolicy, V1NetworkPolicyPeer } from '@kubernetes/client-node';
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1.ts';
import {
  SUBSCRIPTION_ANNOTATION,
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
} from '../k8s.ts';
import type { AppliedList, TargetContext, TargetOutcome } from './types.ts';

type Target = NonNullable<BlocklistSubscriptionSpec['targets'][number]['networkPolicy']>;

/** etcd's default request limit is 1.5 MiB; stay well below it so the object is always storable. */
export const NETWORK_POLICY_BUDGET = 1024 * 1024;

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

export async function applyNetworkPolicies(ctx: TargetContext, target: Target): Promise<TargetOutcome> {
  const { apis, sub, list } = ctx;
  const outcome: TargetOutcome = { kind: 'NetworkPolicy', objects: [], writes: 0, problems: [] };
  const name = objectName('blockfeed', sub);
  const spec = policySpec(target, list);
  const size = Buffer.byteLength(JSON.stringify(spec));
  const namespaces = await apis.core.listNamespace({ labelSelector: labelSelectorString(target.namespaceSelector) });
  const selected = new Set(namespaces.items.filter((n) => !n.metadata?.deletionTimestamp).map((n) => n.metadata!.name!));

  if (size > NETWORK_POLICY_BUDGET) {
    outcome.problems.push(
      `the list (${list.all.length} CIDRs, ${size} bytes) does not fit one NetworkPolicy (${NETWORK_POLICY_BUDGET} bytes); the previous policies stay`,
    );
  } else {
    // One independent object per namespace: written side by side.
    const written = await mapLimit([...selected].sort(), 8, async (namespace): Promise<number> => {
      const desired: V1NetworkPolicy = {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: {
          name,
          namespace,
          labels: ownedLabels(sub),
          annotations: { [SUBSCRIPTION_ANNOTATION]: `${sub.metadata.namespace}/${sub.metadata.name}` },
          ...(namespace === sub.metadata.namespace ? { ownerReferences: [ownerReference(sub)] } : {}),
        },
        spec,
      };
      outcome.objects.push({ kind: 'NetworkPolicy', namespace, name, cidrs: list.all.length });
      const current = await readOptional(() => apis.networking.readNamespacedNetworkPolicy({ name, namespace }));
      if (!current) {
        await apis.networking.createNamespacedNetworkPolicy({ namespace, body: desired });
      } else if (
        !sameJson(current.spec, spec) ||
        !sameJson(pick(current.metadata?.labels, desired.metadata!.labels!), desired.metadata!.labels) ||
        !sameJson(current.metadata?.ownerReferences ?? [], desired.metadata!.ownerReferences ?? [])
      ) {
        desired.metadata!.resourceVersion = current.metadata?.resourceVersion;
        await apis.networking.replaceNamespacedNetworkPolicy({ name, namespace, body: desired });
      } else {
        return 0;
      }
      apis.writes.count('NetworkPolicy');
      return 1;
    });
    outcome.writes += written.reduce((a, b) => a + b, 0);
    outcome.objects.sort((a, b) => a.namespace.localeCompare(b.namespace));
  }

  // Namespaces no longer selected lose their policy.
  if (size <= NETWORK_POLICY_BUDGET) {
    const owned = await apis.networking.listNetworkPolicyForAllNamespaces({ labelSelector: ownedSelector(sub) }, metadataOnly);
    for (const p of owned.items) {
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
