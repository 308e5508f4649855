//! Thread states on the timeline: from the `sched:sched_switch` and wake-up events of a
//! recording (`culprit sched record`, `perf sched record`), each thread's time split into
//! running, runnable (woken or preempted, waiting for a CPU), sleeping (`S`),
//! uninterruptible (`D`) and waiting for a lock (off the CPU inside a kernel lock's
//! contention or a futex wait, where the recording has `lock:contention_begin/end` or
//! `syscalls:sys_enter/exit_futex` too, as `culprit lock contention` pairs them). The intervals are `culprit sched timehist`'s rows read backwards:
//! a row at a switch-out `t` with run time `r`, scheduling delay `d` and wait `w` says the
//! thread ran over `[t-r, t]`, was runnable over `[t-r-d, t-r]` and off the CPU, in the state
//! it left at its previous switch-out, over `[t-r-d-w, t-r-d]`.
//!
//! The page gets per thread and bucket the share of each state (bounded by the bucket count,
//! whatever the number of switches) and the longest blocked intervals with their bounds, so
//! that clicking one shows its exact start and duration.

use std::collections::HashMap;

use serde::Serialize;

use culprit_analysis::lock::LockWaits;
use culprit_analysis::sched::{has_waking_event, sched_event, timehist, SchedEvent, SchedKind};
use culprit_analysis::stacks::StackProfile;
use culprit_decode::model::{Profile, Sample};
use rustc_hash::FxHashMap;

use super::flame::LeafOf;
use super::timeline::TimelineFold;

/// The call-tree node of each scheduler sample's stack, by (time, tid, is a `sched_switch`):
/// the switch-outs give the blocked stacks, the wake-ups the wakers' stacks.
pub type SchedStacks = FxHashMap<(u64, i32, bool), u32>;

/// The call-tree nodes of the scheduler samples `timeline` kept (the `sched_switch`,
/// `sched_waking` and `sched_wakeup` samples of `stacks`), from `leaf_of`.
pub fn scheduler_stacks(
    timeline: &TimelineFold,
    stacks: &StackProfile,
    leaf_of: &LeafOf,
) -> SchedStacks {
    let mut out = SchedStacks::default();
    for &(time, thread, stack, switch) in timeline.sched_samples() {
        let (Some(th), Some(&(node, _))) = (
            stacks.threads.get(thread as usize),
            leaf_of.get(&(thread, stack)),
        ) else {
            continue;
        };
        out.insert((time, th.tid, switch), node);
    }
    out
}

/// Whether an event is a scheduler event whose stacks the thread states show: `Some(true)`
/// for `sched_switch`, `Some(false)` for the wake-ups.
pub fn sched_kind(event_name: &str) -> Option<bool> {
    match event_name {
        "sched:sched_switch" => Some(true),
        "sched:sched_waking" | "sched:sched_wakeup" | "sched:sched_wakeup_new" => Some(false),
        _ => None,
    }
}

/// What the thread states need of the read, gathered as the samples stream by: the
/// scheduler events and the lock waits, not the other samples (the page reads its input
/// once, stdin included).
#[derive(Default)]
pub struct StatesFold {
    /// Per event: whether its samples matter here (scheduler, lock and futex tracepoints).
    wanted: Vec<bool>,
    events: Vec<SchedEvent>,
    locks: LockWaits,
}

impl StatesFold {
    /// Takes the next sample in time order (`profile`: what was read so far).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        if self.wanted.len() < profile.events.len() {
            // Each event's kind once, not per sample.
            self.wanted = (0..profile.events.len())
                .map(|i| {
                    profile.tracepoint_format(i as _).is_some_and(|f| {
                        matches!(f.system.as_str(), "sched" | "lock")
                            || f.name == "sys_enter_futex"
                            || f.name == "sys_exit_futex"
                    })
                })
                .collect();
        }
        if !self
            .wanted
            .get(usize::from(s.event))
            .copied()
            .unwrap_or(false)
        {
            return;
        }
        if let Some(e) = sched_event(profile, s) {
            self.events.push(e);
        }
        self.locks.add(profile, s);
    }
}

/// Names of the states, in the order of [`ThreadStates::share`]'s rows.
pub const STATE_NAMES: [&str; 5] = ["running", "runnable", "sleeping", "D", "lock"];
const RUNNING: u8 = 0;
const RUNNABLE: u8 = 1;
const SLEEPING: u8 = 2;
const UNINTERRUPTIBLE: u8 = 3;
const LOCK: u8 = 4;

