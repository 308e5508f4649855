#!/usr/bin/env bash
# culprit record vs perf record: wall time and lost samples on the same ~0.5 s workload, same
# events and rate. Prints the median of REPS runs of each and the ratios culprit/perf.
#
#   bench/record.sh                 # cpu-clock (+ cycles,instructions,branch-misses with a PMU)
#   REPS=9 FREQ=10000 bench/record.sh
#   EVENTS=cpu-clock,task-clock bench/record.sh
#   NO_BUILD=1 bench/record.sh      # use the existing target/release/culprit
#
# Goal: culprit wall time <= 0.8x perf's, and never more lost samples.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-7}
FREQ=${FREQ:-4000}
UNITS=${UNITS:-50}            # workloads/shares units: ~0.5 s here
OUT=target/bench-record
mkdir -p "$OUT"

[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p culprit-cli
make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
CULPRIT=$PWD/target/release/culprit
WORK=$PWD/target/workloads/shares
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

configs=()
if [ -n "${EVENTS:-}" ]; then
  configs+=("$EVENTS")
else
  configs+=("cpu-clock")
  if perf stat -x, -e instructions true 2>&1 | grep -q '^[0-9]'; then
    configs+=("cycles,instructions,branch-misses")
  else
    echo "(no usable hardware PMU here: benchmarking software events only)"
  fi
fi

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
lost_of() { perf report -i "$1" --stdio 2>/dev/null | awk '/Total Lost Samples:/ && !n++ {print $NF}'; }
samples_of() { perf script -i "$1" 2>/dev/null | wc -l; }

printf '%-36s %6s %10s %10s %8s %8s %9s %9s %7s\n' events freq "culprit_ms" "perf_ms" "c_lost" "p_lost" "c_samples" "p_samples" ratio
for ev in "${configs[@]}"; do
  : > "$OUT/c.txt"; : > "$OUT/p.txt"; : > "$OUT/cl.txt"; : > "$OUT/pl.txt"; : > "$OUT/cs.txt"; : > "$OUT/ps.txt"
  for i in $(seq "$REPS"); do
    # Alternate the order so neither tool always runs on a warmer cache.
    for tool in culprit perf; do
      if [ $((i % 2)) -eq 0 ]; then tool=$([ "$tool" = culprit ] && echo perf || echo culprit); fi
      if [ "$tool" = culprit ]; then
        t0=$(now_ns); "$CULPRIT" record -q -e "$ev" -F "$FREQ" -o "$OUT/c.data" -- "$WORK" "$UNITS" >/dev/null; t1=$(now_ns)
        echo $(( (t1 - t0) / 1000000 )) >> "$OUT/c.txt"
        lost_of "$OUT/c.data" >> "$OUT/cl.txt"; samples_of "$OUT/c.data" >> "$OUT/cs.txt"
      else
        t0=$(now_ns); perf record -q -e "$ev" -F "$FREQ" -o "$OUT/p.data" -- "$WORK" "$UNITS" >/dev/null 2>&1; t1=$(now_ns)
        echo $(( (t1 - t0) / 1000000 )) >> "$OUT/p.txt"
        lost_of "$OUT/p.data" >> "$OUT/pl.txt"; samples_of "$OUT/p.data" >> "$OUT/ps.txt"
      fi
    done
  done
  c=$(median < "$OUT/c.txt"); p=$(median < "$OUT/p.txt")
  cl=$(median < "$OUT/cl.txt"); pl=$(median < "$OUT/pl.txt")
  cs=$(median < "$OUT/cs.txt"); ps=$(median < "$OUT/ps.txt")
  ratio=$(awk -v c="$c" -v p="$p" 'BEGIN {printf "%.2f", c / p}')
  printf '%-36s %6s %10s %10s %8s %8s %9s %9s %7s\n' "$ev" "$FREQ" "$c" "$p" "$cl" "$pl" "$cs" "$ps" "$ratio"
done
echo "(medians of $REPS runs; ratio = culprit wall time / perf wall time; workload: shares $UNITS)"
