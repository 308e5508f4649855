//! `culprit report --latency` (and `--sort latency|parallelism`, `--parallelism=RANGE`):
//! Latency (wall-clock) and Overhead (CPU) side by side, with perf 6.15's semantics
//! (`culprit_analysis::parallelism`; docs/wall-clock.md). Text, JSON or CSV.

use std::io::Write;
use std::process::ExitCode;

use culprit_analysis::parallelism::{
    self, LatencyJson, LatencyKey, LatencyReportOptions, LATENCY_SCHEMA,
};
use culprit_symbols::ReadPlan;

use super::ReportArgs;
use crate::args::Format;

/// Whether the flags ask for the latency report.
pub fn wanted(args: &ReportArgs) -> bool {
    args.latency
        || args.parallelism.is_some()
        || args
            .sort
            .split(',')
            .any(|k| matches!(k.trim(), "latency" | "parallelism"))
}

/// The keys and the ordering of `--sort` (`latency`/`overhead` order the rows; the rest
/// are keys; none left: comm,dso,sym).
fn keys(args: &ReportArgs) -> anyhow::Result<(Vec<LatencyKey>, bool)> {
    let mut by_latency = args.latency;
    let mut keys = Vec::new();
    for name in args
        .sort
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        match name {
            "latency" => by_latency = true,
            "overhead" => by_latency = false,
            other => keys.push(LatencyKey::parse(other).ok_or_else(|| {
                anyhow::anyhow!(
                    "--sort {other}: the latency report's keys are comm, pid, tid, dso, sym, \
                     parallelism (and latency, overhead to order the rows)"
                )
            })?),
        }
    }
    if keys.is_empty() {
        keys = vec![LatencyKey::Comm, LatencyKey::Dso, LatencyKey::Sym];
    }
    Ok((keys, by_latency))
}

/// Runs the latency report.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let (keys, by_latency) = keys(args)?;
    let ranges = args
        .parallelism
        .as_deref()
        .map(parallelism::parse_ranges)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--parallelism {e}"))?;
    let input_args = args.first_input();
    let input = input_args.open();
    let profile = input.read(&ReadPlan::default())?;
    let event = match args.event.first() {
        Some(name) => profile
            .events
            .iter()
            .position(|e| &e.name == name)
            .ok_or_else(|| anyhow::anyhow!("no event '{name}' in the file"))?,
        None => profile.samples.first().map_or(0, |s| s.event as usize),
    };
    let mut sym = input.symbolizer();
    let report = parallelism::latency_report(
        &profile,
        &mut sym,
        &LatencyReportOptions {
            keys,
            by_latency,
            parallelism: ranges,
            event: event as _,
        },
    )?;
    let mut out = args.output.writer()?;
    let path = input.path().display().to_string();
    match args.output.format {
        Format::Json => culprit_output::json::write(
            &mut out,
            &LatencyJson {
                schema: LATENCY_SCHEMA,
                input: &path,
                report: &report,
            },
        )?,
        Format::Csv => culprit_output::csv::write(&mut out, &report.table(by_latency))?,
        Format::Text => {
            let doc = report.document(by_latency);
            culprit_output::text::write(&mut out, &doc, &args.output.text_options())?;
            culprit_output::text::write_notes(&mut std::io::stderr().lock(), &doc.notes, false)?;
        }
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        let outcome = "the report covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path.to_string(),
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}
