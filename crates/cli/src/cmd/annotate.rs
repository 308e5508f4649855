//! `culprit annotate`: per-instruction annotated disassembly of the hottest functions (or
//! one named function) of a perf.data file, one column per event, with skid figures and,
//! with `--deskid`, an estimate of the instruction that caused each non-precise sample.
//!
//! Text and JSON (one object per function, one per line) are documented in
//! docs/annotate.md; the de-skid rule in docs/skid.md. Exit status as `culprit report`:
//! 0 on success, 1 when the input is truncated (what was read is still annotated), 2 on
//! errors (unreadable file, unknown event, no samples in the asked-for function).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::ValueEnum;
use culprit_analysis::annotate::{annotate, AnnotateOptions, FunctionAnnotation, Target};
use culprit_analysis::pct;
use culprit_analysis::skid::EventClass;
use culprit_decode::model::Profile;
use culprit_symbols::disasm::Syntax;
use culprit_symbols::ReadPlan;
use serde_json::{json, Map, Value};

use crate::args::InputArgs;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnnotateFormat {
    /// Columns and disassembly, hottest rows marked.
    Text,
    /// One JSON object per function, one per line (schema in docs/annotate.md).
    Json,
}

/// Arguments of `culprit annotate`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Per-instruction annotated disassembly, one column per event, with skid estimates",
    after_help = "EXAMPLES:\n  culprit annotate                              the hottest functions of perf.data\n  culprit annotate -i run.data multiply_matrices --source\n  culprit annotate --addr 0x12af -e cpu-clock --format json\n  culprit annotate multiply_matrices --deskid   estimate the culprit of skidded samples\n\nPercentages are of the function's samples of each event (perf annotate --percent-type local-hits).\nDe-skid columns (marked ~) are estimates: see docs/skid.md."
)]
pub struct AnnotateArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Function to annotate (name as `culprit report` shows it); default: the hottest.
    #[arg(value_name = "SYMBOL", conflicts_with = "addr")]
    pub symbol: Option<String>,
    /// Annotate the function containing this address (hex, as objdump shows it).
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    pub addr: Option<u64>,
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
    /// Output format: text or json (see docs/annotate.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = AnnotateFormat::Text)]
    pub format: AnnotateFormat,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings (the
    /// inclusive cost of calls then comes from the kernel part of the chains only).
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
}

fn parse_addr(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(hex, 16).map_err(|e| format!("'{s}' is not a hex address: {e}"))
}

