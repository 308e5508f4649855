//! `culprit trace`: DTrace-style probes, predicates and aggregations over samples, on a
//! perf.data file (`-i`) or live (`-p`, `-a`, `-- CMD`). The language and its sessions
//! (file or live) are culprit-trace's (`culprit_trace::session`); this module parses the
//! flags and renders the outcome, and `trace_live` records live and feeds the session.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use culprit_collect::live::LiveOptions;
use culprit_collect::record;
use culprit_symbols::{KernelSymbols, Symbolizer};
use culprit_trace::session::{self, Printing, SessionEvent, SessionIo};
use culprit_trace::{Options, Program};

use super::trace_live;
use crate::args::{Format, InputArgs, OutputArgs, TargetArgs};

/// Arguments of `culprit trace`.
#[derive(clap::Args, Debug)]
#[command(
    about = "DTrace-style probes, predicates and aggregations over samples (files or live)",
    after_help = crate::help::layout("EXAMPLES:\n  culprit trace -i perf.data -e 'pmc:::cpu-clock { @[sym] = count(); }'\n  culprit trace -e 'profile:::hz-999 /execname == \"prog\"/ { @[sym] = count(); }' -- ./prog\n  culprit trace -s examples/trace/dcache-misses-per-exec.d -i ibs.data\n  culprit trace -e 'ibs-exec-2000 { @[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); }' -a -- sleep 5\n\nThe language (probes, built-ins, args[0] fields, aggregations) is described in docs/trace.md.")
)]
pub struct TraceArgs {
    /// The program text.
    #[arg(
        short = 'e',
        long = "expr",
        value_name = "PROGRAM",
        conflicts_with = "script"
    )]
    pub program: Option<String>,
    /// A program file (a `#!` first line is ignored).
    #[arg(short = 's', long = "script", value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Run over the samples of a perf.data file (`-i FILE`; `-` reads a pipe-mode stream
    /// from stdin) instead of recording live, with where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Live: what to record (`-p PID…`, `-a`, `-C CPUS`, `-- COMMAND…`).
    #[command(flatten)]
    pub target: TargetArgs,
    /// `--format text|json` (json: one object, schema in docs/schemas/trace.schema.json),
    /// `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Quiet: only what the program prints (like `#pragma D option quiet`).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Distinct keys kept per aggregation (and thread-local variables); more are dropped and
    /// counted in a note.
    #[arg(long = "max-keys", value_name = "N", default_value_t = 100_000)]
    pub max_keys: usize,
    /// Bytes all aggregations may hold together (K, M or G suffix; estimated per key:
    /// histograms and offenders() cost the most); past it new keys are dropped and counted
    /// in a note.
    #[arg(long = "agg-memory", value_name = "SIZE", default_value = "512M",
          value_parser = culprit_trace::agg::parse_size)]
    pub agg_memory: usize,
    /// Print timing to stderr; offline, reads the file into memory first so that the
    /// evaluation is timed alone (samples per second).
    #[arg(long = "stats")]
    pub stats: bool,
    /// Live: ring buffer size per CPU in pages (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES", default_value_t = record::DEFAULT_MMAP_PAGES)]
    pub mmap_pages: usize,
}

/// The largest trace program file read (`-s`): far beyond any program, and small enough
/// that `-s /dev/zero` fails at once instead of filling memory.
const MAX_PROGRAM_BYTES: u64 = 16 << 20;

/// Reads a trace program file (`-s FILE`), refusing one larger than [`MAX_PROGRAM_BYTES`]
/// (a device or FIFO is read only that far).
fn read_program(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let what = || format!("cannot read {}", path.display());
    let file = std::fs::File::open(path).with_context(what)?;
    let mut bytes = Vec::new();
    file.take(MAX_PROGRAM_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_PROGRAM_BYTES,
        "{}: a trace program of more than {} MiB; not read",
        path.display(),
        MAX_PROGRAM_BYTES >> 20
    );
    // As read_to_string says it.
    String::from_utf8(bytes)
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
        .with_context(what)
}

