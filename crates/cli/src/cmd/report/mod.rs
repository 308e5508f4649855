//! `culprit report`: reads a perf.data file (culprit's or perf's), symbolizes it and prints
//! hotspots grouped by sort keys, per event, as text, JSON or CSV.
//!
//! The report is `culprit_analysis::hotspots`' (its document, CSV table and JSON struct),
//! rendered by `culprit_output`; the formats are documented in docs/report.md and
//! docs/schemas/report.schema.json. Exit status: 0 on success; 1 when the input is truncated or corrupt
//! (the report of what was read is still printed, and stderr says where reading stopped);
//! 2 when nothing could be read or an argument is wrong.

mod branch;
mod fleet;
mod latency;
mod offenders;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use culprit_analysis::hotspots::{
    self, hotspots_aggregated, DocOptions, Layout, ReadNeeds, SampleAggregator,
};
use culprit_analysis::time_window::InWindow;
use culprit_analysis::{CallGraphMode, Filters, HotspotOptions, SortKey};
use culprit_output::Note;

use crate::args::{Format, InputArgs, MultiInputArgs, OutputArgs};
use culprit_verbs::progress::Progress;

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

/// How `sym` rows show addresses no symbol covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum UnknownArg {
    /// One `[unknown]` row per DSO: a stripped file's time in one row.
    #[default]
    Dso,
    /// One `[unknown]` row per address (`[unknown] DSO+0xOFFSET`), as perf.
    Address,
}

/// Arguments of `culprit report`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Hotspot report from a perf.data file (culprit's or perf's)",
    after_help = crate::help::layout("EXAMPLES:\n  culprit report                             perf.data, sorted by comm,dso,sym\n  culprit report -i run.data --sort sym --no-children --top 20\n  culprit report --sort dso,sym -g callee --percent-limit 1\n  culprit report --sort srcline --comm myprog --format json\n  culprit report --branch --sort dso_from,symbol_from,symbol_to,mispredict   branch stacks (-b, LBR)\n  culprit report -i host1.data -i host2.data --sort sym   one report of several files\n  culprit report --from-parquet export1/ export2/ --sort dso,sym   Parquet exports\n\nPercentages are of each event's total period over all its samples (as `perf report`).")
)]
pub struct ReportArgs {
    /// The input files and where their symbols are found: `-i` once, or repeated for one
    /// report of several files, each read and symbolized on its own, rows matched by key and
    /// events by name (docs/report.md, "Many inputs").
    #[command(flatten)]
    pub input: MultiInputArgs,
    /// Report the tables of these `culprit export --format parquet` directories instead
    /// of perf.data files, as one report (keys comm, pid, tid, cpu, dso, sym, srcline,
    /// srcfile; self and children; docs/report.md, "From Parquet").
    #[arg(
        long = "from-parquet",
        value_name = "DIR",
        num_args = 1..,
        conflicts_with = "inputs"
    )]
    pub from_parquet: Vec<PathBuf>,
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
    /// Only samples timed in START,STOP (seconds of the samples' clock, as `culprit script`
    /// prints; either may be empty; both inclusive), as perf's `--time`: the percentages are
    /// of the window's total.
    #[arg(long = "time", value_name = "START,STOP")]
    pub time: Option<culprit_analysis::time_window::TimeWindow>,
    /// Also show each row's de-skidded self share: non-precise samples of memory and
    /// branch events re-attributed to their estimated culprit instruction (an estimate; see
    /// docs/skid.md).
    #[arg(long = "deskid")]
    pub deskid: bool,
    /// Addresses no symbol covers (stripped code): `dso` (default) groups each DSO's into
    /// one `[unknown]` row; `address` shows one row per address, as perf.
    #[arg(long = "unknown", value_enum, value_name = "ROWS", default_value_t = UnknownArg::Dso)]
    pub unknown: UnknownArg,
    /// Sort the rows by this event's values (ties by the next events'); --top and
    /// --percent-limit apply to it. Default: the first event with samples in the rows.
    #[arg(long = "sort-event", value_name = "EVENT")]
    pub sort_event: Option<String>,
    /// Several events side by side in one table (short column names: `Self[2]` is event
    /// [2]'s), sorted by --sort-event, instead of one table per event.
    #[arg(long = "group")]
    pub group: bool,
    /// --format (text, json or csv: see docs/report.md), -o, --color, --width.
    #[command(flatten)]
    pub output: OutputArgs,
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
    /// Latency-centric report (perf 6.15's `--latency`): a Latency column (each sample's
    /// period divided by the number of the recorded threads running then; record with
    /// `culprit record --latency`) beside Overhead, sorted by it. Keys: comm, pid, tid,
    /// dso, sym, parallelism.
    #[arg(long = "latency")]
    pub latency: bool,
    /// Only samples taken while this many recorded threads ran: `1`, `1-2`, `1,4-8`.
    #[arg(long = "parallelism", value_name = "RANGE")]
    pub parallelism: Option<String>,
}

