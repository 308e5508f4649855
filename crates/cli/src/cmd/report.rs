//! `culprit report` (being written).

use std::process::ExitCode;

/// Arguments of `culprit report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {}

/// Runs `culprit report`.
pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit report is not built yet")
}
