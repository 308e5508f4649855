//! The CLI's integration tests: one test binary (one link of the whole program instead of one
//! per file), each file of this directory a module. Run one file's tests with
//! `cargo test -p culprit-cli --test cli MODULE::` (e.g. `attr_oracle::`).

mod browser;
mod common;

mod annotate;
mod architecture;
mod archive;
mod attr_oracle;
mod bounded;
mod branch;
mod breakpoint;
mod corpus;
mod debuginfod;
mod demo;
mod diff;
mod escaping;
mod export;
mod export_formats;
mod export_pgo;
mod flamegraph;
mod fleet;
mod formats;
mod groups;
mod html;
mod html_views;
mod ibs;
mod input;
mod jit;
mod kernel;
mod latency;
mod list;
mod lock;
mod mem;
mod offenders;
mod parquet;
mod record;
mod record_modes;
mod record_signals;
mod reliability;
mod report;
mod report_layout;
mod sched;
mod schema;
mod script;
// `culprit sql` exists only with the `sql` feature (DataFusion: a long build).
#[cfg(feature = "sql")]
mod sql;
mod stat;
mod stat_metrics;
mod stat_switches;
mod top;
mod trace;
mod tracepoints;
mod unwind;
