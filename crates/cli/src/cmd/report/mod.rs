//! `culprit report`: reads a perf.data file (culprit's or perf's), symbolizes it and prints
//! hotspots grouped by sort keys, per event, as text, JSON or CSV; or one of its other modes
//! (several inputs, `--from-parquet`, `--branch`, latency, `--offenders`).
//!
//! The flags map onto `culprit_verbs::report`'s options; the report it returns is rendered
//! by `OutputArgs::render`; the formats are documented in docs/report.md and
//! docs/schemas/report.schema.json. Exit status: 0 on success; 1 when the input is truncated or corrupt
//! (the report of what was read is still printed, and stderr says where reading stopped);
//! 2 when nothing could be read or an argument is wrong.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use culprit_analysis::{CallGraphMode, Filters};
use culprit_verbs::report::{self, ReportOptions};

use crate::args::{Format, MultiInputArgs, OutputArgs};

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

/// The report's options from its flags.
fn options(args: &ReportArgs) -> ReportOptions {
    ReportOptions {
        inputs: args.input.open(),
        from_parquet: args.from_parquet.clone(),
        sort: args.sort.clone(),
        events: args.event.clone(),
        // The flags override each other: at most one is set.
        children: if args.no_children {
            Some(false)
        } else {
            args.children.then_some(true)
        },
        call_graph: args.call_graph.map(|g| match g {
            CallGraphArg::Caller => CallGraphMode::Caller,
            CallGraphArg::Callee => CallGraphMode::Callee,
            CallGraphArg::None => CallGraphMode::None,
        }),
        top: args.top,
        percent_limit: args.percent_limit,
        filters: Filters {
            pids: args.pid.clone(),
            tids: args.tid.clone(),
            comms: args.comm.clone(),
            dsos: args.dso.clone(),
        },
        time: args.time,
        deskid: args.deskid,
        unknown_per_address: args.unknown == UnknownArg::Address,
        sort_event: args.sort_event.clone(),
        group: args.group,
        format: match args.output.format {
            Format::Text => report::Format::Text,
            Format::Json => report::Format::Json,
            Format::Csv => report::Format::Csv,
        },
        topdown: args.topdown,
        offenders: args.offenders,
        offender_settings: culprit_analysis::offenders::Settings {
            t1: args.t1,
            t2: args.t2,
            unit: args.offenders_unit.into(),
        },
        exact: args.exact,
        no_unwind: args.no_unwind,
        branch: args.branch,
        latency: args.latency,
        parallelism: args.parallelism.clone(),
    }
}

/// Runs `culprit report`: the report's warnings on stderr, the report, then what it could
/// not cover.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let report = report::run(&options(&args))?;
    culprit_output::text::write_notes(&mut std::io::stderr(), report.warnings(), false)?;
    args.output.render(&report)?;
    report.finish()
}
