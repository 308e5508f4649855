//! What a recording opens, decided before anything is opened: the CPUs, the events with
//! their sample rates (the default event, `--off-cpu`'s tracepoints, `--overwrite`'s
//! side-band event), the attrs built from them, and the target's tasks.

use culprit_decode::abi::{attr_flag, perf_type, sample_type};

use super::attrs::{build_attr, default_event};
use super::{CallGraph, RecordOptions, Target, DEFAULT_FREQUENCY};
use crate::error::RecordError;
use crate::events::{EventSpec, SampleRate};
use crate::launch::{self, PendingChild};
use crate::perfdata::Attr;
use crate::procfs;

/// `PERF_COUNT_SW_DUMMY`: a software event that never counts, for side-band records.
const SW_DUMMY: u64 = 9;

/// The CPUs and events of a recording.
pub(super) struct Plan {
    /// The CPUs every event is opened on.
    pub(super) cpus: Vec<u32>,
    /// The events in opening order: the user's (or the default), `--off-cpu`'s, then
    /// `--overwrite`'s side-band event.
    pub(super) specs: Vec<EventSpec>,
    /// The sample rate of each event.
    pub(super) rates: Vec<SampleRate>,
    /// The events before `--overwrite`'s side-band event (the ones the summary lists).
    pub(super) user_events: usize,
    /// `--off-cpu`: the index of the sched_switch event.
    pub(super) off_cpu_source: Option<usize>,
    /// `--off-cpu=wakers`: the index of the sched_waking event.
    pub(super) wakers_source: Option<usize>,
}

/// The CPUs to record on: `-C` (each must be online) or every online CPU.
fn recording_cpus(opts: &RecordOptions) -> Result<Vec<u32>, RecordError> {
    let online = procfs::online_cpus();
    let cpus = match &opts.cpus {
        Some(list) => {
            for &c in list {
                if !online.contains(&c) {
                    let online = online
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",");
                    return Err(RecordError::CpuNotOnline { cpu: c, online });
                }
            }
            list.clone()
        }
        None => online.clone(),
    };
    Ok(cpus)
}

/// The events of a recording, with their rates; refuses rates of 0 and bad dwarf stack
/// sizes, and warns of frequencies lowered to the kernel's maximum.
pub(super) fn plan_events(
    opts: &RecordOptions,
    warn: &mut dyn FnMut(String),
) -> Result<Plan, RecordError> {
    let cpus = recording_cpus(opts)?;

    // Events, with the default and its fallback.
    let mut specs = opts.events.clone();
    if specs.is_empty() {
        let (spec, fallback) = default_event(opts);
        if let Some(why) = fallback {
            warn(why);
        }
        specs.push(spec);
    }
    // --off-cpu: the sched_switch tracepoint says where threads block.
    let off_cpu_source = if opts.off_cpu {
        Some(crate::offcpu::switch_event(&mut specs)?)
    } else {
        None
    };
    // --off-cpu=wakers: sched_waking, in the waker's context, with its stack.
    let wakers_source = if opts.off_cpu && opts.off_cpu_wakers {
        Some(crate::offcpu::waking_event(&mut specs)?)
    } else {
        None
    };
    let mut rates = sample_rates(opts, &specs, warn)?;
    // The events the user asked for; with --overwrite a side-band event follows them.
    let user_events = specs.len();
    if opts.modes.overwrite {
        // The sampling events write backward into overwrite rings, which keep only the
        // newest records; COMM/MMAP2/FORK/EXIT must survive from the start, so they come
        // from a dummy event of their own in ordinary rings, kept in memory.
        specs.push(EventSpec::new(
            "dummy",
            Some("software"),
            perf_type::SOFTWARE,
            SW_DUMMY,
        ));
        rates.push(SampleRate::Period(1));
    }
    if let CallGraph::Dwarf(size) = opts.call_graph {
        if size == 0 || size & 7 != 0 || size > 65528 {
            return Err(RecordError::Invalid(format!(
                "--call-graph dwarf stack size must be a multiple of 8 in 8..=65528, not {size}"
            )));
        }
    }
    Ok(Plan {
        cpus,
        specs,
        rates,
        user_events,
        off_cpu_source,
        wakers_source,
    })
}

