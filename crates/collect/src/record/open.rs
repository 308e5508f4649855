//! Opening the events: every event on every CPU (and task), in groups, with perf's
//! fallbacks (a lower precision, user space only), one ring buffer per CPU and direction,
//! and the other fds of the CPU redirected into it.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use culprit_decode::abi::{attr_flag, perf_type};

use super::diagnose::open_error;
use super::plan::{Plan, Tasks};
use super::{RecordOptions, Target};
use crate::error::RecordError;
use crate::events::EventSpec;
use crate::perfdata::Attr;
use crate::procfs;
use crate::ring::{self, Ring};

/// One opened event fd.
pub(super) struct OpenFd {
    pub(super) fd: OwnedFd,
}

/// Opens one event; a `:P` event (perf's precise_max) that fails is retried one precise_ip
/// lower, down to 0, as perf does: the kernel, not `caps/max_precise`, says how precise this
/// event can be. The attr keeps the precision that opened (or, after every try failed, the
/// one first asked for).
fn open_precise_fallback(
    spec: &EventSpec,
    attr: &mut Attr,
    task: i32,
    cpu: i32,
    leader: Option<&std::os::fd::OwnedFd>,
) -> Result<std::os::fd::OwnedFd, i32> {
    let first = attr.precise_ip();
    loop {
        let result = ring::open_with_guest_fallback(attr, task, cpu, leader);
        let precise = attr.precise_ip();
        if result.is_ok() || !spec.precise_max || precise == 0 {
            if result.is_err() && spec.precise_max {
                attr.set_precise_ip(first);
            }
            return result;
        }
        attr.set_precise_ip(precise - 1);
        crate::verbose::display_precise_fallback(precise - 1);
        crate::verbose::display_attr(&attr.to_bytes());
    }
}

/// The opened events: their final attrs, ids and fds, and the rings they write into.
pub(super) struct Opened {
    /// The attr each event opened with (after the fallbacks).
    pub(super) attrs: Vec<Attr>,
    /// The ids of each event's fds.
    pub(super) ids: Vec<Vec<u64>>,
    /// Every opened fd.
    pub(super) fds: Vec<OpenFd>,
    /// The ordinary rings, one per CPU.
    pub(super) rings: Vec<Ring>,
    /// `--overwrite`: the sampling events' rings (the side-band event's are `rings`).
    pub(super) overwrite_rings: Vec<Ring>,
    /// The ring size in data pages (halved under the locked-memory limit).
    pub(super) pages: usize,
}

/// What every open of a recording shares.
struct OpenContext<'a, 'w> {
    opts: &'a RecordOptions,
    /// The processes of `-p`, to tell an exited thread from an exited process.
    target_pids: &'a [i32],
    /// How many fds the recording opens (for the descriptor-limit diagnosis).
    nfds: usize,
    /// The user-only fallback was announced already.
    kernel_excluded_warned: bool,
    warn: &'w mut dyn FnMut(String),
}

/// Opens every event of `plan` on every CPU and task and maps the rings.
/// `kernel_excluded_warned`: the user-only fallback was announced already.
pub(super) fn open_events(
    opts: &RecordOptions,
    plan: &Plan,
    tasks: &Tasks,
    mut attrs: Vec<Attr>,
    kernel_excluded_warned: bool,
    warn: &mut dyn FnMut(String),
) -> Result<Opened, RecordError> {
    let (specs, cpus) = (&plan.specs, &plan.cpus);
    let nfds = specs.len() * cpus.len() * tasks.tasks.len();
    let mut ctx = OpenContext {
        opts,
        target_pids: &tasks.target_pids,
        nfds,
        kernel_excluded_warned,
        warn,
    };
    let mut ids: Vec<Vec<u64>> = vec![Vec::new(); specs.len()];
    let mut fds: Vec<OpenFd> = Vec::with_capacity(nfds);
    let mut rings: Vec<Ring> = Vec::with_capacity(cpus.len());
    // --overwrite: the sampling events' rings (the side-band event's are `rings`).
    let mut overwrite_rings: Vec<Ring> = Vec::new();
    let mut pages = opts.mmap_pages;
    // The fd owning each CPU's ring: an ordinary one, and an overwrite one (the kernel
    // redirects an event only into a ring of the same direction).
    let mut ring_fds: Vec<[Option<usize>; 2]> = vec![[None, None]; cpus.len()];
    // The fd (index in `fds`) of the current group's leader, per CPU (index) and task.
    let mut leaders: HashMap<(usize, i32), usize> = HashMap::new();
    // Event by event, then CPU by CPU, as perf opens them (so `-vv` prints each attr once,
    // followed by its opens, as perf does).
    for (ei, spec) in specs.iter().enumerate() {
        let member = spec.group.is_some_and(|g| !g.leader);
        if !member {
            leaders.clear();
        }
        crate::verbose::display_attr(&attrs[ei].to_bytes());
        crate::events::check_precise(spec).map_err(|e| RecordError::Invalid(e.to_string()))?;
        for (ci, &cpu) in cpus.iter().enumerate() {
            // A hybrid core PMU's event is opened on its own CPUs only, as perf does.
            if !spec.counts_on(cpu) {
                continue;
            }
            let ring_fd = &mut ring_fds[ci];
            for &task in &tasks.tasks {
                let leader = match (member, leaders.get(&(ci, task))) {
                    (true, Some(&i)) => Some(&fds[i].fd),
                    // The leader's thread exited before it was opened: so has this one.
                    (true, None) => continue,
                    (false, _) => None,
                };
                let Some(fd) = open_one(&mut ctx, spec, &mut attrs[ei], task, cpu as i32, leader)?
                else {
                    continue;
                };
                let id = ring::event_id(&fd)
                    .map_err(|source| RecordError::Ioctl { what: "ID", source })?;
                ids[ei].push(id);
                let backward = usize::from(attrs[ei].flags & attr_flag::WRITE_BACKWARD != 0);
                match ring_fd[backward] {
                    None => {
                        let ring = map_ring(&fd, backward == 1, &mut pages, cpu, ctx.warn)?;
                        if backward == 1 {
                            overwrite_rings.push(ring);
                        } else {
                            rings.push(ring);
                        }
                        ring_fd[backward] = Some(fds.len());
                    }
                    Some(i) => {
                        ring::set_output(&fd, &fds[i].fd).map_err(|source| RecordError::Ioctl {
                            what: "SET_OUTPUT",
                            source,
                        })?;
                    }
                }
                if spec.group.is_some_and(|g| g.leader) {
                    leaders.insert((ci, task), fds.len());
                }
                fds.push(OpenFd { fd });
            }
        }
    }
    Ok(Opened {
        attrs,
        ids,
        fds,
        rings,
        overwrite_rings,
        pages,
    })
}