/// Runs `culprit trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    args.output
        .require("trace", &[Format::Text, Format::Json])?;
    refuse_inapplicable(&args)?;
    let (src, name) = match (&args.program, &args.script) {
        (Some(p), None) => (p.clone(), "<program>".to_string()),
        (None, Some(f)) => (read_program(f)?, f.display().to_string()),
        _ => bail!("give the program with -e PROGRAM or -s FILE"),
    };
    let input = args.input.input.is_some().then(|| args.input.open());
    let opts = Options {
        max_keys: args.max_keys.max(1),
        quiet: args.quiet,
        agg_memory: args.agg_memory,
        tracepoints: trace_live::tracepoint_formats(&src, input.as_ref()),
    };
    let prog = match culprit_trace::compile(&src, &opts) {
        Ok(p) => p,
        Err(e) => bail!("{name}:{e}"),
    };
    let mut out = args.output.unpaged_writer()?;
    // A live trace names this machine's kernel; a file, its recorded kernel's (unless the
    // user gave the kernel's symbols).
    let mut sym_opts = args.input.symbolizer_options();
    if args.input.input.is_none() && sym_opts.kernel_symbols == KernelSymbols::Recorded {
        sym_opts.kernel_symbols = KernelSymbols::Running;
    }
    let mut syms = Symbolizer::new(sym_opts);
    // The kernel's symbols take the kernel a while to print: start on another thread.
    if session::may_name_code(&src) {
        syms.prefetch_kernel_symbols();
    }
    let printing = match args.output.format {
        Format::Json => Printing::Collect,
        _ => Printing::Stream,
    };
    let bar = args
        .input
        .input
        .is_some()
        .then(|| culprit_verbs::progress::Progress::for_input(&args.input.open()));
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
    let outcome = match &args.input.input {
        None => {
            let warn = Box::new(|w: String| {
                eprintln!(
                    "culprit trace: warning: {}",
                    culprit_output::text::escape(&w)
                )
            });
            trace_live::trace_live(&prog, live_options(&prog, &args)?, warn, io)?
        }
        Some(_) => session::trace_file(&prog, &args.input.open(), args.stats, io)
            .map_err(trace_live::session_error)?,
    };
    if let Some(b) = bar {
        b.finish();
    }
    let exit = outcome.exit;
    if printing == Printing::Collect {
        let input = args.input.input.as_ref().map(|p| p.display().to_string());
        culprit_output::json::write_line(&mut out, &outcome.report(input))?;
        out.flush()?;
    } else {
        for n in &outcome.notes {
            eprintln!("culprit trace: note: {}", culprit_output::text::escape(n));
        }
    }
    Ok(match exit {
        Some(v) => ExitCode::from(u8::try_from(v).unwrap_or_else(|_| {
            // A status the shell cannot see: never turn it into 0 (success).
            eprintln!(
                "culprit: warning: exit({v}) is outside 0..255, which is all a process can return: exiting with 255"
            );
            255
        })),
        None => ExitCode::SUCCESS,
    })
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

/// Refuses flags that do not apply: a live target with `-i`, and the live-only or
/// file-only flags in the other mode.
fn refuse_inapplicable(args: &TraceArgs) -> anyhow::Result<()> {
    if args.input.input.is_some() {
        if args.target.is_given() {
            bail!(
                "-i runs the program over a recording: -p, -a, -C and a command record live                  (give either -i FILE or a live target)"
            );
        }
        if args.mmap_pages != record::DEFAULT_MMAP_PAGES {
            bail!("-m sizes the live recording's ring buffers: it does not apply to -i");
        }
    } else if args.stats {
        bail!("--stats times the evaluation over a file: give -i FILE");
    }
    Ok(())
}

/// The live options of a trace: the events of the program's probes, the target.
fn live_options(prog: &Program, args: &TraceArgs) -> anyhow::Result<LiveOptions> {
    let events = trace_live::live_events(prog, !args.target.all_cpus)?;
    if !args.target.is_given() {
        bail!("nothing to trace: give -i PERF.DATA, -p PID, -a, or a command after --");
    }
    let choice = args.target.choice("trace", false)?;
    Ok(LiveOptions {
        events,
        rate: None,
        target: choice.target,
        cpus: choice.cpus,
        mmap_pages: args.mmap_pages,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    })
}
