//! `culprit report`: reads a perf.data file (culprit's or perf's), symbolizes it and prints
//! hotspots grouped by sort keys, per event, as text, JSON or CSV.
//!
//! The JSON and CSV formats are documented in docs/report.md; JSON is produced from the
//! `Json*` structs below. Exit status: 0 on success; 1 when the input is truncated or corrupt
//! (the report of what was read is still printed, and stderr says where reading stopped);
//! 2 when nothing could be read or an argument is wrong.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use culprit_analysis::hotspots::{hotspots_aggregated, SampleAggregator};
use culprit_analysis::{
    CallGraphMode, CallNode, EventTotals, Filters, HotspotOptions, Hotspots, SortKey,
};
use culprit_decode::model::Profile;
use culprit_decode::unwind::UserStackUnwinder;
use culprit_symbols::unwind::DwarfUnwinder;
use culprit_symbols::{Symbolizer, SymbolizerOptions};
use serde::Serialize;
use serde_json::{Map, Value};

/// Output format of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Aligned table with header lines.
    Text,
    /// One JSON object (schema in docs/report.md).
    Json,
    /// One CSV row per report row (columns in docs/report.md).
    Csv,
}

/// Call-graph order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallGraphArg {
    /// Paths from the outermost caller down to each row's function.
    Caller,
    /// Paths from each row's function out to its callers.
    Callee,
    /// No call graphs.
    None,
}

/// Arguments of `culprit report`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Hotspot report from a perf.data file (culprit's or perf's)",
    after_help = "EXAMPLES:\n  culprit report                             perf.data, sorted by comm,dso,sym\n  culprit report -i run.data --sort sym --no-children --top 20\n  culprit report --sort dso,sym -g callee --percent-limit 1\n  culprit report --sort srcline --comm myprog --format json\n\nPercentages are of each event's total period over all its samples (as `perf report`)."
)]
pub struct ReportArgs {
    /// Input perf.data file (`-` reads a pipe-mode stream from stdin).
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub input: PathBuf,
    /// Sort (group) keys, comma-separated: comm, pid, tid, dso, sym, srcline, srcfile, ip, cpu.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "comm,dso,sym"
    )]
    pub sort: String,
    /// Only these events (comma-separated names as in the file); default: all.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub event: Vec<String>,
    /// Show children (inclusive) percentages from call chains and sort by them (the default
    /// when the file has call chains).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,
    /// Self percentages only.
    #[arg(long = "no-children", overrides_with = "children")]
    pub no_children: bool,
    /// Call graph under each row: caller, callee or none (default none).
    #[arg(short = 'g', long = "call-graph", value_enum, value_name = "ORDER")]
    pub call_graph: Option<CallGraphArg>,
    /// Show at most N rows.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Hide rows below this percentage (children percentage in children mode).
    #[arg(long = "percent-limit", value_name = "PERCENT", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Only samples of these process ids (comma-separated).
    #[arg(long, value_name = "PID", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Only samples of these thread ids (comma-separated).
    #[arg(long, value_name = "TID", value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Only samples of these commands (comma-separated).
    #[arg(long, value_name = "COMM", value_delimiter = ',')]
    pub comm: Vec<String>,
    /// Only rows in these DSOs (short names or paths, comma-separated).
    #[arg(long, value_name = "DSO", value_delimiter = ',')]
    pub dso: Vec<String>,
    /// Output format: text, json or csv (see docs/report.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Per-function Top-Down level 1 of a `culprit record --topdown` file (an estimate from
    /// sampled slot counts; text or json, see docs/stat.md).
    #[arg(long = "topdown")]
    pub topdown: bool,
    /// Worst offenders by the paired-sampling detector (bounded memory; docs/offenders.md)
    /// instead of hotspots; text or json.
    #[arg(long = "offenders")]
    pub offenders: bool,
    /// --offenders: the first counter's terminal value (all samples of the event).
    #[arg(long = "t1", value_name = "N", requires = "offenders")]
    pub t1: Option<u64>,
    /// --offenders: the second counter's terminal value (samples at the candidate).
    #[arg(long = "t2", value_name = "N", requires = "offenders")]
    pub t2: Option<u64>,
    /// --offenders: what --t1/--t2 count (samples, or events = sum of sample periods).
    #[arg(long = "offenders-unit", value_enum, default_value_t = super::top::UnitArg::Samples)]
    pub offenders_unit: super::top::UnitArg,
    /// --offenders: also build the exact per-address histogram and compare (precision,
    /// recall of the top-1/top-5, memory).
    #[arg(long = "exact", requires = "offenders")]
    pub exact: bool,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings (their call
    /// chains then have only the kernel part). `-g none` does not unwind either.
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
}

