#!/usr/bin/env bash
# The cost of the wall-clock recording modes as a ratio to a bare run of the workload, next
# to perf's ratio for the same data (medians of REPS runs):
#   culprit sched record   vs perf sched record          on schedmix 4 ROUNDS (scheduler
#                          tracepoints on every CPU, each event a sample)
#   culprit record --latency -e cpu-clock vs perf record -e cpu-clock --switch-events
#                          on phases MS (perf 6.1 has no --latency; these are its records)
#   culprit record --off-cpu=wakers vs --off-cpu vs perf record of the same kernel data
#                          (cpu-clock, sched_switch and sched_waking with -g,
#                          --switch-events) on offcpu pipe PIPE_ROUNDS
#   culprit lock record    vs perf lock record           on mutex 4 LOCK_ROUNDS (perf
#                          records the kernel lock tracepoints; culprit adds the futex
#                          syscalls, so it writes more)
#
#   bench/wall-clock.sh
#   REPS=9 ROUNDS=200 NO_BUILD=1 bench/wall-clock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-200}
MS=${MS:-500}
LOCK_ROUNDS=${LOCK_ROUNDS:-1000}
PIPE_ROUNDS=${PIPE_ROUNDS:-100}
OUT=target/bench-wall-clock
mkdir -p "$OUT"
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p culprit-cli
CULPRIT=${CULPRIT:-$PWD/target/release/culprit}
W=$PWD/target/workloads
make -s -C workloads OUT="$W" "$W/schedmix" "$W/phases" "$W/mutex" "$W/offcpu"
PROG=$W/schedmix
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

echo "phases $MS, median of $REPS runs"
run bare "" "$W/phases" "$MS"
run "perf record --switch-events" "$OUT/perf-lat.data" perf record -q -e cpu-clock --switch-events -o "$OUT/perf-lat.data" -- "$W/phases" "$MS"
run "culprit record --latency" "$OUT/culprit-lat.data" "$CULPRIT" record -q --latency -e cpu-clock -o "$OUT/culprit-lat.data" -- "$W/phases" "$MS"

echo "mutex 4 $LOCK_ROUNDS, median of $REPS runs"
run bare "" "$W/mutex" 4 "$LOCK_ROUNDS"
run "perf lock record" "$OUT/perf-lock.data" perf lock record -q -o "$OUT/perf-lock.data" -- "$W/mutex" 4 "$LOCK_ROUNDS"
run "culprit lock record" "$OUT/culprit-lock.data" "$CULPRIT" lock record -q -o "$OUT/culprit-lock.data" -- "$W/mutex" 4 "$LOCK_ROUNDS"

echo "offcpu pipe $PIPE_ROUNDS, median of $REPS runs"
run bare "" "$W/offcpu" pipe "$PIPE_ROUNDS"
run "culprit record --off-cpu" "$OUT/culprit-offcpu.data" "$CULPRIT" record -q --off-cpu -e cpu-clock -F 1000 -o "$OUT/culprit-offcpu.data" -- "$W/offcpu" pipe "$PIPE_ROUNDS"
run "culprit --off-cpu=wakers" "$OUT/culprit-wakers.data" "$CULPRIT" record -q --off-cpu=wakers -e cpu-clock -F 1000 -o "$OUT/culprit-wakers.data" -- "$W/offcpu" pipe "$PIPE_ROUNDS"
run "perf record (same data)" "$OUT/perf-wakers.data" perf record -q -e cpu-clock -F 1000 -e sched:sched_switch -e sched:sched_waking -g --switch-events -o "$OUT/perf-wakers.data" -- "$W/offcpu" pipe "$PIPE_ROUNDS"
