// ingress-nginx target: the `denylist-source-range` list, either as an annotation on selected Ingresses (which
// replaces the global list for that Ingress, so the owner's own entries are kept) or as the key of the
// controller ConfigMap. What this subscription added is remembered in an annotation on the same object, so a
// later sync or the clean-up removes only its own entries.
import type { V1ConfigMap, V1Ingress } from '@kubernetes/client-node';
import type { BlocklistSubscription, IngressNginxTarget } from '../../api/v1alpha1/blocklist-subscription.ts';
import { labelSelectorString, readOptional, subscriptionKey } from '../runtime/k8s.ts';
import type { WriteContext } from '../runtime/objects.ts';
import type { TargetContext, TargetKind, TargetOutcome } from './types.ts';

export const DENYLIST_ANNOTATION = 'nginx.ingress.kubernetes.io/denylist-source-range';
const DENYLIST_KEY = 'denylist-source-range';
/** Kubernetes refuses an object whose annotations total more than 256 KiB. */
const ANNOTATION_BUDGET = 256 * 1024;

function recordAnnotation(sub: Pick<BlocklistSubscription, 'metadata'>): string {
  return `blockfeed.dev/denylist.${subscriptionKey(sub)}`;
}

const split = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * Merges our list into a comma-separated deny-list. Entries the owner set stay, in their order; ours follow;
 * `ours` returns what we added that the owner did not already have, to be remembered.
 */
export function mergeDenylist(current: string | undefined, previousOurs: string | undefined, list: readonly string[]): { value: string; ours: string } {
  const prev = new Set(split(previousOurs));
  const owner = split(current).filter((e) => !prev.has(e));
  const ownerSet = new Set(owner);
  const added = list.filter((e) => !ownerSet.has(e));
  return { value: [...owner, ...added].join(','), ours: added.join(',') };
}

/** Removes our entries; undefined when nothing is left. */
export function unmergeDenylist(current: string | undefined, ours: string | undefined): string | undefined {
  const mine = new Set(split(ours));
  const rest = split(current).filter((e) => !mine.has(e));
  return rest.length ? rest.join(',') : undefined;
}

function annotationsSize(annotations: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(annotations)) n += k.length + Buffer.byteLength(v);
  return n;
}

/**
 * Computes the new annotations/data of one object; undefined when unchanged. Throws a string reason when the
 * result would break the annotation budget.
 */
function plan(
  sub: BlocklistSubscription,
  annotations: Record<string, string>,
  currentValue: string | undefined,
  list: readonly string[],
): { annotations: Record<string, string>; value: string } | undefined {
  const key = recordAnnotation(sub);
  const { value, ours } = mergeDenylist(currentValue, annotations[key], list);
  const next = { ...annotations };
  if (ours) next[key] = ours;
  else delete next[key];
  if (value === (currentValue ?? '') && (annotations[key] ?? '') === (next[key] ?? '')) return undefined;
  return { annotations: next, value };
}

async function apply(ctx: TargetContext, target: IngressNginxTarget): Promise<TargetOutcome> {
  const outcome: TargetOutcome = { kind: 'Ingress', objects: [], writes: 0, problems: [] };
  const { apis, sub, list } = ctx;
  if (target.global) {
    const [namespace, name] = target.global.configMap.split('/') as [string, string];
    outcome.kind = 'ConfigMap';
    const cm = await readOptional(() => apis.core.readNamespacedConfigMap({ name, namespace }));
    if (!cm) {
      outcome.problems.push({ reason: 'TargetNotFound', message: `ingress-nginx ConfigMap ${namespace}/${name} does not exist` });
      return outcome;
    }
    const p = plan(sub, cm.metadata?.annotations ?? {}, cm.data?.[DENYLIST_KEY], list.all);
    if (p) {
      if (annotationsSize(p.annotations) > ANNOTATION_BUDGET) {
        outcome.problems.push({ reason: 'TargetTooLarge', message: `the list does not fit the ${ANNOTATION_BUDGET}-byte annotation budget of ConfigMap ${namespace}/${name}` });
        return outcome;
      }
      const body: V1ConfigMap = { ...cm, metadata: { ...cm.metadata, annotations: p.annotations }, data: { ...cm.data, [DENYLIST_KEY]: p.value } };
      await apis.core.replaceNamespacedConfigMap({ name, namespace, body });
      apis.writes.count('ConfigMap');
      outcome.writes++;
    }
    outcome.objects.push({ kind: 'ConfigMap', namespace, name, cidrs: list.all.length });
    return outcome;
  }

  const ingresses = await apis.networking.listIngressForAllNamespaces({ labelSelector: labelSelectorString(target.ingressSelector) });
  const selected = new Set<string>();
  for (const ing of ingresses.items) {
    const { namespace, name } = ing.metadata as { namespace: string; name: string };
    selected.add(`${namespace}/${name}`);
    const annotations = ing.metadata?.annotations ?? {};
    const p = plan(sub, annotations, annotations[DENYLIST_ANNOTATION], list.all);
    if (p) {
      const next: Record<string, string> = { ...p.annotations, [DENYLIST_ANNOTATION]: p.value };
      if (!p.value) delete next[DENYLIST_ANNOTATION];
      if (annotationsSize(next) > ANNOTATION_BUDGET) {
        outcome.problems.push({
          reason: 'TargetTooLarge',
          message: `the list does not fit the ${ANNOTATION_BUDGET}-byte annotation budget of Ingress ${namespace}/${name}; its deny-list stays as it was`,
        });
        continue;
      }
      await apis.networking.replaceNamespacedIngress({ name, namespace, body: { ...ing, metadata: { ...ing.metadata, annotations: next } } });
      apis.writes.count('Ingress');
      outcome.writes++;
    }
    outcome.objects.push({ kind: 'Ingress', namespace, name, cidrs: list.all.length });
  }
  // Ingresses that left the selector keep only their owner's entries.
  outcome.writes += await removeFromIngresses(ctx, (ing) => !selected.has(`${ing.metadata!.namespace}/${ing.metadata!.name}`));
  return outcome;
}

