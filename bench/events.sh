#!/usr/bin/env bash
# What perf's event tables cost culprit (issue 29): binary size, `culprit list` and event
# parsing at start-up, side by side with perf 6.1 doing the same, as ratios in one run.
#
#   bench/events.sh                # builds the release binary first
#   NO_BUILD=1 REPS=21 bench/events.sh
#
# 1. Size: the release binary, the embedded zstd tables, and the code of the crates that only
#    exist for the tables (culprit_pmu_events, collect's events::tables, analysis' metrics
#    evaluator), summed from the symbol table (`nm -S`).
# 2. `culprit list` vs `perf list` per model (PERF_CPUID), wall time, median of REPS.
# 3. Start-up with a table event vs a built-in one, inside a faked `cpu` PMU (the attr
#    oracle's namespace, root): `stat -e TABLE_EVENT -- true` minus `stat -e cpu-clock --
#    true` is what resolving one table event adds (decompressing and indexing the tables).
#
# Goals (issue 29): the binary grows by <= 3 MB; `culprit list` <= 20 ms; parsing <= 1 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-15}
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p culprit-cli
CULPRIT=${CULPRIT:-$PWD/target/release/culprit}
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# time_ms REPS CMD...: the median wall time of CMD in ms (3 decimals).
time_ms() {
  local reps=$1; shift
  for _ in $(seq "$reps"); do
    local t0 t1; t0=$(now_ns); "$@" >/dev/null 2>&1 || true; t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 ))
  done | median | awk '{printf "%.1f", $1 / 1000}'
}

echo "## Size"
bin=$(stat -c %s "$CULPRIT")
blob=$(stat -c %s crates/pmu-events/src/tables.txt.zst)
# Sizes are hex: summed by the shell (mawk has no strtonum).
code=0
while read -r size; do code=$((code + 0x$size)); done < <(nm -S --size-sort -C "$CULPRIT" 2>/dev/null |
  awk '$4 ~ /^(culprit_pmu_events::|culprit_collect::events::tables::|culprit_analysis::metrics::)/ ||
       $0 ~ /<culprit_pmu_events::/ { print $2 }')
printf '%-44s %10s\n' "release binary" "$(awk -v b="$bin" 'BEGIN {printf "%.1f MB", b / 1e6}')"
printf '%-44s %10s\n' "event tables (zstd, in .rodata)" "$(awk -v b="$blob" 'BEGIN {printf "%.2f MB", b / 1e6}')"
printf '%-44s %10s\n' "their code (pmu-events, tables, metrics)" "$(awk -v b="$code" 'BEGIN {printf "%.2f MB", b / 1e6}')"
printf '%-44s %10s\n' "growth (tables + code)" "$(awk -v b="$((blob + code))" 'BEGIN {printf "%.2f MB", b / 1e6}')"

echo
echo "## culprit list vs perf list (median of $REPS, ms)"
printf '%-24s %10s %10s %7s\n' PERF_CPUID culprit perf ratio
for id in GenuineIntel-6-55-4 GenuineIntel-6-8F-8 AuthenticAMD-25-1-1 AuthenticAMD-26-2-1; do
  c=$(PERF_CPUID=$id time_ms "$REPS" "$CULPRIT" list)
  p=$(PERF_CPUID=$id time_ms "$REPS" perf list)
  printf '%-24s %10s %10s %7s\n' "$id" "$c" "$p" "$(awk -v c="$c" -v p="$p" 'BEGIN {printf "%.2f", c / p}')"
done

echo
echo "## Start-up: one table event vs cpu-clock (median of $REPS, ms; faked cpu PMU)"
if [ "$(id -u)" != 0 ]; then
  echo "(skipped: the faked PMU needs root for unshare -m)"
  exit 0
fi
# The namespace runs the inner part with the helpers' definitions (fake-pmu.sh is a POSIX
# sh script, which does not pass exported bash functions on).
export CULPRIT REPS
helpers=$(declare -f now_ns median time_ms)
unshare -m --propagation private sh crates/cli/tests/oracle/fake-pmu.sh \
  crates/cli/tests/fixtures/pmu/amd-zen4 bash -c "$helpers"'
  export PERF_CPUID=AuthenticAMD-25-1-1
  printf "%-34s %10s %10s\n" event culprit perf
  for ev in cpu-clock ls_dmnd_fills_from_sys.mem_io_local; do
    c=$(time_ms "$REPS" "$CULPRIT" stat -e "$ev" -- true)
    p=$(time_ms "$REPS" perf stat -e "$ev" -- true)
    printf "%-34s %10s %10s\n" "$ev" "$c" "$p"
  done'
echo "(the difference of the two culprit rows is what resolving a table event adds)"
