//! Who woke each blocked stack (`culprit sched wakers`), from a `culprit record
//! --off-cpu=wakers` file: each `offcpu-time` sample (a blocked interval of a thread, timed at
//! its switch-in, its period the time off the CPU, its call chain where it blocked) is paired
//! with the last `sched:sched_waking` sample for that thread inside the interval (taken in the
//! waker's context: its comm and stack). Wake-ups by tasks outside the recording (or from
//! interrupts of them) are not in the file: those intervals show as woken by `[unknown]`.

use std::collections::HashMap;

use culprit_decode::model::{CpuMode, Frame, Profile, Sample};
use culprit_decode::tracepoint::FieldValue;
use culprit_symbols::Symbolizer;
use serde::Serialize;

use crate::offenders::report::Place;
use crate::AnalysisError;

/// One (blocked site, waker, waker stack) row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WakerRow {
    /// Where the thread blocked: its first user frame outside the C library (else its first
    /// frame).
    pub blocked_in: String,
    /// The blocked thread's command.
    pub blocked_comm: String,
    /// The waker's command (`[unknown]`: no wake-up recorded in the interval).
    pub waker_comm: String,
    /// The waker's stack, innermost first (user frames; kernel frames when it has none).
    pub waker_stack: Vec<String>,
    /// Blocked intervals.
    pub count: u64,
    /// Their time off the CPU, ns.
    pub total_ns: u64,
}

/// The report of [`wakers`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WakersReport {
    /// Rows, longest total first.
    pub rows: Vec<WakerRow>,
    /// Blocked intervals in the file.
    pub intervals: u64,
    /// Of them, paired with a recorded wake-up.
    pub with_waker: u64,
}

/// Version of `culprit sched wakers --format json` (docs/schemas/sched-wakers.schema.json).
pub const WAKERS_SCHEMA: u32 = 1;

/// `culprit sched wakers`: text, and JSON with [`WAKERS_SCHEMA`].
pub type WakersJson<'a> = culprit_output::LinesReport<'a, WakersReport>;

fn in_libc(p: &Place) -> bool {
    ["libc", "libpthread", "ld-linux"]
        .iter()
        .any(|l| p.dso.starts_with(l))
}

fn frame_name(p: &Place) -> String {
    p.symbol
        .clone()
        .unwrap_or_else(|| format!("[{}]+{:#x}", p.dso, p.addr))
}

/// Names frames, memoized by (pid, address): bounded by the distinct addresses sampled.
#[derive(Default)]
struct Namer {
    cache: HashMap<(i32, u64), Place>,
}

impl Namer {
    fn places(
        &mut self,
        profile: &Profile,
        sym: &mut Symbolizer,
        pid: i32,
        frames: &[Frame],
        user_only: bool,
    ) -> Vec<Place> {
        frames
            .iter()
            .filter(|f| !user_only || matches!(f.cpumode, CpuMode::User))
            .map(|f| {
                self.cache
                    .entry((pid, f.addr))
                    .or_insert_with(|| Place::of(profile, sym, f.location, pid))
                    .clone()
            })
            .collect()
    }
}

/// The waker's command and stack at a recorded wake-up.
struct Waking {
    pid: i32,
    comm: String,
    frames: Vec<Frame>,
}

/// The events the pairing reads: `offcpu-time` and `sched:sched_waking`.
#[derive(Debug, Clone, Copy)]
struct WakerEvents {
    offcpu: usize,
    waking: usize,
}

fn waker_events(profile: &Profile) -> Option<WakerEvents> {
    let offcpu = profile
        .events
        .iter()
        .position(|e| e.name == "offcpu-time")?;
    let waking = (0..profile.events.len()).find(|&i| {
        profile
            .tracepoint_format(i as _)
            .is_some_and(|f| f.system == "sched" && f.name == "sched_waking")
    })?;
    Some(WakerEvents { offcpu, waking })
}

/// What a sample is to the pairing of blocked intervals with their wakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakerSample {
    /// A `sched:sched_waking` sample, taken in the waker's context, waking `wakee`.
    Waking {
        /// The woken thread.
        wakee: i32,
    },
    /// An `offcpu-time` sample: its thread was off the CPU over `[time - period, time]`.
    Blocked,
}

