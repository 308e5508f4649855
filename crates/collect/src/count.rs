//! Counting (`culprit stat`): open groups of counting events on a launched command (inherited
//! by its children and threads), on running processes (`-p`) or on every CPU (`-a`); read them
//! with `PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID`, optionally every
//! interval, and return raw values with their enabled/running times.
//!
//! Why groups: the kernel schedules a group on the PMU as a unit, so the members of one group
//! are counted over exactly the same time and their ratios need no scaling. Different groups
//! may be multiplexed (time-shared) when they do not fit the counters at once; their values
//! are then extrapolated with [`Reading::scaled`] (`value × enabled / running`, as perf stat
//! does), and [`Reading::fraction_running`] says how much of the run backs them.
//!
//! Read layout with `PERF_FORMAT_GROUP` (Linux `include/uapi/linux/perf_event.h`):
//! `u64 nr; u64 time_enabled; u64 time_running; { u64 value; u64 id; } [nr]`.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use culprit_decode::abi::{attr_flag, perf_type, read_format};
use serde::Serialize;

use crate::error::RecordError;
use crate::events::EventSpec;
use crate::launch::{self, ChildExit, PendingChild};
use crate::perfdata::Attr;
use crate::procfs;
use crate::target::Target;

/// Options of one counting run.
#[derive(Debug, Clone)]
pub struct CountOptions {
    /// Event groups: the first event of each group is its leader. A one-event group is an
    /// ungrouped event (perf stat's default).
    pub groups: Vec<Vec<EventSpec>>,
    /// The target.
    pub target: Target,
    /// `-I`: call the interval callback this often with the counts of the last interval.
    pub interval: Option<Duration>,
}

/// One event's count with its enabled and running times (summed over tasks/CPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reading {
    /// The raw count.
    pub value: u64,
    /// Nanoseconds the event was enabled.
    pub enabled_ns: u64,
    /// Nanoseconds the event was actually on a counter.
    pub running_ns: u64,
}

impl Reading {
    /// The count extrapolated to the whole enabled time (perf stat's scaling): `None` when
    /// the event never ran ("not counted").
    pub fn scaled(&self) -> Option<f64> {
        if self.running_ns == 0 {
            return if self.enabled_ns == 0 && self.value == 0 {
                // Never enabled at all (e.g. the command exited at once): nothing to scale.
                Some(0.0)
            } else {
                None
            };
        }
        if self.running_ns >= self.enabled_ns {
            return Some(self.value as f64);
        }
        Some(self.value as f64 * self.enabled_ns as f64 / self.running_ns as f64)
    }

    /// running / enabled in 0..=1 (1 when never enabled).
    pub fn fraction_running(&self) -> f64 {
        if self.enabled_ns == 0 {
            return 1.0;
        }
        (self.running_ns as f64 / self.enabled_ns as f64).min(1.0)
    }

    /// `self - earlier`, per field (saturating): the counts of one interval.
    pub fn delta(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.saturating_sub(earlier.value),
            enabled_ns: self.enabled_ns.saturating_sub(earlier.enabled_ns),
            running_ns: self.running_ns.saturating_sub(earlier.running_ns),
        }
    }

    fn add(&mut self, other: &Reading) {
        self.value = self.value.saturating_add(other.value);
        self.enabled_ns = self.enabled_ns.saturating_add(other.enabled_ns);
        self.running_ns = self.running_ns.saturating_add(other.running_ns);
    }
}

/// The counts of one interval (`-I`).
#[derive(Debug, Clone)]
pub struct Interval {
    /// Time since counting started, at the end of this interval.
    pub elapsed: Duration,
    /// Per group, per event: the counts of this interval only.
    pub groups: Vec<Vec<Reading>>,
}

/// What a counting run produced.
#[derive(Debug, Clone)]
pub struct CountResult {
    /// Per group, per event (same shape as [`CountOptions::groups`]): totals of the run.
    pub groups: Vec<Vec<Reading>>,
    /// How the launched command ended (None for -p, or -a without a command).
    pub exit: Option<ChildExit>,
    /// Whether SIGINT/SIGTERM stopped the run.
    pub interrupted: bool,
    /// Wall time from enabling to the end.
    pub elapsed: Duration,
    /// Whether the kernel was excluded (perf_event_paranoid forbids counting it).
    pub user_only: bool,
}

