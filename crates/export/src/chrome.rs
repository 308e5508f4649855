//! Chrome trace events: the JSON object format (`{"traceEvents": [...]}`) that
//! chrome://tracing, the Perfetto UI (<https://ui.perfetto.dev>) and Chrome DevTools open,
//! here a flame chart of the samples over time.
//!
//! What the file holds, from a [`StackProfile`] with its timeline:
//! - `M` (metadata) events naming each process (pid) and thread (tid) by its command;
//! - for the primary event (the first in the file's order), per thread, complete (`X`)
//!   slices: one per function and run of consecutive samples that have it at the same depth
//!   below the same callers (so a slice of `main` spans every sample under `main`). A sample lasts from its time to the thread's
//!   next sample, at most its period for clock events or the thread's median gap between
//!   samples otherwise; a longer gap ends every open slice. Each slice carries `samples` and
//!   `period` (the sum of its samples' periods) in `args`; kernel frames have category
//!   `kernel`, others `user`; inlined functions are slices of their own;
//! - every other event as a counter (`C`) track per process, the period summed per
//!   millisecond.
//!
//! Times (`ts`, `dur`) are microseconds from the first sample, with nanosecond decimals.
//!
//! Limits: slices show where samples landed, not traced call times; the durations come from
//! the sampling interval. Without samples there are no slices.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use culprit_analysis::stacks::{PeriodUnit, StackProfile, ThreadInfo, TimedSample};
use serde::Serialize;
use serde_json::json;

use crate::common::{frame_name, primary_event};
use crate::ExportError;

/// Counter buckets: 1 ms of perf time.
const COUNTER_BUCKET_NS: u64 = 1_000_000;

/// One complete slice.
#[derive(Serialize)]
struct Slice<'a> {
    name: &'a str,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    dur: f64,
    pid: i32,
    tid: i32,
    args: SliceArgs,
}

#[derive(Serialize)]
struct SliceArgs {
    samples: u64,
    period: u64,
}

/// A slice still open while samples are walked.
struct Open {
    function: u32,
    kernel: bool,
    start: u64,
    samples: u64,
    period: u64,
}