/// Whether `t` falls in one of `spans` (sorted, disjoint `[begin, end)`).
fn within(spans: &[(u64, u64)], t: u64) -> bool {
    let i = spans.partition_point(|&(begin, _)| begin <= t);
    i > 0 && t < spans[i - 1].1
}
/// At most this many blocked intervals are listed per thread (the longest).
pub const MAX_BLOCKED: usize = 2_000;

/// One thread's states on the timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadStates {
    /// Per state of [`STATE_NAMES`]: its share of each bucket, in thousandths.
    pub share: Vec<Vec<u16>>,
    /// Intervals off the CPU or waiting for it, `[start, end, state]` (ns, ns, index into
    /// [`STATE_NAMES`]), the longest [`MAX_BLOCKED`], in time order.
    pub blocked: Vec<[u64; 3]>,
    /// Per blocked interval: the thread that woke it (`comm tid`, the task current at its
    /// `sched_wakeup`), empty when it was preempted or its wake-up was not recorded.
    pub waker: Vec<String>,
    /// Per blocked interval: the call-tree node of the stack it left the CPU with (its
    /// `sched_switch`), 0 when not recorded.
    pub stack: Vec<u32>,
    /// Per blocked interval: the call-tree node of its waker's stack at the wake-up, 0 when
    /// not recorded.
    pub waker_stack: Vec<u32>,
}

/// A blocked interval being collected: `[start, end, state]`, its waker, the call-tree nodes
/// of its blocked stack and of its waker's stack.
type Blocked = ([u64; 3], String, u32, u32);

/// The state a thread leaves the CPU in, from `sched_switch`'s `prev_state`: 0 (`R`, also
/// `R+`: preempted) is runnable, `TASK_UNINTERRUPTIBLE` (2) is D, anything else sleeping.
fn state_of(prev_state: i64) -> u8 {
    let s = prev_state & 0xff;
    if s == 0 {
        RUNNABLE
    } else if s & 2 != 0 {
        UNINTERRUPTIBLE
    } else {
        SLEEPING
    }
}

/// Adds `[a, b)` (ns) to the buckets `[start + i·width, …)` of `ns`.
fn add_span(ns: &mut [u64], start: u64, width: u64, a: u64, b: u64) {
    let end = start + width * ns.len() as u64;
    let (a, b) = (a.max(start), b.min(end));
    if a >= b || width == 0 {
        return;
    }
    let mut t = a;
    while t < b {
        let i = ((t - start) / width) as usize;
        let bucket_end = start + (i as u64 + 1) * width;
        let upto = bucket_end.min(b);
        if let Some(x) = ns.get_mut(i) {
            *x += upto - t;
        }
        t = upto;
    }
}