/// One opened group on one task or CPU.
struct OpenGroup {
    /// Leader first.
    fds: Vec<OwnedFd>,
    /// The kernel ids of the members, in group order.
    ids: Vec<u64>,
}

/// The counting attr of one event: culprit's [`Attr`] encoding, so that it is opened (and
/// shown with `-vv`) by the same code as a recording's.
fn base_attr(spec: &EventSpec, leader: bool, inherit: bool, on_exec: bool) -> Attr {
    let mut flags = spec.modifier_flags();
    // Members follow their leader: only the leader starts disabled.
    if leader {
        flags |= attr_flag::DISABLED;
        if on_exec {
            flags |= attr_flag::ENABLE_ON_EXEC;
        }
    }
    if inherit {
        flags |= attr_flag::INHERIT;
    }
    Attr {
        attr_type: spec.attr_type,
        config: spec.config,
        config1: spec.config1,
        config2: spec.config2,
        bp_type: spec.bp_type,
        read_format: read_format::TOTAL_TIME_ENABLED
            | read_format::TOTAL_TIME_RUNNING
            | read_format::ID
            | read_format::GROUP,
        flags,
        ..Attr::default()
    }
}

/// Prints (`-vv`) the attr counting would open for `spec` on `target` and the open's failure,
/// as perf stat does for every event it then reports `<not supported>`: stat tries its
/// events first (support::try_open_event) and counts only those that open, so without this an
/// unsupported event's attr would never be shown.
pub fn display_not_opened(spec: &EventSpec, leader: bool, target: &Target, errno: i32) {
    if !crate::verbose::shows_attrs() {
        return;
    }
    let (inherit, on_exec) = match target {
        Target::Command(_) => (true, true),
        Target::Pids(_) => (true, false),
        Target::System(_) => (false, false),
    };
    let (inherit, on_exec) = if spec.cpumask.is_some() {
        (false, false)
    } else {
        (inherit, on_exec)
    };
    crate::verbose::display_attr(&base_attr(spec, leader, inherit, on_exec).to_bytes());
    // The trial open opened it on this thread (pid 0) on any CPU, or an uncore event on its
    // PMU's first CPU, without a group.
    let flags = u64::from(perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC);
    let (pid, cpu) = crate::support::trial_place(spec);
    crate::verbose::display_open(pid, cpu, -1, flags, Err(errno));
}

/// Excludes the kernel and the hypervisor (counting user space only).
fn exclude_kernel(attr: &mut Attr) {
    attr.flags |= attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV;
}

fn open_raw(attr: &mut Attr, pid: i32, cpu: i32, leader: Option<&OwnedFd>) -> Result<OwnedFd, i32> {
    crate::ring::open_with_guest_fallback(attr, pid, cpu, leader)
}

/// Explains a perf_event_open errno for one counting event.
fn open_error(spec: &EventSpec, errno: i32, group_size: usize, nfds: usize) -> RecordError {
    let event = spec.name.clone();
    match errno {
        libc::EACCES | libc::EPERM => RecordError::PermissionDenied {
            event,
            paranoid: procfs::perf_event_paranoid(),
        },
        libc::EMFILE | libc::ENFILE => RecordError::TooManyFiles { needed: nfds },
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            let reason = if matches!(
                spec.attr_type,
                perf_type::HARDWARE | perf_type::HW_CACHE | perf_type::RAW
            ) {
                "the CPU's PMU does not provide it (no hardware PMU in this VM?); `culprit list` \
                 shows what works, software events (task-clock, page-faults, context-switches) \
                 always do"
                    .to_string()
            } else {
                "no such event on this PMU".to_string()
            };
            RecordError::EventNotSupported { event, reason }
        }
        libc::EINVAL if group_size > 1 => RecordError::EventInvalid {
            event,
            reason: format!(
                "the group of {group_size} events does not fit the PMU's counters, or the event's \
                 config terms are wrong; try fewer events per group"
            ),
        },
        libc::EINVAL => RecordError::EventInvalid {
            event,
            reason: "check its config terms and modifiers".to_string(),
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

/// One group read: time_enabled, time_running, then (value, id) per member.
type GroupRead = (u64, u64, Vec<(u64, u64)>);

/// Reads one group leader.
fn read_group(fd: &OwnedFd, n: usize) -> std::io::Result<GroupRead> {
    let mut buf = vec![0u64; 3 + 2 * n];
    // SAFETY: buf has buf.len() * 8 writable bytes.
    let got = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len() * 8) };
    if got < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let words = got as usize / 8;
    let buf = buf.get(..words).unwrap_or(&[]);
    let nr = buf.first().copied().unwrap_or(0) as usize;
    let enabled = buf.get(1).copied().unwrap_or(0);
    let running = buf.get(2).copied().unwrap_or(0);
    let values = buf
        .get(3..)
        .unwrap_or(&[])
        .chunks_exact(2)
        .take(nr)
        .map(|c| (c[0], c[1]))
        .collect();
    Ok((enabled, running, values))
}