impl ReportArgs {
    /// The first input (`perf.data` by default) with the symbol flags, as every verb that
    /// reads one file has it.
    pub fn first_input(&self) -> InputArgs {
        match self.input.inputs.first() {
            Some(p) => self.input.single(p),
            None => self.input.single(std::path::Path::new("perf.data")),
        }
    }

    /// Whether the report is over several inputs or Parquet exports.
    pub fn many(&self) -> bool {
        self.input.inputs.len() > 1 || !self.from_parquet.is_empty()
    }
}

/// Runs the report modes other than the hotspot report of one file (several inputs,
/// `--offenders`, latency, `--branch`), or `None` for the hotspot report.
fn run_other_mode(args: &ReportArgs) -> Option<anyhow::Result<ExitCode>> {
    let other_modes = [
        (args.many(), "several inputs"),
        (args.offenders, "--offenders"),
        (args.branch, "--branch"),
    ];
    if let Some((_, what)) = other_modes.iter().find(|m| m.0 && args.time.is_some()) {
        return Some(Err(anyhow::anyhow!(
            "--time filters the hotspot report of one file: not {what}"
        )));
    }
    if args.many() {
        let what = [
            (args.offenders, "--offenders"),
            (args.branch, "--branch"),
            (args.topdown, "--topdown"),
        ];
        if let Some((_, flag)) = what.iter().find(|w| w.0) {
            return Some(Err(anyhow::anyhow!(
                "{flag} reads one perf.data file: give a single -i (several inputs and \
                 --from-parquet make hotspot reports)"
            )));
        }
        return Some(fleet::run(args));
    }
    if args.offenders {
        return Some(offenders::run(args));
    }
    if latency::wanted(args) {
        return Some(latency::run(args));
    }
    if args.branch {
        return Some(branch::run(args));
    }
    None
}

/// Lets malloc give the report's big buffers back to the OS between phases.
fn tune_allocator() {
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
}

