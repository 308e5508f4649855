//! `culprit stat`: count events like `perf stat` (raw, scaled, running/enabled; `-r` repeats
//! with mean ± stddev; `-I` intervals; derived metrics), and `--topdown`: the Top-Down tree of
//! pipeline slots with thresholds, reliability, the critical bottleneck and hints.
//!
//! Counting is `culprit_collect::count`; the formulas are `culprit_analysis::{metrics,
//! topdown}`. Text goes to stderr (as perf stat, so the command's stdout stays clean); JSON and
//! CSV go to stdout; `-o FILE` writes any format to FILE instead. The JSON schema is in
//! docs/stat.md.
//!
//! Exit status: the command's (128 + signal if it was killed), 0 for `-p`/`-a` without a
//! command, 2 when counting failed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::ValueEnum;
use culprit_analysis::metrics::{self, Counted, Metric};
use culprit_analysis::topdown::{self, Count, Model, Node, Plan, Topdown};
use culprit_collect::count::{self, CountOptions, CountResult, CountTarget, Interval, Reading};
use culprit_collect::events::{self, EventSpec};
use culprit_collect::launch::ChildExit;
use culprit_collect::probe;
use culprit_collect::sysfs::{self, CpuIdentity};
use serde::Serialize;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatFormat {
    /// perf-stat-like text on stderr.
    Text,
    /// One JSON object on stdout (schema in docs/stat.md).
    Json,
    /// perf's `-x,` CSV lines on stdout.
    Csv,
}

/// Arguments of `culprit stat`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Count events (perf stat), with Top-Down bottleneck analysis (--topdown)",
    after_help = "EXAMPLES:\n  culprit stat -- ./prog                                  default events (software + cycles/instructions/branches)\n  culprit stat -e task-clock,page-faults -r 5 -- ./prog   mean +- stddev over 5 runs\n  culprit stat -e '{cycles,instructions},branch-misses' -- ./prog   a group counted together\n  culprit stat -I 500 -e task-clock -p 1234               every 500 ms until Ctrl-C\n  culprit stat --topdown --level 2 -- ./prog              Top-Down tree (AMD Zen 4/5, Intel)\n  culprit stat --topdown --no-multiplex -- ./prog         one run per counter group, no multiplexing",
    trailing_var_arg = true
)]
pub struct StatArgs {
    /// Event(s) to count, comma-separated, repeatable; `{a,b}` counts a and b as one group.
    /// Default: task-clock, context-switches, cpu-migrations, page-faults, plus cycles,
    /// instructions, branches, branch-misses where a hardware PMU exists.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENTS",
        conflicts_with = "topdown"
    )]
    pub events: Vec<String>,
    /// Run the command N times and report the mean and standard deviation.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Print the counts of every MS-millisecond interval (at least 10).
    #[arg(
        short = 'I',
        long = "interval-print",
        value_name = "MS",
        conflicts_with_all = ["repeat", "topdown"]
    )]
    pub interval: Option<u64>,
    /// Attach to running process(es) (comma-separated) until they exit or Ctrl-C.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID…]",
        conflicts_with = "all_cpus"
    )]
    pub pid: Option<String>,
    /// System-wide: every CPU (with a command: until it exits; without: until Ctrl-C).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// CSV output with this field separator (perf's -x); same as `--format csv` with `,`.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "format"
    )]
    pub separator: Option<String>,
    /// Write the results to FILE instead of stderr (text) / stdout (json, csv), so they do
    /// not mix with the command's own output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Output format: text (stderr), json (stdout, docs/stat.md) or csv (stdout).
    #[arg(long = "format", value_enum, default_value_t = StatFormat::Text)]
    pub format: StatFormat,
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
    /// The command to run and its arguments (put `--` before it).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Splits `-e` text into groups: `{a,b}` is one group, every other event its own group
/// (perf stat's default).
fn parse_groups(list: &str) -> anyhow::Result<Vec<Vec<EventSpec>>> {
    let mut groups = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('{') {
            let end = after
                .find('}')
                .with_context(|| format!("-e `{list}`: `{{` without a closing `}}`"))?;
            let inner = &after[..end];
            let specs = events::parse_event_list(inner)?;
            if specs.is_empty() {
                bail!("-e `{list}`: empty group `{{}}`");
            }
            groups.push(specs);
            rest = &after[end + 1..];
            if rest.starts_with(':') {
                bail!("-e `{list}`: modifiers after a group (`}}:u`) are not supported; put them on each event");
            }
            rest = rest.strip_prefix(',').unwrap_or(rest);
        } else {
            let end = rest.find('{').unwrap_or(rest.len());
            let chunk = rest[..end].trim_end_matches(',');
            if !chunk.is_empty() {
                groups.extend(
                    events::parse_event_list(chunk)?
                        .into_iter()
                        .map(|s| vec![s]),
                );
            }
            rest = &rest[end..];
        }
    }
    Ok(groups)
}

fn default_groups() -> anyhow::Result<Vec<Vec<EventSpec>>> {
    let mut names = "task-clock,context-switches,cpu-migrations,page-faults".to_string();
    if probe::hardware_pmu_available() {
        names.push_str(",cycles,instructions,branches,branch-misses");
    }
    parse_groups(&names)
}

