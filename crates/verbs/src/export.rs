//! `culprit export`: one input in another tool's format (`culprit_export`), or many inputs
//! into a directory of Parquet tables; the progress of each read, the warnings, the
//! reading-stopped message and the summary of what was written. Exit status as `report`:
//! 0 on success, 1 when an input is truncated (what was read is still exported).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use culprit_export::parquet::ParquetOptions;
use culprit_export::{ExportOptions, ExportSummary};
use culprit_symbols::ProfileInput;

use crate::progress::Progress;

/// How the summary of what was written is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SummaryMode {
    /// One line on stderr.
    #[default]
    Text,
    /// A JSON object on stdout.
    Json,
    /// Nothing.
    None,
}

/// Where an export is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// A file, created or truncated.
    File(PathBuf),
}

impl Destination {
    /// `-o PATH` as given: none or `-` is stdout.
    pub fn of(path: Option<&Path>) -> Destination {
        match path {
            Some(p) if p.as_os_str() != "-" => Destination::File(p.to_path_buf()),
            _ => Destination::Stdout,
        }
    }
}

/// Exports `input` in `opts.format` (any format but Parquet) to `to`, printing warnings, a
/// stop in the input and the summary as `summary` asks.
pub fn export(
    input: &ProfileInput,
    opts: &ExportOptions,
    to: &Destination,
    summary_mode: SummaryMode,
) -> anyhow::Result<ExitCode> {
    let progress = Progress::for_input(input);
    let summary = match to {
        Destination::File(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let summary = culprit_export::export(input, opts, &mut out, progress.callback())?;
            out.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
            summary
        }
        Destination::Stdout => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            let summary = culprit_export::export(input, opts, &mut out, progress.callback())?;
            out.flush()?;
            summary
        }
    };
    progress.finish();
    print_warnings(&summary.warnings);
    if let Some(stop) = &summary.stopped {
        crate::stopped::report(
            &summary.input,
            &stop.describe(),
            "what was read is exported",
        );
    }
    print_summary(&summary, summary_mode)?;
    Ok(exit_code(summary.stopped.is_some()))
}

/// Exports every input into the Parquet tables of the directory `dir` (one file id per
/// input), then prints the warnings and the summary of all of them.
pub fn export_parquet(
    inputs: &[ProfileInput],
    dir: &Path,
    opts: &ParquetOptions,
    summary_mode: SummaryMode,
) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    for input in inputs {
        let progress = Progress::for_input(input);
        let file = culprit_export::parquet::export_file(input, dir, opts, progress.callback())
            .with_context(|| format!("exporting {}", input.path().display()))?;
        progress.finish();
        if let Some(stop) = &file.stopped {
            crate::stopped::report(&file.input, &stop.describe(), "what was read is exported");
        }
        files.push(file);
    }
    let summary = culprit_export::parquet::summary(dir, files);
    print_warnings(&summary.warnings);
    print_summary(&summary, summary_mode)?;
    let truncated = summary
        .parquet
        .as_ref()
        .is_some_and(|p| p.files.iter().any(|f| f.stopped.is_some()));
    Ok(exit_code(truncated))
}

/// `culprit: warning: …` on stderr for each warning (escaped).
pub(crate) fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("culprit: warning: {}", culprit_output::text::escape(w));
    }
}

/// 1 when an input was truncated (what was read was still written), else 0.
pub(crate) fn exit_code(truncated: bool) -> ExitCode {
    if truncated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints what an export wrote, as `mode` asks.
fn print_summary(summary: &ExportSummary, mode: SummaryMode) -> anyhow::Result<()> {
    match mode {
        SummaryMode::Json => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            culprit_output::json::write(&mut out, &summary)?;
        }
        SummaryMode::Text => {
            let events = if summary.exported_events.is_empty() {
                "no samples".to_string()
            } else {
                summary.exported_events.join(",")
            };
            match &summary.parquet {
                Some(p) => eprintln!(
                    "exported {} samples ({}) of {} file(s) as parquet into {}: {}",
                    summary.samples,
                    culprit_output::text::escape(&events),
                    p.files.len(),
                    culprit_output::text::escape(&p.dir),
                    culprit_output::units::human_bytes(summary.bytes)
                ),
                None => eprintln!(
                    "exported {} samples ({}) as {}: {} records, {}",
                    summary.samples,
                    culprit_output::text::escape(&events),
                    summary.format,
                    summary.records,
                    culprit_output::units::human_bytes(summary.bytes)
                ),
            }
        }
        SummaryMode::None => {}
    }
    Ok(())
}
