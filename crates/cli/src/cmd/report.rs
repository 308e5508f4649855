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
    CallGraphMode, CallNode, EventTotals, Filters, HotspotOptions, Hotspots, Row, SortKey,
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
    after_help = "EXAMPLES:\n  culprit report                             perf.data, sorted by comm,dso,sym\n  culprit report -i run.data --sort sym --no-children --top 20\n  culprit report --sort dso,sym -g callee --percent-limit 1\n  culprit report --sort srcline --comm myprog --format json\n  culprit report --branch --sort dso_from,symbol_from,symbol_to,mispredict   branch stacks (-b, LBR)\n\nPercentages are of each event's total period over all its samples (as `perf report`)."
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
    /// The recorded kernel's symbols (`--kallsyms FILE`, `--vmlinux FILE`).
    #[command(flatten)]
    pub kernel: super::KernelSymbolArgs,
    /// Sort (group) keys, comma-separated: comm, pid, tid, dso, sym, srcline, srcfile, ip, cpu;
    /// memory keys (perf --mem-mode: samples weigh their weight) mem, snoop, tlb, locked, blocked.
    /// With --branch: comm, pid, dso_from, symbol_from, dso_to, symbol_to, srcline_from,
    /// srcline_to, mispredict, cycles, in_tx, abort (default
    /// comm,dso_from,symbol_from,symbol_to,cycles, as perf).
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
    /// Also show each row's de-skidded self share: non-precise samples of memory and
    /// branch events re-attributed to their estimated culprit instruction (an estimate; see
    /// docs/skid.md).
    #[arg(long = "deskid")]
    pub deskid: bool,
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
    #[arg(long = "offenders-unit", value_enum, default_value_t = crate::args::OffendersUnit::Samples)]
    pub offenders_unit: crate::args::OffendersUnit,
    /// --offenders: also build the exact per-address histogram and compare (precision,
    /// recall of the top-1/top-5, memory).
    #[arg(long = "exact", requires = "offenders")]
    pub exact: bool,
    /// Do not unwind the sampled user stacks of `--call-graph dwarf` recordings (their call
    /// chains then have only the kernel part). `-g none` does not unwind either.
    #[arg(long = "no-unwind")]
    pub no_unwind: bool,
    /// Branch mode (perf's `--branch-stack`): each branch-stack entry of a `-b` or
    /// `--call-graph lbr` recording counts as one sample, grouped by the branch's source
    /// and target (see --sort and docs/report.md).
    #[arg(long = "branch", visible_alias = "branch-stack")]
    pub branch: bool,
}