fn parse_pids(s: &str) -> anyhow::Result<Vec<i32>> {
    let v = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|&n| n > 0)
                .with_context(|| format!("-p: `{p}` is not a process id"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if v.is_empty() {
        bail!("-p: no process id given");
    }
    Ok(v)
}

fn target(args: &StatArgs) -> anyhow::Result<CountTarget> {
    Ok(if let Some(p) = &args.pid {
        if !args.command.is_empty() {
            bail!(
                "-p attaches to running processes: give no command (got `{}`)",
                args.command.join(" ")
            );
        }
        CountTarget::Pids(parse_pids(p)?)
    } else if args.all_cpus {
        CountTarget::System((!args.command.is_empty()).then(|| args.command.clone()))
    } else if args.command.is_empty() {
        bail!("nothing to count: give a command (`culprit stat -- ./prog`), -p PID or -a");
    } else {
        CountTarget::Command(args.command.clone())
    })
}

fn describe_target(t: &CountTarget) -> String {
    match t {
        CountTarget::Command(argv) => format!("'{}'", argv.join(" ")),
        CountTarget::Pids(p) => format!(
            "process id '{}'",
            p.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        CountTarget::System(Some(argv)) => format!("'system wide' while '{}'", argv.join(" ")),
        CountTarget::System(None) => "'system wide'".to_string(),
    }
}

/// One event's aggregated result over the runs.
#[derive(Debug, Clone, Serialize)]
struct EventOut {
    name: String,
    /// Raw count (mean over runs, rounded).
    value: u64,
    /// Scaled count (mean); null when it never ran.
    scaled: Option<f64>,
    enabled_ns: u64,
    running_ns: u64,
    /// running / enabled × 100.
    running_pct: f64,
    /// Group index (events of one group share a time window).
    group: usize,
    /// Sample standard deviation of the scaled count over the runs (null for one run).
    stddev: Option<f64>,
}

fn to_count(r: &Reading) -> Count {
    Count {
        value: r.value,
        enabled_ns: r.enabled_ns,
        running_ns: r.running_ns,
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn stddev(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v);
    Some((v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
}

/// Aggregates per-run readings (`runs[r][g][e]`) of `groups` into event rows.
fn aggregate(groups: &[Vec<EventSpec>], runs: &[Vec<Vec<Reading>>]) -> Vec<EventOut> {
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for (ei, spec) in g.iter().enumerate() {
            let rs: Vec<Reading> = runs
                .iter()
                .filter_map(|r| r.get(gi).and_then(|g| g.get(ei)).copied())
                .collect();
            let scaled: Vec<f64> = rs.iter().filter_map(Reading::scaled).collect();
            let m = |f: fn(&Reading) -> u64| {
                mean(&rs.iter().map(|r| f(r) as f64).collect::<Vec<_>>()).round() as u64
            };
            let enabled = m(|r| r.enabled_ns);
            let running = m(|r| r.running_ns);
            out.push(EventOut {
                name: spec.name.clone(),
                value: m(|r| r.value),
                scaled: (!scaled.is_empty()).then(|| mean(&scaled)),
                enabled_ns: enabled,
                running_ns: running,
                running_pct: if enabled == 0 {
                    100.0
                } else {
                    (running as f64 / enabled as f64 * 100.0).min(100.0)
                },
                group: gi,
                stddev: stddev(&scaled),
            });
        }
    }
    out
}

fn metrics_of(events: &[EventOut], elapsed_ns: u64) -> Vec<Metric> {
    let counted: Vec<Counted> = events
        .iter()
        .map(|e| Counted {
            name: &e.name,
            count: Count {
                value: e.value,
                enabled_ns: e.enabled_ns,
                running_ns: e.running_ns,
            },
            group: e.group,
        })
        .collect();
    metrics::derived(&counted, elapsed_ns)
}

/// The JSON output (docs/stat.md).
#[derive(Serialize)]
struct JsonOut<'a> {
    cpu: Option<CpuIdentity>,
    target: String,
    runs: u32,
    /// Mean wall time of a run.
    elapsed_ns: u64,
    /// Standard deviation of the wall time over the runs.
    elapsed_stddev_ns: Option<f64>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    interrupted: bool,
    user_only: bool,
    events: &'a [EventOut],
    metrics: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<&'a [JsonInterval]>,
    topdown: Option<JsonTopdown<'a>>,
}

#[derive(Serialize, Clone)]
struct JsonInterval {
    time_s: f64,
    events: Vec<EventOut>,
}

/// One event of a Top-Down group, with its encoding (so others can count the same thing).
#[derive(Serialize)]
struct JsonGroupEvent<'a> {
    name: &'a str,
    /// `perf_event_attr.type`.
    attr_type: u32,
    /// `perf_event_attr.config` in hex (`0x1000001a0`); perf accepts it as `r1000001a0`.
    config: String,
}

#[derive(Serialize)]
struct JsonTopdown<'a> {
    model: &'a str,
    level: u8,
    slots_per_cycle: u32,
    usable_counters: usize,
    thresholds: &'a str,
    /// How the groups were counted: "multiplexed" (one run, groups time-shared), "at_once"
    /// (one run, every group on a counter) or "no_multiplex" (one run per group).
    mode: &'a str,
    groups: Vec<Vec<JsonGroupEvent<'a>>>,
    level1: topdown::Level1,
    tree: &'a [Node],
    bottleneck: Option<&'a str>,
}

fn metrics_json(ms: &[Metric]) -> serde_json::Map<String, serde_json::Value> {
    ms.iter()
        .map(|m| {
            (
                m.name.clone(),
                serde_json::json!({
                    "value": m.value,
                    "unit": m.unit,
                    "reliability": m.reliability,
                    "unreliable": m.unreliable,
                    "inputs": m.inputs,
                }),
            )
        })
        .collect()
}

/// Thousands separators, as perf prints counts.
fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let bytes = s.as_bytes();
    let head = match bytes.len() % 3 {
        0 => 3.min(bytes.len()),
        r => r,
    };
    let mut out = s[..head].to_string();
    for chunk in bytes[head..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
    }
    out
}

