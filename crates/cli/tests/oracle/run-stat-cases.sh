#!/bin/sh
# Runs `perf stat -vv -a` and `culprit stat -vv -a` for every event spelling of a list, inside
# the faked PMU namespace made by fake-pmu.sh (crates/cli/tests/attr_oracle/uncore.rs drives
# it): the uncore, RAPL and cstate cases, where one spelling opens on several PMUs and on the
# CPUs of their cpumask.
#
#   sh run-stat-cases.sh CASES OUTDIR CULPRIT_BINARY
#
# CASES has one spelling a line; case N's output goes to OUTDIR/N.perf and OUTDIR/N.culprit.
# PERF_CPUID comes from the environment, and PERF names the perf to ask (default `perf`).
set -u
cases=$1
out=$2
culprit=$3
perf=${PERF:-perf}
n=0
while IFS= read -r event; do
    "$perf" stat -vv -a -e "$event" -- true >"$out/$n.perf" 2>&1 </dev/null
    "$culprit" stat -vv -a -e "$event" -- true >"$out/$n.culprit" 2>&1 </dev/null
    n=$((n + 1))
done <"$cases"
