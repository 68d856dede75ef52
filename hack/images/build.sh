#!/usr/bin/env bash
# Builds the images the cluster tier runs, without Docker and without a registry, with Debian's buildah, and
# writes each as a docker archive for `ctr images import`:
#
#   .cache/cluster/images/{blockfeed,postgresql,busybox,pause,cnpg-operator,cnpg-postgresql,cowrie}.tar
#
# blockfeed is the repository's own Dockerfile, unchanged; cnpg-operator holds CloudNativePG's operator
# program, which make cluster-bin builds (.cache/k8s/cluster.env names it); cowrie is Cowrie from PyPI at the
# version and pins of the integration tier's virtualenv (hack/sensors), laid out as its official image. Nothing
# is pulled from a registry: stand-ins for the base images the others name are made first under the same names
# (see images.env): debian:bookworm-slim from Debian's packages (mmdebstrap), then node:<major>-bookworm-slim
# with the project's Node (from the npm registry, scripts/ensure-node.sh) and npm. Every RUN step uses the
# host's network (apt, npm, PyPI).
#
# A stamp per image records a hash of its inputs (its directory under hack/images, images.env, this script,
# the Dockerfile and files of the repository for blockfeed, its base's stamp): an unchanged image is not
# rebuilt, and a second run with nothing changed takes about 3 seconds. buildah keeps its store in
# .cache/cluster/buildah and reuses unchanged layers (a source change rebuilds only the layers after
# `npm ci`).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.cache/cluster/images"
store="$root/.cache/cluster/buildah"
# shellcheck source=images.env disable=SC1091
. "$here/images.env"

log() { echo "cluster-images: $*" >&2; }
die() {
  echo "cluster-images: error: $*" >&2
  exit 1
}

for tool in buildah mmdebstrap busybox npm; do
  command -v "$tool" >/dev/null || die "$tool not found: run .ci/system-deps --cluster"
done
busybox=$(command -v busybox)
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is linked dynamically: install busybox-static (.ci/system-deps --cluster)"
buildah() { command buildah --root "$store/root" --runroot "$store/run" --storage-driver overlay "$@"; }

# The base the repository's Dockerfile names (its first FROM), and the Node major version in that name.
node_image=$(awk 'toupper($1) == "FROM" { print $2; exit }' "$root/Dockerfile")
[[ $node_image =~ ^node:([0-9]+)-$DEBIAN_SUITE-slim$ ]] ||
  die "the Dockerfile's base $node_image is not node:<major>-$DEBIAN_SUITE-slim: teach build.sh to make that stand-in"
node_major=${BASH_REMATCH[1]}
node_image=docker.io/library/$node_image

mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

# Hash of the files named (directories: every file below them), with images.env and this script.
inputs_hash() {
  local -a files
  mapfile -t files < <(find "$@" -type f ! -name '*.test.ts' | LC_ALL=C sort)
  # Names relative to the repository or the scratch directory: where a context was put does not count.
  { cat "$here/images.env" "$here/build.sh"; printf '%s\n' "$node_image" "${files[@]#"$work/"}" | sed "s|^$root/||"; cat "${files[@]}"; } |
    sha256sum | cut -d' ' -f1
}
stamp_of() { cat "$out/$1.stamp" 2>/dev/null || true; }

# build <name> <image ref> <context dir> <Dockerfile> <stamp inputs...>: buildah bud when the inputs changed
# (--force-rm: a failed step leaves no working container, and no mount, behind).
build() {
  local name=$1 ref=$2 context=$3 dockerfile=$4 hash t0=$SECONDS
  hash=$(inputs_hash "${@:5}")
  if [[ $(stamp_of "$name") == "$hash" ]] && buildah inspect --type image "$ref" >/dev/null 2>&1; then
    return 0
  fi
  log "building $ref"
  buildah bud --pull=never --network=host --layers --force-rm -f "$dockerfile" -t "$ref" "$context" >"$out/$name.log" 2>&1 ||
    die "building $ref failed:$(printf '\n')$(tail -n 30 "$out/$name.log")"
  echo "$hash" >"$out/$name.stamp"
  log "$ref built ($((SECONDS - t0)) s)"
}

