//! `culprit annotate` (being written).

use std::process::ExitCode;

/// Arguments of `culprit annotate`.
#[derive(clap::Args, Debug)]
pub struct AnnotateArgs {}

/// Runs `culprit annotate`.
pub fn run(_args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("culprit annotate is not built yet")
}
