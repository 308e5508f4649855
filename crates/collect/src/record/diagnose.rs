//! Open-error diagnosis: why an event or a group cannot be opened, in words a user can act
//! on (permissions, missing PMUs, unsupported modifiers, descriptor limits), and the checks
//! that refuse groups before anything is opened.

use culprit_decode::abi::perf_type;

use crate::error::RecordError;
use crate::events::EventSpec;
use crate::perfdata::Attr;
use crate::procfs;

/// Why perf_event_open of a cycles sampler failed with `errno`, in words (not the raw
/// `os error N` of the errno, which says nothing to a user).
pub(super) fn cycles_unavailable_reason(errno: i32) -> String {
    match errno {
        libc::ENOENT | libc::ENODEV => {
            "this machine has no hardware PMU, e.g. a VM without a virtual PMU".to_string()
        }
        libc::EOPNOTSUPP => "the PMU here can count cycles but not sample them".to_string(),
        libc::EACCES | libc::EPERM => {
            "no permission to open it (kernel.perf_event_paranoid)".to_string()
        }
        libc::EBUSY => "the PMU is in use by another tool".to_string(),
        other => {
            let e = std::io::Error::from_raw_os_error(other);
            // The message without its `(os error N)` tail.
            let text = e.to_string();
            text.split(" (os error").next().unwrap_or(&text).to_string()
        }
    }
}

/// Refuses event groups that cannot be recorded as written.
/// `per_task`: the events follow tasks (not whole CPUs), so not inheriting them matters.
pub(super) fn check_groups(
    specs: &[EventSpec],
    per_task: bool,
    warn: &mut dyn FnMut(String),
) -> Result<(), RecordError> {
    let mut leader_sampled = false;
    for (i, s) in specs.iter().enumerate() {
        let Some(g) = s.group else { continue };
        let follows_group = i > 0 && specs[i - 1].group.is_some();
        if !g.leader && !follows_group {
            return Err(RecordError::Invalid(format!(
                "event '{}' is a group member without a leader before it",
                s.name
            )));
        }
        if g.leader_sampling && !g.leader && s.rate.is_some() {
            return Err(RecordError::Invalid(format!(
                "event '{}': a member of a leader-sampled group (`{{…}}:S`) does not sample, \
                 so its period/freq term means nothing; set the rate on the leader",
                s.name
            )));
        }
        leader_sampled |= g.leader_sampling;
    }
    if leader_sampled && per_task {
        warn(
            "leader sampling (`{…}:S`): the group's counters are not inherited, so child \
             processes and new threads are not recorded (as perf)"
                .to_string(),
        );
    }
    Ok(())
}

/// Explains a perf_event_open errno for one event.
pub(super) fn open_error(spec: &EventSpec, attr: &Attr, errno: i32, nfds: usize) -> RecordError {
    let event = spec.name.clone();
    match errno {
        libc::EACCES | libc::EPERM => RecordError::PermissionDenied {
            event,
            paranoid: procfs::perf_event_paranoid(),
        },
        libc::EMFILE | libc::ENFILE => RecordError::TooManyFiles { needed: nfds },
        libc::ESRCH => RecordError::Invalid(format!(
            "event '{event}': the target task exited while events were opened"
        )),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            let reason = if attr.precise_ip() > 0 {
                format!(
                    "precise sampling (:{}) is not available for it on this CPU/VM",
                    "p".repeat(attr.precise_ip() as usize)
                )
            } else if matches!(
                attr.attr_type,
                perf_type::HARDWARE | perf_type::HW_CACHE | perf_type::RAW
            ) {
                "the CPU's PMU does not provide it (no hardware PMU in this VM?); \
                 `culprit list` shows what works, software events such as cpu-clock always do"
                    .to_string()
            } else if errno == libc::EOPNOTSUPP {
                "the PMU cannot sample it (counting only, or this sample type/filter is unsupported)".to_string()
            } else {
                "no such event on this PMU".to_string()
            };
            RecordError::EventNotSupported { event, reason }
        }
        libc::ENOSPC if attr.attr_type == perf_type::BREAKPOINT => RecordError::EventNotSupported {
            event,
            reason: "no free debug register: x86 has 4 per CPU, shared with debuggers and other \
                     tools (watch fewer addresses at once)"
                .to_string(),
        },
        libc::EINVAL if attr.attr_type == perf_type::BREAKPOINT => RecordError::EventInvalid {
            event,
            reason:
                "the kernel refused this breakpoint: x86 watches writes (:w), reads and writes \
                     (:rw) or execution (:x) of 1, 2, 4 or 8 aligned bytes"
                    .to_string(),
        },
        libc::EINVAL => RecordError::EventInvalid {
            event,
            reason: "check its config terms and modifiers, the period/frequency (frequency above \
                     kernel.perf_event_max_sample_rate?) and the call-graph stack size"
                .to_string(),
        },
        libc::EBUSY => RecordError::EventNotSupported {
            event,
            reason: "the counter is busy (another tool holds it exclusively)".to_string(),
        },
        e => RecordError::Open {
            event,
            source: std::io::Error::from_raw_os_error(e),
        },
    }
}
