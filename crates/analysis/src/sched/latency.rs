//! `culprit sched latency`: per task, the CPU time it got and how long it waited for a CPU
//! after becoming runnable, with the rules of perf 6.1's `perf sched latency`
//! (`tools/perf/builtin-sched.c`):
//!
//! - Each task has a current *atom*, opened when it leaves a CPU. A task switched out
//!   runnable (`prev_state` 0: preempted) waits for a CPU from that moment; one switched out
//!   sleeping waits from its next wake-up (`sched_wakeup`, `sched_waking`,
//!   `sched_wakeup_new`); a wake-up of a task that is not sleeping changes nothing. A task
//!   first seen being switched in waits from that moment (delay 0).
//! - When the task is switched in while waiting, the delay (switch-in minus wake-up) is
//!   counted: one switch, added to the total, and the maximum kept with its start and end.
//! - Run time is the sum of `sched_stat_runtime`.
//! - Tasks with no counted switch and `swapper` are not shown. By default tasks of the same
//!   command are merged into one row (`comm:(N)`); `--pids` keeps one row per thread.
//! - Rows are sorted by the sort keys (default `avg,max,switch,runtime`), largest first.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{Comms, SchedEvent, SchedKind};

/// A sort key of `sched latency` (perf's `-s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencySort {
    /// Thread id.
    Pid,
    /// Average delay.
    Avg,
    /// Maximum delay.
    Max,
    /// Number of counted switches.
    Switch,
    /// Total run time.
    Runtime,
}

impl LatencySort {
    /// Parses perf's comma-separated list (`avg,max,switch,runtime`).
    pub fn parse_list(s: &str) -> Result<Vec<LatencySort>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| match t {
                "pid" => Ok(LatencySort::Pid),
                "avg" => Ok(LatencySort::Avg),
                "max" => Ok(LatencySort::Max),
                "switch" => Ok(LatencySort::Switch),
                "runtime" => Ok(LatencySort::Runtime),
                other => Err(format!(
                    "unknown sort key `{other}` (known: pid, avg, max, switch, runtime)"
                )),
            })
            .collect()
    }

    /// perf's default: `avg,max,switch,runtime`.
    pub fn default_list() -> Vec<LatencySort> {
        vec![
            LatencySort::Avg,
            LatencySort::Max,
            LatencySort::Switch,
            LatencySort::Runtime,
        ]
    }
}

/// Options of [`latency`].
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// One row per thread instead of per command (perf's `-p`).
    pub per_thread: bool,
    /// Sort keys, most significant first.
    pub sort: Vec<LatencySort>,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            per_thread: false,
            sort: LatencySort::default_list(),
        }
    }
}

/// One row of the latency table: a thread, or the threads of one command merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskLatency {
    /// Command name.
    pub comm: String,
    /// Thread id (the lowest of the merged threads).
    pub tid: i32,
    /// Threads merged into the row (1 per thread).
    pub threads: u32,
    /// Total run time, ns (sum of `sched_stat_runtime`).
    pub runtime_ns: u64,
    /// Switches in with a measured delay.
    pub switches: u64,
    /// Sum of the delays, ns.
    pub total_delay_ns: u64,
    /// Average delay, ns (perf's integer division).
    pub avg_delay_ns: u64,
    /// Maximum delay, ns.
    pub max_delay_ns: u64,
    /// When the maximum delay began (the wake-up), ns.
    pub max_delay_start_ns: u64,
    /// When it ended (the switch in), ns.
    pub max_delay_end_ns: u64,
}

/// Counts of scheduling delays by power-of-two ranges of microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DelayHistogram {
    /// Bucket `i` counts delays in `[lo, hi)` µs, `lo = 0` for `i = 0` else `2^(i-1)`,
    /// `hi = 2^i`; trailing empty buckets are left out.
    pub buckets: Vec<u64>,
}

impl DelayHistogram {
    pub(crate) fn add(&mut self, ns: u64) {
        let us = ns / 1000;
        let i = (64 - us.leading_zeros()) as usize;
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, 0);
        }
        self.buckets[i] += 1;
    }

    /// Adds the counts of `other`.
    fn merge(&mut self, other: &DelayHistogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (into, n) in self.buckets.iter_mut().zip(&other.buckets) {
            *into += n;
        }
    }

    /// The µs range `[lo, hi)` of bucket `i`.
    pub fn range_us(i: usize) -> (u64, u64) {
        let hi = 1u64.checked_shl(i as u32).unwrap_or(u64::MAX);
        (if i == 0 { 0 } else { hi / 2 }, hi)
    }
}

