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

/// The last recorded wake-up of a thread: when, and the waker's command and stack.
struct Waking {
    time: u64,
    pid: i32,
    comm: String,
    frames: Vec<Frame>,
}

/// The events the pairing reads: `offcpu-time` and `sched:sched_waking`.
#[derive(Clone, Copy)]
struct WakerEvents {
    offcpu: usize,
    waking: usize,
}

fn waker_events(profile: &Profile) -> Option<WakerEvents> {
    let offcpu = profile.events.iter().position(|e| e.name == "offcpu-time")?;
    let waking = (0..profile.events.len()).find(|&i| {
        profile
            .tracepoint_format(i as _)
            .is_some_and(|f| f.system == "sched" && f.name == "sched_waking")
    })?;
    Some(WakerEvents { offcpu, waking })
}

/// The row key: blocked site, blocked command, waker command, waker stack.
type RowKey = (String, String, String, Vec<String>);

/// Pairs blocked intervals with their wakers sample by sample (see the module
/// documentation), as a file or stream is read: it keeps the last wake-up per thread and
/// the rows, nothing per sample, so an endless stream stays bounded.
#[derive(Default)]
pub struct WakersTracker {
    events: Option<WakerEvents>,
    last_waking: HashMap<i32, Waking>,
    namer: Namer,
    rows: HashMap<RowKey, (u64, u64)>,
    intervals: u64,
    with_waker: u64,
}

impl WakersTracker {
    /// Adds one sample of `profile` (read so far), naming frames with `sym`.
    pub fn sample(&mut self, profile: &Profile, sym: &mut Symbolizer, s: &Sample) {
        // The events are known once the attrs and the tracing data are read (before any
        // sample in a file or a perf pipe).
        if self.events.is_none() {
            self.events = waker_events(profile);
        }
        let Some(ev) = self.events else { return };
        if s.event as usize == ev.waking {
            if let Some(wakee) = waking_pid(profile, s) {
                self.last_waking.insert(
                    wakee,
                    Waking {
                        time: s.time,
                        pid: s.pid,
                        comm: profile.str(s.comm).to_string(),
                        frames: profile.callchain(s).to_vec(),
                    },
                );
            }
            return;
        }
        if s.event as usize != ev.offcpu {
            return;
        }
        self.intervals += 1;
        let start = s.time.saturating_sub(s.period);
        let waker = self
            .last_waking
            .remove(&s.tid)
            .filter(|w| w.time >= start && w.time <= s.time);
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
        if self.events.or_else(|| waker_events(profile)).is_none() {
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
