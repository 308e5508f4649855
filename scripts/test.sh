#!/usr/bin/env bash
# The whole test suite: lint, workloads, unit and integration tests (PMU tests serialize
# themselves with a file lock). Hardware tests skip loudly where the PMU is unusable, and
# fail instead when CULPRIT_REQUIRE_PMU=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export CULPRIT_SKIP_LOG="$PWD/target/skipped-tests.txt"
mkdir -p target && : > "$CULPRIT_SKIP_LOG"
# step CMD...: runs a step and prints how long it took (CI's time goes to a few of them).
step() {
  local start=$SECONDS
  "$@"
  echo "test.sh: $((SECONDS - start)) s: $*"
}
# The build-id cache every test's culprit and perf use ($HOME=target/test-home): fresh each run.
rm -rf target/test-home
# The toolchain of rust-toolchain.toml, offline where this machine's stable is that version.
step bash scripts/toolchain.sh
step make -s -C workloads
# perf 6.12 from the tables' kernel tree, the attr oracle of the newer CPU models.
step bash scripts/oracle-perf.sh
# culprit for arm64 (cross-built, the `cross-test` profile), compared under qemu-user in
# tests/corpus.rs. (Built in the background beside the host build, it saved nothing: the Rust
# builds keep both cores busy; 946 s against 932 s in a row.)
step bash scripts/cross-aarch64.sh cross-test
step cargo fmt --all -- --check
# Dependencies' licences and RustSec advisories (deny.toml; offline where GitHub is not
# reachable: see the script).
step bash scripts/deny.sh
# Lint while building: as `cargo clippy` does, clippy-driver compiles culprit's own crates
# (RUSTC_WORKSPACE_WRAPPER) and fails on any warning, but in build mode, so that the
# dependencies are compiled once, for the tests, instead of also being checked twice (two
# clippy passes took ~5 of CI's minutes). First the `sql` culprit-cli and every test, then
# the default, lean culprit-cli: after the test build it recompiles 21 crates (46 s here);
# built first, it cost 87 s more than the test build alone, as the dependencies' features
# differ with DataFusion and the tests' dev-dependencies. The test run below finds the `sql`
# binary fresh and makes it target/debug/culprit again.
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver)
CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
step cargo test --workspace --features culprit-cli/sql --no-run
step cargo build --workspace --bins
# One test more than the cores: many tests wait on what they spawn (perf, qemu, a JVM,
# Chromium), and with 2 threads the CLI's tests kept 2 cores ~75% busy (342 s; 284 s with 3).
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-$(($(nproc) + 1))}
# --no-fail-fast: a failing test binary does not hide the failures of the others; cargo
# still exits non-zero when any test failed (reported after the skip summary below).
status=0
start=$SECONDS
cargo test --workspace --features culprit-cli/sql --no-fail-fast || status=$?
echo "test.sh: $((SECONDS - start)) s: the tests"
skipped=$(wc -l < "$CULPRIT_SKIP_LOG")
if [ "$skipped" -gt 0 ]; then
  echo "=================================================================="
  echo "WARNING: $skipped test(s) SKIPPED their hardware part (no usable PMU here):"
  sed 's/^/  - /' "$CULPRIT_SKIP_LOG"
  echo "=================================================================="
fi
exit "$status"
