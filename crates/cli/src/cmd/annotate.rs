//! `culprit annotate`: per-instruction annotated disassembly of the hottest functions (or
//! one named function) of a perf.data file, one column per event, with skid figures and,
//! with `--deskid`, an estimate of the instruction that caused each non-precise sample.
//!
//! Text and JSON (one object per function, one per line) are documented in
//! docs/annotate.md; the de-skid rule in docs/skid.md. Exit status as `culprit report`:
//! 0 on success, 1 when the input is truncated (what was read is still annotated), 2 on
//! errors (unreadable file, unknown event, no samples in the asked-for function).

use std::process::ExitCode;

use culprit_analysis::annotate::{Target, TextView};
use culprit_symbols::disasm::Syntax;
use culprit_verbs::annotate::{AnnotateFormat, AnnotateOptions};

use crate::args::{Format, InputArgs, OutputArgs};

/// Arguments of `culprit annotate`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Per-instruction annotated disassembly, one column per event, with skid estimates",
    after_help = crate::help::layout("EXAMPLES:\n  culprit annotate                              the hottest functions of perf.data\n  culprit annotate -i run.data multiply_matrices --source\n  culprit annotate --addr 0x12af -e cpu-clock --format json\n  culprit annotate multiply_matrices --deskid   estimate the culprit of skidded samples\n\nPercentages are of the function's samples of each event (perf annotate --percent-type local-hits).\nDe-skid columns (marked ~) are estimates: see docs/skid.md.")
)]
pub struct AnnotateArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Function to annotate (name as `culprit report` shows it); default: the hottest.
    #[arg(value_name = "SYMBOL", conflicts_with = "addr")]
    pub symbol: Option<String>,
    /// Annotate the function containing this address: hex as objdump shows it, or
    /// DSO+0xOFFSET (a file offset, as report prints frames without a symbol).
    #[arg(long, value_name = "ADDR", value_parser = culprit_verbs::annotate::parse_addr)]
    pub addr: Option<Target>,
    /// Only these events (comma-separated names as in the file); default: all.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// Interleave source lines (DWARF), naming inlined functions.
    #[arg(long)]
    pub source: bool,
    /// Intel syntax instead of AT&T.
    #[arg(long)]
    pub intel: bool,
    /// Add de-skidded columns: non-precise samples of memory and branch events moved to
    /// their most plausible culprit (an estimate; docs/skid.md).
    #[arg(long)]
    pub deskid: bool,
    /// Show instruction bytes.
    #[arg(long = "show-raw-insn")]
    pub show_raw_insn: bool,
    /// Without SYMBOL or --addr: how many of the hottest functions to annotate.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub top: usize,
    /// Accepted for perf compatibility (text output is always stdio-like).
    #[arg(long, hide = true)]
    pub stdio: bool,
    /// `--format text|json` (JSON: one object per function, one per line; docs/annotate.md),
    /// `-o`, `--color`, `--width`.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings (the
    /// inclusive cost of calls then comes from the kernel part of the chains only).
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
}

/// Runs `culprit annotate`.
pub fn run(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.top > 0, "--top needs at least 1");
    args.output
        .require("annotate", &[Format::Text, Format::Json])?;
    let target = match (&args.symbol, &args.addr) {
        (Some(s), _) => Target::Symbol(s.clone()),
        (None, Some(addr)) => addr.clone(),
        (None, None) => Target::Hottest(args.top),
    };
    let options = AnnotateOptions {
        input: args.input.open(),
        annotate: culprit_analysis::annotate::AnnotateOptions {
            target,
            events: args.event.clone(),
            syntax: if args.intel {
                Syntax::Intel
            } else {
                Syntax::Att
            },
            deskid: args.deskid,
        },
        unwind: !args.no_unwind,
        format: match args.output.format {
            Format::Json => AnnotateFormat::Json,
            _ => AnnotateFormat::Text {
                view: TextView {
                    source: args.source,
                    raw_insn: args.show_raw_insn,
                    deskid: args.deskid,
                },
                text: args.output.text_options(),
            },
        },
    };
    culprit_verbs::annotate::annotate(&options, || args.output.writer())
}
