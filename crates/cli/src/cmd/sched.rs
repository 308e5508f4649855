//! `culprit sched`: scheduling delay, with perf's verbs (`perf sched record`, `perf sched
//! latency`, `perf sched timehist`). `record` is `culprit record` with the scheduler's
//! tracepoints on every CPU; `latency` and `timehist` read that file or perf's
//! (`culprit_analysis::sched`), and render in perf's layout, CSV or JSON
//! (docs/wall-clock.md).

use std::process::ExitCode;

use culprit_analysis::sched::render::{LatencyView, TimehistView};
use culprit_analysis::sched::{self, LatencyOptions, LatencySort};
use culprit_symbols::ReadPlan;

use crate::args::{Format, InputArgs, OutputArgs};
use crate::cmd::record;

/// The tracepoints `culprit sched record` records: perf 6.1's `perf sched record` set
/// (switch, run time, fork, wake-up of new tasks, migration, waking), and `sched_wakeup`.
pub const SCHED_EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_stat_runtime",
    "sched:sched_process_fork",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_waking",
    "sched:sched_migrate_task",
];

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
    let events = SCHED_EVENTS.join(",");
    let duration = a.duration.map(|d| d.to_string());
    let mut flags = vec!["-a", "-c", "1", "-e", &events];
    if let Some(d) = &duration {
        flags.extend(["--duration", d]);
    }
    record::run_preset(&flags, &a.preset, &a.command)
}

fn run_latency(a: LatencyArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("sched latency", &[Format::Text, Format::Json, Format::Csv])?;
    let sort = LatencySort::parse_list(&a.sort).map_err(|e| anyhow::anyhow!("--sort: {e}"))?;
    // Streamed: only per-thread state is kept, so an endless stdin stays bounded.
    let mut tracker = sched::LatencyTracker::default();
    let profile = a.input.open().for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| {
            if let Some(event) = sched::sched_event(profile, sample) {
                tracker.event(&event);
            }
        },
    )?;
    sched::require_switch_event(&profile)?;
    let report = tracker.finish(
        sched::Comms::of_profile(&profile),
        &LatencyOptions {
            per_thread: a.pids,
            sort,
        },
    );
    let input = a.input.path().display().to_string();
    a.output.render(&LatencyView {
        input: &input,
        report: &report,
        histogram: a.histogram,
    })?;
    finish(&profile, &a.input)
}

fn run_timehist(a: TimehistArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("sched timehist", &[Format::Text, Format::Json, Format::Csv])?;
    // Streamed: the rows and per-thread state are kept, nothing per skipped sample.
    let mut tracker: Option<sched::TimehistTracker> = None;
    let profile = a.input.open().for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| {
            if let Some(event) = sched::sched_event(profile, sample) {
                tracker
                    .get_or_insert_with(|| {
                        sched::TimehistTracker::new(sched::has_waking_event(profile))
                    })
                    .event(&event, &profile.thread_pids);
            }
        },
    )?;
    sched::require_switch_event(&profile)?;
    let report = tracker
        .map(sched::TimehistTracker::finish)
        .unwrap_or_default();
    let input = a.input.path().display().to_string();
    a.output.render(&TimehistView {
        input: &input,
        report: &report,
    })?;
    finish(&profile, &a.input)
}

/// Exit status 1 (with the stop message) when the file was cut short, else 0.
fn finish(profile: &culprit_decode::model::Profile, input: &InputArgs) -> anyhow::Result<ExitCode> {
    if let Some(stop) = &profile.stopped {
        let path = input.path().display().to_string();
        let outcome = "the report covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_wakers(a: TimehistArgs) -> anyhow::Result<ExitCode> {
    use culprit_analysis::wakers::{self, WakersJson, WAKERS_SCHEMA};
    a.output
        .require("sched wakers", &[Format::Text, Format::Json])?;
    let input = a.input.open();
    let mut sym = input.symbolizer();
    // Streamed: the last wake-up per thread and the rows are kept, nothing per sample.
    let mut tracker = wakers::WakersTracker::default();
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| tracker.sample(profile, &mut sym, sample),
    )?;
    let report = tracker.finish(&profile)?;
    let path = a.input.path().display().to_string();
    a.output.render(&WakersJson {
        schema: WAKERS_SCHEMA,
        input: &path,
        report: &report,
    })?;
    finish(&profile, &a.input)
}
