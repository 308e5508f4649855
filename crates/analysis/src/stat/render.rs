//! perf stat's text and `-x` CSV layouts of a [`StatReport`], as documents of lines
//! (`collect::stat` counts, [`crate::stat`] computes).

use crate::metrics::Metric;
use crate::stat::{mean, stddev, StatEvent, StatInterval, StatReport};
use culprit_output::Document;

pub use culprit_output::units::group_digits;

/// task-clock and cpu-clock count nanoseconds: perf shows them in msec.
fn is_msec(name: &str) -> bool {
    let b = name.split(':').next().unwrap_or(name);
    b == "task-clock" || b == "cpu-clock"
}

/// (value text, unit) as perf prints it.
fn value_text(e: &StatEvent, csv: bool) -> (String, &str) {
    if !e.supported {
        return ("<not supported>".to_string(), "");
    }
    let Some(v) = e.scaled else {
        return ("<not counted>".to_string(), "");
    };
    if is_msec(&e.name) {
        return (format!("{:.2}", v / 1e6), "msec");
    }
    // A scaled event (RAPL's Joules, an uncore alias's MiB): perf prints two decimals where
    // the scale makes fractions.
    if let Some(unit) = e.unit.as_deref() {
        if v.fract() != 0.0 {
            return (format!("{v:.2}"), unit);
        }
        let n = v.round() as u64;
        return (if csv { n.to_string() } else { group_digits(n) }, unit);
    }
    let n = v.round() as u64;
    (if csv { n.to_string() } else { group_digits(n) }, "")
}

/// One event as perf's `-x SEP` line:
/// `value,unit,event,running_ns,running_pct,metric_value,metric_unit`.
pub fn csv_line(sep: &str, e: &StatEvent, metric: Option<&Metric>) -> String {
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

/// The metric printed beside an event (perf's `#` column): the first metric computed from
/// it (derived() orders them as perf shows them).
fn metric_for<'a>(e: &StatEvent, ms: &'a [Metric]) -> Option<&'a Metric> {
    ms.iter().find(|m| m.inputs.first() == Some(&e.name))
}

fn metric_value_text(m: &Metric) -> String {
    if m.name.ends_with("_ratio") {
        format!("{:.2}% {}", m.value * 100.0, m.unit)
    } else {
        format!("{:.3} {}", m.value, m.unit)
    }
}

fn text_event_line(e: &StatEvent, ms: &[Metric], runs: u32) -> String {
    let (v, unit) = value_text(e, false);
    let mut line = format!("{v:>18} {unit:<5} {:<30}", e.name);
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

/// An interval's text lines (`time count unit event`), after the column header when
/// `first`.
pub fn interval_text_lines(iv: &StatInterval, first: bool) -> Vec<String> {
    let mut out = Vec::new();
    if first {
        out.push("#           time             counts unit events".to_string());
    }
    let t = iv.time_s;
    out.extend(
        iv.events
            .iter()
            .map(|e| format!("{t:>15.9} {}", text_event_line(e, &[], 1))),
    );
    out
}

/// An interval's `-x SEP` lines (the time first).
pub fn interval_csv_lines(iv: &StatInterval, sep: &str) -> Vec<String> {
    let t = iv.time_s;
    iv.events
        .iter()
        .map(|e| format!("{t:.9}{sep}{}", csv_line(sep, e, None)))
        .collect()
}

/// perf stat's text: the counts with their metrics, the other metrics, the elapsed time.
pub fn document(report: &StatReport) -> Document {
    let mut lines = Vec::new();
    let runs = report.runs;
    let runs_txt = if runs > 1 {
        format!(" ({runs} runs)")
    } else {
        String::new()
    };
    lines.push(String::new());
    lines.push(format!(
        " Performance counter stats for {}{runs_txt}:",
        report.target
    ));
    lines.push(String::new());
    let ms = &report.metric_list;
    for e in &report.events {
        lines.push(text_event_line(e, ms, runs));
    }
    // Metrics not already printed beside their event.
    let shown: Vec<&str> = report
        .events
        .iter()
        .filter_map(|e| metric_for(e, ms).map(|m| m.name.as_str()))
        .collect();
    let rest: Vec<&Metric> = ms
        .iter()
        .filter(|m| !shown.contains(&m.name.as_str()))
        .collect();
    if !rest.is_empty() {
        lines.push(String::new());
        for m in rest {
            lines.push(format!(
                "{:>18}       {:<30} # {}{}",
                format!("{:.3}", m.value),
                m.name,
                m.unit,
                if m.unreliable {
                    format!(" (unreliable: reliability {:.2})", m.reliability)
                } else {
                    String::new()
                }
            ));
        }
    }
    lines.push(String::new());
    let elapsed = &report.elapsed_runs;
    let m = mean(elapsed) / 1e9;
    lines.push(match stddev(elapsed) {
        Some(sd) => format!(
            "{m:>18.9} +- {:.9} seconds time elapsed  ( +- {:.2}% )",
            sd / 1e9,
            if m == 0.0 { 0.0 } else { sd / 1e9 / m * 100.0 }
        ),
        None => format!("{m:>18.9} seconds time elapsed"),
    });
    lines.push(String::new());
    lines.extend(not_counted_lines(&report.events));
    let mut doc = Document::new();
    doc.lines(lines);
    doc
}

/// One line per reason why events did not count (`<not supported>` rows say why), the
/// events of one reason together.
pub fn not_counted_lines(events: &[StatEvent]) -> Vec<String> {
    let mut by_reason: Vec<(&str, Vec<String>)> = Vec::new();
    for e in events.iter().filter(|e| !e.supported) {
        let why = e.why.as_deref().unwrap_or("this machine cannot count it");
        let name = format!("`{}`", culprit_output::text::escape(&e.name));
        match by_reason.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((why, vec![name])),
        }
    }
    by_reason
        .into_iter()
        .map(|(why, names)| format!("<not supported>: {} not counted: {why}", names.join(", ")))
        .collect()
}

