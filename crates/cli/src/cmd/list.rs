//! `culprit list`: what this machine can measure, or this CPU's metrics
//! (`culprit_verbs::list`), as aligned text or JSON (docs/schemas/list.schema.json).

use std::io::Write;
use std::process::ExitCode;

use culprit_verbs::list::{ListOptions, ListReport};

use crate::args::{Format, OutputArgs};

/// Arguments of `culprit list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Only list events, aliases and event-table entries whose name contains FILTER
    /// (case-insensitive). Capabilities are always shown.
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
    /// List the metrics and metric groups of this CPU's pmu-events table instead (what
    /// `culprit stat -M` takes); FILTER keeps metrics whose name or group contains it.
    #[arg(long = "metrics")]
    pub metrics: bool,
    /// Output format (text or json), file and colour.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit list`.
pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    args.output.require("list", &[Format::Text, Format::Json])?;
    let report = culprit_verbs::list::list(&ListOptions {
        filter: args.filter,
        metrics: args.metrics,
    })?;
    let mut out = args.output.writer()?;
    match (args.output.format, &report) {
        (Format::Json, _) => report.write_json(&mut *out)?,
        // Notes are sentences: the renderer wraps them to the width, 80 columns into a
        // file or a pipe (as perf list; nothing there is a name that a cut would lose).
        (_, ListReport::Inventory(listing)) => {
            let mut text = args.output.text_options();
            if args.output.width.is_none() && !args.output.is_tty() {
                text.width = Some(culprit_output::style::DEFAULT_WIDTH);
            }
            let doc = culprit_verbs::list::text::document(listing);
            culprit_output::text::write(&mut *out, &doc, &text)?
        }
        (_, ListReport::Metrics(metrics)) => {
            for line in metrics.text_lines() {
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