/// Runs `culprit report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if args.offenders {
        return super::report_offenders::run(&args);
    }
    if args.branch {
        return super::report_branch::run(&args);
    }
    // The report's big buffers live in phases (aggregation tables, symbolization, rows):
    // let malloc give each one back to the OS when it is freed, so that peak RSS follows
    // the live data instead of keeping every freed phase's heap.
    // But do not trim the top of the heap below 8 MiB: the reading threads free and
    // allocate sort buffers every round, and each trim and regrowth of the heap (brk) of a
    // process with two running threads flushes the other core's TLB by an IPI (slow in a VM:
    // 4 of 39 ms of CPU in `--sort comm`).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; it is called before any of the
    // report's allocations and with valid parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 * 1024 * 1024);
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
    // perf's memory mode (a memory key) adds each sample to its own row only: no children.
    let mem_mode = keys.iter().any(|k| k.is_memory());
    // Chains are needed for children (the default when the file has them) and call graphs.
    let with_chains = (!args.no_children && !mem_mode)
        || matches!(
            args.call_graph,
            Some(CallGraphArg::Caller) | Some(CallGraphArg::Callee)
        );
    // When the report shows symbols, load them while the file is read (a parallel read
    // runs this on its second thread before its share): the kernel's (which the kernel
    // takes a while to print) and those of the files the header lists as sampled.
    let mut symbolizer = Symbolizer::new(args.kernel.options());
    let shows_symbols = keys.iter().any(|k| matches!(k, SortKey::Sym | SortKey::Ip))
        || matches!(
            args.call_graph,
            Some(CallGraphArg::Caller) | Some(CallGraphArg::Callee)
        );
    let side_work = if shows_symbols {
        let sampled = if args.input.as_os_str() == "-" {
            Vec::new()
        } else {
            // An unreadable header is reported by the read itself.
            culprit_decode::file_elf_build_ids(&args.input).unwrap_or_default()
        };
        let symbolizer = &mut symbolizer;
        Some(Box::new(move || {
            symbolizer.load_kernel_symbols();
            for (path, build_id) in &sampled {
                symbolizer.preload_elf(path, Some(build_id));
            }
        }) as SideWork)
    } else {
        None
    };
    let mut opts = HotspotOptions {
        keys,
        events: args.event.clone(),
        // Known once the file is read (whether it has call chains).
        children: false,
        filters,
        percent_limit: args.percent_limit,
        top: args.top,
        call_graph: match args.call_graph {
            Some(CallGraphArg::Caller) => CallGraphMode::Caller,
            Some(CallGraphArg::Callee) => CallGraphMode::Callee,
            Some(CallGraphArg::None) | None => CallGraphMode::None,
        },
        call_graph_threshold: 0.5,
        deskid: args.deskid,
    };
    // Samples are folded while reading (no Vec<Sample>): memory follows distinct places,
    // and a flat report folds away what its keys do not show.
    let mut agg = SampleAggregator::new(with_chains, &opts.filters);
    agg.only_for(&opts);
    let profile = read_profile(&args, bar.as_ref(), &mut agg, side_work)?;
    if mem_mode
        && !profile
            .events
            .iter()
            .any(|e| e.sample_type & culprit_decode::abi::sample_type::DATA_SRC != 0)
    {
        // As perf --mem-mode: every row would be N/A.
        anyhow::bail!(
            "--sort {}: memory keys read PERF_SAMPLE_DATA_SRC, which no event of {} recorded \
             (record with `perf mem record` or `perf record -d`)",
            args.sort,
            args.input.display()
        );
    }
    agg.finish();
    let has_chains = agg.has_callchains();
    opts.children = if args.no_children || mem_mode {
        false
    } else {
        args.children || has_chains
    };
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
        _ if args.topdown => {
            let td = culprit_analysis::topdown::sampled_report(&profile, &report)
                .context("--topdown")?;
            let doc = td.document(&report.keys);
            match args.format {
                ReportFormat::Json => culprit_output::json::write(&mut out, &td)?,
                ReportFormat::Csv => {
                    for t in doc.tables() {
                        culprit_output::csv::write(&mut out, t)?;
                    }
                }
                ReportFormat::Text => {
                    let o = culprit_output::TextOptions::for_stdout(
                        culprit_output::ColorChoice::Auto,
                        None,
                    );
                    culprit_output::text::write(&mut out, &doc, &o)?;
                }
            }
        }
        ReportFormat::Text => write_text(&mut out, &args, &profile, &report, tty)?,
        ReportFormat::Json => {
            // Streamed: rows are serialized one by one, never as one big JSON value.
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
             {} records ({} samples) read before it",
            args.input.display(),
            stop.offset,
            match stop.record_type {
                Some(t) => format!("record type {t} ({})", record_name(t)),
                None => "record header unreadable".to_string(),
            },
            stop.reason,
            stop.records_read,
            profile.events.iter().map(|e| e.samples).sum::<u64>()
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

/// Threads for reading a file: one per core (at most 4), or `CULPRIT_READ_THREADS`.
fn read_threads() -> usize {
    std::env::var("CULPRIT_READ_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
        .clamp(1, 64)
}

/// Work done while the file is read (see `culprit_decode::ParallelOptions::side_work`).
type SideWork<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Reads the input, streaming every sample into `agg`; the returned profile has no samples.
/// `side_work` runs meanwhile (on a reading thread, or a thread of its own).
fn read_profile(
    args: &ReportArgs,
    bar: Option<&indicatif::ProgressBar>,
    agg: &mut SampleAggregator,
    side_work: Option<SideWork<'_>>,
) -> anyhow::Result<Profile> {
    // DWARF call chains (`--call-graph dwarf` files): the user part is unwound from the
    // sampled registers and stack while reading. Only events with REGS_USER+STACK_USER are
    // touched, so this costs nothing on other files; skipped when chains are not used.
    let chains_used = !args.no_children
        || matches!(
            args.call_graph,
            Some(CallGraphArg::Caller) | Some(CallGraphArg::Callee)
        );
    let unwind = chains_used && !args.no_unwind && args.call_graph != Some(CallGraphArg::None);
    let stdin = args.input.as_os_str() == "-";
    // A flat report, or a children report that keeps places, of a regular file: read on
    // every core (unless user stacks are to be unwound: the parallel read does not unwind).
    // Call-graph reports read sequentially: their time goes into interning chains, which
    // the fold of the shares would do again.
    let parallel = !stdin
        && (!chains_used
            || (agg.keeps_places()
                && !(unwind && culprit_decode::file_may_unwind(&args.input).unwrap_or(true))));
    if parallel {
        let threads = read_threads();
        if threads > 1 {
            return read_profile_parallel(args, bar, agg, threads, !chains_used, side_work);
        }
    }
    // Joined when the read is over (the scope's end), before the symbols are used.
    std::thread::scope(|scope| {
        if let Some(work) = side_work {
            scope.spawn(work);
        }
        read_profile_sequential(args, bar, agg, chains_used, unwind, stdin)
    })
}

/// [`read_profile`] on this thread.
fn read_profile_sequential(
    args: &ReportArgs,
    bar: Option<&indicatif::ProgressBar>,
    agg: &mut SampleAggregator,
    chains_used: bool,
    unwind: bool,
    stdin: bool,
) -> anyhow::Result<Profile> {
    let mut on_sample = |p: &Profile, s: &culprit_decode::model::Sample| agg.add(p, s);
    let mut unwinder = unwind.then(|| DwarfUnwinder::new(&SymbolizerOptions::default()));
    let opts = culprit_decode::ReadOptions {
        unwinder: unwinder.as_mut().map(|u| u as &mut dyn UserStackUnwinder),
        // A flat report never looks at chains: not resolving their frames saves a large
        // part of decoding a -g file.
        skip_callchains: !chains_used,
        ..Default::default()
    };
    let mut profile = if stdin {
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

/// [`read_profile`] on `threads` threads (see `culprit_decode::read_file_parallel`): one
/// aggregator per share, folded into `agg` in share order, which gives exactly what one
/// aggregator fed the samples in order gives.
fn read_profile_parallel(
    args: &ReportArgs,
    bar: Option<&indicatif::ProgressBar>,
    agg: &mut SampleAggregator,
    threads: usize,
    skip_callchains: bool,
    side_work: Option<SideWork<'_>>,
) -> anyhow::Result<Profile> {
    let mut aggs: Vec<SampleAggregator> = (0..threads).map(|_| agg.empty_like()).collect();
    let bar = bar.cloned();
    let (profile, used) = {
        let mut sinks: Vec<_> = aggs
            .iter_mut()
            .map(|a| move |p: &Profile, s: &culprit_decode::model::Sample| a.add(p, s))
            .collect();
        let opts = culprit_decode::ParallelOptions {
            skip_callchains,
            side_work,
            ..Default::default()
        };
        culprit_decode::read_file_parallel(
            &args.input,
            opts,
            &mut |done, total| {
                if let Some(b) = &bar {
                    b.set_length(total);
                    b.set_position(done);
                }
            },
            &mut sinks,
        )
        .with_context(|| format!("cannot read {}", args.input.display()))?
    };
    // Only the first `used` shares' samples count (see read_file_parallel).
    let mut aggs = aggs.into_iter().take(used);
    if let Some(first) = aggs.next() {
        *agg = first;
    }
    for later in aggs {
        agg.absorb(later, &profile);
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
        66 => "HEADER_TRACING_DATA",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        81 => "COMPRESSED",
        83 => "COMPRESSED2",
        64..=100 => "perf user record",
        _ => "unknown",
    }
}

/// Whether an event's period is in nanoseconds (software clock events).
fn period_is_ns(profile: &Profile, e: &EventTotals) -> bool {
    profile.events.get(usize::from(e.id)).is_some_and(|i| {
        i.attr_type == culprit_decode::abi::perf_type::SOFTWARE && (i.config == 0 || i.config == 1)
    })
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
        SortKey::Mem => "Memory access",
        SortKey::Snoop => "Snoop",
        SortKey::Tlb => "TLB access",
        SortKey::Locked => "Locked",
        SortKey::Blocked => "Blocked",
    }
}

/// What a cached cell shows (the cache key's other half).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Percent,
    Deskid,
    Count,
    Ns,
    Period,
}

/// Formatted cells by (kind, value), direct-mapped: a miss formats into the slot.
struct CellCache {
    slots: Vec<Option<(Cell, u64, String)>>,
}

impl CellCache {
    const BITS: u32 = 10;

    fn new() -> CellCache {
        CellCache {
            slots: vec![None; 1 << Self::BITS],
        }
    }

    fn get(&mut self, kind: Cell, value: u64, format: impl FnOnce(&mut String)) -> &str {
        let i = ((value ^ kind as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Self::BITS))
            as usize;
        let Some(slot) = self.slots.get_mut(i) else {
            return "";
        };
        match slot {
            Some((k, v, _)) if *k == kind && *v == value => {}
            _ => {
                let mut text = match slot.take() {
                    Some((_, _, t)) => t,
                    None => String::new(),
                };
                text.clear();
                format(&mut text);
                *slot = Some((kind, value, text));
            }
        }
        slot.as_ref().map_or("", |(_, _, t)| t.as_str())
    }
}

/// Cell `k` of a row's reused cell buffers, emptied (made when missing); `k` moves on.
fn next_cell<'c>(cells: &'c mut Vec<String>, k: &mut usize) -> &'c mut String {
    if *k == cells.len() {
        cells.push(String::new());
    }
    let c = &mut cells[*k];
    c.clear();
    *k += 1;
    c
}

