//! `culprit record` (being written).

use std::process::ExitCode;

/// Arguments of `culprit record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {}

/// Runs `culprit record`.
pub fn run(_args: RecordArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit record is not built yet")
}
