#!/usr/bin/env bash
# Builds perf 6.12 from Debian's linux-source-6.12, the kernel tree culprit's event tables
# were generated from (crates/pmu-events/README.md), into target/oracle-perf/perf. The attr
# oracle (crates/cli/tests/attr_oracle/tables.rs) compares culprit with it on the CPU models
# perf 6.1 has no table for (Zen 4/5, Granite Rapids, Sierra Forest, …).
#
# A lean perf: no libtraceevent, Python, Perl, BPF, unwinding or TUI; the event parser, the
# pmu-events tables and `stat -vv` are all the oracle needs. ~30 s on 2 cores. Does nothing
# when the binary is there already; without the source package it says so and exits 0
# (the test then skips loudly, or fails under CI).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/target/oracle-perf
tarball=/usr/src/linux-source-6.12.tar.xz
if [ -x "$out/perf" ]; then
  exit 0
fi
if [ ! -f "$tarball" ]; then
  echo "oracle-perf: $tarball missing (apt-get install linux-source-6.12): the newer-model attr oracle will skip" >&2
  exit 0
fi
rm -rf "$out" && mkdir -p "$out/build"
# Only what tools/perf's build reads (the whole tree is 1.4 GB unpacked).
tar -xJf "$tarball" -C "$out" --wildcards 'linux-source-6.12/tools/*' 'linux-source-6.12/include/*' \
  'linux-source-6.12/arch/x86/*' 'linux-source-6.12/arch/arm64/*' 'linux-source-6.12/scripts/*' \
  'linux-source-6.12/lib/*' 'linux-source-6.12/kernel/*' 'linux-source-6.12/Makefile'
if ! make -s -j2 -C "$out/linux-source-6.12/tools/perf" O="$out/build" \
    NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_LIBBPF=1 NO_BPF_SKEL=1 NO_LIBUNWIND=1 \
    NO_LIBDW=1 NO_SLANG=1 NO_GTK2=1 NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBBABELTRACE=1 NO_LIBZSTD=1 \
    NO_LIBLZMA=1 NO_LIBCRYPTO=1 >"$out/build.log" 2>&1; then
  tail -20 "$out/build.log" >&2
  echo "oracle-perf: the perf 6.12 build failed (log above)" >&2
  exit 1
fi
cp "$out/build/perf" "$out/perf.new"
rm -rf "$out/build" "$out/linux-source-6.12"
mv "$out/perf.new" "$out/perf"
"$out/perf" version
