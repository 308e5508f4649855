#!/bin/sh
# Runs a command with a faked CPU PMU, for comparing culprit's perf_event_attrs with perf's
# (crates/cli/tests/attr_oracle.rs, docs/events.md "The perf oracle").
#
#   unshare -m --propagation private sh fake-pmu.sh FIXTURE_DIR[:FIXTURE_DIR...] COMMAND [ARGS...]
#
# Several fixture directories (a core PMU and the uncore ones, say) are joined with `:`.
#
# Must run in a private mount namespace of its own (unshare above): it mounts a tmpfs over
# /sys/bus/event_source/devices, links every real PMU back into it, then puts the PMU
# directories of FIXTURE_DIR (cpu/, ibs_op/, …: type, format/, events/, caps/) over them.
# /proc/kallsyms is hidden (see below). Nothing leaks: the mounts live and die with the
# namespace, i.e. with COMMAND.
set -eu
fixtures=$1
shift
devices=/sys/bus/event_source/devices
old_ifs=$IFS
IFS=:
for fixture in $fixtures; do
    [ -d "$fixture" ] || { echo "fake-pmu.sh: no fixture directory $fixture" >&2; exit 2; }
done
IFS=$old_ifs
# Refuse to touch the host's mount table: the namespace must be a private one.
if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] && [ "${FAKE_PMU_ANY_NS:-}" != 1 ]; then
    echo "fake-pmu.sh: run me under 'unshare -m --propagation private'" >&2
    exit 2
fi
real=$(for entry in "$devices"/*; do [ -e "$entry" ] && printf '%s=%s\n' "${entry##*/}" "$(readlink -f "$entry")"; done)
mount -t tmpfs fake-pmu "$devices"
faked() {
    IFS=:
    for fixture in $fixtures; do
        if [ -e "$fixture/$1" ]; then IFS=$old_ifs; return 0; fi
    done
    IFS=$old_ifs
    return 1
}
for pair in $real; do
    name=${pair%%=*}
    faked "$name" || ln -s "${pair#*=}" "$devices/$name"
done
IFS=:
for fixture in $fixtures; do
    cp -R "$fixture"/. "$devices"/
done
IFS=$old_ifs
# An empty /proc/kallsyms: perf reads the real one four times per run (its kernel reference
# symbol, ~120 ms here), which was most of each case's time. No attr depends on it; perf
# then warns that it could not record the kernel's relocation symbol, after its attrs.
mount --bind /dev/null /proc/kallsyms
exec "$@"
