//! Chrome trace events: the JSON object format (`{"traceEvents": [...]}`) that
//! chrome://tracing, the Perfetto UI (<https://ui.perfetto.dev>) and Chrome DevTools open,
//! here a flame chart of the samples over time.
//!
//! What the file holds:
//! - `M` (metadata) events naming each process (pid) and thread (tid) by its command, written
//!   at the thread's first sample (a process is named by its main thread once that is seen);
//! - for the primary event (the first in the file's order), per thread, complete (`X`)
//!   slices: one per function and run of consecutive samples that have it at the same depth
//!   below the same callers (so a slice of `main` spans every sample under `main`). A sample
//!   lasts from its time to the thread's next sample, at most its period for clock events or
//!   otherwise the median of the thread's last gaps between samples ([`GAP_WINDOW`]); a
//!   longer gap ends every open slice. Each slice carries `samples` and `period` (the sum of
//!   its samples' periods) in `args`; kernel frames have category `kernel`, others `user`;
//!   inlined functions are slices of their own;
//! - every other event as a counter (`C`) track per process, the period summed per
//!   millisecond.
//!
//! The file is written as the samples are read ([`export`]): each event is written when its
//! slice closes or its millisecond ends, and nothing is kept per sample (memory follows the
//! threads, processes and distinct code addresses), so an endless stream on stdin gives an
//! endless, valid-so-far trace. Events are therefore in the order they end, threads
//! interleaved; the viewers sort them.
//!
//! Times (`ts`, `dur`) are microseconds from the first sample, with nanosecond decimals. A
//! sample older than its thread's previous one (samples of a thread that moved between
//! CPUs, in a stream perf did not sort) counts at the previous one's time.
//!
//! Limits: slices show where samples landed, not traced call times; the durations come from
//! the sampling interval. Without samples there are no slices.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use culprit_analysis::stacks::{period_unit, PeriodUnit, StackBuilder, StackOptions, StackProfile};
use culprit_decode::abi::perf_type;
use culprit_decode::model::Profile;
use culprit_symbols::{ProfileInput, Symbolizer};
use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::json;

use crate::common::{frame_name, primary_event, stream_stacks, StreamedSample};
use crate::ExportError;

/// Counter buckets: 1 ms of perf time.
const COUNTER_BUCKET_NS: u64 = 1_000_000;

/// Gaps between a thread's samples whose median caps a sample's duration (non-clock events):
/// the last ones, so the cap follows the sampling rate without keeping every gap.
pub const GAP_WINDOW: usize = 31;

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

/// The names of the functions the trace's frames refer to.
trait FunctionNames {
    /// The display name of `function`.
    fn name(&self, function: u32) -> Cow<'_, str>;
}

impl FunctionNames for StackProfile {
    fn name(&self, function: u32) -> Cow<'_, str> {
        frame_name(self, function)
    }
}

/// One sample as the trace takes it.
struct Tick<'a> {
    time: u64,
    period: u64,
    /// The event (any numbering the caller keeps, the primary's included).
    event: u32,
    /// The thread (any numbering; one per pid, tid and command).
    thread: u32,
    pid: i32,
    tid: i32,
    comm: &'a str,
    /// Name of the event, for its counter track.
    event_name: &'a str,
    /// The stack's functions, root first, with their kernel flag.
    frames: &'a [(u32, bool)],
}

/// A thread's track: its open slices and the timing of its last sample.
struct Track {
    pid: i32,
    tid: i32,
    open: Vec<Open>,
    /// The last primary sample's time and its duration cap for clock events (its period).
    last: Option<(u64, u64)>,
    /// The last gaps between its samples (a ring of [`GAP_WINDOW`]).
    gaps: Vec<u64>,
    next_gap: usize,
}

