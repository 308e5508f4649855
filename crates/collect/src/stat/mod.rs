//! `culprit stat`: the event groups to count (`{a,b}` groups, the default set), repeated
//! counting runs on a target, their aggregation (mean and standard deviation over the runs),
//! derived metrics, events the machine does not support (`<not supported>`, as perf), and
//! the report model (JSON schema: docs/schemas/stat.schema.json; its text and CSV layouts are
//! rendered by the CLI).
//! `--topdown` is [`topdown`].

pub mod facts;
pub mod topdown;

use std::collections::BTreeMap;
use std::time::Duration;

use culprit_analysis::metrics::{self, Counted, Metric};
use culprit_analysis::topdown::Count;
use serde::Serialize;

use crate::count::{self, CountOptions, Interval, Reading};
use crate::error::RecordError;
use crate::events::{self, EventError, EventSpec};
use crate::launch::ChildExit;
use crate::probe;
use crate::sysfs::{self, CpuIdentity};
use crate::target::Target;

/// Why `culprit stat` cannot count.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatError {
    /// Counting failed (event, target, permissions).
    #[error(transparent)]
    Count(#[from] RecordError),
    /// An event list does not parse.
    #[error(transparent)]
    Event(#[from] EventError),
    /// Top-Down cannot be done here.
    #[error(transparent)]
    Topdown(#[from] culprit_analysis::topdown::TopdownError),
    /// The options do not go together, or the machine lacks what they need.
    #[error("{0}")]
    Invalid(String),
}

/// Splits `-e` text into groups: `{a,b}` is one group, every other event its own group
/// (perf stat's default).
pub fn parse_groups(list: &str) -> Result<Vec<Vec<EventSpec>>, StatError> {
    let invalid = |why: String| StatError::Invalid(format!("-e `{list}`: {why}"));
    let mut groups = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('{') {
            let end = after
                .find('}')
                .ok_or_else(|| invalid("`{` without a closing `}`".into()))?;
            let specs = events::parse_event_list(&after[..end])?;
            if specs.is_empty() {
                return Err(invalid("empty group `{}`".into()));
            }
            groups.push(specs);
            rest = &after[end + 1..];
            if rest.starts_with(':') {
                return Err(invalid(
                    "modifiers after a group (`}:u`) are not supported; put them on each event"
                        .into(),
                ));
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

/// perf stat's default events: the software ones and the hardware ones (shown as
/// `<not supported>` on a machine without a hardware PMU, as perf does).
pub const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,\
    cycles,instructions,branches,branch-misses";

/// The groups of `-e` lists (all of them, in order), or the default set when none is given.
pub fn groups_of(lists: &[String]) -> Result<Vec<Vec<EventSpec>>, StatError> {
    let mut groups = Vec::new();
    for list in lists {
        groups.extend(parse_groups(list)?);
    }
    if groups.is_empty() {
        groups = parse_groups(DEFAULT_EVENTS)?;
    }
    Ok(groups)
}

/// One event's result, aggregated over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct StatEvent {
    /// The event's name as given.
    pub name: String,
    /// Raw count (mean over runs, rounded).
    pub value: u64,
    /// Scaled count (mean); null when it never ran or is not supported.
    pub scaled: Option<f64>,
    /// Nanoseconds enabled (mean).
    pub enabled_ns: u64,
    /// Nanoseconds on a counter (mean).
    pub running_ns: u64,
    /// running / enabled × 100.
    pub running_pct: f64,
    /// Group index (events of one group share a time window).
    pub group: usize,
    /// Sample standard deviation of the scaled count over the runs (null for one run).
    pub stddev: Option<f64>,
    /// False when this machine cannot count the event (perf's `<not supported>`: e.g.
    /// cycles without a hardware PMU); its numbers are then 0 and null.
    pub supported: bool,
    /// Why an unsupported event does not count here (the kernel's answer, in words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The unit of `scaled` when the event has one (`Joules` for RAPL, `MiB`, `Bytes`):
    /// `scaled` is then the count × the event's scale, as perf prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// How many uncore PMU instances the row sums (0: not an uncore event).
    #[serde(skip_serializing_if = "is_zero")]
    pub instances: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The mean (0 for no values).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The sample standard deviation (None below two values).
pub fn stddev(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v);
    Some((v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
}

/// Aggregates per-run readings (`runs[r][g][e]`, `None` for an event that is not
/// supported) of `groups` into event rows.
pub fn aggregate(groups: &[Vec<EventSpec>], runs: &[Vec<Vec<Option<Reading>>>]) -> Vec<StatEvent> {
    let mut out: Vec<StatEvent> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for (ei, spec) in g.iter().enumerate() {
            let cell = |r: &Vec<Vec<Option<Reading>>>| r.get(gi).and_then(|g| g.get(ei)).copied();
            let supported = runs.iter().all(|r| cell(r).is_some_and(|c| c.is_some()));
            let rs: Vec<Reading> = runs.iter().filter_map(|r| cell(r).flatten()).collect();
            let scaled: Vec<f64> = rs.iter().filter_map(Reading::scaled).collect();
            let m = |f: fn(&Reading) -> u64| {
                mean(&rs.iter().map(|r| f(r) as f64).collect::<Vec<_>>()).round() as u64
            };
            let enabled = m(|r| r.enabled_ns);
            let running = m(|r| r.running_ns);
            let unit_scale = spec.scale();
            let scaled: Vec<f64> = scaled.iter().map(|v| v * unit_scale).collect();
            let row = StatEvent {
                name: spec.name.clone(),
                value: m(|r| r.value),
                scaled: (supported && !scaled.is_empty()).then(|| mean(&scaled)),
                enabled_ns: enabled,
                running_ns: running,
                running_pct: if enabled == 0 {
                    100.0
                } else {
                    (running as f64 / enabled as f64 * 100.0).min(100.0)
                },
                group: gi,
                stddev: if supported { stddev(&scaled) } else { None },
                supported,
                why: None,
                unit: spec.scale_unit.as_ref().map(|(_, unit)| unit.clone()),
                instances: 0,
            };
            // The instances of one uncore event (`unc_m_cas_count.rd` on each
            // `uncore_imc_N`) are one row, their sum, as perf merges them.
            let merged = spec.cpumask.is_some()
                && out
                    .iter_mut()
                    .find(|r| r.name == row.name && r.instances > 0)
                    .map(|first| first.merge(&row))
                    .is_some();
            if !merged {
                out.push(StatEvent {
                    instances: usize::from(spec.cpumask.is_some()),
                    ..row
                });
            }
        }
    }
    out
}

impl StatEvent {
    /// Adds another uncore instance's counts to this row (perf's alias merging): counts and
    /// times are summed, the row is supported only if both are.
    fn merge(&mut self, other: &StatEvent) {
        self.value += other.value;
        self.scaled = match (self.scaled, other.scaled) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.enabled_ns += other.enabled_ns;
        self.running_ns += other.running_ns;
        self.running_pct = if self.enabled_ns == 0 {
            100.0
        } else {
            (self.running_ns as f64 / self.enabled_ns as f64 * 100.0).min(100.0)
        };
        self.stddev = None;
        self.supported &= other.supported;
        self.instances += 1;
    }
}

/// The derived metrics (IPC, GHz, miss ratios, …) of the supported events.
pub fn metrics_of(events: &[StatEvent], elapsed_ns: u64) -> Vec<Metric> {
    let counted: Vec<Counted> = events
        .iter()
        .filter(|e| e.supported)
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

/// A derived metric in the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct MetricOut {
    /// The value.
    pub value: f64,
    /// What it is (`insn per cycle`, …).
    pub unit: String,
    /// 0..=1: the share of the run that backs it.
    pub reliability: f64,
    /// reliability < 0.7.
    pub unreliable: bool,
    /// The events it was computed from.
    pub inputs: Vec<String>,
}

/// The counts of one `-I` interval.
#[derive(Debug, Clone, Serialize)]
pub struct StatInterval {
    /// Seconds since counting started, at the end of the interval.
    pub time_s: f64,
    /// The interval's counts.
    pub events: Vec<StatEvent>,
}

/// What `culprit stat` measured (JSON: docs/schemas/stat.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct StatReport {
    /// Schema version of this JSON object.
    pub schema: u32,
    /// The CPU, from /proc/cpuinfo.
    pub cpu: Option<CpuIdentity>,
    /// The target as perf names it (`'./prog arg'`, `'system wide'`, …).
    pub target: String,
    /// Runs done.
    pub runs: u32,
    /// Mean wall time of a run.
    pub elapsed_ns: u64,
    /// Standard deviation of the wall time over the runs.
    pub elapsed_stddev_ns: Option<f64>,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// The signal that killed the command.
    pub signal: Option<i32>,
    /// Whether Ctrl-C ended counting.
    pub interrupted: bool,
    /// Whether only user space was counted (perf_event_paranoid).
    pub user_only: bool,
    /// Per event.
    pub events: Vec<StatEvent>,
    /// Derived metrics by name.
    pub metrics: BTreeMap<String, MetricOut>,
    /// `-I`: the intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<StatInterval>>,
    /// `--topdown`: the Top-Down tree.
    pub topdown: Option<topdown::TopdownOut>,
    /// The metrics with their order (text output shows them beside their events).
    #[serde(skip)]
    pub metric_list: Vec<Metric>,
    /// Each run's wall time in ns.
    #[serde(skip)]
    pub elapsed_runs: Vec<f64>,
    /// How the launched command ended.
    #[serde(skip)]
    pub exit: Option<ChildExit>,
}

impl StatReport {
    /// A report of `events` over runs of `elapsed_runs` ns.
    #[allow(clippy::too_many_arguments)]
    fn new(
        target: &Target,
        events: Vec<StatEvent>,
        elapsed_runs: Vec<f64>,
        metrics_elapsed: Option<u64>,
        exit: Option<ChildExit>,
        interrupted: bool,
        user_only: bool,
        cpu: Option<CpuIdentity>,
    ) -> StatReport {
        let elapsed_ns = mean(&elapsed_runs).round() as u64;
        let metric_list = metrics_of(&events, metrics_elapsed.unwrap_or(elapsed_ns));
        let (exit_code, signal) = match exit {
            Some(ChildExit::Exited(c)) => (Some(c), None),
            Some(ChildExit::Signaled(s)) => (None, Some(s)),
            None => (None, None),
        };
        StatReport {
            schema: 1,
            cpu,
            target: target.describe(),
            runs: elapsed_runs.len() as u32,
            elapsed_ns,
            elapsed_stddev_ns: stddev(&elapsed_runs),
            exit_code,
            signal,
            interrupted,
            user_only,
            events,
            metrics: metric_list
                .iter()
                .map(|m| {
                    (
                        m.name.clone(),
                        MetricOut {
                            value: m.value,
                            unit: m.unit.clone(),
                            reliability: m.reliability,
                            unreliable: m.unreliable,
                            inputs: m.inputs.clone(),
                        },
                    )
                })
                .collect(),
            intervals: None,
            topdown: None,
            metric_list,
            elapsed_runs,
            exit,
        }
    }

    /// The shell-style exit status of the launched command (0 without one).
    pub fn exit_status(&self) -> i32 {
        self.exit.map_or(0, |e| e.code())
    }
}

/// Options of `culprit stat` (without `--topdown`).
#[derive(Debug, Clone)]
pub struct StatOptions {
    /// The event groups ([`groups_of`]).
    pub groups: Vec<Vec<EventSpec>>,
    /// Whom to count.
    pub target: Target,
    /// `-I`: report the counts of every interval of this length.
    pub interval: Option<Duration>,
    /// `-r`: run the command this many times.
    pub repeat: u32,
}

/// Why `spec` does not count here, in words, from the kernel's answer to opening it.
pub fn not_supported_reason(spec: &EventSpec) -> String {
    let errno = probe::try_open_event(spec).err();
    let hardware = matches!(
        spec.attr_type,
        culprit_decode::abi::perf_type::HARDWARE
            | culprit_decode::abi::perf_type::HW_CACHE
            | culprit_decode::abi::perf_type::RAW
    );
    let sysfs = crate::sysfs::Sysfs::system();
    match errno {
        Some(libc::ENOENT | libc::ENODEV) if hardware && !crate::events::has_core_pmu(&sysfs) => {
            "this machine has no hardware PMU (no core PMU under \
             /sys/bus/event_source/devices: a VM without a virtual PMU); software events \
             (task-clock, cpu-clock, page-faults, context-switches) count"
                .to_string()
        }
        Some(libc::ENOENT) => "the kernel has no such event on this CPU (ENOENT)".to_string(),
        Some(libc::ENODEV) => "no PMU here counts it (ENODEV)".to_string(),
        Some(libc::EOPNOTSUPP) => {
            "the PMU cannot count it as asked (EOPNOTSUPP: a modifier or setting it lacks)"
                .to_string()
        }
        Some(e) => format!(
            "opening it failed: {}",
            std::io::Error::from_raw_os_error(e)
        ),
        None => "it did not count during the run".to_string(),
    }
}

/// Whether `spec` opens here, or (`false`) this machine does not have it (ENOENT, ENODEV,
/// EOPNOTSUPP: perf's `<not supported>`); other failures (permissions) are left to counting.
/// At `-vv` an unsupported event's attr is shown as perf stat shows it ([`count::display_not_opened`]).
fn supported_here(spec: &EventSpec, leader: bool, target: &Target) -> bool {
    // A precision the machine refuses: what the kernel's EOPNOTSUPP would say.
    if events::check_precise(spec).is_err() {
        count::display_not_opened(spec, leader, target, libc::EOPNOTSUPP);
        return false;
    }
    match probe::try_open_event(spec) {
        Err(errno @ (libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP)) => {
            count::display_not_opened(spec, leader, target, errno);
            false
        }
        _ => true,
    }
}

/// The groups without their unsupported events, and where each event went (`None`: not
/// supported).
type Supported = (Vec<Vec<EventSpec>>, Vec<Vec<Option<(usize, usize)>>>);

fn split_supported(groups: &[Vec<EventSpec>], target: &Target) -> Supported {
    let mut kept: Vec<Vec<EventSpec>> = Vec::new();
    let mut place = Vec::new();
    for g in groups {
        let mut members = Vec::new();
        let mut where_ = Vec::new();
        for (i, spec) in g.iter().enumerate() {
            if supported_here(spec, i == 0, target) {
                where_.push(Some((kept.len(), members.len())));
                members.push(spec.clone());
            } else {
                where_.push(None);
            }
        }
        if !members.is_empty() {
            kept.push(members);
        }
        place.push(where_);
    }
    (kept, place)
}

/// Readings in the counted shape back in the requested shape (`None`: not supported).
fn expand(
    place: &[Vec<Option<(usize, usize)>>],
    got: &[Vec<Reading>],
) -> Vec<Vec<Option<Reading>>> {
    place
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| p.and_then(|(gi, ei)| got.get(gi)?.get(ei).copied()))
                .collect()
        })
        .collect()
}

/// Counts `opts.groups` on the target, `opts.repeat` times (stopping at Ctrl-C). Events
/// this machine does not have are reported as not supported, as perf does, unless no event
/// at all can be counted (then the first one's error). `on_interval` receives each `-I`
/// interval's rows as they come; `warn` non-fatal messages.
pub fn run(
    opts: &StatOptions,
    on_interval: &mut dyn FnMut(&StatInterval),
    warn: &mut dyn FnMut(String),
) -> Result<StatReport, StatError> {
    if opts.repeat == 0 {
        return Err(StatError::Invalid(
            "-r: the number of runs must be at least 1".into(),
        ));
    }
    if opts.repeat > 1 && !matches!(opts.target, Target::Command(_)) {
        return Err(StatError::Invalid(
            "-r repeats a command: it cannot be used with -p, or -a without a command".into(),
        ));
    }
    let (kept, place) = split_supported(&opts.groups, &opts.target);
    // Nothing countable: count what was asked for, to report why it does not open.
    let (counted, place) = if kept.is_empty() {
        let identity = opts
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| (0..g.len()).map(|ei| Some((gi, ei))).collect())
            .collect();
        (opts.groups.clone(), identity)
    } else {
        (kept, place)
    };
    let copts = CountOptions {
        groups: counted,
        target: opts.target.clone(),
        interval: opts.interval,
    };
    let mut runs = Vec::new();
    let mut elapsed = Vec::new();
    let mut intervals = Vec::new();
    let mut last = None;
    for _ in 0..opts.repeat {
        let mut on_iv = |iv: &Interval| {
            let rows = aggregate(
                &opts.groups,
                std::slice::from_ref(&expand(&place, &iv.groups)),
            );
            let i = StatInterval {
                time_s: iv.elapsed.as_secs_f64(),
                events: rows,
            };
            on_interval(&i);
            intervals.push(i);
        };
        let res = count::count(&copts, &mut on_iv, warn)?;
        runs.push(expand(&place, &res.groups));
        elapsed.push(res.elapsed.as_nanos() as f64);
        let stop = res.interrupted;
        last = Some(res);
        if stop {
            break;
        }
    }
    let mut events = aggregate(&opts.groups, &runs);
    // Each event that did not count says why (probed once, after the runs). By name: the
    // instances of an uncore event are one row.
    for e in events.iter_mut().filter(|e| !e.supported) {
        if let Some(spec) = opts.groups.iter().flatten().find(|s| s.name == e.name) {
            e.why = Some(not_supported_reason(spec));
        }
    }
    let mut report = StatReport::new(
        &opts.target,
        events,
        elapsed,
        None,
        last.as_ref().and_then(|r| r.exit),
        last.as_ref().is_some_and(|r| r.interrupted),
        last.as_ref().is_some_and(|r| r.user_only),
        sysfs::cpu_identity(),
    );
    if opts.interval.is_some() {
        report.intervals = Some(intervals);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instances of an uncore event are one row, their sum (perf merges them); a scaled
    /// event's row carries count × scale and its unit (RAPL's Joules).
    #[test]
    fn test_aggregate_merges_uncore_instances_and_scales_units() {
        let uncore = |ty: u32| {
            let mut s = EventSpec::new("unc_m_cas_count.rd", Some("uncore_imc"), ty, 0x304);
            s.cpumask = Some(vec![0]);
            s
        };
        let mut rapl = EventSpec::new("power/energy-pkg/", Some("power"), 60, 2);
        rapl.cpumask = Some(vec![0]);
        rapl.scale_unit = Some(("2.3283064365386962890625e-10".into(), "Joules".into()));
        let groups = vec![
            vec![uncore(40)],
            vec![EventSpec::new("task-clock", Some("software"), 1, 1)],
            vec![uncore(41)],
            vec![rapl],
        ];
        let r = |value: u64| {
            Some(Reading {
                value,
                enabled_ns: 10,
                running_ns: 10,
            })
        };
        let run = vec![vec![r(100)], vec![r(7)], vec![r(50)], vec![r(1 << 32)]];
        let rows = aggregate(&groups, &[run]);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["unc_m_cas_count.rd", "task-clock", "power/energy-pkg/"]
        );
        assert_eq!(
            (rows[0].value, rows[0].scaled, rows[0].instances),
            (150, Some(150.0), 2)
        );
        assert_eq!((rows[0].enabled_ns, rows[0].running_pct), (20, 100.0));
        assert_eq!((rows[1].instances, rows[1].unit.as_deref()), (0, None));
        assert_eq!(rows[2].scaled, Some(1.0));
        assert_eq!(rows[2].unit.as_deref(), Some("Joules"));
        assert_eq!(rows[2].value, 1 << 32);
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

    #[test]
    fn test_aggregate_marks_unsupported_events() {
        let groups = parse_groups("task-clock,cycles").unwrap();
        let r = Reading {
            value: 10,
            enabled_ns: 5,
            running_ns: 5,
        };
        let rows = aggregate(&groups, &[vec![vec![Some(r)], vec![None]]]);
        assert!(rows[0].supported && rows[0].scaled == Some(10.0));
        assert!(!rows[1].supported && rows[1].scaled.is_none() && rows[1].value == 0);
        // Not supported events feed no metric.
        assert!(metrics_of(&rows, 1_000)
            .iter()
            .all(|m| !m.inputs.contains(&"cycles".to_string())));
    }
}
