//! `culprit stat`: flags → `culprit_collect::stat` (counting: raw counts) →
//! `culprit_analysis::stat` (aggregation, metrics, Top-Down: the report model) → rendering. Text goes to stderr (as perf stat, so the command's stdout stays clean); JSON
//! and CSV go to stdout; `-o FILE` writes any format to FILE instead. The JSON schema is
//! docs/schemas/stat.schema.json.
//!
//! Exit status: the command's (128 + signal if it was killed), 0 for `-p`/`-a` without a
//! command, 2 when counting failed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use culprit_analysis::stat::{self as model, EventInfo, RawStat, RunCounts, RunFacts};
use culprit_analysis::stat::{IntervalCounts, StatInterval, StatReport};
use culprit_collect::count::Reading;
use culprit_collect::events::EventSpec;
use culprit_collect::stat::{self, IntervalReadings, StatOptions};
use culprit_output::TextOptions;

use crate::args::{Format, OutputArgs, TargetArgs};

mod metrics;
use culprit_analysis::stat::render;
pub mod topdown;
use culprit_analysis::stat::topdown_render;

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

/// Where results go: `-o FILE`, else stderr for text and stdout for JSON/CSV.
struct Sink {
    file: Option<std::fs::File>,
    text: bool,
}

impl Sink {
    fn new(out: &OutputArgs, format: Format) -> anyhow::Result<Sink> {
        let file = match &out.output {
            Some(p) => Some(
                std::fs::File::create(p)
                    .with_context(|| format!("-o: cannot create {}", p.display()))?,
            ),
            None => None,
        };
        Ok(Sink {
            file,
            text: format == Format::Text,
        })
    }

    /// Colour (flagged Top-Down nodes) on a terminal, by `--color` and NO_COLOR.
    fn color(&self, out: &OutputArgs) -> bool {
        let tty = self.file.is_none() && self.text && std::io::stderr().is_terminal();
        out.color.choice().enabled(tty)
    }

    fn lock(&self) -> Box<dyn Write + '_> {
        match &self.file {
            Some(f) => Box::new(f),
            None if self.text => Box::new(std::io::stderr().lock()),
            None => Box::new(std::io::stdout().lock()),
        }
    }

    fn lines(&self, lines: &[String]) -> std::io::Result<()> {
        let mut w = self.lock();
        lines.iter().try_for_each(|l| writeln!(w, "{l}"))
    }
}

fn exit_code(report: &StatReport) -> ExitCode {
    ExitCode::from(report.exit_status().clamp(0, 255) as u8)
}

/// Runs `culprit stat`.
pub fn run(args: StatArgs) -> anyhow::Result<ExitCode> {
    culprit_collect::verbose::set_level(args.verbose);
    let choice = args.target.choice("stat", false)?;
    if choice.cpus.is_some() {
        anyhow::bail!("stat counts whole tasks or every CPU: -C is not supported (use -a)");
    }
    let format = if args.separator.is_some() {
        Format::Csv
    } else {
        args.output.format
    };
    let sep = args.separator.clone().unwrap_or_else(|| ",".to_string());
    if !args.metrics.is_empty() {
        return metrics::run(&args, &args.metrics.join(","), format, &sep);
    }
    let mut warn = |w: String| eprintln!("culprit: warning: {w}");
    if args.topdown {
        let sink = Sink::new(&args.output, format)?;
        let run = topdown::run(
            choice.target,
            args.level,
            args.no_multiplex,
            args.repeat,
            &mut warn,
        )?;
        let report = match run {
            Err(unsupported) => {
                // No hand-written Top-Down for this CPU: its table's TMA/pipeline metrics.
                let Some(groups) = metrics::topdown_groups(args.level) else {
                    return Err(unsupported.into());
                };
                if let culprit_analysis::topdown::TopdownError::Unsupported(cpu) = &unsupported {
                    eprintln!(
                        "culprit: Top-Down for {cpu} from its pmu-events metrics (-M {groups})"
                    );
                }
                return metrics::run(&args, &groups, format, &sep);
            }
            Ok(report) => report,
        };
        write_report(&sink, &args.output, format, &sep, &report)?;
        return Ok(exit_code(&report));
    }
    let opts = StatOptions {
        groups: stat::groups_of(&args.events)?,
        target: choice.target,
        interval: args.interval.map(Duration::from_millis),
        repeat: args.repeat,
    };
    let sink = Sink::new(&args.output, format)?;
    let mut first = true;
    let mut print_err: Option<std::io::Error> = None;
    let mut on_interval = |iv: &StatInterval| {
        let lines = match format {
            Format::Json => return,
            Format::Csv => render::interval_csv_lines(iv, &sep),
            Format::Text => render::interval_text_lines(iv, std::mem::take(&mut first)),
        };
        if let Err(e) = sink.lines(&lines) {
            print_err.get_or_insert(e);
        }
    };
    let report = count_report(&opts, &mut on_interval, &mut warn)?;
    if let Some(e) = print_err {
        return Err(e.into());
    }
    if opts.interval.is_none() || format == Format::Json {
        write_report(&sink, &args.output, format, &sep, &report)?;
    }
    Ok(exit_code(&report))
}