/// Writes `profile` (built with its timeline) as Chrome trace-event JSON; returns the
/// number of trace events written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> Result<u64, ExportError> {
    if profile.timeline.is_empty() && !profile.samples.is_empty() {
        return Err(ExportError::Unsupported(
            "the Chrome trace export needs every sample's time: build the stack profile with the timeline".to_string(),
        ));
    }
    let mut out = io::BufWriter::new(out);
    let start = profile.timeline.iter().map(|s| s.time).min().unwrap_or(0);
    let mut events = EventWriter {
        out: &mut out,
        written: 0,
    };
    events.out.write_all(b"{\"traceEvents\":[")?;

    // Names of processes and threads.
    let mut named_processes = std::collections::BTreeSet::new();
    for t in &profile.threads {
        if named_processes.insert(t.pid) {
            let name = profile
                .threads
                .iter()
                .find(|x| x.pid == t.pid && x.tid == t.pid)
                .unwrap_or(t);
            events.event(&json!({"name": "process_name", "ph": "M", "pid": t.pid,
                "tid": t.pid, "args": {"name": name.comm}}))?;
        }
        events.event(
            &json!({"name": "thread_name", "ph": "M", "pid": t.pid, "tid": t.tid,
            "args": {"name": t.comm}}),
        )?;
    }

    // Slices of the primary event, per thread.
    let primary = primary_event(profile).unwrap_or(0);
    let mut per_thread: BTreeMap<u32, Vec<&TimedSample>> = BTreeMap::new();
    for s in profile.timeline.iter().filter(|s| s.event == primary) {
        per_thread.entry(s.thread).or_default().push(s);
    }
    let clock = profile
        .events
        .get(primary as usize)
        .is_some_and(|e| e.unit == PeriodUnit::Nanoseconds);
    for (thread, mut samples) in per_thread {
        let Some(info) = profile.threads.get(thread as usize) else {
            continue;
        };
        samples.sort_by_key(|s| s.time);
        let median_gap = median_gap(&samples);
        let mut open: Vec<Open> = Vec::new();
        let mut end_of_last = None;
        let mut frames = Vec::new();
        for (i, s) in samples.iter().enumerate() {
            let cap = if clock { s.period.max(1) } else { median_gap };
            let duration = match samples.get(i + 1) {
                Some(next) => (next.time - s.time).min(cap),
                None => cap,
            };
            if end_of_last != Some(s.time) {
                if let Some(end) = end_of_last {
                    close(&mut events, profile, info, start, &mut open, 0, end)?;
                }
            }
            frames.clear();
            frames.extend(
                profile
                    .stack_frames(s.stack)
                    .iter()
                    .map(|(f, loc)| (f.function, loc.kernel)),
            );
            let common = open
                .iter()
                .zip(&frames)
                .take_while(|(o, f)| o.function == f.0 && o.kernel == f.1)
                .count();
            close(&mut events, profile, info, start, &mut open, common, s.time)?;
            for &(function, kernel) in &frames[common..] {
                open.push(Open {
                    function,
                    kernel,
                    start: s.time,
                    samples: 0,
                    period: 0,
                });
            }
            for o in &mut open {
                o.samples += 1;
                o.period += s.period;
            }
            end_of_last = Some(s.time + duration);
        }
        if let Some(end) = end_of_last {
            close(&mut events, profile, info, start, &mut open, 0, end)?;
        }
    }

    // The other events: period per millisecond, per process.
    let mut buckets: BTreeMap<(u32, i32, u64), u64> = BTreeMap::new();
    for s in profile.timeline.iter().filter(|s| s.event != primary) {
        if let Some(t) = profile.threads.get(s.thread as usize) {
            let bucket = (s.time - start) / COUNTER_BUCKET_NS;
            *buckets.entry((s.event, t.pid, bucket)).or_default() += s.period;
        }
    }
    let mut last: HashMap<(u32, i32), u64> = HashMap::new();
    for (&(event, pid, bucket), &period) in &buckets {
        let name = profile.events.get(event as usize).map_or("", |e| &e.name);
        // A zero after a gap, so the graph does not hold the last value across it.
        if let Some(&previous) = last.get(&(event, pid)) {
            if previous + 1 < bucket {
                events.event(&json!({"name": name, "ph": "C", "pid": pid,
                    "ts": micros((previous + 1) * COUNTER_BUCKET_NS), "args": {name: 0}}))?;
            }
        }
        events.event(&json!({"name": name, "ph": "C", "pid": pid,
            "ts": micros(bucket * COUNTER_BUCKET_NS), "args": {name: period}}))?;
        last.insert((event, pid), bucket);
    }

    let s = &profile.summary;
    let other = json!({
        "exporter": format!("culprit {}", env!("CARGO_PKG_VERSION")),
        "input": s.input,
        "hostname": s.hostname,
        "cmdline": s.cmdline,
        "event": profile.events.get(primary as usize).map(|e| e.name.as_str()),
    });
    write!(events.out, "],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut *events.out, &other).map_err(io::Error::from)?;
    events.out.write_all(b"}")?;
    let written = events.written;
    out.flush()?;
    Ok(written)
}

/// Writes comma-separated events.
struct EventWriter<'a, W: Write> {
    out: &'a mut W,
    written: u64,
}

impl<W: Write> EventWriter<'_, W> {
    fn event<T: Serialize>(&mut self, event: &T) -> io::Result<()> {
        if self.written > 0 {
            self.out.write_all(b",\n")?;
        }
        self.written += 1;
        serde_json::to_writer(&mut *self.out, event).map_err(io::Error::from)
    }
}

/// Closes the open slices from depth `keep` on (innermost first) at `end`.
fn close<W: Write>(
    events: &mut EventWriter<'_, W>,
    profile: &StackProfile,
    info: &ThreadInfo,
    start: u64,
    open: &mut Vec<Open>,
    keep: usize,
    end: u64,
) -> io::Result<()> {
    while open.len() > keep {
        let Some(o) = open.pop() else { break };
        let name = frame_name(profile, o.function);
        events.event(&Slice {
            name: &name,
            cat: if o.kernel { "kernel" } else { "user" },
            ph: "X",
            ts: micros(o.start - start),
            dur: micros(end.saturating_sub(o.start)),
            pid: info.pid,
            tid: info.tid,
            args: SliceArgs {
                samples: o.samples,
                period: o.period,
            },
        })?;
    }
    Ok(())
}

