// ConfigMap target: the list in file formats for other tools (txt, nginx, ipset, nftables), in the
// subscription's namespace, cut into shards below the 1 MiB object limit: <name>, <name>-1, <name>-2, ...
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1.ts';
import { FORMAT_KEYS, planShards, render } from '../formats.ts';
import {
  SUBSCRIPTION_ANNOTATION,
  isNotFound,
  mapLimit,
  metadataOnly,
  ownedLabels,
  ownedSelector,
  ownerReference,
  readOptional,
  sameJson,
  sameStringMap,
} from '../k8s.ts';
import type { TargetContext, TargetOutcome } from './types.ts';

type Target = NonNullable<BlocklistSubscriptionSpec['targets'][number]['configMap']>;

export const TARGET_LABEL = 'blockfeed.dev/configmap';
export const SHARD_LABEL = 'blockfeed.dev/shard';

export const shardName = (name: string, index: number) => (index === 0 ? name : `${name}-${index}`);

export async function applyConfigMaps(ctx: TargetContext, target: Target, shardBudget?: number): Promise<TargetOutcome> {
  const { apis, sub, list } = ctx;
  const namespace = sub.metadata.namespace;
  const outcome: TargetOutcome = { kind: 'ConfigMap', objects: [], writes: 0, problems: [] };
  const formats = [...new Set(target.formats)].sort();
  const shards = planShards(list.all, formats, shardBudget);
  const names = new Set(shards.map((_, index) => shardName(target.name, index)));
  // Shards are independent objects: write them side by side.
  const written = await mapLimit(shards, 4, async (cidrs, index): Promise<number> => {
    const data = Object.fromEntries(formats.map((f) => [FORMAT_KEYS[f], render(f, cidrs, list.all.length)]));
    const name = shardName(target.name, index);
    const labels = { ...ownedLabels(sub), [TARGET_LABEL]: target.name, [SHARD_LABEL]: String(index) };
    const annotations = { [SUBSCRIPTION_ANNOTATION]: `${namespace}/${sub.metadata.name}`, 'blockfeed.dev/shards': String(shards.length) };
    const desired: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace, labels, annotations, ownerReferences: [ownerReference(sub)] },
      data,
    };
    outcome.objects[index] = { kind: 'ConfigMap', namespace, name, cidrs: cidrs.length };
    const current = await readOptional(() => apis.core.readNamespacedConfigMap({ name, namespace }));
    if (!current) {
      await apis.core.createNamespacedConfigMap({ namespace, body: desired });
    } else if (
      !sameStringMap(current.data, data) ||
      !sameJson(current.metadata?.labels ?? {}, labels) ||
      !sameJson(current.metadata?.annotations ?? {}, annotations) ||
      !sameJson(current.metadata?.ownerReferences ?? [], desired.metadata!.ownerReferences)
    ) {
      desired.metadata!.resourceVersion = current.metadata?.resourceVersion;
      await apis.core.replaceNamespacedConfigMap({ name, namespace, body: desired });
    } else {
      return 0;
    }
    apis.writes.count('ConfigMap');
    return 1;
  });
  outcome.writes += written.reduce((a, b) => a + b, 0);
  // Shards beyond the new count (the list got shorter) go.
  const existing = await apis.core.listNamespacedConfigMap({ namespace, labelSelector: `${ownedSelector(sub)},${TARGET_LABEL}=${target.name}` }, metadataOnly);
  for (const cm of existing.items) {
    if (names.has(cm.metadata!.name!)) continue;
    outcome.writes += await deleteConfigMap(ctx, namespace, cm.metadata!.name!);
  }
  return outcome;
}

async function deleteConfigMap(ctx: Omit<TargetContext, 'list'>, namespace: string, name: string): Promise<number> {
  try {
    await ctx.apis.core.deleteNamespacedConfigMap({ name, namespace });
    ctx.apis.writes.count('ConfigMap');
    return 1;
  } catch (err) {
    if (isNotFound(err)) return 0;
    throw err;
  }
}

/** Finalizer: owner references would also do it, but only once the garbage collector runs. */
export async function cleanupConfigMaps(ctx: Omit<TargetContext, 'list'>): Promise<number> {
  const existing = await ctx.apis.core.listNamespacedConfigMap({ namespace: ctx.sub.metadata.namespace, labelSelector: ownedSelector(ctx.sub) }, metadataOnly);
  let writes = 0;
  for (const cm of existing.items) writes += await deleteConfigMap(ctx, ctx.sub.metadata.namespace, cm.metadata!.name!);
  return writes;
}