/// Sums every opened instance of every group into per-group, per-event readings.
fn read_all(open: &[Vec<OpenGroup>], shape: &[Vec<EventSpec>]) -> Vec<Vec<Reading>> {
    let mut out: Vec<Vec<Reading>> = shape
        .iter()
        .map(|g| vec![Reading::default(); g.len()])
        .collect();
    for (gi, instances) in open.iter().enumerate() {
        for inst in instances {
            let Some(leader) = inst.fds.first() else {
                continue;
            };
            let Ok((ena, run, values)) = read_group(leader, inst.ids.len()) else {
                continue;
            };
            for (value, id) in values {
                // Match by id, not position: robust against members the kernel left out.
                if let Some(ei) = inst.ids.iter().position(|&x| x == id) {
                    if let Some(r) = out.get_mut(gi).and_then(|g| g.get_mut(ei)) {
                        r.add(&Reading {
                            value,
                            enabled_ns: ena,
                            running_ns: run,
                        });
                    }
                }
            }
        }
    }
    out
}

fn ioctl_all(open: &[Vec<OpenGroup>], on: bool) {
    for inst in open.iter().flatten() {
        if let Some(leader) = inst.fds.first() {
            let _ = crate::ring::set_enabled(leader, on);
        }
    }
}

/// The tasks (pid, cpu) a count opens every group on, how, and the processes it watches.
struct Tasks {
    places: Vec<(i32, i32)>,
    inherit: bool,
    on_exec: bool,
    pids: Vec<i32>,
}

impl Tasks {
    /// The tasks of `target`, with the command it launches (held before its exec).
    fn of(target: &Target) -> Result<(Tasks, Option<PendingChild>), RecordError> {
        let mut child: Option<PendingChild> = None;
        let tasks = match target {
            Target::Command(argv) => {
                let c = launch::spawn_held(argv)?;
                let pid = c.pid();
                child = Some(c);
                Tasks {
                    places: vec![(pid, -1)],
                    inherit: true,
                    on_exec: true,
                    pids: vec![pid],
                }
            }
            Target::Pids(pids) => {
                let mut places = Vec::new();
                for &pid in pids {
                    let tids = procfs::threads(pid);
                    if pid <= 0 || tids.is_empty() || !procfs::process_alive(pid) {
                        return Err(RecordError::NoSuchProcess(pid));
                    }
                    places.extend(tids.into_iter().map(|t| (t, -1)));
                }
                Tasks {
                    places,
                    inherit: true,
                    on_exec: false,
                    pids: pids.clone(),
                }
            }
            Target::System(cmd) => {
                if let Some(argv) = cmd {
                    child = Some(launch::spawn_held(argv)?);
                }
                let cpus = procfs::online_cpus();
                Tasks {
                    places: cpus.into_iter().map(|c| (-1, c as i32)).collect(),
                    inherit: false,
                    on_exec: false,
                    pids: Vec::new(),
                }
            }
        };
        Ok((tasks, child))
    }
}

/// The groups of a count, opened: one instance per task of each group.
struct OpenedGroups {
    groups: Vec<Vec<OpenGroup>>,
    /// Per group: opened without enable_on_exec, so an ioctl enables it once all are open.
    enable_by_ioctl: Vec<bool>,
    /// The kernel could not be counted: every event counts user space only (`:u`).
    user_only: bool,
}