impl Track {
    /// How long the last sample lasts at most: its period for clock events, else the
    /// median of the last gaps (1 ms before any).
    fn cap(&self, clock: bool, period: u64) -> u64 {
        if clock {
            return period.max(1);
        }
        if self.gaps.is_empty() {
            return 1_000_000;
        }
        let mut gaps = [0u64; GAP_WINDOW];
        let gaps = &mut gaps[..self.gaps.len()];
        gaps.copy_from_slice(&self.gaps);
        let middle = gaps.len() / 2;
        *gaps.select_nth_unstable(middle).1
    }

    fn note_gap(&mut self, gap: u64) {
        if gap == 0 {
            return;
        }
        if self.gaps.len() < GAP_WINDOW {
            self.gaps.push(gap);
        } else {
            self.gaps[self.next_gap] = gap;
        }
        self.next_gap = (self.next_gap + 1) % GAP_WINDOW;
    }
}

/// A counter track's current millisecond.
struct Counter {
    name: String,
    bucket: u64,
    period: u64,
}

/// The trace being written: everything it keeps is per thread, process or event.
struct Trace<W: Write> {
    out: W,
    /// Whether the opening of the object is written.
    started: bool,
    written: u64,
    /// Time of the first sample (`ts` 0).
    start: Option<u64>,
    /// The primary event and whether it counts time.
    primary: Option<(u32, bool)>,
    tracks: FxHashMap<u32, Track>,
    /// Processes named, and whether by their main thread.
    processes: HashMap<i32, bool>,
    /// Per (event, pid), in order for the last flush.
    counters: BTreeMap<(u32, i32), Counter>,
    /// Scratch for the frames of a sample.
    frames: Vec<(u32, bool)>,
}

impl<W: Write> Trace<W> {
    /// A trace to `out`; nothing is written before its first event (or its end), so a read
    /// that fails before any sample is kept (an unknown `-e`) leaves the output empty.
    fn begin(out: W) -> Trace<W> {
        Trace {
            out,
            started: false,
            written: 0,
            start: None,
            primary: None,
            tracks: FxHashMap::default(),
            processes: HashMap::new(),
            counters: BTreeMap::new(),
            frames: Vec::new(),
        }
    }

    /// Writes the opening of the object, once.
    fn start(&mut self) -> io::Result<()> {
        if !self.started {
            self.out.write_all(b"{\"traceEvents\":[")?;
            self.started = true;
        }
        Ok(())
    }

    /// Writes one comma-separated event.
    fn event<T: Serialize>(&mut self, event: &T) -> io::Result<()> {
        self.start()?;
        if self.written > 0 {
            self.out.write_all(b",\n")?;
        }
        self.written += 1;
        serde_json::to_writer(&mut self.out, event).map_err(io::Error::from)
    }

    /// Takes one sample: names its thread when new, closes the slices it ends and opens its
    /// own (primary event), or adds it to its counter (other events).
    fn sample(&mut self, s: &Tick<'_>, names: &dyn FunctionNames) -> io::Result<()> {
        let start = *self.start.get_or_insert(s.time);
        if !self.tracks.contains_key(&s.thread) {
            self.name_thread(s)?;
        }
        let Some((primary, clock)) = self.primary else {
            return Ok(());
        };
        if s.event != primary {
            return self.count(s, start);
        }
        let Some(mut track) = self.tracks.remove(&s.thread) else {
            return Ok(());
        };
        let mut time = s.time;
        if let Some((last, period)) = track.last {
            time = time.max(last);
            track.note_gap(time - last);
            let end_of_last = last + (time - last).min(track.cap(clock, period));
            if end_of_last != time {
                self.close(&mut track, start, 0, end_of_last, names)?;
            }
        }
        let common = track
            .open
            .iter()
            .zip(s.frames)
            .take_while(|(o, f)| o.function == f.0 && o.kernel == f.1)
            .count();
        self.close(&mut track, start, common, time, names)?;
        for &(function, kernel) in &s.frames[common..] {
            track.open.push(Open {
                function,
                kernel,
                start: time,
                samples: 0,
                period: 0,
            });
        }
        for o in &mut track.open {
            o.samples += 1;
            o.period += s.period;
        }
        track.last = Some((time, s.period));
        self.tracks.insert(s.thread, track);
        Ok(())
    }

