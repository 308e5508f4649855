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

/// Names frames, memoized by (pid, address).
struct Namer<'a> {
    profile: &'a Profile,
    sym: &'a mut Symbolizer,
    cache: HashMap<(i32, u64), Place>,
}

impl Namer<'_> {
    fn places(&mut self, s: &Sample, user_only: bool) -> Vec<Place> {
        let frames: Vec<Frame> = self
            .profile
            .callchain(s)
            .iter()
            .filter(|f| !user_only || matches!(f.cpumode, CpuMode::User))
            .copied()
            .collect();
        frames
            .iter()
            .map(|f| {
                let (profile, sym) = (self.profile, &mut *self.sym);
                self.cache
                    .entry((s.pid, f.addr))
                    .or_insert_with(|| Place::of(profile, sym, f.location, s.pid))
                    .clone()
            })
            .collect()
    }
}

/// Pairs the blocked intervals of `profile` with their wakers (see the module documentation).
pub fn wakers(profile: &Profile, sym: &mut Symbolizer) -> Result<WakersReport, AnalysisError> {
    let offcpu = profile.events.iter().position(|e| e.name == "offcpu-time");
    let waking = (0..profile.events.len()).find(|&i| {
        profile
            .tracepoint_format(i as _)
            .is_some_and(|f| f.system == "sched" && f.name == "sched_waking")
    });
    let (Some(offcpu), Some(waking)) = (offcpu, waking) else {
        return Err(AnalysisError::NoData(
            "the file has no offcpu-time and sched:sched_waking samples: record with \
             `culprit record --off-cpu=wakers -- CMD`"
                .to_string(),
        ));
    };
    let format = profile.tracepoint_format(waking as _);
    let mut last_waking: HashMap<i32, usize> = HashMap::new();
    let mut namer = Namer {
        profile,
        sym,
        cache: HashMap::new(),
    };
    type Key = (String, String, String, Vec<String>);
    let mut rows: HashMap<Key, (u64, u64)> = HashMap::new();
    let (mut intervals, mut with_waker) = (0, 0);
    for (i, s) in profile.samples.iter().enumerate() {
        if s.event as usize == waking {
            let wakee = format
                .and_then(|f| f.field("pid")?.read(profile.raw(s), f.big_endian))
                .and_then(|v| match v {
                    FieldValue::Signed(p) => Some(p as i32),
                    FieldValue::Unsigned(p) => Some(p as i32),
                    _ => None,
                });
            if let Some(wakee) = wakee {
                last_waking.insert(wakee, i);
            }
            continue;
        }
        if s.event as usize != offcpu {
            continue;
        }
        intervals += 1;
        let start = s.time.saturating_sub(s.period);
        let waker = last_waking
            .remove(&s.tid)
            .and_then(|w| profile.samples.get(w))
            .filter(|w| w.time >= start && w.time <= s.time);
        let blocked = namer.places(s, false);
        let blocked_in = blocked
            .iter()
            .find(|p| !in_libc(p) && !p.dso.starts_with("[kernel"))
            .or(blocked.first())
            .map(frame_name)
            .unwrap_or_else(|| "[unknown]".to_string());
        let (waker_comm, waker_stack) = match waker {
            Some(w) => {
                with_waker += 1;
                let mut stack = namer.places(w, true);
                if stack.is_empty() {
                    stack = namer.places(w, false);
                }
                (
                    profile.str(w.comm).to_string(),
                    stack.iter().map(frame_name).collect(),
                )
            }
            None => ("[unknown]".to_string(), Vec::new()),
        };
        let e = rows
            .entry((
                blocked_in,
                profile.str(s.comm).to_string(),
                waker_comm,
                waker_stack,
            ))
            .or_insert((0, 0));
        e.0 += 1;
        e.1 += s.period;
    }
    let mut rows: Vec<WakerRow> = rows
        .into_iter()
        .map(
            |((blocked_in, blocked_comm, waker_comm, waker_stack), (count, total_ns))| WakerRow {
                blocked_in,
                blocked_comm,
                waker_comm,
                waker_stack,
                count,
                total_ns,
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
        intervals,
        with_waker,
    })
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
