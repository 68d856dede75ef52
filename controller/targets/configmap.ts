// ConfigMap target: the list in file formats for other tools (txt, nginx, ipset, nftables), in the
// subscription's namespace, cut into shards below the 1 MiB object limit: <name> holds the first, the others
// are <name>-<key> (targets/shards.ts names them, so that a small change to the list rewrites one or two). Each
// shard is self-contained: its files depend on its own CIDRs only.
import type { ConfigMapTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { FORMAT_KEYS, planShards, render } from './firewall-files.ts';
import { ownedSelector } from '../runtime/k8s.ts';
import { CONFIG_MAP } from '../runtime/resources.ts';
import { deleteOwned, ownedMetadata, ownerReferencesIn, syncObjects, type DesiredObject } from '../runtime/objects.ts';
import { ROOT_KEY } from './shards.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

const NAME_LABEL = 'blockfeed.dev/configmap';
const SHARD_LABEL = 'blockfeed.dev/shard';

const shardName = (name: string, key: string) => (key === ROOT_KEY ? name : `${name}-${key}`);

/** The shards of one ConfigMap target (pure). */
export function desiredConfigMaps(ctx: Pick<TargetContext, 'sub' | 'list'>, target: ConfigMapTarget): DesiredObject[] {
  const { sub, list } = ctx;
  const formats = [...new Set(target.formats)].sort();
  const shards = planShards(list.all, formats);
  const owned = ownedMetadata(sub, 'configMap');
  return shards.map(({ key, cidrs }) => ({
    namespace: sub.metadata.namespace,
    name: shardName(target.name, key),
    labels: { ...owned.labels, [NAME_LABEL]: target.name, [SHARD_LABEL]: key },
    annotations: { ...owned.annotations, 'blockfeed.dev/cidrs': String(cidrs.length) },
    ownerReferences: ownerReferencesIn(sub, sub.metadata.namespace),
    content: { data: Object.fromEntries(formats.map((f) => [FORMAT_KEYS[f], render(f, cidrs, list.all.length)])) },
  }));
}

/** Writes the shards of one ConfigMap target; extra shards of a longer earlier list are deleted. */
async function apply(ctx: TargetContext, target: ConfigMapTarget): Promise<TargetOutcome> {
  const { sub } = ctx;
  const namespace = sub.metadata.namespace;
  let desired: DesiredObject[] = [];
  // Rendered while the existing shards are listed.
  const result = await syncObjects(ctx, CONFIG_MAP, () => (desired = desiredConfigMaps(ctx, target)), {
    selector: `${ownedSelector(sub)},${NAME_LABEL}=${target.name}`,
    namespace,
  });
  return {
    kind: 'ConfigMap',
    objects: desired.map((d) => ({ kind: 'ConfigMap', namespace, name: d.name, cidrs: Number(d.annotations['blockfeed.dev/cidrs']) })),
    writes: result.written + result.deleted,
    problems: [],
  };
}

export const configMapTarget: TargetKind<'configMap'> = {
  field: 'configMap',
  metricKind: 'ConfigMap',
  resources: [CONFIG_MAP],
  rules: [
    // sharded lists in the subscription's namespace, found by label, watched for drift
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
  ],
  apply,
  // Only the target's own shards: the record of the applied list (runtime/applied-record.ts) is a ConfigMap too.
  cleanup: (ctx) => deleteOwned(ctx, [CONFIG_MAP], { selector: `${ownedSelector(ctx.sub)},${NAME_LABEL}`, namespace: ctx.sub.metadata.namespace }),
};
