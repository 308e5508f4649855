//! `culprit sched`: scheduling delay, with perf's verbs (`perf sched record`, `perf sched
//! latency`, `perf sched timehist`). `record` is `culprit record` with the scheduler's
//! tracepoints on every CPU; `latency` and `timehist` read that file or perf's
//! (`culprit_analysis::sched`), and render in perf's layout, CSV or JSON
//! (docs/wall-clock.md).

use std::process::ExitCode;

use culprit_analysis::sched::{LatencyOptions, LatencySort};
use culprit_verbs::sched;

use crate::args::{Format, InputArgs, OutputArgs};
use crate::cmd::record;

/// Arguments of `culprit sched`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Scheduling delay (perf sched): record the scheduler, per-task latency, per-switch history",
    after_help = crate::help::layout("EXAMPLES:\n  culprit sched record -- ./prog           every CPU's scheduler events while ./prog runs\n  culprit sched latency                    per task: run time, switches, avg and max delay\n  culprit sched latency --pids --histogram one row per thread, and the delay histogram\n  culprit sched timehist -i perf.data      per switch: wait time, scheduling delay, run time\n\nBoth reports read `perf sched record` files too. docs/wall-clock.md walks through finding a latency problem.")
)]
pub struct SchedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SchedCommand,
}

/// The `culprit sched` verbs.
#[derive(clap::Subcommand, Debug)]
pub enum SchedCommand {
    /// Record the scheduler's tracepoints on every CPU (as perf sched record).
    Record(SchedRecordArgs),
    /// Per task: run time, switches, average and maximum scheduling delay.
    Latency(LatencyArgs),
    /// Per context switch: wait time, scheduling delay and run time.
    Timehist(TimehistArgs),
    /// Who woke each blocked stack, and from where (`record --off-cpu=wakers` files).
    Wakers(TimehistArgs),
}

/// Arguments of `culprit sched record`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
pub struct SchedRecordArgs {
    /// `-o FILE`, `-m PAGES`, `-q`.
    #[command(flatten)]
    pub preset: record::PresetArgs,
    /// Stop after SECONDS.
    #[arg(long = "duration", value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The command to run while recording (without one: until Ctrl-C).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Arguments of `culprit sched latency`.
#[derive(clap::Args, Debug)]
pub struct LatencyArgs {
    /// The input file.
    #[command(flatten)]
    pub input: InputArgs,
    /// One row per thread instead of per command (perf's -p).
    #[arg(short = 'p', long = "pids")]
    pub pids: bool,
    /// Sort keys, most significant first: pid, avg, max, switch, runtime.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "avg,max,switch,runtime"
    )]
    pub sort: String,
    /// Also show the histogram of the delays (power-of-two ranges of µs).
    #[arg(long = "histogram")]
    pub histogram: bool,
    /// `--format text|json|csv`, `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `culprit sched timehist`.
#[derive(clap::Args, Debug)]
pub struct TimehistArgs {
    /// The input file.
    #[command(flatten)]
    pub input: InputArgs,
    /// `--format text|json|csv`, `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit sched`.
pub fn run(args: SchedArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        SchedCommand::Record(a) => run_record(a),
        SchedCommand::Latency(a) => run_latency(a),
        SchedCommand::Timehist(a) => run_timehist(a),
        SchedCommand::Wakers(a) => run_wakers(a),
    }
}

/// `culprit record -a -c 1 -e <SCHED_EVENTS> -m PAGES -o FILE [-- CMD]`, as perf sched
/// record runs `perf record -a -R -m 1024 -c 1 -e …`.
fn run_record(a: SchedRecordArgs) -> anyhow::Result<ExitCode> {
    let flags = sched::record_flags(a.duration);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    record::run_preset(&flags, &a.preset, &a.command)
}

fn run_latency(a: LatencyArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("sched latency", &[Format::Text, Format::Json, Format::Csv])?;
    let sort = LatencySort::parse_list(&a.sort).map_err(|e| anyhow::anyhow!("--sort: {e}"))?;
    let report = sched::latency(&sched::LatencyOptions {
        input: a.input.open(),
        options: LatencyOptions {
            per_thread: a.pids,
            sort,
        },
        histogram: a.histogram,
    })?;
    a.output.render(&report)?;
    Ok(report.exit_status())
}

fn run_timehist(a: TimehistArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("sched timehist", &[Format::Text, Format::Json, Format::Csv])?;
    let report = sched::timehist(&a.input.open())?;
    a.output.render(&report)?;
    Ok(report.exit_status())
}

fn run_wakers(a: TimehistArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("sched wakers", &[Format::Text, Format::Json])?;
    let report = sched::wakers(&a.input.open())?;
    a.output.render(&report)?;
    Ok(report.exit_status())
}
