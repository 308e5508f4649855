//! `culprit stat -M METRIC|GROUP[,…]` and `--metric-only`: the CPU's pmu-events metrics.
//! The plan (events and groups) and the values come from `culprit_analysis::metrics`;
//! counting from `culprit_collect::stat` (rows by `culprit_analysis::stat`); this module joins them and renders perf 6.1's
//! layout: each metric beside the first event of its group (`#     52.3 %  tma_retiring`),
//! `<not supported>` for events this machine cannot count (with the reason after the
//! table), and no value for a metric whose events did not all count.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use culprit_analysis::metrics::plan::{self, MetricPlan, MetricValue, PlanOptions, ToolValues};
use culprit_analysis::metrics::table::{self, MachineFacts, Metrics};
use culprit_analysis::metrics::Metric as Derived;
use culprit_analysis::stat::{StatEvent, StatReport};
use culprit_collect::events::{self, tables};
use culprit_collect::stat::{self, StatOptions};
use culprit_collect::sysfs;

use super::{exit_code, render, Sink, StatArgs};
use crate::args::Format;

/// Where each planned event went: its row in the report, or why it is not counted.
type Placement = Vec<Vec<Result<usize, String>>>;

/// `spec` when it opens here (or fails only for permissions, which counting reports); else
/// why not, so that one refused event (perf's `<not supported>`) does not stop the others.
fn opens(spec: events::EventSpec) -> Result<events::EventSpec, String> {
    match culprit_collect::support::try_open_event(&spec) {
        Ok(()) => Ok(spec),
        Err(errno) => {
            let e = std::io::Error::from_raw_os_error(errno);
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Ok(spec)
            } else {
                Err(format!(
                    "<not supported>: the kernel refuses to open it ({e})"
                ))
            }
        }
    }
}

/// The counting groups for the plan (after the user's `-e` groups), and where each planned
/// event lands among the report's rows.
fn open_plan(
    plan: &MetricPlan,
    mut groups: Vec<Vec<events::EventSpec>>,
) -> (Vec<Vec<events::EventSpec>>, Placement) {
    let mut row = groups.iter().map(Vec::len).sum::<usize>();
    let mut placement = Vec::new();
    for g in &plan.groups {
        let mut specs = Vec::new();
        let mut places = Vec::new();
        for name in g {
            match events::parse_event(name)
                .map_err(|e| e.to_string())
                .and_then(opens)
            {
                Ok(spec) => {
                    places.push(Ok(row));
                    row += 1;
                    specs.push(spec);
                }
                Err(why) => places.push(Err(why)),
            }
        }
        if !specs.is_empty() {
            groups.push(specs);
        }
        placement.push(places);
    }
    (groups, placement)
}

/// A metric's text as perf prints it in the `#` column.
fn metric_text(m: &MetricValue) -> String {
    match m.value {
        Some(v) if m.unit.is_empty() => format!("{v:8.2} {}", m.name),
        Some(v) => format!("{v:8.1} {}  {}", m.unit, m.name),
        None => String::new(),
    }
}

fn event_line(e: &StatEvent) -> String {
    // stat's CSV fields give the value text perf prints; reuse them for the text line.
    let csv = render::csv_line("\u{1}", e, None);
    let mut f = csv.split('\u{1}');
    let value = f.next().unwrap_or_default();
    let unit = f.next().unwrap_or_default();
    let value = match value.parse::<u64>() {
        Ok(n) => render::group_digits(n),
        Err(_) => value.to_string(),
    };
    format!("{value:>18} {unit:<5} {:<30}", e.name)
}

struct Outcome<'a> {
    report: &'a StatReport,
    values: Vec<MetricValue>,
    /// Per metric, the entry of its leader (the first event of its group).
    leaders: Vec<Option<usize>>,
    /// (event, why it is not counted), each once.
    not_counted: Vec<(String, String)>,
    /// The event lines: the user's `-e` rows, then each planned event once, with its report
    /// row (`None`: it does not even parse here, so `<not supported>`).
    entries: Vec<(String, Option<usize>)>,
}

impl Outcome<'_> {
    /// The metrics shown beside entry `i`.
    fn beside(&self, i: usize) -> impl Iterator<Item = &MetricValue> + '_ {
        self.values
            .iter()
            .zip(&self.leaders)
            .filter(move |(m, l)| **l == Some(i) && m.value.is_some())
            .map(|(m, _)| m)
    }
}

