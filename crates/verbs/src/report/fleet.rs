//! `culprit report -i a.data -i b.data …` and `culprit report --from-parquet DIR…`: one
//! hotspot report of several inputs (`culprit_analysis::fleet`). Exit status: 0; 1 when an
//! input could not be read or not to its end (the report of the others is still printed,
//! and stderr says which); errors (2) when no input could be read or an option is wrong.

use std::process::ExitCode;
use std::sync::Mutex;

use culprit_analysis::fleet::{self, FleetOptions, FleetReport};
use culprit_output::Note;

use super::{hotspot_options, Report, ReportOptions, View};
use crate::progress::Progress;

/// Runs a report over several inputs.
pub(super) fn run(opts: &ReportOptions) -> anyhow::Result<Report> {
    let fleet_opts = FleetOptions {
        hotspots: hotspot_options(opts)?,
        children: opts.children,
        unwind: opts.unwind(),
    };
    let report = if opts.from_parquet.is_empty() {
        read_files(&opts.inputs, &fleet_opts)?
    } else {
        culprit_parquet::read::report(&opts.from_parquet, &fleet_opts)?
    };
    Ok(Report {
        warnings: report.warnings.iter().map(Note::warning).collect(),
        view: View::Fleet {
            report,
            layout: opts.layout(),
        },
        after: Vec::new(),
        stopped: None,
    })
}

/// The report of the input files, with one progress bar over all of them.
fn read_files(
    inputs: &[culprit_symbols::ProfileInput],
    opts: &FleetOptions,
) -> anyhow::Result<FleetReport> {
    // Bytes of the inputs before each one (stdin and unreadable inputs count 0).
    let sizes: Vec<u64> = inputs
        .iter()
        .map(|i| {
            (!i.is_stdin())
                .then(|| std::fs::metadata(i.path()).ok())
                .flatten()
                .map_or(0, |m| m.len())
        })
        .collect();
    let total: u64 = sizes.iter().sum();
    let before: Vec<u64> = sizes
        .iter()
        .scan(0, |acc, &s| {
            let b = *acc;
            *acc += s;
            Some(b)
        })
        .collect();
    let bar = if total > 0 {
        Progress::new("reading", total)
    } else {
        Progress::hidden()
    };
    let callback = Mutex::new(bar.callback());
    let progress = |i: usize, done: u64, _total: u64| {
        if let Ok(mut cb) = callback.lock() {
            cb(before.get(i).copied().unwrap_or(0) + done, total);
        }
    };
    let report = fleet::report_inputs(inputs, opts, &progress)?;
    bar.finish();
    Ok(report)
}

/// Says on stderr which inputs could not be read, or not to their end, and gives the exit
/// status: 1 then, else 0.
pub(super) fn finish(report: &FleetReport) -> ExitCode {
    if !report.failed() {
        return ExitCode::SUCCESS;
    }
    for i in &report.inputs {
        if let Some(e) = &i.error {
            eprintln!(
                "culprit: error: {}: not read ({e}); the report covers the other inputs",
                culprit_output::text::escape(&i.file)
            );
        }
        if let Some(stop) = &i.stopped {
            let samples: u64 = i.events.iter().map(|e| e.samples).sum();
            let outcome = format!("the report counts its {samples} samples read before it");
            crate::stopped::report(&i.file, &stop.describe(), &outcome);
        }
    }
    ExitCode::from(1)
}