/// Nanoseconds as microseconds.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The median gap between consecutive samples (1 ms with fewer than two samples).
fn median_gap(samples: &[&TimedSample]) -> u64 {
    let mut gaps: Vec<u64> = samples
        .windows(2)
        .map(|w| w[1].time - w[0].time)
        .filter(|&g| g > 0)
        .collect();
    if gaps.is_empty() {
        return 1_000_000;
    }
    let middle = gaps.len() / 2;
    *gaps.select_nth_unstable(middle).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;
    use serde_json::Value;

    fn events(profile: &StackProfile) -> Vec<Value> {
        let mut bytes = Vec::new();
        write(profile, &mut bytes).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["displayTimeUnit"], "ns");
        v["traceEvents"].as_array().unwrap().clone()
    }

    /// Checks that the `X` slices of each thread nest, and returns per tid the samples and
    /// period of its outermost slices.
    pub(crate) fn check_slices(events: &[Value]) -> BTreeMap<i64, (u64, u64)> {
        let mut per_tid: BTreeMap<i64, Vec<(f64, f64, u64, u64)>> = BTreeMap::new();
        for e in events.iter().filter(|e| e["ph"] == "X") {
            per_tid
                .entry(e["tid"].as_i64().unwrap())
                .or_default()
                .push((
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                    e["args"]["samples"].as_u64().unwrap(),
                    e["args"]["period"].as_u64().unwrap(),
                ));
        }
        let mut totals = BTreeMap::new();
        for (tid, mut slices) in per_tid {
            slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
            let mut stack: Vec<(f64, f64, u64)> = Vec::new();
            let (mut samples, mut period) = (0, 0);
            for (ts, dur, n, p) in slices {
                assert!(dur > 0.0, "tid {tid}: slice at {ts} has no duration");
                while stack.last().is_some_and(|&(_, end, _)| end <= ts + 1e-6) {
                    stack.pop();
                }
                match stack.last_mut() {
                    Some(parent) => {
                        assert!(
                            ts + dur <= parent.1 + 1e-6,
                            "tid {tid}: slice at {ts} leaves its parent"
                        );
                        assert!(
                            n <= parent.2,
                            "tid {tid}: a child has more samples than its parent"
                        );
                    }
                    None => {
                        samples += n;
                        period += p;
                    }
                }
                stack.push((ts, ts + dur, n));
            }
            totals.insert(tid, (samples, period));
        }
        totals
    }

    #[test]
    fn test_write_slices_nest_and_cover_every_sample() {
        let model = testutil::profile();
        let events = events(&model);
        let totals = check_slices(&events);
        // cpu-clock samples per thread.
        assert_eq!(
            totals,
            BTreeMap::from([
                (100, (7, 7_000_000)),
                (101, (1, 1_000_000)),
                (200, (2, 2_000_000)),
            ])
        );
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == 101)
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["do_syscall", "helper", "work", "main"]);
        let kernel = events.iter().find(|e| e["name"] == "do_syscall").unwrap();
        assert_eq!(kernel["cat"], "kernel");
        let thread_names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(thread_names, ["prog", "prog", "other <b>"]);
        assert!(events
            .iter()
            .any(|e| e["args"]["name"] == "[libc.so.6]" || e["name"] == "[libc.so.6]"));
    }

    #[test]
    fn test_write_main_spans_consecutive_samples_of_one_thread() {
        let model = testutil::profile();
        let events = events(&model);
        // tid 100 alternates work and memcpy under main 1 ms apart (its own samples are
        // 2-3 ms apart, capped at the 1 ms period): each sample is its own run.
        let mains: Vec<u64> = events
            .iter()
            .filter(|e| e["name"] == "main" && e["tid"] == 100)
            .map(|e| e["args"]["samples"].as_u64().unwrap())
            .collect();
        assert_eq!(mains.iter().sum::<u64>(), 7);
        // Back to back samples of one stack: one slice per frame.
        let mut dense = testutil::profile();
        dense
            .timeline
            .retain(|s| s.thread == 0 && s.event == 0 && s.stack == 1);
        for (i, s) in dense.timeline.iter_mut().enumerate() {
            s.time = 1_000_000 + i as u64 * 1_000_000;
        }
        let events = events_of(&dense);
        let slices: Vec<(&str, u64)> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (
                    e["name"].as_str().unwrap(),
                    e["args"]["samples"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(slices, [("helper", 5), ("work", 5), ("main", 5)]);
    }

    fn events_of(profile: &StackProfile) -> Vec<Value> {
        events(profile)
    }

    #[test]
    fn test_write_other_events_are_counters() {
        let events = events(&testutil::profile());
        let counted: u64 = events
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "page-faults")
            .map(|e| e["args"]["page-faults"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, 7);
    }

    #[test]
    fn test_write_without_timeline_is_refused() {
        let mut model = testutil::profile();
        model.timeline.clear();
        assert!(matches!(
            write(&model, Vec::new()),
            Err(ExportError::Unsupported(_))
        ));
    }
}
