//! Scheduling delay from the scheduler's tracepoints (`culprit sched`, perf's `perf sched`):
//! [`latency`] (per task: switches, run time, average and maximum wake-up-to-run delay, as
//! `perf sched latency`), [`timehist`] (per context switch: wait time, scheduling delay and
//! run time, as `perf sched timehist`) and a histogram of the delays.
//!
//! The input is a [`Profile`] recorded with `culprit sched record` or `perf sched record`:
//! `sched:sched_switch`, `sched:sched_stat_runtime`, `sched:sched_wakeup`,
//! `sched:sched_waking`, `sched:sched_wakeup_new` (and `sched:sched_migrate_task`,
//! `sched:sched_process_fork`, which these reports do not need) with raw records. Events are
//! taken in the profile's order, which is perf's ordered-events order, so the numbers are
//! perf's.

pub mod latency;
pub mod render;
pub mod timehist;

use std::collections::HashMap;

use culprit_decode::model::{Profile, Sample};
use culprit_decode::tracepoint::{FieldValue, TracepointFormat};

use crate::AnalysisError;

pub use latency::{
    latency, DelayHistogram, LatencyOptions, LatencyReport, LatencySort, LatencyTracker,
    TaskLatency,
};
pub use timehist::{timehist, TimehistReport, TimehistRow, TimehistTracker};

/// What one scheduler tracepoint sample says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedKind {
    /// `sched_switch`: `prev_pid` leaves the CPU in `prev_state`, `next_pid` runs.
    Switch {
        /// The task switched out.
        prev_pid: i32,
        /// Its state (0 = runnable: preempted).
        prev_state: i64,
        /// The task switched in.
        next_pid: i32,
        /// Its command name.
        next_comm: String,
    },
    /// `sched_stat_runtime`: `pid` ran `runtime` ns since the last such event.
    Runtime {
        /// The task.
        pid: i32,
        /// Nanoseconds of CPU time.
        runtime: u64,
    },
    /// `sched_wakeup`, `sched_waking` or `sched_wakeup_new`: `pid` became runnable.
    Wakeup {
        /// The woken task.
        pid: i32,
        /// Its command name.
        comm: String,
        /// `sched_waking` (the waker's side, before the task is on a run queue).
        waking: bool,
        /// `sched_wakeup_new` (a new task's first wake-up).
        new_task: bool,
    },
    /// `sched_migrate_task` (perf's timehist learns the current thread from it).
    Migrate,
}

/// One scheduler event with the sample's context (the task current on the CPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedEvent {
    /// Time in ns.
    pub time: u64,
    /// CPU.
    pub cpu: u32,
    /// Process of the task current when the event fired.
    pub pid: i32,
    /// Thread current when the event fired (for `sched_switch`, the one switched out).
    pub tid: i32,
    /// Its command name at the time.
    pub comm: String,
    /// What happened.
    pub kind: SchedKind,
}

/// How each event of the profile is read: which tracepoint it is.
enum Role {
    Switch,
    Runtime,
    Wakeup { waking: bool, new_task: bool },
    Migrate,
    Other,
}

fn role_of(format: &TracepointFormat) -> Role {
    match (format.system.as_str(), format.name.as_str()) {
        ("sched", "sched_switch") => Role::Switch,
        ("sched", "sched_stat_runtime") => Role::Runtime,
        ("sched", "sched_wakeup") => Role::Wakeup {
            waking: false,
            new_task: false,
        },
        ("sched", "sched_wakeup_new") => Role::Wakeup {
            waking: false,
            new_task: true,
        },
        ("sched", "sched_waking") => Role::Wakeup {
            waking: true,
            new_task: false,
        },
        ("sched", "sched_migrate_task") => Role::Migrate,
        _ => Role::Other,
    }
}

/// A field as a signed integer (`None` if absent, not an integer or the record too short).
fn int_field(format: &TracepointFormat, raw: &[u8], name: &str) -> Option<i64> {
    match format.field(name)?.read(raw, format.big_endian)? {
        FieldValue::Signed(v) => Some(v),
        FieldValue::Unsigned(v) | FieldValue::Address(v) => Some(v as i64),
        _ => None,
    }
}

/// A string field (`""` if absent).
fn str_field(format: &TracepointFormat, raw: &[u8], name: &str) -> String {
    match format
        .field(name)
        .and_then(|f| f.read(raw, format.big_endian))
    {
        Some(FieldValue::Str(s)) => s,
        _ => String::new(),
    }
}

