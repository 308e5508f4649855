#!/bin/sh
# Runs a command with a faked CPU PMU, for comparing culprit's perf_event_attrs with perf's
# (crates/cli/tests/attr_oracle.rs, docs/events.md "The perf oracle").
#
#   unshare -m --propagation private sh fake-pmu.sh FIXTURE_DIR COMMAND [ARGS...]
#
# Must run in a private mount namespace of its own (unshare above): it mounts a tmpfs over
# /sys/bus/event_source/devices, links every real PMU back into it, then puts the PMU
# directories of FIXTURE_DIR (cpu/, ibs_op/, …: type, format/, events/, caps/) over them.
# Nothing leaks: the mounts live and die with the namespace, i.e. with COMMAND.
set -eu
fixture=$1
shift
devices=/sys/bus/event_source/devices
[ -d "$fixture" ] || { echo "fake-pmu.sh: no fixture directory $fixture" >&2; exit 2; }
# Refuse to touch the host's mount table: the namespace must be a private one.
if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] && [ "${FAKE_PMU_ANY_NS:-}" != 1 ]; then
    echo "fake-pmu.sh: run me under 'unshare -m --propagation private'" >&2
    exit 2
fi
real=$(for entry in "$devices"/*; do [ -e "$entry" ] && printf '%s=%s\n' "${entry##*/}" "$(readlink -f "$entry")"; done)
mount -t tmpfs fake-pmu "$devices"
for pair in $real; do
    name=${pair%%=*}
    [ -e "$fixture/$name" ] || ln -s "${pair#*=}" "$devices/$name"
done
cp -R "$fixture"/. "$devices"/
exec "$@"
