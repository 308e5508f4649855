//! One module per verb; each has an `XxxArgs` (clap) and `run(args) -> Result<ExitCode>`.

pub mod demo;
pub mod list;
pub mod record;
pub mod report;
