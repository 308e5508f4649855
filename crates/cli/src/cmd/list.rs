//! `culprit list` (being written).

use std::process::ExitCode;

/// Arguments of `culprit list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {}

/// Runs `culprit list`.
pub fn run(_args: ListArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit list is not built yet")
}
