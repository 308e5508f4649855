//! `culprit demo` (being written).

use std::process::ExitCode;

/// Arguments of `culprit demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {}

/// Runs `culprit demo`.
pub fn run(_args: DemoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit demo is not built yet")
}