/// Tells the samples of a `culprit record --off-cpu=wakers` file apart (see
/// [`WakerSample`]); a file without both events has none.
#[derive(Debug, Default)]
pub struct WakerSamples {
    events: Option<WakerEvents>,
}

impl WakerSamples {
    /// What `s` of `profile` (read so far) is to the pairing, if anything.
    pub fn classify(&mut self, profile: &Profile, s: &Sample) -> Option<WakerSample> {
        // The events are known once the attrs and the tracing data are read (before any
        // sample in a file or a perf pipe).
        if self.events.is_none() {
            self.events = waker_events(profile);
        }
        let ev = self.events?;
        if s.event as usize == ev.waking {
            waking_pid(profile, s).map(|wakee| WakerSample::Waking { wakee })
        } else if s.event as usize == ev.offcpu {
            Some(WakerSample::Blocked)
        } else {
            None
        }
    }

    /// Whether the events were found.
    pub fn found(&self) -> bool {
        self.events.is_some()
    }
}

/// The pairing rule of the module documentation: each thread's last recorded wake-up
/// (`W`: what the caller keeps of it), taken by the thread's next blocked interval when it
/// falls inside it. Bounded by the threads, whatever the samples.
#[derive(Debug)]
pub struct WakeupPairing<W> {
    last: HashMap<i32, (u64, W)>,
}

impl<W> Default for WakeupPairing<W> {
    fn default() -> Self {
        WakeupPairing {
            last: HashMap::new(),
        }
    }
}

impl<W> WakeupPairing<W> {
    /// A wake-up of `wakee` at `time`.
    pub fn waking(&mut self, wakee: i32, time: u64, waker: W) {
        self.last.insert(wakee, (time, waker));
    }

    /// The waker of `tid`'s blocked interval `[start, end]`: its last wake-up, when inside.
    pub fn blocked(&mut self, tid: i32, start: u64, end: u64) -> Option<W> {
        self.last
            .remove(&tid)
            .filter(|&(t, _)| t >= start && t <= end)
            .map(|(_, w)| w)
    }
}

/// The row key: blocked site, blocked command, waker command, waker stack.
type RowKey = (String, String, String, Vec<String>);

/// Pairs blocked intervals with their wakers sample by sample (see the module
/// documentation), as a file or stream is read: it keeps the last wake-up per thread and
/// the rows, nothing per sample, so an endless stream stays bounded.
#[derive(Default)]
pub struct WakersTracker {
    samples: WakerSamples,
    pairing: WakeupPairing<Waking>,
    namer: Namer,
    rows: HashMap<RowKey, (u64, u64)>,
    intervals: u64,
    with_waker: u64,
}

impl WakersTracker {
    /// Adds one sample of `profile` (read so far), naming frames with `sym`.
    pub fn sample(&mut self, profile: &Profile, sym: &mut Symbolizer, s: &Sample) {
        match self.samples.classify(profile, s) {
            Some(WakerSample::Waking { wakee }) => {
                let waking = Waking {
                    pid: s.pid,
                    comm: profile.str(s.comm).to_string(),
                    frames: profile.callchain(s).to_vec(),
                };
                self.pairing.waking(wakee, s.time, waking);
            }
            Some(WakerSample::Blocked) => self.blocked(profile, sym, s),
            None => {}
        }
    }

    fn blocked(&mut self, profile: &Profile, sym: &mut Symbolizer, s: &Sample) {
        self.intervals += 1;
        let waker = self
            .pairing
            .blocked(s.tid, s.time.saturating_sub(s.period), s.time);
        let blocked = self
            .namer
            .places(profile, sym, s.pid, profile.callchain(s), false);
        let blocked_in = blocked
            .iter()
            .find(|p| !in_libc(p) && !p.dso.starts_with("[kernel"))
            .or(blocked.first())
            .map(frame_name)
            .unwrap_or_else(|| "[unknown]".to_string());
        let (waker_comm, waker_stack) = match waker {
            Some(w) => {
                self.with_waker += 1;
                let mut stack = self.namer.places(profile, sym, w.pid, &w.frames, true);
                if stack.is_empty() {
                    stack = self.namer.places(profile, sym, w.pid, &w.frames, false);
                }
                (w.comm, stack.iter().map(frame_name).collect())
            }
            None => ("[unknown]".to_string(), Vec::new()),
        };
        let key = (
            blocked_in,
            profile.str(s.comm).to_string(),
            waker_comm,
            waker_stack,
        );
        let e = self.rows.entry(key).or_insert((0, 0));
        e.0 += 1;
        e.1 += s.period;
    }