/// What the model needs of an event spec: its name, scale, unit and whether it is uncore.
fn event_info(spec: &EventSpec) -> EventInfo {
    EventInfo {
        name: spec.name.clone(),
        scale: spec.scale(),
        unit: spec.scale_unit.as_ref().map(|(_, unit)| unit.clone()),
        uncore: spec.cpumask.is_some(),
    }
}

/// Collect's readings (`[group][event]`, `None`: not supported) as the model's counts.
fn run_counts(groups: &[Vec<Option<Reading>>]) -> RunCounts {
    groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|r| r.as_ref().map(topdown::count_of))
                .collect()
        })
        .collect()
}

fn interval_counts(iv: &IntervalReadings) -> IntervalCounts {
    IntervalCounts {
        time_s: iv.elapsed.as_secs_f64(),
        counts: run_counts(&iv.groups),
    }
}

/// Counts `opts` (`collect::stat`) and computes the report (`analysis::stat`); each `-I`
/// interval's rows go to `on_interval` as they come. Rows that do not count say why, asked
/// of their first event's spec.
pub(crate) fn count_report(
    opts: &StatOptions,
    on_interval: &mut dyn FnMut(&StatInterval),
    warn: &mut dyn FnMut(String),
) -> anyhow::Result<StatReport> {
    let infos: Vec<Vec<EventInfo>> = opts
        .groups
        .iter()
        .map(|g| g.iter().map(event_info).collect())
        .collect();
    let mut on_readings =
        |iv: &IntervalReadings| on_interval(&model::interval(&infos, &interval_counts(iv)));
    let counts = stat::run(opts, &mut on_readings, warn)?;
    let (exit_code, signal) = topdown::exit_parts(counts.exit);
    let raw = RawStat {
        events: infos,
        runs: counts.runs.iter().map(|r| run_counts(r)).collect(),
        intervals: opts
            .interval
            .map(|_| counts.intervals.iter().map(interval_counts).collect()),
        facts: RunFacts {
            target: opts.target.describe(),
            elapsed_runs: counts
                .elapsed_runs
                .iter()
                .map(|d| d.as_nanos() as f64)
                .collect(),
            exit_code,
            signal,
            interrupted: counts.interrupted,
            user_only: counts.user_only,
            cpu: culprit_collect::sysfs::cpu_identity()
                .as_ref()
                .map(topdown::cpu_info),
        },
    };
    let specs: Vec<&EventSpec> = opts.groups.iter().flatten().collect();
    // Probed once per row that did not count, after the runs.
    let mut why_of = |i: usize| specs.get(i).map(|s| stat::not_supported_reason(s));
    Ok(model::report(raw, &mut why_of))
}

fn write_report(
    sink: &Sink,
    out: &OutputArgs,
    format: Format,
    sep: &str,
    report: &StatReport,
) -> anyhow::Result<()> {
    match format {
        Format::Json => culprit_output::json::write(&mut *sink.lock(), report)?,
        Format::Csv => match &report.topdown {
            Some(td) => {
                let events: Vec<String> = report
                    .events
                    .iter()
                    .map(|e| render::csv_line(sep, e, None))
                    .collect();
                sink.lines(&events)?;
                sink.lines(&topdown_render::csv_lines(td, sep))?;
            }
            None => sink.lines(&render::report_csv_lines(report, sep))?,
        },
        Format::Text => match &report.topdown {
            Some(td) => {
                let groups = td.groups.len();
                let color = sink.color(out);
                let lines: Vec<String> = topdown_render::text_lines(td, &report.target, groups)
                    .into_iter()
                    .map(|l| {
                        // Flagged nodes (` * name`) in red on a colour terminal.
                        if color && l.starts_with(" * ") {
                            culprit_output::style::paint(&l, culprit_output::style::HOT)
                        } else {
                            l
                        }
                    })
                    .collect();
                sink.lines(&lines)?;
            }
            None => {
                // perf stat's lines are not cut to a width (as perf).
                let o = TextOptions {
                    width: out.width.filter(|&w| w > 0),
                    color: false,
                };
                culprit_output::text::write(&mut *sink.lock(), &render::document(report), &o)?;
            }
        },
    }
    Ok(())
}
