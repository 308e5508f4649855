//! `culprit ibs` (being written).

use std::process::ExitCode;

/// Arguments of `culprit ibs`.
#[derive(clap::Args, Debug)]
pub struct IbsArgs {}

/// Runs `culprit ibs`.
pub fn run(_args: IbsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit ibs is not built yet")
}
