#!/usr/bin/env bash
# make e2e-kind: the chart in a real (kind) cluster. Needs docker, kind, kubectl and helm on PATH; not part of
# make test, which needs no Docker (the cluster tier covers the same ground). Creates the cluster
# (KIND_CLUSTER, default blockfeed-e2e; kept afterwards for a look, delete it with `kind delete cluster --name
# blockfeed-e2e`), builds and loads the image, installs the chart with the bundled PostgreSQL, loads demo
# data, creates an API key, applies hack/kind/subscription.yaml and waits for the NetworkPolicy it produces.
set -euo pipefail
cd "$(dirname "$0")/../.."

cluster=${KIND_CLUSTER:-blockfeed-e2e}
image=${IMAGE:-blockfeed:e2e}
release=blockfeed
ns=blockfeed
sub_ns=blockfeed-e2e
protected_ns=blockfeed-e2e-protected

for tool in docker kind kubectl helm; do
  command -v "$tool" >/dev/null || { echo "e2e-kind: $tool is required on PATH" >&2; exit 1; }
done
step() { printf '\n== %s\n' "$*"; }

step "kind cluster $cluster"
kind get clusters | grep -qx "$cluster" || kind create cluster --name "$cluster" --wait 120s
kubectl config use-context "kind-$cluster" >/dev/null

step "image $image"
docker build -t "$image" .
kind load docker-image "$image" --name "$cluster"

step "helm install $release (namespace $ns)"
helm upgrade --install "$release" charts/blockfeed --namespace "$ns" --create-namespace \
  --set image.repository="${image%:*}" --set image.tag="${image##*:}" --set image.pullPolicy=Never \
  --set api.replicas=1 --wait --timeout 5m

step "demo data and an API key"
kubectl -n "$ns" exec deploy/$release-api -- blockfeed demo --events 20000 --days 2
key=$(kubectl -n "$ns" exec deploy/$release-api -- blockfeed keys create --tier enterprise --name e2e-kind | tail -n1 | tr -d "\r")
[ -n "$key" ] || { echo "e2e-kind: could not read the key from 'blockfeed keys create'" >&2; exit 1; }

step "subscription"
kubectl create namespace "$sub_ns" --dry-run=client -o yaml | kubectl apply -f -
kubectl create namespace "$protected_ns" --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace "$protected_ns" blockfeed.dev/protect=true --overwrite
kubectl -n "$sub_ns" create secret generic blockfeed-key --from-literal=apiKey="$key" --dry-run=client -o yaml | kubectl apply -f -
kubectl apply -f hack/kind/subscription.yaml

step "waiting for the NetworkPolicy in $protected_ns"
for _ in $(seq 1 120); do
  if [ -n "$(kubectl -n "$protected_ns" get networkpolicy -o name 2>/dev/null)" ]; then
    kubectl -n "$sub_ns" get bls attackers -o wide
    kubectl -n "$protected_ns" get networkpolicy -o yaml
    echo "e2e-kind: OK"
    exit 0
  fi
  sleep 5
done
echo "e2e-kind: no NetworkPolicy after 10 minutes" >&2
kubectl -n "$sub_ns" describe bls attackers >&2 || true
kubectl -n "$ns" logs deploy/$release-controller --tail=100 >&2 || true
exit 1
