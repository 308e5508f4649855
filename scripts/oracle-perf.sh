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
#
# Where Debian's aarch64 cross compiler is installed, the same perf is also built for arm64,
# static (target/oracle-perf/perf-arm64, another ~30 s): run under qemu-user it prints the
# attrs an arm64 perf opens for faked ARM PMUs (the ARM attr oracle), as perf_event_open is
# not passed through by qemu.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/target/oracle-perf
tarball=/usr/src/linux-source-6.12.tar.xz
lean="NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_LIBBPF=1 NO_BPF_SKEL=1 NO_LIBUNWIND=1
  NO_LIBDW=1 NO_SLANG=1 NO_GTK2=1 NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBBABELTRACE=1 NO_LIBZSTD=1
  NO_LIBLZMA=1 NO_LIBCRYPTO=1"
want_arm64=
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && [ ! -x "$out/perf-arm64" ]; then
  want_arm64=1
fi
if [ -x "$out/perf" ] && [ -z "$want_arm64" ]; then
  exit 0
fi
if [ ! -f "$tarball" ]; then
  echo "oracle-perf: $tarball missing (apt-get install linux-source-6.12): the newer-model attr oracle will skip" >&2
  exit 0
fi
src=$out/src
rm -rf "$src" && mkdir -p "$src"
# Only what tools/perf's build reads (the whole tree is 1.4 GB unpacked).
tar -xJf "$tarball" -C "$src" --wildcards 'linux-source-6.12/tools/*' 'linux-source-6.12/include/*' \
  'linux-source-6.12/arch/x86/*' 'linux-source-6.12/arch/arm64/*' 'linux-source-6.12/scripts/*' \
  'linux-source-6.12/lib/*' 'linux-source-6.12/kernel/*' 'linux-source-6.12/Makefile'
# build NAME [MAKE ARGS...]: perf into $out/NAME.
build() {
  name=$1
  shift
  rm -rf "$out/build-$name" && mkdir -p "$out/build-$name"
  # shellcheck disable=SC2086 # $lean is a list of words
  if ! make -s -j2 -C "$src/linux-source-6.12/tools/perf" O="$out/build-$name" $lean "$@" \
      >"$out/build-$name.log" 2>&1; then
    tail -20 "$out/build-$name.log" >&2
    echo "oracle-perf: the perf 6.12 build ($name) failed (log above)" >&2
    exit 1
  fi
  mv "$out/build-$name/perf" "$out/$name"
  rm -rf "$out/build-$name"
}
[ -x "$out/perf" ] || build perf
if [ -n "$want_arm64" ]; then
  # Static (no arm64 libraries needed under qemu), only the perf binary (the dlfilter
  # plugins cannot link statically), without libelf (no arm64 libelf on the build host).
  build perf-arm64 ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- LDFLAGS=-static NO_LIBELF=1 \
    "$out/build-perf-arm64/perf"
fi
rm -rf "$src"
"$out/perf" version
