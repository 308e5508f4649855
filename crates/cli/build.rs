//! Release builds of the `culprit` binary compress its debug sections with zlib at link time.
//! They hold the line tables that Cargo.toml's `[profile.release]` keeps for culprit's own
//! crates (backtraces, culprit profiling itself); compressed (ELF SHF_COMPRESSED, read by
//! std's backtraces, by culprit's own symbolizer, by perf and addr2line) they are about a
//! quarter of their size. A link argument of this crate's binaries only: no other crate's
//! build changes, and test builds (the dev profile) link as before.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        println!("cargo::rustc-link-arg-bins=-Wl,--compress-debug-sections=zlib");
    }
}