/// Runs `culprit report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if args.offenders {
        return super::top::report_offenders(&super::top::OffendersReport {
            input: &args.input,
            events: &args.event,
            settings: super::top::OffenderSettings {
                t1: args.t1,
                t2: args.t2,
                unit: args.offenders_unit,
            },
            exact: args.exact,
            json: args.format == ReportFormat::Json,
        });
    }
    let keys = SortKey::parse_list(&args.sort).context("error parsing flag --sort")?;
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    let bar = progress_bar();
    let filters = Filters {
        pids: args.pid.clone(),
        tids: args.tid.clone(),
        comms: args.comm.clone(),
        dsos: args.dso.clone(),
    };
    // Chains are needed for children (the default when the file has them) and call graphs.
    let with_chains = !args.no_children
        || matches!(
            args.call_graph,
            Some(CallGraphArg::Caller) | Some(CallGraphArg::Callee)
        );
    // Samples are folded while reading (no Vec<Sample>): memory follows distinct places.
    let mut agg = SampleAggregator::new(with_chains, &filters);
    let profile = read_profile(&args, bar.as_ref(), &mut agg)?;
    agg.finish();
    let has_chains = agg.has_callchains();
    let children = if args.no_children {
        false
    } else {
        args.children || has_chains
    };
    let opts = HotspotOptions {
        keys,
        events: args.event.clone(),
        children,
        filters,
        percent_limit: args.percent_limit,
        top: args.top,
        call_graph: match args.call_graph {
            Some(CallGraphArg::Caller) => CallGraphMode::Caller,
            Some(CallGraphArg::Callee) => CallGraphMode::Callee,
            Some(CallGraphArg::None) | None => CallGraphMode::None,
        },
        call_graph_threshold: 0.5,
    };
    let mut symbolizer = Symbolizer::new(SymbolizerOptions::default());
    if let Some(b) = &bar {
        b.set_message("symbolizing");
        b.set_position(0);
    }
    let report = hotspots_aggregated(
        &profile,
        &agg,
        &mut symbolizer,
        &opts,
        &mut |done, total| {
            if let Some(b) = &bar {
                b.set_length(total);
                b.set_position(done);
            }
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // The rows own their values: free the aggregates before rendering (peak memory).
    drop(agg);
    let warnings: Vec<String> = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .cloned()
        .collect();
    for w in &warnings {
        eprintln!("culprit: warning: {w}");
    }
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        ReportFormat::Text | ReportFormat::Csv if args.topdown => {
            super::stat::write_report_topdown(&mut out, &profile, &report, false)?
        }
        ReportFormat::Json if args.topdown => {
            super::stat::write_report_topdown(&mut out, &profile, &report, true)?
        }
        ReportFormat::Text => write_text(&mut out, &args, &profile, &report, tty)?,
        ReportFormat::Json => {
            let v = to_json(&args, &profile, &report, &warnings);
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        ReportFormat::Csv => write_csv(&mut out, &report)?,
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        eprintln!(
            "culprit: error: {}: reading stopped at byte offset {} ({}): {}; the report covers the \
             {} records read before it",
            args.input.display(),
            stop.offset,
            match stop.record_type {
                Some(t) => format!("record type {t} ({})", record_name(t)),
                None => "record header unreadable".to_string(),
            },
            stop.reason,
            stop.records_read
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg:>12} [{bar:40}] {percent:>3}% {elapsed}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message("reading");
    Some(bar)
}

/// Reads the input, streaming every sample into `agg`; the returned profile has no samples.
fn read_profile(
    args: &ReportArgs,
    bar: Option<&indicatif::ProgressBar>,
    agg: &mut SampleAggregator,
) -> anyhow::Result<Profile> {
    let mut on_sample = |p: &Profile, s: &culprit_decode::model::Sample| agg.add(p, s);
    // DWARF call chains (`--call-graph dwarf` files): the user part is unwound from the
    // sampled registers and stack while reading. Only events with REGS_USER+STACK_USER are
    // touched, so this costs nothing on other files; skipped when chains are not used.
    let chains_used = !args.no_children
        || matches!(
            args.call_graph,
            Some(CallGraphArg::Caller) | Some(CallGraphArg::Callee)
        );
    let unwind = chains_used && !args.no_unwind && args.call_graph != Some(CallGraphArg::None);
    let mut unwinder = unwind.then(|| DwarfUnwinder::new(&SymbolizerOptions::default()));
    let opts = culprit_decode::ReadOptions {
        unwinder: unwinder.as_mut().map(|u| u as &mut dyn UserStackUnwinder),
    };
    let mut profile = if args.input.as_os_str() == "-" {
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)
            .context("cannot read perf.data from stdin")?;
        culprit_decode::read_bytes_with(&data, opts, Some(&mut on_sample))
            .context("cannot read perf.data from stdin")?
    } else {
        culprit_decode::read_file_with(
            &args.input,
            opts,
            &mut |done, total| {
                if let Some(b) = bar {
                    b.set_length(total);
                    b.set_position(done);
                }
            },
            Some(&mut on_sample),
        )
        .with_context(|| format!("cannot read {}", args.input.display()))?
    };
    if let Some(u) = &unwinder {
        profile.warnings.extend(u.warnings().iter().cloned());
    }
    Ok(profile)
}

/// perf's name of a record type, for the stop message.
fn record_name(t: u32) -> &'static str {
    match t {
        1 => "MMAP",
        2 => "LOST",
        3 => "COMM",
        4 => "EXIT",
        5 => "THROTTLE",
        6 => "UNTHROTTLE",
        7 => "FORK",
        8 => "READ",
        9 => "SAMPLE",
        10 => "MMAP2",
        11 => "AUX",
        12 => "ITRACE_START",
        13 => "LOST_SAMPLES",
        14 => "SWITCH",
        15 => "SWITCH_CPU_WIDE",
        16 => "NAMESPACES",
        17 => "KSYMBOL",
        18 => "BPF_EVENT",
        19 => "CGROUP",
        20 => "TEXT_POKE",
        21 => "AUX_OUTPUT_HW_ID",
        64..=100 => "perf user record",
        _ => "unknown",
    }
}

