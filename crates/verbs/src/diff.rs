//! `culprit diff`: the difference of two perf.data files (perf diff), over the two files'
//! hotspots (`culprit_analysis::diff`), and, when asked, their differential flame graph
//! (`culprit_export::flamegraph`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use culprit_analysis::diff::{self, Diff};
use culprit_analysis::stacks::StackOptions;
use culprit_export::flamegraph::{self, FlameGraphOptions};
use culprit_output::Note;
use culprit_symbols::ProfileInput;

use crate::progress::Progress;
use crate::stopped::render_via;

/// What `culprit diff` compares, and how.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// The baseline file.
    pub baseline: ProfileInput,
    /// The file compared with it.
    pub other: ProfileInput,
    /// The keys rows are matched by, and the events compared (empty: every event both
    /// files have).
    pub diff: diff::DiffOptions,
    /// Also draw the differential flame graph of the two files to this file (SVG): the
    /// other file's stacks, red where a frame's share grew, blue where it shrank (its event:
    /// the first of `diff.events`, else the first the other file sampled).
    pub flamegraph: Option<PathBuf>,
}

/// The difference of two files.
#[derive(Debug, Clone)]
pub struct Diffed {
    /// The diff report.
    pub diff: Diff,
}

/// Reads both files (with a progress bar each) and compares them; draws the differential
/// flame graph when asked; writes the diff's warnings about the inputs to stderr.
pub fn diff(options: &DiffOptions) -> anyhow::Result<Diffed> {
    let (a, b) = (&options.baseline, &options.other);
    let (bar_a, bar_b) = (Progress::for_input(a), Progress::for_input(b));
    let d = diff::diff_inputs(
        a,
        b,
        &options.diff,
        [Box::new(bar_a.callback()), Box::new(bar_b.callback())],
    )?;
    bar_a.finish();
    bar_b.finish();
    if let Some(path) = &options.flamegraph {
        draw_differential(a, b, &options.diff.events, path)?;
    }
    let notes: Vec<Note> = d.warnings.iter().map(Note::warning).collect();
    culprit_output::text::write_notes(&mut io::stderr(), &notes, false)?;
    Ok(Diffed { diff: d })
}

impl Diffed {
    /// The exit status: 1 when either input's reading stopped early (the diff of what was
    /// read is still reported, the diff's warnings say where), else 0.
    pub fn exit_status(&self) -> ExitCode {
        if self.diff.baseline.stopped.is_some() || self.diff.other.stopped.is_some() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
}

render_via!(Diffed, |r| r.diff);

/// Draws the differential flame graph of `b` against `a` to `path`.
fn draw_differential(
    a: &ProfileInput,
    b: &ProfileInput,
    events: &[String],
    path: &Path,
) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = io::BufWriter::new(file);
    let opts = FlameGraphOptions {
        event: events.first().cloned(),
        ..FlameGraphOptions::default()
    };
    let stacks = StackOptions {
        events: events.to_vec(),
        unwind: true,
        ..StackOptions::default()
    };
    let (bar_a, bar_b) = (Progress::for_input(a), Progress::for_input(b));
    // The diff has warned about the files already.
    flamegraph::flamegraph(
        a,
        Some(b),
        &stacks,
        &opts,
        &mut out,
        [Box::new(bar_a.callback()), Box::new(bar_b.callback())],
    )
    .with_context(|| format!("--flamegraph {}", path.display()))?;
    out.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
