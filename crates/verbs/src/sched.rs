//! `culprit sched`: scheduling delay, with perf's verbs. `record` is `culprit record` with the
//! scheduler's tracepoints on every CPU ([`record_flags`]); `latency` and `timehist` read
//! that file or perf's (`culprit_analysis::sched`), `wakers` a `record --off-cpu=wakers` file
//! (`culprit_analysis::wakers`). Each read is streamed: only per-thread state and the rows
//! are kept, so an endless stdin stays bounded.

use std::io::{self, Write};
use std::process::ExitCode;

use culprit_analysis::sched::render::{LatencyView, TimehistView};
use culprit_analysis::sched::{self, LatencyReport, TimehistReport};
use culprit_analysis::wakers::{self, WakersJson, WakersReport, WAKERS_SCHEMA};
use culprit_decode::model::Profile;
use culprit_output::{Document, Render, Table};
use culprit_symbols::{ProfileInput, ReadPlan};

/// The tracepoints `culprit sched record` records: perf 6.1's `perf sched record` set
/// (switch, run time, fork, wake-up of new tasks, migration, waking), and `sched_wakeup`.
pub const SCHED_EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_stat_runtime",
    "sched:sched_process_fork",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_waking",
    "sched:sched_migrate_task",
];

/// The `culprit record` flags of `culprit sched record` (besides its own `-o`, `-m`, `-q`
/// and command): `-a -c 1 -e <SCHED_EVENTS> [--duration SECONDS]`, as perf sched record
/// runs `perf record -a -R -m 1024 -c 1 -e …`.
pub fn record_flags(duration: Option<f64>) -> Vec<String> {
    let mut flags: Vec<String> = ["-a", "-c", "1", "-e"].map(String::from).to_vec();
    flags.push(SCHED_EVENTS.join(","));
    if let Some(d) = duration {
        flags.extend(["--duration".to_string(), d.to_string()]);
    }
    flags
}

/// What `culprit sched latency` reads and how it groups and sorts.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// The input.
    pub input: ProfileInput,
    /// Per thread or per command, and the sort keys.
    pub options: sched::LatencyOptions,
    /// Text: the delay histogram after the table.
    pub histogram: bool,
}

/// A report of one input, and how its reading ended.
#[derive(Debug, Clone)]
pub struct Read<R> {
    /// The report.
    pub report: R,
    /// The input as named (`-` for stdin).
    pub input: String,
    /// Why reading stopped early (a truncated or corrupt file), when it did.
    pub stopped: Option<String>,
}

/// `culprit sched latency`'s report, with its text's histogram choice.
#[derive(Debug, Clone)]
pub struct Latency {
    /// The report.
    pub report: LatencyReport,
    /// Text: the delay histogram after the table.
    pub histogram: bool,
}

impl<R> Read<R> {
    fn new(report: R, input: &ProfileInput, profile: &Profile) -> Read<R> {
        Read {
            report,
            input: input.path().display().to_string(),
            stopped: profile.stopped.as_ref().map(|s| s.describe()),
        }
    }

    /// The exit status once the report is written: 0, or 1 after saying where and why the
    /// reading stopped (the report covers what was read before it).
    pub fn exit_status(&self) -> ExitCode {
        match &self.stopped {
            Some(why) => crate::stopped::report(
                &self.input,
                why,
                "the report covers what was read before it",
            ),
            None => ExitCode::SUCCESS,
        }
    }
}

/// `culprit sched latency`: per task, run time, switches, average and maximum scheduling
/// delay. Fails when the file has no `sched:sched_switch` samples.
pub fn latency(options: &LatencyOptions) -> anyhow::Result<Read<Latency>> {
    let mut tracker = sched::LatencyTracker::default();
    let profile = options.input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| {
            if let Some(event) = sched::sched_event(profile, sample) {
                tracker.event(&event);
            }
        },
    )?;
    sched::require_switch_event(&profile)?;
    let report = Latency {
        report: tracker.finish(sched::Comms::of_profile(&profile), &options.options),
        histogram: options.histogram,
    };
    Ok(Read::new(report, &options.input, &profile))
}

/// `culprit sched timehist`: per context switch, wait time, scheduling delay and run time.
/// Fails when the file has no `sched:sched_switch` samples.
pub fn timehist(input: &ProfileInput) -> anyhow::Result<Read<TimehistReport>> {
    let mut tracker: Option<sched::TimehistTracker> = None;
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| {
            if let Some(event) = sched::sched_event(profile, sample) {
                tracker
                    .get_or_insert_with(|| {
                        sched::TimehistTracker::new(sched::has_waking_event(profile))
                    })
                    .event(&event, &profile.thread_pids);
            }
        },
    )?;
    sched::require_switch_event(&profile)?;
    let report = tracker
        .map(sched::TimehistTracker::finish)
        .unwrap_or_default();
    Ok(Read::new(report, input, &profile))
}

/// `culprit sched wakers`: who woke each blocked stack, and from where (`record
/// --off-cpu=wakers` files). Fails when the file has no off-CPU or wake-up samples.
pub fn wakers(input: &ProfileInput) -> anyhow::Result<Read<WakersReport>> {
    let mut sym = input.symbolizer();
    let mut tracker = wakers::WakersTracker::default();
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| tracker.sample(profile, &mut sym, sample),
    )?;
    let report = tracker.finish(&profile)?;
    Ok(Read::new(report, input, &profile))
}

impl Read<Latency> {
    fn view(&self) -> LatencyView<'_> {
        LatencyView {
            input: &self.input,
            report: &self.report.report,
            histogram: self.report.histogram,
        }
    }
}

impl Render for Read<Latency> {
    fn document(&self) -> Document {
        self.view().document()
    }

    fn csv_tables(&self) -> Vec<Table> {
        self.view().csv_tables()
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        self.view().write_json(out)
    }
}

impl Read<TimehistReport> {
    fn view(&self) -> TimehistView<'_> {
        TimehistView {
            input: &self.input,
            report: &self.report,
        }
    }
}

impl Render for Read<TimehistReport> {
    fn document(&self) -> Document {
        self.view().document()
    }

    fn csv_tables(&self) -> Vec<Table> {
        self.view().csv_tables()
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        self.view().write_json(out)
    }
}

impl Read<WakersReport> {
    fn view(&self) -> WakersJson<'_> {
        WakersJson {
            schema: WAKERS_SCHEMA,
            input: &self.input,
            report: &self.report,
        }
    }
}

impl Render for Read<WakersReport> {
    fn document(&self) -> Document {
        self.view().document()
    }

    fn csv_tables(&self) -> Vec<Table> {
        self.view().csv_tables()
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        self.view().write_json(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_record_flags_are_perf_sched_records() {
        let events = SCHED_EVENTS.join(",");
        assert_eq!(record_flags(None), ["-a", "-c", "1", "-e", &events]);
        assert_eq!(
            record_flags(Some(2.5)),
            ["-a", "-c", "1", "-e", &events, "--duration", "2.5"]
        );
        assert_eq!(record_flags(Some(3.0))[6], "3");
    }
}
