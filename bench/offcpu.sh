#!/usr/bin/env bash
# The cost of `culprit record --off-cpu`: wall time against the bare run and against the
# same recording without --off-cpu, and against perf recording the same kernel data
# (cpu-clock + sched:sched_switch with call chains + context-switch records; perf 6.1's own
# --off-cpu needs a BPF-enabled build, which Debian's is not), plus bytes per sample.
# Medians of REPS runs, on two workloads: one that blocks 2,000 times (workloads/offcpu
# sleep) and one that never does (workloads/shares).
#
#   bench/offcpu.sh
#   REPS=9 FREQ=1000 NO_BUILD=1 bench/offcpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
FREQ=${FREQ:-1000}
OUT=target/bench-offcpu
mkdir -p "$OUT"
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p culprit-cli
make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/offcpu" "$PWD/target/workloads/shares"
CULPRIT=$PWD/target/release/culprit
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
samples_of() { perf script -i "$1" 2>/dev/null | wc -l; }

run() { # name file cmd...
  local name=$1 file=$2; shift 2
  : > "$OUT/$name.ms"
  for _ in $(seq "$REPS"); do
    t0=$(now_ns); "$@" >/dev/null 2>&1; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000000 )) >> "$OUT/$name.ms"
  done
  ms=$(median < "$OUT/$name.ms")
  if [ -n "$file" ]; then
    bytes=$(stat -c %s "$file"); n=$(samples_of "$file")
    printf '  %-28s %8s ms %8.2fx bare %9s samples %7s bytes/sample\n' "$name" "$ms" \
      "$(awk -v a="$ms" -v b="$bare" 'BEGIN {print a / b}')" "$n" "$(( bytes / (n > 0 ? n : 1) ))"
  else
    bare=$ms
    printf '  %-28s %8s ms\n' "$name" "$ms"
  fi
}

for wl in "offcpu sleep 100" "shares 30"; do
  read -r -a W <<< "$PWD/target/workloads/$wl"
  echo "workload: $wl (medians of $REPS runs, cpu-clock at $FREQ Hz)"
  run bare "" "${W[@]}"
  run "culprit record" "$OUT/c.data" "$CULPRIT" record -q -F "$FREQ" -e cpu-clock -o "$OUT/c.data" -- "${W[@]}"
  run "culprit record --off-cpu" "$OUT/o.data" "$CULPRIT" record -q -F "$FREQ" -e cpu-clock --off-cpu -o "$OUT/o.data" -- "${W[@]}"
  run "perf record (switch data)" "$OUT/p.data" perf record -q -F "$FREQ" -e cpu-clock -e sched:sched_switch -g --switch-events -o "$OUT/p.data" -- "${W[@]}"
done