# export <name> <image ref>: the docker archive the cluster imports, rewritten only when the image changed.
export_archive() {
  local name=$1 ref=$2 id
  id=$(buildah inspect --type image --format '{{.FromImageID}}' "$ref")
  [[ -f $out/$name.tar && $(cat "$out/$name.tar.id" 2>/dev/null) == "$id" ]] && return 0
  rm -f "$out/$name.tar"
  buildah push --quiet "$ref" "docker-archive:$out/$name.tar:$ref" >/dev/null
  echo "$id" >"$out/$name.tar.id"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# debian:bookworm-slim: the root filesystem is the slow part (~150 MB of packages), so it is kept.
rootfs="$store/rootfs-$DEBIAN_SUITE.tar"
rootfs_hash=$(inputs_hash "$here/debian")
if [[ ! -f $rootfs || $(stamp_of rootfs) != "$rootfs_hash" ]]; then
  log "making a Debian $DEBIAN_SUITE root filesystem with mmdebstrap"
  t0=$SECONDS
  mkdir -p "$store"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates --format=tar \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc-base/*' \
    "$DEBIAN_SUITE" "$rootfs.tmp" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE main" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
  mv "$rootfs.tmp" "$rootfs"
  echo "$rootfs_hash" >"$out/rootfs.stamp"
  log "root filesystem ready ($((SECONDS - t0)) s)"
fi
mkdir -p "$work/debian"
cp "$here/debian/Dockerfile" "$work/debian/"
ln "$rootfs" "$work/debian/rootfs.tar" 2>/dev/null || cp "$rootfs" "$work/debian/rootfs.tar"
build debian "$DEBIAN_IMAGE" "$work/debian" "$work/debian/Dockerfile" "$here/debian" "$out/rootfs.stamp"

# node:<major>-bookworm-slim with the project's Node (the same version the repository's tools run on).
node_home=$(BLOCKFEED_FORCE_LOCAL_NODE=1 "$root/scripts/ensure-node.sh")
[[ $("$node_home/bin/node" --version) == v$node_major.* ]] ||
  die "the project's Node ($("$node_home/bin/node" --version)) is not the $node_major.x the Dockerfile's base names"
mkdir -p "$work/node/ca-certificates"
cp "$here/node/Dockerfile" "$work/node/"
cp "$node_home/bin/node" "$work/node/node"
find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$work/node/ca-certificates/" \; 2>/dev/null || true
if [[ ! -f $store/npm-$NPM_VERSION.tgz ]]; then
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null && mv "npm-$NPM_VERSION.tgz" "$store/")
fi
cp "$store/npm-$NPM_VERSION.tgz" "$work/node/npm.tgz"
build node "$node_image" "$work/node" "$work/node/Dockerfile" "$work/node" "$out/debian.stamp"

# The repository's Dockerfile, its context the repository (its .dockerignore decides what goes in).
build blockfeed "$BLOCKFEED_IMAGE" "$root" "$root/Dockerfile" \
  "$root/Dockerfile" "$root/.dockerignore" "$root/package.json" "$root/package-lock.json" \
  "$root/bin" "$root/common" "$root/api" "$root/api-server" "$root/controller" "$root/shipper" "$root/data" "$out/node.stamp"
export_archive blockfeed "$BLOCKFEED_IMAGE"

build postgresql "$POSTGRESQL_IMAGE" "$here/postgresql" "$here/postgresql/Dockerfile" "$here/postgresql" "$out/debian.stamp"
export_archive postgresql "$POSTGRESQL_IMAGE"

for name in busybox pause; do
  mkdir -p "$work/$name"
  cp "$here/$name/Dockerfile" "$work/$name/"
  cp "$busybox" "$work/$name/busybox"
done
build busybox "$BUSYBOX_IMAGE" "$work/busybox" "$work/busybox/Dockerfile" "$work/busybox"
export_archive busybox "$BUSYBOX_IMAGE"
build pause "$PAUSE_IMAGE" "$work/pause" "$work/pause/Dockerfile" "$work/pause"
export_archive pause "$PAUSE_IMAGE"

# Cowrie (hack/images/cowrie), at the version hack/sensors/versions.env names, which the image's tag must name too.
sensors="$root/hack/sensors"
cowrie_version=$(sed -n 's/^COWRIE_VERSION=//p' "$sensors/versions.env")
[[ ${COWRIE_IMAGE##*:} == "$cowrie_version" ]] ||
  die "images.env names $COWRIE_IMAGE, but $sensors/versions.env names Cowrie $cowrie_version: make the tag match"
mkdir -p "$work/cowrie/ca-certificates"
cp "$here/cowrie/Dockerfile" "$sensors/versions.env" "$sensors/cowrie.constraints.txt" "$work/cowrie/"
find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$work/cowrie/ca-certificates/" \; 2>/dev/null || true
build cowrie "$COWRIE_IMAGE" "$work/cowrie" "$work/cowrie/Dockerfile" "$work/cowrie" "$out/debian.stamp"
export_archive cowrie "$COWRIE_IMAGE"

# CloudNativePG: its operator (the program make cluster-bin built, at the version the image's tag names) and
# PostgreSQL laid out for its instances, on the bundled database's image.
cluster_env="$root/.cache/k8s/cluster.env"
cnpg_manager=$(sed -n 's/^CNPG_MANAGER=//p' "$cluster_env" 2>/dev/null)
cnpg_version=$(sed -n 's/^CNPG_VERSION=v//p' "$cluster_env" 2>/dev/null)
[[ -x $cnpg_manager ]] || die "CloudNativePG's manager is not built: run make cluster-bin"
[[ ${CNPG_OPERATOR_IMAGE##*:} == "$cnpg_version" ]] ||
  die "images.env names $CNPG_OPERATOR_IMAGE, but make cluster-bin built CloudNativePG $cnpg_version: make the tag match"
case $(uname -m) in x86_64) goarch=amd64 ;; aarch64 | arm64) goarch=arm64 ;; *) die "no CloudNativePG build for $(uname -m)" ;; esac
mkdir -p "$work/cnpg-operator/layout/operator"
cp "$here/cnpg-operator/Dockerfile" "$work/cnpg-operator/"
cp "$cnpg_manager" "$work/cnpg-operator/layout/operator/manager_$goarch"
ln -s "operator/manager_$goarch" "$work/cnpg-operator/layout/manager"
tar -C "$work/cnpg-operator/layout" --owner=0 --group=0 --mtime=@0 -cf "$work/cnpg-operator/operator.tar" manager operator
rm -rf "$work/cnpg-operator/layout"
build cnpg-operator "$CNPG_OPERATOR_IMAGE" "$work/cnpg-operator" "$work/cnpg-operator/Dockerfile" "$work/cnpg-operator"
export_archive cnpg-operator "$CNPG_OPERATOR_IMAGE"
build cnpg-postgresql "$CNPG_POSTGRESQL_IMAGE" "$here/cnpg-postgresql" "$here/cnpg-postgresql/Dockerfile" "$here/cnpg-postgresql" "$out/postgresql.stamp"
export_archive cnpg-postgresql "$CNPG_POSTGRESQL_IMAGE"

# Layers no image refers to any more (an old blockfeed build's, say).
buildah rmi --prune >/dev/null 2>&1 || true
log "images ready in $out"
