#!/usr/bin/env bash
# Builds the Kubernetes programs the tests run from the Go module proxy (no
# Docker, no prebuilt downloads) and caches them under .cache/:
#
#   .cache/k8s/<K8S_VERSION>/bin/{kube-apiserver,kube-controller-manager,etcd}
#   .cache/helm/<HELM_VERSION>/bin/helm
#   .cache/k8s/current.env     KEY=value paths for the test harness
#
# With --cluster, also what a node of the cluster tier runs (make cluster-bin):
#
#   .cache/k8s/<K8S_VERSION>/cluster-bin/{kube-scheduler,kubelet,kube-proxy}
#   .cache/kube-router/<KUBE_ROUTER_VERSION>/bin/kube-router
#   .cache/coredns/<COREDNS_VERSION>/bin/coredns
#   .cache/cnpg/<CNPG_VERSION>/bin/manager       (CloudNativePG's operator and instance manager)
#   .cache/cnpg/<CNPG_VERSION>/cnpg-<version>.yaml  (its published install manifest, from its module)
#   .cache/k8s/cluster.env     their paths
#
# Versions come from versions.env (and go.mod/go.sum, which gen-replaces.sh
# derives from it). A stamp file per output directory records a hash of the
# inputs, so a second run with nothing changed does no work and needs no Go.
# Go's own caches (GOCACHE, GOMODCACHE) stay in their default places, so a
# rebuild on the same machine only relinks.
#
# Environment: K8S_BUILD_PARALLEL (go build -p, default 2).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="$root/.cache"
# shellcheck source=versions.env disable=SC1091
. "$here/versions.env"

k8s_dir="$cache/k8s/$K8S_VERSION"
k8s_bin="$k8s_dir/bin"
helm_dir="$cache/helm/$HELM_VERSION"
helm_bin="$helm_dir/bin"
current_env="$cache/k8s/current.env"
cluster_bin="$k8s_dir/cluster-bin"
kube_router_bin="$cache/kube-router/$KUBE_ROUTER_VERSION/bin"
coredns_bin="$cache/coredns/$COREDNS_VERSION/bin"
cnpg_bin="$cache/cnpg/$CNPG_VERSION/bin"
cnpg_manifest="$cache/cnpg/$CNPG_VERSION/cnpg-${CNPG_VERSION#v}.yaml"
cluster_env="$cache/k8s/cluster.env"
parallel="${K8S_BUILD_PARALLEL:-2}"
cluster=
case ${1:-} in
  "") ;;
  --cluster) cluster=1 ;;
  *) echo "usage: $0 [--cluster]" >&2 && exit 2 ;;
esac

log() { echo "k8s-bin: $*" >&2; }
die() {
  echo "k8s-bin: error: $*" >&2
  exit 1
}

# Hash of the files that decide what gets built; $1 names the part.
inputs_hash() {
  case $1 in
    k8s | cluster) printf '%s\n' "$1" && cat "$here/versions.env" "$here/go.mod" "$here/go.sum" "$here/build.sh" ;;
    helm) printf '%s\n' "$HELM_VERSION" && cat "$here/build.sh" ;;
    kube-router) printf '%s\n' "$KUBE_ROUTER_VERSION" && cat "$here/build.sh" ;;
    coredns) printf '%s\n' "$COREDNS_VERSION" && cat "$here/build.sh" ;;
    cnpg) printf '%s\n' "$CNPG_VERSION" && cat "$here/build.sh" ;;
  esac | sha256sum | cut -d' ' -f1
}

up_to_date() { # $1 part, $2 stamp file, rest: binaries
  local part=$1 stamp=$2
  shift 2
  [[ -f $stamp && "$(cat "$stamp")" == "$(inputs_hash "$part")" ]] || return 1
  local b
  for b; do [[ -x $b ]] || return 1; done
}