fn is_msec(name: &str) -> bool {
    let b = name.split(':').next().unwrap_or(name);
    b == "task-clock" || b == "cpu-clock"
}

/// (value text, unit) as perf prints it.
fn value_text(e: &EventOut, csv: bool) -> (String, &'static str) {
    let Some(v) = e.scaled else {
        return ("<not counted>".to_string(), "");
    };
    if is_msec(&e.name) {
        return (format!("{:.2}", v / 1e6), "msec");
    }
    let n = v.round() as u64;
    (if csv { n.to_string() } else { group_digits(n) }, "")
}

fn csv_line(sep: &str, e: &EventOut, metric: Option<&Metric>) -> String {
    let (v, unit) = value_text(e, true);
    let (mv, mu) = metric.map_or((String::new(), String::new()), |m| {
        (format!("{:.3}", m.value), m.unit.clone())
    });
    [
        v,
        unit.to_string(),
        e.name.clone(),
        e.running_ns.to_string(),
        format!("{:.2}", e.running_pct),
        mv,
        mu,
    ]
    .join(sep)
}

/// The metric printed beside an event (perf's `#` column).
fn metric_for<'a>(e: &EventOut, ms: &'a [Metric]) -> Option<&'a Metric> {
    // The first metric computed from this event (derived() orders them as perf shows them).
    ms.iter().find(|m| m.inputs.first() == Some(&e.name))
}

fn metric_value_text(m: &Metric) -> String {
    if m.name.ends_with("_ratio") {
        format!("{:.2}% {}", m.value * 100.0, m.unit)
    } else {
        format!("{:.3} {}", m.value, m.unit)
    }
}

fn text_event_line(e: &EventOut, ms: &[Metric], runs: u32) -> String {
    let (v, unit) = value_text(e, false);
    let mut line = format!("{v:>18} {unit:<5} {:<34}", e.name);
    if let Some(m) = metric_for(e, ms) {
        line.push_str(&format!(" #  {}", metric_value_text(m)));
    }
    if runs > 1 {
        if let (Some(sd), Some(mean)) = (e.stddev, e.scaled) {
            let pct = if mean == 0.0 { 0.0 } else { sd / mean * 100.0 };
            line.push_str(&format!("  ( +- {pct:.2}% )"));
        }
    }
    if e.running_pct < 99.995 && e.scaled.is_some() {
        line.push_str(&format!("  ({:.2}%)", e.running_pct));
    }
    line.trim_end().to_string()
}

/// Where results go: `-o FILE`, else stderr for text and stdout for JSON/CSV.
struct Sink {
    file: Option<std::fs::File>,
    text: bool,
}

impl Sink {
    fn new(args: &StatArgs, format: StatFormat) -> anyhow::Result<Sink> {
        let file = match &args.output {
            Some(p) => Some(
                std::fs::File::create(p)
                    .with_context(|| format!("-o: cannot create {}", p.display()))?,
            ),
            None => None,
        };
        Ok(Sink {
            file,
            text: format == StatFormat::Text,
        })
    }

    fn is_terminal(&self) -> bool {
        self.file.is_none() && self.text && std::io::stderr().is_terminal()
    }

    fn lock(&self) -> Box<dyn Write + '_> {
        match &self.file {
            Some(f) => Box::new(f),
            None if self.text => Box::new(std::io::stderr().lock()),
            None => Box::new(std::io::stdout().lock()),
        }
    }
}

fn exit_code(exit: Option<ChildExit>) -> ExitCode {
    ExitCode::from(exit.map_or(0, |e| e.code()).clamp(0, 255) as u8)
}

