//! culprit-trace's integration tests: one test binary, each file of this directory a module
//! (`cargo test -p culprit-trace --test trace MODULE::`).

mod budget;
mod common;
mod eval;
mod language;
mod session;