/// perf's line for an event that cannot be opened.
fn not_supported_row(name: &str) -> StatEvent {
    StatEvent {
        name: name.to_string(),
        value: 0,
        scaled: None,
        enabled_ns: 0,
        running_ns: 0,
        running_pct: 100.0,
        group: 0,
        stddev: None,
        supported: false,
        why: None,
        unit: None,
        instances: 0,
        first_spec: 0,
    }
}

fn text_lines(o: &Outcome, metric_only: bool) -> Vec<String> {
    let r = o.report;
    let mut lines = vec![
        String::new(),
        if r.runs > 1 {
            format!(
                " Performance counter stats for {} ({} runs):",
                r.target, r.runs
            )
        } else {
            format!(" Performance counter stats for {}:", r.target)
        },
        String::new(),
    ];
    if metric_only {
        let cols: Vec<String> = o
            .values
            .iter()
            .map(|m| {
                if m.unit.is_empty() {
                    m.name.clone()
                } else {
                    format!("{}  {}", m.unit, m.name)
                }
            })
            .collect();
        let widths: Vec<usize> = cols.iter().map(|c| c.len().max(8)).collect();
        let row = |cells: Vec<String>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        lines.push(row(cols.clone()));
        lines.push(row(o
            .values
            .iter()
            .map(|m| m.value.map_or(String::new(), |v| format!("{v:.1}")))
            .collect()));
    } else {
        for (i, (name, row)) in o.entries.iter().enumerate() {
            let mut beside = o.beside(i).map(metric_text);
            let base = match row.and_then(|x| r.events.get(x)) {
                Some(e) => event_line(e),
                None => event_line(&not_supported_row(name)),
            };
            match beside.next() {
                Some(first) => {
                    lines.push(format!("{base} # {first}"));
                    for more in beside {
                        lines.push(format!("{:w$} # {more}", "", w = base.len()));
                    }
                }
                None => lines.push(base.trim_end().to_string()),
            }
        }
    }
    lines.push(String::new());
    lines.push(format!(
        "{:>18.9} seconds time elapsed",
        r.elapsed_ns as f64 / 1e9
    ));
    lines.push(String::new());
    lines.extend(
        o.not_counted
            .iter()
            .map(|(e, why)| format!("culprit: `{e}` not counted: {why}")),
    );
    lines.extend(
        o.values
            .iter()
            .filter(|m| m.value.is_none())
            .map(|m| match m.missing.first() {
                Some(e) => format!(
                    "culprit: metric {} not printed: `{e}` did not count",
                    m.name
                ),
                None => format!(
                    "culprit: metric {} not printed: no value (division by zero)",
                    m.name
                ),
            }),
    );
    lines
}

fn csv_lines(o: &Outcome, sep: &str, metric_only: bool) -> Vec<String> {
    if metric_only {
        let names: Vec<String> = o
            .values
            .iter()
            .map(|m| format!("{} {}", m.unit, m.name).trim().to_string())
            .collect();
        let values: Vec<String> = o
            .values
            .iter()
            .map(|m| m.value.map_or(String::new(), |v| format!("{v:.2}")))
            .collect();
        return vec![names.join(sep), values.join(sep)];
    }
    let mut out = Vec::new();
    for (i, (name, row)) in o.entries.iter().enumerate() {
        let missing = not_supported_row(name);
        let e = row.and_then(|r| o.report.events.get(r)).unwrap_or(&missing);
        let beside: Vec<&MetricValue> = o.beside(i).collect();
        if beside.is_empty() {
            out.push(render::csv_line(sep, e, None));
        }
        for m in beside {
            let d = Derived {
                name: m.name.clone(),
                value: m.value.unwrap_or(f64::NAN),
                unit: format!("{} {}", m.unit, m.name).trim().to_string(),
                reliability: 1.0,
                unreliable: false,
                inputs: Vec::new(),
            };
            out.push(render::csv_line(sep, e, Some(&d)));
        }
    }
    out
}

/// This CPU's Top-Down metric groups down to `level` (`TopdownL1,TopdownL2`,
/// `PipelineL1`), when its table has them.
pub fn topdown_groups(level: u8) -> Option<String> {
    let (cpuid, _) = tables::system_cpuid(sysfs::cpu_identity().as_ref())?;
    table::topdown_groups(&tables::table_for(&cpuid)?, level)
}

