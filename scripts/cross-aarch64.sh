#!/usr/bin/env bash
# Cross-builds culprit for 64-bit Arm (aarch64-unknown-linux-gnu) into
# target/aarch64-unknown-linux-gnu/PROFILE/culprit (PROFILE: the first argument, default
# release), linked by Debian's gcc-aarch64-linux-gnu (.cargo/config.toml). scripts/test.sh
# runs it with the `cross-test` profile (Cargo.toml: release without optimization, which
# compiles in less than half the time); crates/cli/tests/corpus.rs then runs that binary
# under qemu-user on the corpus's arm64 recordings and compares it with the x86 build.
#
# Without the cross compiler it says so and exits 0 (the comparison then skips loudly, or
# fails under CI, which installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  echo "cross-aarch64: no aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu): the arm64 build is skipped" >&2
  exit 0
fi
# rust-toolchain.toml's toolchain, with the target's standard library (rustup fetches it once).
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
profile=${1:-release}
cargo build --profile "$profile" --locked --target "$target" -p culprit-cli
ls -l "target/$target/$profile/culprit"
