//! Firefox Profiler: the processed profile JSON that <https://profiler.firefox.com> opens
//! (File → Load a profile from file), written with `fxprof-processed-profile`, the crate
//! samply writes it with.
//!
//! What the file holds, from a [`StackProfile`] with its timeline:
//! - one process per pid (named after its main thread's command) and one thread track per
//!   thread of the primary event (the first in the file's order), every sample at its time;
//! - frames named with the function names (inlined functions as frames of their own,
//!   callers first): the symbols are in the file, the profile is marked symbolicated and
//!   needs no symbol server. Kernel frames have the `Kernel` category, others `User`.
//!   Code without a symbol is `[DSO file name]`;
//! - sample weights: the sample's period (nanoseconds for clock events, events otherwise),
//!   so the call tree's shares are the period shares of `culprit report`; clock events also
//!   give each sample that CPU time as its CPU delta (the activity graph);
//! - every other event as thread tracks of its own (`COMM EVENT`, same weights) and as a
//!   per-process counter track summing its period over time.
//!
//! Limits: the crates.io release of `fxprof-processed-profile` (0.8) writes processed format
//! version 55; the profiler upgrades it when loading. The perf clock is not wall time: the
//! profile's start is the Unix epoch plus the first sample's perf time. Weights are 32-bit:
//! a sample whose period passes 2^31 − 1 is written as several samples at the same time, at
//! most [`MAX_PIECES`]; a file with a larger period (a damaged one: 2^63 − 1) has every
//! weight divided by one factor instead, so the shares stay and the output stays bounded by
//! the samples (`culprit export` warns with the factor).

use std::io::{self, Write};
use std::time::Duration;

use culprit_analysis::stacks::{PeriodUnit, StackProfile, NONE};
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CounterHandle, CpuDelta, Frame, FrameFlags, FrameHandle,
    FrameInfo, ProcessHandle, Profile, ReferenceTimestamp, SamplingInterval, StackHandle,
    ThreadHandle, Timestamp,
};
use rustc_hash::FxHashMap;

use crate::common::{frame_name, primary_event};
use crate::ExportError;

/// Writes `profile` (built with its timeline) as Firefox Profiler JSON; returns the number
/// of samples written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> Result<u64, ExportError> {
    let (fx, samples) = build(profile)?;
    let mut out = io::BufWriter::new(out);
    serde_json::to_writer(&mut out, &fx).map_err(io::Error::from)?;
    out.flush()?;
    Ok(samples)
}

/// The Firefox Profiler profile of `profile` (built with its timeline) and the number of
/// samples in it.
pub fn build(profile: &StackProfile) -> Result<(Profile, u64), ExportError> {
    if profile.timeline.is_empty() && !profile.samples.is_empty() {
        return Err(ExportError::Unsupported(
            "the Firefox Profiler export needs every sample's time: build the stack profile with the timeline".to_string(),
        ));
    }
    let start = profile.timeline.iter().map(|s| s.time).min().unwrap_or(0);
    let primary_index = primary_event(profile);
    let primary = primary_index.and_then(|e| profile.events.get(e as usize));
    let interval = match primary {
        Some(e) if e.unit == PeriodUnit::Nanoseconds && e.samples > 0 => {
            SamplingInterval::from_nanos((e.period / e.samples).max(1))
        }
        _ => SamplingInterval::from_millis(1),
    };
    let product = profile
        .summary
        .cmdline
        .clone()
        .unwrap_or_else(|| profile.summary.input.clone());
    let mut fx = Profile::new(
        &product,
        ReferenceTimestamp::from_duration_since_unix_epoch(Duration::from_nanos(start)),
        interval,
    );
    if let Some(os) = &profile.summary.os_release {
        fx.set_os_name(&format!("Linux {os}"));
    }
    fx.set_symbolicated(true);
    let mut w = Writer {
        model: profile,
        start,
        user: fx.add_category("User", CategoryColor::Yellow).into(),
        kernel: fx.add_category("Kernel", CategoryColor::Orange).into(),
        fx,
        processes: FxHashMap::default(),
        tracks: vec![None; profile.threads.len() * profile.events.len()],
        counters: FxHashMap::default(),
        frames: FxHashMap::default(),
        stacks: FxHashMap::default(),
        samples: 0,
        primary: primary_index.unwrap_or(0),
    };
    let scale = weight_scale(profile);
    for s in &profile.timeline {
        // Rounded to the nearest, and at least 1 where the period is not 0.
        let period = match scale {
            1 => s.period,
            k => (s.period / k + u64::from(s.period % k >= k / 2)).max(u64::from(s.period > 0)),
        };
        w.add_sample(s.thread, s.event, s.stack, s.time, period);
    }
    Ok((w.fx, w.samples))
}

/// The most samples one sample is written as (each of weight up to 2^31 − 1).
pub const MAX_PIECES: u64 = 64;

