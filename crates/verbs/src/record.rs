//! `culprit record` as a library call: records with `culprit_collect::record`'s options
//! (made from the flags by the caller, with the readers of [`flags`]), printing what a
//! recording prints as it goes: the default event's fallback, warnings and the notices of a
//! long recording on stderr, then the end-of-run [`summary`] (text on stderr, or JSON on
//! stdout; on stderr when the recording itself goes to stdout with `-o -`) and the warnings
//! about what it missed. The recorded objects go to the build-id cache.
//!
//! Exit status: the recorded command's (128 + signal if it was killed); 128 + the signal
//! when a SIGINT/SIGTERM interrupted the recording of a command; 0 for `-p`/`-a` without a
//! command; 0 when `--duration`/`--max-size` ended the recording (and the command culprit
//! terminated then); 141 when the output pipe was closed; 2 when recording failed.

pub mod flags;
pub mod summary;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use culprit_collect::launch::ChildExit;
use culprit_collect::modes::Notice;
use culprit_collect::record::{self, Output, RecordOptions, RecordSummary};

use summary::{notice_text, Summary};

/// How the end-of-run summary is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryFormat {
    /// `[ culprit record: … ]` lines on stderr (none with `quiet`).
    Text,
    /// One JSON line (docs/schemas/record.schema.json) on stdout, or on stderr when the
    /// recording is written to stdout; written even with `quiet`.
    Json,
}

/// Options of `culprit record`'s run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// What to record and where (no events: the default event, cycles or cpu-clock).
    pub record: RecordOptions,
    /// `-q`: no summary, notices nor information (warnings that matter still show).
    pub quiet: bool,
    /// The summary's format.
    pub format: SummaryFormat,
    /// Store the sampled objects in the build-id cache (not for a stream to stdout).
    pub buildid_cache: bool,
    /// The build-id cache directory; default `$PERF_BUILDID_DIR`, else `~/.debug`.
    pub buildid_dir: Option<PathBuf>,
}

/// What comes first, before the flags are read into options: sets the verbosity of event
/// opening (perf's `-vv` layout; 0 for none), and installs the SIGINT handler, so that a
/// Ctrl-C from now on is seen by the recording loop (and not lost while events are parsed
/// and opened).
pub fn begin(verbose: u8) {
    culprit_collect::verbose::set_level(verbose);
    culprit_collect::launch::install_sigint_handler();
}

/// The `-o` path as given: `-` for a stream.
fn output_path(output: &Output) -> &Path {
    match output {
        Output::File(path) => path,
        Output::Stream(_) => Path::new("-"),
    }
}

/// Records, prints the summary and warnings, and gives the exit status (see the module's
/// documentation). A recording that fails is reported on stderr here, with its status (2, or
/// 141 for a closed output pipe); the errors returned are those of writing to the terminal.
pub fn run(mut opts: RunOptions) -> anyhow::Result<ExitCode> {
    if opts.record.events.is_empty() {
        // The default event, and (information, silenced by -q) why it is cpu-clock here.
        let (spec, fallback) = record::default_event(&opts.record);
        if let Some(why) = fallback {
            let note = culprit_output::Note {
                kind: culprit_output::NoteKind::Info,
                text: why,
            };
            culprit_output::text::write_notes(&mut std::io::stderr(), &[note], opts.quiet)?;
        }
        opts.record.events.push(spec);
    }
    let mut warn = |w: String| eprintln!("culprit: warning: {}", culprit_output::text::escape(&w));
    let quiet = opts.quiet;
    let mut notice = |n: Notice| {
        if !quiet {
            eprintln!("{}", notice_text(&n));
        }
    };
    let summary = match record::record_with_notices(&opts.record, &mut warn, &mut notice) {
        Ok(summary) => summary,
        Err(e) => {
            // Printed here, once, with its own status: a closed pipe is a failure of
            // `record` (perf exits 141), not the quiet end of a report piped into `head`.
            eprintln!("culprit: error: {e}");
            return Ok(ExitCode::from(if e.is_broken_pipe() { 141 } else { 2 }));
        }
    };
    let output = output_path(&opts.record.output);
    let stream = matches!(opts.record.output, Output::Stream(_));
    if opts.buildid_cache && !stream {
        cache_build_ids(opts.buildid_dir.clone(), &summary);
    }
    let view = Summary {
        summary: &summary,
        output,
        switched: opts.record.modes.switch_output.is_some(),
    };
    match opts.format {
        SummaryFormat::Json if stream => {
            // stdout carries the recording.
            culprit_output::json::write_line(&mut std::io::stderr(), &view.json())?
        }
        SummaryFormat::Json => {
            culprit_output::json::write_line(&mut std::io::stdout(), &view.json())?
        }
        SummaryFormat::Text if opts.quiet => {}
        SummaryFormat::Text => {
            for line in view.text() {
                eprintln!("{line}");
            }
        }
    }
    for line in view.warnings() {
        eprintln!("{line}");
    }
    Ok(exit_status(
        &summary,
        opts.record.target.command().is_some(),
        opts.quiet,
    ))
}

/// Stores the objects with samples in the build-id cache (`dir`, else the default one),
/// warning when some could not be.
fn cache_build_ids(dir: Option<PathBuf>, summary: &RecordSummary) {
    let Some(dir) = dir.or_else(culprit_collect::buildid_cache::default_dir) else {
        return;
    };
    let r = culprit_collect::buildid_cache::add(&dir, &summary.build_ids);
    if let Some(first) = r.failed.first() {
        eprintln!(
            "culprit: warning: the build-id cache {} did not take {} object(s) ({first}); \
             reports of this file need the binaries unchanged",
            dir.display(),
            r.failed.len()
        );
    }
}

/// The exit status of a finished recording (`command`: a command was launched), with the
/// messages of a command that was terminated or killed (none with `quiet`).
fn exit_status(summary: &RecordSummary, command: bool, quiet: bool) -> ExitCode {
    // Interrupted while recording a command: 128 + the signal, as perf (which re-raises it).
    let interrupted_by = summary
        .interrupt_signal
        .filter(|_| command)
        .map(|sig| ExitCode::from((128 + sig).clamp(0, 255) as u8));
    if summary.forced {
        if !quiet {
            eprintln!(
                "culprit: interrupted twice: the command was terminated; the file is complete"
            );
        }
        return interrupted_by.unwrap_or(ExitCode::from(130));
    }
    if let Some(code) = interrupted_by {
        return code;
    }
    // --duration or --max-size ended the recording as asked: a command culprit ended then
    // is no failure.
    if summary.stop_reason.is_some()
        && matches!(
            summary.exit,
            Some(ChildExit::Signaled(libc::SIGTERM | libc::SIGKILL))
        )
    {
        return ExitCode::SUCCESS;
    }
    if let Some(e) = summary.exit {
        if let ChildExit::Signaled(sig) = e {
            if !quiet && sig != libc::SIGINT {
                eprintln!("culprit: the command was killed by signal {sig}; the file is complete");
            }
        }
        return ExitCode::from(e.code().clamp(0, 255) as u8);
    }
    ExitCode::SUCCESS
}