/// The report of [`latency`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    /// Rows in sort order.
    pub tasks: Vec<TaskLatency>,
    /// Sum of the rows' run time, ns.
    pub total_runtime_ns: u64,
    /// Sum of the rows' switches.
    pub total_switches: u64,
    /// Every counted delay (all tasks but swapper), by size.
    pub histogram: DelayHistogram,
    /// Wake-ups older than the task's last switch-out (perf's "unordered timestamps").
    pub unordered_timestamps: u64,
    /// Wake-ups looked at.
    pub timestamps: u64,
}

/// What a task's current atom is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtomState {
    Sleeping,
    WaitCpu,
    SchedIn,
    Ignore,
}

#[derive(Debug, Clone, Copy)]
struct Atom {
    state: AtomState,
    sched_out: u64,
    wake_up: u64,
}

/// One thread's atoms (perf's `struct work_atoms`), with its last atom only.
#[derive(Debug, Clone, Default)]
struct Atoms {
    last: Option<Atom>,
    runtime: u64,
    switches: u64,
    total: u64,
    max: u64,
    max_start: u64,
    max_end: u64,
    /// Its delays by range (counts only: memory does not grow with switches).
    delays: DelayHistogram,
}

impl Atoms {
    /// perf's `add_sched_out_event`: a new atom, waiting for a CPU from now if runnable.
    fn sched_out(&mut self, runnable: bool, t: u64) {
        self.last = Some(Atom {
            state: if runnable {
                AtomState::WaitCpu
            } else {
                AtomState::Sleeping
            },
            sched_out: t,
            wake_up: if runnable { t } else { 0 },
        });
    }

    /// perf's `add_sched_in_event`.
    fn sched_in(&mut self, t: u64) {
        let Some(atom) = self.last.as_mut() else {
            return;
        };
        if atom.state != AtomState::WaitCpu {
            return;
        }
        if t < atom.wake_up {
            atom.state = AtomState::Ignore;
            return;
        }
        atom.state = AtomState::SchedIn;
        let delta = t - atom.wake_up;
        self.total += delta;
        if delta > self.max {
            self.max = delta;
            self.max_start = atom.wake_up;
            self.max_end = t;
        }
        self.switches += 1;
        self.delays.add(delta);
    }
}

/// perf 6.1's `sched_out_state(prev_state) == 'R'`: its table is indexed by the raw
/// state, so only 0 reads as runnable (a preempted task's `TASK_REPORT_MAX` does not).
fn switched_out_runnable(prev_state: i64) -> bool {
    prev_state == 0
}

/// The per-thread state machine over the events.
#[derive(Default)]
struct Tracker {
    threads: HashMap<i32, Atoms>,
    comms: Comms,
    unordered: u64,
    timestamps: u64,
}

impl Tracker {
    fn event(&mut self, e: &SchedEvent) {
        self.comms.learn(e);
        match &e.kind {
            SchedKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                self.threads
                    .entry(*prev_pid)
                    .or_default()
                    .sched_out(switched_out_runnable(*prev_state), e.time);
                let next = self.threads.entry(*next_pid).or_insert_with(|| {
                    // A task first seen coming in: runnable since now.
                    let mut a = Atoms::default();
                    a.sched_out(true, e.time);
                    a
                });
                next.sched_in(e.time);
            }
            SchedKind::Runtime { pid, runtime } => {
                let atoms = self.threads.entry(*pid).or_insert_with(|| {
                    let mut a = Atoms::default();
                    a.sched_out(true, e.time);
                    a
                });
                atoms.runtime += runtime;
            }
            // perf 6.1's latency ignores sched_waking (process_sched_wakeup_ignore), and
            // migrations when all CPUs are read.
            SchedKind::Wakeup { waking: true, .. } | SchedKind::Migrate => {}
            SchedKind::Wakeup { pid, .. } => {
                let atoms = self.threads.entry(*pid).or_insert_with(|| {
                    let mut a = Atoms::default();
                    a.sched_out(false, e.time);
                    a
                });
                let Some(atom) = atoms.last.as_mut() else {
                    return;
                };
                // All CPUs are recorded: a wake-up of a task already runnable or running
                // changes nothing (perf's profile_cpu == -1 rule).
                if atom.state != AtomState::Sleeping {
                    return;
                }
                self.timestamps += 1;
                if atom.sched_out > e.time {
                    self.unordered += 1;
                    return;
                }
                atom.state = AtomState::WaitCpu;
                atom.wake_up = e.time;
            }
        }
    }
}

