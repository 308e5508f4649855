#!/usr/bin/env bash
# The whole test suite: lint, workloads, unit and integration tests (PMU tests serialize
# themselves with a file lock). Hardware tests skip loudly where the PMU is unusable, and
# fail instead when CULPRIT_REQUIRE_PMU=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export CULPRIT_SKIP_LOG="$PWD/target/skipped-tests.txt"
mkdir -p target && : > "$CULPRIT_SKIP_LOG"
# The build-id cache every test's culprit and perf use ($HOME=target/test-home): fresh each run.
rm -rf target/test-home
# The toolchain of rust-toolchain.toml, offline where this machine's stable is that version.
bash scripts/toolchain.sh
make -s -C workloads
# perf 6.12 from the tables' kernel tree, the attr oracle of the newer CPU models.
bash scripts/oracle-perf.sh
# culprit for arm64 (release, cross-built), compared under qemu-user in tests/corpus.rs.
bash scripts/cross-aarch64.sh
cargo fmt --all -- --check
# Dependencies' licences and RustSec advisories (deny.toml; offline where GitHub is not
# reachable: see the script).
bash scripts/deny.sh
# One build serves both: the workspace with culprit-cli's `sql` feature (DataFusion, its
# tests/sql.rs and the Spark test), then the default lean culprit-cli linted on its own.
cargo clippy --workspace --all-targets --features culprit-cli/sql -- -D warnings
cargo clippy -p culprit-cli --all-targets -- -D warnings
# --no-fail-fast: a failing test binary does not hide the failures of the others; cargo
# still exits non-zero when any test failed (reported after the skip summary below).
status=0
cargo test --workspace --features culprit-cli/sql --no-fail-fast || status=$?
skipped=$(wc -l < "$CULPRIT_SKIP_LOG")
if [ "$skipped" -gt 0 ]; then
  echo "=================================================================="
  echo "WARNING: $skipped test(s) SKIPPED their hardware part (no usable PMU here):"
  sed 's/^/  - /' "$CULPRIT_SKIP_LOG"
  echo "=================================================================="
fi
exit "$status"
