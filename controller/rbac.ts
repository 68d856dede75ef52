// The Kubernetes permissions the controller needs: the one list the Helm chart's ClusterRole and Role are
// generated from (`make chart-files`, scripts/generate-chart-files.ts). Add a rule here in the same change
// that makes the controller call a new API; the chart test proves the controller works with exactly these
// rules and fails with any one of them removed.
//
// Derived from DESIGN.md's controller section until the controller's own calls can be listed from it.
import type { V1PolicyRule } from '@kubernetes/client-node';

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete'];

/** Cluster-wide: subscriptions live in any namespace and their targets in the namespaces they select. */
export const CONTROLLER_CLUSTER_RULES: readonly V1PolicyRule[] = [
  // the informer on subscriptions, the finalizer on them, and their status
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions'], verbs: [...READ, 'update', 'patch'] },
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: ['blockfeed.dev'], resources: ['blocklistsubscriptions/finalizers'], verbs: ['update'] },
  // a Kubernetes Event for every sync outcome (core and events.k8s.io, whichever the client uses)
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  // networkPolicy targets select namespaces by label
  { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
  // one blocking NetworkPolicy per selected namespace
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: [...READ, ...WRITE] },
  // ingress-nginx targets: the deny-list annotation on selected Ingresses (never created or deleted)
  { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: [...READ, 'update', 'patch'] },
  // configMap targets (sharded lists) and the ingress-nginx controller ConfigMap's global deny-list
  { apiGroups: [''], resources: ['configmaps'], verbs: [...READ, ...WRITE] },
  // the feed credential a subscription references (secretRef): read only, by name
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];

/** In the controller's own namespace only: the leader-election Lease. */
export const CONTROLLER_LEADER_ELECTION_RULES: readonly V1PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
