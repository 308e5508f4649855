//! `culprit script`: one line (text) or one JSON object per line (json) per sample, with its
//! call chain (perf script's layout), the decoded IBS registers and precise memory fields
//! (`culprit_analysis::listing`), written to the caller's writer as the samples are read.

use std::io::Write;
use std::process::ExitCode;

use culprit_analysis::listing::fields::{FieldList, PerfLayout};
use culprit_analysis::listing::Listing;
use culprit_decode::model::{Profile, Sample};
use culprit_output::text::{cut, expand_tabs};
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::progress::Progress;

/// How `culprit script` writes each sample.
#[derive(Debug, Clone)]
pub enum ScriptFormat {
    /// perf script's text lines.
    Text {
        /// perf script's `-F` fields (`None`: perf's default layout).
        fields: Option<FieldList>,
        /// Cut each line (tabs expanded) to this many columns (`None`: whole lines).
        width: Option<usize>,
    },
    /// One JSON object per sample, one per line (docs/script.md).
    Json,
}

/// What `culprit script` reads and how it writes it.
#[derive(Debug, Clone)]
pub struct ScriptOptions {
    /// The input, with where its symbols are found.
    pub input: ProfileInput,
    /// Text or JSON lines.
    pub format: ScriptFormat,
}

/// Writes every sample of `options.input` to `out` as the reader delivers it (perf's time
/// order, round by round: memory does not grow with the file), and flushes `out`. The exit
/// status is 0, or 1 after saying where and why the reading stopped (the samples before it
/// are written).
pub fn script(options: &ScriptOptions, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let (mut layout, width, json) = match &options.format {
        ScriptFormat::Text { fields, width } => {
            (fields.clone().map(PerfLayout::new), *width, false)
        }
        ScriptFormat::Json => (None, None, true),
    };
    let input = &options.input;
    let mut symbolizer = input.symbolizer();
    let chains = layout.as_ref().is_none_or(PerfLayout::may_print_chains);
    let mut listing = Listing::new(&mut symbolizer).with_callchains(chains);
    let mut failed: Option<anyhow::Error> = None;
    let mut print = |profile: &Profile, s: &Sample| -> anyhow::Result<()> {
        let sample = listing.sample(profile, s);
        if json {
            culprit_output::json::write_line(out, &sample)?;
            return Ok(());
        }
        let lines = match layout.as_mut() {
            Some(l) => l.lines(profile, &sample).map_err(|e| anyhow::anyhow!(e))?,
            None => sample.text_lines(),
        };
        for line in lines {
            match width {
                Some(w) => writeln!(out, "{}", cut(&expand_tabs(&line), w))?,
                None => writeln!(out, "{line}")?,
            }
        }
        Ok(())
    };
    let bar = Progress::for_input(input);
    // As perf script: user stacks of --call-graph dwarf files are unwound for the chains.
    let plan = ReadPlan {
        unwind: chains,
        skip_callchains: !chains,
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, bar.callback(), |p, s| {
        if failed.is_none() {
            failed = print(p, s).err();
        }
    })?;
    bar.finish();
    if let Some(e) = failed {
        return Err(e);
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        let path = input.path().display().to_string();
        let outcome = "the samples before it are shown";
        return Ok(crate::stopped::report(&path, &stop.describe(), outcome));
    }
    Ok(ExitCode::SUCCESS)
}
