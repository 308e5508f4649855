//! `culprit flamegraph`: the SVG flame graph (inferno's, through `culprit_export::flamegraph`)
//! of one input, or the differential graph of two; progress, warnings and reading-stopped
//! messages. Exit status as `report`: 1 when an input is truncated (what was read is drawn).

use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::stacks::StackOptions;
use culprit_export::flamegraph::{self, FlameGraphOptions};
use culprit_symbols::ProfileInput;

use crate::export::{exit_code, print_warnings, Destination};
use crate::progress::Progress;

/// Draws the flame graph of `input` (against `other` for a differential graph) into `to`.
pub fn run(
    input: &ProfileInput,
    other: Option<&ProfileInput>,
    stacks: &StackOptions,
    opts: &FlameGraphOptions,
    to: &Destination,
) -> anyhow::Result<ExitCode> {
    let mut out: Box<dyn std::io::Write> = match to {
        Destination::File(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        Destination::Stdout => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let bar = Progress::for_input(input);
    let bar_other = match other {
        Some(o) => Progress::for_input(o),
        None => Progress::hidden(),
    };
    let summary = flamegraph::flamegraph(
        input,
        other,
        stacks,
        opts,
        &mut out,
        [Box::new(bar.callback()), Box::new(bar_other.callback())],
    )?;
    out.flush().context("cannot write the SVG")?;
    bar.finish();
    bar_other.finish();
    print_warnings(&summary.warnings);
    for (file, stop) in &summary.stopped {
        crate::stopped::report(file, &stop.describe(), "what was read is drawn");
    }
    Ok(exit_code(!summary.stopped.is_empty()))
}