/// Runs `culprit report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(done) = run_other_mode(&args) {
        return done;
    }
    tune_allocator();
    let mut opts = hotspot_options(&args)?;
    // perf's memory mode (a memory key) adds each sample to its own row only: no children.
    // Chains are needed for children (the default when the file has them) and call graphs.
    let children = if args.no_children {
        Some(false)
    } else {
        args.children.then_some(true)
    };
    let needs = ReadNeeds::of(&opts, children);
    let mem_mode = needs.mem_mode;
    let input_args = args.first_input();
    let input = input_args.open();
    let mut symbolizer = input.symbolizer();
    // Samples are folded while reading (no Vec<Sample>): memory follows distinct places,
    // and a flat report folds away what its keys do not show.
    let mut agg = SampleAggregator::new(needs.with_chains, &opts.filters);
    agg.only_for(&opts);
    // DWARF call chains (`--call-graph dwarf` files): the user part is unwound from the
    // sampled registers and stack while reading; skipped when chains are not used. A flat
    // report, or a children report that keeps places, reads on every core; call-graph
    // reports read sequentially: their time goes into interning chains, which the merge of
    // the shares would do again.
    let unwind = !args.no_unwind && args.call_graph != Some(CallGraphArg::None);
    let plan = needs.read_plan(unwind, !needs.chains_used || agg.keeps_places());
    let bar = Progress::for_input(&input);
    let window = InWindow {
        window: args.time.unwrap_or_default(),
        inner: agg,
    };
    let (profile, window) = input.fold(
        &plan,
        needs.shows_symbols.then_some(&mut symbolizer),
        window,
        bar.callback(),
    )?;
    let mut agg = window.inner;
    bar.finish();
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
            input_args.path().display()
        );
    }
    agg.finish();
    let has_chains = agg.has_callchains();
    // perf refuses call graphs of a file without call chains; it accepts --children and
    // shows self percentages, which culprit does too, saying so.
    let graph = match args.call_graph {
        Some(CallGraphArg::Caller) => Some("-g caller"),
        Some(CallGraphArg::Callee) => Some("-g callee"),
        _ => None,
    };
    if let Some(flag) = graph.filter(|_| !has_chains && !mem_mode) {
        anyhow::bail!(
            "{flag} needs call chains, and {} has none: record with -g (or --call-graph \
             dwarf|lbr)",
            input_args.path().display()
        );
    }
    let children_without_chains = (args.children && !has_chains && !mem_mode).then(|| {
        format!(
            "--children: {} has no call chains, so children equal self (record with -g for \
             callers' totals)",
            input_args.path().display()
        )
    });
    opts.children = if args.no_children || mem_mode {
        false
    } else {
        args.children || has_chains
    };
    let bar = Progress::new("symbolizing", 0);
    let report = hotspots_aggregated(&profile, &agg, &mut symbolizer, &opts, &mut bar.callback())?;
    bar.finish();
    // The rows own their values: free the aggregates before rendering (peak memory).
    drop(agg);
    let mut notes: Vec<Note> = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .map(Note::warning)
        .chain(children_without_chains.map(Note::warning))
        .collect();
    if report.cut_call_paths > 0 {
        notes.push(Note::warning(format!(
            "{} samples have call chains deeper than {} frames: their call-graph paths were \
             cut there (perf's --max-stack)",
            report.cut_call_paths,
            hotspots::PERF_MAX_STACK
        )));
    }
    culprit_output::text::write_notes(&mut std::io::stderr(), &notes, false)?;
    let file = input_args.path().display().to_string();
    render(&args, &report, &profile, notes, file)?;
    if let Some(stop) = &profile.stopped {
        let samples: u64 = profile.events.iter().map(|e| e.samples).sum();
        let path = input_args.path().display().to_string();
        let outcome = format!("the report covers its {samples} samples read before it");
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            &outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the hotspot report (or its Top-Down view) in the chosen format; JSON carries the
/// `notes` as its warnings.
fn render(
    args: &ReportArgs,
    report: &hotspots::Hotspots,
    profile: &culprit_decode::model::Profile,
    mut notes: Vec<Note>,
    file: String,
) -> anyhow::Result<()> {
    let mut out = args.output.writer()?;
    match args.output.format {
        _ if args.topdown => {
            let td =
                culprit_analysis::topdown::sampled_report(profile, report).context("--topdown")?;
            let doc = td.document(&report.keys);
            match args.output.format {
                Format::Json => culprit_output::json::write(&mut out, &td)?,
                Format::Csv => {
                    for t in doc.tables() {
                        culprit_output::csv::write(&mut out, t)?;
                    }
                }
                Format::Text => {
                    culprit_output::text::write(&mut out, &doc, &args.output.text_options())?;
                }
            }
        }
        Format::Text => {
            let layout = if args.group {
                Layout::Group
            } else {
                Layout::PerEvent
            };
            let doc = hotspots::document(report, profile, &DocOptions { file, layout });
            culprit_output::text::write(&mut out, &doc, &args.output.text_options())?;
        }
        Format::Json => {
            let warnings = notes.drain(..).map(|n| n.text).collect();
            let json = hotspots::json_report(report, profile, &file, warnings);
            culprit_output::json::write(&mut out, &json)?;
        }
        Format::Csv => culprit_output::csv::write(&mut out, &hotspots::csv_table(report))?,
    }
    out.flush()?;
    Ok(())
}

/// The report's options from its flags (`children` is decided once the input is read).
fn hotspot_options(args: &ReportArgs) -> anyhow::Result<HotspotOptions> {
    let keys = SortKey::parse_list(&args.sort).context("error parsing flag --sort")?;
    anyhow::ensure!(!keys.is_empty(), "--sort needs at least one key");
    Ok(HotspotOptions {
        keys,
        events: args.event.clone(),
        // Known once the file is read (whether it has call chains).
        children: false,
        filters: Filters {
            pids: args.pid.clone(),
            tids: args.tid.clone(),
            comms: args.comm.clone(),
            dsos: args.dso.clone(),
        },
        percent_limit: args.percent_limit,
        top: args.top,
        call_graph: match args.call_graph {
            Some(CallGraphArg::Caller) => CallGraphMode::Caller,
            Some(CallGraphArg::Callee) => CallGraphMode::Callee,
            Some(CallGraphArg::None) | None => CallGraphMode::None,
        },
        call_graph_threshold: 0.5,
        deskid: args.deskid,
        sort_event: args.sort_event.clone(),
        // perf's layout: one table per event (text only: JSON and CSV have one row set).
        per_event: args.output.format == Format::Text && !args.group && !args.topdown,
        unknown_per_address: args.unknown == UnknownArg::Address,
    })
}
