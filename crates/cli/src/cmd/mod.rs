//! One module per verb; each has an `XxxArgs` (clap) and `run(args) -> Result<ExitCode>`.

pub mod annotate;
pub mod archive;
pub mod demo;
pub mod diff;
pub mod export;
pub mod flamegraph;
pub mod html;
pub mod ibs;
pub mod list;
pub mod lock;
pub mod record;
pub mod report;
pub mod sched;
pub mod script;
#[cfg(feature = "sql")]
pub mod sql;
pub mod stat;
pub mod top;
pub mod trace;
