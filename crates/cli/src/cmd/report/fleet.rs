//! `culprit report -i a.data -i b.data …` and `culprit report --from-parquet DIR…`: one
//! hotspot report of several inputs (`culprit_analysis::fleet`). Exit status: 0; 1 when an
//! input could not be read or not to its end (the report of the others is still printed,
//! and stderr says which); 2 when no input could be read or an argument is wrong.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;

use culprit_analysis::fleet::{self, FleetOptions, FleetReport};
use culprit_analysis::hotspots::{self, Layout};
use culprit_output::Note;

use super::{hotspot_options, CallGraphArg, ReportArgs};
use crate::args::Format;
use culprit_verbs::progress::Progress;

/// Runs a report over several inputs.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let opts = FleetOptions {
        hotspots: hotspot_options(args)?,
        children: if args.no_children {
            Some(false)
        } else if args.children {
            Some(true)
        } else {
            None
        },
        unwind: !args.no_unwind && args.call_graph != Some(CallGraphArg::None),
    };
    let report = if args.from_parquet.is_empty() {
        read_files(args, &opts)?
    } else {
        culprit_parquet::read::report(&args.from_parquet, &opts)?
    };
    render(args, report)
}

/// The report of the `-i` files, with one progress bar over all of them.
fn read_files(args: &ReportArgs, opts: &FleetOptions) -> anyhow::Result<FleetReport> {
    let inputs = args.input.open();
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
    let report = fleet::report_inputs(&inputs, opts, &progress)?;
    bar.finish();
    Ok(report)
}

/// Prints the report (warnings on stderr), and says on stderr which inputs failed.
fn render(args: &ReportArgs, report: FleetReport) -> anyhow::Result<ExitCode> {
    let notes: Vec<Note> = report.warnings.iter().map(Note::warning).collect();
    culprit_output::text::write_notes(&mut std::io::stderr(), &notes, false)?;
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Text => {
            let layout = if args.group {
                Layout::Group
            } else {
                Layout::PerEvent
            };
            let doc = report.document(layout);
            culprit_output::text::write(&mut out, &doc, &args.output.text_options())?;
        }
        Format::Json => {
            let json = report.json(report.warnings.clone());
            culprit_output::json::write(&mut out, &json)?;
        }
        Format::Csv => {
            culprit_output::csv::write(&mut out, &hotspots::csv_table(&report.hotspots))?
        }
    }
    out.flush()?;
    if !report.failed() {
        return Ok(ExitCode::SUCCESS);
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
            culprit_verbs::stopped::report(&i.file, &stop.describe(), &outcome);
        }
    }
    Ok(ExitCode::from(1))
}
