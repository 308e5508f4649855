//! `culprit list`: what this machine can measure (`culprit_collect::inventory`), as aligned
//! text or JSON (docs/schemas/list.schema.json).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use culprit_collect::events::tables;
use culprit_collect::inventory;

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
    if args.metrics {
        return list_metrics(&args);
    }
    let listing = inventory::collect(args.filter.as_deref());
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Json => culprit_output::json::write(&mut *out, &listing)?,
        // Notes are sentences: the renderer wraps them to the width, 80 columns into a
        // file or a pipe (as perf list; nothing there is a name that a cut would lose).
        _ => {
            let mut text = args.output.text_options();
            if args.output.width.is_none() && !args.output.is_tty() {
                text.width = Some(culprit_output::style::DEFAULT_WIDTH);
            }
            culprit_output::text::write(&mut *out, &super::list_text::document(&listing), &text)?
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `culprit list --metrics [FILTER]`: the table chosen, and its metrics by group.
fn list_metrics(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let cpu = culprit_collect::sysfs::cpu_identity();
    let (cpuid, source) = tables::system_cpuid(cpu.as_ref())
        .context("--metrics: the CPU id could not be built (set PERF_CPUID)")?;
    let table = tables::table_for(&cpuid);
    let listing = table
        .as_ref()
        .map(|t| culprit_analysis::metrics::listing::listing(t, args.filter.as_deref()));
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Json => {
            let doc = serde_json::json!({
                "cpuid": cpuid,
                "cpuid_source": source,
                "model": table.as_ref().map(|t| t.row.model),
                "mapfile_row": table.as_ref().map(|t| t.row.csv()),
                "groups": listing.as_ref().map(|l| &l.groups),
                "metrics": listing.as_ref().map(|l| &l.metrics),
            });
            culprit_output::json::write(&mut *out, &doc)?;
        }
        _ => {
            match &table {
                Some(t) => writeln!(
                    out,
                    "Metrics of {}: CPU id {cpuid} matches mapfile.csv row `{}`",
                    t.row.model,
                    t.row.csv()
                )?,
                None => writeln!(
                    out,
                    "Metrics: none: no mapfile.csv row matches CPU id {cpuid}; perf has no metrics for this CPU either"
                )?,
            }
            for line in listing.map(|l| l.text_lines()).unwrap_or_default() {
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