/// Opens every group of `opts` on `tasks` (an uncore group on its PMU's CPUs, a hybrid
/// core PMU's on its own CPUs).
fn open_groups(
    opts: &CountOptions,
    tasks: &Tasks,
    warn: &mut dyn FnMut(String),
) -> Result<OpenedGroups, RecordError> {
    let nfds: usize = opts.groups.iter().map(Vec::len).sum::<usize>() * tasks.places.len();
    let mut out = OpenedGroups {
        groups: Vec::with_capacity(opts.groups.len()),
        enable_by_ioctl: Vec::with_capacity(opts.groups.len()),
        user_only: false,
    };
    for group in &opts.groups {
        // An uncore event counts system-wide on its PMU's cpumask CPUs, whatever the target
        // (perf does the same): not per task, not inherited, enabled by ioctl.
        let uncore = group.first().and_then(|s| s.cpumask.as_deref());
        let (places, inherit, on_exec) = match uncore {
            Some(cpus) => (
                cpus.iter().map(|&c| (-1, c as i32)).collect::<Vec<_>>(),
                false,
                false,
            ),
            // A hybrid core PMU's event counts on its own CPUs only (system-wide).
            None => (
                tasks
                    .places
                    .iter()
                    .copied()
                    .filter(|&(_, cpu)| {
                        cpu < 0 || group.first().is_none_or(|s| s.counts_on(cpu as u32))
                    })
                    .collect(),
                tasks.inherit,
                tasks.on_exec,
            ),
        };
        out.enable_by_ioctl.push(!on_exec);
        let mut instances = Vec::with_capacity(places.len());
        for (n, &(pid, cpu)) in places.iter().enumerate() {
            let how = GroupOpen {
                pid,
                cpu,
                inherit,
                on_exec,
                first_place: n == 0,
                nfds,
            };
            if let Some(inst) =
                open_instance(opts, group, &how, &tasks.pids, &mut out.user_only, warn)?
            {
                instances.push(inst);
            }
        }
        out.groups.push(instances);
    }
    Ok(out)
}

/// Where and how one instance of a group opens.
struct GroupOpen {
    pid: i32,
    cpu: i32,
    inherit: bool,
    on_exec: bool,
    /// The group's first place: its attrs are shown (`-vv`), once per event.
    first_place: bool,
    /// File descriptors the whole count opens (for the error of running out of them).
    nfds: usize,
}

/// Opens one instance of `group`; `None` when its thread exited meanwhile (`-p`, while
/// the process lives). Without the right to count the kernel, falls back to user space
/// (setting `user_only`, with a warning, for the instances opened after it) as perf stat
/// does.
fn open_instance(
    opts: &CountOptions,
    group: &[EventSpec],
    how: &GroupOpen,
    pids: &[i32],
    user_only: &mut bool,
    warn: &mut dyn FnMut(String),
) -> Result<Option<OpenGroup>, RecordError> {
    let (pid, cpu, nfds) = (how.pid, how.cpu, how.nfds);
    let mut inst = OpenGroup {
        fds: Vec::with_capacity(group.len()),
        ids: Vec::with_capacity(group.len()),
    };
    for (i, spec) in group.iter().enumerate() {
        let mut attr = base_attr(spec, i == 0, how.inherit, how.on_exec);
        if *user_only {
            exclude_kernel(&mut attr);
        }
        if how.first_place {
            // Once per event, before its first open, as perf stat -vv.
            crate::verbose::display_attr(&attr.to_bytes());
        }
        crate::events::check_precise(spec).map_err(|e| RecordError::Invalid(e.to_string()))?;
        let leader = inst.fds.first();
        let fd = match open_raw(&mut attr, pid, cpu, leader) {
            Ok(fd) => fd,
            Err(e) if (e == libc::EACCES || e == libc::EPERM) && !*user_only && cpu < 0 => {
                // As perf stat: without the right to count the kernel, count user space.
                exclude_kernel(&mut attr);
                crate::verbose::display_attr(&attr.to_bytes());
                match open_raw(&mut attr, pid, cpu, leader) {
                    Ok(fd) => {
                        *user_only = true;
                        warn(format!(
                            "kernel.perf_event_paranoid = {}: counting user space only (:u)",
                            procfs::perf_event_paranoid().map_or("?".into(), |p| p.to_string())
                        ));
                        fd
                    }
                    Err(e) => return Err(open_error(spec, e, group.len(), nfds)),
                }
            }
            Err(libc::ESRCH) if matches!(opts.target, Target::Pids(_)) => {
                // A thread exited between listing and opening: skip it unless the
                // whole process is gone.
                if pids.iter().any(|&p| procfs::process_alive(p)) {
                    return Ok(None);
                }
                return Err(RecordError::NoSuchProcess(
                    pids.first().copied().unwrap_or(pid),
                ));
            }
            Err(e) => return Err(open_error(spec, e, group.len(), nfds)),
        };
        let id = crate::ring::event_id(&fd)
            .map_err(|source| RecordError::Ioctl { what: "ID", source })?;
        inst.fds.push(fd);
        inst.ids.push(id);
    }
    Ok(Some(inst))
}

