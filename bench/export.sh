#!/usr/bin/env bash
# Benchmark (not a test): culprit's exports against the pipelines users run today, on a
# ~1M-sample `-g` recording, in one run: wall time and peak RSS (GNU time) of
#   culprit export --format folded   vs  perf script | inferno-collapse-perf
#   culprit flamegraph               vs  perf script | inferno-collapse-perf | inferno-flamegraph
#   culprit export --format firefox  vs  samply import --save-only   (when culprit has firefox)
# A pipeline's time is its wall time; its peak RSS is the biggest of its processes'.
# Prints a markdown table with the ratios; docs/performance.md keeps the latest results.
#
#   bench/export.sh                      # record (once) and time everything
#   SAMPLES_S=60 FREQ=20000 bench/export.sh
#
# Needs: perf, GNU time (/usr/bin/time; `apt-get install time`), inferno
# (`cargo install --locked inferno`), samply for the firefox row (`cargo install --locked
# samply`), a release build of culprit (built here if missing). The recording is kept in $OUT
# and reused; delete it to record again.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-export}
FREQ=${FREQ:-20000}              # cpu-clock sampling frequency per thread
SAMPLES_S=${SAMPLES_S:-50}       # seconds of CPU to record: FREQ * SAMPLES_S samples
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
TIME=/usr/bin/time
export PATH="$HOME/.cargo/bin:$PATH"

command -v perf >/dev/null || { echo "bench: perf is not installed" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench: GNU time missing: apt-get install time" >&2; exit 2; }
command -v inferno-collapse-perf >/dev/null && command -v inferno-flamegraph >/dev/null ||
  { echo "bench: inferno missing: cargo install --locked inferno" >&2; exit 2; }
[ -x "$CULPRIT" ] || cargo build --release -p culprit-cli
mkdir -p "$OUT"

# The recording: `culprit record -g` (frame pointers) of two copies of the shares workload
# (main -> heavy/light, plus the kernel's frames of interrupts and page faults), for
# SAMPLES_S seconds of CPU in all, at FREQ Hz: ~FREQ * SAMPLES_S samples.
if [ ! -s "$OUT/bench.data" ]; then
  make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
  units=$((SAMPLES_S * 126 / 2))   # one unit is ~8 ms of CPU; two copies
  echo "bench: recording 2 x shares $units at $FREQ Hz with -g" >&2
  "$CULPRIT" record -q -g -e cpu-clock -F "$FREQ" -o "$OUT/bench.data" -- \
    sh -c "target/workloads/shares $units & target/workloads/shares $units; wait" > /dev/null
fi
samples=$(perf report -i "$OUT/bench.data" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')

# Runs a command line (in bash, so pipelines count as one) with its output to /dev/null;
# prints "seconds maxrss_kb" (the biggest process of a pipeline: GNU time on each stage).
measure() {
  local dir log cmd=$1
  dir=$(mktemp -d)
  # Every stage of the pipeline runs under its own GNU time, each writing its own log.
  local stages=() i=0 stage
  IFS='|' read -r -a stages <<< "$cmd"
  local timed=""
  for stage in "${stages[@]}"; do
    timed+="${timed:+ | }$TIME -f '%M' -o $dir/rss.$i $stage"
    i=$((i + 1))
  done
  local start end
  start=$(date +%s.%N)
  bash -c "$timed" > /dev/null 2> "$dir/err" || { echo "bench: failed: $cmd" >&2; cat "$dir/err" >&2; }
  end=$(date +%s.%N)
  local rss
  rss=$(cat "$dir"/rss.* | sort -n | tail -1)
  awk -v s="$start" -v e="$end" -v r="$rss" 'BEGIN { printf "%.3f %d\n", e - s, r }'
  rm -rf "$dir"
}

# Warm the page cache and symbol caches once.
perf script -i "$OUT/bench.data" > /dev/null 2>&1 || true
"$CULPRIT" export -i "$OUT/bench.data" --format folded -o /dev/null --summary none > /dev/null 2>&1 || true

D="$OUT/bench.data"
echo "File: bench.data, $samples samples ($(du -h "$D" | cut -f1)), culprit $("$CULPRIT" --version | awk '{print $2}'), $(perf --version)"
echo
echo "| export | reference pipeline | reference | culprit | speed-up | reference RSS | culprit RSS | RSS ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
row() {
  local name=$1 refname=$2 ref=$3 mine=$4
  read -r rt rm < <(measure "$ref")
  read -r ct cm < <(measure "$mine")
  awk -v n="$name" -v rn="$refname" -v rt="$rt" -v rm="$rm" -v ct="$ct" -v cm="$cm" \
    'BEGIN { printf "| %s | %s | %.2f s | %.2f s | %.1fx | %.0f MB | %.0f MB | %.2fx |\n", n, rn, rt, ct, (ct > 0 ? rt / ct : 0), rm / 1024, cm / 1024, (rm > 0 ? cm / rm : 0) }'
}

row "folded" "perf script \\| inferno-collapse-perf" \
  "perf script -i $D | inferno-collapse-perf" \
  "$CULPRIT export -i $D --format folded --summary none"
row "flame graph (SVG)" "perf script \\| inferno-collapse-perf \\| inferno-flamegraph" \
  "perf script -i $D | inferno-collapse-perf | inferno-flamegraph" \
  "$CULPRIT flamegraph -i $D -o /dev/stdout"
if "$CULPRIT" export --help 2>/dev/null | grep -q firefox; then
  if command -v samply >/dev/null; then
    row "firefox" "samply import --save-only" \
      "samply import --save-only -o $OUT/samply.json $D" \
      "$CULPRIT export -i $D --format firefox -o $OUT/culprit.json --summary none"
  else
    echo "| firefox | samply import | (samply missing: cargo install --locked samply) | | | | | |"
  fi
else
  echo "| firefox | samply import | (culprit has no firefox export yet: row skipped) | | | | | |"
fi
