#!/usr/bin/env bash
# Fuzzes every parser target for a fixed time each and prints executions and crashes, then
# runs the CLI-level mutation run (bench/cli-mutate.py: culprit's reading verbs on mutated
# perf.data files, from files and stdin: executions, crashes, hangs, output bytes, peak RSS).
#   bash bench/fuzz.sh [SECONDS]        (default 60, per target)
# Uses cargo-fuzz (libFuzzer + ASan, nightly) when `cargo fuzz` and a nightly toolchain are
# installed; otherwise the stable-Rust mutation fuzzer crates/decode/examples/fuzz_mutate.rs.
# FUZZ_STABLE=1 forces the stable fallback. Seeds: the committed perf.data fixtures. Crashes
# land in fuzz/artifacts/perf_data/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
fixtures=crates/decode/tests/fixtures
seeds=("$fixtures"/*.data)
# The small real recordings of other perf versions and machines (old formats, LBR, groups,
# PEBS, pipe mode, COMPRESSED2, AUX) seed the formats the crafted fixtures lack.
while IFS= read -r f; do seeds+=("$f"); done < <(find "$fixtures/real-perf-data" -type f -name '*' ! -name '*.md' -size -256k | sort)
if [ -d "$fixtures/fuzz-regressions" ]; then
  for f in "$fixtures"/fuzz-regressions/*; do [ -f "$f" ] && seeds+=("$f"); done
fi
artifacts=fuzz/artifacts/perf_data
mkdir -p "$artifacts"

if [ "${FUZZ_STABLE:-0}" != 1 ] && cargo fuzz --version >/dev/null 2>&1 \
    && rustup run nightly rustc --version >/dev/null 2>&1; then
  status=0
  for target in perf_data ibs_raw spe_aux trace_parse parquet_read; do
    corpus=fuzz/corpus/$target
    mkdir -p "$corpus"
    [ "$target" = perf_data ] && { cp -n "${seeds[@]}" "$corpus"/ 2>/dev/null || true; }
    if [ "$target" = parquet_read ] && [ -z "$(ls -A "$corpus")" ]; then
      # Seeds: each table file of the export the target makes, behind the byte that picks it.
      cargo build -q --release -p culprit-cli
      export_dir=$(mktemp -d)
      target/release/culprit export --format parquet -i "$fixtures/cpu-clock-g.data" -o "$export_dir/pq" --summary none
      python3 - "$export_dir/pq" "$corpus" <<'PY'
import sys
from pathlib import Path
root, out = Path(sys.argv[1]), Path(sys.argv[2])
files = sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: p.relative_to(root).parts)
for i, p in enumerate(files):
    (out / f"seed-{i}").write_bytes(bytes([i]) + p.read_bytes())
PY
      rm -rf "$export_dir"
    fi
    log=$(mktemp)
    echo "fuzz.sh: cargo +nightly fuzz run $target for ${secs}s (libFuzzer, ASan)"
    set +e
    (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time="$secs" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 ../"$corpus") 2>&1 | tee "$log" | grep -E "^#[0-9]+.*(pulse|DONE)|ERROR|SUMMARY|stat::number_of_executed_units" || true
    s=${PIPESTATUS[0]}
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    crashes=$(grep -c -E '^==[0-9]+==ERROR|panicked at|deadly signal|Test unit written to' "$log" || true)
    echo "fuzz.sh: $target: executions: ${execs:-unknown}, crashes: ${crashes}, exit status ${s}"
    rm -f "$log"
    [ "$s" = 0 ] || status=$s
  done
else
  echo "fuzz.sh: stable mutation fuzzer for ${secs}s (cargo-fuzz or nightly missing, or FUZZ_STABLE=1)"
  echo "fuzz.sh: (ibs_raw, spe_aux, trace_parse and parquet_read need cargo-fuzz and nightly; only perf_data runs here)"
  cargo build -q --release -p culprit-decode --example fuzz_mutate
  set +e
  target/release/examples/fuzz_mutate "$secs" "$artifacts" "${seeds[@]}"
  status=$?
  set -e
fi
echo "fuzz.sh: CLI mutation run for ${secs}s"
cargo build -q --release -p culprit-cli
python3 bench/cli-mutate.py --seconds "$secs" || status=1
exit "$status"

