//! The documents and JSON of `culprit sched`: text in perf's layout (`perf sched latency`,
//! `perf sched timehist`), CSV tables, JSON with a schema version.

use std::io::{self, Write};

use culprit_output::{Column, Document, Render, Table, Values};
use serde::Serialize;

use super::latency::{DelayHistogram, LatencyReport};
use super::timehist::TimehistReport;
use super::usec_timestamp;

/// Version of the JSON of `culprit sched latency` (docs/schemas/sched-latency.schema.json).
pub const LATENCY_SCHEMA: u32 = 1;
/// Version of the JSON of `culprit sched timehist` (docs/schemas/sched-timehist.schema.json).
pub const TIMEHIST_SCHEMA: u32 = 1;

/// `culprit sched latency --format json`.
#[derive(Debug, Serialize)]
pub struct LatencyJson<'a> {
    /// [`LATENCY_SCHEMA`].
    pub schema: u32,
    /// The input file.
    pub input: &'a str,
    /// The report.
    #[serde(flatten)]
    pub report: &'a LatencyReport,
}

/// `culprit sched timehist --format json`.
#[derive(Debug, Serialize)]
pub struct TimehistJson<'a> {
    /// [`TIMEHIST_SCHEMA`].
    pub schema: u32,
    /// The input file.
    pub input: &'a str,
    /// The report.
    #[serde(flatten)]
    pub report: &'a TimehistReport,
}

/// `culprit sched latency`'s report as the renderers take it.
pub struct LatencyView<'a> {
    /// The input file.
    pub input: &'a str,
    /// The report.
    pub report: &'a LatencyReport,
    /// Text: the delay histogram after the table.
    pub histogram: bool,
}

impl Render for LatencyView<'_> {
    fn document(&self) -> Document {
        self.report.document(self.histogram)
    }

    fn csv_tables(&self) -> Vec<Table> {
        vec![self.report.table()]
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let json = LatencyJson {
            schema: LATENCY_SCHEMA,
            input: self.input,
            report: self.report,
        };
        culprit_output::json::write(out, &json)
    }
}

/// `culprit sched timehist`'s report as the renderers take it.
pub struct TimehistView<'a> {
    /// The input file.
    pub input: &'a str,
    /// The report.
    pub report: &'a TimehistReport,
}

