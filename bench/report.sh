#!/usr/bin/env bash
# Benchmark (not a test): `culprit report` against `perf report --stdio` on a ~1M-sample
# `perf record -g` file of a real program (xz -9 on generated data), plus `--sort srcline` on
# a program with debug info (the simple_classic workload). Prints a markdown table of wall
# time and peak RSS (GNU time) per mode; docs/performance.md keeps the latest results.
#
#   bench/report.sh                   # record (once) and time everything
#   DATA_MB=60 FREQ=10000 bench/report.sh
#
# Needs: perf, xz, GNU time (/usr/bin/time; `apt-get install time`), a release build of
# culprit (built here if missing). Recordings are kept in $OUT and reused; delete them to
# record again.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-report}
DATA_MB=${DATA_MB:-120}          # MB of random bytes; base64 makes it ~1.35x bigger
FREQ=${FREQ:-10000}              # cpu-clock sampling frequency per thread
. bench/lib.sh

bench_need perf xz
bench_build
mkdir -p "$OUT"

# 1. The xz recording (~1M samples: xz -9 needs ~100 s of CPU for the default size).
bench_record_xz "$OUT/xz.data" "$DATA_MB" "$FREQ"

# 2. A program with debug info, for --sort srcline.
if [ ! -s "$OUT/srcline.data" ]; then
  make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/simple_classic"
  perf record -q -g -e cpu-clock -F "$FREQ" -o "$OUT/srcline.data" -- \
    target/workloads/simple_classic 1200 > /dev/null
fi

samples() { bench_samples "$1"; }

# Runs a command with its output to /dev/null; prints "seconds maxrss_kb".
measure() {
  local cmd
  printf -v cmd '%q ' "$@"
  bench_measure "$cmd" | awk '{ print $1, $3 }'
}

# Warm the page cache (and perf's build-id cache lookups) once.
perf report -i "$OUT/xz.data" --stdio -g none --sort dso > /dev/null 2>&1 || true
"$CULPRIT" report -i "$OUT/xz.data" --sort dso > /dev/null 2>&1 || true

echo "| mode | file (samples) | perf report | culprit report | speed-up | perf RSS | culprit RSS | RSS ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
row() {
  local name=$1 file=$2; shift 2
  local perf_args=() culprit_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do perf_args+=("$1"); shift; done
  shift
  culprit_args=("$@")
  read -r pt pm < <(measure perf report -i "$file" --stdio "${perf_args[@]}")
  read -r ct cm < <(measure "$CULPRIT" report -i "$file" "${culprit_args[@]}")
  awk -v n="$name" -v f="$(basename "$file") ($(samples "$file"))" -v pt="$pt" -v pm="$pm" -v ct="$ct" -v cm="$cm" \
    'BEGIN { printf "| %s | %s | %.2f s | %.2f s | %.1fx | %.0f MB | %.0f MB | %.2fx |\n", n, f, pt, ct, (ct > 0 ? pt / ct : 0), pm / 1024, cm / 1024, (pm > 0 ? cm / pm : 0) }'
}

row "--sort comm (reading floor)" "$OUT/xz.data" --sort comm --no-children -g none -- --sort comm --no-children
row "--sort sym" "$OUT/xz.data" --sort sym --no-children -g none -- --sort sym --no-children
row "--sort dso,sym" "$OUT/xz.data" --sort dso,sym --no-children -g none -- --sort dso,sym --no-children
row "--children (comm,dso,sym)" "$OUT/xz.data" --children -g none -- --children
row "--sort srcline" "$OUT/srcline.data" --sort srcline --no-children -g none -- --sort srcline --no-children
