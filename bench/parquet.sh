#!/usr/bin/env bash
# Benchmark (not a test): `culprit export --format parquet` on a ~2M-sample `-g` recording:
# export rate in samples per second of CPU (user + sys: the rate per core), wall time, peak
# RSS, and the Parquet bytes per sample against the perf.data's. The folded export of the
# same file (one read, stacks aggregated, symbolized once) is the baseline of reading.
# Prints a markdown table; docs/fleet.md keeps the latest results.
#
#   bench/parquet.sh                         # record (once) and measure
#   SAMPLES_S=100 FREQ=20000 bench/parquet.sh
#
# Needs: GNU time (/usr/bin/time; `apt-get install time`), a release build of culprit
# (built here if missing). The recording is kept in $OUT and reused; delete it to record
# again.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-parquet}
FREQ=${FREQ:-20000}              # cpu-clock sampling frequency
SAMPLES_S=${SAMPLES_S:-100}      # seconds of CPU to record: FREQ * SAMPLES_S samples
RUNS=${RUNS:-5}                  # the best of RUNS runs is kept
. bench/lib.sh

bench_need perf
bench_build
mkdir -p "$OUT"

# The recording: `culprit record -g` (frame pointers) of the shares workload for SAMPLES_S
# seconds of CPU at FREQ Hz (bench/lib.sh).
D="$OUT/bench.data"
bench_record_shares "$D" "$SAMPLES_S" "$FREQ" 1

# Runs a culprit export RUNS times; prints the best "cpu_seconds wall_seconds maxrss_kb".
best() {
  local i line bestline=""
  for i in $(seq "$RUNS"); do
    line=$("$TIME" -f '%U %S %e %M' "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.3f %.3f %d\n", $1 + $2, $3, $4 }')
    if [ -z "$bestline" ] || awk -v a="$line" -v b="$bestline" 'BEGIN { split(a, x); split(b, y); exit !(x[1] < y[1]) }'; then
      bestline=$line
    fi
  done
  echo "$bestline"
}

rm -rf "$OUT/pq"
summary=$("$CULPRIT" export --format parquet -i "$D" -o "$OUT/pq" --summary json)
samples=$(echo "$summary" | python3 -c 'import json, sys; print(json.load(sys.stdin)["samples"])')
pq_bytes=$(echo "$summary" | python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes"])')
data_bytes=$(stat -L -c %s "$D")
read -r pc pw pm < <(best "$CULPRIT" export --format parquet -i "$D" -o "$OUT/pq" --summary none)
read -r fc fw fm < <(best "$CULPRIT" export --format folded -i "$D" -o "$OUT/out.folded" --summary none)

echo "File: bench.data, $samples samples, $data_bytes bytes; culprit $("$CULPRIT" --version | awk '{print $2}'); best of $RUNS"
echo
echo "| export | CPU (user+sys) | samples/s per core | wall | peak RSS | bytes | bytes/sample | vs perf.data |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
awk -v n="$samples" -v c="$pc" -v w="$pw" -v m="$pm" -v b="$pq_bytes" -v d="$data_bytes" 'BEGIN {
  printf "| parquet | %.3f s | %.2f M | %.2f s | %.0f MB | %.1f MB | %.2f | %.3fx |\n", c, n / c / 1e6, w, m / 1024, b / 1e6, b / n, b / d }'
awk -v n="$samples" -v c="$fc" -v w="$fw" -v m="$fm" -v d="$data_bytes" 'BEGIN {
  printf "| folded (read + symbolize baseline) | %.3f s | %.2f M | %.2f s | %.0f MB | | | |\n", c, n / c / 1e6, w, m / 1024 }'
awk -v n="$samples" -v d="$data_bytes" 'BEGIN { printf "| perf.data | | | | | %.1f MB | %.2f | 1x |\n", d / 1e6, d / n }'
