//! culprit-export: the profile in the formats of the tools users have. Every export is
//! written from one model, [`culprit_analysis::stacks::StackProfile`] (call stacks read and
//! symbolized once), one module per format.
#![deny(missing_docs)]

pub mod autofdo;
pub mod bolt;
pub mod chrome;
mod common;
pub mod firefox;
pub mod flamegraph;
pub mod folded;
pub mod html;
pub mod parquet;
pub mod pgo;
pub mod pprof;
pub mod speedscope;
#[cfg(test)]
mod testutil;

use std::io::{self, Write};

use serde::Serialize;

use culprit_analysis::recording::Stopped;
use culprit_analysis::stacks::{stack_profile, StackError, StackOptions, StackProfile};
use culprit_symbols::ProfileInput;

pub use folded::FoldedOptions;

/// The formats `culprit export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Folded (collapsed) stacks, as `perf script | inferno-collapse-perf` writes them.
    Folded,
    /// BOLT's pre-aggregated profile (`perf2bolt -pa`), from branch data ([`bolt`]).
    Bolt,
    /// AutoFDO / LLVM text sample profile, from branch data ([`autofdo`]).
    Autofdo,
    /// pprof's gzipped `profile.proto` (`go tool pprof`, Parca, Pyroscope).
    Pprof,
    /// The Firefox Profiler's processed profile JSON, symbols embedded.
    Firefox,
    /// speedscope's JSON file format.
    Speedscope,
    /// Chrome trace-event JSON (chrome://tracing, Perfetto UI): the samples over time.
    Chrome,
    /// Parquet tables in a directory, one row per sample ([`parquet`], docs/fleet.md).
    Parquet,
}

impl Format {
    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::Bolt => "bolt",
            Format::Autofdo => "autofdo",
            Format::Pprof => "pprof",
            Format::Firefox => "firefox",
            Format::Speedscope => "speedscope",
            Format::Chrome => "chrome",
            Format::Parquet => "parquet",
        }
    }

    /// Whether the format is binary (not written to a terminal).
    pub fn is_binary(self) -> bool {
        match self {
            Format::Pprof | Format::Parquet => true,
            Format::Folded
            | Format::Bolt
            | Format::Autofdo
            | Format::Firefox
            | Format::Speedscope
            | Format::Chrome => false,
        }
    }

    /// What the stack profile must keep for this format.
    fn stack_options(self, base: &StackOptions) -> StackOptions {
        match self {
            Format::Folded | Format::Bolt | Format::Autofdo => base.clone(),
            // Line numbers in pprof's line entries, source files in speedscope's frames.
            Format::Pprof | Format::Speedscope => StackOptions {
                lines: true,
                ..base.clone()
            },
            // The timeline format needs every sample's time (Chrome is streamed by
            // [`chrome::export`]).
            Format::Firefox | Format::Chrome => StackOptions {
                timeline: true,
                ..base.clone()
            },
            // Streamed sample by sample by [`parquet::export_file`].
            Format::Parquet => base.clone(),
        }
    }

    /// The PGO format this is, if it is one: those read branch data, not call stacks.
    pub fn pgo(self) -> Option<pgo::PgoFormat> {
        match self {
            Format::Bolt => Some(pgo::PgoFormat::Bolt),
            Format::Autofdo => Some(pgo::PgoFormat::Autofdo),
            Format::Folded
            | Format::Pprof
            | Format::Firefox
            | Format::Speedscope
            | Format::Chrome
            | Format::Parquet => None,
        }
    }
}