/// Blocks until the command (or an attached process) exits, a signal, or the next `-I`
/// tick, as perf stat does: a poll every few ms preempts the command and adds context
/// switches. Without pidfds (old kernels) falls back to a 5 ms poll.
fn wait_for_change(
    child_pid: Option<i32>,
    opts: &CountOptions,
    pids: &[i32],
    next_tick: Option<Instant>,
) {
    let until_tick = next_tick.map(|t| t.saturating_duration_since(Instant::now()));
    let watched: Option<Vec<_>> = match child_pid {
        Some(pid) => launch::pidfd(pid).map(|fd| vec![fd]),
        None if matches!(opts.target, Target::Pids(_)) => pids
            .iter()
            .filter(|&&p| procfs::process_alive(p))
            .map(|&p| launch::pidfd(p))
            .collect(),
        None => Some(Vec::new()),
    };
    match watched {
        // A signal that lands between the caller's checks and the poll would only be seen
        // at the next wake-up: bound the wait at 1 s.
        Some(fds) => launch::wait_readable(
            &fds,
            until_tick
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1)),
        ),
        None => std::thread::sleep(
            until_tick
                .unwrap_or(Duration::from_millis(5))
                .clamp(Duration::from_micros(200), Duration::from_millis(5)),
        ),
    }
}