# Go from PATH, from the usual install directory, or else the release named by
# go.mod fetched from the Go module proxy (golang.org/toolchain, the same
# archives `go` itself switches toolchains with) into .cache/go.
find_go() {
  local want=$1 d
  command -v go >/dev/null 2>&1 && return 0
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [[ -x $d/go ]] && { PATH="$d:$PATH"; return 0; }
  done
  local arch
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) return 1 ;; esac
  local name="v0.0.1-go$want.linux-$arch" dir="$cache/go/go$want"
  if [[ ! -x $dir/bin/go ]]; then
    command -v curl >/dev/null && command -v unzip >/dev/null || return 1
    log "fetching Go $want from the Go module proxy"
    local tmp
    tmp=$(mktemp -d)
    curl -fsSL --retry 3 "${GOPROXY_BASE:-https://proxy.golang.org}/golang.org/toolchain/@v/$name.zip" -o "$tmp/go.zip" &&
      unzip -q "$tmp/go.zip" -d "$tmp" || { rm -rf "$tmp"; return 1; }
    # Module zips keep no file modes: the executables are marked as `go` itself does when it switches.
    chmod +x "$tmp/golang.org/toolchain@$name"/bin/* "$tmp/golang.org/toolchain@$name"/pkg/tool/*/*
    mkdir -p "$cache/go"
    rm -rf "$dir"
    mv "$tmp/golang.org/toolchain@$name" "$dir"
    rm -rf "$tmp"
  fi
  PATH="$dir/bin:$PATH"
}

go_checked=
need_go() {
  [[ -n $go_checked ]] && return 0
  local want
  want=$(awk '$1 == "go" { print $2; exit }' "$here/go.mod")
  find_go "$want" ||
    die "go toolchain not found on PATH or in /usr/local/go, and Go $want could not be fetched from the Go module proxy: install Go >= $want (needed once to build kube-apiserver, kube-controller-manager, etcd and helm into .cache/)"

  # Inside the wrapper module `go` enforces its go directive (or switches
  # toolchains itself when GOTOOLCHAIN allows it).
  local out
  if ! out=$(cd "$here" && go env GOVERSION 2>&1); then
    die "Go >= $want is needed: $out"
  fi
  log "using $out ($(command -v go)), go build -p $parallel"
  go_checked=1
}

with_lock() {
  mkdir -p "$cache/k8s"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/k8s/.build.lock"
    flock 9
  fi
}

# The -ldflags of the release build: the version a binary reports (`--version`, /version) and
# that clients send in their User-Agent.
k8s_ldflags() {
  [[ $K8S_VERSION =~ ^v([0-9]+)\.([0-9]+)\. ]] || die "bad K8S_VERSION '$K8S_VERSION'"
  local major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
  local build_date
  # The release's publication time rather than now: the same inputs give the
  # same ldflags, so Go's cache can reuse the linked binaries.
  build_date=$(cd "$here" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)
  [[ -n $build_date ]] || build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local -a ldflags=(-s -w)
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=(
      "-X=$pkg.gitVersion=$K8S_VERSION"
      "-X=$pkg.gitMajor=$major"
      "-X=$pkg.gitMinor=$minor"
      "-X=$pkg.gitTreeState=clean"
      "-X=$pkg.gitCommit="
      "-X=$pkg.buildDate=$build_date"
    )
  done
  echo "${ldflags[*]}"
}

# Same build tags as the upstream release build (hack/lib/golang.sh).
k8s_goflags=(-trimpath -buildvcs=false "-tags=selinux,notest,grpcnotrace")

check_wrapper_module() {
  grep -qE "^[[:space:]]*(require[[:space:]]+)?k8s\.io/kubernetes $K8S_VERSION( // indirect)?\$" "$here/go.mod" ||
    die "go.mod does not require k8s.io/kubernetes $K8S_VERSION: run hack/k8s-bin/gen-replaces.sh"
}

