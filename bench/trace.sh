#!/usr/bin/env bash
# Benchmark (not a test): `culprit trace` offline on a >= 1M-sample perf.data file against
# `perf script | awk` doing the same aggregation.
#
#   bench/trace.sh                       # uses target/bench-report/xz.data (bench/report.sh)
#   FILE=my.data bench/trace.sh          # any cpu-clock recording with >= 1M samples
#
# Programs:
#   A  pmc:::cpu-clock { @[sym] = count(); }                              (symbolized keys)
#   B  pmc:::cpu-clock /pid > 0 && period >= 1000/ { @s = sum(period); }  (predicate + sum)
# For each: wall time of the streaming run (decode + evaluate, what a user waits for), the
# evaluation alone (--stats: the file is decoded into memory first, then the samples are
# run through the compiled program on one core), and perf script | awk. Best of RUNS runs.
# Also checks that culprit and awk agree on B's sum and on A's sample total.
set -euo pipefail
cd "$(dirname "$0")/.."

FILE=${FILE:-target/bench-report/xz.data}
RUNS=${RUNS:-3}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
command -v perf >/dev/null || { echo "bench: perf is not installed" >&2; exit 2; }
[ -x "$CULPRIT" ] || cargo build --release -p culprit-cli

if [ ! -s "$FILE" ]; then
  # No recording: make one with the shares workload (cpu-clock every 20 us, ~1.2M samples).
  mkdir -p target/bench-trace
  FILE=target/bench-trace/shares.data
  if [ ! -s "$FILE" ]; then
    make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
    echo "bench: recording $FILE (about 25 s)" >&2
    perf record -q -e cpu-clock -c 20000 -o "$FILE" -- target/workloads/shares 3000 > /dev/null
  fi
fi

A='pmc:::cpu-clock { @[sym] = count(); }'
B='pmc:::cpu-clock /pid > 0 && period >= 1000/ { @s = sum(period); }'

# best_of CMD...: the smallest wall time in seconds over $RUNS runs (output discarded).
best_of() {
  local best="" t0 t1 d
  for _ in $(seq "$RUNS"); do
    # bash's own clock: spawning `date` around the command added ~2 ms to every run.
    t0=$EPOCHREALTIME
    "$@" > /dev/null 2>&1
    t1=$EPOCHREALTIME
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  printf '%.3f' "$best"
}

# eval_rate PROGRAM: best "M samples/s" of the evaluation alone, from --stats.
eval_rate() {
  local best=0 r
  for _ in $(seq "$RUNS"); do
    r=$("$CULPRIT" trace -q --stats -i "$FILE" -e "$1" 2>&1 >/dev/null | sed -n 's/.*= \([0-9.]*\) M samples\/s.*/\1/p')
    if [ "$(echo "$r > $best" | bc -l)" = 1 ]; then best=$r; fi
  done
  echo "$best"
}

N=$("$CULPRIT" trace -q -i "$FILE" --format json -e 'pmc:::cpu-clock { @n = count(); }' | sed -n 's/.*"value":\([0-9]*\).*/\1/p')
echo "file: $FILE ($N cpu-clock samples)"

# Correctness first: B's sum and A's total agree with awk over perf script.
cs=$("$CULPRIT" trace -q -i "$FILE" --format json -e "$B" | sed -n 's/.*"value":\([0-9]*\).*/\1/p')
ps=$(perf script -i "$FILE" -F pid,period 2>/dev/null | awk '$1 > 0 && $2 >= 1000 { s += $2 } END { printf "%.0f\n", s }')
[ "$cs" = "$ps" ] || { echo "bench: sums differ: culprit $cs, perf script|awk $ps" >&2; exit 1; }
echo "check: B sum = $cs (culprit) = $ps (perf script | awk)"

base=$(best_of "$CULPRIT" trace -q -i "$FILE" -e 'BEGIN { }')
echo "decode only (streaming, no clause matches): ${base} s"
printf '| program | culprit trace wall | culprit evaluate only (1 core) | perf script \\| awk wall | speed-up |\n|---|---|---|---|---|\n'
for p in A B; do
  prog=${!p}
  cw=$(best_of "$CULPRIT" trace -q -i "$FILE" -e "$prog")
  er=$(eval_rate "$prog")
  if [ "$p" = A ]; then
    pw=$(best_of sh -c "perf script -i '$FILE' -F sym 2>/dev/null | awk '{ c[\$1]++ } END { for (k in c) print c[k], k }' | sort -n")
  else
    pw=$(best_of sh -c "perf script -i '$FILE' -F pid,period 2>/dev/null | awk '\$1 > 0 && \$2 >= 1000 { s += \$2 } END { printf \"%.0f\\n\", s }'")
  fi
  printf '| %s | %s s (%.1f M samples/s) | %s M samples/s | %s s (%.2f M samples/s) | %.1fx |\n' \
    "$p" "$cw" "$(echo "$N / $cw / 1000000" | bc -l)" "$er" "$pw" "$(echo "$N / $pw / 1000000" | bc -l)" \
    "$(echo "$pw / $cw" | bc -l)"
done
