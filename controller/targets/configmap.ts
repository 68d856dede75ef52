// ConfigMap target: the list in file formats for other tools (txt, nginx, ipset, nftables), in the
// subscription's namespace, cut into shards below the 1 MiB object limit: <name>, <name>-1, <name>-2, ...
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1.ts';
import { FORMAT_KEYS, planShards, render } from '../firewall-files.ts';
import {
  CONTENT_HASH_ANNOTATION,
  SUBSCRIPTION_ANNOTATION,
  contentHash,
  isNotFound,
  mapLimit,
  metadataOnly,
  ownedLabels,
  ownedSelector,
  ownerReference,
  readOptional,
  sameJson,
  sameStringMap,
  sendJson,
} from '../k8s.ts';
import type { TargetContext, TargetOutcome } from './types.ts';

type Target = NonNullable<BlocklistSubscriptionSpec['targets'][number]['configMap']>;

const TARGET_LABEL = 'blockfeed.dev/configmap';
const SHARD_LABEL = 'blockfeed.dev/shard';

const shardName = (name: string, index: number) => (index === 0 ? name : `${name}-${index}`);

export async function applyConfigMaps(ctx: TargetContext, target: Target, shardBudget?: number): Promise<TargetOutcome> {
  const { apis, sub, list } = ctx;
  const namespace = sub.metadata.namespace;
  const outcome: TargetOutcome = { kind: 'ConfigMap', objects: [], writes: 0, problems: [] };
  const formats = [...new Set(target.formats)].sort();
  const shards = planShards(list.all, formats, shardBudget);
  const names = new Set(shards.map((_, index) => shardName(target.name, index)));
  // One metadata-only list (items is null when empty) says which shards exist, at which version and with which content hash: shards
  // that are new or changed are written straight away, unchanged ones are not read at all.
  const existing = await apis.core.listNamespacedConfigMap({ namespace, labelSelector: `${ownedSelector(sub)},${TARGET_LABEL}=${target.name}` }, metadataOnly);
  const listed = new Map((existing.items ?? []).map((cm) => [cm.metadata!.name!, cm.metadata!]));
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
  // Shards are independent objects: write them side by side.
  const written = await mapLimit(shards, 4, async (cidrs, index): Promise<number> => {
    const data = Object.fromEntries(formats.map((f) => [FORMAT_KEYS[f], render(f, cidrs, list.all.length)]));
    const name = shardName(target.name, index);
    const labels = { ...ownedLabels(sub), [TARGET_LABEL]: target.name, [SHARD_LABEL]: String(index) };
    const ownerReferences = [ownerReference(sub)];
    const hash = contentHash([data, labels, namespace, sub.metadata.name, shards.length, ownerReferences]);
    const annotations = { [SUBSCRIPTION_ANNOTATION]: `${namespace}/${sub.metadata.name}`, 'blockfeed.dev/shards': String(shards.length), [CONTENT_HASH_ANNOTATION]: hash };
    outcome.objects[index] = { kind: 'ConfigMap', namespace, name, cidrs: cidrs.length };
    const key = `ConfigMap/${namespace}/${name}`;
    const meta = listed.get(name);
    let resourceVersion = meta?.resourceVersion;
    if (meta && meta.annotations?.[CONTENT_HASH_ANNOTATION] === hash) {
      if (apis.verified.get(key) === resourceVersion) return 0;
      // Same hash but a version this process has not seen (a restart, or someone edited it): compare for real.
      const current = await readOptional(() => apis.core.readNamespacedConfigMap({ name, namespace }));
      if (
        current &&
        sameStringMap(current.data, data) &&
        sameJson(current.metadata?.labels ?? {}, labels) &&
        sameJson(current.metadata?.annotations ?? {}, annotations) &&
        sameJson(current.metadata?.ownerReferences ?? [], ownerReferences)
      ) {
        apis.verified.set(key, current.metadata!.resourceVersion!);
        return 0;
      }
      resourceVersion = current?.metadata?.resourceVersion;
    }
    const desired = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace, labels, annotations, ownerReferences, ...(resourceVersion ? { resourceVersion } : {}) },
      data,
    };
    const json = JSON.stringify(desired);
    const answer = resourceVersion ? await sendJson(apis, 'PUT', `${base}/${encodeURIComponent(name)}`, json) : await sendJson(apis, 'POST', base, json);
    if (answer.resourceVersion) apis.verified.set(key, answer.resourceVersion);
    apis.writes.count('ConfigMap');
    return 1;
  });
  outcome.writes += written.reduce((a, b) => a + b, 0);
  // Shards beyond the new count (the list got shorter) go.
  for (const name of listed.keys()) {
    if (names.has(name)) continue;
    outcome.writes += await deleteConfigMap(ctx, namespace, name);
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
