//! `culprit stat` (being written).

use std::process::ExitCode;

/// Arguments of `culprit stat`.
#[derive(clap::Args, Debug)]
pub struct StatArgs {}

/// Runs `culprit stat`.
pub fn run(_args: StatArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit stat is not built yet")
}