/// Counts the configured groups on the target. `on_interval` is called after each `-I`
/// interval with that interval's counts; `warn` receives non-fatal messages.
pub fn count(
    opts: &CountOptions,
    on_interval: &mut dyn FnMut(&Interval),
    warn: &mut dyn FnMut(String),
) -> Result<CountResult, RecordError> {
    if opts.groups.iter().all(|g| g.is_empty()) {
        return Err(RecordError::Invalid("no events to count".into()));
    }
    if let Some(iv) = opts.interval {
        if iv < Duration::from_millis(10) {
            return Err(RecordError::Invalid(format!(
                "-I {} ms: the interval must be at least 10 ms",
                iv.as_millis()
            )));
        }
    }
    launch::install_sigint_handler();
    let signals_before = launch::sigint_count();

    let (tasks, child) = Tasks::of(&opts.target)?;
    let opened = open_groups(opts, &tasks, warn)?;
    let (open, user_only) = (opened.groups, opened.user_only);
    let pids = tasks.pids;

    // Enable: the command's exec does it (enable_on_exec); otherwise an ioctl now.
    let start = Instant::now();
    let child_pid = child.map(PendingChild::go);
    for (groups, _) in open
        .iter()
        .zip(&opened.enable_by_ioctl)
        .filter(|(_, by_ioctl)| **by_ioctl)
    {
        ioctl_all(std::slice::from_ref(groups), true);
    }

    // Counts start at zero when enabled, so the first interval is measured from zero (a read
    // here could already see the command's first instructions).
    let mut last: Vec<Vec<Reading>> = opts
        .groups
        .iter()
        .map(|g| vec![Reading::default(); g.len()])
        .collect();
    let mut next_tick = opts.interval.map(|iv| start + iv);
    let mut exit = None;
    let mut interrupted = false;
    loop {
        if let Some(pid) = child_pid {
            if let Some(e) = launch::try_wait(pid) {
                exit = Some(e);
                break;
            }
        } else if matches!(opts.target, Target::Pids(_))
            && !pids.iter().any(|&p| procfs::process_alive(p))
        {
            break;
        }
        if launch::sigint_count() > signals_before {
            // Ctrl-C: with a command, it got the signal too; wait for it to finish.
            interrupted = true;
            if child_pid.is_none() {
                break;
            }
        }
        let now = Instant::now();
        if let (Some(tick), Some(iv)) = (next_tick, opts.interval) {
            if now >= tick {
                let cur = read_all(&open, &opts.groups);
                let groups = cur
                    .iter()
                    .zip(&last)
                    .map(|(c, l)| c.iter().zip(l).map(|(c, l)| c.delta(l)).collect())
                    .collect();
                on_interval(&Interval {
                    elapsed: now - start,
                    groups,
                });
                last = cur;
                next_tick = Some(tick + iv);
            }
        }
        wait_for_change(child_pid, opts, &pids, next_tick);
    }
    let elapsed = start.elapsed();
    ioctl_all(&open, false);
    let totals = read_all(&open, &opts.groups);
    // The last partial interval, as perf stat -I prints it.
    if opts.interval.is_some() {
        let groups: Vec<Vec<Reading>> = totals
            .iter()
            .zip(&last)
            .map(|(c, l)| c.iter().zip(l).map(|(c, l)| c.delta(l)).collect())
            .collect();
        if groups.iter().flatten().any(|r| r.enabled_ns > 0) {
            on_interval(&Interval { elapsed, groups });
        }
    }
    Ok(CountResult {
        groups: totals,
        exit,
        interrupted,
        elapsed,
        user_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_testkit::pmu_lock;

    fn sw(name: &str, config: u64) -> EventSpec {
        EventSpec::new(name, Some("software"), 1, config)
    }

    #[test]
    fn test_reading_scaled_and_fraction() {
        let r = Reading {
            value: 100,
            enabled_ns: 1000,
            running_ns: 250,
        };
        assert_eq!(r.scaled(), Some(400.0));
        assert!((r.fraction_running() - 0.25).abs() < 1e-12);
        let full = Reading {
            value: 7,
            enabled_ns: 10,
            running_ns: 10,
        };
        assert_eq!(full.scaled(), Some(7.0));
        let never = Reading {
            value: 0,
            enabled_ns: 10,
            running_ns: 0,
        };
        assert_eq!(never.scaled(), None);
        assert_eq!(
            r.delta(&Reading {
                value: 40,
                enabled_ns: 400,
                running_ns: 50
            }),
            Reading {
                value: 60,
                enabled_ns: 600,
                running_ns: 200
            }
        );
    }

    #[test]
    fn test_count_software_group_inherited_by_children() {
        let _lock = pmu_lock();
        // task-clock (1), page-faults (2), context-switches (3) in one group; the work is
        // done by grandchildren of the shell, so only inheritance can count it.
        let opts = CountOptions {
            groups: vec![vec![sw("task-clock", 1), sw("page-faults", 2), sw("context-switches", 3)]],
            target: Target::Command(vec![
                "sh".into(),
                "-c".into(),
                "i=0; while [ $i -lt 3 ]; do (i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done); i=$((i+1)); done; exit 3".into(),
            ]),
            interval: None,
        };
        let res = count(&opts, &mut |_| {}, &mut |_| {}).unwrap();
        assert_eq!(res.exit, Some(ChildExit::Exited(3)));
        let g = &res.groups[0];
        // Tens of milliseconds of shell arithmetic in subshells.
        assert!(g[0].value > 5_000_000, "task-clock {:?}", g[0]);
        assert!(g[1].value > 50, "page-faults {:?}", g[1]);
        assert!(
            g[0].enabled_ns > 0 && g[0].running_ns == g[0].enabled_ns,
            "{g:?}"
        );
        // One group: all members share the same times.
        assert_eq!(g[1].enabled_ns, g[0].enabled_ns);
        assert_eq!(g[2].running_ns, g[0].running_ns);
    }

    #[test]
    fn test_count_intervals_sum_to_total() {
        let _lock = pmu_lock();
        let opts = CountOptions {
            groups: vec![vec![sw("task-clock", 1)], vec![sw("page-faults", 2)]],
            target: Target::Command(vec!["sleep".into(), "0.35".into()]),
            interval: Some(Duration::from_millis(100)),
        };
        let mut intervals = Vec::new();
        let res = count(&opts, &mut |iv| intervals.push(iv.clone()), &mut |_| {}).unwrap();
        assert!(intervals.len() >= 3, "{} intervals", intervals.len());
        for g in 0..2 {
            let sum: u64 = intervals.iter().map(|iv| iv.groups[g][0].value).sum();
            assert_eq!(sum, res.groups[g][0].value, "group {g}");
        }
        assert!(intervals.windows(2).all(|w| w[0].elapsed < w[1].elapsed));
    }

    #[test]
    fn test_count_missing_command_and_pid() {
        let opts = CountOptions {
            groups: vec![vec![sw("task-clock", 1)]],
            target: Target::Command(vec!["no-such-command-xyz".into()]),
            interval: None,
        };
        let err = count(&opts, &mut |_| {}, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("command not found"), "{err}");
        let opts = CountOptions {
            target: Target::Pids(vec![i32::MAX - 1]),
            ..opts
        };
        let err = count(&opts, &mut |_| {}, &mut |_| {}).unwrap_err();
        assert!(matches!(err, RecordError::NoSuchProcess(_)), "{err}");
    }
}
