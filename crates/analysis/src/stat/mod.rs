//! `culprit stat`'s report model from raw counts: the rows of the requested events
//! (aggregated over the runs: mean and standard deviation, uncore instances merged, scale
//! units applied), `<not supported>` rows, the derived metrics and the `-I` intervals.
//! `collect::stat` counts; this module computes; the CLI renders (JSON schema:
//! docs/schemas/stat.schema.json). `--topdown` is [`topdown`].

pub mod metrics_render;
pub mod render;
pub mod topdown;
pub mod topdown_render;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::{self, Counted, Metric};
pub use crate::topdown::Count;

/// What the model needs to know of one requested event (from its event spec).
#[derive(Debug, Clone, PartialEq)]
pub struct EventInfo {
    /// The event's name as given.
    pub name: String,
    /// The factor from count to `unit` (1 without a unit).
    pub scale: f64,
    /// The unit of the scaled count (`Joules`, `MiB`), when the event has one.
    pub unit: Option<String>,
    /// An uncore event (counted on one CPU of its PMU): instances of one name merge.
    pub uncore: bool,
}

/// One run's (or one interval's) readings in the requested shape: `[group][event]`,
/// `None` for an event this machine does not count.
pub type RunCounts = Vec<Vec<Option<Count>>>;

/// The CPU as the report names it (from /proc/cpuinfo).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuInfo {
    /// `vendor_id`.
    pub vendor: String,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `model name`.
    pub model_name: String,
    /// Whether the `hypervisor` flag is set.
    pub hypervisor: bool,
}

/// How the counting went, apart from the counts.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// The target as perf names it (`'./prog arg'`, `'system wide'`, …).
    pub target: String,
    /// Each run's wall time in ns.
    pub elapsed_runs: Vec<f64>,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// The signal that killed the command.
    pub signal: Option<i32>,
    /// Whether Ctrl-C ended counting.
    pub interrupted: bool,
    /// Whether only user space was counted (perf_event_paranoid).
    pub user_only: bool,
    /// The CPU.
    pub cpu: Option<CpuInfo>,
}

/// One `-I` interval's raw counts.
#[derive(Debug, Clone)]
pub struct IntervalCounts {
    /// Seconds since counting started, at the end of the interval.
    pub time_s: f64,
    /// The interval's readings.
    pub counts: RunCounts,
}

