//! Who may sample what: the kernel's `kernel.perf_event_paranoid` rules for users without
//! CAP_PERFMON (or CAP_SYS_ADMIN), checked before anything is opened or started, so that a
//! recording the kernel would cut down to nothing is refused with the reason instead.
//!
//! The rules (kernel/events/core.c, `perf_allow_kernel` and `perf_allow_cpu`):
//! - level ≥ 2: no kernel profiling (`exclude_kernel` must be set);
//! - level ≥ 1: no CPU-wide events (pid -1, `record -a`);
//! - levels above 2 are 2 upstream (some distribution kernels refuse everything at 3: the
//!   kernel's own EACCES then says so).
//!
//! [`check`] is a pure function of those facts; [`Privileges::current`] reads them.

use culprit_decode::abi::perf_type;

use crate::error::RecordError;
use crate::events::EventSpec;

/// `CAP_SYS_ADMIN`: enough for every perf event on every kernel.
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON` (Linux 5.8+): the capability made for perf.
const CAP_PERFMON: u32 = 38;

/// What the kernel will look at when an event is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privileges {
    /// `kernel.perf_event_paranoid` (`None` if unreadable: the kernel decides).
    pub paranoid: Option<i32>,
    /// The effective user id.
    pub euid: u32,
    /// The effective capability set (`CapEff` of /proc/self/status), if readable.
    pub cap_eff: Option<u64>,
}

impl Privileges {
    /// This process's privileges.
    pub fn current() -> Privileges {
        let cap_eff = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| parse_cap_eff(&s));
        Privileges {
            paranoid: crate::procfs::perf_event_paranoid(),
            // SAFETY: geteuid has no preconditions.
            euid: unsafe { libc::geteuid() },
            cap_eff,
        }
    }

    /// Whether the paranoid level does not apply (CAP_PERFMON or CAP_SYS_ADMIN; root when
    /// the capabilities cannot be read).
    pub fn perfmon_capable(&self) -> bool {
        match self.cap_eff {
            Some(caps) => caps & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN) != 0,
            None => self.euid == 0,
        }
    }
}

/// The `CapEff:` mask of a /proc/PID/status text.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// What a recording may do, decided by [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Per event (in order): sample user space only (`exclude_kernel`, `exclude_hv`), as
    /// perf falls back when kernel profiling is not allowed and the event asked for both.
    pub user_only: Vec<bool>,
    /// The warning that goes with the fallback (once).
    pub warning: Option<String>,
}

/// What an unprivileged user may do at a paranoid level, for messages.
fn allows(level: i32) -> &'static str {
    match level {
        i32::MIN..=-1 => "every event",
        0 => "kernel and system-wide profiling, without raw tracepoint data",
        1 => "kernel profiling of their own processes, but not system-wide profiling",
        _ => "profiling their own processes in user space only",
    }
}

/// The advice closing every refusal: how to get the permission.
fn how_to_allow(level_needed: i32) -> String {
    format!(
        "run as root, grant CAP_PERFMON (`setcap cap_perfmon+ep` on culprit), or lower the \
         limit with `sysctl -w kernel.perf_event_paranoid={level_needed}`"
    )
}

/// Decides, before anything is opened, what the kernel will let this recording do.
/// `system_wide`: the events are CPU-wide (pid -1, `-a`). Errors: a kernel-only event
/// (`:k`, a tracepoint) or a system-wide recording that the paranoid level forbids, with
/// the level, what it allows and how to change it. Kernel+user events fall back to user
/// space with a warning, as perf does.
pub fn check(
    privileges: &Privileges,
    system_wide: bool,
    events: &[EventSpec],
) -> Result<Access, RecordError> {
    let mut access = Access {
        user_only: vec![false; events.len()],
        warning: None,
    };
    let level = match privileges.paranoid {
        Some(level) if !privileges.perfmon_capable() => level,
        _ => return Ok(access),
    };
    if system_wide && level >= 1 {
        return Err(RecordError::NotPermitted(format!(
            "-a samples every process, but kernel.perf_event_paranoid = {level} allows users \
             without CAP_PERFMON {}: {}",
            allows(level),
            how_to_allow(0)
        )));
    }
    if level < 2 {
        return Ok(access);
    }
    for (i, e) in events.iter().enumerate() {
        if e.exclude_kernel {
            continue;
        }
        let kernel_only = if e.attr_type == perf_type::TRACEPOINT {
            Some("is a tracepoint, which fires in the kernel")
        } else if e.exclude_user {
            Some("samples the kernel only")
        } else {
            None
        };
        if let Some(why) = kernel_only {
            return Err(RecordError::NotPermitted(format!(
                "event '{}' {why}, but kernel.perf_event_paranoid = {level} allows users \
                 without CAP_PERFMON {}: {}",
                e.name,
                allows(level),
                how_to_allow(1)
            )));
        }
        access.user_only[i] = true;
        access.warning = Some(format!(
            "kernel.perf_event_paranoid = {level}: sampling user space only (:u)"
        ));
    }
    Ok(access)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str) -> EventSpec {
        crate::events::parse_event_list(name)
            .unwrap()
            .into_iter()
            .next()
            .unwrap()
    }

    fn user(paranoid: i32) -> Privileges {
        Privileges {
            paranoid: Some(paranoid),
            euid: 1000,
            cap_eff: Some(0),
        }
    }

    #[test]
    fn test_kernel_only_event_is_refused_at_paranoid_2_with_the_reason() {
        let err = check(&user(2), false, &[ev("cpu-clock:k")]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("event 'cpu-clock:k' samples the kernel only"),
            "{msg}"
        );
        assert!(msg.contains("kernel.perf_event_paranoid = 2"), "{msg}");
        assert!(msg.contains("in user space only"), "{msg}");
        assert!(
            msg.contains("sysctl -w kernel.perf_event_paranoid=1"),
            "{msg}"
        );
        // A mix is refused too (the :u half alone would look like a scheduling problem).
        let both = [ev("cpu-clock:k"), ev("cpu-clock:u")];
        assert!(check(&user(2), false, &both).is_err());
        // Level 3 (2 upstream) as well.
        assert!(check(&user(3), false, &[ev("cpu-clock:k")]).is_err());
    }

    #[test]
    fn test_kernel_and_user_event_falls_back_to_user_only_at_paranoid_2() {
        let a = check(&user(2), false, &[ev("cpu-clock"), ev("task-clock:u")]).unwrap();
        assert_eq!(a.user_only, vec![true, false]);
        assert_eq!(
            a.warning.as_deref(),
            Some("kernel.perf_event_paranoid = 2: sampling user space only (:u)")
        );
        let a = check(&user(2), false, &[ev("cpu-clock:u")]).unwrap();
        assert_eq!((a.user_only, a.warning), (vec![false], None));
    }

    #[test]
    fn test_lower_levels_and_privileged_users_are_not_limited() {
        for p in [-1, 0, 1] {
            let a = check(&user(p), false, &[ev("cpu-clock:k"), ev("cpu-clock")]).unwrap();
            assert_eq!((a.user_only, a.warning), (vec![false, false], None), "{p}");
        }
        let root = Privileges {
            paranoid: Some(2),
            euid: 0,
            cap_eff: Some(0x1ff_ffff_ffff),
        };
        assert!(check(&root, true, &[ev("cpu-clock:k")])
            .unwrap()
            .warning
            .is_none());
        let perfmon = Privileges {
            cap_eff: Some(1 << CAP_PERFMON),
            ..user(2)
        };
        assert!(check(&perfmon, true, &[ev("cpu-clock:k")]).is_ok());
        // Root without capabilities (a container) is limited like anyone.
        let capless_root = Privileges { euid: 0, ..user(2) };
        assert!(check(&capless_root, false, &[ev("cpu-clock:k")]).is_err());
        // Unknown level: the kernel decides.
        let unknown = Privileges {
            paranoid: None,
            ..user(2)
        };
        assert!(check(&unknown, true, &[ev("cpu-clock:k")]).is_ok());
    }

    #[test]
    fn test_system_wide_needs_paranoid_0() {
        for p in [1, 2] {
            let msg = check(&user(p), true, &[ev("cpu-clock")])
                .unwrap_err()
                .to_string();
            assert!(msg.contains("-a samples every process"), "{msg}");
            assert!(
                msg.contains(&format!("kernel.perf_event_paranoid = {p}")),
                "{msg}"
            );
            assert!(
                msg.contains("sysctl -w kernel.perf_event_paranoid=0"),
                "{msg}"
            );
        }
        assert!(check(&user(0), true, &[ev("cpu-clock:k")]).is_ok());
    }

    #[test]
    fn test_tracepoints_are_kernel_only() {
        let mut tp = ev("cpu-clock");
        tp.attr_type = perf_type::TRACEPOINT;
        tp.name = "sched:sched_switch".into();
        let msg = check(&user(2), false, &[tp]).unwrap_err().to_string();
        assert!(
            msg.contains("'sched:sched_switch' is a tracepoint"),
            "{msg}"
        );
    }

    #[test]
    fn test_parse_cap_eff() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
    }
}