async function removeFromIngresses(ctx: WriteContext, which: (ing: V1Ingress) => boolean): Promise<number> {
  const key = recordAnnotation(ctx.sub);
  const all = await ctx.apis.networking.listIngressForAllNamespaces({});
  let writes = 0;
  for (const ing of all.items) {
    const annotations = ing.metadata?.annotations ?? {};
    if (!(key in annotations) || !which(ing)) continue;
    const next = { ...annotations };
    const rest = unmergeDenylist(annotations[DENYLIST_ANNOTATION], annotations[key]);
    delete next[key];
    if (rest) next[DENYLIST_ANNOTATION] = rest;
    else delete next[DENYLIST_ANNOTATION];
    await ctx.apis.networking.replaceNamespacedIngress({
      name: ing.metadata!.name!,
      namespace: ing.metadata!.namespace!,
      body: { ...ing, metadata: { ...ing.metadata, annotations: next } },
    });
    ctx.apis.writes.count('Ingress');
    writes++;
  }
  return writes;
}

/** Clean-up: takes our entries out of every Ingress and of the global ConfigMaps this subscription names. */
async function cleanup(ctx: WriteContext): Promise<number> {
  let writes = await removeFromIngresses(ctx, () => true);
  const key = recordAnnotation(ctx.sub);
  for (const t of ctx.sub.spec.targets) {
    if (!t.ingressNginx?.global) continue;
    const [namespace, name] = t.ingressNginx.global.configMap.split('/') as [string, string];
    const cm = await readOptional(() => ctx.apis.core.readNamespacedConfigMap({ name, namespace }));
    const annotations = cm?.metadata?.annotations ?? {};
    if (!cm || !(key in annotations)) continue;
    const rest = unmergeDenylist(cm.data?.[DENYLIST_KEY], annotations[key]);
    const data = { ...cm.data };
    if (rest) data[DENYLIST_KEY] = rest;
    else delete data[DENYLIST_KEY];
    const nextAnnotations = { ...annotations };
    delete nextAnnotations[key];
    await ctx.apis.core.replaceNamespacedConfigMap({ name, namespace, body: { ...cm, metadata: { ...cm.metadata, annotations: nextAnnotations }, data } });
    ctx.apis.writes.count('ConfigMap');
    writes++;
  }
  return writes;
}

/**
 * Legacy: ingress-nginx was retired by Kubernetes SIG Network (maintenance ended in March 2026). The objects
 * are not the controller's (an Ingress belongs to its owner, whose tooling re-applies it), so they are not
 * watched for drift: a sync (scheduled, or at start-up) puts our entries back.
 */
export const ingressNginxTarget: TargetKind<'ingressNginx'> = {
  field: 'ingressNginx',
  metricKind: 'Ingress',
  resources: [],
  rules: [
    // the deny-list annotation on selected Ingresses (never created or deleted)
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['list', 'update'] },
    // the ingress-nginx controller ConfigMap's global deny-list
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'update'] },
  ],
  apply,
  cleanup,
};