impl Render for TimehistView<'_> {
    fn document(&self) -> Document {
        self.report.document()
    }

    fn csv_tables(&self) -> Vec<Table> {
        vec![self.report.table()]
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let json = TimehistJson {
            schema: TIMEHIST_SCHEMA,
            input: self.input,
            report: self.report,
        };
        culprit_output::json::write(out, &json)
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// perf's `print_sched_time`: milliseconds with three decimals, truncated, `width` wide.
fn sched_time(ns: u64, width: usize) -> String {
    format!("{:>width$}.{:03}", ns / 1_000_000, (ns % 1_000_000) / 1000)
}

impl LatencyReport {
    /// The table in perf's layout (`perf sched latency`), then the histogram when asked.
    pub fn text_lines(&self, histogram: bool) -> Vec<String> {
        let rule = |n: usize| format!(" {}", "-".repeat(n));
        let mut out = vec![
            String::new(),
            rule(139),
            "  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | Max delay start           | Max delay end          |".to_string(),
            rule(139),
        ];
        for t in &self.tasks {
            let name = if t.threads > 1 {
                format!("  {}:({}) ", t.comm, t.threads)
            } else {
                format!("  {}:{} ", t.comm, t.tid)
            };
            out.push(format!(
                "{name:<24}|{:11.3} ms |{:9} | avg:{:8.3} ms | max:{:8.3} ms | max start: {:>12} s | max end: {:>12} s",
                ms(t.runtime_ns),
                t.switches,
                ms(t.avg_delay_ns),
                ms(t.max_delay_ns),
                usec_timestamp(t.max_delay_start_ns),
                usec_timestamp(t.max_delay_end_ns),
            ));
        }
        out.push(rule(113));
        out.push(format!(
            "  TOTAL:                |{:11.3} ms |{:9} |",
            ms(self.total_runtime_ns),
            self.total_switches
        ));
        out.push(rule(51));
        if self.unordered_timestamps > 0 && self.timestamps > 0 {
            out.push(format!(
                "  INFO: {:.3}% unordered timestamps ({} out of {})",
                self.unordered_timestamps as f64 / self.timestamps as f64 * 100.0,
                self.unordered_timestamps,
                self.timestamps
            ));
        }
        if histogram {
            out.push(String::new());
            out.extend(self.histogram.text_lines());
        }
        out
    }

    /// The document: perf's layout in text; in CSV one row per task.
    pub fn document(&self, histogram: bool) -> Document {
        let mut doc = Document::new();
        doc.lines(self.text_lines(histogram));
        doc
    }

    /// One row per task (CSV).
    pub fn table(&self) -> Table {
        let t = &self.tasks;
        Table::new(vec![
            Column::new(
                "Task",
                "comm",
                Values::Text(t.iter().map(|r| r.comm.clone()).collect()),
            ),
            Column::new(
                "TID",
                "tid",
                Values::Int(t.iter().map(|r| Some(r.tid as i64)).collect()),
            ),
            Column::new(
                "Threads",
                "threads",
                Values::Count(t.iter().map(|r| r.threads as u64).collect()),
            ),
            Column::new(
                "Runtime",
                "runtime_ns",
                Values::Count(t.iter().map(|r| r.runtime_ns).collect()),
            ),
            Column::new(
                "Switches",
                "switches",
                Values::Count(t.iter().map(|r| r.switches).collect()),
            ),
            Column::new(
                "Avg delay",
                "avg_delay_ns",
                Values::Count(t.iter().map(|r| r.avg_delay_ns).collect()),
            ),
            Column::new(
                "Max delay",
                "max_delay_ns",
                Values::Count(t.iter().map(|r| r.max_delay_ns).collect()),
            ),
            Column::new(
                "Max start",
                "max_delay_start_ns",
                Values::Count(t.iter().map(|r| r.max_delay_start_ns).collect()),
            ),
            Column::new(
                "Max end",
                "max_delay_end_ns",
                Values::Count(t.iter().map(|r| r.max_delay_end_ns).collect()),
            ),
        ])
    }
}

impl DelayHistogram {
    /// The histogram as text: one line per power-of-two range of µs, with a bar.
    pub fn text_lines(&self) -> Vec<String> {
        let max = self.buckets.iter().copied().max().unwrap_or(0).max(1);
        let mut out = vec!["  Scheduling delay (µs)   count  distribution".to_string()];
        for (i, &n) in self.buckets.iter().enumerate() {
            let (lo, hi) = DelayHistogram::range_us(i);
            let bar = "@".repeat(((n * 40).div_ceil(max)) as usize);
            out.push(format!("  [{lo:>8}, {hi:>8})  {n:>8}  |{bar:<40}|"));
        }
        out
    }
}

impl TimehistReport {
    /// The rows in perf's layout (`perf sched timehist`).
    pub fn text_lines(&self) -> Vec<String> {
        let name = |r: &super::TimehistRow| {
            if r.pid == 0 {
                r.comm.clone()
            } else if r.tid != r.pid {
                format!("{}[{}/{}]", r.comm, r.tid, r.pid)
            } else {
                format!("{}[{}]", r.comm, r.tid)
            }
        };
        // perf widens the name column as longer names come (never narrows it).
        let mut width = 30;
        let mut out = vec![
            format!(
                "{:>15} {:>6}  {:<width$}  {:>9}  {:>9}  {:>9}",
                "time", "cpu", "task name", "wait time", "sch delay", "run time"
            ),
            format!(
                "{:>15} {:>6}  {:<width$}  {:>9}  {:>9}  {:>9}",
                "", "", "[tid/pid]", "(msec)", "(msec)", "(msec)"
            ),
            format!(
                "{} {}  {}  {}  {}  {}",
                "-".repeat(15),
                "-".repeat(6),
                "-".repeat(width),
                "-".repeat(9),
                "-".repeat(9),
                "-".repeat(9)
            ),
        ];
        for r in &self.rows {
            let name = name(r);
            width = width.max(name.chars().count());
            out.push(format!(
                "{:>15} [{:04}]  {:<width$} {} {} {} ",
                usec_timestamp(r.time_ns),
                r.cpu,
                name,
                sched_time(r.wait_ns, 6),
                sched_time(r.sch_delay_ns, 6),
                sched_time(r.run_ns, 6),
            ));
        }
        out
    }

    /// The document: perf's layout.
    pub fn document(&self) -> Document {
        let mut doc = Document::new();
        doc.lines(self.text_lines());
        doc
    }

    /// One row per switch (CSV).
    pub fn table(&self) -> Table {
        let r = &self.rows;
        Table::new(vec![
            Column::new(
                "Time",
                "time_ns",
                Values::Count(r.iter().map(|x| x.time_ns).collect()),
            ),
            Column::new(
                "CPU",
                "cpu",
                Values::Count(r.iter().map(|x| x.cpu as u64).collect()),
            ),
            Column::new(
                "Task",
                "comm",
                Values::Text(r.iter().map(|x| x.comm.clone()).collect()),
            ),
            Column::new(
                "TID",
                "tid",
                Values::Int(r.iter().map(|x| Some(x.tid as i64)).collect()),
            ),
            Column::new(
                "PID",
                "pid",
                Values::Int(r.iter().map(|x| Some(x.pid as i64)).collect()),
            ),
            Column::new(
                "Wait",
                "wait_ns",
                Values::Count(r.iter().map(|x| x.wait_ns).collect()),
            ),
            Column::new(
                "Sch delay",
                "sch_delay_ns",
                Values::Count(r.iter().map(|x| x.sch_delay_ns).collect()),
            ),
            Column::new(
                "Run",
                "run_ns",
                Values::Count(r.iter().map(|x| x.run_ns).collect()),
            ),
        ])
    }
}