/// Display width of a cell (characters; bytes for ASCII, the common case).
fn text_width(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Characters of `{:#x}` of `a`.
fn hex_width(a: u64) -> usize {
    2 + (64 - a.leading_zeros() as usize).div_ceil(4).max(1)
}

/// The display width of what [`key_text_into`] appends, without formatting it.
fn key_text_width(row: &Row, v: &culprit_analysis::KeyValue) -> usize {
    match v.key {
        SortKey::Sym => {
            let tag = v.tag().unwrap_or("[.]");
            match v.addr() {
                // "{tag} [unknown] {dso}+{addr:#x}"
                Some(a) => {
                    text_width(tag)
                        + " [unknown] ".len()
                        + text_width(row.dso(v).unwrap_or("?"))
                        + 1
                        + hex_width(a)
                }
                None => text_width(tag) + 1 + text_width(row.text(v)),
            }
        }
        SortKey::Ip => text_width(row.dso(v).unwrap_or("?")) + 1 + text_width(row.text(v)),
        _ => text_width(row.text(v)),
    }
}

/// Appends `v` as `{:#x}` does (`0x` and lowercase digits).
fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = DIGITS[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.push_str("0x");
    for &b in &buf[i..] {
        out.push(char::from(b));
    }
}

/// A key's text as the text report shows it (tag and name, `[unknown]` with DSO+offset,
/// DSO and address for `ip`), appended to `out`.
fn key_text_into(out: &mut String, row: &Row, v: &culprit_analysis::KeyValue) {
    match v.key {
        SortKey::Sym => {
            let tag = v.tag().unwrap_or("[.]");
            match v.addr() {
                Some(a) => {
                    out.push_str(tag);
                    out.push_str(" [unknown] ");
                    out.push_str(row.dso(v).unwrap_or("?"));
                    out.push('+');
                    push_hex(out, a);
                }
                None => {
                    out.push_str(tag);
                    out.push(' ');
                    out.push_str(row.text(v));
                }
            }
        }
        SortKey::Ip => {
            out.push_str(row.dso(v).unwrap_or("?"));
            out.push(' ');
            out.push_str(row.text(v));
        }
        _ => out.push_str(row.text(v)),
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
    if r.keys.iter().any(|k| k.is_memory()) {
        writeln!(
            out,
            "# Memory mode (as perf --mem-mode): a sample counts its PERF_SAMPLE_WEIGHT (1 \
             without one); event count and periods are total weights"
        )?;
    }
    if r.deskid {
        for e in &r.events {
            use culprit_analysis::skid::{self, EventClass};
            let what = match profile.events.get(usize::from(e.id)) {
                Some(i) if skid::is_precise_event(i) => "precise samples, never moved",
                Some(i) => match skid::classify_event(i) {
                    EventClass::Memory => {
                        "memory event: skidded samples move to the culprit access"
                    }
                    EventClass::Branch => {
                        "branch event: skidded samples move to the culprit branch"
                    }
                    EventClass::Stays => "stays where sampled",
                },
                None => "stays where sampled",
            };
            writeln!(out, "# Deskid '{}': {what}", e.name)?;
        }
    }
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
        if r.deskid {
            header.push(format!("{p}Deskid %"));
        }
        header.push(format!("{p}Samples"));
        header.push(format!("{p}Period"));
    }
    let ncols_num = header.len();
    header.extend(r.keys.iter().map(|k| key_header(*k).to_string()));
    // Cells are formatted twice (widths, then lines) instead of kept: a children report can
    // have hundreds of thousands of rows.
    let ns: Vec<bool> = r.events.iter().map(|e| period_is_ns(profile, e)).collect();
    // One set of cell buffers reused for every row (hundreds of thousands of rows: no
    // allocation per cell).
    use std::fmt::Write as _;
    // Most rows of a big report show the same few percentages and periods: each distinct
    // value is formatted once per cache slot, not once per row and pass.
    let mut cache = CellCache::new();
    // `with_keys`: also the key cells (the width pass measures them without formatting).
    let mut fill_cells = |row: &Row, cells: &mut Vec<String>, with_keys: bool| {
        let mut k = 0;
        for (i, &in_ns) in ns.iter().enumerate() {
            if r.children {
                let p = row.children_percent(i);
                next_cell(cells, &mut k).push_str(cache.get(Cell::Percent, p.to_bits(), |c| {
                    let _ = write!(c, "{p:.2}%");
                }));
            }
            let p = row.percent(i);
            next_cell(cells, &mut k).push_str(cache.get(Cell::Percent, p.to_bits(), |c| {
                let _ = write!(c, "{p:.2}%");
            }));
            if r.deskid {
                let p = row.deskid_percent(i);
                next_cell(cells, &mut k).push_str(cache.get(Cell::Deskid, p.to_bits(), |c| {
                    let _ = write!(c, "~{p:.2}%");
                }));
            }
            let n = row.samples(i);
            next_cell(cells, &mut k).push_str(cache.get(Cell::Count, n, |c| {
                let _ = write!(c, "{n}");
            }));
            let v = row.period(i);
            let kind = if in_ns { Cell::Ns } else { Cell::Period };
            next_cell(cells, &mut k).push_str(cache.get(kind, v, |c| {
                c.push_str(&if in_ns { human_ns(v) } else { human_count(v) })
            }));
        }
        if with_keys {
            for key in row.keys() {
                key_text_into(next_cell(cells, &mut k), row, &key);
            }
        }
        cells.truncate(k);
    };
    let mut cells: Vec<String> = Vec::new();
    let mut width: Vec<usize> = header.iter().map(|h| text_width(h)).collect();
    for row in r.rows() {
        fill_cells(&row, &mut cells, false);
        for (i, s) in cells.iter().enumerate() {
            if let Some(w) = width.get_mut(i) {
                *w = (*w).max(text_width(s));
            }
        }
        for (i, key) in row.keys().enumerate() {
            if let Some(w) = width.get_mut(ncols_num + i) {
                *w = (*w).max(key_text_width(&row, &key));
            }
        }
    }
    let fmt_line = |line: &mut String, c: &[String]| {
        for (i, s) in c.iter().enumerate() {
            let last = i + 1 == c.len();
            let pad = width
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(text_width(s));
            if i < ncols_num {
                push_spaces(line, pad);
                line.push_str(s);
            } else {
                line.push_str(s);
                if !last {
                    push_spaces(line, pad);
                }
            }
            if !last {
                line.push_str("  ");
            }
        }
    };
    let mut line = String::new();
    fmt_line(&mut line, &header);
    writeln!(out, "# {line}")?;
    for row in r.rows() {
        fill_cells(&row, &mut cells, true);
        line.clear();
        line.push_str("  ");
        fmt_line(&mut line, &cells);
        let hot = if r.children {
            row.children_percent(0)
        } else {
            row.percent(0)
        };
        // Highlight the hottest rows on a terminal: red ≥ 10%, yellow ≥ 1%.
        if tty && hot >= 10.0 {
            writeln!(out, "\x1b[1;31m{line}\x1b[0m")?;
        } else if tty && hot >= 1.0 {
            writeln!(out, "\x1b[33m{line}\x1b[0m")?;
        } else {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        for i in 0..r.events.len() {
            if let Some(node) = row.call_graph(i) {
                let total = r.events[i].period;
                if multi {
                    writeln!(out, "{:>10}[{}]", "", r.events[i].name)?;
                }
                write_tree(out, node, total, "            ", true)?;
                writeln!(out)?;
            }
        }
    }
    if r.is_empty() {
        writeln!(out, "# (no samples)")?;
    }
    if r.deskid {
        writeln!(out, "#")?;
        writeln!(
            out,
            "# ~Deskid %: ESTIMATED (skid correction), see docs/skid.md: each non-precise sample \
             of a memory or branch event counted at its estimated culprit instruction; the other \
             columns are as sampled"
        )?;
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

pub(super) fn round4(x: f64) -> Value {
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

/// The report as JSON, streamed: the small top-level fields are a `Value`, the rows are
/// serialized one at a time from the report (a children report can have hundreds of
/// thousands). Object keys come out sorted, like serde_json's `Map`.
struct JsonReport<'a> {
    top: Map<String, Value>,
    rows: JsonRows<'a>,
}

impl Serialize for JsonReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.top.len() + 1))?;
        let mut rows_done = false;
        for (k, v) in &self.top {
            if !rows_done && k.as_str() > "rows" {
                m.serialize_entry("rows", &self.rows)?;
                rows_done = true;
            }
            m.serialize_entry(k, v)?;
        }
        if !rows_done {
            m.serialize_entry("rows", &self.rows)?;
        }
        m.end()
    }
}

