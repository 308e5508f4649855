#!/usr/bin/env bash
# Benchmark (not a test): every comparison of the performance goals (issue 36) in one run,
# printed as ONE markdown table: mode, culprit's time, the reference tool and its time, the
# ratio, the peak RSS of both. Each figure is the median of REPS interleaved runs (the
# reference and culprit take turns to run first); peak RSS is the biggest over the runs.
# The load average is printed before and after. docs/performance.md keeps the latest table.
#
#   bench/all.sh                        # small defaults: a few minutes
#   REPS=5 XZ_MB=120 SHARES_S=50 bench/all.sh   # the issue's sizes (~1 M samples each)
#   SKIP=record bench/all.sh            # skip groups: report, export, parquet, record
#
# Recordings (kept in $OUT and reused; delete them to record again):
#   xz.data      perf record -g of xz -9 -T2 on XZ_MB MB of base64 (a real program; report,
#                folded and Parquet rows)
#   shares.data  culprit record -g of 2 x workloads/shares, SHARES_S s of CPU at 20 kHz
#                (frame-pointer stacks with the kernel's; export rows)
# Needs: perf, xz, GNU time, inferno (`cargo install --locked inferno`), samply for the
# Firefox row (`cargo install --locked samply`; without it the row says so), a release build
# of culprit (built here if missing: default features).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

OUT=${OUT:-target/bench-all}
REPS=${REPS:-3}
XZ_MB=${XZ_MB:-40}              # ~7 k samples per MB at 10 kHz
XZ_FREQ=${XZ_FREQ:-10000}
SHARES_S=${SHARES_S:-10}        # seconds of CPU: 20 k samples each
SHARES_FREQ=${SHARES_FREQ:-20000}
REC_UNITS=${REC_UNITS:-100}     # workloads/shares units for the record rows (~0.8 s)
REC_PHASES_MS=${REC_PHASES_MS:-600}  # workloads/phases (2 threads in its second half)
SKIP=${SKIP:-}
export REPS

bench_need perf xz inferno-collapse-perf inferno-flamegraph
bench_build
mkdir -p "$OUT"
bench_record_xz "$OUT/xz.data" "$XZ_MB" "$XZ_FREQ"
bench_record_shares "$OUT/shares.data" "$SHARES_S" "$SHARES_FREQ"
bench_workloads shares phases
XZ="$OUT/xz.data"
SH="$OUT/shares.data"
xz_n=$(bench_samples "$XZ")
sh_n=$(bench_samples "$SH")
skip() { [[ ",$SKIP," == *",$1,"* ]]; }

# Warm the page cache and the symbol caches once.
for f in "$XZ" "$SH"; do
  perf report -i "$f" --stdio -g none --sort dso > /dev/null 2>&1 || true
  "$CULPRIT" report -i "$f" --sort dso > /dev/null 2>&1 || true
done

echo "culprit $("$CULPRIT" --version | awk '{print $2}'), $(perf --version), $(nproc) CPUs;" \
  "xz.data: $xz_n samples ($(du -h "$XZ" | cut -f1)), shares.data: $sh_n samples ($(du -h "$SH" | cut -f1));" \
  "medians of $REPS interleaved runs; load average before: $(bench_load)"
echo
echo "| mode | recording | culprit | reference | reference time | ratio | culprit RSS | reference RSS | goal |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

# A row comparing culprit with a reference command on time: the ratio is the speed-up
# (reference wall / culprit wall). Usage: versus MODE RECORDING REFNAME REFCMD CULPRITCMD GOAL
versus() {
  local mode=$1 rec=$2 refname=$3 ref=$4 mine=$5 goal=$6 r c
  { read -r c; read -r r; } < <(bench_interleaved "$mine" "$ref")
  set -- $c $r
  awk -v m="$mode" -v rec="$rec" -v rn="$refname" -v ct="$1" -v cm="$3" -v rt="$4" -v rm="$6" -v g="$goal" 'BEGIN {
    printf "| %s | %s | %.2f s | %s | %.2f s | %.1fx | %.0f MB | %.0f MB | %s |\n",
      m, rec, ct, rn, rt, (ct > 0 ? rt / ct : 0), cm / 1024, rm / 1024, g }'
}

