// The Kubernetes permissions the controller needs: the one list the Helm chart's ClusterRole and Role are
// generated from (`make chart-files`, hack/generate-chart-files.ts). The targets' rules come from their
// kinds (targets/index.ts), so a new target brings its own; the chart tests prove the chart grants exactly
// these rules, and the k8s-serial tier that a full sync works with them and fails without any one.
//
// Owner references are set with blockOwnerDeletion: false, so no blocklistsubscriptions/finalizers permission
// is needed.
import type { V1PolicyRule } from '@kubernetes/client-node';
import { TARGET_KINDS } from './targets/index.ts';

/** What the subscription loop itself calls (controller.ts, reconcile.ts, runtime/applied-record.ts, runtime/drift.ts). */
const LOOP_RULES: readonly V1PolicyRule[] = [
  // the informer on subscriptions (list + watch), and the finalizer added and removed by merge patch
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions'], verbs: ['get', 'list', 'watch', 'patch'] },
  // status: conditions, counts, sync times (merge patch of the status subresource)
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions/status'], verbs: ['patch'] },
  // a Kubernetes Event for every change of a subscription's state
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  // the record of the applied list beside each subscription, read after a restart and watched for drift
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
  // the feed credential a subscription references (spec.feed.credentials.secretRef): read by name only
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
  // an enforcement point being installed, so that a target waiting for it applies at once (runtime/drift.ts
  // watchInstalls(): metadata only)
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['list', 'watch'] },
];

const VERB_ORDER = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** Rules on the same resources merged into one (the union of their verbs), in first-seen order. */
export function mergeRules(rules: readonly V1PolicyRule[]): V1PolicyRule[] {
  const merged = new Map<string, V1PolicyRule>();
  for (const rule of rules) {
    const key = JSON.stringify([rule.apiGroups, rule.resources]);
    const verbs = new Set([...(merged.get(key)?.verbs ?? []), ...rule.verbs]);
    merged.set(key, { apiGroups: rule.apiGroups, resources: rule.resources, verbs: VERB_ORDER.filter((v) => verbs.has(v)) });
  }
  return [...merged.values()];
}

/** Cluster-wide: subscriptions live in any namespace and their targets in the namespaces they select. */
export const CONTROLLER_CLUSTER_RULES: readonly V1PolicyRule[] = mergeRules([...LOOP_RULES, ...TARGET_KINDS.flatMap((k) => k.rules)]);

/** In the controller's own namespace only: the leader-election Lease. */
export const CONTROLLER_LEADER_ELECTION_RULES: readonly V1PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
