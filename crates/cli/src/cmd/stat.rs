//! `culprit stat`: flags → `culprit_verbs::stat` (counting, the report model, writing it
//! as it comes). Text goes to stderr (as perf stat, so the command's stdout stays clean);
//! JSON and CSV go to stdout; `-o FILE` writes any format to FILE instead. The JSON schema
//! is docs/schemas/stat.schema.json.
//!
//! Exit status: the command's (128 + signal if it was killed), 0 for `-p`/`-a` without a
//! command, 2 when counting failed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use culprit_verbs::stat::{StatFormat, StatOptions, TopdownChoice};

use crate::args::{Format, OutputArgs, TargetArgs};

/// Arguments of `culprit stat`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Count events (perf stat), with Top-Down bottleneck analysis (--topdown)",
    after_help = crate::help::layout("EXAMPLES:\n  culprit stat -- ./prog                                  default events (cycles etc. show <not supported> without a PMU)\n  culprit stat -e task-clock,page-faults -r 5 -- ./prog   mean +- stddev over 5 runs\n  culprit stat -e '{task-clock,page-faults},context-switches' -- ./prog   a group counted together\n  culprit stat -I 500 -e task-clock -p 1234               every 500 ms until Ctrl-C\n  culprit stat --topdown --level 2 -- ./prog              Top-Down tree (needs a PMU: AMD Zen 4/5, Intel)\n  culprit stat --topdown --no-multiplex -- ./prog         one run per counter group (needs a PMU)"),
    trailing_var_arg = true
)]
pub struct StatArgs {
    /// Print every perf_event_attr before it is opened, and each open, in perf's `-vv`
    /// layout (repeat: `-vv`).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Event(s) to count, comma-separated, repeatable; `{a,b}` counts a and b as one group.
    /// Default: task-clock, context-switches, cpu-migrations, page-faults, cycles,
    /// instructions, branches, branch-misses (`<not supported>` where there is no PMU).
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENTS",
        conflicts_with = "topdown"
    )]
    pub events: Vec<String>,
    /// Metrics or metric groups of this CPU's pmu-events table, comma-separated (perf's
    /// `-M`; `culprit list --metrics` names them): `-M TopdownL1`, `-M tma_retiring,IPC`.
    #[arg(
        short = 'M',
        long = "metrics",
        value_name = "METRICS",
        conflicts_with = "topdown"
    )]
    pub metrics: Vec<String>,
    /// With -M: print only the metrics, one column each (perf's --metric-only).
    #[arg(long = "metric-only", requires = "metrics")]
    pub metric_only: bool,
    /// With -M: count each event on its own instead of one group per metric.
    #[arg(long = "metric-no-group", requires = "metrics")]
    pub metric_no_group: bool,
    /// Run the command N times and report the mean and standard deviation.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Print the counts of every MS-millisecond interval (at least 10).
    #[arg(
        short = 'I',
        long = "interval-print",
        value_name = "MS",
        conflicts_with_all = ["repeat", "topdown", "metrics"]
    )]
    pub interval: Option<u64>,
    /// CSV output with this field separator (perf's -x); same as `--format csv` with `,`.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "format"
    )]
    pub separator: Option<String>,
    /// Top-Down analysis: fractions of pipeline slots lost to the frontend, bad speculation,
    /// the backend, and retired (AMD Zen 4/Zen 5, Intel Skylake class and Ice Lake+).
    #[arg(long = "topdown")]
    pub topdown: bool,
    /// Top-Down level: 1 (five top nodes) or 2 (their children too).
    #[arg(long = "level", value_name = "1|2", default_value_t = 1, requires = "topdown",
          value_parser = clap::value_parser!(u8).range(1..=2))]
    pub level: u8,
    /// Run the command once per counter group instead of multiplexing all groups in one run
    /// (like toplev's --no-multiplex): exact ratios, N times the run time.
    #[arg(long = "no-multiplex", requires = "topdown")]
    pub no_multiplex: bool,
    /// Report format, file and colour (text goes to stderr, json and csv to stdout; `-o`
    /// writes any of them to FILE, apart from the command's own output).
    #[command(flatten)]
    pub output: OutputArgs,
    /// What to count.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Runs `culprit stat`.
pub fn run(args: StatArgs) -> anyhow::Result<ExitCode> {
    let choice = args.target.choice("stat", false)?;
    if choice.cpus.is_some() {
        anyhow::bail!("stat counts whole tasks or every CPU: -C is not supported (use -a)");
    }
    let format = match (&args.separator, args.output.format) {
        (Some(sep), _) => StatFormat::Csv(sep.clone()),
        (None, Format::Csv) => StatFormat::Csv(",".to_string()),
        (None, Format::Json) => StatFormat::Json,
        (None, Format::Text) => StatFormat::Text,
    };
    let text = format == StatFormat::Text;
    let file = args.output.output.clone();
    // Colour (flagged Top-Down nodes) on a terminal, by `--color` and NO_COLOR.
    let tty = file.is_none() && text && std::io::stderr().is_terminal();
    let opts = StatOptions {
        target: choice.target,
        events: args.events,
        metrics: args.metrics,
        metric_only: args.metric_only,
        metric_no_group: args.metric_no_group,
        repeat: args.repeat,
        interval_ms: args.interval,
        topdown: args.topdown.then_some(TopdownChoice {
            level: args.level,
            no_multiplex: args.no_multiplex,
        }),
        verbose: args.verbose,
        format,
        color: args.output.color.choice().enabled(tty),
        width: args.output.width.filter(|&w| w > 0),
    };
    // Where results go: `-o FILE`, else stderr for text and stdout for JSON/CSV.
    let mut open = || -> anyhow::Result<Box<dyn Write>> {
        Ok(match &file {
            Some(p) => Box::new(
                std::fs::File::create(p)
                    .with_context(|| format!("-o: cannot create {}", p.display()))?,
            ),
            None if text => Box::new(std::io::stderr()),
            None => Box::new(std::io::stdout()),
        })
    };
    culprit_verbs::stat::run(&opts, &mut open)
}