    /// The report; an error when `profile` (read whole) lacks the events.
    pub fn finish(self, profile: &Profile) -> Result<WakersReport, AnalysisError> {
        if !self.samples.found() && waker_events(profile).is_none() {
            return Err(AnalysisError::NoData(
                "the file has no offcpu-time and sched:sched_waking samples: record with \
                 `culprit record --off-cpu=wakers -- CMD`"
                    .to_string(),
            ));
        }
        let mut rows: Vec<WakerRow> = self
            .rows
            .into_iter()
            .map(
                |((blocked_in, blocked_comm, waker_comm, waker_stack), (count, total_ns))| {
                    WakerRow {
                        blocked_in,
                        blocked_comm,
                        waker_comm,
                        waker_stack,
                        count,
                        total_ns,
                    }
                },
            )
            .collect();
        rows.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.blocked_in.cmp(&b.blocked_in))
                .then_with(|| a.waker_stack.cmp(&b.waker_stack))
        });
        Ok(WakersReport {
            rows,
            intervals: self.intervals,
            with_waker: self.with_waker,
        })
    }
}

/// The woken thread of a `sched_waking` sample (its `pid` field).
fn waking_pid(profile: &Profile, s: &Sample) -> Option<i32> {
    let f = profile.tracepoint_format(s.event as _)?;
    match f.field("pid")?.read(profile.raw(s), f.big_endian)? {
        FieldValue::Signed(p) => Some(p as i32),
        FieldValue::Unsigned(p) => Some(p as i32),
        _ => None,
    }
}

/// Pairs the blocked intervals of `profile` (read whole) with their wakers: the
/// [`WakersTracker`] over its samples.
pub fn wakers(profile: &Profile, sym: &mut Symbolizer) -> Result<WakersReport, AnalysisError> {
    let mut t = WakersTracker::default();
    for s in &profile.samples {
        t.sample(profile, sym, s);
    }
    t.finish(profile)
}

impl culprit_output::TextLines for WakersReport {
    /// Text: one line per row, then the waker's stack indented.
    fn text_lines(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "# {} blocked intervals, {} with a recorded wake-up",
                self.intervals, self.with_waker
            ),
            format!(
                "{:>12} {:>7}  {:<28} {:<16} {}",
                "off-CPU", "count", "blocked in", "comm", "woken by"
            ),
        ];
        for r in &self.rows {
            out.push(format!(
                "{:>12} {:>7}  {:<28} {:<16} {}",
                crate::lock::perf_time(r.total_ns, 12).trim_start(),
                r.count,
                r.blocked_in,
                r.blocked_comm,
                r.waker_comm
            ));
            for f in &r.waker_stack {
                out.push(format!("{:>60}{f}", ""));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_wake_up_ends_the_next_interval_of_its_thread_only_when_inside_it() {
        let mut p = WakeupPairing::default();
        p.waking(7, 50, "w1");
        // Another thread's interval does not take it.
        assert_eq!(p.blocked(8, 0, 100), None);
        assert_eq!(p.blocked(7, 0, 100), Some("w1"));
        // Taken once.
        assert_eq!(p.blocked(7, 0, 100), None);
        // A later wake-up replaces an earlier one; one outside the interval is dropped.
        p.waking(7, 10, "w2");
        p.waking(7, 20, "w3");
        assert_eq!(p.blocked(7, 15, 30), Some("w3"));
        p.waking(7, 200, "w4");
        assert_eq!(p.blocked(7, 300, 400), None);
        assert_eq!(p.blocked(7, 150, 250), None);
    }
}