/// Whether an event's period is in nanoseconds (software clock events).
fn period_is_ns(profile: &Profile, e: &EventTotals) -> bool {
    profile
        .events
        .get(usize::from(e.id))
        .is_some_and(|i| i.attr_type == 1 && (i.config == 0 || i.config == 1))
}

fn human_count(v: u64) -> String {
    let f = v as f64;
    if f >= 1e12 {
        format!("{:.2} T", f / 1e12)
    } else if f >= 1e9 {
        format!("{:.2} G", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.2} M", f / 1e6)
    } else if f >= 1e4 {
        format!("{:.1} k", f / 1e3)
    } else {
        v.to_string()
    }
}

fn human_ns(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.3} s", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.2} ms", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1} us", f / 1e3)
    } else {
        format!("{v} ns")
    }
}

fn key_header(k: SortKey) -> &'static str {
    match k {
        SortKey::Comm => "Command",
        SortKey::Pid => "Pid:Command",
        SortKey::Tid => "Tid:Command",
        SortKey::Dso => "Shared Object",
        SortKey::Sym => "Symbol",
        SortKey::Srcline => "Source:Line",
        SortKey::Srcfile => "Source File",
        SortKey::Ip => "Address",
        SortKey::Cpu => "CPU",
    }
}

fn key_text(v: &culprit_analysis::KeyValue) -> String {
    match v.key {
        SortKey::Sym => {
            let tag = v.tag.unwrap_or("[.]");
            match v.addr {
                Some(a) => format!("{tag} [unknown] {}+{a:#x}", v.dso.as_deref().unwrap_or("?")),
                None => format!("{tag} {}", v.text),
            }
        }
        SortKey::Ip => format!("{} {}", v.dso.as_deref().unwrap_or("?"), v.text),
        _ => v.text.clone(),
    }
}