    /// Names a new thread, and its process unless its main thread named it already.
    fn name_thread(&mut self, s: &Tick<'_>) -> io::Result<()> {
        let main = s.tid == s.pid;
        let named_by_main = self.processes.get(&s.pid).copied();
        if named_by_main.is_none() || (main && named_by_main == Some(false)) {
            self.event(&json!({"name": "process_name", "ph": "M", "pid": s.pid,
                "tid": s.pid, "args": {"name": s.comm}}))?;
            self.processes.insert(s.pid, main);
        }
        self.event(
            &json!({"name": "thread_name", "ph": "M", "pid": s.pid, "tid": s.tid,
            "args": {"name": s.comm}}),
        )?;
        self.tracks.insert(
            s.thread,
            Track {
                pid: s.pid,
                tid: s.tid,
                open: Vec::new(),
                last: None,
                gaps: Vec::new(),
                next_gap: 0,
            },
        );
        Ok(())
    }

    /// Adds a sample of a counter event to its process's current millisecond; a later
    /// millisecond writes the current one (and a zero after a gap, so the graph does not
    /// hold the last value across it). A late sample counts in the current millisecond.
    fn count(&mut self, s: &Tick<'_>, start: u64) -> io::Result<()> {
        let bucket = s.time.saturating_sub(start) / COUNTER_BUCKET_NS;
        let key = (s.event, s.pid);
        let Some(c) = self.counters.get_mut(&key) else {
            self.counters.insert(
                key,
                Counter {
                    name: s.event_name.to_string(),
                    bucket,
                    period: s.period,
                },
            );
            return Ok(());
        };
        if bucket <= c.bucket {
            c.period += s.period;
            return Ok(());
        }
        let (name, previous, period) = (c.name.clone(), c.bucket, c.period);
        c.bucket = bucket;
        c.period = s.period;
        self.counter_event(&name, s.pid, previous, period)?;
        if previous + 1 < bucket {
            self.counter_event(&name, s.pid, previous + 1, 0)?;
        }
        Ok(())
    }

    fn counter_event(&mut self, name: &str, pid: i32, bucket: u64, period: u64) -> io::Result<()> {
        self.event(&json!({"name": name, "ph": "C", "pid": pid,
            "ts": micros(bucket * COUNTER_BUCKET_NS), "args": {name: period}}))
    }

    /// Closes the open slices of `track` from depth `keep` on (innermost first) at `end`.
    fn close(
        &mut self,
        track: &mut Track,
        start: u64,
        keep: usize,
        end: u64,
        names: &dyn FunctionNames,
    ) -> io::Result<()> {
        while track.open.len() > keep {
            let Some(o) = track.open.pop() else { break };
            let name = names.name(o.function);
            self.event(&Slice {
                name: &name,
                cat: if o.kernel { "kernel" } else { "user" },
                ph: "X",
                ts: micros(o.start.saturating_sub(start)),
                dur: micros(end.saturating_sub(o.start)),
                pid: track.pid,
                tid: track.tid,
                args: SliceArgs {
                    samples: o.samples,
                    period: o.period,
                },
            })?;
        }
        Ok(())
    }

