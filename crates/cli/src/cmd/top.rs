//! `culprit top`: a live, refreshing view of the hottest functions per event (perf top),
//! with an optional panel of worst offenders. This module maps the flags onto
//! [`culprit_verbs::top::TopOptions`]; the session and its views are `culprit_verbs::top`'s:
//! full screen on a terminal, else (or with `--stdio`, `--format json`) one plain block or
//! JSON line per refresh.

use std::process::ExitCode;

use anyhow::bail;
use culprit_analysis::offenders::Settings;
use culprit_collect::events::{self, SampleRate};
use culprit_verbs::top::{TopFormat, TopOptions};

use crate::args::{Format, OffendersUnit, OutputArgs, TargetArgs};

/// Arguments of `culprit top`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Live view of the hottest functions per event (perf top), with worst offenders",
    after_help = crate::help::layout("EXAMPLES:\n  culprit top                             whole system (as -a)\n  culprit top -p 1234 --offenders\n  culprit top -e cpu-clock -- ./prog      run a command and watch it\n  culprit top --stdio -- ./prog | less    plain text, one block per refresh\n\nKeys: q quits, Tab / Right and Left change the sort column (event), o toggles the offenders panel.")
)]
pub struct TopArgs {
    /// Print every perf_event_attr before it is opened, and each open, in perf's `-vv`
    /// layout (repeat: `-vv`).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Events (comma-separated, as `record -e`); default: cycles, or cpu-clock without a PMU.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz (default 1000).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Sampling period in events (instead of -F).
    #[arg(short = 'c', long = "count", value_name = "N", conflicts_with = "freq")]
    pub count: Option<u64>,
    /// What to watch (default: the whole system, as perf top).
    #[command(flatten)]
    pub target: TargetArgs,
    /// Refresh interval in seconds.
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECS",
        default_value_t = 1.0
    )]
    pub delay: f64,
    /// Rows shown per refresh (default: as many as the terminal holds; 20 in plain mode).
    #[arg(long = "rows", value_name = "N")]
    pub rows: Option<usize>,
    /// Show culprit's own samples too (system-wide they are hidden, as they are noise).
    #[arg(long = "include-self")]
    pub include_self: bool,
    /// Plain text (one block per refresh) even on a terminal; the default when stdout is not
    /// a terminal.
    #[arg(long = "stdio")]
    pub stdio: bool,
    /// Show a panel of confirmed worst offenders (paired-sampling detector).
    #[arg(long = "offenders")]
    pub offenders: bool,
    /// Offender detector: first counter's terminal value (implies --offenders).
    #[arg(long = "t1", value_name = "N")]
    pub t1: Option<u64>,
    /// Offender detector: second counter's terminal value (implies --offenders).
    #[arg(long = "t2", value_name = "N")]
    pub t2: Option<u64>,
    /// What --t1/--t2 count.
    #[arg(long = "offenders-unit", value_enum, default_value_t = OffendersUnit::Samples)]
    pub offenders_unit: OffendersUnit,
    /// Stop after this many seconds.
    #[arg(long = "duration", value_name = "SECS")]
    pub duration: Option<f64>,
    /// `--format text|json` (json: one object per refresh and line, schema in
    /// docs/schemas/top.schema.json; implies plain mode), `-o FILE`, `--color`, `--width`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The options of the flags (their usage errors first: the delay, the events, the rate,
/// the target).
fn options(args: &TopArgs) -> anyhow::Result<TopOptions> {
    if !(args.delay > 0.0 && args.delay.is_finite()) {
        bail!("-d: the delay must be a positive number of seconds");
    }
    let offenders =
        (args.offenders || args.t1.is_some() || args.t2.is_some()).then_some(Settings {
            t1: args.t1,
            t2: args.t2,
            unit: args.offenders_unit.into(),
        });
    let mut specs = Vec::new();
    for list in &args.events {
        specs.extend(events::parse_event_list(list)?);
    }
    let rate =
        crate::args::sample_rate(args.count, args.freq)?.unwrap_or(SampleRate::Frequency(1000));
    let choice = args.target.choice("top", true)?;
    let format = match args.output.format {
        Format::Json => TopFormat::Json,
        _ => TopFormat::Text,
    };
    Ok(TopOptions {
        verbose: args.verbose,
        events: specs,
        rate,
        target: choice.target,
        cpus: choice.cpus,
        cmdline: std::env::args().collect(),
        delay: args.delay,
        rows: args.rows,
        include_self: args.include_self,
        full_screen: !(args.stdio || format == TopFormat::Json || !args.output.is_tty()),
        format,
        text: args.output.text_options(),
        offenders,
        duration: args.duration,
    })
}

/// Runs `culprit top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    args.output.require("top", &[Format::Text, Format::Json])?;
    let opts = options(&args)?;
    culprit_verbs::top::run(opts, || args.output.unpaged_writer())
}
