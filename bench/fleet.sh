#!/usr/bin/env bash
# Benchmark (not a test): culprit at fleet scale (issue 20). Records RECORDINGS real programs
# once (perf record -g, cpu-clock), exports each as HOSTS/RECORDINGS "hosts" (relabelled with
# --host: HOSTS Parquet exports, one directory per host as a fleet uploads them), about
# SAMPLES samples in all, then measures in one run:
#   - Parquet bytes per sample against the perf.data it came from      (goal <= 0.3x)
#   - export rate: samples per CPU-second (user+sys) of culprit export  (goal >= 5 M/s/core)
#   - culprit sql --top-functions --limit 10 over all hosts (DataFusion, wall)  (goal <= 3 s)
#   - the same query in Apache Spark (pyspark local mode, crates/cli/tests/fleet_spark.py)
#   - perf report (and culprit report) over the same perf.data files one by one
# Prints a markdown table; docs/performance.md keeps the latest results.
#
#   bench/fleet.sh                           # 100 hosts, ~100 M samples (records ~10 x 25 s)
#   SAMPLES=2000000 bench/fleet.sh           # a quick run: ~20 k samples per host
#   RECORDINGS=5 HOSTS=20 SAMPLES=10000000 bench/fleet.sh
#   CULPRIT=path/to/culprit CULPRIT_SQL=path/to/culprit-with-sql bench/fleet.sh
#
# Needs: perf, GNU time (/usr/bin/time), xz, gzip, bzip2, zstd, perl, python3 with pyspark
# and java for the Spark row (skipped with a note when missing), a release build of culprit
# with the sql feature (built here if missing: cargo build --release -p culprit-cli
# --features sql). Recordings are kept in $OUT/rec and reused while SAMPLES and RECORDINGS
# stay the same; the exports are rewritten every run.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-fleet}
SAMPLES=${SAMPLES:-100000000}   # samples in all hosts' exports
RECORDINGS=${RECORDINGS:-10}    # distinct recordings
HOSTS=${HOSTS:-100}             # exported hosts (each recording exported HOSTS/RECORDINGS times)
FREQ=${FREQ:-40000}             # cpu-clock sampling frequency (Hz)
JOBS=${JOBS:-2}                 # parallel exports
TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$TARGET_DIR/release/culprit}
CULPRIT_SQL=${CULPRIT_SQL:-$CULPRIT}   # the culprit that runs `culprit sql` (built with --features sql)
TIME=/usr/bin/time

