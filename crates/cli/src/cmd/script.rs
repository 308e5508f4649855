//! `culprit script` (being written).

use std::process::ExitCode;

/// Arguments of `culprit script`.
#[derive(clap::Args, Debug)]
pub struct ScriptArgs {}

/// Runs `culprit script`.
pub fn run(_args: ScriptArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit script is not built yet")
}