/// Runs `culprit stat`.
pub fn run(args: StatArgs) -> anyhow::Result<ExitCode> {
    if args.repeat == 0 {
        bail!("-r: the number of runs must be at least 1");
    }
    let target = target(&args)?;
    if args.repeat > 1 && !matches!(target, CountTarget::Command(_)) {
        bail!("-r repeats a command: it cannot be used with -p, or -a without a command");
    }
    let format = if args.separator.is_some() {
        StatFormat::Csv
    } else {
        args.format
    };
    let sep = args.separator.clone().unwrap_or_else(|| ",".to_string());
    if args.topdown {
        return run_topdown(&args, target, format, &sep);
    }
    let mut groups = Vec::new();
    for list in &args.events {
        groups.extend(parse_groups(list)?);
    }
    if groups.is_empty() {
        groups = default_groups()?;
    }
    let interval = args.interval.map(Duration::from_millis);
    let opts = CountOptions {
        groups: groups.clone(),
        target: target.clone(),
        interval,
    };
    let sink = Sink::new(&args, format)?;
    let mut json_intervals: Vec<JsonInterval> = Vec::new();
    let mut header_done = false;
    let mut runs: Vec<CountResult> = Vec::new();
    let mut print_err: Option<std::io::Error> = None;
    for _ in 0..args.repeat {
        let mut on_interval = |iv: &Interval| {
            let evs = aggregate(&groups, std::slice::from_ref(&iv.groups));
            let t = iv.elapsed.as_secs_f64();
            let res = match format {
                StatFormat::Json => {
                    json_intervals.push(JsonInterval {
                        time_s: t,
                        events: evs,
                    });
                    Ok(())
                }
                StatFormat::Csv => {
                    let mut w = sink.lock();
                    evs.iter()
                        .try_for_each(|e| writeln!(w, "{t:.9}{sep}{}", csv_line(&sep, e, None)))
                }
                StatFormat::Text => {
                    let mut w = sink.lock();
                    let mut r = Ok(());
                    if !header_done {
                        header_done = true;
                        r = writeln!(w, "#           time             counts unit events");
                    }
                    r.and_then(|_| {
                        evs.iter().try_for_each(|e| {
                            writeln!(w, "{t:>15.9} {}", text_event_line(e, &[], 1))
                        })
                    })
                }
            };
            if let Err(e) = res {
                print_err.get_or_insert(e);
            }
        };
        let res = count::count(&opts, &mut on_interval, &mut |w| {
            eprintln!("culprit: warning: {w}")
        })?;
        let stop = res.interrupted;
        runs.push(res);
        if stop {
            break;
        }
    }
    if let Some(e) = print_err {
        return Err(e.into());
    }
    let readings: Vec<Vec<Vec<Reading>>> = runs.iter().map(|r| r.groups.clone()).collect();
    let events = aggregate(&groups, &readings);
    let elapsed: Vec<f64> = runs.iter().map(|r| r.elapsed.as_nanos() as f64).collect();
    let elapsed_ns = mean(&elapsed).round() as u64;
    let ms = metrics_of(&events, elapsed_ns);
    let last = runs.last();
    let exit = last.and_then(|r| r.exit);
    match format {
        StatFormat::Json => {
            let (code, signal) = split_exit(exit);
            let out = JsonOut {
                cpu: sysfs::cpu_identity(),
                target: describe_target(&target),
                runs: runs.len() as u32,
                elapsed_ns,
                elapsed_stddev_ns: stddev(&elapsed),
                exit_code: code,
                signal,
                interrupted: last.is_some_and(|r| r.interrupted),
                user_only: last.is_some_and(|r| r.user_only),
                events: &events,
                metrics: metrics_json(&ms),
                intervals: interval.is_some().then_some(json_intervals.as_slice()),
                topdown: None,
            };
            let mut w = sink.lock();
            serde_json::to_writer_pretty(&mut w, &out)?;
            writeln!(w)?;
        }
        StatFormat::Csv => {
            if interval.is_none() {
                let mut w = sink.lock();
                for e in &events {
                    writeln!(w, "{}", csv_line(&sep, e, metric_for(e, &ms)))?;
                }
            }
        }
        StatFormat::Text => {
            if interval.is_none() {
                let mut w = sink.lock();
                print_text(&mut w, &target, &events, &ms, runs.len() as u32, &elapsed)?;
            }
        }
    }
    Ok(exit_code(exit))
}

fn split_exit(exit: Option<ChildExit>) -> (Option<i32>, Option<i32>) {
    match exit {
        Some(ChildExit::Exited(c)) => (Some(c), None),
        Some(ChildExit::Signaled(s)) => (None, Some(s)),
        None => (None, None),
    }
}

fn print_text(
    w: &mut dyn Write,
    target: &CountTarget,
    events: &[EventOut],
    ms: &[Metric],
    runs: u32,
    elapsed: &[f64],
) -> std::io::Result<()> {
    let runs_txt = if runs > 1 {
        format!(" ({runs} runs)")
    } else {
        String::new()
    };
    writeln!(w)?;
    writeln!(
        w,
        " Performance counter stats for {}{runs_txt}:",
        describe_target(target)
    )?;
    writeln!(w)?;
    for e in events {
        writeln!(w, "{}", text_event_line(e, ms, runs))?;
    }
    // Metrics not already printed beside their event.
    let shown: Vec<&str> = events
        .iter()
        .filter_map(|e| metric_for(e, ms).map(|m| m.name.as_str()))
        .collect();
    let rest: Vec<&Metric> = ms
        .iter()
        .filter(|m| !shown.contains(&m.name.as_str()))
        .collect();
    if !rest.is_empty() {
        writeln!(w)?;
        for m in rest {
            writeln!(
                w,
                "{:>18}       {:<34} # {}{}",
                format!("{:.3}", m.value),
                m.name,
                m.unit,
                if m.unreliable {
                    format!(" (unreliable: reliability {:.2})", m.reliability)
                } else {
                    String::new()
                }
            )?;
        }
    }
    writeln!(w)?;
    let m = mean(elapsed) / 1e9;
    match stddev(elapsed) {
        Some(sd) => writeln!(
            w,
            "{m:>18.9} +- {:.9} seconds time elapsed  ( +- {:.2}% )",
            sd / 1e9,
            if m == 0.0 { 0.0 } else { sd / 1e9 / m * 100.0 }
        )?,
        None => writeln!(w, "{m:>18.9} seconds time elapsed")?,
    }
    writeln!(w)
}