/// What every weight is divided by so that the largest period needs at most [`MAX_PIECES`]
/// samples: 1 (exact weights) unless a period passes `MAX_PIECES × (2^31 − 1)`.
pub fn weight_scale(profile: &StackProfile) -> u64 {
    let max = profile.timeline.iter().map(|s| s.period).max().unwrap_or(0);
    max.div_ceil(MAX_PIECES * i32::MAX as u64).max(1)
}

/// Building state: handles of what was already added.
struct Writer<'a> {
    model: &'a StackProfile,
    /// The first sample's time: timestamps count from it.
    start: u64,
    fx: Profile,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    processes: FxHashMap<i32, ProcessHandle>,
    /// Per (model thread, event), at `thread * events + event`: the thread track.
    tracks: Vec<Option<ThreadHandle>>,
    /// Per (pid, event), for the events besides the primary one.
    counters: FxHashMap<(i32, u32), CounterHandle>,
    /// Per (track, function, kernel).
    frames: FxHashMap<(ThreadHandle, u32, bool), FrameHandle>,
    /// Per (track, stack node): its innermost frame's stack.
    stacks: FxHashMap<(ThreadHandle, u32), StackHandle>,
    /// Samples added (a period past 2^31 − 1 adds several).
    samples: u64,
    /// The event of the threads' main tracks.
    primary: u32,
}