/// Runs `culprit stat -M …`.
pub fn run(args: &StatArgs, list: &str, format: Format, sep: &str) -> anyhow::Result<ExitCode> {
    let choice = args.target.choice("stat", false)?;
    let system_wide = matches!(choice.target, culprit_collect::record::Target::System(_));
    let (cpuid, _) = tables::system_cpuid(sysfs::cpu_identity().as_ref())
        .context("-M: the CPU id could not be built (set PERF_CPUID)")?;
    let cpu_table = tables::table_for(&cpuid).with_context(|| {
        format!("-M: no pmu-events table for CPU id `{cpuid}` (`culprit list` says which CPUs have one; PERF_CPUID picks another)")
    })?;
    let m = stat::facts::machine();
    let facts = MachineFacts {
        smt_on: m.smt_on,
        num_cpus: m.num_cpus,
        num_cpus_online: m.num_cpus_online,
        num_cores: m.num_cores,
        num_dies: m.num_dies,
        num_packages: m.num_packages,
        system_tsc_freq: m.system_tsc_freq,
        // perf's core_wide: system-wide counting, or no SMT sibling to share a core with.
        core_wide: system_wide || !m.smt_on,
        slots: m.slots,
        has_pmem: m.has_pmem,
        cpuid: cpuid.clone(),
    };
    let metrics = Metrics::new(&cpu_table, &facts);
    let chosen = table::select(&cpu_table, list)?;
    let opts = PlanOptions {
        nmi_watchdog: stat::facts::nmi_watchdog(),
        no_group: args.metric_no_group,
    };
    let plan = plan::plan(&metrics, &chosen, facts.smt_on, opts)?;
    let user = if args.events.is_empty() {
        Vec::new()
    } else {
        stat::groups_of(&args.events)?
    };
    let user_rows = user.iter().map(Vec::len).sum::<usize>();
    let (mut groups, placement) = open_plan(&plan, user);
    if groups.is_empty() {
        // Nothing of the metrics opens here: time the command with task-clock (hidden) so
        // the run and its elapsed time still happen, as perf's run would.
        groups = stat::groups_of(&["task-clock".to_string()])?;
    }
    let sopts = StatOptions {
        groups,
        target: choice.target,
        interval: args.interval.map(Duration::from_millis),
        repeat: args.repeat,
    };
    let mut warn = |w: String| eprintln!("culprit: warning: {w}");
    let report = super::count_report(&sopts, &mut |_| {}, &mut warn)?;
    let value_of = |row: usize| {
        report
            .events
            .get(row)
            .filter(|e| e.supported)
            .and_then(|e| e.scaled)
    };
    let counted: Vec<Vec<Option<f64>>> = placement
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| p.as_ref().ok().and_then(|&r| value_of(r)))
                .collect()
        })
        .collect();
    let tools = ToolValues {
        duration_s: report.elapsed_ns as f64 / 1e9,
        user_s: None,
        system_s: None,
    };
    let values = plan::evaluate_plan(&metrics, &chosen, &plan, &counted, tools);
    let mut entries: Vec<(String, Option<usize>)> = report.events
        [..user_rows.min(report.events.len())]
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), Some(i)))
        .collect();
    for (g, places) in plan.groups.iter().zip(&placement) {
        for (name, p) in g.iter().zip(places) {
            if !entries.iter().any(|(n, _)| n == name) {
                entries.push((name.clone(), p.as_ref().ok().copied()));
            }
        }
    }
    let leaders = plan
        .metrics
        .iter()
        .map(|m| {
            let (g, i) = m.places.iter().flatten().next()?;
            let name = &plan.groups[*g][*i];
            entries.iter().position(|(n, _)| n == name)
        })
        .collect();
    let mut not_counted: Vec<(String, String)> = Vec::new();
    for (g, places) in plan.groups.iter().zip(&placement) {
        for (name, p) in g.iter().zip(places) {
            let why = match p {
                Err(e) => Some(e.clone()),
                Ok(r) if value_of(*r).is_none() => Some(
                    "<not supported>: this machine cannot count it (no hardware PMU counter for it)"
                        .to_string(),
                ),
                Ok(_) => None,
            };
            if let Some(why) = why {
                if !not_counted.iter().any(|(n, _)| n == name) {
                    not_counted.push((name.clone(), why));
                }
            }
        }
    }
    let outcome = Outcome {
        report: &report,
        values,
        leaders,
        not_counted,
        entries,
    };
    let sink = Sink::new(&args.output, format)?;
    match format {
        Format::Json => {
            let mut doc = serde_json::to_value(&report)?;
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("pmu_metrics".into(), serde_json::to_value(&outcome.values)?);
                obj.insert(
                    "metric_table".into(),
                    serde_json::json!({
                        "model": cpu_table.row.model,
                        "cpuid": cpuid,
                    }),
                );
            }
            culprit_output::json::write(&mut *sink.lock(), &doc)?;
        }
        Format::Csv => sink.lines(&csv_lines(&outcome, sep, args.metric_only))?,
        Format::Text => sink.lines(&text_lines(&outcome, args.metric_only))?,
    }
    Ok(exit_code(&report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(name: &str, value: f64, group: usize) -> StatEvent {
        StatEvent {
            name: name.to_string(),
            value: value as u64,
            scaled: Some(value),
            enabled_ns: 1_000,
            running_ns: 1_000,
            running_pct: 100.0,
            group,
            stddev: None,
            supported: true,
            why: None,
            unit: None,
            instances: 0,
            first_spec: 0,
        }
    }

    fn report(events: Vec<StatEvent>) -> StatReport {
        StatReport {
            schema: 1,
            cpu: None,
            target: "'true'".into(),
            runs: 1,
            elapsed_ns: 1_500_000,
            elapsed_stddev_ns: None,
            exit_code: Some(0),
            signal: None,
            interrupted: false,
            user_only: false,
            events,
            metrics: Default::default(),
            intervals: None,
            topdown: None,
            metric_list: Vec::new(),
            elapsed_runs: vec![1_500_000.0],
        }
    }

    fn value(name: &str, v: Option<f64>, unit: &str) -> MetricValue {
        MetricValue {
            name: name.into(),
            pmu: "default_core".into(),
            value: v,
            unit: unit.into(),
            missing: if v.is_some() {
                Vec::new()
            } else {
                vec!["X".into()]
            },
        }
    }

    #[test]
    fn metrics_beside_their_leader_in_perfs_layout() {
        let r = report(vec![
            counted("ls_not_halted_cyc", 1_000_000.0, 0),
            counted("ex_ret_ops", 2_400_000.0, 0),
        ]);
        let o = Outcome {
            report: &r,
            values: vec![
                value("retiring", Some(40.0), "%"),
                value("ipc_like", Some(2.4), ""),
                value("frontend_bound", None, "%"),
            ],
            leaders: vec![Some(0), Some(0), Some(2)],
            not_counted: vec![("cpu/x/".into(), "<not supported>: why".into())],
            entries: vec![
                ("ls_not_halted_cyc".into(), Some(0)),
                ("ex_ret_ops".into(), Some(1)),
                ("cpu/x/".into(), None),
            ],
        };
        let text = text_lines(&o, false);
        let first = text
            .iter()
            .find(|l| l.contains("ls_not_halted_cyc"))
            .unwrap();
        assert!(
            first.starts_with("         1,000,000       ls_not_halted_cyc"),
            "{first}"
        );
        assert!(first.ends_with(" #     40.0 %  retiring"), "{first}");
        assert!(
            text.iter().any(|l| l.ends_with(" #     2.40 ipc_like")),
            "{text:?}"
        );
        assert!(text
            .iter()
            .any(|l| l.trim_end().ends_with("<not supported>       cpu/x/")));
        assert!(!text
            .iter()
            .any(|l| l.contains("# ") && l.contains("frontend_bound")));
        assert!(text.contains(&"culprit: `cpu/x/` not counted: <not supported>: why".to_string()));
        assert!(text.contains(
            &"culprit: metric frontend_bound not printed: `X` did not count".to_string()
        ));

        let only = text_lines(&o, true);
        let header = only.iter().position(|l| l.contains("%  retiring")).unwrap();
        assert!(only[header + 1].contains("40.0") && only[header + 1].contains("2.4"));

        let csv = csv_lines(&o, ",", false);
        assert_eq!(
            csv[0],
            "1000000,,ls_not_halted_cyc,1000,100.00,40.000,% retiring"
        );
        assert_eq!(csv.last().unwrap(), "<not supported>,,cpu/x/,0,100.00,,");
    }
}
