//! culprit-analysis's integration tests: one test binary, each file of this directory a module
//! (`cargo test -p culprit-analysis --test analysis MODULE::`).

mod metric_oracle;
mod topdown_vs_json;
