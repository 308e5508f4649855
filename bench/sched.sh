#!/usr/bin/env bash
# The cost of `culprit sched record` (scheduler tracepoints on every CPU, each event a
# sample: switch, stat_runtime, wakeup/waking, wakeup_new, fork, migrate_task) as a ratio
# to a bare run of the workload, next to perf's ratio for `perf sched record` on the same
# workload. Medians of REPS runs of workloads/schedmix (4 threads, ROUNDS rounds of 2 ms of
# CPU and a 1 ms sleep: some 1,000 context switches a second per thread).
#
#   bench/sched.sh
#   REPS=9 ROUNDS=200 NO_BUILD=1 bench/sched.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-200}
OUT=target/bench-sched
mkdir -p "$OUT"
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p culprit-cli
CULPRIT=${CULPRIT:-$PWD/target/release/culprit}
make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/schedmix"
PROG=$PWD/target/workloads/schedmix
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run() { # name file cmd...
  local name=$1 file=$2; shift 2
  : > "$OUT/$name.ms"
  for _ in $(seq "$REPS"); do
    t0=$(now_ns); "$@" >/dev/null 2>&1; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000000 )) >> "$OUT/$name.ms"
  done
  ms=$(median < "$OUT/$name.ms")
  if [ -n "$file" ]; then
    printf '  %-24s %8s ms %8.2fx bare %10s bytes\n' "$name" "$ms" \
      "$(awk -v a="$ms" -v b="$bare" 'BEGIN {print a / b}')" "$(stat -c %s "$file")"
  else
    bare=$ms
    printf '  %-24s %8s ms\n' "$name" "$ms"
  fi
}

echo "schedmix 4 $ROUNDS, median of $REPS runs"
run bare "" "$PROG" 4 "$ROUNDS"
run "perf sched record" "$OUT/perf.data" perf sched record -q -o "$OUT/perf.data" -- "$PROG" 4 "$ROUNDS"
run "culprit sched record" "$OUT/culprit.data" "$CULPRIT" sched record -q -o "$OUT/culprit.data" -- "$PROG" 4 "$ROUNDS"