    /// Ends every open slice and counter, writes the trailer; returns the events written.
    fn end(mut self, names: &dyn FunctionNames, other: &serde_json::Value) -> io::Result<(u64, W)> {
        let start = self.start.unwrap_or(0);
        let clock = self.primary.is_some_and(|p| p.1);
        // In thread order (of first sample) for a stable file.
        let mut threads: Vec<u32> = self.tracks.keys().copied().collect();
        threads.sort_unstable();
        for thread in threads {
            let Some(mut track) = self.tracks.remove(&thread) else {
                continue;
            };
            if let Some((last, period)) = track.last {
                let end = last + track.cap(clock, period);
                self.close(&mut track, start, 0, end, names)?;
            }
        }
        for ((_, pid), c) in std::mem::take(&mut self.counters) {
            self.counter_event(&c.name, pid, c.bucket, c.period)?;
        }
        self.start()?;
        write!(self.out, "],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut self.out, other).map_err(io::Error::from)?;
        self.out.write_all(b"}")?;
        self.out.flush()?;
        Ok((self.written, self.out))
    }
}

/// The trailer's `otherData`.
fn other_data(
    input: &str,
    hostname: Option<&str>,
    cmdline: Option<&str>,
    event: Option<&str>,
) -> serde_json::Value {
    json!({
        "exporter": format!("culprit {}", env!("CARGO_PKG_VERSION")),
        "input": input,
        "hostname": hostname,
        "cmdline": cmdline,
        "event": event,
    })
}

/// Writes `profile` (built with its timeline) as Chrome trace-event JSON, its samples in
/// timeline order as [`export`] would stream them; returns the number of trace events
/// written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> Result<u64, ExportError> {
    if profile.timeline.is_empty() && !profile.samples.is_empty() {
        return Err(ExportError::Unsupported(
            "the Chrome trace export needs every sample's time: build the stack profile with the timeline".to_string(),
        ));
    }
    let mut trace = Trace::begin(io::BufWriter::new(out));
    let primary = primary_event(profile).unwrap_or(0);
    let clock = profile
        .events
        .get(primary as usize)
        .is_some_and(|e| e.unit == PeriodUnit::Nanoseconds);
    trace.primary = Some((primary, clock));
    let mut frames = Vec::new();
    for s in &profile.timeline {
        let Some(info) = profile.threads.get(s.thread as usize) else {
            continue;
        };
        frames.clear();
        if s.event == primary {
            frames.extend(
                profile
                    .stack_frames(s.stack)
                    .iter()
                    .map(|(f, loc)| (f.function, loc.kernel)),
            );
        }
        let tick = Tick {
            time: s.time,
            period: s.period,
            event: s.event,
            thread: s.thread,
            pid: info.pid,
            tid: info.tid,
            comm: &info.comm,
            event_name: profile.events.get(s.event as usize).map_or("", |e| &e.name),
            frames: &frames,
        };
        trace.sample(&tick, profile)?;
    }
    let summary = &profile.summary;
    let other = other_data(
        &summary.input,
        summary.hostname.as_deref(),
        summary.cmdline.as_deref(),
        profile
            .events
            .get(primary as usize)
            .map(|e| e.name.as_str()),
    );
    let (written, _) = trace.end(profile, &other)?;
    Ok(written)
}

/// Function names of a streamed trace: interned as their locations are first named.
#[derive(Default)]
struct StreamNames {
    /// Per location id of the builder: its frames (function id, kernel), root first.
    locations: Vec<Option<Vec<(u32, bool)>>>,
    /// Per (name, DSO): the function id.
    ids: FxHashMap<(Option<String>, Option<u32>), u32>,
    names: Vec<String>,
}

impl FunctionNames for StreamNames {
    fn name(&self, function: u32) -> Cow<'_, str> {
        Cow::Borrowed(
            self.names
                .get(function as usize)
                .map_or("[unknown]", String::as_str),
        )
    }
}

impl StreamNames {
    /// The frames of location `location`, named on first use.
    fn location(
        &mut self,
        builder: &StackBuilder,
        profile: &Profile,
        symbolizer: &mut Symbolizer,
        location: u32,
    ) -> &[(u32, bool)] {
        let i = location as usize;
        if self.locations.len() <= i {
            self.locations.resize(i + 1, None);
        }
        if self.locations[i].is_none() {
            let named = builder.name_location(profile, symbolizer, location);
            let frames = named
                .functions
                .into_iter()
                .map(|function| {
                    let next = self.names.len() as u32;
                    let key = (function, named.dso);
                    let id = match self.ids.get(&key) {
                        Some(&id) => id,
                        None => {
                            self.names.push(display_name(profile, &key.0, named.dso));
                            self.ids.insert(key, next);
                            next
                        }
                    };
                    (id, named.kernel)
                })
                .collect();
            self.locations[i] = Some(frames);
        }
        self.locations[i].as_deref().unwrap_or(&[])
    }
}

