//! `culprit annotate`: per-instruction annotated disassembly of the hottest functions (or
//! one named function) of a perf.data file, one column per event, with skid figures and,
//! with `--deskid`, an estimate of the instruction that caused each non-precise sample.
//!
//! Text and JSON (one object per function, one per line) are documented in
//! docs/annotate.md; the de-skid rule in docs/skid.md. Exit status as `culprit report`:
//! 0 on success, 1 when the input is truncated (what was read is still annotated), 2 on
//! errors (unreadable file, unknown event, no samples in the asked-for function).

use std::io::Write;
use std::process::ExitCode;

use culprit_analysis::annotate::{
    annotate_places, AnnotateOptions, SampledPlaces, SourceCache, Target, TextView,
};
use culprit_symbols::disasm::Syntax;
use culprit_symbols::ReadPlan;

use crate::args::{Format, InputArgs, OutputArgs};
use culprit_verbs::progress::Progress;

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
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    pub addr: Option<AddrArg>,
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

/// `--addr`: an SVMA, or a DSO's file offset.
#[derive(Debug, Clone, PartialEq)]
pub enum AddrArg {
    /// An address as objdump shows it.
    Svma(u64),
    /// `DSO+0xOFFSET` (the DSO's short name as report prints it).
    DsoOffset(String, u64),
}

fn parse_hex(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(hex, 16).map_err(|e| format!("'{s}' is not a hex address: {e}"))
}

/// Each distinct warning once, in first-seen order, with how many times it was given: the
/// reading and the symbolizer can each report the same problem for every function annotated.
fn count_repeats<'a>(warnings: impl Iterator<Item = &'a String>) -> Vec<(&'a str, usize)> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out: Vec<(&str, usize)> = Vec::new();
    for w in warnings {
        match seen.get(w.as_str()) {
            Some(&i) => out[i].1 += 1,
            None => {
                seen.insert(w, out.len());
                out.push((w, 1));
            }
        }
    }
    out
}

/// `--addr`: an address (objdump's, hex) or `DSO+0xOFFSET` as report prints it.
fn parse_addr(s: &str) -> Result<AddrArg, String> {
    // `[unknown] libfoo.so+0x1234` pasted whole is accepted too.
    let t = s.trim().trim_start_matches("[unknown]").trim();
    match t.rsplit_once('+') {
        Some((dso, off)) if !dso.is_empty() => Ok(AddrArg::DsoOffset(
            dso.to_string(),
            parse_hex(off).map_err(|e| format!("{e} (DSO+0xOFFSET)"))?,
        )),
        _ => parse_hex(t).map(AddrArg::Svma),
    }
}

/// Runs `culprit annotate`.
pub fn run(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.top > 0, "--top needs at least 1");
    args.output
        .require("annotate", &[Format::Text, Format::Json])?;
    // `--call-graph dwarf` files: user chains are unwound while reading (inclusive cost on
    // calls); other files are untouched.
    // Samples are folded into per-place counts while reading: memory follows the distinct
    // places, not the file.
    let input = args.input.open();
    let mut places = SampledPlaces::default();
    let bar = Progress::for_input(&input);
    let plan = ReadPlan {
        unwind: !args.no_unwind,
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, bar.callback(), |p, s| places.add(p, s))?;
    bar.finish();
    let target = match (&args.symbol, &args.addr) {
        (Some(s), _) => Target::Symbol(s.clone()),
        (None, Some(AddrArg::Svma(a))) => Target::Addr(*a),
        (None, Some(AddrArg::DsoOffset(d, o))) => Target::DsoOffset(d.clone(), *o),
        (None, None) => Target::Hottest(args.top),
    };
    let opts = AnnotateOptions {
        target: target.clone(),
        events: args.event.clone(),
        syntax: if args.intel {
            Syntax::Intel
        } else {
            Syntax::Att
        },
        deskid: args.deskid,
    };
    let mut symbolizer = input.symbolizer();
    let ann = annotate_places(&profile, &places, &mut symbolizer, &opts)?;
    for (w, times) in count_repeats(profile.warnings.iter().chain(symbolizer.warnings())) {
        let repeats = if times > 1 {
            format!(" ({times} times)")
        } else {
            String::new()
        };
        eprintln!(
            "culprit: warning: {}{repeats}",
            culprit_output::text::escape(w)
        );
    }
    if ann.functions.is_empty() {
        anyhow::bail!(ann.no_match_message(&target, &args.input.path().display().to_string()));
    }
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Json => {
            for f in &ann.functions {
                culprit_output::json::write_line(&mut out, &f.to_json(args.deskid))?;
            }
        }
        _ => {
            let view = TextView {
                source: args.source,
                raw_insn: args.show_raw_insn,
                deskid: args.deskid,
            };
            let text = args.output.text_options();
            let mut sources = SourceCache::default();
            for (k, f) in ann.functions.iter().enumerate() {
                if k > 0 {
                    writeln!(out)?;
                }
                let doc = f.document(profile.meta.cmdline.as_deref(), &view, &mut sources);
                culprit_output::text::write(&mut out, &doc, &text)?;
            }
        }
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        let path = args.input.path().display().to_string();
        let outcome = "the annotation covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}
