#!/usr/bin/env bash
# Manual smoke check of the cached control plane binaries (run `make k8s-bin`
# first): starts etcd, kube-apiserver and kube-controller-manager on loopback
# with throwaway certificates, waits for /readyz, then proves that garbage
# collection and namespace deletion run. Prints timings; stops everything and
# removes its temporary directory on exit. Not part of any test suite.
#
# Usage: hack/k8s-bin/smoke.sh [--keep]   (--keep leaves the temp dir behind)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
env_file="$root/.cache/k8s/current.env"
[[ -f $env_file ]] || {
  echo "smoke: $env_file missing: run make k8s-bin" >&2
  exit 1
}
# shellcheck disable=SC1090
. "$env_file"

keep=
[[ ${1:-} == --keep ]] && keep=1
work=$(mktemp -d /tmp/k8s-smoke.XXXXXX)
pids=()
# Stop in reverse start order: kube-apiserver's graceful shutdown stalls for
# minutes when etcd is already gone.
stop() { # $1 pid: SIGTERM, then SIGKILL after 15 s
  kill "$1" 2>/dev/null || return 0
  local i
  for ((i = 0; i < 150; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local i t
  t=$(now_ms)
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop "${pids[i]}"; done
  echo "smoke: stopped everything in $(($(now_ms) - t)) ms"
  if [[ -n $keep ]]; then echo "smoke: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
      echo "$p"
      return
    }
  done
}
wait_for() { # $1 what, $2 seconds, rest: command
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    local p
    for p in "${pids[@]}"; do
      kill -0 "$p" 2>/dev/null || {
        echo "smoke: a process exited while waiting for $what (logs in $work)" >&2
        keep=1
        exit 1
      }
    done
    if ((SECONDS > deadline)); then
      echo "smoke: timed out waiting for $what (logs in $work, use --keep)" >&2
      keep=1
      exit 1
    fi
    sleep 0.1
  done
}

# --- throwaway PKI ----------------------------------------------------------
pki="$work/pki"
mkdir -p "$pki"
cd "$pki"
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -keyout ca.key -out ca.crt -subj /CN=blockfeed-test-ca
issue() { # $1 name, $2 subject, $3 extensions
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
  printf '%s\n' "$3" >"$1.ext"
  ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out "$1.crt" -extfile "$1.ext"
}
issue serving /CN=kube-apiserver \
  "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
issue admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth"
issue kcm /CN=system:kube-controller-manager "extendedKeyUsage=clientAuth"
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
ossl pkey -in sa.key -pubout -out sa.pub

etcd_port=$(free_port)
api_port=$(free_port)
kubeconfig() { # $1 client cert name
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: $1
  user:
    client-certificate: $pki/$1.crt
    client-key: $pki/$1.key
contexts:
- name: test
  context: {cluster: test, user: $1}
current-context: test
EOF
}
kubeconfig admin >"$work/admin.kubeconfig"
kubeconfig kcm >"$work/kcm.kubeconfig"

# --- etcd -------------------------------------------------------------------
t0=$(now_ms)
"$ETCD" \
  --data-dir="$work/etcd" \
  --listen-client-urls="http://127.0.0.1:$etcd_port" \
  --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls=http://127.0.0.1:0 \
  --unsafe-no-fsync=true \
  --log-level=warn \
  >"$work/etcd.log" 2>&1 &
pids+=($!)
wait_for etcd 30 curl -fsS "http://127.0.0.1:$etcd_port/health"
t_etcd=$(now_ms)

# --- kube-apiserver ---------------------------------------------------------
"$KUBE_APISERVER" \
  --etcd-servers="http://127.0.0.1:$etcd_port" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --secure-port="$api_port" \
  --tls-cert-file="$pki/serving.crt" \
  --tls-private-key-file="$pki/serving.key" \
  --client-ca-file="$pki/ca.crt" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=true \
  --cert-dir="$work/apiserver-certs" \
  >"$work/kube-apiserver.log" 2>&1 &
pids+=($!)
admin_curl() {
  curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"
}
api="https://127.0.0.1:$api_port"
wait_for kube-apiserver 120 admin_curl "$api/readyz"
t_api=$(now_ms)

# --- kube-controller-manager ------------------------------------------------
"$KUBE_CONTROLLER_MANAGER" \
  --kubeconfig="$work/kcm.kubeconfig" \
  --authentication-kubeconfig="$work/kcm.kubeconfig" \
  --authorization-kubeconfig="$work/kcm.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port=0 \
  --leader-elect=false \
  --controllers='*' \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" \
  --cluster-signing-key-file="$pki/ca.key" \
  >"$work/kube-controller-manager.log" 2>&1 &
pids+=($!)
# Ready enough once the serviceaccount controller has made the default SA.
wait_for "kube-controller-manager (default ServiceAccount)" 120 \
  admin_curl "$api/api/v1/namespaces/default/serviceaccounts/default"
t_kcm=$(now_ms)

echo "smoke: etcd healthy after $((t_etcd - t0)) ms"
echo "smoke: kube-apiserver /readyz ok $((t_api - t_etcd)) ms after start ($((t_api - t0)) ms from etcd start)"
echo "smoke: kube-controller-manager working $((t_kcm - t_api)) ms after start"
admin_curl "$api/version" | jq -c '{gitVersion, buildDate}'

# --- garbage collection and namespace deletion ------------------------------
post() { admin_curl -H 'Content-Type: application/json' -X POST "$api$1" -d "$2"; }
post /api/v1/namespaces '{"metadata":{"name":"smoke"}}' >/dev/null
owner_uid=$(post /api/v1/namespaces/smoke/configmaps '{"metadata":{"name":"owner"}}' | jq -r .metadata.uid)
post /api/v1/namespaces/smoke/configmaps "{\"metadata\":{\"name\":\"dependent\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"$owner_uid\"}]}}" >/dev/null
t1=$(now_ms)
admin_curl -X DELETE "$api/api/v1/namespaces/smoke/configmaps/owner" >/dev/null
gone() { ! admin_curl "$api$1"; }
wait_for "garbage collection of the dependent ConfigMap" 60 gone /api/v1/namespaces/smoke/configmaps/dependent
t2=$(now_ms)
echo "smoke: garbage collector removed the dependent ConfigMap in $((t2 - t1)) ms"
post /api/v1/namespaces/smoke/configmaps '{"metadata":{"name":"leftover"}}' >/dev/null
admin_curl -X DELETE "$api/api/v1/namespaces/smoke" >/dev/null
wait_for "namespace deletion" 60 gone /api/v1/namespaces/smoke
t3=$(now_ms)
echo "smoke: namespace controller finished deleting namespace smoke in $((t3 - t2)) ms"
echo "smoke: ok"