/// A frame's name as [`frame_name`] gives it: the function's, or for code without a symbol
/// its file's name in brackets.
fn display_name(profile: &Profile, function: &Option<String>, dso: Option<u32>) -> String {
    match (function, dso.and_then(|d| profile.dsos.get(d as usize))) {
        (Some(name), _) => name.clone(),
        (None, Some(d)) => format!("[{}]", d.path.rsplit('/').next().unwrap_or(&d.path)),
        (None, None) => "[unknown]".to_string(),
    }
}

/// The primary event of a streamed trace: the first sampling event of the file kept by the
/// options (a `dummy` tracking event has no samples of its own), with whether it counts time.
fn stream_primary(profile: &Profile, opts: &StackOptions) -> Option<(u32, bool, String)> {
    // PERF_COUNT_SW_DUMMY
    const SW_DUMMY: u64 = 9;
    profile
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| !(e.attr_type == perf_type::SOFTWARE && e.config == SW_DUMMY))
        .find(|(_, e)| opts.events.is_empty() || opts.events.iter().any(|w| e.matches(w)))
        .map(|(i, e)| {
            (
                i as u32,
                period_unit(e) == PeriodUnit::Nanoseconds,
                e.name.clone(),
            )
        })
}

/// Nanoseconds as microseconds.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// What a streamed export wrote, and the profile of what it read.
pub struct Streamed {
    /// The stack profile of the samples (no timeline), for the export's summary.
    pub profile: StackProfile,
    /// Trace events written.
    pub records: u64,
}

/// Reads `input` and writes its Chrome trace to `out` as the samples come (see the module
/// documentation); `progress(done, total)` reports bytes read. The trace written before an
/// error is left as it is.
pub fn export(
    input: &ProfileInput,
    opts: &StackOptions,
    out: &mut dyn Write,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<Streamed, ExportError> {
    let mut trace = Trace::begin(io::BufWriter::with_capacity(1 << 16, out));
    let mut names = StreamNames::default();
    let mut primary_name = None;
    let stacks = stream_stacks(input, opts, progress, |streamed| {
        stream_sample(&mut trace, &mut names, &mut primary_name, streamed, opts)
    })?;
    let s = &stacks.summary;
    let other = other_data(
        &s.input,
        s.hostname.as_deref(),
        s.cmdline.as_deref(),
        primary_name.as_deref(),
    );
    let (records, mut out) = trace.end(&names, &other)?;
    out.flush()?;
    Ok(Streamed {
        profile: stacks,
        records,
    })
}

/// Writes what one sample (as the stack model counted it) ends to `trace`.
fn stream_sample<W: Write>(
    trace: &mut Trace<W>,
    names: &mut StreamNames,
    primary_name: &mut Option<String>,
    (builder, symbolizer, profile, sample, timed): StreamedSample<'_>,
    opts: &StackOptions,
) -> io::Result<()> {
    if trace.primary.is_none() {
        if let Some((id, clock, name)) = stream_primary(profile, opts) {
            trace.primary = Some((id, clock));
            *primary_name = Some(name);
        }
    }
    let event = u32::from(sample.event);
    let mut frames = std::mem::take(&mut trace.frames);
    frames.clear();
    if trace.primary.is_some_and(|p| p.0 == event) {
        // Leaf first from the builder; each location's frames are outermost first.
        let locations: Vec<u32> = builder.stack_location_ids(timed.stack).collect();
        for &location in locations.iter().rev() {
            frames.extend_from_slice(names.location(builder, profile, symbolizer, location));
        }
    }
    let info = profile.events.get(usize::from(sample.event));
    let tick = Tick {
        time: sample.time,
        period: sample.period,
        event,
        thread: timed.thread,
        pid: sample.pid,
        tid: sample.tid,
        comm: profile.str(sample.comm),
        event_name: info.map_or("", |e| e.name.as_str()),
        frames: &frames,
    };
    let result = trace.sample(&tick, names);
    trace.frames = frames;
    result
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
