//! `culprit sched`: scheduling delay, with perf's verbs. `record` is `culprit record` with the
//! scheduler's tracepoints on every CPU ([`record_flags`]); `latency` and `timehist` read
//! that file or perf's (`culprit_analysis::sched`), `wakers` a `record --off-cpu=wakers` file
//! (`culprit_analysis::wakers`). Each read is streamed: only per-thread state and the rows
//! are kept, so an endless stdin stays bounded.

use culprit_analysis::sched::render::{LatencyView, TimehistView};
use culprit_analysis::sched::{self, LatencyReport, TimehistReport};
use culprit_analysis::wakers::{self, WakersJson, WakersReport, WAKERS_SCHEMA};
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::stopped::{render_via, ReadReport};

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

/// `culprit sched latency`'s report, with its text's histogram choice.
#[derive(Debug, Clone)]
pub struct Latency {
    /// The report.
    pub report: LatencyReport,
    /// Text: the delay histogram after the table.
    pub histogram: bool,
}

/// `culprit sched latency`: per task, run time, switches, average and maximum scheduling
/// delay. Fails when the file has no `sched:sched_switch` samples.
pub fn latency(options: &LatencyOptions) -> anyhow::Result<ReadReport<Latency>> {
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
    Ok(ReadReport::new(report, &options.input, &profile))
}

/// `culprit sched timehist`: per context switch, wait time, scheduling delay and run time.
/// Fails when the file has no `sched:sched_switch` samples.
pub fn timehist(input: &ProfileInput) -> anyhow::Result<ReadReport<TimehistReport>> {
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
    Ok(ReadReport::new(report, input, &profile))
}

/// `culprit sched wakers`: who woke each blocked stack, and from where (`record
/// --off-cpu=wakers` files). Fails when the file has no off-CPU or wake-up samples.
pub fn wakers(input: &ProfileInput) -> anyhow::Result<ReadReport<WakersReport>> {
    let mut sym = input.symbolizer();
    let mut tracker = wakers::WakersTracker::default();
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| tracker.sample(profile, &mut sym, sample),
    )?;
    let report = tracker.finish(&profile)?;
    Ok(ReadReport::new(report, input, &profile))
}

render_via!(ReadReport<Latency>, |r| LatencyView {
    input: &r.input,
    report: &r.report.report,
    histogram: r.report.histogram,
});

render_via!(ReadReport<TimehistReport>, |r| TimehistView {
    input: &r.input,
    report: &r.report,
});

render_via!(ReadReport<WakersReport>, |r| WakersJson {
    schema: WAKERS_SCHEMA,
    input: &r.input,
    report: &r.report,
});

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