/// Per-task scheduling delay of `events` (see the module documentation for the rules),
/// tasks named by `comms` (the file's thread names: [`Comms::of_profile`]).
pub fn latency(events: &[SchedEvent], comms: Comms, options: &LatencyOptions) -> LatencyReport {
    let mut tracker = LatencyTracker::default();
    for e in events {
        tracker.event(e);
    }
    tracker.finish(comms, options)
}

/// [`latency`] fed one event at a time, as a stream is read: it keeps per-thread state
/// only, so memory does not grow with the events.
#[derive(Default)]
pub struct LatencyTracker(Tracker);

impl LatencyTracker {
    /// Takes the next event in processing order.
    pub fn event(&mut self, e: &SchedEvent) {
        self.0.event(e);
    }

    /// The report, tasks named by `comms` (the file's thread names, read to its end:
    /// [`Comms::of_profile`]) and the names the events showed.
    pub fn finish(self, comms: Comms, options: &LatencyOptions) -> LatencyReport {
        let mut tracker = self.0;
        tracker.comms.from_records = comms.from_records;
        report(tracker, options)
    }
}

fn report(tracker: Tracker, options: &LatencyOptions) -> LatencyReport {
    // perf merges in thread-id order: the first thread with the largest maximum keeps it.
    let by_tid: BTreeMap<i32, Atoms> = tracker.threads.into_iter().collect();
    let mut rows: Vec<TaskLatency> = Vec::new();
    let mut merged: HashMap<String, usize> = HashMap::new();
    let mut histogram = DelayHistogram::default();
    for (tid, atoms) in by_tid {
        let comm = tracker.comms.name(tid);
        let row = TaskLatency {
            comm: comm.clone(),
            tid,
            threads: 1,
            runtime_ns: atoms.runtime,
            switches: atoms.switches,
            total_delay_ns: atoms.total,
            avg_delay_ns: 0,
            max_delay_ns: atoms.max,
            max_delay_start_ns: atoms.max_start,
            max_delay_end_ns: atoms.max_end,
        };
        if comm != "swapper" {
            histogram.merge(&atoms.delays);
        }
        match merged.get(&comm).filter(|_| !options.per_thread) {
            Some(&i) => {
                let into = &mut rows[i];
                into.threads += 1;
                into.runtime_ns += row.runtime_ns;
                into.switches += row.switches;
                into.total_delay_ns += row.total_delay_ns;
                if into.max_delay_ns < row.max_delay_ns {
                    into.max_delay_ns = row.max_delay_ns;
                    into.max_delay_start_ns = row.max_delay_start_ns;
                    into.max_delay_end_ns = row.max_delay_end_ns;
                }
            }
            None => {
                merged.insert(comm, rows.len());
                rows.push(row);
            }
        }
    }
    rows.retain(|r| r.switches > 0 && r.comm != "swapper");
    for r in &mut rows {
        r.avg_delay_ns = r.total_delay_ns / r.switches;
    }
    // Ties keep perf's insertion order: command names in reverse byte order when merged,
    // thread ids from the largest with `--pids`.
    if options.per_thread {
        rows.sort_by_key(|r| std::cmp::Reverse(r.tid));
    } else {
        rows.sort_by(|a, b| b.comm.cmp(&a.comm));
    }
    rows.sort_by(|a, b| compare(&options.sort, b, a));
    LatencyReport {
        total_runtime_ns: rows.iter().map(|r| r.runtime_ns).sum(),
        total_switches: rows.iter().map(|r| r.switches).sum(),
        tasks: rows,
        histogram,
        unordered_timestamps: tracker.unordered,
        timestamps: tracker.timestamps,
    }
}

/// `a` against `b` on the keys, first difference wins.
fn compare(keys: &[LatencySort], a: &TaskLatency, b: &TaskLatency) -> Ordering {
    keys.iter()
        .map(|k| match k {
            LatencySort::Pid => a.tid.cmp(&b.tid),
            LatencySort::Avg => a.avg_delay_ns.cmp(&b.avg_delay_ns),
            LatencySort::Max => a.max_delay_ns.cmp(&b.max_delay_ns),
            LatencySort::Switch => a.switches.cmp(&b.switches),
            LatencySort::Runtime => a.runtime_ns.cmp(&b.runtime_ns),
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}