struct JsonRows<'a> {
    r: &'a Hotspots,
    /// Report events in name order, one per distinct name (the last one, as a `Map` keeps).
    by_name: Vec<usize>,
}

impl Serialize for JsonRows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.r.rows().map(|row| JsonRow { row, ctx: self }))
    }
}

struct JsonRow<'a> {
    row: Row<'a>,
    ctx: &'a JsonRows<'a>,
}

/// A JSON number with 4 decimals (null when not finite).
struct Round4(f64);

impl Serialize for Round4 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = (self.0 * 10000.0).round() / 10000.0;
        if r.is_finite() {
            s.serialize_f64(r)
        } else {
            s.serialize_unit()
        }
    }
}

/// `{EVENT: f(event index)}` in event-name order.
struct PerEvent<'a, T: Serialize, F: Fn(usize) -> T> {
    ctx: &'a JsonRows<'a>,
    f: F,
}

impl<T: Serialize, F: Fn(usize) -> T> Serialize for PerEvent<'_, T, F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ev = &self.ctx.r.events;
        s.collect_map(
            self.ctx
                .by_name
                .iter()
                .map(|&i| (ev[i].name.as_str(), (self.f)(i))),
        )
    }
}

/// A value of the `keys` object.
enum KeyJson<'a> {
    Number(i64),
    Text(&'a str),
    Owned(String),
}