if ! skip report; then
  R="$CULPRIT report -i $XZ --width 0"
  P="perf report -i $XZ --stdio"
  versus "report --no-children" "xz ($xz_n)" "perf report --no-children -g none" \
    "$P --no-children -g none" "$R --no-children" ">= 10x"
  versus "report --children" "xz ($xz_n)" "perf report --children -g none" \
    "$P --children -g none" "$R --children" ">= 10x"
  versus "report --children -g caller" "xz ($xz_n)" "perf report --children -g caller" \
    "$P --children -g caller" "$R --children -g caller" ">= 10x"
  versus "report --no-children -g callee" "xz ($xz_n)" "perf report --no-children -g callee" \
    "$P --no-children -g callee" "$R --no-children -g callee" ">= 10x"
  versus "report --children --sort dso,sym" "xz ($xz_n)" "perf report --children --sort dso,sym -g none" \
    "$P --children --sort dso,sym -g none" "$R --children --sort dso,sym" ">= 10x"
fi

if ! skip export; then
  for rec in "xz $XZ $xz_n" "shares $SH $sh_n"; do
    set -- $rec
    versus "export --format folded" "$1 ($3)" "perf script \\| inferno-collapse-perf" \
      "perf script -i $2 | inferno-collapse-perf" \
      "$CULPRIT export -i $2 --format folded --summary none" ">= 10x"
    versus "flamegraph (SVG)" "$1 ($3)" "perf script \\| inferno-collapse-perf \\| inferno-flamegraph" \
      "perf script -i $2 | inferno-collapse-perf | inferno-flamegraph" \
      "$CULPRIT flamegraph -i $2 -o /dev/stdout" ">= 10x"
  done
  if command -v samply >/dev/null; then
    versus "export --format firefox" "shares ($sh_n)" "samply import --save-only" \
      "samply import --save-only -o $OUT/samply.json $SH" \
      "$CULPRIT export -i $SH --format firefox -o $OUT/culprit.json --summary none" ">= 3x"
  else
    echo "| export --format firefox | shares ($sh_n) | | samply import (missing: cargo install --locked samply) | | | | | >= 3x |"
  fi
fi

if ! skip parquet; then
  for rec in "xz $XZ $xz_n" "shares $SH $sh_n"; do
    set -- $rec
    rm -rf "$OUT/pq"
    read -r w c m < <(bench_interleaved "$CULPRIT export --format parquet -i $2 -o $OUT/pq --summary none")
    awk -v rec="$1 ($3)" -v n="$3" -v w="$w" -v c="$c" -v m="$m" 'BEGIN {
      printf "| export --format parquet | %s | %.2f s (%.2f s CPU) | samples per CPU second | %.2f M/s/core | %.2fx of the goal | %.0f MB | | >= 5 M/s/core |\n",
        rec, w, c, n / c / 1e6, n / c / 5e6, m / 1024 }'
  done
fi

# Recording overhead: the bare workload, culprit record and perf record with the same
# settings, interleaved; culprit's and perf's wall time over the bare run's.
if ! skip record; then
  for freq in 1000 4000; do
    for work in "shares target/workloads/shares $REC_UNITS" "phases-2-threads target/workloads/phases $REC_PHASES_MS"; do
      set -- $work
      name=$1; shift
      cmd="$*"
      goal=$([ "$freq" = 1000 ] && echo "<= 1.02x bare" || echo "<= 1.05x bare")
      { read -r bw _ _; read -r cw _ cm; read -r pw _ pm; } < <(bench_interleaved "$cmd" \
        "$CULPRIT record -q -g -e cpu-clock -F $freq -o $OUT/rec-c.data -- $cmd" \
        "perf record -q -g -e cpu-clock -F $freq -o $OUT/rec-p.data -- $cmd")
      awk -v m="record -g $freq Hz" -v rec="$name (bare $bw s)" -v b="$bw" -v ct="$cw" -v cm="$cm" -v pt="$pw" -v pm="$pm" -v g="$goal" 'BEGIN {
        printf "| %s | %s | %.2f s = %.3fx bare | perf record | %.2f s = %.3fx bare | %.2fx of perf'"'"'s time | %.0f MB | %.0f MB | %s |\n",
          m, rec, ct, ct / b, pt, pt / b, ct / pt, cm / 1024, pm / 1024, g }'
    done
  done
fi

echo
echo "Load average after: $(bench_load)"