fn write_text(
    out: &mut dyn Write,
    args: &ReportArgs,
    profile: &Profile,
    r: &Hotspots,
    tty: bool,
) -> anyhow::Result<()> {
    let m = &profile.meta;
    writeln!(out, "# File: {}", args.input.display())?;
    if let Some(c) = &m.cmdline {
        writeln!(out, "# Command line: {c}")?;
    }
    if let Some(v) = &m.perf_version {
        let host = m.hostname.as_deref().unwrap_or("?");
        // perf writes its bare version ("6.1.187"); culprit writes "culprit 0.1.0".
        let tool = if v.starts_with(|c: char| c.is_ascii_digit()) {
            format!("perf {v}")
        } else {
            v.clone()
        };
        writeln!(out, "# Recorded by {tool} on {host}")?;
    }
    if let Some((a, b)) = m.time_range {
        writeln!(
            out,
            "# Duration: {} (first to last sample)",
            human_ns(b.saturating_sub(a))
        )?;
    }
    writeln!(out, "# Total lost samples: {}", profile.lost)?;
    for e in &r.events {
        let period = if period_is_ns(profile, e) {
            human_ns(e.period)
        } else {
            human_count(e.period)
        };
        writeln!(
            out,
            "# Event '{}': {} samples, event count {} ({}), {} lost",
            e.name, e.samples, e.period, period, e.lost
        )?;
    }
    let keys: Vec<&str> = r.keys.iter().map(|k| k.name()).collect();
    writeln!(
        out,
        "# Sort: {}; {}",
        keys.join(","),
        if r.children {
            "children = self + callees (from call chains)"
        } else {
            "self only"
        }
    )?;
    if r.hidden_rows > 0 {
        writeln!(
            out,
            "# {} rows hidden by --top/--percent-limit",
            r.hidden_rows
        )?;
    }
    writeln!(out, "#")?;

    // Columns: per event [Children] Self Samples Period; then the keys.
    let multi = r.events.len() > 1;
    let mut header: Vec<String> = Vec::new();
    for e in &r.events {
        let p = if multi {
            format!("{} ", e.name)
        } else {
            String::new()
        };
        if r.children {
            header.push(format!("{p}Children"));
        }
        header.push(format!("{p}Self"));
        header.push(format!("{p}Samples"));
        header.push(format!("{p}Period"));
    }
    let ncols_num = header.len();
    header.extend(r.keys.iter().map(|k| key_header(*k).to_string()));
    // Cells are formatted twice (widths, then lines) instead of kept: a children report can
    // have hundreds of thousands of rows.
    let ns: Vec<bool> = r.events.iter().map(|e| period_is_ns(profile, e)).collect();
    let cells_of = |row: &culprit_analysis::Row| -> Vec<String> {
        let mut c = Vec::new();
        for (i, &in_ns) in ns.iter().enumerate() {
            if r.children {
                c.push(format!("{:.2}%", row.children_percent(i, &r.events)));
            }
            c.push(format!("{:.2}%", row.percent(i, &r.events)));
            c.push(row.samples[i].to_string());
            c.push(if in_ns {
                human_ns(row.period[i])
            } else {
                human_count(row.period[i])
            });
        }
        c.extend(row.keys.iter().map(key_text));
        c
    };
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &r.rows {
        for (i, s) in cells_of(row).iter().enumerate() {
            width[i] = width[i].max(s.chars().count());
        }
    }
    let fmt_line = |c: &[String]| -> String {
        let mut line = String::new();
        for (i, s) in c.iter().enumerate() {
            let last = i + 1 == c.len();
            let pad = width[i].saturating_sub(s.chars().count());
            if i < ncols_num {
                line.push_str(&" ".repeat(pad));
                line.push_str(s);
            } else {
                line.push_str(s);
                if !last {
                    line.push_str(&" ".repeat(pad));
                }
            }
            if !last {
                line.push_str("  ");
            }
        }
        line
    };
    writeln!(out, "# {}", fmt_line(&header))?;
    for row in &r.rows {
        let line = format!("  {}", fmt_line(&cells_of(row)));
        let hot = if r.children {
            row.children_percent(0, &r.events)
        } else {
            row.percent(0, &r.events)
        };
        // Highlight the hottest rows on a terminal: red ≥ 10%, yellow ≥ 1%.
        if tty && hot >= 10.0 {
            writeln!(out, "\x1b[1;31m{line}\x1b[0m")?;
        } else if tty && hot >= 1.0 {
            writeln!(out, "\x1b[33m{line}\x1b[0m")?;
        } else {
            writeln!(out, "{line}")?;
        }
        for (i, g) in row.call_graph.iter().enumerate() {
            if let Some(node) = g {
                let total = r.events[i].period;
                if multi {
                    writeln!(out, "{:>10}[{}]", "", r.events[i].name)?;
                }
                write_tree(out, node, total, "            ", true)?;
                writeln!(out)?;
            }
        }
    }
    if r.rows.is_empty() {
        writeln!(out, "# (no samples)")?;
    }
    Ok(())
}