/// Runs `culprit annotate`.
pub fn run(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.top > 0, "--top needs at least 1");
    // `--call-graph dwarf` files: user chains are unwound while reading (inclusive cost on
    // calls); other files are untouched.
    let input = args.input.open();
    let profile = input.read(&ReadPlan {
        unwind: !args.no_unwind,
        ..ReadPlan::default()
    })?;
    let target = match (&args.symbol, args.addr) {
        (Some(s), _) => Target::Symbol(s.clone()),
        (None, Some(a)) => Target::Addr(a),
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
    let ann = annotate(&profile, &mut symbolizer, &opts)?;
    for w in profile.warnings.iter().chain(symbolizer.warnings()) {
        eprintln!("culprit: warning: {w}");
    }
    if ann.functions.is_empty() {
        let what = match &target {
            Target::Symbol(s) => format!("no samples in a function named '{s}'"),
            Target::Addr(a) => format!("no sampled function contains address {a:#x}"),
            Target::Hottest(_) => "no samples with a known function".to_string(),
        };
        let hot: Vec<String> = ann
            .candidates
            .iter()
            .take(10)
            .map(|(n, c)| format!("{n} ({c})"))
            .collect();
        if hot.is_empty() {
            anyhow::bail!("{what} in {}", args.input.path().display());
        }
        anyhow::bail!(
            "{what} in {}; sampled functions: {}",
            args.input.path().display(),
            hot.join(", ")
        );
    }
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        AnnotateFormat::Text => {
            let mut sources = SourceCache::default();
            for (k, f) in ann.functions.iter().enumerate() {
                if k > 0 {
                    writeln!(out)?;
                }
                write_text(&mut out, &args, &profile, f, tty, &mut sources)?;
            }
        }
        AnnotateFormat::Json => {
            for f in &ann.functions {
                serde_json::to_writer(&mut out, &to_json(f, args.deskid))?;
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: error: {}: reading stopped at byte offset {}: {}; the annotation covers \
             the {} records read before it",
            args.input.path().display(),
            stop.offset,
            stop.reason,
            stop.records_read
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn class_name(c: EventClass) -> &'static str {
    match c {
        EventClass::Memory => "memory",
        EventClass::Branch => "branch",
        EventClass::Stays => "stays",
    }
}

fn round4(v: f64) -> f64 {
    (v * 10000.0).round() / 10000.0
}

/// The instruction text with its branch label, as objdump would show it.
fn asm_text(row: &culprit_analysis::annotate::AnnotatedInsn) -> String {
    let mut t = row.insn.text.clone();
    if let Some(l) = &row.target_label {
        t.push(' ');
        t.push_str(l);
    }
    t
}

fn to_json(f: &FunctionAnnotation, deskid: bool) -> Value {
    let names: Vec<&str> = f.events.iter().map(|e| e.name.as_str()).collect();
    let per = |v: &[u64]| -> Value {
        let mut m = Map::new();
        for (i, n) in names.iter().enumerate() {
            m.insert(
                (*n).to_string(),
                Value::from(v.get(i).copied().unwrap_or(0)),
            );
        }
        Value::Object(m)
    };
    let instructions: Vec<Value> = f
        .insns
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let mut o = Map::new();
            o.insert("ip".into(), json!(format!("{:#x}", r.insn.addr)));
            o.insert(
                "bytes".into(),
                json!(r
                    .insn
                    .bytes
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")),
            );
            o.insert("asm".into(), json!(asm_text(r)));
            o.insert(
                "target".into(),
                match r.insn.target {
                    Some(t) => json!(format!("{t:#x}")),
                    None => Value::Null,
                },
            );
            o.insert("comment".into(), json!(r.comment));
            o.insert("source".into(), json!(r.srcline()));
            o.insert(
                "inline".into(),
                Value::Array(
                    r.source
                        .iter()
                        .map(|s| json!({"function": s.function, "file": s.file, "line": s.line}))
                        .collect(),
                ),
            );
            o.insert("samples".into(), per(&r.samples));
            o.insert("period".into(), per(&r.period));
            let mut pcts = Map::new();
            for (i, e) in f.events.iter().enumerate() {
                pcts.insert(e.name.clone(), json!(round4(pct(r.samples[i], e.samples))));
            }
            o.insert("percent".into(), Value::Object(pcts));
            if deskid {
                o.insert("deskid".into(), per(&r.deskid));
            }
            if f.has_callchains {
                o.insert("inclusive".into(), per(&r.inclusive));
            }
            if !f.derived.is_empty() {
                let mut d = Map::new();
                for c in &f.derived {
                    d.insert(c.name.clone(), json!(c.values[k].map(round4)));
                }
                o.insert("derived".into(), Value::Object(d));
            }
            Value::Object(o)
        })
        .collect();
    let mut skid = Map::new();
    for (e, s) in f.events.iter().zip(&f.skid) {
        let dist: Map<String, Value> = s
            .distance
            .iter()
            .map(|(d, n)| (d.to_string(), json!(n)))
            .collect();
        skid.insert(
            e.name.clone(),
            json!({
                "class": class_name(s.class),
                "samples": s.samples,
                "precise": s.precise,
                "spread90": s.spread90,
                "spread90_deskid": s.spread90_deskid,
                "moved": s.moved,
                "no_culprit": s.no_culprit,
                "distance": dist,
            }),
        );
    }
    json!({
        "symbol": f.symbol,
        "dso": f.dso,
        "dso_path": f.dso_path,
        "start": format!("{:#x}", f.start),
        "end": format!("{:#x}", f.end),
        "disassembled": f.disassembled,
        "events": names,
        "event_info": f.events.iter().map(|e| json!({
            "name": e.name,
            "class": class_name(e.class),
            "precise": e.precise,
            "samples": e.samples,
            "period": e.period,
            "file_samples": e.file_samples,
        })).collect::<Vec<_>>(),
        "deskid_is_estimate": deskid,
        "has_callchains": f.has_callchains,
        "derived": f.derived.iter().map(|d| json!({
            "name": d.name,
            "formula": d.formula,
            "function": d.function.map(round4),
        })).collect::<Vec<_>>(),
        "instructions": instructions,
        "skid": skid,
    })
}

/// Source files read for `--source`, by path (None: unreadable).
#[derive(Default)]
struct SourceCache {
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceCache {
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        let l = lines.as_ref()?.get((line as usize).checked_sub(1)?)?;
        Some(l.trim_end().to_string())
    }
}

const HOT: &str = "\x1b[1;31m";
const WARM: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

fn write_text(
    out: &mut dyn Write,
    args: &AnnotateArgs,
    profile: &Profile,
    f: &FunctionAnnotation,
    tty: bool,
    sources: &mut SourceCache,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "# Function: {} in {} ({}), {:#x}-{:#x}, {} instructions",
        f.symbol,
        f.dso,
        f.dso_path,
        f.start,
        f.end,
        f.insns.len()
    )?;
    if let Some(c) = &profile.meta.cmdline {
        writeln!(out, "# Command line: {c}")?;
    }
    for (e, s) in f.events.iter().zip(&f.skid) {
        let mut line = format!(
            "# Event '{}': {} samples in the function ({} in the file), {}",
            e.name,
            e.samples,
            e.file_samples,
            match (
                e.class,
                e.precise || s.precise == s.samples && s.samples > 0
            ) {
                (_, true) => "precise: never moved".to_string(),
                (EventClass::Stays, _) => "stays (cycles/instructions/clocks)".to_string(),
                (c, _) => format!("{} event: skids", class_name(c)),
            }
        );
        line.push_str(&format!("; skid spread90 = {} instructions", s.spread90));
        if args.deskid && s.class != EventClass::Stays {
            line.push_str(&format!(
                " ({} after de-skid; {} samples moved, {} without a culprit)",
                s.spread90_deskid, s.moved, s.no_culprit
            ));
            if !s.distance.is_empty() {
                let d: Vec<String> = s.distance.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                line.push_str(&format!("; distance to culprit: {}", d.join(" ")));
            }
        }
        writeln!(out, "{line}")?;
    }
    for d in &f.derived {
        match d.function {
            Some(v) => writeln!(
                out,
                "# {} = {} = {:.3} over the function",
                d.name, d.formula, v
            )?,
            None => writeln!(out, "# {} = {} (no samples)", d.name, d.formula)?,
        }
    }
    let movable = f
        .events
        .iter()
        .any(|e| e.class != EventClass::Stays && !e.precise);
    if args.deskid && movable {
        writeln!(
            out,
            "# ~ columns are ESTIMATES: non-precise samples of memory and branch events moved to \
             their plausible culprit (docs/skid.md); the raw columns are what the PMU reported"
        )?;
    } else if args.deskid {
        writeln!(
            out,
            "# --deskid: no event here moves (cycles, instructions, clocks and precise samples \
             stay where they were sampled)"
        )?;
    }
    if f.has_callchains {
        writeln!(
            out,
            "# incl: samples in callees of the call instruction (from call chains)"
        )?;
    }
    if !f.disassembled {
        writeln!(
            out,
            "# code not available (kernel, JIT or missing file): sampled addresses only"
        )?;
    }
    writeln!(out, "#")?;

    // Header: per event "samples  percent" [+ "~samples ~percent"] [+ "incl"], derived.
    // De-skid columns only for events whose samples can move.
    let tilde: Vec<bool> = f
        .events
        .iter()
        .map(|e| args.deskid && e.class != EventClass::Stays && !e.precise)
        .collect();
    let mut head = String::new();
    for (i, e) in f.events.iter().enumerate() {
        let w = 15;
        let name: String = e.name.chars().take(w).collect();
        head.push_str(&format!("{name:>w$} "));
        if tilde[i] {
            let dn: String = format!("~{}", e.name).chars().take(w).collect();
            head.push_str(&format!("{dn:>w$} "));
        }
        if f.has_callchains {
            head.push_str(&format!("{:>8} ", "incl"));
        }
    }
    for d in &f.derived {
        let n: String = d.name.chars().take(12).collect();
        head.push_str(&format!("{n:>12} "));
    }
    writeln!(out, "{head}  Address  Disassembly")?;

    // Hot rows: at least 10% of an event's function samples (raw or de-skidded).
    let is_hot = |k: usize| -> bool {
        let r = &f.insns[k];
        f.events.iter().enumerate().any(|(i, e)| {
            pct(r.samples[i], e.samples) >= 10.0
                || (tilde[i] && pct(r.deskid[i], e.samples) >= 10.0)
        })
    };
    let mut last_src: Option<(String, u32)> = None;
    for (k, r) in f.insns.iter().enumerate() {
        if args.source {
            if let Some(fr) = r.source.first() {
                let key = (fr.file.clone().unwrap_or_default(), fr.line.unwrap_or(0));
                if last_src.as_ref() != Some(&key) {
                    let text = sources.line(&key.0, key.1).unwrap_or_default();
                    let base = key.0.rsplit('/').next().unwrap_or(&key.0).to_string();
                    writeln!(
                        out,
                        "{:>w$}  : {base}:{}  {text}",
                        "",
                        key.1,
                        w = head.len()
                    )?;
                    // Inline frames: the innermost is named by the next (caller) frame.
                    for pair in r.source.windows(2) {
                        let callee = pair[0].function.as_deref().unwrap_or("?");
                        let at = &pair[1];
                        let file = at.file.as_deref().unwrap_or("?");
                        let file = file.rsplit('/').next().unwrap_or(file);
                        writeln!(
                            out,
                            "{:>w$}  : (inlined {callee} into {} at {file}:{})",
                            "",
                            at.function.as_deref().unwrap_or("?"),
                            at.line.unwrap_or(0),
                            w = head.len()
                        )?;
                    }
                    last_src = Some(key);
                }
            }
        }
        let mut line = String::new();
        for (i, e) in f.events.iter().enumerate() {
            let cell = |n: u64, tilde: bool| -> String {
                let t = if tilde { "~" } else { "" };
                if n == 0 {
                    format!("{:>15} ", "")
                } else {
                    format!("{:>15} ", format!("{t}{n} {t}{:.2}%", pct(n, e.samples)))
                }
            };
            line.push_str(&cell(r.samples[i], false));
            if tilde[i] {
                line.push_str(&cell(r.deskid[i], true));
            }
            if f.has_callchains {
                let v = r.inclusive[i];
                if v == 0 {
                    line.push_str(&format!("{:>8} ", ""));
                } else {
                    line.push_str(&format!("{v:>8} "));
                }
            }
        }
        for d in &f.derived {
            match d.values[k] {
                Some(v) => line.push_str(&format!("{v:>12.2} ")),
                None => line.push_str(&format!("{:>12} ", "")),
            }
        }
        let hot = is_hot(k);
        let marker = if hot { ">>" } else { "  " };
        let mut asm = asm_text(r);
        if let Some(c) = &r.comment {
            asm.push_str("  ");
            asm.push_str(c);
        }
        let bytes = if args.show_raw_insn {
            let b: Vec<String> = r.insn.bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("{:<24}", b.join(" "))
        } else {
            String::new()
        };
        let text = format!("{line}{marker}{:>7x}:  {bytes}{asm}", r.insn.addr);
        if tty && hot {
            writeln!(out, "{HOT}{text}{RESET}")?;
        } else if tty && r.samples.iter().any(|&s| s > 0) {
            writeln!(out, "{WARM}{text}{RESET}")?;
        } else {
            writeln!(out, "{text}")?;
        }
    }
    Ok(())
}