/// perf's `-x SEP` lines: one per event, with the metric shown beside it.
pub fn report_csv_lines(report: &StatReport, sep: &str) -> Vec<String> {
    report
        .events
        .iter()
        .map(|e| csv_line(sep, e, metric_for(e, &report.metric_list)))
        .collect()
}

#[cfg(test)]
mod tests_not_counted {
    use super::*;

    #[test]
    fn test_not_supported_rows_say_why_once_per_reason() {
        let ev = |name: &str, why: Option<&str>| StatEvent {
            name: name.into(),
            value: 0,
            scaled: None,
            enabled_ns: 0,
            running_ns: 0,
            running_pct: 100.0,
            group: 0,
            stddev: None,
            supported: why.is_none(),
            why: why.map(String::from),
            unit: None,
            instances: 0,
            first_spec: 0,
        };
        let lines = not_counted_lines(&[
            ev("cycles", Some("no PMU")),
            ev("task-clock", None),
            ev("instructions", Some("no PMU")),
            ev("msr/x/", Some("ENODEV")),
        ]);
        assert_eq!(
            lines,
            [
                "<not supported>: `cycles`, `instructions` not counted: no PMU",
                "<not supported>: `msr/x/` not counted: ENODEV"
            ]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, supported: bool) -> StatEvent {
        StatEvent {
            name: name.into(),
            value: 0,
            scaled: supported.then_some(1.0),
            why: None,
            unit: None,
            instances: 0,
            first_spec: 0,
            enabled_ns: 0,
            running_ns: 0,
            running_pct: 100.0,
            group: 0,
            stddev: None,
            supported,
        }
    }

    #[test]
    fn test_not_supported_rows_as_perf() {
        let e = ev("cycles", false);
        assert_eq!(
            csv_line(",", &e, None),
            "<not supported>,,cycles,0,100.00,,"
        );
        assert_eq!(
            text_event_line(&e, &[], 1),
            "   <not supported>       cycles"
        );
    }

    /// A scaled event shows count × scale in its unit, two decimals where the scale makes
    /// fractions (perf: `             29.64 Joules power/energy-pkg/`); the CSV unit column
    /// carries the unit.
    #[test]
    fn test_scaled_events_show_their_unit() {
        let mut joules = ev("power/energy-pkg/", true);
        joules.scaled = Some(29.6431);
        joules.unit = Some("Joules".into());
        assert_eq!(
            text_event_line(&joules, &[], 1).trim_end(),
            "             29.64 Joules power/energy-pkg/"
        );
        assert_eq!(
            csv_line(",", &joules, None),
            "29.64,Joules,power/energy-pkg/,0,100.00,,"
        );
        let mut bytes = ev("llc_misses.mem_read", true);
        bytes.scaled = Some(6400.0);
        bytes.unit = Some("Bytes".into());
        assert_eq!(
            text_event_line(&bytes, &[], 1).trim_end(),
            "             6,400 Bytes llc_misses.mem_read"
        );
    }
}
