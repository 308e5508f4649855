# Shared helpers of the benchmark scripts (sourced, not run): recordings, timing of a
# command line or pipeline under GNU time, medians of interleaved runs, the load average.
# Every script that sources it runs from the repository root with `set -euo pipefail`.

TIME=${TIME:-/usr/bin/time}
BENCH_TARGET_DIR=${CARGO_TARGET_DIR:-target}
CULPRIT=${CULPRIT:-$BENCH_TARGET_DIR/release/culprit}
export PATH="$HOME/.cargo/bin:$PATH"

# Stops the script with a message when a tool is missing.
bench_need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is not installed" >&2; exit 2; }
  done
  [ -x "$TIME" ] || { echo "bench: GNU time missing: apt-get install time" >&2; exit 2; }
}

# Builds the release culprit when $CULPRIT is missing (default features: no sql).
bench_build() {
  [ -x "$CULPRIT" ] || nice -n 10 cargo build --release -j 2 -p culprit-cli
}

# The load average (1, 5, 15 minutes).
bench_load() { awk '{ print $1, $2, $3 }' /proc/loadavg; }

# Samples in a perf.data file.
bench_samples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }

# Builds workloads (names under workloads/) into target/workloads.
bench_workloads() {
  local w targets=()
  for w in "$@"; do targets+=("$PWD/target/workloads/$w"); done
  make -s -C workloads OUT="$PWD/target/workloads" "${targets[@]}"
}

# Records, once, `perf record -g` (frame pointers, cpu-clock at FREQ Hz) of `xz -9 -T2` on
# DATA_MB MB of random data turned into base64 into FILE: a real program, ~9 k samples per
# MB at 10 kHz. Usage: bench_record_xz FILE DATA_MB FREQ
bench_record_xz() {
  local file=$1 mb=$2 freq=$3
  [ -s "$file" ] && return 0
  echo "bench: recording xz -9 on ${mb} MB with -g at ${freq} Hz" >&2
  head -c "${mb}M" /dev/urandom | base64 > "$file.input"
  perf record -q -g -e cpu-clock -F "$freq" -o "$file" -- \
    xz -9 -T2 --block-size=16MiB -c "$file.input" > /dev/null
  rm -f "$file.input"
}

# Records, once, `culprit record -g` (frame pointers) of COPIES copies of the shares workload
# (main -> heavy/light, plus the kernel's frames of interrupts and page faults) for SECONDS
# seconds of CPU in all at FREQ Hz: ~FREQ * SECONDS samples into FILE.
# Usage: bench_record_shares FILE SECONDS FREQ [COPIES]
bench_record_shares() {
  local file=$1 secs=$2 freq=$3 copies=${4:-2} units cmd i
  [ -s "$file" ] && return 0
  bench_workloads shares
  units=$((secs * 126 / copies))   # one unit is ~8 ms of CPU
  cmd=""
  for ((i = 0; i < copies; i++)); do cmd+="target/workloads/shares $units & "; done
  echo "bench: recording $copies x shares $units at $freq Hz with -g" >&2
  "$CULPRIT" record -q -g -e cpu-clock -F "$freq" -o "$file" -- sh -c "${cmd}wait" > /dev/null
}

# Runs a command line (in bash, so a pipeline counts as one) with its output to /dev/null;
# prints "wall_seconds cpu_seconds maxrss_kb": CPU summed and RSS the biggest over the
# stages of a pipeline (GNU time on each stage). A failure is reported on stderr.
bench_measure() {
  local dir cmd=$1 stages=() i=0 stage timed="" start end
  dir=$(mktemp -d)
  IFS='|' read -r -a stages <<< "$cmd"
  for stage in "${stages[@]}"; do
    timed+="${timed:+ | }$TIME -f '%U %S %M' -o $dir/stage.$i $stage"
    i=$((i + 1))
  done
  start=$(date +%s.%N)
  bash -c "$timed" > /dev/null 2> "$dir/err" || { echo "bench: failed: $cmd" >&2; cat "$dir/err" >&2; }
  end=$(date +%s.%N)
  cat "$dir"/stage.* | awk -v s="$start" -v e="$end" \
    '{ cpu += $1 + $2; if ($3 > rss) rss = $3 } END { printf "%.3f %.3f %d\n", e - s, cpu, rss }'
  rm -rf "$dir"
}

# The median of numbers, one a line on stdin.
bench_median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# Runs the command lines given REPS times each, interleaved (the first command of a round
# turns: A B C, B C A, C A B, ...: no command always runs on the warmer cache); prints one
# line "wall cpu rss" per command, in the order given: the medians of wall and CPU seconds
# and the biggest peak RSS (kB) over its runs.
bench_interleaved() {
  local reps=${REPS:-3} n=$# i k j t c m dir cmds=("$@")
  dir=$(mktemp -d)
  for ((i = 0; i < reps; i++)); do
    for ((k = 0; k < n; k++)); do
      j=$(((i + k) % n))
      read -r t c m < <(bench_measure "${cmds[$j]}")
      echo "$t" >> "$dir/$j.wall"; echo "$c" >> "$dir/$j.cpu"; echo "$m" >> "$dir/$j.rss"
    done
  done
  for ((j = 0; j < n; j++)); do
    echo "$(bench_median < "$dir/$j.wall") $(bench_median < "$dir/$j.cpu") $(sort -n "$dir/$j.rss" | tail -1)"
  done
  rm -rf "$dir"
}