impl Serialize for KeyJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            KeyJson::Number(n) => s.serialize_i64(*n),
            KeyJson::Text(t) => s.serialize_str(t),
            KeyJson::Owned(t) => s.serialize_str(t),
        }
    }
}

impl Serialize for JsonRow<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let row = self.row;
        let r = self.ctx.r;
        // The keys object: sort keys, plus `dso` (ip, unresolved sym) and `sym_addr`.
        let mut keys: Vec<(&str, KeyJson)> = Vec::with_capacity(r.keys.len() + 2);
        let mut level = None;
        for k in row.keys() {
            let k = &k;
            let v = match k.number() {
                Some(n) => KeyJson::Number(n),
                None => KeyJson::Text(row.text(k)),
            };
            put(&mut keys, k.key.name(), v, true);
            match k.key {
                SortKey::Ip => {
                    if let Some(d) = row.dso(k) {
                        put(&mut keys, "dso", KeyJson::Text(d), false);
                    }
                }
                SortKey::Sym => {
                    level = k.tag();
                    if let Some(a) = k.addr() {
                        put(
                            &mut keys,
                            "sym_addr",
                            KeyJson::Owned(format!("{a:#x}")),
                            true,
                        );
                        if let Some(d) = row.dso(k) {
                            put(&mut keys, "dso", KeyJson::Text(d), false);
                        }
                    }
                }
                _ => {}
            }
        }
        keys.sort_by(|a, b| a.0.cmp(b.0));
        let graphs = row.has_call_graph();
        let mut m = s.serialize_map(None)?;
        let ctx = self.ctx;
        if graphs {
            m.serialize_entry(
                "call_graph",
                &PerEvent {
                    ctx,
                    f: |i| match row.call_graph(i) {
                        Some(n) => node_json(n, r.events[i].period),
                        None => Value::Null,
                    },
                },
            )?;
        }
        m.serialize_entry(
            "children_percent",
            &PerEvent {
                ctx,
                f: |i| Round4(row.children_percent(i)),
            },
        )?;
        m.serialize_entry(
            "children_period",
            &PerEvent {
                ctx,
                f: |i| row.children_period(i),
            },
        )?;
        m.serialize_entry(
            "children_samples",
            &PerEvent {
                ctx,
                f: |i| row.children_samples(i),
            },
        )?;
        if r.deskid {
            m.serialize_entry(
                "deskid_percent",
                &PerEvent {
                    ctx,
                    f: |i| Round4(row.deskid_percent(i)),
                },
            )?;
            m.serialize_entry(
                "deskid_period",
                &PerEvent {
                    ctx,
                    f: |i| row.deskid_period(i),
                },
            )?;
            m.serialize_entry(
                "deskid_samples",
                &PerEvent {
                    ctx,
                    f: |i| row.deskid_samples(i),
                },
            )?;
        }
        m.serialize_entry("keys", &KeysJson(&keys))?;
        m.serialize_entry(
            "percent",
            &PerEvent {
                ctx,
                f: |i| Round4(row.percent(i)),
            },
        )?;
        m.serialize_entry(
            "period",
            &PerEvent {
                ctx,
                f: |i| row.period(i),
            },
        )?;
        m.serialize_entry(
            "samples",
            &PerEvent {
                ctx,
                f: |i| row.samples(i),
            },
        )?;
        if let Some(l) = level {
            m.serialize_entry("sym_level", l)?;
        }
        m.end()
    }
}

