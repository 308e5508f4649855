//! `culprit trace`: DTrace-style probes, predicates and aggregations over samples, on a
//! perf.data file (`-i`) or live (`-p`, `-a`, `-- CMD`). This module maps the flags onto
//! [`culprit_verbs::trace::TraceOptions`]; compiling the program and running the session
//! (file or live) are `culprit_verbs::trace`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use culprit_collect::record;
use culprit_verbs::trace::{
    LiveTarget, LiveTrace, ProgramSource, TraceFormat, TraceOptions, TraceSource,
};

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

/// Runs `culprit trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    args.output
        .require("trace", &[Format::Text, Format::Json])?;
    refuse_inapplicable(&args)?;
    let program = match (&args.program, &args.script) {
        (Some(p), None) => ProgramSource::Text(p.clone()),
        (None, Some(f)) => ProgramSource::File(f.clone()),
        _ => bail!("give the program with -e PROGRAM or -s FILE"),
    };
    let source = match &args.input.input {
        Some(path) => TraceSource::File(path.clone()),
        None => TraceSource::Live(live_trace(&args)),
    };
    let opts = TraceOptions {
        program,
        source,
        symbols: args.input.symbolizer_options(),
        format: match args.output.format {
            Format::Json => TraceFormat::Json,
            _ => TraceFormat::Text,
        },
        quiet: args.quiet,
        max_keys: args.max_keys,
        agg_memory: args.agg_memory,
        stats: args.stats,
    };
    culprit_verbs::trace::run(opts, || args.output.unpaged_writer())
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

/// The live recording of the flags: the target's usage error, if any, is the session's to
/// report (after the program's).
fn live_trace(args: &TraceArgs) -> LiveTrace {
    let target = if args.target.is_given() {
        args.target.choice("trace", false).map(|c| LiveTarget {
            target: c.target,
            cpus: c.cpus,
        })
    } else {
        Err(anyhow!(
            "nothing to trace: give -i PERF.DATA, -p PID, -a, or a command after --"
        ))
    };
    LiveTrace {
        per_process: !args.target.all_cpus,
        target,
        mmap_pages: args.mmap_pages,
        cmdline: std::env::args().collect(),
    }
}
