#!/bin/sh
# Runs `perf stat -vv` and `culprit stat -vv` on every named event of perf 6.1's pmu-events
# tables, for each model of a list, inside the faked PMU namespace made by fake-pmu.sh
# (crates/cli/tests/attr_oracle/tables.rs drives it):
#
#   sh run-tables.sh MODELS OUTDIR CULPRIT_BINARY BATCH MODIFIER...
#
# MODELS has one PERF_CPUID a line. perf is the oracle of the event lists too: a model's
# events are those `perf list --raw-dump pmu` names with its PERF_CPUID and not without a
# table (PERF_CPUID=none-0-0): the table's events of the faked PMUs. Every event is tried
# bare (`-`) and with each MODIFIER, BATCH spellings to one `perf stat -e a,b,…` (perf goes
# on past an event that fails to open and prints every attr first). A batch perf refuses to
# parse is halved until the culprit is alone, and so is a batch culprit prints fewer attrs
# for (each run's output under an `oracle-cases: COUNT` line). Output per model M (its
# PERF_CPUID): OUTDIR/M/events (perf's list), OUTDIR/M/culprit-list.json (`culprit list`),
# and per batch N: N.list (one spelling a line), N.perf, N.culprit. PERF names the perf to
# ask (default `perf`: 6.1 here; the newer models use perf 6.12, scripts/oracle-perf.sh).
# ORACLE_LEAD_EVENT, when set, starts every run of both tools (hybrid models: see tables.rs).
set -u
perf=${PERF:-perf}
lead=${ORACLE_LEAD_EVENT:-}
lead=${lead:+$lead,}
models=$1
out=$2
culprit=$3
batch=$4
shift 4
modifiers=$*
n=0

attrs() { grep -c '^perf_event_attr:$' "$1"; }

# run_culprit LIST: one culprit stat run over LIST's spellings, appended to the batch's output
# under an `oracle-cases: COUNT` line; a run that prints fewer attrs than spellings (culprit
# refused one) is split around the spelling its error names (the ones before it, it alone,
# the ones after), or halved when the error names none of them, until the refused spelling
# is alone. (Halving alone cost ~2 log2(BATCH) runs per refused spelling: 243 runs for
# sapphirerapids and cascadelakex, against 3 per refusal.)
run_culprit() {
    count=$(wc -l <"$1")
    "$culprit" stat -vv -e "$lead$(paste -sd, "$1")" -- true >"$dir/cur.culprit" 2>&1 </dev/null
    if [ "$count" -gt 1 ] && [ "$(attrs "$dir/cur.culprit")" -lt "$count" ]; then
        # The event the error names (`name` or 'name'), and its first spelling's line.
        named=$(sed -n "s/^culprit: error: [^\`']*[\`']\([^\`']*\)[\`'].*/\1/p" "$dir/cur.culprit" | head -n 1)
        at=0
        if [ -n "$named" ]; then
            at=$(awk -v e="$named" '$0 == e || index($0, e ":") == 1 { print NR; exit }' "$1")
            at=${at:-0}
        fi
        if [ "$at" -gt 0 ]; then
            [ "$at" -gt 1 ] && head -n "$((at - 1))" "$1" >"$1.c"
            sed -n "${at}p" "$1" >"$1.e"
            tail -n +"$((at + 1))" "$1" >"$1.d"
            [ "$at" -gt 1 ] && run_culprit "$1.c"
            run_culprit "$1.e"
            [ -s "$1.d" ] && run_culprit "$1.d"
            rm -f "$1.c" "$1.e" "$1.d"
            return
        fi
        half=$(((count + 1) / 2))
        head -n "$half" "$1" >"$1.c"
        tail -n +"$((half + 1))" "$1" >"$1.d"
        run_culprit "$1.c"
        run_culprit "$1.d"
        rm -f "$1.c" "$1.d"
        return
    fi
    printf 'oracle-cases: %s\n' "$count" >>"$dir/$n.culprit"
    cat "$dir/cur.culprit" >>"$dir/$n.culprit"
}

# run_batch LIST: one stat run per tool over LIST's spellings, halving LIST on a parse error.
run_batch() {
    lines=$(wc -l <"$1")
    "$perf" stat -vv -e "$lead$(paste -sd, "$1")" -- true >"$dir/cur.perf" 2>&1 </dev/null
    if [ "$lines" -gt 1 ] && grep -q 'event syntax error' "$dir/cur.perf"; then
        half=$(((lines + 1) / 2))
        head -n "$half" "$1" >"$1.a"
        tail -n +"$((half + 1))" "$1" >"$1.b"
        run_batch "$1.a"
        run_batch "$1.b"
        rm -f "$1.a" "$1.b"
        return
    fi
    n=$((n + 1))
    mv "$dir/cur.perf" "$dir/$n.perf"
    cp "$1" "$dir/$n.list"
    : >"$dir/$n.culprit"
    run_culprit "$1"
}

PERF_CPUID=none-0-0 "$perf" list --raw-dump pmu 2>/dev/null | tr ' ' '\n' | sort -u >"$out/no-table"
while read -r cpuid; do
    dir=$out/$cpuid
    mkdir -p "$dir"
    export PERF_CPUID="$cpuid"
    "$perf" list --raw-dump pmu 2>/dev/null | tr ' ' '\n' | sort -u | comm -13 "$out/no-table" - |
        grep . >"$dir/events"
    "$culprit" list --format json >"$dir/culprit-list.json" 2>/dev/null
    n=0
    for m in - $modifiers; do
        if [ "$m" = - ]; then cat "$dir/events"; else awk -v m="$m" '{ print (/\/$/ ? $0 m : $0 ":" m) }' "$dir/events"; fi
    done | split -l "$batch" - "$dir/chunk."
    for chunk in "$dir"/chunk.*; do
        run_batch "$chunk"
        rm -f "$chunk"
    done
done <"$models"