fn write_tree(
    out: &mut dyn Write,
    node: &CallNode,
    total: u64,
    prefix: &str,
    root: bool,
) -> std::io::Result<()> {
    if root {
        writeln!(out, "{prefix}{}", node.name)?;
    }
    let n = node.children.len();
    for (i, c) in node.children.iter().enumerate() {
        let last = i + 1 == n;
        let pct = culprit_analysis::pct(c.period, total);
        writeln!(
            out,
            "{prefix}{}{:.2}% {}",
            if last { "└─ " } else { "├─ " },
            pct,
            c.name
        )?;
        let child_prefix = format!("{prefix}{}", if last { "   " } else { "│  " });
        write_tree(out, c, total, &child_prefix, false)?;
    }
    Ok(())
}

/// JSON event entry.
#[derive(Serialize)]
struct JsonEvent<'a> {
    name: &'a str,
    samples: u64,
    period: u64,
    lost: u64,
}

fn round4(x: f64) -> Value {
    let r = (x * 10000.0).round() / 10000.0;
    serde_json::Number::from_f64(r)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn node_json(n: &CallNode, total: u64) -> Value {
    serde_json::json!({
        "name": n.name,
        "samples": n.samples,
        "period": n.period,
        "percent": round4(culprit_analysis::pct(n.period, total)),
        "children": n.children.iter().map(|c| node_json(c, total)).collect::<Vec<_>>(),
    })
}

fn to_json(args: &ReportArgs, profile: &Profile, r: &Hotspots, warnings: &[String]) -> Value {
    let events: Vec<JsonEvent> = r
        .events
        .iter()
        .map(|e| JsonEvent {
            name: &e.name,
            samples: e.samples,
            period: e.period,
            lost: e.lost,
        })
        .collect();
    let rows: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            let mut keys = Map::new();
            let mut level = None;
            for k in &row.keys {
                let v = match k.number {
                    Some(n) => Value::from(n),
                    None => Value::from(k.text.clone()),
                };
                keys.insert(k.key.name().to_string(), v);
                match k.key {
                    SortKey::Ip => {
                        if let Some(d) = &k.dso {
                            keys.entry("dso").or_insert_with(|| Value::from(d.clone()));
                        }
                    }
                    SortKey::Sym => {
                        level = k.tag;
                        if let Some(a) = k.addr {
                            keys.insert("sym_addr".into(), Value::from(format!("{a:#x}")));
                            if let Some(d) = &k.dso {
                                keys.entry("dso").or_insert_with(|| Value::from(d.clone()));
                            }
                        }
                    }
                    _ => {}
                }
            }
            let per = |f: &dyn Fn(usize) -> Value| -> Value {
                let mut m = Map::new();
                for (i, e) in r.events.iter().enumerate() {
                    m.insert(e.name.clone(), f(i));
                }
                Value::Object(m)
            };
            let mut o = Map::new();
            o.insert("keys".into(), Value::Object(keys));
            o.insert("samples".into(), per(&|i| Value::from(row.samples[i])));
            o.insert("period".into(), per(&|i| Value::from(row.period[i])));
            o.insert(
                "percent".into(),
                per(&|i| round4(row.percent(i, &r.events))),
            );
            o.insert(
                "children_percent".into(),
                per(&|i| round4(row.children_percent(i, &r.events))),
            );
            o.insert(
                "children_period".into(),
                per(&|i| Value::from(row.children_period[i])),
            );
            o.insert(
                "children_samples".into(),
                per(&|i| Value::from(row.children_samples[i])),
            );
            if let Some(l) = level {
                o.insert("sym_level".into(), Value::from(l));
            }
            if row.call_graph.iter().any(Option::is_some) {
                o.insert(
                    "call_graph".into(),
                    per(&|i| match &row.call_graph[i] {
                        Some(n) => node_json(n, r.events[i].period),
                        None => Value::Null,
                    }),
                );
            }
            Value::Object(o)
        })
        .collect();
    let m = &profile.meta;
    serde_json::json!({
        "file": args.input.display().to_string(),
        "events": events,
        "sort": r.keys.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "children": r.children,
        "hidden_rows": r.hidden_rows,
        "meta": {
            "cmdline": m.cmdline,
            "hostname": m.hostname,
            "perf_version": m.perf_version,
            "os_release": m.os_release,
            "duration_ns": m.time_range.map(|(a, b)| b.saturating_sub(a)),
            "lost": profile.lost,
        },
        "stopped": profile.stopped.as_ref().map(|s| serde_json::json!({
            "offset": s.offset,
            "record_type": s.record_type,
            "reason": s.reason,
            "records_read": s.records_read,
        })),
        "warnings": warnings,
        "rows": rows,
    })
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_csv(out: &mut dyn Write, r: &Hotspots) -> anyhow::Result<()> {
    let mut header: Vec<String> = r.keys.iter().map(|k| k.name().to_string()).collect();
    let extra_dso = r
        .keys
        .iter()
        .any(|k| matches!(k, SortKey::Ip | SortKey::Sym))
        && !r.keys.contains(&SortKey::Dso);
    if extra_dso {
        header.push("dso".into());
    }
    for e in &r.events {
        for c in ["samples", "period", "percent", "children_percent"] {
            header.push(format!("{}:{c}", e.name));
        }
    }
    writeln!(
        out,
        "{}",
        header
            .iter()
            .map(|h| csv_field(h))
            .collect::<Vec<_>>()
            .join(",")
    )?;
    for row in &r.rows {
        let mut f: Vec<String> = row
            .keys
            .iter()
            .map(|k| match (k.key, k.addr) {
                (SortKey::Sym, Some(a)) => format!("[unknown] {a:#x}"),
                _ => k.text.clone(),
            })
            .collect();
        if extra_dso {
            f.push(
                row.keys
                    .iter()
                    .find_map(|k| k.dso.clone())
                    .unwrap_or_default(),
            );
        }
        for i in 0..r.events.len() {
            f.push(row.samples[i].to_string());
            f.push(row.period[i].to_string());
            f.push(format!("{:.4}", row.percent(i, &r.events)));
            f.push(format!("{:.4}", row.children_percent(i, &r.events)));
        }
        writeln!(
            out,
            "{}",
            f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",")
        )?;
    }
    Ok(())
}