/// Opens `spec` for one task on one CPU, with perf's fallbacks. `None`: the task exited
/// meanwhile (and its process lives on): skip it.
fn open_one(
    ctx: &mut OpenContext<'_, '_>,
    spec: &EventSpec,
    attr: &mut Attr,
    task: i32,
    cpu: i32,
    leader: Option<&OwnedFd>,
) -> Result<Option<OwnedFd>, RecordError> {
    let (opts, target_pids, nfds) = (ctx.opts, ctx.target_pids, ctx.nfds);
    let opened = open_precise_fallback(spec, attr, task, cpu, leader);
    let fd = match opened {
        Ok(fd) => fd,
        Err(e)
            if (e == libc::EACCES || e == libc::EPERM)
                && attr.flags & attr_flag::EXCLUDE_KERNEL == 0
                && !spec.exclude_user
                && spec.attr_type != perf_type::TRACEPOINT =>
        {
            // As perf: without the right to sample the kernel, retry user-only
            // (never an event that samples the kernel only: it would get nothing).
            let mut a = *attr;
            a.flags |= attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV;
            match ring::perf_event_open_in_group(&a, task, cpu, leader) {
                Ok(fd) => {
                    if !ctx.kernel_excluded_warned {
                        (ctx.warn)(format!(
                            "kernel.perf_event_paranoid = {}: sampling user space only (:u)",
                            procfs::perf_event_paranoid().map_or("?".into(), |p| p.to_string())
                        ));
                        ctx.kernel_excluded_warned = true;
                    }
                    *attr = a;
                    fd
                }
                Err(e) => return Err(open_error(spec, &a, e, nfds)),
            }
        }
        Err(e) if e == libc::ESRCH && matches!(opts.target, Target::Pids(_)) => {
            // A thread exited between listing and opening: skip it unless the
            // whole process is gone.
            if target_pids.iter().any(|&p| procfs::process_alive(p)) {
                return Ok(None);
            }
            return Err(RecordError::NoSuchProcess(
                target_pids.first().copied().unwrap_or(task),
            ));
        }
        Err(e) => return Err(open_error(spec, attr, e, nfds)),
    };
    Ok(Some(fd))
}

/// Maps the ring of one CPU (an overwrite ring when `backward`), halving `pages` while the
/// locked-memory limit refuses it.
fn map_ring(
    fd: &OwnedFd,
    backward: bool,
    pages: &mut usize,
    cpu: u32,
    warn: &mut dyn FnMut(String),
) -> Result<Ring, RecordError> {
    loop {
        let mapped = if backward {
            Ring::map_overwrite(fd, *pages)
        } else {
            Ring::map(fd, *pages)
        };
        match mapped {
            Ok(r) => return Ok(r),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) && *pages > 8 => {
                // Over the locked-memory budget (perf_event_mlock_kb): halve.
                *pages /= 2;
                warn(format!(
                    "ring buffer too large for the locked-memory limit: using {} pages per CPU",
                    *pages
                ));
            }
            Err(source) => return Err(RecordError::Mmap { cpu, source }),
        }
    }
}
