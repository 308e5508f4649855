#!/usr/bin/env bash
# Benchmark (not a test): culprit's exports against the pipelines users run today, on a
# ~1M-sample `-g` recording, in one run: wall time, CPU time and peak RSS (GNU time) of
#   culprit export --format folded   vs  perf script | inferno-collapse-perf
#   culprit flamegraph               vs  perf script | inferno-collapse-perf | inferno-flamegraph
#   culprit export --format firefox  vs  samply import --save-only
# A pipeline's wall time is the whole pipeline's, its CPU time the sum of its processes' (user
# + system), its peak RSS the biggest of its processes'. Each command runs REPEAT times,
# reference and culprit in turn, and the fastest run of each counts (the least disturbed by
# other work on the machine). The machine's load average is printed before and after.
# Prints a markdown table with the ratios; docs/performance.md keeps the latest results.
#
#   bench/export.sh                      # record (once) and time everything
#   SAMPLES_S=60 FREQ=20000 REPEAT=5 bench/export.sh
#
# Needs: perf, GNU time (/usr/bin/time; `apt-get install time`), inferno
# (`cargo install --locked inferno`), samply for the firefox row (`cargo install --locked
# samply`; without it the row says so and the rest runs), a release build of culprit (built
# here if missing). samply's --save-only profile has no symbols (samply symbolizes when it
# serves the profile); culprit's has them embedded. The recording is kept in $OUT and reused;
# delete it to record again.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh

OUT=${OUT:-target/bench-export}
FREQ=${FREQ:-20000}              # cpu-clock sampling frequency per thread
SAMPLES_S=${SAMPLES_S:-50}       # seconds of CPU to record: FREQ * SAMPLES_S samples
REPEAT=${REPEAT:-3}              # runs of each command; the fastest counts

bench_need perf inferno-collapse-perf inferno-flamegraph
bench_build
mkdir -p "$OUT"

# The recording: two copies of the shares workload, `culprit record -g` (bench/lib.sh).
bench_record_shares "$OUT/bench.data" "$SAMPLES_S" "$FREQ"
samples=$(bench_samples "$OUT/bench.data")
measure() { bench_measure "$@"; }

# The fastest of REPEAT runs of the reference and of culprit, taken in turn: prints
# "ref_wall ref_cpu ref_rss culprit_wall culprit_cpu culprit_rss".
best_of() {
  local ref=$1 mine=$2 t c m
  local rt="" rc="" rm="" ct="" cc="" cm=""
  for _ in $(seq "$REPEAT"); do
    read -r t c m < <(measure "$ref")
    if [ -z "$rt" ] || awk -v a="$t" -v b="$rt" 'BEGIN { exit !(a < b) }'; then rt=$t; fi
    if [ -z "$rc" ] || awk -v a="$c" -v b="$rc" 'BEGIN { exit !(a < b) }'; then rc=$c; fi
    if [ -z "$rm" ] || [ "$m" -gt "$rm" ]; then rm=$m; fi
    read -r t c m < <(measure "$mine")
    if [ -z "$ct" ] || awk -v a="$t" -v b="$ct" 'BEGIN { exit !(a < b) }'; then ct=$t; fi
    if [ -z "$cc" ] || awk -v a="$c" -v b="$cc" 'BEGIN { exit !(a < b) }'; then cc=$c; fi
    if [ -z "$cm" ] || [ "$m" -gt "$cm" ]; then cm=$m; fi
  done
  echo "$rt $rc $rm $ct $cc $cm"
}

# Warm the page cache and symbol caches once.
perf script -i "$OUT/bench.data" > /dev/null 2>&1 || true
"$CULPRIT" export -i "$OUT/bench.data" --format folded -o /dev/null --summary none > /dev/null 2>&1 || true

D="$OUT/bench.data"
load() { bench_load; }
echo "File: bench.data, $samples samples ($(du -h "$D" | cut -f1)), culprit $("$CULPRIT" --version | awk '{print $2}'), $(perf --version), $(nproc) CPUs, load average before: $(load); fastest of $REPEAT runs"
echo
echo "| export | reference pipeline | reference | culprit | speed-up | reference CPU | culprit CPU | CPU ratio | reference RSS | culprit RSS | RSS ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
row() {
  local name=$1 refname=$2 ref=$3 mine=$4
  read -r rt rc rm ct cc cm < <(best_of "$ref" "$mine")
  awk -v n="$name" -v rn="$refname" -v rt="$rt" -v rc="$rc" -v rm="$rm" -v ct="$ct" -v cc="$cc" -v cm="$cm" \
    'BEGIN { printf "| %s | %s | %.2f s | %.2f s | %.1fx | %.2f s | %.2f s | %.1fx | %.0f MB | %.0f MB | %.2fx |\n", n, rn, rt, ct, (ct > 0 ? rt / ct : 0), rc, cc, (cc > 0 ? rc / cc : 0), rm / 1024, cm / 1024, (rm > 0 ? cm / rm : 0) }'
}

row "folded" "perf script \\| inferno-collapse-perf" \
  "perf script -i $D | inferno-collapse-perf" \
  "$CULPRIT export -i $D --format folded --summary none"
row "flame graph (SVG)" "perf script \\| inferno-collapse-perf \\| inferno-flamegraph" \
  "perf script -i $D | inferno-collapse-perf | inferno-flamegraph" \
  "$CULPRIT flamegraph -i $D -o /dev/stdout"
if command -v samply >/dev/null; then
  row "firefox" "samply import --save-only" \
    "samply import --save-only -o $OUT/samply.json $D" \
    "$CULPRIT export -i $D --format firefox -o $OUT/culprit.json --summary none"
else
  echo "| firefox | samply import --save-only | (samply missing: cargo install --locked samply) | | | | | | | | |"
fi
echo
echo "Load average after: $(load)"