command -v perf >/dev/null || { echo "bench: perf is not installed" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench: GNU time missing: apt-get install time" >&2; exit 2; }
[ $((HOSTS % RECORDINGS)) -eq 0 ] || { echo "bench: HOSTS must be a multiple of RECORDINGS" >&2; exit 2; }
copies=$((HOSTS / RECORDINGS))
per_rec=$((SAMPLES / HOSTS))          # samples per recording
mkdir -p "$OUT/rec" "$OUT/work"
make -s -C workloads OUT="$PWD/target/workloads" \
  "$PWD/target/workloads/shares" "$PWD/target/workloads/markup_names"

# Ten programs, each recorded alone for the seconds of CPU that give per_rec samples.
W=target/workloads
D="$OUT/work"
[ -s "$D/input.txt" ] || head -c 8M /dev/urandom | base64 > "$D/input.txt"
programs=(
  "xz -6 -c $D/input.txt"
  "gzip -9 -c $D/input.txt"
  "bzip2 -9 -c $D/input.txt"
  "zstd -19 -q -c $D/input.txt"
  "sort -S 64M $D/input.txt"
  "sha256sum $D/input.txt"
  "perl -e '\$s=0; for (1..3000000) { \$s += length(sprintf(\"%x\", \$_)) } print \$s'"
  "python3 -c 'import json; [json.dumps({\"k\": list(range(50))}) for _ in range(60000)]'"
  "$W/shares 30"
  "$W/markup_names 40 20 10 5"
)
secs=$(awk -v n="$per_rec" -v f="$FREQ" 'BEGIN { s = n / f; if (s < 0.2) s = 0.2; printf "%.2f", s }')
stamp="$OUT/rec/params"
if [ "$(cat "$stamp" 2>/dev/null)" != "$SAMPLES $RECORDINGS $FREQ" ]; then
  rm -f "$OUT"/rec/*.data
  echo "$SAMPLES $RECORDINGS $FREQ" > "$stamp"
fi
for ((r = 0; r < RECORDINGS; r++)); do
  f="$OUT/rec/r$r.data"
  [ -s "$f" ] && continue
  prog=${programs[$((r % ${#programs[@]}))]}
  echo "bench: recording r$r (${secs}s of CPU at $FREQ Hz): $prog" >&2
  # The program runs in a loop until the recording has its samples (timeout: wall seconds;
  # a loaded machine gives fewer: then once more, longer by the missing share).
  t=$secs
  for _ in 1 2; do
    perf record -q -g -e cpu-clock -F "$FREQ" -o "$f" -- \
      timeout "$t" sh -c "while :; do $prog > /dev/null; done" > /dev/null 2>&1 || true
    [ -s "$f" ] || { echo "bench: recording r$r failed" >&2; exit 1; }
    got=$(perf report -i "$f" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
    [ "${got:-0}" -ge $((per_rec * 9 / 10)) ] && break
    t=$(awk -v t="$t" -v n="$per_rec" -v g="${got:-1}" 'BEGIN { printf "%.2f", t * n / (g > 0 ? g : 1) * 1.05 }')
    echo "bench: r$r has ${got:-0} samples, recording again for ${t}s" >&2
  done
done

[ "${RECORD_ONLY:-0}" = 1 ] && exit 0   # RECORD_ONLY=1: make the recordings, stop
if [ ! -x "$CULPRIT_SQL" ] || ! "$CULPRIT_SQL" sql --help >/dev/null 2>&1; then
  cargo build --release -p culprit-cli --features sql
fi

# Exports: HOSTS directories fleet/host-RR-CC, JOBS at a time; CPU time from GNU time.
rm -rf "$OUT/fleet" "$OUT/times"
mkdir -p "$OUT/fleet" "$OUT/times"
jobs_list=()
for ((r = 0; r < RECORDINGS; r++)); do
  for ((c = 0; c < copies; c++)); do
    jobs_list+=("$r $c")
  done
done
echo "bench: exporting $HOSTS hosts ($JOBS at a time)" >&2
start=$(date +%s.%N)
printf '%s\n' "${jobs_list[@]}" | xargs -P "$JOBS" -L 1 sh -c '
  h=$(printf "host-%02d-%02d" "$0" "$1")
  '"$TIME"' -f "%U %S %e %M" -o "'"$OUT"'/times/$h" \
    "'"$CULPRIT"'" export --format parquet -i "'"$OUT"'/rec/r$0.data" --host "$h" \
    -o "'"$OUT"'/fleet/$h" > /dev/null 2>&1 || echo "bench: export $h failed" >&2'
end=$(date +%s.%N)
export_wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
export_cpu=$(cat "$OUT"/times/* | awk '{ c += $1 + $2 } END { printf "%.2f", c }')
export_rss=$(cat "$OUT"/times/* | awk '$4 > m { m = $4 } END { printf "%.0f", m / 1024 }')

dirs=("$OUT"/fleet/*/)
samples=$("$CULPRIT_SQL" sql 'SELECT COUNT(*) AS n FROM samples' "${dirs[@]}" --format csv | tail -1)
parquet_bytes=$(du -cb "$OUT"/fleet/*/*/*.parquet | tail -1 | cut -f1)
samples_bytes=$(du -cb "$OUT"/fleet/*/samples/*.parquet | tail -1 | cut -f1)
data_bytes=$(du -cb "$OUT"/rec/*.data | tail -1 | cut -f1)
data_bytes_all=$((data_bytes * copies))

# Wall seconds of a command (output to /dev/null), best of N runs.
best_of() {
  local n=$1 best="" s e t
  shift
  for ((i = 0; i < n; i++)); do
    s=$(date +%s.%N)
    "$@" > /dev/null
    e=$(date +%s.%N)
    t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }')
    best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
  done
  echo "$best"
}

echo "bench: DataFusion top-10 query" >&2
"$CULPRIT_SQL" sql --top-functions --limit 10 "${dirs[@]}" --format json > "$OUT/datafusion.json"
df_first=$(best_of 1 "$CULPRIT_SQL" sql --top-functions --limit 10 "${dirs[@]}" --format csv)
df_best=$(best_of 3 "$CULPRIT_SQL" sql --top-functions --limit 10 "${dirs[@]}" --format csv)
df_rss=$($TIME -f %M "$CULPRIT_SQL" sql --top-functions --limit 10 "${dirs[@]}" --format csv 2>&1 >/dev/null | tail -1)

spark_row="| Spark top-10 (pyspark local[*]) | (pyspark or java missing: skipped) | | |"
if python3 -c 'import pyspark' 2>/dev/null && command -v java >/dev/null; then
  echo "bench: Spark top-10 query" >&2
  s=$(date +%s.%N)
  python3 crates/cli/tests/fleet_spark.py --limit 10 --timing "${dirs[@]}" > "$OUT/spark.json" 2> "$OUT/spark.err"
  e=$(date +%s.%N)
  spark_wall=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')
  agree=$(python3 - "$OUT/datafusion.json" "$OUT/spark.json" <<'EOF'
import json, sys
df = json.load(open(sys.argv[1])); sp = json.load(open(sys.argv[2]))
c = {x["name"]: i for i, x in enumerate(df["columns"])}
a = sorted((r[c["event"]], r[c["function"]], r[c["sym_addr"]], r[c["samples"]], r[c["period"]]) for r in df["rows"])
b = sorted((r["event"], r["function"], r["sym_addr"], r["samples"], r["period"]) for r in sp["rows"])
print("same rows as DataFusion" if a == b else "ROWS DIFFER from DataFusion")
EOF
)
  spark_row=$(python3 - "$OUT/spark.json" "$spark_wall" "$agree" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"| Spark top-10 (pyspark local[*]) | {s['seconds']:.2f} s first, {s['warm_seconds']:.2f} s warm | {sys.argv[2]} s with JVM start | {sys.argv[3]} |")
EOF
)
fi

echo "bench: perf report and culprit report over the $RECORDINGS recordings" >&2
perf_total=0
culprit_total=0
for ((r = 0; r < RECORDINGS; r++)); do
  f="$OUT/rec/r$r.data"
  t=$(best_of 1 perf report -i "$f" --stdio --sort sym --no-children -g none)
  perf_total=$(awk -v a="$perf_total" -v b="$t" 'BEGIN { print a + b }')
  t=$(best_of 1 "$CULPRIT" report -i "$f" --sort sym --no-children --width 0)
  culprit_total=$(awk -v a="$culprit_total" -v b="$t" 'BEGIN { print a + b }')
done

echo
echo "Fleet: $HOSTS hosts from $RECORDINGS recordings (perf record -g -e cpu-clock -F $FREQ), $samples samples, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); culprit $("$CULPRIT" --version | awk '{print $2}') ($CULPRIT; sql: $CULPRIT_SQL), $(perf --version)"
echo
echo "| measure | figure | detail | goal |"
echo "| --- | --- | --- | --- |"
awk -v p="$parquet_bytes" -v s="$samples_bytes" -v d="$data_bytes_all" -v n="$samples" 'BEGIN {
  printf "| Parquet size vs perf.data | %.3fx | %.1f bytes/sample in Parquet (%.1f in samples/), %.1f in perf.data; %.0f MB vs %.0f MB | <= 0.3x |\n", p / d, p / n, s / n, d / n, p / 1e6, d / 1e6 }'
awk -v n="$samples" -v c="$export_cpu" -v w="$export_wall" -v j="$JOBS" -v m="$export_rss" 'BEGIN {
  printf "| export rate | %.2f M samples/s per core | %.1f s CPU (user+sys), %.1f s wall with %d jobs; peak RSS %d MB | >= 5 M/s/core |\n", n / c / 1e6, c, w, j, m }'
awk -v f="$df_first" -v b="$df_best" -v m="$df_rss" -v h="$HOSTS" 'BEGIN {
  printf "| DataFusion top-10 over %d hosts (culprit sql) | %.2f s | first run %.2f s, best of 3 %.2f s (process start to last row); peak RSS %.0f MB | <= 3 s |\n", h, b, f, b, m / 1024 }'
echo "$spark_row"
awk -v p="$perf_total" -v c="$culprit_total" -v r="$RECORDINGS" -v k="$copies" -v h="$HOSTS" 'BEGIN {
  printf "| perf report one file at a time | %.1f s for %d hosts | %.1f s over the %d distinct files x %d copies | |\n", p * k, h, p, r, k
  printf "| culprit report one file at a time | %.1f s for %d hosts | %.1f s over the %d distinct files x %d copies | |\n", c * k, h, c, r, k }'
