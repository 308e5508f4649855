//! `culprit demo`: builds the shipped example workload (examples/matmul.c, embedded in the
//! binary), records it with several events and prints the report.
//!
//! It runs `culprit record` and `culprit report` as child processes of the current executable,
//! exactly as a user would type them, so the demo exercises the real commands.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use culprit_verbs::demo::{self, DemoOptions};

/// Arguments of `culprit demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Directory for the example's binary and perf.data (default: a fresh temporary directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Matrix size N of the example (its run time grows as N³).
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub size: u32,
    /// Events to record (default: cycles,instructions,cache-misses where the hardware PMU works,
    /// else cpu-clock,page-faults).
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Option<String>,
}

/// Runs `culprit demo`.
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the culprit executable")?;
    demo::run(DemoOptions {
        exe,
        dir: args.dir,
        size: args.size,
        events: args.events,
    })
}
