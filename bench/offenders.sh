#!/usr/bin/env bash
# The paired-sampling offender detector vs the exact per-address histogram of the same
# samples, on the project's workloads and on real programs (xz, python).
#
#   bench/offenders.sh                      # cpu-clock at 4000 Hz
#   EVENT=rff43 PERIOD=10000 bench/offenders.sh   # AMD: demand L1D fills (needs a PMU)
#   SETTINGS="50:5 100:5 200:20" bench/offenders.sh
#
# For every program and every T1:T2 it prints: samples, distinct sampled addresses, offenders
# reported, precision (reported in the exact top-5 / with exact share >= T2/T1), recall of the
# exact top-1 and top-5, the sample index (and share of the samples) at which the exact top-1
# was first confirmed, and memory: the detector's bytes vs a full histogram's.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENT=${EVENT:-cpu-clock}
FREQ=${FREQ:-4000}
PERIOD=${PERIOD:-}
SETTINGS=${SETTINGS:-"50:5 100:5 100:10 200:20 400:20"}
OUT=target/bench-offenders
mkdir -p "$OUT"

if [ -z "${CULPRIT:-}" ]; then
  cargo build --release -q -p culprit-cli
  CULPRIT=$PWD/target/release/culprit
fi
W=$PWD/target/workloads
make -s -C workloads OUT="$W" "$W/pointer_chase" "$W/simple_classic" "$W/shares"
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 1; }

rate=(-F "$FREQ")
[ -n "$PERIOD" ] && rate=(-c "$PERIOD")

# name | command
programs=(
  "pointer_chase|$W/pointer_chase 16 30000000"
  "simple_classic|$W/simple_classic 600"
  "shares|$W/shares 60"
  "xz|xz -9 -T1 -c -k $OUT/input.bin"
  "python|python3 $OUT/work.py"
)
cat >"$OUT/work.py" <<'PY'
import json, re
for i in range(300000):
    json.loads(json.dumps({"a": [i, str(i)], "b": {"c": i * 0.5}}))
for i in range(100000):
    re.sub("a+", "b", "a" * 50)
PY
# Input for xz: 8 MiB of compressible but not trivial data.
if [ ! -s "$OUT/input.bin" ]; then
  python3 -c "
import random
random.seed(1)
words=[''.join(random.choice('abcdefghij') for _ in range(random.randint(2,9))) for _ in range(5000)]
with open('$OUT/input.bin','w') as f:
    n=0
    while n < 8<<20:
        s=' '.join(random.choice(words) for _ in range(200))+'\n'; f.write(s); n+=len(s)
"
fi

printf "%-15s %5s %4s %7s %8s %6s %4s %9s %9s %5s %5s %16s %8s %10s\n" \
  program T1 T2 samples distinct top1_% rep prec_top5 prec_sig rec1 rec5 top1_first_obs det_B hist_B
for p in "${programs[@]}"; do
  name=${p%%|*}
  cmd=${p#*|}
  data=$OUT/$name.data
  # shellcheck disable=SC2086  # the command is split into words on purpose
  "$CULPRIT" record -q -e "$EVENT" "${rate[@]}" -o "$data" -- $cmd >/dev/null 2>"$OUT/$name.err" \
    || { echo "$name: record failed: $(tail -1 "$OUT/$name.err")"; continue; }
  for s in $SETTINGS; do
    t1=${s%%:*}; t2=${s#*:}
    "$CULPRIT" report --offenders --exact --t1 "$t1" --t2 "$t2" --format json -i "$data" \
      >"$OUT/$name-$t1-$t2.json" 2>/dev/null || true
    jq -r --arg n "$name" '
      .events[] |
      [$n, .t1, .t2, .samples, .exact.distinct_addresses, (.exact.top[0].percent // 0 | . * 10 | floor / 10), (.offenders|length),
       .exact.precision_top5, .exact.precision_significant, .exact.recall_top1, .exact.recall_top5,
       (if .exact.top1_first_observation == null then "never"
        else "\(.exact.top1_first_observation) (\(.exact.top1_first_observation_fraction*100|floor)%)" end),
       .detector_bytes, .exact.histogram_bytes] | @tsv' "$OUT/$name-$t1-$t2.json" |
    while IFS=$'\t' read -r a b c d e x f g h i j k l m; do
      printf "%-15s %5s %4s %7s %8s %6s %4s %9s %9s %5s %5s %16s %8s %10s\n" "$a" "$b" "$c" "$d" "$e" "$x" "$f" "$g" "$h" "$i" "$j" "$k" "$l" "$m"
    done
  done
done
