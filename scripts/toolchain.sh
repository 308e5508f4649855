#!/usr/bin/env bash
# Makes the toolchain pinned in rust-toolchain.toml available to rustup, without the network
# when it can. culprit's machines have one Rust toolchain, rustup's `stable`, and cannot
# download another; when that toolchain is exactly the pinned version, the pinned name is
# linked to it (rustup then finds it installed, with its rustfmt and clippy). Otherwise the
# pinned toolchain is installed the ordinary way, which needs the network.
# scripts/test.sh runs this first; run it once by hand before a first `cargo build`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v rustup >/dev/null 2>&1; then
  echo "toolchain: no rustup: rust-toolchain.toml is not applied; using $(rustc --version)"
  exit 0
fi
pin=$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)
host=$(rustup run stable rustc -vV | sed -n 's/^host: //p')
toolchains="${RUSTUP_HOME:-$HOME/.rustup}/toolchains"
if [ -e "$toolchains/$pin-$host" ]; then
  exit 0
fi
stable_version=$(rustup run stable rustc -vV | sed -n 's/^release: //p')
if [ "$stable_version" = "$pin" ] && [ -d "$toolchains/stable-$host" ]; then
  ln -s "$toolchains/stable-$host" "$toolchains/$pin-$host"
  echo "toolchain: Rust $pin is this machine's stable toolchain: linked as $pin-$host"
else
  echo "toolchain: installing Rust $pin (stable here is ${stable_version:-missing})"
  rustup toolchain install "$pin" --profile minimal --component rustfmt,clippy
fi
