#!/usr/bin/env bash
# Installs the honeypots the integration tier attacks, from PyPI, each into a virtualenv of its own:
#
#   .cache/sensors/cowrie-<COWRIE_VERSION>/          bin/cowrie, bin/twistd
#   .cache/sensors/opencanary-<OPENCANARY_VERSION>/  bin/twistd, bin/opencanary.tac
#
# at the versions of versions.env, their dependencies pinned by <name>.constraints.txt. A stamp records a hash
# of both, so a second run with nothing changed does nothing and needs no network; a changed pin, or an
# install cut short, is made again. The virtualenvs use Debian's own python3: the honeypots run as an
# unprivileged user, who must be able to read the interpreter (a pyenv or asdf python under a home
# directory is out of its reach) and everything here (umask 022).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env disable=SC1091
. "$here/versions.env"
python=/usr/bin/python3

if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "install.sh: $python with its venv module is needed (Debian: python3, python3-venv); run .ci/system-deps" >&2
  exit 1
fi
umask 022
mkdir -p "$root/.cache/sensors"
# The real path: .cache may be a link shared by worktrees, and a virtualenv names its own path in its scripts.
cache=$(cd "$root/.cache/sensors" && pwd -P)
# Worktrees may share .cache: one install at a time.
exec 9>"$cache/.lock"
flock 9

install() {
  local name=$1 version=$2
  local dir="$cache/$name-$version" constraints="$here/$name.constraints.txt"
  local want
  want=$(cat "$constraints" <(echo "$name==$version $dir") | sha256sum | cut -c1-16)
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then return 0; fi
  echo "installing $name $version into $dir" >&2
  # A virtualenv cannot be moved (its scripts name their interpreter by path): it is made in place, and
  # what an earlier, interrupted or outdated run left there is made again.
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input --constraint "$constraints" "$name==$version"
  # twistd caches what plugins it found beside them; made now, while the directory is writable, so the
  # unprivileged user's twistd does not try to. Elsewhere than here: loading Cowrie's plugin writes
  # var/lib/cowrie/uuid into the working directory.
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && "$dir/bin/python" -c 'from twisted.plugin import IPlugin, getPlugins; list(getPlugins(IPlugin))')
  rm -rf "$scratch"
  echo "$want" > "$dir/.installed"
}

install cowrie "$COWRIE_VERSION"
install opencanary "$OPENCANARY_VERSION"
