// The enforcement points' own CRDs, pinned in one place: the k8s tiers install them into the test kube-apiserver,
// so every object the controller writes for them is validated by the real published schema. They come from each
// project's Go module through the module proxy (`make k8s-crds`, fetch.ts) into .cache/crds/; nothing of them is
// committed.
import { createHash } from 'node:crypto';
import path from 'node:path';

interface Pin {
  /** Go module and version, as `go mod download` takes them */
  module: string;
  version: string;
  /** files of the module holding the CRDs */
  files: string[];
  /** when a file holds more CRDs than needed: the names to keep */
  crds?: string[];
}

export const ENFORCEMENT_POINT_CRDS: readonly Pin[] = [
  {
    // Gateway API (standard channel), for the Gateways and HTTPRoutes an Envoy SecurityPolicy or Istio policy targets;
    // the version Envoy Gateway v1.9.1 is built against.
    module: 'sigs.k8s.io/gateway-api',
    version: 'v1.6.1',
    files: ['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes'].map((k) => `config/crd/standard/gateway.networking.k8s.io_${k}.yaml`),
  },
  {
    module: 'github.com/envoyproxy/gateway',
    version: 'v1.9.1',
    files: ['securitypolicies', 'clienttrafficpolicies'].map((k) => `charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_${k}.yaml`),
  },
  {
    module: 'istio.io/api',
    version: 'v1.31.4',
    files: ['kubernetes/customresourcedefinitions.gen.yaml'],
    crds: ['authorizationpolicies.security.istio.io'],
  },
  {
    module: 'github.com/cilium/cilium',
    version: 'v1.20.2',
    files: ['ciliumcidrgroups', 'ciliumclusterwidenetworkpolicies'].map((k) => `pkg/k8s/apis/cilium.io/client/crds/v2/${k}.yaml`),
  },
  {
    // The module proxy serves the Calico monorepo only at pseudo-versions (its v3.x tags are not valid versions of
    // a module without a /v3 suffix); this one is the release-v3.28 branch at v3.28.5 (charts/calico/values.yaml).
    module: 'github.com/projectcalico/calico',
    version: 'v1.11.0-cni-plugin.0.20250813170300-a0db560f0520',
    files: ['globalnetworksets', 'globalnetworkpolicies', 'hostendpoints'].map((k) => `libcalico-go/config/crd/crd.projectcalico.org_${k}.yaml`),
  },
];

/** Where fetch.ts puts the CRDs of these pins (a directory per set of pins, so a bump fetches anew). */
export function enforcementPointCrdDir(root: string): string {
  const id = createHash('sha256').update(JSON.stringify(ENFORCEMENT_POINT_CRDS)).digest('hex').slice(0, 12);
  return path.join(root, '.cache/crds', id);
}
