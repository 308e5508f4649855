//! `culprit html`: the offline HTML report (`culprit_export::html`'s page) of one input, or
//! of its diff against another; progress, warnings, the reading-stopped message and the
//! summary of what was written. Exit status as `report`: 1 when the input is truncated.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use culprit_export::html::{self, HtmlOptions};
use culprit_symbols::ProfileInput;

use crate::export::{exit_code, print_warnings, Destination, SummaryMode};
use crate::progress::Progress;

/// Builds the page of `input` (with the diff against `other`), writes it to `to` and prints
/// the summary as `summary_mode` asks.
pub fn run(
    input: &ProfileInput,
    other: Option<&ProfileInput>,
    opts: &HtmlOptions,
    to: &Destination,
    summary_mode: SummaryMode,
) -> anyhow::Result<ExitCode> {
    let bar = Progress::for_input(input);
    let bar_other = match other {
        Some(o) => Progress::for_input(o),
        None => Progress::hidden(),
    };
    let page = html::build_page(
        input,
        other,
        opts,
        [Box::new(bar.callback()), Box::new(bar_other.callback())],
    )?;
    bar.finish();
    bar_other.finish();
    let (bytes, shown) = match to {
        Destination::Stdout => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            (html::write_page(&page, &mut out)?, "-".to_string())
        }
        Destination::File(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let n = html::write_page(&page, &mut out)
                .with_context(|| format!("cannot write {}", path.display()))?;
            out.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
            (n, path.display().to_string())
        }
    };
    let summary = page.summary(bytes);
    print_warnings(&summary.warnings);
    if let Some(stop) = &summary.stopped {
        crate::stopped::report(&summary.input, &stop.describe(), "what was read is shown");
    }
    match summary_mode {
        SummaryMode::Json => {
            let mut out = std::io::stdout().lock();
            culprit_output::json::write(&mut out, &summary)?;
        }
        SummaryMode::Text => eprintln!(
            "wrote {} ({}): {} samples, {} functions, {} call-tree nodes, {} annotated{}",
            culprit_output::text::escape(&shown),
            culprit_output::units::human_bytes(bytes),
            summary.samples,
            summary.functions,
            summary.tree_nodes,
            summary.annotated,
            if summary.diff { ", diff" } else { "" }
        ),
        SummaryMode::None => {}
    }
    Ok(exit_code(summary.stopped.is_some()))
}