/// The states of threads `tids` over `buckets` buckets of `width` ns from `start`, from what
/// `fold` gathered of the read, or `None` when the profile has no `sched_switch` event.
pub fn thread_states(
    profile: &Profile,
    fold: StatesFold,
    start: u64,
    width: u64,
    buckets: usize,
    tids: &[i32],
    nodes: &SchedStacks,
) -> Option<Vec<ThreadStates>> {
    culprit_analysis::sched::require_switch_event(profile).ok()?;
    let events = fold.events;
    let report = timehist(&events, &profile.thread_pids, has_waking_event(profile));
    let index: HashMap<i32, usize> = tids.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    let mut ns = vec![vec![vec![0u64; buckets]; STATE_NAMES.len()]; tids.len()];
    let mut blocked: Vec<Vec<Blocked>> = vec![Vec::new(); tids.len()];
    // Who woke each thread when: the task current at its wake-up event, keyed like
    // timehist's wake-up time (sched_waking when the file has it).
    let waking = has_waking_event(profile);
    let wakers: HashMap<(i32, u64), (String, i32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            SchedKind::Wakeup {
                pid,
                waking: w,
                new_task,
                ..
            } if *w || *new_task || !waking => {
                Some(((*pid, e.time), (format!("{} {}", e.comm, e.tid), e.tid)))
            }
            _ => None,
        })
        .collect();
    let lock_waits = fold.locks.finish();
    let mut left_in: HashMap<i32, u8> = HashMap::new();
    for row in &report.rows {
        if row.tid <= 0 {
            continue;
        }
        // Blocked (not preempted) while waiting for a lock: the lock state.
        let mut state = state_of(row.state);
        let in_lock = lock_waits
            .get(&row.tid)
            .is_some_and(|spans| within(spans, row.time_ns));
        if state != RUNNABLE && in_lock {
            state = LOCK;
        }
        let previous = left_in.insert(row.tid, state);
        let Some(&i) = index.get(&row.tid) else {
            continue;
        };
        // perf's wait is the whole time off the CPU, from the last switch-out to this
        // switch-in; its last `sch_delay` (since the wake-up) was spent runnable.
        let ran = row.time_ns.saturating_sub(row.run_ns);
        let woken = ran.saturating_sub(row.sch_delay_ns);
        let left = ran.saturating_sub(row.wait_ns).min(woken);
        // Before its first switch-out the state it slept in is unknown: timehist gives it
        // no wait then. A preempted thread was runnable all along.
        let off = previous.unwrap_or(SLEEPING);
        let spans = if off == RUNNABLE {
            [(RUNNABLE, left, ran), (RUNNABLE, ran, ran)]
        } else {
            [(off, left, woken), (RUNNABLE, woken, ran)]
        };
        let waker = wakers.get(&(row.tid, woken));
        for (state, a, b) in spans.into_iter().chain([(RUNNING, ran, row.time_ns)]) {
            if b <= a {
                continue;
            }
            add_span(&mut ns[i][state as usize], start, width, a, b);
            if state != RUNNING {
                let (by, by_stack) = match (waker, state) {
                    (Some((w, tid)), s) if s != RUNNABLE || off != RUNNABLE => {
                        (w.clone(), nodes.get(&(woken, *tid, false)).copied())
                    }
                    _ => (String::new(), None),
                };
                let stack = nodes.get(&(left, row.tid, true)).copied().unwrap_or(0);
                blocked[i].push(([a, b, u64::from(state)], by, stack, by_stack.unwrap_or(0)));
            }
        }
    }
    let out = ns
        .into_iter()
        .zip(blocked)
        .map(|(per_state, mut iv)| {
            if iv.len() > MAX_BLOCKED {
                iv.sort_unstable_by_key(|(i, ..)| std::cmp::Reverse(i[1] - i[0]));
                iv.truncate(MAX_BLOCKED);
            }
            iv.sort_unstable();
            let mut out = ThreadStates::default();
            for (interval, waker, stack, waker_stack) in iv {
                out.blocked.push(interval);
                out.waker.push(waker);
                out.stack.push(stack);
                out.waker_stack.push(waker_stack);
            }
            let share = per_state
                .into_iter()
                .map(|v| {
                    v.into_iter()
                        .map(|x| ((x * 1000 + width / 2) / width.max(1)).min(1000) as u16)
                        .collect()
                })
                .collect();
            ThreadStates { share, ..out }
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_add_span_splits_an_interval_across_buckets() {
        let mut ns = vec![0u64; 4];
        add_span(&mut ns, 100, 10, 105, 127);
        assert_eq!(ns, vec![5, 10, 7, 0]);
        // Clipped to the buckets.
        add_span(&mut ns, 100, 10, 50, 102);
        add_span(&mut ns, 100, 10, 138, 500);
        assert_eq!(ns, vec![7, 10, 7, 2]);
        add_span(&mut ns, 100, 0, 100, 120);
        assert_eq!(ns, vec![7, 10, 7, 2]);
    }

    #[test]
    fn test_within_finds_the_span_of_a_time() {
        let spans = [(10, 20), (30, 40)];
        assert!(!within(&spans, 5));
        assert!(within(&spans, 10));
        assert!(within(&spans, 19));
        assert!(!within(&spans, 20));
        assert!(within(&spans, 35));
        assert!(!within(&spans, 40));
        assert!(!within(&[], 1));
    }

    #[test]
    fn test_prev_state_maps_to_runnable_sleeping_and_d() {
        assert_eq!(state_of(0), RUNNABLE);
        assert_eq!(state_of(0x100), RUNNABLE);
        assert_eq!(state_of(1), SLEEPING);
        assert_eq!(state_of(2), UNINTERRUPTIBLE);
        assert_eq!(state_of(0x402), UNINTERRUPTIBLE);
        assert_eq!(state_of(0x80), SLEEPING);
    }
}
