#!/usr/bin/env bash
# Benchmark (not a test): the live stream of `culprit trace` / `culprit top` against
# `perf record` at a high sampling rate, and `culprit top`'s memory over time.
#
#   bench/live.sh                 # 10 kHz cpu-clock on workloads/shares, then top for 60 s
#   HZ=4000 UNITS=600 TOP_SECS=20 bench/live.sh
#
# Part 1: the same workload (shares UNITS) run alone, under `perf record -F HZ`, under
# `culprit record -F HZ` (file), and under `culprit trace` live with
# `profile:::hz-HZ { @[sym] = count(); }`. Prints wall time, samples delivered, samples per
# second of wall time and lost samples (trace: the note "the kernel lost N samples").
# Part 2: `culprit top -a --stdio -e cpu-clock -F 4000 --duration TOP_SECS`: RSS of the culprit
# process every 10 s (VmRSS from /proc), with the samples shown so far.
set -euo pipefail
cd "$(dirname "$0")/.."

HZ=${HZ:-10000}
UNITS=${UNITS:-400}
TOP_SECS=${TOP_SECS:-60}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
command -v perf >/dev/null || { echo "bench: perf is not installed" >&2; exit 2; }
[ -x "$CULPRIT" ] || cargo build --release -p culprit-cli
make -s -C workloads OUT="$PWD/target/workloads" "$PWD/target/workloads/shares"
W=target/workloads/shares
OUT=target/bench-live
mkdir -p "$OUT"

now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; }

echo "== live stream vs perf record: cpu-clock at $HZ Hz, shares $UNITS"
t0=$(now); "$W" "$UNITS" > /dev/null; t1=$(now)
echo "workload alone:        $(secs "$t0" "$t1") s"

t0=$(now); perf record -q -e cpu-clock -F "$HZ" -o "$OUT/perf.data" -- "$W" "$UNITS" > /dev/null 2> "$OUT/perf.err"; t1=$(now)
n=$(perf script -i "$OUT/perf.data" -F ip 2>/dev/null | wc -l)
lost=$(perf report -i "$OUT/perf.data" --stats 2>/dev/null | awk '/LOST events|LOST_SAMPLES events/ {print $(NF-1)}' | head -1 || true)
echo "perf record (file):    $(secs "$t0" "$t1") s, samples $n, lost ${lost:-0}"

t0=$(now); "$CULPRIT" record -q -e cpu-clock -F "$HZ" --format json -o "$OUT/culprit.data" -- "$W" "$UNITS" > "$OUT/record.json" 2> /dev/null; t1=$(now)
echo "culprit record (file): $(secs "$t0" "$t1") s, $(tail -1 "$OUT/record.json" | sed 's/.*"samples":\([0-9]*\).*"lost_samples":\([0-9]*\).*/samples \1, lost \2/')"

t0=$(now)
"$CULPRIT" trace -q --format json -e "profile:::hz-$HZ { @[sym] = count(); }" -- "$W" "$UNITS" > "$OUT/trace.json" 2> "$OUT/trace.err"
t1=$(now)
seen=$(grep -o '"seen":[0-9]*' "$OUT/trace.json" | cut -d: -f2)
lost=$(cat "$OUT/trace.json" "$OUT/trace.err" | grep -o 'lost [0-9]* samples' | head -1 | awk '{print $2}' || true)
wall=$(secs "$t0" "$t1")
echo "culprit trace (live):  $wall s, samples delivered $seen ($(echo "$seen $wall" | awk '{printf "%.0f", $1 / $2}')/s of wall time), lost ${lost:-0}"

echo
echo "== culprit top -a for $TOP_SECS s: RSS of the culprit process"
"$CULPRIT" top -a --stdio -e cpu-clock -F 4000 -d 1 --duration "$TOP_SECS" > "$OUT/top.out" 2> "$OUT/top.err" &
pid=$!
for ((s = 10; s <= TOP_SECS; s += 10)); do
  sleep 10
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo gone)
  shown=$(grep '^culprit top:' "$OUT/top.out" | tail -1 | cut -d, -f2 || true)
  echo "after ${s} s: RSS ${rss} kB,${shown}"
done
wait "$pid" || true
tail -1 "$OUT/top.err"
