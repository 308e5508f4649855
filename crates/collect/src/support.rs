//! What the running kernel and CPU support, found by trying: does an event open, does it
//! count, how many general-purpose counters really work, are branch stacks available, and
//! the perf sysctls. (Not the trace language's probes, which are culprit-trace's.)
//!
//! Every check opens counting events on the calling thread only and closes them before
//! returning.

use perf_event_open_sys as sys;

use crate::events::EventSpec;

/// A perf event file descriptor, closed on drop.
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

/// PERF_COUNT_HW_CPU_CYCLES, the generic `cycles` event's config.
pub const HW_CPU_CYCLES: u32 = sys::bindings::PERF_COUNT_HW_CPU_CYCLES;

fn counting_attr(attr_type: u32, config: u64) -> sys::bindings::perf_event_attr {
    let mut attr = sys::bindings::perf_event_attr::default();
    attr.type_ = attr_type;
    attr.size = std::mem::size_of::<sys::bindings::perf_event_attr>() as u32;
    attr.config = config;
    attr.set_disabled(1);
    // User space only: allowed at perf_event_paranoid 2 without privileges.
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    attr
}

fn spec_attr(spec: &EventSpec) -> sys::bindings::perf_event_attr {
    let mut attr = counting_attr(spec.attr_type, spec.config);
    attr.config1 = spec.config1;
    attr.config2 = spec.config2;
    attr.bp_type = spec.bp_type;
    attr
}

fn open(attr: &mut sys::bindings::perf_event_attr, group_fd: i32) -> Result<Fd, i32> {
    open_on(attr, 0, -1, group_fd)
}

