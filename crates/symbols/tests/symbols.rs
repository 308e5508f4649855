//! culprit-symbols's integration tests: one test binary, each file of this directory a module
//! (`cargo test -p culprit-symbols --test symbols MODULE::`).

mod common;
mod debugfiles;
mod fixture_binaries;
mod kernel;
mod lines;
