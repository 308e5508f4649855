#!/usr/bin/env bash
# The whole test suite: lint, workloads, unit and integration tests (PMU tests serialize
# themselves with a file lock). Hardware tests skip loudly where the PMU is unusable, and
# fail instead when CULPRIT_REQUIRE_PMU=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export CULPRIT_SKIP_LOG="$PWD/target/skipped-tests.txt"
mkdir -p target && : > "$CULPRIT_SKIP_LOG"
make -s -C workloads
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
skipped=$(wc -l < "$CULPRIT_SKIP_LOG")
if [ "$skipped" -gt 0 ]; then
  echo "=================================================================="
  echo "WARNING: $skipped test(s) SKIPPED their hardware part (no usable PMU here):"
  sed 's/^/  - /' "$CULPRIT_SKIP_LOG"
  echo "=================================================================="
fi