build_k8s() {
  local stamp="$k8s_dir/.stamp"
  if up_to_date k8s "$stamp" "$k8s_bin/kube-apiserver" "$k8s_bin/kube-controller-manager" "$k8s_bin/etcd"; then
    return 0
  fi
  need_go
  check_wrapper_module
  local ldflags etcd_version
  ldflags=$(k8s_ldflags)
  etcd_version=$(cd "$here" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)

  local out="$k8s_dir/bin.tmp"
  rm -rf "$out"
  mkdir -p "$out"
  local t0=$SECONDS
  log "building kube-apiserver and kube-controller-manager $K8S_VERSION (a cold build takes minutes)"
  (cd "$here" && CGO_ENABLED=0 go build -p "$parallel" "${k8s_goflags[@]}" -ldflags="$ldflags" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
  log "building etcd $etcd_version (the version $K8S_VERSION pins)"
  (cd "$here" && CGO_ENABLED=0 go build -p "$parallel" "${k8s_goflags[@]}" -ldflags="-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)

  rm -rf "$k8s_bin"
  mv "$out" "$k8s_bin"
  printf 'ETCD_VERSION=%s\n' "$etcd_version" >"$k8s_dir/build.env"
  inputs_hash k8s >"$stamp"
  log "kubernetes binaries ready in $k8s_bin ($((SECONDS - t0)) s)"
}

# What a node of the cluster tier adds to the control plane, from the same wrapper module.
build_cluster_k8s() {
  local stamp="$k8s_dir/.cluster-stamp"
  if up_to_date cluster "$stamp" "$cluster_bin/kube-scheduler" "$cluster_bin/kubelet" "$cluster_bin/kube-proxy"; then
    return 0
  fi
  need_go
  check_wrapper_module
  local ldflags out="$cluster_bin.tmp" t0=$SECONDS
  ldflags=$(k8s_ldflags)
  rm -rf "$out"
  mkdir -p "$out"
  log "building kube-scheduler, kubelet and kube-proxy $K8S_VERSION"
  (cd "$here" && CGO_ENABLED=0 go build -p "$parallel" "${k8s_goflags[@]}" -ldflags="$ldflags" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
  rm -rf "$cluster_bin"
  mv "$out" "$cluster_bin"
  inputs_hash cluster >"$stamp"
  log "node binaries ready in $cluster_bin ($((SECONDS - t0)) s)"
}

# `go install <package>@<version>` outside any module: that module's own go.mod and go.sum decide every
# dependency (checked against the checksum database). $1 part, $2 package@version, $3 output directory,
# $4 extra -ldflags (the version the program reports, as its own release build sets it).
go_install() {
  local part=$1 pkg=$2 bin=$3 ldflags=${4:-}
  local name=${pkg%@*}
  name=${name##*/}
  if up_to_date "$part" "$bin/../.stamp" "$bin/$name"; then
    return 0
  fi
  need_go
  local tmp t0=$SECONDS
  tmp=$(mktemp -d)
  log "building $pkg"
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp/bin" go install -p "$parallel" -trimpath -buildvcs=false -ldflags="-s -w $ldflags" "$pkg")
  mkdir -p "$bin"
  mv -f "$tmp/bin/$name" "$bin/$name"
  rm -rf "$tmp"
  inputs_hash "$part" >"$bin/../.stamp"
  log "$name ready in $bin ($((SECONDS - t0)) s)"
}

build_helm() {
  local stamp="$helm_dir/.stamp"
  if up_to_date helm "$stamp" "$helm_bin/helm"; then
    return 0
  fi
  need_go
  local tmp
  tmp=$(mktemp -d)
  # helm derives the Kubernetes version it assumes for `helm template` and
  # `helm lint` (Capabilities.KubeVersion) from its client-go version at
  # build time, as its Makefile does.
  local gomod client_go
  gomod=$(cd "$tmp" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  client_go=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$gomod")
  [[ $client_go =~ ^v0\.([0-9]+)\. ]] || die "cannot read the client-go version of helm $HELM_VERSION"
  local kminor=${BASH_REMATCH[1]}
  local -a ldflags=(
    -s -w
    "-X=helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    "-X=helm.sh/helm/v3/internal/version.metadata="
    "-X=helm.sh/helm/v3/internal/version.gitTreeState=clean"
    "-X=helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1"
    "-X=helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor"
    "-X=helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"
    "-X=helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor"
  )
  local t0=$SECONDS
  log "building helm $HELM_VERSION"
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp/bin" go install -p "$parallel" -trimpath -buildvcs=false \
    -ldflags="${ldflags[*]}" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
  mkdir -p "$helm_bin"
  mv -f "$tmp/bin/helm" "$helm_bin/helm"
  rm -rf "$tmp"
  inputs_hash helm >"$stamp"
  log "helm ready in $helm_bin ($((SECONDS - t0)) s)"
}

# CloudNativePG's cmd/manager, and the install manifest its module publishes (releases/cnpg-<version>.yaml: CRDs,
# RBAC, webhooks, the operator's Deployment), which the cluster tier applies with the image swapped for its own.
# `go install <package>@<version>` stops at the module's version list, which the module proxy refuses for this
# module (403), so a throwaway module requiring the tag builds it instead: with that one requirement, its build
# list is the operator's own go.mod (each module checked against the checksum database), as with go install. The
# version ldflags are its release build's (.goreleaser.yml): the operator reports them and records them in each
# Cluster's status; the commit and the date are the tag's, as the module proxy has them.
build_cnpg() {
  if up_to_date cnpg "$cnpg_bin/../.stamp" "$cnpg_bin/manager" && [[ -f $cnpg_manifest ]]; then
    return 0
  fi
  need_go
  local tmp info commit dir date t0=$SECONDS pkg=github.com/cloudnative-pg/cloudnative-pg
  tmp=$(mktemp -d)
  log "building $pkg/cmd/manager@$CNPG_VERSION"
  if ! (cd "$tmp" && go mod init blockfeed.test/cnpg-manager && go get -tool "$pkg/cmd/manager@$CNPG_VERSION") >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "cannot fetch $pkg@$CNPG_VERSION from the Go module proxy"
  fi
  rm -f "$tmp.log"
  info=$(cd "$tmp" && go mod download -json "$pkg@$CNPG_VERSION")
  commit=$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{7\}\).*/\1/p' <<<"$info")
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")
  date=$(cd "$tmp" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02"}}{{end}}' "$pkg")
  [[ -f $dir/releases/${cnpg_manifest##*/} ]] || { rm -rf "$tmp"; die "$pkg@$CNPG_VERSION has no releases/${cnpg_manifest##*/}"; }
  (cd "$tmp" && CGO_ENABLED=0 go build -p "$parallel" -trimpath -buildvcs=false -o "$tmp/bin/manager" \
    -ldflags="-s -w -X=$pkg/pkg/versions.buildVersion=${CNPG_VERSION#v} -X=$pkg/pkg/versions.buildCommit=${commit:-none} -X=$pkg/pkg/versions.buildDate=${date:-unknown}" \
    "$pkg/cmd/manager") || { rm -rf "$tmp"; die "building $pkg/cmd/manager@$CNPG_VERSION failed"; }
  mkdir -p "$cnpg_bin"
  mv -f "$tmp/bin/manager" "$cnpg_bin/manager"
  # Module files are read-only: the copy gets ordinary modes.
  install -m 644 "$dir/releases/${cnpg_manifest##*/}" "$cnpg_manifest"
  rm -rf "$tmp"
  inputs_hash cnpg >"$cnpg_bin/../.stamp"
  log "manager ready in $cnpg_bin ($((SECONDS - t0)) s)"
}

write_current_env() {
  local etcd_version
  etcd_version=$(sed -n 's/^ETCD_VERSION=//p' "$k8s_dir/build.env")
  local content
  content=$(
    cat <<EOF
# Written by hack/k8s-bin/build.sh (make k8s-bin); do not edit.
K8S_VERSION=$K8S_VERSION
ETCD_VERSION=$etcd_version
HELM_VERSION=$HELM_VERSION
KUBE_APISERVER=$k8s_bin/kube-apiserver
KUBE_CONTROLLER_MANAGER=$k8s_bin/kube-controller-manager
ETCD=$k8s_bin/etcd
HELM=$helm_bin/helm
EOF
  )
  if [[ ! -f $current_env || "$(cat "$current_env")" != "$content" ]]; then
    printf '%s\n' "$content" >"$current_env.tmp"
    mv -f "$current_env.tmp" "$current_env"
  fi
}

write_cluster_env() {
  local content
  content=$(
    cat <<EOF
# Written by hack/k8s-bin/build.sh --cluster (make cluster-bin); do not edit.
KUBE_ROUTER_VERSION=$KUBE_ROUTER_VERSION
COREDNS_VERSION=$COREDNS_VERSION
KUBE_SCHEDULER=$cluster_bin/kube-scheduler
KUBELET=$cluster_bin/kubelet
KUBE_PROXY=$cluster_bin/kube-proxy
KUBE_ROUTER=$kube_router_bin/kube-router
COREDNS=$coredns_bin/coredns
CNPG_VERSION=$CNPG_VERSION
CNPG_MANAGER=$cnpg_bin/manager
CNPG_MANIFEST=$cnpg_manifest
EOF
  )
  if [[ ! -f $cluster_env || "$(cat "$cluster_env")" != "$content" ]]; then
    printf '%s\n' "$content" >"$cluster_env.tmp"
    mv -f "$cluster_env.tmp" "$cluster_env"
  fi
}

with_lock
build_k8s
build_helm
write_current_env
if [[ -n $cluster ]]; then
  build_cluster_k8s
  go_install kube-router "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION" "$kube_router_bin" \
    "-X=github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION"
  go_install coredns "github.com/coredns/coredns@$COREDNS_VERSION" "$coredns_bin"
  build_cnpg
  write_cluster_env
fi
