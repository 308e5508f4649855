//! `culprit ibs`: AMD IBS reports from a perf.data file — fetch table, op table (per
//! instruction, source line or function, and per function) and data-centric tables (these
//! also from Intel PEBS memory samples when the file has no IBS).
//!
//! The JSON schema is documented in docs/ibs.md. Exit status: 0 on success; 1 when the input
//! is truncated or corrupt (the report of what was read is still printed); 2 when nothing could
//! be read, an argument is wrong, or the file has neither IBS nor PEBS memory samples.

use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::ibs::{IbsOptions, IbsRequest, IbsSort};

use crate::args::{Format, InputArgs, OutputArgs};

/// Arguments of `culprit ibs`.
#[derive(clap::Args, Debug)]
#[command(
    about = "IBS fetch/op/data-centric reports from a perf.data file",
    after_help = crate::help::layout("EXAMPLES:\n  culprit ibs -i ibs.data --op                 op table per instruction, DC misses first\n  culprit ibs --fetch --sort sym               fetch table per function\n  culprit ibs --data --top 10                  top data addresses/lines/pages/symbols by DC misses\n\nWith none of --fetch/--op/--data, every report the file has samples for is printed.")
)]
pub struct IbsArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Fetch report (ibs_fetch samples).
    #[arg(long)]
    pub fetch: bool,
    /// Op report (ibs_op samples).
    #[arg(long)]
    pub op: bool,
    /// Data-centric report (ibs_op load/store samples with a data address).
    #[arg(long)]
    pub data: bool,
    /// Row key of the main table: ip (instruction), sym (function) or srcline.
    #[arg(short = 's', long, value_name = "KEY", default_value = "ip")]
    pub sort: String,
    /// Count killed fetches too (left out by default, as CodeAnalyst did).
    #[arg(long = "include-killed")]
    pub include_killed: bool,
    /// Show at most N rows per table (data tables: default 10).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// `--format text|json` (docs/ibs.md), `-o`, `--color`, `--width`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit ibs`.
pub fn run(args: IbsArgs) -> anyhow::Result<ExitCode> {
    args.output.require("ibs", &[Format::Text, Format::Json])?;
    let sort =
        IbsSort::parse(&args.sort).context("error parsing flag --sort (ip, sym, srcline)")?;
    let report = culprit_verbs::ibs::ibs(&culprit_verbs::ibs::IbsOptions {
        input: args.input.open(),
        request: IbsRequest {
            fetch: args.fetch,
            op: args.op,
            data: args.data,
            options: IbsOptions {
                sort,
                include_killed: args.include_killed,
                top: args.top,
            },
        },
    })?;
    args.output.render(&report)?;
    Ok(report.exit_status())
}
