#!/usr/bin/env bash
# Runs a command (default: the test suite) where nothing outside this clone is visible but
# the system: a private mount namespace with an empty tmpfs over every top-level directory
# that holds users' files (/work, /home, /srv, /mnt, /media, /opt, /tmp, /var/tmp), over the
# clone's parent (its siblings, e.g. ../shared) and over $HOME (whose toolchains, .cargo,
# .rustup and .pyenv, are mounted back). The clone itself is mounted back at its own path.
# A test that reads another checkout's binaries, ../shared, a /tmp leftover or ~/.debug
# fails here as it would on a fresh machine.
#
#   bash scripts/isolated.sh [CMD ARGS...]
#
# Needs root (or a user namespace) and util-linux's unshare; without them it says so and
# runs the command as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
[ $# -gt 0 ] || set -- bash scripts/test.sh

if [ -z "${CULPRIT_ISOLATED:-}" ]; then
  if command -v unshare >/dev/null 2>&1 && unshare --mount --propagation private true 2>/dev/null; then
    exec unshare --mount --propagation private env CULPRIT_ISOLATED=1 bash "$0" "$@"
  fi
  echo "isolated.sh: WARNING: cannot make a private mount namespace here (needs root):" \
       "running without hiding the directories outside the clone" >&2
  exec "$@"
fi

# Inside the namespace: keep the clone and the toolchains at hand, then hide.
stash=/run/culprit-isolated
mkdir -p "$stash/repo"
mount --bind "$repo" "$stash/repo"
home=${HOME:-/root}
keep=()
for d in .cargo .rustup .pyenv; do
  if [ -d "$home/$d" ]; then
    mkdir -p "$stash/home/$d"
    mount --bind "$home/$d" "$stash/home/$d"
    keep+=("$d")
  fi
done

hidden=()
hide() {
  local d=$1
  [ -d "$d" ] || return 0
  case "$d" in /|/usr|/usr/*|/etc|/etc/*|/bin|/sbin|/lib|/lib64|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*|/var|/boot) return 0 ;; esac
  mount -t tmpfs -o mode=1777 culprit-isolated "$d"
  hidden+=("$d")
}
for d in /work /home /srv /mnt /media /opt /tmp /var/tmp; do hide "$d"; done
parent=$(dirname "$repo")
mkdir -p "$parent" 2>/dev/null || true
hide "$parent"
hide "$home"
chmod 700 "$home" 2>/dev/null || true

for d in "${keep[@]}"; do
  mkdir -p "$home/$d"
  mount --bind "$stash/home/$d" "$home/$d"
done
mkdir -p "$repo"
mount --bind "$stash/repo" "$repo"
umount -l "$stash/repo"
for d in "${keep[@]}"; do umount -l "$stash/home/$d"; done

echo "isolated.sh: hidden (empty tmpfs): ${hidden[*]}; kept: $repo ${keep[*]/#/$home/}" >&2
cd "$repo"
exec "$@"
