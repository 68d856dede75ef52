// The Kubernetes permissions the controller needs: the one list the Helm chart's ClusterRole and Role are
// generated from (`make chart-files`, scripts/generate-chart-files.ts). Add a rule here in the same change
// that makes the controller call a new API; the chart tests prove the chart grants exactly these rules, and
// (once the controller runs in the k8s tier) that a full sync works with them and fails without any one.
//
// Each rule names the calls it is for (from the controller's code: controller.ts, reconcile.ts, leader.ts,
// targets/*.ts). Owner references are set with blockOwnerDeletion: false, so no
// blocklistsubscriptions/finalizers permission is needed.
import type { V1PolicyRule } from '@kubernetes/client-node';

/** Cluster-wide: subscriptions live in any namespace and their targets in the namespaces they select. */
export const CONTROLLER_CLUSTER_RULES: readonly V1PolicyRule[] = [
  // the informer on subscriptions (list + watch), and the finalizer added and removed by merge patch
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions'], verbs: ['get', 'list', 'watch', 'patch'] },
  // status: conditions, counts, sync times (merge patch of the status subresource)
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions/status'], verbs: ['patch'] },
  // a Kubernetes Event for every sync outcome
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  // networkPolicy targets select namespaces by label
  { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
  // one blocking NetworkPolicy per selected namespace; its own policies found by label across namespaces
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
  // ingress-nginx targets: the deny-list annotation on selected Ingresses (never created or deleted)
  { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['list', 'update'] },
  // configMap targets (sharded lists) and the ingress-nginx controller ConfigMap's global deny-list
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
  // the feed credential a subscription references (spec.feed.credentials.secretRef): read by name only
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];

/** In the controller's own namespace only: the leader-election Lease. */
export const CONTROLLER_LEADER_ELECTION_RULES: readonly V1PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