// ---------------------------------------------------------------------------------------
// --topdown

/// Why Top-Down cannot run here, when the hardware PMU is missing.
fn no_pmu_message() -> String {
    format!(
        "--topdown needs a hardware PMU, and this machine has none usable ({}: the generic \
         `instructions` event does not open) — typical of VMs without a virtual PMU. Run it on \
         bare metal or a VM that exposes the PMU; software counters still work here, e.g. \
         `culprit stat -e task-clock,page-faults,context-switches -- CMD`",
        if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
            "the cpu PMU exists but refuses events"
        } else {
            "no /sys/bus/event_source/devices/cpu"
        }
    )
}

fn spec_of(e: &topdown::EventDef) -> EventSpec {
    EventSpec::new(e.name.clone(), Some("cpu"), e.attr_type, e.config)
}

/// The `topdown` JSON object.
fn json_topdown<'a>(
    plan: &'a Plan,
    counters: usize,
    mode: &'a str,
    td: &'a Topdown,
) -> JsonTopdown<'a> {
    let model = plan.model;
    JsonTopdown {
        model: model.name(),
        level: plan.level,
        slots_per_cycle: model.width(),
        usable_counters: counters,
        thresholds: model.thresholds_label(),
        mode,
        groups: plan
            .groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|e| JsonGroupEvent {
                        name: &e.name,
                        attr_type: e.attr_type,
                        config: format!("{:#x}", e.config),
                    })
                    .collect()
            })
            .collect(),
        level1: td.level1,
        tree: &td.tree,
        bottleneck: td.bottleneck.as_deref(),
    }
}

fn run_topdown(
    args: &StatArgs,
    target: CountTarget,
    format: StatFormat,
    sep: &str,
) -> anyhow::Result<ExitCode> {
    if args.no_multiplex
        && !matches!(
            target,
            CountTarget::Command(_) | CountTarget::System(Some(_))
        )
    {
        bail!("--no-multiplex reruns the command once per counter group: give a command (it cannot re-run -p targets)");
    }
    if !probe::hardware_pmu_available() {
        bail!("{}", no_pmu_message());
    }
    let sink = Sink::new(args, format)?;
    let cpu = sysfs::cpu_identity()
        .context("--topdown: cannot identify the CPU from /proc/cpuinfo (vendor, family, model)")?;
    let pmu_events = std::path::Path::new("/sys/bus/event_source/devices/cpu/events");
    let model = topdown::model_for(
        &cpu.vendor,
        cpu.family,
        cpu.model,
        pmu_events.join("topdown-fe-bound").exists(),
        pmu_events.join("topdown-heavy-ops").exists(),
    )?;
    // How many general-purpose counters really count (6 on Zen, but 5 on our VMs).
    let counters = probe::usable_counters(8).usable;
    let plan = topdown::plan(model, args.level, counters)?;
    let groups: Vec<Vec<EventSpec>> = plan
        .groups
        .iter()
        .map(|g| g.iter().map(spec_of).collect())
        .collect();
    let mode = if args.no_multiplex {
        "no_multiplex"
    } else if plan.fits_at_once() {
        "at_once"
    } else {
        "multiplexed"
    };
    // sums[g][e] over all runs (ratios of sums = ratios over the whole measured time).
    let mut sums: Vec<Vec<Reading>> = groups
        .iter()
        .map(|g| vec![Reading::default(); g.len()])
        .collect();
    let mut elapsed = Vec::new();
    let mut exit = None;
    let mut interrupted = false;
    let mut warn = |w: String| eprintln!("culprit: warning: {w}");
    'runs: for _ in 0..args.repeat {
        // One run for all groups, or (--no-multiplex) one run per group.
        let sets: Vec<Vec<usize>> = if args.no_multiplex {
            (0..groups.len()).map(|g| vec![g]).collect()
        } else {
            vec![(0..groups.len()).collect()]
        };
        for set in sets {
            let opts = CountOptions {
                groups: set.iter().map(|&g| groups[g].clone()).collect(),
                target: target.clone(),
                interval: None,
            };
            let res = count::count(&opts, &mut |_| {}, &mut warn)?;
            for (k, &g) in set.iter().enumerate() {
                for (e, r) in res.groups[k].iter().enumerate() {
                    let s = &mut sums[g][e];
                    s.value += r.value;
                    s.enabled_ns += r.enabled_ns;
                    s.running_ns += r.running_ns;
                }
            }
            elapsed.push(res.elapsed.as_nanos() as f64);
            exit = res.exit;
            if res.interrupted {
                interrupted = true;
                break 'runs;
            }
        }
    }
    let counts: Vec<Vec<Count>> = sums
        .iter()
        .map(|g| g.iter().map(to_count).collect())
        .collect();
    let td = topdown::compute(&plan, &counts);
    let events = aggregate(&groups, std::slice::from_ref(&sums));
    let elapsed_ns = mean(&elapsed).round() as u64;
    let ms = metrics_of(&events, 0);
    match format {
        StatFormat::Json => {
            let (code, signal) = split_exit(exit);
            let out = JsonOut {
                cpu: Some(cpu.clone()),
                target: describe_target(&target),
                runs: args.repeat,
                elapsed_ns,
                elapsed_stddev_ns: stddev(&elapsed),
                exit_code: code,
                signal,
                interrupted,
                user_only: false,
                events: &events,
                metrics: metrics_json(&ms),
                intervals: None,
                topdown: Some(json_topdown(&plan, counters, mode, &td)),
            };
            let mut w = sink.lock();
            serde_json::to_writer_pretty(&mut w, &out)?;
            writeln!(w)?;
        }
        StatFormat::Csv => {
            let mut w = sink.lock();
            for e in &events {
                writeln!(w, "{}", csv_line(sep, e, None))?;
            }
            fn walk(
                w: &mut dyn Write,
                sep: &str,
                nodes: &[Node],
                path: &str,
            ) -> std::io::Result<()> {
                for n in nodes {
                    let name = if path.is_empty() {
                        n.name.clone()
                    } else {
                        format!("{path}.{}", n.name)
                    };
                    writeln!(
                        w,
                        "{:.4}{sep}slots{sep}topdown.{name}{sep}{:.2}{sep}{}{sep}{}",
                        n.value,
                        n.reliability,
                        u8::from(n.flagged),
                        u8::from(n.critical)
                    )?;
                    walk(w, sep, &n.children, &name)?;
                }
                Ok(())
            }
            walk(&mut w, sep, &td.tree, "")?;
        }
        StatFormat::Text => {
            let mut w = sink.lock();
            let color = sink.is_terminal();
            print_topdown(&mut w, &target, &plan, model, counters, mode, &td, color)?;
        }
    }
    Ok(exit_code(exit))
}

