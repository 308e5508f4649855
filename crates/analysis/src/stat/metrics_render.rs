//! perf stat's text and `-x` CSV layouts of `stat -M METRIC|GROUP` and `--metric-only`:
//! each metric beside the first event of its group (`#     52.3 %  tma_retiring`),
//! `<not supported>` for events that cannot be counted, and no value for a metric whose
//! events did not all count.

use crate::metrics::plan::MetricValue;
use crate::metrics::Metric as Derived;
use crate::stat::render;
use crate::stat::StatEvent;
use crate::stat::StatReport;

/// A metric's text as perf prints it in the `#` column.
fn metric_text(m: &MetricValue) -> String {
    match m.value {
        Some(v) if m.unit.is_empty() => format!("{v:8.2} {}", m.name),
        Some(v) => format!("{v:8.1} {}  {}", m.unit, m.name),
        None => String::new(),
    }
}

/// An event's text line, perf's columns.
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

/// A `stat -M` run's results, as its layouts need them.
pub struct Outcome<'a> {
    /// The counted events.
    pub report: &'a StatReport,
    /// The metrics' values, in the plan's order.
    pub values: Vec<MetricValue>,
    /// Per metric, the entry of its leader (the first event of its group).
    pub leaders: Vec<Option<usize>>,
    /// (event, why it is not counted), each once.
    pub not_counted: Vec<(String, String)>,
    /// The event lines: the user's `-e` rows, then each planned event once, with its report
    /// row (`None`: it does not even parse here, so `<not supported>`).
    pub entries: Vec<(String, Option<usize>)>,
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

/// perf stat's text layout of a `-M` run: each metric beside its group's first event.
pub fn text_lines(o: &Outcome, metric_only: bool) -> Vec<String> {
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

/// perf stat's `-x` CSV layout of a `-M` run.
pub fn csv_lines(o: &Outcome, sep: &str, metric_only: bool) -> Vec<String> {
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