/// What to export and how.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The format.
    pub format: Format,
    /// Which samples and events, inline expansion, unwinding.
    pub stacks: StackOptions,
    /// The one event of single-event formats (folded); `None`: the first event sampled.
    pub event: Option<String>,
    /// Frame naming of folded stacks.
    pub folded: FoldedOptions,
    /// bolt, autofdo: the binary (short name or path); `None`: the ELF file with the most
    /// taken branches.
    pub dso: Option<String>,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading or analysing the input failed.
    #[error(transparent)]
    Stacks(#[from] StackError),
    /// Writing the output failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The input cannot give this format (the message says why and what to record).
    #[error("{0}")]
    Unsupported(String),
    /// A PGO export (bolt, autofdo) failed.
    #[error(transparent)]
    Pgo(#[from] pgo::PgoError),
    /// Writing the Parquet tables failed.
    #[error(transparent)]
    Parquet(#[from] culprit_parquet::WriteError),
}

/// One event in an export summary.
#[derive(Debug, Clone, Serialize)]
pub struct EventSummary {
    /// The event's name.
    pub name: String,
    /// Samples exported.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
}

/// What an export wrote (`culprit export --summary json`: schema docs/schemas/export.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct ExportSummary {
    /// Version of this JSON layout.
    pub schema: u32,
    /// The format written.
    pub format: String,
    /// The input.
    pub input: String,
    /// Events in the profile, with what was exported of each.
    pub events: Vec<EventSummary>,
    /// The events written (single-event formats write one).
    pub exported_events: Vec<String>,
    /// Samples read (after filters).
    pub samples: u64,
    /// Distinct call stacks.
    pub stacks: u64,
    /// Lines or records written: folded, stack lines; pprof, samples (stack and thread
    /// pairs); firefox, samples; speedscope, stacks over all profiles; chrome, trace events.
    pub records: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Problems met.
    pub warnings: Vec<String>,
    /// Where reading stopped, for a damaged file.
    pub stopped: Option<Stopped>,
    /// bolt, autofdo: the binary and the branch data written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgo: Option<pgo::PgoSummary>,
    /// parquet: the export directory and what was written for each input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parquet: Option<parquet::ParquetSummary>,
}

/// Counts the bytes written through it.
pub(crate) struct Counting<'a> {
    pub(crate) inner: &'a mut dyn Write,
    pub(crate) bytes: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Reads `input` and writes it to `out` in `opts.format`; `progress(done, total)` reports
/// bytes read.
pub fn export(
    input: &ProfileInput,
    opts: &ExportOptions,
    out: &mut dyn Write,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<ExportSummary, ExportError> {
    if let Some(format) = opts.format.pgo() {
        return pgo::export_summary(input, opts, format, out, progress);
    }
    if opts.format == Format::Parquet {
        return Err(ExportError::Unsupported(
            "parquet is written to a directory: use parquet::export_file()".to_string(),
        ));
    }
    if opts.format == Format::Chrome {
        // Written as the samples are read: nothing kept per sample.
        let mut counting = Counting {
            inner: out,
            bytes: 0,
        };
        let streamed = chrome::export(input, &opts.stacks, &mut counting, progress)?;
        let bytes = counting.bytes;
        return Ok(summary_of(
            &streamed.profile,
            opts.format,
            all_events(&streamed.profile),
            streamed.records,
            bytes,
        ));
    }
    if opts.format == Format::Firefox && input.is_stdin() {
        // A stream is read once, in order: its samples are spilled to a temporary file as
        // they come, not kept in memory.
        let mut counting = Counting {
            inner: out,
            bytes: 0,
        };
        let streamed = firefox::export(input, &opts.stacks, &mut counting, progress)?;
        let bytes = counting.bytes;
        let mut summary = summary_of(
            &streamed.profile,
            opts.format,
            all_events(&streamed.profile),
            streamed.samples,
            bytes,
        );
        summary.warnings = format_warnings(&streamed.profile, opts.format, streamed.max_period);
        return Ok(summary);
    }
    let profile = stack_profile(input, &opts.format.stack_options(&opts.stacks), progress)?;
    write_profile(&profile, opts, out)
}

/// Writes an already read stack profile in `opts.format`.
pub fn write_profile(
    profile: &StackProfile,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut out = Counting {
        inner: out,
        bytes: 0,
    };
    let mut exported_events = Vec::new();
    let records =
        match opts.format {
            Format::Folded => {
                let event = single_event(profile, opts.event.as_deref())?;
                let stacks = match event {
                    Some(e) => {
                        exported_events.push(profile.events[e as usize].name.clone());
                        folded::folded_stacks(profile, e, &opts.folded)
                    }
                    None => Vec::new(),
                };
                folded::write(&mut out, &stacks)?;
                stacks.len() as u64
            }
            Format::Bolt | Format::Autofdo => {
                return Err(ExportError::Unsupported(format!(
                    "{} is written from branch data, not call stacks: use export()",
                    opts.format.name()
                )))
            }
            Format::Pprof => {
                exported_events = all_events(profile);
                pprof::write(profile, &mut out)?
            }
            Format::Firefox => {
                exported_events = all_events(profile);
                firefox::write(profile, &mut out)?
            }
            Format::Speedscope => {
                exported_events = all_events(profile);
                speedscope::write(profile, &mut out)?
            }
            Format::Chrome => {
                exported_events = all_events(profile);
                chrome::write(profile, &mut out)?
            }
            Format::Parquet => return Err(ExportError::Unsupported(
                "parquet is written to a directory, sample by sample: use parquet::export_file()"
                    .to_string(),
            )),
        };
    out.flush()?;
    Ok(summary_of(
        profile,
        opts.format,
        exported_events,
        records,
        out.bytes,
    ))
}

/// The summary of an export of `profile` that wrote `records` in `bytes`.
fn summary_of(
    profile: &StackProfile,
    format: Format,
    exported_events: Vec<String>,
    records: u64,
    bytes: u64,
) -> ExportSummary {
    ExportSummary {
        schema: 1,
        format: format.name().to_string(),
        input: profile.summary.input.clone(),
        events: profile
            .events
            .iter()
            .map(|e| EventSummary {
                name: e.name.clone(),
                samples: e.samples,
                period: e.period,
            })
            .collect(),
        exported_events,
        samples: profile.summary.samples,
        stacks: profile.samples.len() as u64,
        records,
        bytes,
        lost: profile.summary.lost,
        warnings: format_warnings(
            profile,
            format,
            profile.timeline.iter().map(|s| s.period).max().unwrap_or(0),
        ),
        stopped: profile.summary.stopped.clone(),
        pgo: None,
        parquet: None,
    }
}

/// The reading's warnings, and what the format changed of the data (`max_period`: the
/// largest sample period).
fn format_warnings(profile: &StackProfile, format: Format, max_period: u64) -> Vec<String> {
    let mut warnings = profile.summary.warnings.clone();
    if format == Format::Firefox {
        let scale = firefox::weight_scale(max_period);
        if scale > 1 {
            warnings.push(format!(
                "a sample's period ({max_period}) is too large for the Firefox Profiler's \
                 32-bit weights: every weight is divided by {scale}",
            ));
        }
    }
    warnings
}

/// The events of a multi-event format: every event of the profile.
fn all_events(profile: &StackProfile) -> Vec<String> {
    profile.events.iter().map(|e| e.name.clone()).collect()
}

/// The event a single-event format writes: the one named, else the first event sampled
/// (`None`: the profile has no samples).
pub fn single_event(
    profile: &StackProfile,
    name: Option<&str>,
) -> Result<Option<u32>, ExportError> {
    match name {
        Some(n) => profile.event_index(n).map(Some).ok_or_else(|| {
            ExportError::Unsupported(format!(
                "no samples of event '{n}' in the file (events sampled: {})",
                profile
                    .events
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }),
        None => Ok((!profile.events.is_empty()).then_some(0)),
    }
}