/// Sets a `keys` entry (`replace`: like `Map::insert`, else like `entry().or_insert`).
fn put<'a>(
    keys: &mut Vec<(&'static str, KeyJson<'a>)>,
    name: &'static str,
    v: KeyJson<'a>,
    replace: bool,
) {
    match keys.iter_mut().find(|e| e.0 == name) {
        Some(e) if replace => e.1 = v,
        Some(_) => {}
        None => keys.push((name, v)),
    }
}

struct KeysJson<'a, 'b>(&'a [(&'b str, KeyJson<'b>)]);

impl Serialize for KeysJson<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (*k, v)))
    }
}

fn to_json<'a>(
    args: &ReportArgs,
    profile: &Profile,
    r: &'a Hotspots,
    warnings: &[String],
) -> JsonReport<'a> {
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
    let mut by_name: Vec<usize> = (0..r.events.len()).collect();
    // Stable sort, then keep the last of equal names (what inserting into a Map keeps).
    by_name.sort_by(|&a, &b| r.events[a].name.cmp(&r.events[b].name));
    let mut dedup: Vec<usize> = Vec::with_capacity(by_name.len());
    for i in by_name {
        match dedup.last_mut() {
            Some(last) if r.events[*last].name == r.events[i].name => *last = i,
            _ => dedup.push(i),
        }
    }
    let mut top = Map::new();
    top.insert("file".into(), Value::from(args.input.display().to_string()));
    top.insert(
        "events".into(),
        serde_json::to_value(&events).unwrap_or(Value::Null),
    );
    top.insert(
        "sort".into(),
        Value::from(r.keys.iter().map(|k| k.name()).collect::<Vec<_>>()),
    );
    top.insert("children".into(), Value::from(r.children));
    top.insert("hidden_rows".into(), Value::from(r.hidden_rows));
    top.insert("meta".into(), json_meta(profile));
    top.insert("stopped".into(), json_stopped(profile));
    top.insert("warnings".into(), Value::from(warnings.to_vec()));
    if r.deskid {
        top.insert("deskid_is_estimate".into(), Value::Bool(true));
    }
    if r.keys.iter().any(|k| k.is_memory()) {
        // Periods are weights (perf's --mem-mode).
        top.insert("mem_mode".into(), Value::Bool(true));
    }
    JsonReport {
        top,
        rows: JsonRows { r, by_name: dedup },
    }
}