/// Fails with [`AnalysisError::NoData`] when the profile has no `sched:sched_switch`
/// event (the message says how to record one).
pub fn require_switch_event(profile: &Profile) -> Result<(), AnalysisError> {
    let has_switch = (0..profile.events.len())
        .filter_map(|i| profile.tracepoint_format(i as _))
        .any(|f| matches!(role_of(f), Role::Switch));
    if has_switch {
        return Ok(());
    }
    Err(AnalysisError::NoData(
        "the file has no sched:sched_switch samples: record them with \
         `culprit sched record -- CMD` (or `perf sched record`)"
            .to_string(),
    ))
}

/// The scheduler events of a profile in processing order. Samples of other events, and
/// scheduler samples whose raw record lacks a needed field, are skipped.
///
/// Fails with [`AnalysisError::NoData`] when the profile has no `sched:sched_switch`
/// event (the message says how to record one).
pub fn sched_events(profile: &Profile) -> Result<Vec<SchedEvent>, AnalysisError> {
    require_switch_event(profile)?;
    Ok(profile
        .samples
        .iter()
        .filter_map(|s| sched_event(profile, s))
        .collect())
}

/// The scheduler event `sample` of `profile` is (as a stream is read: `profile` is what
/// was read so far), or `None` for a sample of another event or a scheduler sample whose
/// raw record lacks a needed field.
pub fn sched_event(profile: &Profile, sample: &Sample) -> Option<SchedEvent> {
    let format = profile.tracepoint_format(sample.event)?;
    let raw = profile.raw(sample);
    let kind = match role_of(format) {
        Role::Switch => SchedKind::Switch {
            prev_pid: int_field(format, raw, "prev_pid")? as i32,
            prev_state: int_field(format, raw, "prev_state")?,
            next_pid: int_field(format, raw, "next_pid")? as i32,
            next_comm: str_field(format, raw, "next_comm"),
        },
        Role::Runtime => SchedKind::Runtime {
            pid: int_field(format, raw, "pid")? as i32,
            runtime: int_field(format, raw, "runtime")? as u64,
        },
        Role::Wakeup { waking, new_task } => SchedKind::Wakeup {
            pid: int_field(format, raw, "pid")? as i32,
            comm: str_field(format, raw, "comm"),
            waking,
            new_task,
        },
        Role::Migrate => SchedKind::Migrate,
        Role::Other => return None,
    };
    Some(SchedEvent {
        time: sample.time,
        cpu: sample.cpu,
        pid: sample.pid,
        tid: sample.tid,
        comm: profile.str(sample.comm).to_string(),
        kind,
    })
}

/// Whether the profile has a `sched:sched_waking` event (with samples or not).
pub fn has_waking_event(profile: &Profile) -> bool {
    (0..profile.events.len()).any(|i| {
        profile
            .tracepoint_format(i as _)
            .is_some_and(|f| f.system == "sched" && f.name == "sched_waking")
    })
}

/// Command names of threads as perf knows them: the newest name COMM and FORK records gave
/// the thread, else the newest a sample of it carried; `:TID` for a thread no record named
/// (perf's rule, even when a `next_comm` field names it); tid 0 is `swapper` (perf's idle
/// task).
#[derive(Debug, Default)]
pub struct Comms {
    from_records: HashMap<i32, String>,
    from_samples: HashMap<i32, String>,
}

impl Comms {
    /// The thread names of a profile's COMM and FORK records.
    pub fn of_profile(profile: &Profile) -> Comms {
        Comms {
            from_records: profile
                .thread_comms
                .iter()
                .map(|(&tid, &c)| (tid, profile.str(c).to_string()))
                .collect(),
            from_samples: HashMap::new(),
        }
    }

    /// Learns the name an event's sample shows.
    pub(crate) fn learn(&mut self, e: &SchedEvent) {
        if e.tid >= 0 && !e.comm.is_empty() {
            self.from_samples.insert(e.tid, e.comm.clone());
        }
    }

    /// The name of `tid`.
    pub(crate) fn name(&self, tid: i32) -> String {
        if tid == 0 {
            return "swapper".to_string();
        }
        self.from_records
            .get(&tid)
            .or_else(|| self.from_samples.get(&tid))
            .cloned()
            .unwrap_or_else(|| format!(":{tid}"))
    }
}

/// perf's `timestamp__scnprintf_usec`: seconds with six decimals, truncated.
pub fn usec_timestamp(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

#[cfg(test)]
mod tests;