#[allow(clippy::too_many_arguments)]
fn print_topdown(
    w: &mut dyn Write,
    target: &CountTarget,
    plan: &Plan,
    model: Model,
    counters: usize,
    mode: &str,
    td: &Topdown,
    color: bool,
) -> std::io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        " Top-Down level {} for {}: {}, {} slots per cycle, {counters} usable counters",
        plan.level,
        describe_target(target),
        model.name(),
        model.width()
    )?;
    let how = match mode {
        "no_multiplex" => format!(
            "--no-multiplex: the command ran once per group ({} runs per repeat), no multiplexing",
            plan.groups.len()
        ),
        "at_once" => format!("{} group(s) counted at once, no multiplexing", plan.groups.len()),
        _ => format!(
            "{} groups multiplexed in one run (each ratio inside one group; use --no-multiplex for exact counts)",
            plan.groups.len()
        ),
    };
    writeln!(w, " {how}")?;
    writeln!(w, " flags use {}", model.thresholds_label())?;
    writeln!(w)?;
    writeln!(
        w,
        "   {:<34} {:>8}  {:>11}",
        "metric", "% slots", "reliability"
    )?;
    fn rows(w: &mut dyn Write, nodes: &[Node], depth: usize, color: bool) -> std::io::Result<()> {
        for n in nodes {
            let mark = if n.flagged { "*" } else { " " };
            let name = format!("{}{}", "  ".repeat(depth), n.name);
            let mut notes = Vec::new();
            if n.flagged {
                notes.push("FLAGGED".to_string());
            }
            if n.critical && !n.children.iter().any(|c| c.critical) {
                notes.push("<== critical bottleneck".to_string());
            }
            if n.mismeasured {
                notes.push("mismeasured".to_string());
            }
            if n.unreliable {
                notes.push("unreliable".to_string());
            }
            let line = format!(
                " {mark} {name:<34} {:>7.1}%  {:>11.2}  {}",
                n.value * 100.0,
                n.reliability,
                notes.join(" ")
            );
            let line = line.trim_end();
            if color && n.flagged {
                writeln!(w, "\x1b[1;31m{line}\x1b[0m")?;
            } else {
                writeln!(w, "{line}")?;
            }
            rows(w, &n.children, depth + 1, color)?;
        }
        Ok(())
    }
    rows(w, &td.tree, 0, color)?;
    writeln!(w)?;
    match &td.bottleneck {
        Some(b) => writeln!(w, " critical bottleneck: {b}")?,
        None => writeln!(w, " nothing is over its threshold")?,
    }
    fn hints(w: &mut dyn Write, nodes: &[Node]) -> std::io::Result<()> {
        for n in nodes {
            if let Some(h) = &n.hint {
                writeln!(w, "   {}: {h}", n.name)?;
            }
            hints(w, &n.children)?;
        }
        Ok(())
    }
    if td.tree.iter().any(|n| n.flagged) {
        writeln!(w, " hints:")?;
        hints(w, &td.tree)?;
    }
    if td.tree.iter().any(|n| n.unreliable) {
        writeln!(
            w,
            " note: reliability < {} means the counters ran for too little of the run (multiplexing); rerun with --no-multiplex",
            topdown::UNRELIABLE_BELOW
        )?;
    }
    writeln!(w)
}

