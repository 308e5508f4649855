#!/usr/bin/env bash
# Symbolization cost per DSO, with and without debuginfod (issue 32), side by side with perf.
# Not a test. Needs root (a private mount namespace hides /usr/lib/debug, as on a machine
# without debug packages), perf, debuginfod (Debian package) and libc6-dbg.
#
#   bash bench/symbols.sh          (REPS=5 by default)
#
# Two DSOs, each in its own recording (perf record -e cpu-clock):
# - libc.so.6: Debian's stripped libc, its debug file (4 MB) from libc6-dbg, under the
#   workloads/libc_heavy program (qsort and memcpy);
# - shares: the shares workload stripped, its debug file made with objcopy.
# Per DSO, `culprit report --sort dso,sym` to /dev/null:
#   local     the debug file where it is installed (libc6-dbg; for shares, the unstripped file)
#   none      no debug file and no server: names from .dynsym only
#   cold      no debug file, a local debuginfod server, an empty client cache (fetch + parse)
#   warm      no debug file, the client cache filled (what every later report costs)
# and `perf report --sort dso,sym` with the debug file installed, for reference.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
REPS=${REPS:-5}
bench_need perf debuginfod unshare objcopy strip
bench_build
bench_workloads libc_heavy shares
culprit=$(readlink -f "$CULPRIT")

dir=$(mktemp -d "${TMPDIR:-/tmp}/culprit-bench-symbols.XXXXXX")
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

# The shares workload, stripped, and its debug file (served); the unstripped one for `local`.
mkdir -p "$dir/served" "$dir/full"
cp target/workloads/shares "$dir/full/shares"
objcopy --only-keep-debug "$dir/full/shares" "$dir/served/shares.debug"
strip -o "$dir/shares" "$dir/full/shares"
# libc's debug file, by build-id, from the debug package.
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
id=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
cp "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" "$dir/served/libc.debug"

export HOME="$dir/home"   # an empty build-id cache: names come from where this says
mkdir -p "$HOME"
perf record -q -e cpu-clock -o "$dir/libc.data" -- target/workloads/libc_heavy 10
perf record -q -e cpu-clock -o "$dir/shares.data" -- "$dir/shares" 40

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$dir/db.sqlite" "$dir/served" > /dev/null 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/debuginfo" && break
  sleep 0.2
done

# One script per mode (bench_measure splits command lines on '|').
hidden() {  # hidden NAME ENV...: culprit with /usr/lib/debug hidden, ENV set
  local name=$1; shift
  cat > "$dir/$name.sh" <<EOF
#!/bin/sh
$*
exec unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /usr/lib/debug && exec "\$@"' sh \
  "$culprit" report --sort dso,sym -i "\$1"
EOF
  chmod +x "$dir/$name.sh"
}
hidden none "unset DEBUGINFOD_URLS"
hidden cold "export DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$dir/cold; rm -rf $dir/cold"
hidden warm "export DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$dir/warm"
"$dir/warm.sh" "$dir/libc.data" > /dev/null
"$dir/warm.sh" "$dir/shares.data" > /dev/null

echo "# bench/symbols.sh: REPS=$REPS, load average $(bench_load)"
echo
echo "| DSO (samples) | culprit local | culprit, none | culprit + debuginfod, cold | culprit + debuginfod, warm | perf report, local | names (cold) |"
echo "|---|---|---|---|---|---|---|"
for dso in libc shares; do
  file="$dir/$dso.data"
  symfs=""
  [ "$dso" = shares ] && { mkdir -p "$dir/symfs$dir"; cp "$dir/full/shares" "$dir/symfs$dir/shares"; symfs="--symfs $dir/symfs"; }
  mapfile -t r < <(bench_interleaved \
    "$culprit report --sort dso,sym $symfs -i $file" \
    "$dir/none.sh $file" \
    "$dir/cold.sh $file" \
    "$dir/warm.sh $file" \
    "perf report --stdio --sort dso,sym $symfs -i $file")
  ms() { awk '{ printf "%.0f ms", $1 * 1000 }' <<< "$1"; }
  hot=$("$dir/cold.sh" "$file" 2>/dev/null | awk '/%/ && $0 !~ /^#/ { print $NF; n++ } n == 2 { exit }' | paste -sd, -)
  echo "| $dso ($(bench_samples "$file")) | $(ms "${r[0]}") | $(ms "${r[1]}") | $(ms "${r[2]}") | $(ms "${r[3]}") | $(ms "${r[4]}") | $hot |"
done