/// The rate of each event: its own period=/freq=, else -c/-F, else perf's default, lowered
/// to kernel.perf_event_max_sample_rate.
fn sample_rates(
    opts: &RecordOptions,
    specs: &[EventSpec],
    warn: &mut dyn FnMut(String),
) -> Result<Vec<SampleRate>, RecordError> {
    let max_rate = procfs::max_sample_rate();
    let mut rates = Vec::new();
    for spec in specs {
        // As perf record: every hit of a tracepoint or breakpoint is a sample by default;
        // -c/-F apply to every kind of event, and an event's own period=/freq= to itself.
        let default = if matches!(
            spec.attr_type,
            perf_type::TRACEPOINT | perf_type::BREAKPOINT
        ) {
            SampleRate::Period(1)
        } else {
            SampleRate::Frequency(DEFAULT_FREQUENCY)
        };
        let mut rate = spec.sample_rate(opts.rate, default);
        match rate {
            SampleRate::Period(0) | SampleRate::Frequency(0) => {
                return Err(RecordError::Invalid(format!(
                    "event '{}': the period/frequency must be > 0",
                    spec.name
                )));
            }
            SampleRate::Frequency(f) => {
                if let Some(max) = max_rate.filter(|&m| m > 0 && f > m) {
                    warn(format!(
                        "event '{}': frequency {f} Hz is above kernel.perf_event_max_sample_rate ({max} Hz): \
                         lowering to {max} Hz (raise the limit with `sysctl -w kernel.perf_event_max_sample_rate=N`)",
                        spec.name
                    ));
                    rate = SampleRate::Frequency(max);
                }
            }
            SampleRate::Period(_) => {}
        }
        rates.push(rate);
    }
    Ok(rates)
}

/// The attr of every event: built from its spec and rate, then adjusted for the recording
/// (`--overwrite`'s backward rings, user-only events, `--off-cpu`'s stacks and switches).
pub(super) fn event_attrs(opts: &RecordOptions, plan: &Plan, user_only: &[bool]) -> Vec<Attr> {
    let Plan {
        specs,
        rates,
        user_events,
        off_cpu_source,
        wakers_source,
        ..
    } = plan;
    let (user_events, off_cpu_source, wakers_source) =
        (*user_events, *off_cpu_source, *wakers_source);
    specs
        .iter()
        .zip(rates)
        .enumerate()
        .map(|(i, (s, r))| {
            let side_band = if opts.modes.overwrite {
                i == user_events
            } else {
                i == 0
            };
            let mut a = build_attr(s, *r, opts, side_band);
            if opts.modes.overwrite && i < user_events {
                a.flags |= attr_flag::WRITE_BACKWARD;
            }
            if user_only[i] {
                a.flags |= attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV;
            }
            if off_cpu_source == Some(i) || wakers_source == Some(i) {
                // The blocked thread's (the waker's) stack, even without -g.
                a.sample_type |= sample_type::CALLCHAIN;
            }
            if (opts.off_cpu || opts.context_switches) && i == 0 {
                // PERF_RECORD_SWITCH: when a blocked thread gets a CPU back.
                a.flags |= attr_flag::CONTEXT_SWITCH;
            }
            a
        })
        .collect()
}

/// The tasks the events follow.
pub(super) struct Tasks {
    /// The launched command, held until the recording starts.
    pub(super) child: Option<PendingChild>,
    /// The tasks to open each event for (`-1`: every task, for system-wide recording).
    pub(super) tasks: Vec<i32>,
    /// The processes of `-p`, or the launched command.
    pub(super) target_pids: Vec<i32>,
}

/// Launches the command (held, not started) or lists the threads of the `-p` processes.
pub(super) fn launch_target(
    opts: &RecordOptions,
    stdout_is_stream: bool,
) -> Result<Tasks, RecordError> {
    let mut child: Option<PendingChild> = None;
    let (tasks, target_pids): (Vec<i32>, Vec<i32>) = match &opts.target {
        Target::Command(argv) => {
            let c = launch::spawn_held_with(argv, stdout_is_stream)?;
            let pid = c.pid();
            child = Some(c);
            (vec![pid], vec![pid])
        }
        Target::Pids(pids) => {
            let mut tids = Vec::new();
            for &pid in pids {
                let t = procfs::threads(pid);
                if pid <= 0 || t.is_empty() || !procfs::process_alive(pid) {
                    return Err(RecordError::NoSuchProcess(pid));
                }
                tids.extend(t);
            }
            (tids, pids.clone())
        }
        Target::System(cmd) => {
            if let Some(argv) = cmd {
                child = Some(launch::spawn_held_with(argv, stdout_is_stream)?);
            }
            (vec![-1], Vec::new())
        }
    };
    Ok(Tasks {
        child,
        tasks,
        target_pids,
    })
}
