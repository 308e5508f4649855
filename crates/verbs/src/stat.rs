//! `culprit stat` as a library call: `culprit_collect::stat` counts (raw readings),
//! `culprit_analysis::stat` aggregates them into the report model (metrics, Top-Down), and
//! the report is written, in perf's text or CSV or as JSON, to the writer the caller opens.
//! `-I` intervals stream to that writer while the target runs. The JSON schema is
//! docs/schemas/stat.schema.json.
//!
//! Exit status: the command's (128 + signal if it was killed), 0 for `-p`/`-a` without a
//! command; errors (counting failed) are the caller's to report.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use culprit_analysis::stat::render;
use culprit_analysis::stat::topdown_render;
use culprit_analysis::stat::{self as model, EventInfo, RawStat, RunCounts};
use culprit_analysis::stat::{IntervalCounts, StatInterval, StatReport};
use culprit_collect::count::Reading;
use culprit_collect::events::EventSpec;
use culprit_collect::stat::{self as counting, IntervalReadings};
use culprit_collect::target::Target;
use culprit_output::TextOptions;

pub mod metrics;
pub mod topdown;

/// The format of stat's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatFormat {
    /// perf stat's text (aligned lines; Top-Down's tree).
    Text,
    /// perf stat's CSV, fields separated by this string (perf's `-x`; `,` for
    /// `--format csv`).
    Csv(String),
    /// The report as JSON (docs/schemas/stat.schema.json).
    Json,
}

/// `--topdown`: what to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopdownChoice {
    /// Top-Down level: 1 (five top nodes) or 2 (their children too).
    pub level: u8,
    /// One run per counter group instead of multiplexing all groups in one run.
    pub no_multiplex: bool,
}

/// What `culprit stat` counts and how it writes the results.
#[derive(Debug, Clone)]
pub struct StatOptions {
    /// Whom to count: a command, processes, or the whole system.
    pub target: Target,
    /// The event lists (`-e`), each comma-separated; `{a,b}` is a group. Empty: perf's
    /// default events.
    pub events: Vec<String>,
    /// Metrics or metric groups of this CPU's pmu-events table (`-M`), each
    /// comma-separated. Non-empty: stat counts and evaluates these metrics.
    pub metrics: Vec<String>,
    /// With metrics: print only the metrics, one column each (`--metric-only`).
    pub metric_only: bool,
    /// With metrics: count each event on its own instead of one group per metric.
    pub metric_no_group: bool,
    /// Run the command this many times (mean and standard deviation).
    pub repeat: u32,
    /// Print the counts of every interval of this many milliseconds (`-I`).
    pub interval_ms: Option<u64>,
    /// `--topdown`: the Top-Down tree instead of events.
    pub topdown: Option<TopdownChoice>,
    /// perf's `-v` level: print every perf_event_attr before it is opened.
    pub verbose: u8,
    /// Text, CSV (with its separator) or JSON.
    pub format: StatFormat,
    /// Colour flagged Top-Down nodes (the caller decides: a terminal, `--color`, NO_COLOR).
    pub color: bool,
    /// Fit text lines to this many columns (`None`: never cut).
    pub width: Option<usize>,
}

/// Opens the writer stat's results go to. It is called when the first results are due
/// (after the event list is parsed, and after counting for metrics), so that errors come in
/// the same order whatever the output is; it may be called again (Top-Down falling back to
/// its metrics), and must then start the output afresh.
pub type OpenOutput<'a> = dyn FnMut() -> anyhow::Result<Box<dyn Write>> + 'a;

/// Where results go: the writer, written a line at a time.
struct Sink {
    out: Box<dyn Write>,
}

impl Sink {
    fn open(open: &mut OpenOutput) -> anyhow::Result<Sink> {
        Ok(Sink { out: open()? })
    }

    fn lines(&mut self, lines: &[String]) -> std::io::Result<()> {
        lines.iter().try_for_each(|l| writeln!(self.out, "{l}"))
    }
}

fn exit_code(report: &StatReport) -> ExitCode {
    ExitCode::from(report.exit_status().clamp(0, 255) as u8)
}

/// Prints a warning of counting on stderr.
fn warn(w: String) {
    eprintln!("culprit: warning: {w}");
}