/// The report JSON's `meta` object: the recording's header facts.
pub(super) fn json_meta(profile: &Profile) -> Value {
    let m = &profile.meta;
    serde_json::json!({
        "cmdline": m.cmdline,
        "hostname": m.hostname,
        "perf_version": m.perf_version,
        "os_release": m.os_release,
        "duration_ns": m.time_range.map(|(a, b)| b.saturating_sub(a)),
        "lost": profile.lost,
    })
}

/// The report JSON's `stopped` value: where reading a damaged file stopped, or null.
pub(super) fn json_stopped(profile: &Profile) -> Value {
    serde_json::json!(profile.stopped.as_ref().map(|s| serde_json::json!({
        "offset": s.offset,
        "record_type": s.record_type,
        "reason": s.reason,
        "records_read": s.records_read,
    })))
}

pub(super) fn csv_field(s: &str) -> String {
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
        if r.deskid {
            for c in ["deskid_samples", "deskid_percent"] {
                header.push(format!("{}:{c}", e.name));
            }
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
    for row in r.rows() {
        let mut f: Vec<String> = row
            .keys()
            .map(|k| match (k.key, k.addr()) {
                (SortKey::Sym, Some(a)) => format!("[unknown] {a:#x}"),
                _ => row.text(&k).to_string(),
            })
            .collect();
        if extra_dso {
            f.push(
                row.keys()
                    .find_map(|k| row.dso(&k))
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        for i in 0..r.events.len() {
            f.push(row.samples(i).to_string());
            f.push(row.period(i).to_string());
            f.push(format!("{:.4}", row.percent(i)));
            f.push(format!("{:.4}", row.children_percent(i)));
            if r.deskid {
                f.push(row.deskid_samples(i).to_string());
                f.push(format!("{:.4}", row.deskid_percent(i)));
            }
        }
        writeln!(
            out,
            "{}",
            f.iter().map(|x| csv_field(x)).collect::<Vec<_>>().join(",")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_hand_formatting_equals_std() {
        let mut values = vec![0u64, 1, 9, 15, 16, 255, 256, 0x7f5a_9d77_392b, u64::MAX];
        values.extend((0..64).map(|b| 1u64 << b));
        values.extend((1..64).map(|b| (1u64 << b) - 1));
        for a in values {
            let mut s = String::new();
            push_hex(&mut s, a);
            assert_eq!(s, format!("{a:#x}"));
            assert_eq!(hex_width(a), s.len(), "{a:#x}");
        }
        for n in [0, 1, 63, 64, 65, 200] {
            let mut s = String::from("x");
            push_spaces(&mut s, n);
            assert_eq!(s, format!("x{}", " ".repeat(n)));
        }
        assert_eq!(text_width("héllo"), 5);
        assert_eq!(text_width("hello"), 5);
    }

    #[test]
    fn test_cell_cache_returns_the_value_formatted_for_its_key() {
        let mut cache = CellCache::new();
        // More values than slots: every answer must still be the value's own text.
        for round in 0..2 {
            for v in 0..5000u64 {
                let got = cache
                    .get(Cell::Count, v, |c| c.push_str(&v.to_string()))
                    .to_string();
                assert_eq!(got, v.to_string(), "round {round}");
                let p = v as f64 / 7.0;
                let got = cache
                    .get(Cell::Percent, p.to_bits(), |c| {
                        c.push_str(&format!("{p:.2}%"))
                    })
                    .to_string();
                assert_eq!(got, format!("{p:.2}%"));
            }
        }
    }
}