// ---------------------------------------------------------------------------------------
// Per-function Top-Down: `culprit record --topdown` and `culprit report --topdown` call these.

/// The level-1 events `culprit record --topdown` samples on this machine (each its own
/// sampling event; the periods recorded with every sample estimate the counts per function).
pub fn topdown_sampling_specs() -> anyhow::Result<Vec<EventSpec>> {
    if !probe::hardware_pmu_available() {
        bail!(
            "{}",
            no_pmu_message().replace("--topdown", "record --topdown")
        );
    }
    let cpu = sysfs::cpu_identity()
        .context("--topdown: cannot identify the CPU from /proc/cpuinfo (vendor, family, model)")?;
    let pmu_events = std::path::Path::new("/sys/bus/event_source/devices/cpu/events");
    let model = topdown::model_for(
        &cpu.vendor,
        cpu.family,
        cpu.model,
        pmu_events.join("topdown-fe-bound").exists(),
        pmu_events.join("topdown-heavy-ops").exists(),
    )?;
    Ok(topdown::sampling_events(model)?
        .iter()
        .map(spec_of)
        .collect())
}

#[derive(Serialize)]
struct JsonSampledRow {
    keys: serde_json::Map<String, serde_json::Value>,
    level1: topdown::Level1,
    /// Samples of the level-1 events in the row.
    samples: u64,
    /// Samples of its least-sampled level-1 event.
    min_samples: u64,
}

#[derive(Serialize)]
struct JsonSampledTopdown<'a> {
    model: &'a str,
    estimate: bool,
    note: &'a str,
    rows: Vec<JsonSampledRow>,
}

const SAMPLED_NOTE: &str = "estimate from sampled slot counts: each sample stands for its \
    period of events at its IP; rows with few samples (min_samples) are noisy and may not sum to 1";

