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

# ---------------------------------------------------------------------------------------
# Recording modes (issue 21): what each costs at 1 kHz with call chains, on a ~1 s run of
# workloads/shares. For each mode, the median wall time as a ratio to the bare workload and
# to `perf record` with the same settings, and the file's bytes per sample (culprit, perf).
#
#   MODES_FREQ=1000 MODES_UNITS=100 bench/record.sh
#   SKIP_MODES=1 bench/record.sh    # only the table above
#
# A mode is one line `name|culprit flags|perf flags` in MODE_LINES; a mode whose culprit
# flag `culprit record --help` does not list is skipped (so a new mode, e.g. off-CPU, is
# one line here: `off-cpu|--off-cpu|--off-cpu`).
[ -z "${SKIP_MODES:-}" ] || exit 0
MFREQ=${MODES_FREQ:-1000}
MUNITS=${MODES_UNITS:-100}
MODE_LINES=${MODE_LINES:-"plain||
z1|-z|-z
z9|--compression-level 9|--compression-level=9
switch-1M|--switch-output=1M|--switch-output=1M
overwrite|--overwrite|--overwrite
off-cpu|--off-cpu|--off-cpu"}
count_samples() { perf script -F period -i "$1" 2>/dev/null | grep -c . || true; }
size_of() { cat "$@" 2>/dev/null | wc -c; }

: > "$OUT/bare.txt"
for i in $(seq "$REPS"); do
  t0=$(now_ns); "$WORK" "$MUNITS" >/dev/null; t1=$(now_ns)
  echo $(( (t1 - t0) / 1000000 )) >> "$OUT/bare.txt"
done
bare=$(median < "$OUT/bare.txt")
echo
echo "modes at $MFREQ Hz, cpu-clock -g, workload shares $MUNITS (bare: ${bare} ms, median of $REPS)"
printf '%-10s %9s %9s %9s %9s %10s %9s %9s\n' mode c_ms p_ms c/bare p/bare c/perf c_B/smp p_B/smp
help=$("$CULPRIT" record --help)
while IFS='|' read -r name cflags pflags; do
  [ -n "$name" ] || continue
  flag=${cflags%% *}; flag=${flag%%=*}
  if [ -n "$flag" ] && ! grep -q -- "$flag" <<< "$help"; then
    printf '%-10s (culprit has no %s yet: skipped)\n' "$name" "$flag"; continue
  fi
  : > "$OUT/mc.txt"; : > "$OUT/mp.txt"
  for i in $(seq "$REPS"); do
    for tool in culprit perf; do
      if [ $((i % 2)) -eq 0 ]; then tool=$([ "$tool" = culprit ] && echo perf || echo culprit); fi
      d="$OUT/mode-$tool"; rm -rf "$d"; mkdir -p "$d"
      t0=$(now_ns)
      if [ "$tool" = culprit ]; then
        # shellcheck disable=SC2086
        "$CULPRIT" record -q -e cpu-clock -F "$MFREQ" -g $cflags -o "$d/perf.data" -- "$WORK" "$MUNITS" >/dev/null 2>&1
      else
        # shellcheck disable=SC2086
        perf record -q -e cpu-clock -F "$MFREQ" -g $pflags -o "$d/perf.data" -- "$WORK" "$MUNITS" >/dev/null 2>&1
      fi
      t1=$(now_ns)
      echo $(( (t1 - t0) / 1000000 )) >> "$OUT/m${tool:0:1}.txt"
    done
  done
  c=$(median < "$OUT/mc.txt"); p=$(median < "$OUT/mp.txt")
  # Bytes per sample over every file the last run left (rotation makes several).
  cs=0; ps=0
  for f in "$OUT"/mode-culprit/perf.data*; do cs=$((cs + $(count_samples "$f"))); done
  for f in "$OUT"/mode-perf/perf.data*; do ps=$((ps + $(count_samples "$f"))); done
  cb=$(size_of "$OUT"/mode-culprit/perf.data*); pb=$(size_of "$OUT"/mode-perf/perf.data*)
  awk -v n="$name" -v c="$c" -v p="$p" -v b="$bare" -v cb="$cb" -v pb="$pb" -v cs="$cs" -v ps="$ps" 'BEGIN {
    printf "%-10s %9d %9d %9.2f %9.2f %10.2f %9.1f %9.1f\n", n, c, p, c / b, p / b, c / p,
      (cs ? cb / cs : 0), (ps ? pb / ps : 0) }'
done <<< "$MODE_LINES"
echo "(c/bare, p/bare: wall time under culprit/perf record over the bare run; c/perf: culprit over perf;"
echo " B/smp: bytes of the files over the samples in them; overwrite keeps only the ring's last data)"