fn open_on(
    attr: &mut sys::bindings::perf_event_attr,
    pid: i32,
    cpu: i32,
    group_fd: i32,
) -> Result<Fd, i32> {
    // SAFETY: attr is a valid, fully initialised perf_event_attr that outlives the call.
    let fd = unsafe {
        sys::perf_event_open(
            attr,
            pid,
            cpu,
            group_fd,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(Fd(fd))
}

/// Opens a counting event of the given type/config on the calling thread and closes it.
/// Returns the errno on failure.
pub fn try_open_counter(attr_type: u32, config: u64) -> Result<(), i32> {
    open(&mut counting_attr(attr_type, config), -1).map(drop)
}

/// Opens `spec` (user space only, counting) on the calling thread and closes it; an uncore
/// event (with a `cpumask`) system-wide on the first CPU of its mask, where it counts.
pub fn try_open_event(spec: &EventSpec) -> Result<(), i32> {
    let (pid, cpu) = trial_place(spec);
    open_on(&mut spec_attr(spec), pid, cpu, -1).map(drop)
}

/// Where [`try_open_event`] opens `spec`: (pid, cpu).
pub fn trial_place(spec: &EventSpec) -> (i32, i32) {
    match spec.cpumask.as_deref().and_then(<[u32]>::first) {
        Some(&cpu) => (-1, cpu as i32),
        None => (0, -1),
    }
}

/// Whether a hardware PMU is usable for this process: the generic `instructions` event opens.
///
/// On VMs without a virtual PMU this fails with ENOENT/EOPNOTSUPP; culprit then falls back to
/// software events (cpu-clock).
pub fn hardware_pmu_available() -> bool {
    try_open_counter(
        sys::bindings::PERF_TYPE_HARDWARE,
        sys::bindings::PERF_COUNT_HW_INSTRUCTIONS as u64,
    )
    .is_ok()
}

/// Some user-space work to count: a few million dependent additions.
fn busy_work() -> u64 {
    let mut x = 0u64;
    for i in 0..3_000_000u64 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    x
}

/// Opens `attrs` as one group (the first is the leader), runs some work, and returns each
/// member's count. Fails with the errno of the first open that fails.
fn count_group(attrs: &mut [sys::bindings::perf_event_attr]) -> Result<Vec<u64>, i32> {
    let mut fds: Vec<Fd> = Vec::with_capacity(attrs.len());
    for (i, attr) in attrs.iter_mut().enumerate() {
        attr.read_format = sys::bindings::PERF_FORMAT_GROUP as u64;
        // Members follow the leader's enable state.
        attr.set_disabled(u64::from(i == 0));
        let leader = fds.first().map_or(-1, |f| f.0);
        fds.push(open(attr, leader)?);
    }
    let Some(leader) = fds.first() else {
        return Ok(Vec::new());
    };
    let flag = sys::bindings::PERF_IOC_FLAG_GROUP;
    // SAFETY: ioctls on a perf descriptor we own.
    unsafe { sys::ioctls::RESET(leader.0, flag) };
    // SAFETY: as above.
    unsafe { sys::ioctls::ENABLE(leader.0, flag) };
    std::hint::black_box(busy_work());
    // SAFETY: as above.
    unsafe { sys::ioctls::DISABLE(leader.0, flag) };
    // PERF_FORMAT_GROUP without other flags: u64 nr, then nr u64 values.
    let mut buf = vec![0u64; attrs.len() + 1];
    let want = buf.len() * 8;
    // SAFETY: buf has `want` writable bytes.
    let n = unsafe { libc::read(leader.0, buf.as_mut_ptr().cast(), want) };
    if n < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    let n = n as usize / 8;
    let nr = buf.first().copied().unwrap_or(0) as usize;
    Ok(buf.get(1..n.min(nr + 1)).unwrap_or(&[]).to_vec())
}

/// Counts `spec` in user space over a short busy loop.
pub fn count_event(spec: &EventSpec) -> Result<u64, i32> {
    let counts = count_group(&mut [spec_attr(spec)])?;
    Ok(counts.first().copied().unwrap_or(0))
}

/// How many general-purpose counters work together, as found by trying groups of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableCounters {
    /// The largest N for which a group of N events opened and every member counted.
    pub usable: usize,
    /// Per group size tried: the counts, or the errno of the failed open.
    pub tried: Vec<(usize, Result<Vec<u64>, i32>)>,
}

/// Finds how many general-purpose counters really count: opens groups of 1..=`max`
/// `instructions` events and returns the largest size whose members all count nonzero.
///
/// Why not trust CPUID: in VMs the guest may be told of 6 counters while only 5 are backed
/// (the 6th reads 0), and the NMI watchdog may hold one.
pub fn usable_counters(max: usize) -> UsableCounters {
    let mut found = UsableCounters {
        usable: 0,
        tried: Vec::new(),
    };
    for n in 1..=max {
        let mut attrs: Vec<_> = (0..n)
            .map(|_| {
                counting_attr(
                    sys::bindings::PERF_TYPE_HARDWARE,
                    sys::bindings::PERF_COUNT_HW_INSTRUCTIONS as u64,
                )
            })
            .collect();
        let result = count_group(&mut attrs);
        let all_count = matches!(&result, Ok(c) if c.len() == n && c.iter().all(|&v| v > 0));
        found.tried.push((n, result));
        if !all_count {
            break;
        }
        found.usable = n;
    }
    found
}

/// Whether sampling with branch stacks (LBR, AMD BRS/LbrExtV2) opens: a `cycles` sampling
/// event with `PERF_SAMPLE_BRANCH_STACK` for user branches. Returns the errno on failure.
pub fn branch_stack_available() -> Result<(), i32> {
    let mut attr = counting_attr(
        sys::bindings::PERF_TYPE_HARDWARE,
        sys::bindings::PERF_COUNT_HW_CPU_CYCLES as u64,
    );
    attr.__bindgen_anon_1.sample_period = 1_000_000;
    attr.sample_type =
        sys::bindings::PERF_SAMPLE_IP as u64 | sys::bindings::PERF_SAMPLE_BRANCH_STACK as u64;
    attr.branch_sample_type = sys::bindings::PERF_SAMPLE_BRANCH_ANY as u64
        | sys::bindings::PERF_SAMPLE_BRANCH_USER as u64;
    open(&mut attr, -1).map(drop)
}

fn read_sysctl<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/sys/kernel/perf_event_paranoid` (-1..=4; 2 is the usual default: user-space only
/// for unprivileged users).
pub fn perf_event_paranoid() -> Option<i32> {
    read_sysctl("perf_event_paranoid")
}

/// `/proc/sys/kernel/perf_event_max_sample_rate` (samples per second per CPU).
pub fn perf_event_max_sample_rate() -> Option<u64> {
    read_sysctl("perf_event_max_sample_rate")
}

/// Whether the NMI watchdog is on (`/proc/sys/kernel/nmi_watchdog`); on x86 it holds one
/// general-purpose counter.
pub fn nmi_watchdog() -> Option<bool> {
    read_sysctl::<u32>("nmi_watchdog").map(|v| v != 0)
}

/// The symbolic name of an errno from perf_event_open, with what it usually means there.
pub fn describe_errno(errno: i32) -> String {
    let what = match errno {
        libc::ENOENT => "ENOENT: event not supported by this PMU/CPU",
        libc::EOPNOTSUPP => {
            "EOPNOTSUPP: feature not supported (e.g. no hardware PMU or branch stacks)"
        }
        libc::EINVAL => "EINVAL: invalid attributes for this PMU",
        libc::EACCES => "EACCES: not permitted (see perf_event_paranoid)",
        libc::EPERM => "EPERM: not permitted (see perf_event_paranoid, CAP_PERFMON)",
        libc::ENODEV => "ENODEV: no such device / PMU",
        libc::EBUSY => "EBUSY: PMU in use",
        libc::ENOSPC => "ENOSPC: no free counter",
        libc::E2BIG => "E2BIG: attr size not accepted",
        _ => return format!("errno {errno}"),
    };
    what.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_testkit::pmu_lock;

    #[test]
    fn test_software_event_opens_and_counts() {
        let _lock = pmu_lock();
        let spec = crate::events::EventSpec::new("task-clock", Some("software"), 1, 1);
        assert_eq!(try_open_event(&spec), Ok(()));
        // task-clock counts nanoseconds of the busy loop: clearly nonzero.
        assert!(count_event(&spec).unwrap() > 0);
    }

    #[test]
    fn test_invalid_event_fails_with_errno() {
        let _lock = pmu_lock();
        // Software config far past the last PERF_COUNT_SW_* id.
        let spec = crate::events::EventSpec::new("bogus", Some("software"), 1, 0xFFFF);
        assert!(try_open_event(&spec).is_err());
    }

    #[test]
    fn test_sysctls_match_proc() {
        let want: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(perf_event_paranoid(), Some(want));
        assert!(perf_event_max_sample_rate().is_some_and(|r| r > 0));
    }

    #[test]
    fn test_usable_counters_consistent_with_hardware() {
        let _lock = pmu_lock();
        let found = usable_counters(8);
        if hardware_pmu_available() {
            assert!(found.usable >= 1, "{found:?}");
        } else {
            assert_eq!(found.usable, 0, "{found:?}");
            assert!(
                matches!(found.tried.first(), Some((1, Err(_)))),
                "{found:?}"
            );
        }
    }

    #[test]
    fn test_describe_errno() {
        assert!(describe_errno(libc::ENOENT).starts_with("ENOENT"));
        assert_eq!(describe_errno(12345), "errno 12345");
    }
}