/// Runs `culprit stat`: counts what `opts` asks on its target and writes the results (the
/// `-I` intervals as they come) to the writer `open` gives. Returns the exit status (the
/// command's).
pub fn run(opts: &StatOptions, open: &mut OpenOutput) -> anyhow::Result<ExitCode> {
    culprit_collect::verbose::set_level(opts.verbose);
    if !opts.metrics.is_empty() {
        return metrics::run(opts, &opts.metrics.join(","), open);
    }
    if let Some(td) = opts.topdown {
        return run_topdown(opts, td, open);
    }
    let copts = counting::StatOptions {
        groups: counting::groups_of(&opts.events)?,
        target: opts.target.clone(),
        interval: opts.interval_ms.map(Duration::from_millis),
        repeat: opts.repeat,
    };
    let mut sink = Sink::open(open)?;
    let mut first = true;
    let mut print_err: Option<std::io::Error> = None;
    let mut on_interval = |iv: &StatInterval| {
        let lines = match &opts.format {
            StatFormat::Json => return,
            StatFormat::Csv(sep) => render::interval_csv_lines(iv, sep),
            StatFormat::Text => render::interval_text_lines(iv, std::mem::take(&mut first)),
        };
        if let Err(e) = sink.lines(&lines) {
            print_err.get_or_insert(e);
        }
    };
    let report = count_report(&copts, &mut on_interval, &mut warn)?;
    if let Some(e) = print_err {
        return Err(e.into());
    }
    if copts.interval.is_none() || opts.format == StatFormat::Json {
        write_report(&mut sink, opts, &report)?;
    }
    Ok(exit_code(&report))
}

/// `--topdown`: this CPU's hand-written model, else its table's Top-Down metrics.
fn run_topdown(
    opts: &StatOptions,
    td: TopdownChoice,
    open: &mut OpenOutput,
) -> anyhow::Result<ExitCode> {
    let mut sink = Sink::open(open)?;
    let run = topdown::run(
        opts.target.clone(),
        td.level,
        td.no_multiplex,
        opts.repeat,
        &mut warn,
    )?;
    let report = match run {
        Err(unsupported) => {
            // No hand-written Top-Down for this CPU: its table's TMA/pipeline metrics.
            let Some(groups) = metrics::topdown_groups(td.level) else {
                return Err(unsupported.into());
            };
            if let culprit_analysis::topdown::TopdownError::Unsupported(cpu) = &unsupported {
                eprintln!("culprit: Top-Down for {cpu} from its pmu-events metrics (-M {groups})");
            }
            drop(sink);
            return metrics::run(opts, &groups, open);
        }
        Ok(report) => report,
    };
    write_report(&mut sink, opts, &report)?;
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
    opts: &counting::StatOptions,
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
    let counts = counting::run(opts, &mut on_readings, warn)?;
    let raw = RawStat {
        events: infos,
        runs: counts.runs.iter().map(|r| run_counts(r)).collect(),
        intervals: opts
            .interval
            .map(|_| counts.intervals.iter().map(interval_counts).collect()),
        facts: topdown::run_facts(
            &opts.target,
            &counts.elapsed_runs,
            counts.exit,
            counts.interrupted,
            counts.user_only,
            culprit_collect::sysfs::cpu_identity()
                .as_ref()
                .map(topdown::cpu_info),
        ),
    };
    let specs: Vec<&EventSpec> = opts.groups.iter().flatten().collect();
    // Probed once per row that did not count, after the runs.
    let mut why_of = |i: usize| specs.get(i).map(|s| counting::not_supported_reason(s));
    Ok(model::report(raw, &mut why_of))
}

fn write_report(sink: &mut Sink, opts: &StatOptions, report: &StatReport) -> anyhow::Result<()> {
    match &opts.format {
        StatFormat::Json => culprit_output::json::write(&mut *sink.out, report)?,
        StatFormat::Csv(sep) => match &report.topdown {
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
        StatFormat::Text => match &report.topdown {
            Some(td) => {
                let groups = td.groups.len();
                let lines: Vec<String> = topdown_render::text_lines(td, &report.target, groups)
                    .into_iter()
                    .map(|l| {
                        // Flagged nodes (` * name`) in red on a colour terminal.
                        if opts.color && l.starts_with(" * ") {
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
                    width: opts.width,
                    color: false,
                };
                culprit_output::text::write(&mut *sink.out, &render::document(report), &o)?;
            }
        },
    }
    Ok(())
}