impl Writer<'_> {
    fn timestamp(&self, time: u64) -> Timestamp {
        Timestamp::from_nanos_since_reference(time.saturating_sub(self.start))
    }

    fn process(&mut self, pid: i32, time: u64) -> ProcessHandle {
        if let Some(&p) = self.processes.get(&pid) {
            return p;
        }
        let threads = &self.model.threads;
        let name = threads
            .iter()
            .find(|t| t.pid == pid && t.tid == pid)
            .or_else(|| threads.iter().find(|t| t.pid == pid))
            .map_or("", |t| t.comm.as_str());
        let at = self.timestamp(time);
        let p = self.fx.add_process(name, pid as u32, at);
        self.processes.insert(pid, p);
        p
    }

    fn track(&mut self, thread: u32, event: u32, time: u64) -> Option<ThreadHandle> {
        let slot = thread as usize * self.model.events.len() + event as usize;
        if let Some(&Some(t)) = self.tracks.get(slot) {
            return Some(t);
        }
        if event as usize >= self.model.events.len() {
            return None;
        }
        let info = self.model.threads.get(thread as usize)?;
        let process = self.process(info.pid, time);
        let at = self.timestamp(time);
        let first_event = event == self.primary;
        let is_main = first_event && info.tid == info.pid;
        let t = self.fx.add_thread(process, info.tid as u32, at, is_main);
        let name = if first_event {
            info.comm.clone()
        } else {
            let event = self
                .model
                .events
                .get(event as usize)
                .map_or("", |e| &e.name);
            format!("{} {event}", info.comm)
        };
        self.fx.set_thread_name(t, &name);
        if first_event {
            self.fx.add_initial_visible_thread(t);
        }
        if let Some(s) = self.tracks.get_mut(slot) {
            *s = Some(t);
        }
        Some(t)
    }

    fn frame(&mut self, track: ThreadHandle, function: u32, kernel: bool) -> FrameHandle {
        if let Some(&f) = self.frames.get(&(track, function, kernel)) {
            return f;
        }
        let name = frame_name(self.model, function);
        let label = self.fx.intern_string(&name);
        let info = FrameInfo {
            frame: Frame::Label(label),
            category_pair: if kernel { self.kernel } else { self.user },
            flags: FrameFlags::empty(),
        };
        let f = self.fx.intern_frame(track, info);
        self.frames.insert((track, function, kernel), f);
        f
    }

    /// The stack of a node on a track, its callers interned first.
    fn stack(&mut self, track: ThreadHandle, node: u32) -> Option<StackHandle> {
        // The nodes from `node` up to the first one already interned (or the root).
        let mut path = Vec::new();
        let mut n = node;
        let mut parent = None;
        while n != NONE {
            if let Some(&s) = self.stacks.get(&(track, n)) {
                parent = Some(s);
                break;
            }
            let Some(sn) = self.model.nodes.get(n as usize) else {
                break;
            };
            path.push(n);
            // Parents come before children in the tree: anything else would loop.
            if sn.parent != NONE && sn.parent >= n {
                break;
            }
            n = sn.parent;
        }
        for &n in path.iter().rev() {
            let loc = self.model.nodes[n as usize].location;
            if let Some(loc) = self.model.locations.get(loc as usize) {
                // Frames are innermost first; the stack grows from the caller.
                for fr in loc.frames.iter().rev() {
                    let frame = self.frame(track, fr.function, loc.kernel);
                    parent = Some(self.fx.intern_stack(track, parent, frame));
                }
            }
            if let Some(s) = parent {
                self.stacks.insert((track, n), s);
            }
        }
        parent
    }

    fn add_sample(&mut self, thread: u32, event: u32, node: u32, time: u64, period: u64) {
        let Some(track) = self.track(thread, event, time) else {
            return;
        };
        let stack = self.stack(track, node);
        let at = self.timestamp(time);
        let clock = self
            .model
            .events
            .get(event as usize)
            .is_some_and(|e| e.unit == PeriodUnit::Nanoseconds);
        let mut left = period;
        loop {
            let weight = left.min(i32::MAX as u64);
            left -= weight;
            let cpu = if clock {
                CpuDelta::from_nanos(weight)
            } else {
                CpuDelta::ZERO
            };
            self.fx.add_sample(track, at, stack, cpu, weight as i32);
            self.samples += 1;
            if left == 0 {
                break;
            }
        }
        if event != self.primary {
            self.count(thread, event, at, period);
        }
    }

    /// Adds `period` to the counter of the thread's process for `event`.
    fn count(&mut self, thread: u32, event: u32, at: Timestamp, period: u64) {
        let Some(info) = self.model.threads.get(thread as usize) else {
            return;
        };
        let pid = info.pid;
        let counter = match self.counters.get(&(pid, event)) {
            Some(&c) => c,
            None => {
                let Some(&process) = self.processes.get(&pid) else {
                    return;
                };
                let name = self
                    .model
                    .events
                    .get(event as usize)
                    .map_or("", |e| &e.name);
                let c = self.fx.add_counter(
                    process,
                    name,
                    "perf event",
                    &format!("{name}: period per sample"),
                );
                self.counters.insert((pid, event), c);
                c
            }
        };
        self.fx.add_counter_sample(counter, at, period as f64, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;
    use serde_json::Value;

    fn json(profile: &StackProfile) -> Value {
        let mut bytes = Vec::new();
        write(profile, &mut bytes).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// (thread name, tid) → (samples, summed weight, function names of the thread).
    fn tracks(v: &Value) -> Vec<(String, String, u64, u64, Vec<String>)> {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let samples = &t["samples"];
                let weights: u64 = samples["weight"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_u64().unwrap())
                    .sum();
                let strings = t["stringArray"].as_array().unwrap();
                let names = t["funcTable"]["name"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| {
                        strings[i.as_u64().unwrap() as usize]
                            .as_str()
                            .unwrap()
                            .to_string()
                    })
                    .collect();
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["tid"].as_str().unwrap().to_string(),
                    samples["length"].as_u64().unwrap(),
                    weights,
                    names,
                )
            })
            .collect()
    }

    #[test]
    fn test_write_tracks_per_thread_and_event_with_period_weights() {
        let model = testutil::profile();
        let v = json(&model);
        assert_eq!(v["meta"]["symbolicated"], true);
        let mut got = tracks(&v);
        got.sort();
        let summary: Vec<(&str, &str, u64, u64)> = got
            .iter()
            .map(|t| (t.0.as_str(), t.1.as_str(), t.2, t.3))
            .collect();
        assert_eq!(
            summary,
            [
                ("other <b>", "200", 2, 2_000_000),
                ("prog", "100", 7, 7_000_000),
                ("prog", "101", 1, 1_000_000),
                ("prog page-faults", "100.1", 3, 3),
                ("prog page-faults", "101.1", 1, 4),
            ]
        );
        let prog_101 = &got.iter().find(|t| t.1 == "101").unwrap().4;
        assert_eq!(prog_101, &["main", "work", "helper", "do_syscall"]);
        let other = &got.iter().find(|t| t.1 == "200").unwrap().4;
        assert_eq!(other, &["[libc.so.6]"]);
        let counters = v["counters"].as_array().unwrap();
        assert_eq!(counters.len(), 1);
        assert_eq!(counters[0]["name"], "page-faults");
        let counted: f64 = counters[0]["samples"]["count"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_f64().unwrap())
            .sum();
        assert_eq!(counted, 7.0);
    }

    #[test]
    fn test_write_splits_weights_past_i32() {
        let mut model = testutil::profile();
        model.timeline.truncate(1);
        let big = 5_000_000_000u64;
        model.timeline[0].period = big;
        let got = tracks(&json(&model));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].2, got[0].3), (3, big));
    }

    #[test]
    fn test_write_bounds_a_huge_period() {
        let mut model = testutil::profile();
        model.timeline.truncate(2);
        model.timeline[0].period = i64::MAX as u64;
        let small = model.timeline[1].period;
        let started = std::time::Instant::now();
        let mut out = Vec::new();
        let samples = write(&model, &mut out).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(samples <= 2 * MAX_PIECES, "{samples} samples");
        assert!(out.len() < 1 << 20, "{} bytes", out.len());
        // One factor for every weight: the huge sample keeps (nearly) all the share, the
        // small one at least 1.
        let scale = weight_scale(&model);
        assert!(scale > 1);
        let got = tracks(&json(&model));
        let total: u64 = got.iter().map(|t| t.3).sum();
        let expected = (i64::MAX as u64).div_ceil(scale) + (small / scale).max(1);
        assert!(total.abs_diff(expected) <= 2, "{total} vs {expected}");
    }

    #[test]
    fn test_write_without_timeline_is_refused() {
        let mut model = testutil::profile();
        model.timeline.clear();
        let err = write(&model, Vec::new()).unwrap_err();
        assert!(matches!(err, ExportError::Unsupported(_)), "{err}");
    }
}