/// What `collect::stat` counted, as plain input.
#[derive(Debug, Clone)]
pub struct RawStat {
    /// The requested groups.
    pub events: Vec<Vec<EventInfo>>,
    /// Per run, the readings.
    pub runs: Vec<RunCounts>,
    /// `-I`: the intervals (of every run).
    pub intervals: Option<Vec<IntervalCounts>>,
    /// How the runs went.
    pub facts: RunFacts,
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
    /// The index of the row's first event among all requested events (groups flattened):
    /// what to ask why it does not count (instances of an uncore event share one row).
    #[serde(skip)]
    pub first_spec: usize,
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

/// The count extrapolated to the whole enabled time (perf stat's scaling): `None` when
/// the event never ran ("not counted").
fn scaled(c: &Count) -> Option<f64> {
    if c.running_ns == 0 {
        return if c.enabled_ns == 0 && c.value == 0 {
            // Never enabled at all (e.g. the command exited at once): nothing to scale.
            Some(0.0)
        } else {
            None
        };
    }
    if c.running_ns >= c.enabled_ns {
        return Some(c.value as f64);
    }
    Some(c.value as f64 * c.enabled_ns as f64 / c.running_ns as f64)
}

/// Aggregates per-run readings of `groups` into event rows.
pub fn aggregate(groups: &[Vec<EventInfo>], runs: &[RunCounts]) -> Vec<StatEvent> {
    let mut out: Vec<StatEvent> = Vec::new();
    let mut flat_index = 0;
    for (gi, g) in groups.iter().enumerate() {
        for (ei, info) in g.iter().enumerate() {
            let spec_index = flat_index;
            flat_index += 1;
            let cell = |r: &RunCounts| r.get(gi).and_then(|g| g.get(ei)).copied();
            let supported = runs.iter().all(|r| cell(r).is_some_and(|c| c.is_some()));
            let rs: Vec<Count> = runs.iter().filter_map(|r| cell(r).flatten()).collect();
            let scaled_runs: Vec<f64> = rs
                .iter()
                .filter_map(scaled)
                .map(|v| v * info.scale)
                .collect();
            let m = |f: fn(&Count) -> u64| {
                mean(&rs.iter().map(|r| f(r) as f64).collect::<Vec<_>>()).round() as u64
            };
            let enabled = m(|r| r.enabled_ns);
            let running = m(|r| r.running_ns);
            let row = StatEvent {
                name: info.name.clone(),
                value: m(|r| r.value),
                scaled: (supported && !scaled_runs.is_empty()).then(|| mean(&scaled_runs)),
                enabled_ns: enabled,
                running_ns: running,
                running_pct: running_pct(enabled, running),
                group: gi,
                stddev: if supported {
                    stddev(&scaled_runs)
                } else {
                    None
                },
                supported,
                why: None,
                unit: info.unit.clone(),
                instances: 0,
                first_spec: spec_index,
            };
            // The instances of one uncore event (`unc_m_cas_count.rd` on each
            // `uncore_imc_N`) are one row, their sum, as perf merges them.
            let merged = info.uncore
                && out
                    .iter_mut()
                    .find(|r| r.name == row.name && r.instances > 0)
                    .map(|first| first.merge(&row))
                    .is_some();
            if !merged {
                out.push(StatEvent {
                    instances: usize::from(info.uncore),
                    ..row
                });
            }
        }
    }
    out
}

fn running_pct(enabled: u64, running: u64) -> f64 {
    if enabled == 0 {
        100.0
    } else {
        (running as f64 / enabled as f64 * 100.0).min(100.0)
    }
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
        self.running_pct = running_pct(self.enabled_ns, self.running_ns);
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

/// One interval's rows.
pub fn interval(groups: &[Vec<EventInfo>], raw: &IntervalCounts) -> StatInterval {
    StatInterval {
        time_s: raw.time_s,
        events: aggregate(groups, std::slice::from_ref(&raw.counts)),
    }
}

/// What `culprit stat` measured (JSON: docs/schemas/stat.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct StatReport {
    /// Schema version of this JSON object.
    pub schema: u32,
    /// The CPU, from /proc/cpuinfo.
    pub cpu: Option<CpuInfo>,
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
}

impl StatReport {
    /// A report of `events` (metrics over `metrics_elapsed` ns, else the mean run time).
    pub fn new(events: Vec<StatEvent>, facts: RunFacts, metrics_elapsed: Option<u64>) -> Self {
        let elapsed_ns = mean(&facts.elapsed_runs).round() as u64;
        let metric_list = metrics_of(&events, metrics_elapsed.unwrap_or(elapsed_ns));
        StatReport {
            schema: 1,
            cpu: facts.cpu,
            target: facts.target,
            runs: facts.elapsed_runs.len() as u32,
            elapsed_ns,
            elapsed_stddev_ns: stddev(&facts.elapsed_runs),
            exit_code: facts.exit_code,
            signal: facts.signal,
            interrupted: facts.interrupted,
            user_only: facts.user_only,
            events,
            metrics: metric_list
                .iter()
                .map(|m| {
                    let out = MetricOut {
                        value: m.value,
                        unit: m.unit.clone(),
                        reliability: m.reliability,
                        unreliable: m.unreliable,
                        inputs: m.inputs.clone(),
                    };
                    (m.name.clone(), out)
                })
                .collect(),
            intervals: None,
            topdown: None,
            metric_list,
            elapsed_runs: facts.elapsed_runs,
        }
    }

    /// The shell-style exit status of the launched command (128 + signal when killed; 0
    /// without a command).
    pub fn exit_status(&self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => 0,
        }
    }
}

/// The report of `raw`: rows aggregated over the runs, each unsupported row with `why_of`
/// its first event (by its index among all requested events), the metrics, the intervals.
pub fn report(raw: RawStat, why_of: &mut dyn FnMut(usize) -> Option<String>) -> StatReport {
    let mut events = aggregate(&raw.events, &raw.runs);
    for e in events.iter_mut().filter(|e| !e.supported) {
        e.why = why_of(e.first_spec);
    }
    let mut report = StatReport::new(events, raw.facts, None);
    report.intervals = raw
        .intervals
        .map(|ivs| ivs.iter().map(|iv| interval(&raw.events, iv)).collect());
    report
}

#[cfg(test)]
mod tests;
