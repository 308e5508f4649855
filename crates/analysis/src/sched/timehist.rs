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
/// it, in time order — from a COMM/FORK record (`record_pids`) no newer than that moment,
/// else from the sample that names it (a switch or migration: the sample's pid; a wake-up:
/// 0) — and only a pid of -1 is replaced later (`machine__update_thread_pid`). (A task
/// woken before its first COMM record, as one forked while a recording starts, keeps pid 0:
/// perf shows it without its tid.)
struct ThreadPids<'a> {
    records: &'a HashMap<i32, RecordedPid>,
    known: HashMap<i32, i32>,
}

impl ThreadPids<'_> {
    /// The pid perf shows for thread `tid`, met at `time` by an event that names `pid`.
    fn findnew(&mut self, time: u64, pid: i32, tid: i32) -> i32 {
        let records = self.records;
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
    let mut threads: HashMap<ThreadKey, Runtime> = HashMap::new();
    let mut cpu_last_switch: HashMap<u32, u64> = HashMap::new();
    // perf keys threads by tid and keeps the pid of their first sighting (an exiting
    // task's samples have tid -1: one pseudo-thread, shown with the first pid it had).
    let mut pids = ThreadPids {
        records: record_pids,
        known: HashMap::new(),
    };
    let mut rows = Vec::new();
    for e in events {
        match &e.kind {
            SchedKind::Migrate => {
                pids.findnew(e.time, e.pid, e.tid);
            }
            SchedKind::Wakeup {
                waking: false,
                new_task: false,
                ..
            } if has_waking => {}
            SchedKind::Wakeup { pid, .. } => {
                pids.findnew(e.time, 0, *pid);
                let r = threads.entry(ThreadKey::Task(*pid)).or_default();
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
                let r = threads.entry(key).or_default();
                let tprev = cpu_last_switch.insert(e.cpu, e.time).unwrap_or(0);
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
                rows.push(TimehistRow {
                    time_ns: e.time,
                    cpu: e.cpu,
                    tid: if e.tid == 0 { 0 } else { e.tid },
                    pid: if e.tid == 0 {
                        0
                    } else {
                        pids.findnew(e.time, e.pid, e.tid)
                    },
                    comm: if e.tid == 0 {
                        "<idle>".to_string()
                    } else {
                        e.comm.clone()
                    },
                    wait_ns: wait,
                    sch_delay_ns: delay,
                    run_ns: run,
                    state: *prev_state,
                });
                r.last_time = e.time;
                r.ready_to_run = 0;
            }
            SchedKind::Runtime { .. } => {}
        }
    }
    TimehistReport { rows }
}