/// `culprit report --topdown`: each row's level-1 breakdown from the sampled periods of a
/// `culprit record --topdown` file.
pub fn write_report_topdown(
    out: &mut dyn Write,
    profile: &culprit_decode::model::Profile,
    report: &culprit_analysis::Hotspots,
    json: bool,
) -> anyhow::Result<()> {
    let (vendor, family, model_nr) = profile
        .meta
        .cpuid
        .as_deref()
        .and_then(topdown::parse_cpuid)
        .context("--topdown: the file has no x86 CPUID header (HEADER_CPUID), so its CPU model is unknown")?;
    let model = topdown::model_for(&vendor, family, model_nr, false, false)?;
    // Which report column is which level-1 event.
    let columns: Vec<Option<topdown::Ev>> = report
        .events
        .iter()
        .map(|e| {
            profile
                .events
                .get(usize::from(e.id))
                .and_then(|i| topdown::sampled_event(model, i.attr_type, i.config))
        })
        .collect();
    let wanted = topdown::sampling_events(model)?;
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|w| !columns.contains(&Some(w.key)))
        .map(|w| w.name.as_str())
        .collect();
    if !missing.is_empty() {
        bail!(
            "--topdown: the file lacks the level-1 events {} (record it with `culprit record --topdown -- CMD`)",
            missing.join(", ")
        );
    }
    let rows: Vec<(String, JsonSampledRow)> = report
        .rows()
        .filter_map(|row| {
            let periods: Vec<(topdown::Ev, u64, u64)> = columns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some(((*c)?, row.period(i), row.samples(i))))
                .collect();
            let est = topdown::level1_from_samples(model, &periods)?;
            let label = row
                .keys()
                .map(|k| row.text(&k))
                .collect::<Vec<_>>()
                .join("  ");
            let keys = row
                .keys()
                .map(|k| {
                    (
                        k.key.name().to_string(),
                        serde_json::Value::from(row.text(&k)),
                    )
                })
                .collect();
            Some((
                label,
                JsonSampledRow {
                    keys,
                    level1: est.level1,
                    samples: est.samples,
                    min_samples: est.min_samples,
                },
            ))
        })
        .collect();
    if json {
        let j = JsonSampledTopdown {
            model: model.name(),
            estimate: true,
            note: SAMPLED_NOTE,
            rows: rows.into_iter().map(|(_, r)| r).collect(),
        };
        serde_json::to_writer_pretty(&mut *out, &serde_json::json!({ "topdown": j }))?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "# Per-function Top-Down level 1 ({}), % of slots",
        model.name()
    )?;
    writeln!(out, "# {SAMPLED_NOTE}")?;
    writeln!(out, "#")?;
    writeln!(
        out,
        "# {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7}  row",
        "frontend", "bad_spec", "backend", "retiring", "smt", "samples", "min"
    )?;
    for (label, r) in rows {
        let l = r.level1;
        writeln!(
            out,
            "  {:>7.1}% {:>7.1}% {:>7.1}% {:>7.1}% {:>7.1}% {:>9} {:>7}  {label}",
            l.frontend_bound * 100.0,
            l.bad_speculation * 100.0,
            l.backend_bound * 100.0,
            l.retiring * 100.0,
            l.smt_contention * 100.0,
            r.samples,
            r.min_samples
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Zen 5 level-2 plan on 5 counters with pointer-chase-like counts, multiplexed.
    fn chase_topdown() -> (Plan, Topdown) {
        let plan = topdown::plan(Model::Zen5, 2, 5).unwrap();
        let rate = |k: topdown::Ev| -> f64 {
            use topdown::Ev::*;
            match k {
                Cycles => 1.0,
                AmdFeNoOps => 0.32,
                AmdFeNoOpsCmask => 0.024,
                AmdBackendStalls => 6.88,
                AmdSmtContention => 0.16,
                AmdRetOps => 0.40,
                AmdOpsDispatched => 0.64,
                AmdBrMisp => 0.001,
                AmdRestarts => 0.0002,
                AmdNotComplete => 0.9,
                AmdLoadNotComplete => 0.837,
                AmdUcodeOps => 0.004,
                _ => 0.0,
            }
        };
        let n = plan.groups.len() as f64;
        let counts: Vec<Vec<Count>> = plan
            .groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|e| Count {
                        value: (rate(e.key) * 3e9 / n) as u64,
                        enabled_ns: 1_000_000_000,
                        running_ns: (1e9 / n) as u64,
                    })
                    .collect()
            })
            .collect();
        let td = topdown::compute(&plan, &counts);
        (plan, td)
    }

    #[test]
    fn test_print_topdown_tree_flags_bottleneck_hints() {
        let (plan, td) = chase_topdown();
        let mut out = Vec::new();
        let target = CountTarget::Command(vec!["./pointer_chase".into()]);
        print_topdown(
            &mut out,
            &target,
            &plan,
            Model::Zen5,
            5,
            "multiplexed",
            &td,
            false,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Top-Down level 2 for './pointer_chase': AMD Zen 5, 8 slots per cycle, 5 usable counters"), "{text}");
        assert!(text.contains("groups multiplexed in one run"), "{text}");
        assert!(
            text.contains("Intel TMA thresholds (AMD publishes none)"),
            "{text}"
        );
        assert!(text.contains("% slots"), "{text}");
        let line = |name: &str| {
            text.lines()
                .find(|l| l.split_whitespace().any(|w| w == name))
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        let be = line("backend_bound");
        assert!(
            be.starts_with(" * ") && be.contains("86.0%") && be.contains("FLAGGED"),
            "{be}"
        );
        let mem = line("memory");
        assert!(
            mem.contains("<== critical bottleneck") && mem.contains("unreliable"),
            "{mem}"
        );
        assert!(!line("cpu").contains("FLAGGED"));
        assert!(text.contains("critical bottleneck: memory"), "{text}");
        assert!(
            text.contains("memory: loads wait for cache/DRAM misses"),
            "{text}"
        );
        assert!(
            text.contains("culprit record -e ls_any_fills_from_sys.all -- CMD"),
            "{text}"
        );
        assert!(text.contains("rerun with --no-multiplex"), "{text}");
    }

    #[test]
    fn test_json_topdown_has_the_issue_schema() {
        let (plan, td) = chase_topdown();
        let v = serde_json::to_value(json_topdown(&plan, 5, "multiplexed", &td)).unwrap();
        for k in [
            "frontend_bound",
            "bad_speculation",
            "backend_bound",
            "retiring",
            "smt_contention",
        ] {
            let f = v["level1"][k].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&f), "{k} {f}");
        }
        assert_eq!(v["bottleneck"], "memory");
        let be = v["tree"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "backend_bound")
            .unwrap();
        for k in ["name", "value", "flagged", "reliability", "children"] {
            assert!(be.get(k).is_some(), "{k} in {be}");
        }
        assert_eq!(be["children"][0]["name"], "memory");
        assert_eq!(v["groups"][0][0]["name"], "ls_not_halted_cyc");
        assert_eq!(v["groups"][0][0]["config"], "0x76");
        assert_eq!(v["slots_per_cycle"], 8);
    }

    #[test]
    fn test_group_digits() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(1234567), "1,234,567");
    }

    #[test]
    fn test_stddev_and_mean() {
        assert_eq!(stddev(&[1.0]), None);
        let sd = stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((sd - 2.138089935).abs() < 1e-6);
        assert_eq!(mean(&[1.0, 3.0]), 2.0);
    }

    #[test]
    fn test_parse_groups_braces_and_singletons() {
        let g = parse_groups("task-clock,{page-faults,context-switches},cpu-migrations").unwrap();
        let names: Vec<Vec<&str>> = g
            .iter()
            .map(|g| g.iter().map(|e| e.name.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["task-clock"],
                vec!["page-faults", "context-switches"],
                vec!["cpu-migrations"]
            ]
        );
        assert!(parse_groups("{task-clock").is_err());
        assert!(parse_groups("{task-clock}:u").is_err());
        assert!(parse_groups("no-such-event-xyz").is_err());
    }
}
