//! `culprit trace`: DTrace-style probes, predicates and aggregations over samples, on a
//! perf.data file or live. The language and its sessions are culprit-trace's
//! (`culprit_trace::session`); this module compiles the program (`program`: typed with the
//! tracepoint formats of the recording or of this machine), runs the session over a file
//! or records live (`live`: the program's sample probes turned into events, fed from
//! `collect::live`), and writes the outcome: the program's output as it streams (text) or
//! one JSON document, the notes, and the program's `exit()` status.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use culprit_collect::target::Target;
use culprit_symbols::{KernelSymbols, ProfileInput, Symbolizer, SymbolizerOptions};
use culprit_trace::session::{self, Printing, SessionError, SessionEvent, SessionIo};

use crate::progress::Progress;

mod live;
mod program;

/// What `culprit trace` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// The program's output as it is printed, and the aggregations nobody printed at END.
    Text,
    /// One JSON object at the end (docs/schemas/trace.schema.json).
    Json,
}

/// Where the program comes from.
#[derive(Debug, Clone)]
pub enum ProgramSource {
    /// The program's text (`-e`).
    Text(String),
    /// A program file (`-s`; a `#!` first line is ignored).
    File(PathBuf),
}

/// What the program runs over.
#[derive(Debug)]
pub enum TraceSource {
    /// The samples of a perf.data file (`-` reads a pipe-mode stream from stdin).
    File(PathBuf),
    /// A live recording.
    Live(LiveTrace),
}

/// Whom a live trace records.
#[derive(Debug, Clone)]
pub struct LiveTarget {
    /// The processes, the command or the system.
    pub target: Target,
    /// Only these CPUs.
    pub cpus: Option<Vec<u32>>,
}

/// A live recording's settings.
#[derive(Debug)]
pub struct LiveTrace {
    /// The target is processes, not whole CPUs (not `-a`).
    pub per_process: bool,
    /// The target, or why the flags give none: reported after the program compiled and its
    /// probes became events, as any other error of the live flags.
    pub target: anyhow::Result<LiveTarget>,
    /// Ring buffer size per CPU in pages (a power of two).
    pub mmap_pages: usize,
    /// The command line, for the live stream's header.
    pub cmdline: Vec<String>,
}

/// What to trace and how.
#[derive(Debug)]
pub struct TraceOptions {
    /// The program.
    pub program: ProgramSource,
    /// A file or a live recording.
    pub source: TraceSource,
    /// Where the symbols are found (a live trace names this machine's kernel unless other
    /// kernel symbols are given).
    pub symbols: SymbolizerOptions,
    /// Text or JSON.
    pub format: TraceFormat,
    /// Only what the program prints (like `#pragma D option quiet`).
    pub quiet: bool,
    /// Distinct keys kept per aggregation (and thread-local variables).
    pub max_keys: usize,
    /// Bytes all aggregations may hold together.
    pub agg_memory: usize,
    /// Print timing to stderr; over a file, read it into memory first so that the
    /// evaluation is timed alone.
    pub stats: bool,
}

/// Runs `culprit trace`: compiles the program, runs it over the file or the live
/// recording, writing its output (text, as it streams) or the JSON document to the writer
/// `output` opens (after the program compiled), and the session's messages and notes to
/// stderr. The exit status is the program's `exit()` value.
pub fn run(
    opts: TraceOptions,
    output: impl FnOnce() -> anyhow::Result<Box<dyn Write>>,
) -> anyhow::Result<ExitCode> {
    let (src, name) = program::source(&opts.program)?;
    let source = match opts.source {
        TraceSource::File(path) => {
            Source::File(Box::new(ProfileInput::new(path, opts.symbols.clone())))
        }
        TraceSource::Live(live) => Source::Live(live),
    };
    let input = match &source {
        Source::File(input) => Some(&**input),
        Source::Live(_) => None,
    };
    let limits = culprit_trace::Options {
        max_keys: opts.max_keys.max(1),
        quiet: opts.quiet,
        agg_memory: opts.agg_memory,
        tracepoints: Vec::new(),
    };
    let prog = program::compile(&src, &name, limits, input)?;
    let mut out = output()?;
    // A live trace names this machine's kernel; a file, its recorded kernel's (unless the
    // user gave the kernel's symbols).
    let mut sym_opts = opts.symbols;
    if input.is_none() && sym_opts.kernel_symbols == KernelSymbols::Recorded {
        sym_opts.kernel_symbols = KernelSymbols::Running;
    }
    let mut syms = Symbolizer::new(sym_opts);
    // The kernel's symbols take the kernel a while to print: start on another thread.
    if session::may_name_code(&src) {
        syms.prefetch_kernel_symbols();
    }
    let printing = match opts.format {
        TraceFormat::Json => Printing::Collect,
        TraceFormat::Text => Printing::Stream,
    };
    let bar = input.map(Progress::for_input);
    let input_name = input.map(|i| i.path().display().to_string());
    let io = SessionIo {
        syms: &mut syms,
        out: &mut out,
        printing,
        on_event: &mut print_event,
        progress: match &bar {
            Some(b) => Box::new(b.callback()),
            None => Box::new(|_, _| {}),
        },
    };
    let outcome = match source {
        Source::Live(live) => live::run(&prog, live, io)?,
        Source::File(input) => {
            session::trace_file(&prog, &input, opts.stats, io).map_err(session_error)?
        }
    };
    if let Some(b) = bar {
        b.finish();
    }
    let exit = outcome.exit;
    if printing == Printing::Collect {
        culprit_output::json::write_line(&mut out, &outcome.report(input_name))?;
        out.flush()?;
    } else {
        for n in &outcome.notes {
            eprintln!("culprit trace: note: {}", culprit_output::text::escape(n));
        }
    }
    Ok(exit_status(exit))
}

/// The exit status of the program's `exit()` value (success without one).
fn exit_status(exit: Option<i64>) -> ExitCode {
    match exit {
        Some(v) => ExitCode::from(u8::try_from(v).unwrap_or_else(|_| {
            // A status the shell cannot see: never turn it into 0 (success).
            eprintln!(
                "culprit: warning: exit({v}) is outside 0..255, which is all a process can return: exiting with 255"
            );
            255
        })),
        None => ExitCode::SUCCESS,
    }
}

/// What the program runs over, opened.
enum Source {
    /// The perf.data input.
    File(Box<ProfileInput>),
    /// A live recording.
    Live(LiveTrace),
}

/// Prints what a session tells while it runs, to stderr.
fn print_event(event: SessionEvent) {
    match event {
        SessionEvent::Bound {
            clauses,
            probes,
            input,
        } => eprintln!("culprit trace: {clauses} clause(s), {probes} probe(s) over {input}"),
        SessionEvent::Timing {
            samples,
            decode,
            evaluate,
        } => eprintln!(
            "culprit trace: stats: {samples} samples; decode {:.3} s; evaluate {:.3} s = {:.1} M samples/s (one core)",
            decode.as_secs_f64(),
            evaluate.as_secs_f64(),
            samples as f64 / evaluate.as_secs_f64().max(1e-9) / 1e6
        ),
        SessionEvent::LostSamples(n) => eprintln!(
            "culprit trace: warning: the kernel lost {n} samples (raise -m, or lower the rate)"
        ),
    }
}

/// A session's error for the caller: an I/O error stays an `io::Error` in the chain (a
/// closed stdout — `culprit trace … | head` — then ends quietly with status 0, as in every
/// verb).
fn session_error(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::Io(io) => io.into(),
        other => other.into(),
    }
}
