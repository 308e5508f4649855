#!/bin/sh
# Runs `perf record -vv` and `culprit record -vv` for every case of a list, inside the faked
# PMU namespace made by fake-pmu.sh (crates/cli/tests/attr_oracle.rs drives it):
#
#   sh run-both.sh CASES OUTDIR CULPRIT_BINARY
#
# CASES has one case a line: extra record options (`-`: none), a tab, the event spelling. Case N's
# stderr goes to OUTDIR/N.perf and OUTDIR/N.culprit. PERF_CPUID comes from the environment, and
# PERF names the perf to run (default `perf`; words: `qemu-aarch64 .../perf-arm64`).
set -u
cases=$1
out=$2
culprit=$3
n=0
tab=$(printf '\t')
while IFS="$tab" read -r opts event; do
    [ "$opts" = - ] && opts=
    # shellcheck disable=SC2086 # the options (and $PERF) are words on purpose
    ${PERF:-perf} record -vv -N -B --no-bpf-event $opts -e "$event" -o "$out/perf.data" -- true \
        >"$out/$n.perf" 2>&1 </dev/null
    # shellcheck disable=SC2086
    "$culprit" record -vv -N -q $opts -e "$event" -o "$out/culprit.data" -- true \
        >"$out/$n.culprit" 2>&1 </dev/null
    n=$((n + 1))
done <"$cases"
