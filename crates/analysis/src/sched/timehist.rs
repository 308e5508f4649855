//! `culprit sched timehist`: one row per context switch, for the task switched out: how
//! long it waited before it last got the CPU (sleeping or preempted), its scheduling delay
//! (from its first wake-up to getting the CPU) and how long it then ran. The rules are perf
//! 6.1's `perf sched timehist` (`tools/perf/builtin-sched.c`):
//!
//! - the task's run time is this switch minus the CPU's previous switch (none for a CPU's
//!   first switch: every figure is 0 then);
//! - its scheduling delay is the CPU's previous switch (when it came in) minus its first
//!   wake-up since it last left a CPU;
//! - its wait time is the CPU's previous switch minus the time it last left a CPU.

use std::collections::HashMap;

use serde::Serialize;

use culprit_decode::model::RecordedPid;

use super::{SchedEvent, SchedKind};

/// One context switch, for the task switched out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimehistRow {
    /// Time of the switch, ns.
    pub time_ns: u64,
    /// CPU.
    pub cpu: u32,
    /// Thread switched out (0: the CPU's idle task).
    pub tid: i32,
    /// Its process.
    pub pid: i32,
    /// Its command name (`<idle>` for the idle task).
    pub comm: String,
    /// Time off the CPU before it last came in (sleeping, in D state or preempted), ns.
    pub wait_ns: u64,
    /// From its wake-up to getting the CPU, ns.
    pub sch_delay_ns: u64,
    /// How long it ran, ns.
    pub run_ns: u64,
    /// The state it leaves in (`prev_state`).
    pub state: i64,
}

/// The report of [`timehist`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TimehistReport {
    /// Rows in time order.
    pub rows: Vec<TimehistRow>,
}

/// A thread's bookkeeping (perf's `struct thread_runtime`).
#[derive(Debug, Clone, Copy, Default)]
struct Runtime {
    last_time: u64,
    ready_to_run: u64,
}

/// Which thread a switch is about: the CPU's idle task is one per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ThreadKey {
    Idle(u32),
    Task(i32),
}

/// perf's thread table, for the pid it shows: a thread's pid is set when perf first meets
/// it, in time order — from a COMM/FORK record (`records`) no newer than that moment, else
/// from the event that names it (a switch or migration: the sample's pid; a wake-up: 0) —
/// and only a pid of -1 is replaced later (`machine__update_thread_pid`). (A task woken
/// before its first COMM record, as one forked while a recording starts, keeps pid 0: perf
/// shows it without its tid.)
#[derive(Debug, Default)]
struct ThreadPids {
    known: HashMap<i32, i32>,
}

impl ThreadPids {
    /// The pid perf shows for thread `tid`, met at `time` by an event that names `pid`.
    fn findnew(
        &mut self,
        records: &HashMap<i32, RecordedPid>,
        time: u64,
        pid: i32,
        tid: i32,
    ) -> i32 {
        let p = self.known.entry(tid).or_insert_with(|| {
            records
                .get(&tid)
                .filter(|r| r.since <= time)
                .map_or(pid, |r| r.pid)
        });
        if *p == -1 && pid != -1 {
            *p = pid;
        }
        *p
    }
}

/// One row per `sched_switch` of `events` (see the module documentation for the rules);
/// `record_pids`: the processes of the threads of the file's COMM/FORK records
/// (`Profile::thread_pids`); `has_waking`: the file has a `sched:sched_waking` event, and then
/// `sched_wakeup` is ignored (perf: "prefer sched_waking if it is captured").
pub fn timehist(
    events: &[SchedEvent],
    record_pids: &HashMap<i32, RecordedPid>,
    has_waking: bool,
) -> TimehistReport {
    let mut tracker = TimehistTracker::new(has_waking);
    for e in events {
        tracker.event(e, record_pids);
    }
    tracker.finish()
}

/// [`timehist`] as the events arrive, for a stream: besides the rows, it keeps only the
/// state of each thread and CPU.
#[derive(Debug, Default)]
pub struct TimehistTracker {
    has_waking: bool,
    threads: HashMap<ThreadKey, Runtime>,
    cpu_last_switch: HashMap<u32, u64>,
    // perf keys threads by tid and keeps the pid of their first sighting (an exiting
    // task's samples have tid -1: one pseudo-thread, shown with the first pid it had).
    pids: ThreadPids,
    rows: Vec<TimehistRow>,
}

impl TimehistTracker {
    /// A tracker for a file that has (`has_waking`) or has not a `sched:sched_waking` event.
    pub fn new(has_waking: bool) -> TimehistTracker {
        TimehistTracker {
            has_waking,
            ..TimehistTracker::default()
        }
    }

    /// Takes the next event in time order; `record_pids`: the COMM/FORK records' processes
    /// read so far (or the whole file's: only those no newer than an event count).
    pub fn event(&mut self, e: &SchedEvent, record_pids: &HashMap<i32, RecordedPid>) {
        match &e.kind {
            SchedKind::Migrate => {
                self.pids.findnew(record_pids, e.time, e.pid, e.tid);
            }
            SchedKind::Wakeup {
                waking: false,
                new_task: false,
                ..
            } if self.has_waking => {}
            SchedKind::Wakeup { pid, .. } => {
                self.pids.findnew(record_pids, e.time, 0, *pid);
                let r = self.threads.entry(ThreadKey::Task(*pid)).or_default();
                if r.ready_to_run == 0 {
                    r.ready_to_run = e.time;
                }
            }
            SchedKind::Switch { prev_state, .. } => {
                let key = if e.tid == 0 {
                    ThreadKey::Idle(e.cpu)
                } else {
                    ThreadKey::Task(e.tid)
                };
                let r = self.threads.entry(key).or_default();
                let tprev = self.cpu_last_switch.insert(e.cpu, e.time).unwrap_or(0);
                let (mut wait, mut delay, mut run) = (0, 0, 0);
                if tprev != 0 {
                    run = e.time.saturating_sub(tprev);
                    if r.ready_to_run != 0 && r.ready_to_run <= tprev {
                        delay = tprev - r.ready_to_run;
                    }
                    if r.last_time != 0 && r.last_time <= tprev {
                        // Preempted, in D state or sleeping: all count as waiting.
                        wait = tprev - r.last_time;
                    }
                }
                r.last_time = e.time;
                r.ready_to_run = 0;
                let idle = e.tid == 0;
                self.rows.push(TimehistRow {
                    time_ns: e.time,
                    cpu: e.cpu,
                    tid: e.tid,
                    pid: if idle {
                        0
                    } else {
                        self.pids.findnew(record_pids, e.time, e.pid, e.tid)
                    },
                    comm: if idle {
                        "<idle>".to_string()
                    } else {
                        e.comm.clone()
                    },
                    wait_ns: wait,
                    sch_delay_ns: delay,
                    run_ns: run,
                    state: *prev_state,
                });
            }
            SchedKind::Runtime { .. } => {}
        }
    }

    /// The report of the events taken.
    pub fn finish(self) -> TimehistReport {
        TimehistReport { rows: self.rows }
    }
}
