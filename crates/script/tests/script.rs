//! culprit-script's integration tests: one test binary, each file of this directory a module
//! (`cargo test -p culprit-script --test script MODULE::`).

mod budget;
mod common;
mod eval;
mod language;
mod session;
