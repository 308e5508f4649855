//! The recording session: resolves CPUs, events and tasks, opens the events and maps their
//! rings, creates the output, runs the main loop (poll, drain, switch files, signals, the
//! target's exit) and finishes the file into a [`RecordSummary`].

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use culprit_decode::abi::{attr_flag, perf_type, sample_type};

use super::attrs::{build_attr, default_event, group_desc};
use super::diagnose::{check_groups, open_error};
use super::files::{Files, StateSpec};
use super::output::NewOutput;
use super::tracker::Tracker;
use super::{
    CallGraph, EventSummary, Output, RecordOptions, RecordSummary, Sink, Target, Writer,
    DEFAULT_FREQUENCY, POLL_INTERVAL_MS, STOP_GRACE,
};
use crate::error::{OutputFailure, RecordError, TargetAfterFailure};
use crate::events::{EventSpec, SampleRate};
use crate::launch::{self, ChildExit, PendingChild};
use crate::modes::{Notice, StopReason, SwitchOutput};
use crate::perfdata::pipe::PipeWriter;
use crate::perfdata::records;
use crate::perfdata::{Attr, FileAttr, PerfDataWriter};
use crate::privilege::{self, Privileges};
use crate::procfs;
use crate::ring::{self, Ring};

/// One opened event fd.
struct OpenFd {
    fd: OwnedFd,
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

pub(super) fn record_into(
    opts: &RecordOptions,
    sink: Sink,
    warn: &mut dyn FnMut(String),
    notice: &mut dyn FnMut(Notice),
) -> Result<RecordSummary, RecordError> {
    let stdout_is_stream = matches!(sink, Sink::Pipe(_, true));
    // CPUs.
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
    let max_rate = procfs::max_sample_rate();
    let mut rates = Vec::new();
    for spec in &specs {
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

    check_groups(&specs, !matches!(opts.target, Target::System(_)), warn)?;
    // What kernel.perf_event_paranoid lets this user record: refused up front with the
    // reason, rather than a recording the kernel cuts down to nothing.
    let access = privilege::check(
        &Privileges::current(),
        matches!(opts.target, Target::System(_)),
        &specs,
    )?;
    let mut kernel_excluded_warned = false;
    if let Some(w) = access.warning {
        warn(w);
        kernel_excluded_warned = true;
    }

    // 2. The target's tasks.
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

    // 3. Open everything.
    let nfds = specs.len() * cpus.len() * tasks.len();
    let mut attrs: Vec<Attr> = specs
        .iter()
        .zip(&rates)
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
            if access.user_only[i] {
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
        .collect();
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
            for &task in &tasks {
                let leader = match (member, leaders.get(&(ci, task))) {
                    (true, Some(&i)) => Some(&fds[i].fd),
                    // The leader's thread exited before it was opened: so has this one.
                    (true, None) => continue,
                    (false, _) => None,
                };
                let opened = open_precise_fallback(spec, &mut attrs[ei], task, cpu as i32, leader);
                let fd = match opened {
                    Ok(fd) => fd,
                    Err(e)
                        if (e == libc::EACCES || e == libc::EPERM)
                            && attrs[ei].flags & attr_flag::EXCLUDE_KERNEL == 0
                            && !spec.exclude_user
                            && spec.attr_type != perf_type::TRACEPOINT =>
                    {
                        // As perf: without the right to sample the kernel, retry user-only
                        // (never an event that samples the kernel only: it would get nothing).
                        let mut a = attrs[ei];
                        a.flags |= attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV;
                        match ring::perf_event_open_in_group(&a, task, cpu as i32, leader) {
                            Ok(fd) => {
                                if !kernel_excluded_warned {
                                    warn(format!(
                                        "kernel.perf_event_paranoid = {}: sampling user space only (:u)",
                                        procfs::perf_event_paranoid().map_or("?".into(), |p| p.to_string())
                                    ));
                                    kernel_excluded_warned = true;
                                }
                                attrs[ei] = a;
                                fd
                            }
                            Err(e) => return Err(open_error(spec, &a, e, nfds)),
                        }
                    }
                    Err(e) if e == libc::ESRCH && matches!(opts.target, Target::Pids(_)) => {
                        // A thread exited between listing and opening: skip it unless the
                        // whole process is gone.
                        if target_pids.iter().any(|&p| procfs::process_alive(p)) {
                            continue;
                        }
                        return Err(RecordError::NoSuchProcess(
                            target_pids.first().copied().unwrap_or(task),
                        ));
                    }
                    Err(e) => return Err(open_error(spec, &attrs[ei], e, nfds)),
                };
                let id = ring::event_id(&fd)
                    .map_err(|source| RecordError::Ioctl { what: "ID", source })?;
                ids[ei].push(id);
                let backward = usize::from(attrs[ei].flags & attr_flag::WRITE_BACKWARD != 0);
                match ring_fd[backward] {
                    None => {
                        let ring = loop {
                            let mapped = if backward == 1 {
                                Ring::map_overwrite(&fd, pages)
                            } else {
                                Ring::map(&fd, pages)
                            };
                            match mapped {
                                Ok(r) => break r,
                                Err(e) if e.raw_os_error() == Some(libc::EPERM) && pages > 8 => {
                                    // Over the locked-memory budget (perf_event_mlock_kb): halve.
                                    pages /= 2;
                                    warn(format!("ring buffer too large for the locked-memory limit: using {pages} pages per CPU"));
                                }
                                Err(source) => return Err(RecordError::Mmap { cpu, source }),
                            }
                        };
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

    // 4. Only now the output: the command exists (held, not started) and the events are
    //    open, so a failed start never touched the previous file.
    let mut file_attrs: Vec<FileAttr> = specs
        .iter()
        .zip(&attrs)
        .zip(&ids)
        .map(|((s, a), ids)| FileAttr {
            attr: *a,
            name: s.name.clone(),
            ids: ids.clone(),
        })
        .collect();
    let tracing_data = crate::offcpu::tracing_data(&specs)?;
    let off_cpu = match off_cpu_source {
        Some(i) => {
            file_attrs.push(FileAttr {
                attr: crate::offcpu::event_attr(&attrs[i]),
                name: crate::offcpu::EVENT_NAME.to_string(),
                ids: vec![crate::offcpu::EVENT_ID],
            });
            Some(crate::offcpu::OffCpu::for_switch_event(
                ids[i].clone(),
                &attrs[i],
                &attrs[0],
            )?)
        }
        None => None,
    };
    // Events in the file: the opened ones, then `offcpu-time`.
    let mut tracker = Tracker::new(file_attrs.len());
    for (ei, a) in file_attrs.iter().enumerate() {
        for &id in &a.ids {
            tracker.id_to_event.insert(id, ei);
        }
    }
    tracker.off_cpu = off_cpu;
    let write_err = |source| RecordError::Write {
        path: opts.output.display_name(),
        source,
    };
    // Unbuffered: each pass over the rings is one write, so the file grows while recording.
    let mut base_features = procfs::host_features();
    base_features.version = Some(opts.tool_version.clone());
    base_features.cmdline = opts.cmdline.clone();
    base_features.group_desc = group_desc(&specs);
    base_features.tracing_data = tracing_data;
    let mut new_output = None;
    let (writer, path) = match sink {
        Sink::File(path) => {
            let (output, file) = NewOutput::create(&path)?;
            match PerfDataWriter::new(file, file_attrs.clone()) {
                Ok(w) => {
                    new_output = Some(output);
                    (Writer::File(w), Some(path))
                }
                Err(e) => {
                    output.abandon();
                    return Err(write_err(e));
                }
            }
        }
        Sink::Pipe(w, _) => (
            Writer::Pipe(PipeWriter::new(w, &file_attrs, &base_features).map_err(write_err)?),
            None,
        ),
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let files = Files::new(
        writer,
        file_attrs,
        base_features,
        path,
        &opts.modes,
        pages * page,
    );
    let mut files = match files {
        Ok(f) => f,
        Err(e) => {
            if let Some(output) = new_output {
                output.abandon();
            }
            return Err(write_err(e));
        }
    };
    // The synthesized records go with the event that carries the side-band flags.
    let side_band = if opts.modes.overwrite { user_events } else { 0 };
    let first_id = ids[side_band].first().copied().unwrap_or(0);
    let mut state = StateSpec {
        attr: attrs[side_band],
        id: first_id,
        system: matches!(opts.target, Target::System(_)),
        pids: match &opts.target {
            Target::Pids(pids) => pids.clone(),
            _ => Vec::new(),
        },
    };
    let synth = state.synthesize(&tracker);
    let started = Instant::now();
    let start = (|| {
        files.write_state(&synth, &mut tracker).map_err(write_err)?;
        if let Some(Writer::Pipe(w)) = files.writer() {
            w.finish_init().map_err(write_err)?;
        }
        // Enable: ioctl for -p/-a; the launched command's events arm themselves at exec.
        if !matches!(opts.target, Target::Command(_)) {
            for f in &fds {
                ring::set_enabled(&f.fd, true).map_err(|source| RecordError::Ioctl {
                    what: "ENABLE",
                    source,
                })?;
            }
        }
        Ok(())
    })();
    if let Err(e) = start {
        // Nothing was recorded (the held command exits without running when `child` is
        // dropped): the previous file comes back.
        drop(files);
        if let Some(output) = new_output {
            output.abandon();
        }
        return Err(e);
    }
    let child_pid = child.map(|c| c.go());
    // A file started later describes the command's processes too.
    state.pids.extend(child_pid);

    // 5. The loop.
    let mut pollfds: Vec<libc::pollfd> = rings
        .iter()
        .map(|r| libc::pollfd {
            fd: r.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut buf: Vec<u8> = Vec::with_capacity(4 << 20);
    let mut out = Out {
        files,
        tracker,
        failed: None,
        state,
        warn,
        notice,
        side_band: opts.modes.overwrite.then(Vec::new),
        side_band_compacted: false,
    };
    let modes = &opts.modes;
    let mut exit = None;
    // Counted from the handler's installation: a Ctrl-C during set-up (synthesizing /proc
    // for -a can take a while) must stop the recording too.
    let mut handled_signals = 0;
    let mut handled_usr2 = launch::sigusr2_count();
    let mut last_switch = Instant::now();
    let mut interrupted = false;
    let mut interrupt_signal = None;
    let mut last_alive_check = Instant::now();
    let mut stopped = false;
    let mut stop_reason = None;
    let mut forced = false;
    loop {
        // SAFETY: pollfds is a valid array of pollfd for the duration of the call.
        unsafe {
            libc::poll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                POLL_INTERVAL_MS,
            )
        };
        for p in pollfds.iter_mut() {
            // A ring whose own event ended (its task exited) reports POLLHUP forever; stop
            // polling it (other tasks' events may still feed it: it is drained every turn).
            if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                p.fd = -1;
            }
            p.revents = 0;
        }
        drain(&mut rings, &mut buf, &mut out);
        if out.failed.is_some() {
            break;
        }

        // The recording's own ends: --max-size, --duration, or a live consumer that is done.
        let own_end = if out.files.full {
            Some(Some(StopReason::MaxSize))
        } else if modes.duration.is_some_and(|d| started.elapsed() >= d) {
            (out.notice)(Notice::DurationReached(modes.duration.unwrap_or_default()));
            Some(Some(StopReason::Duration))
        } else if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            stopped = true;
            Some(None)
        } else {
            None
        };
        if let Some(reason) = own_end {
            stop_reason = reason;
            if let Some(pid) = child_pid {
                exit = stop_child(pid, &mut || drain(&mut rings, &mut buf, &mut out));
            }
            break;
        }
        // --switch-output: a new file on SIGUSR2 or every TIME (SIZE is checked as records
        // are written).
        let usr2 = launch::sigusr2_count();
        let by_signal = modes.dumps_on_signal() && usr2 > handled_usr2;
        let by_time = matches!(modes.switch_output, Some(SwitchOutput::Time(t)) if last_switch.elapsed() >= t);
        if by_signal || by_time {
            handled_usr2 = usr2;
            last_switch = Instant::now();
            if opts.modes.overwrite {
                snapshot(&mut overwrite_rings, &mut rings, &mut buf, &mut out);
            }
            if let Err(e) = out.switch() {
                out.failed = Some(e);
                break;
            }
        }
        let signals = launch::sigint_count();
        if signals > handled_signals {
            handled_signals = signals;
            interrupted = true;
            let first =
                *interrupt_signal.get_or_insert(launch::last_signal().unwrap_or(libc::SIGINT));
            match child_pid {
                // First Ctrl-C (or SIGTERM): pass it on and keep recording until the
                // command exits.
                Some(pid) if exit.is_none() && signals == 1 => {
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(pid, first) };
                }
                // Another one: the command ignores it or takes too long; end it as perf
                // does (SIGTERM, then SIGKILL) and finish the file.
                Some(pid) if exit.is_none() => {
                    forced = true;
                    exit = stop_child(pid, &mut || drain(&mut rings, &mut buf, &mut out));
                    break;
                }
                _ => break,
            }
        }
        if let Some(pid) = child_pid {
            if let Some(e) = launch::try_wait(pid) {
                exit = Some(e);
                break;
            }
        } else if let Target::Pids(pids) = &opts.target {
            if last_alive_check.elapsed() >= Duration::from_millis(100) {
                last_alive_check = Instant::now();
                if !pids.iter().any(|&p| procfs::process_alive(p)) {
                    break;
                }
            }
        }
    }
    // A write error: end the command we launched, as perf does (nothing would record it);
    // -p processes are not ours, they are detached.
    let target_after = match (child_pid, exit) {
        (Some(pid), None) if out.failed.is_some() => {
            exit = stop_child(pid, &mut || drain(&mut rings, &mut buf, &mut out));
            TargetAfterFailure::Terminated
        }
        (Some(_), _) => TargetAfterFailure::Exited,
        (None, _) if matches!(opts.target, Target::Pids(_)) => TargetAfterFailure::Detached,
        (None, _) => TargetAfterFailure::Nothing,
    };

    // 6. Finish: stop the events, take what is left, write the features.
    for f in &fds {
        let _ = ring::set_enabled(&f.fd, false);
    }
    let duration = started.elapsed();
    if opts.modes.overwrite {
        snapshot(&mut overwrite_rings, &mut rings, &mut buf, &mut out);
    } else {
        drain(&mut rings, &mut buf, &mut out);
    }
    drop(overwrite_rings);
    drop(rings);
    drop(fds);

    let Out {
        files,
        tracker,
        failed,
        warn,
        notice,
        ..
    } = out;
    let dropped_samples = files.dropped_samples;
    let finished = files.finish(&tracker, failed, notice, warn);
    if let Some((error, closed, without_features)) = finished.failure {
        return Err(RecordError::OutputFailed(Box::new(OutputFailure {
            path: opts.output.display_name(),
            stream: matches!(opts.output, Output::Stream(_)),
            error,
            data_size: finished.data_size,
            // The samples of the file being written, which is what is kept of it (the
            // earlier files of a --switch-output rotation are complete on their own).
            samples: tracker.file_samples,
            closed,
            without_features,
            has_tracepoints: specs.iter().any(|s| s.attr_type == perf_type::TRACEPOINT),
            target: target_after,
        })));
    }

    let mut events: Vec<EventSummary> = specs[..user_events]
        .iter()
        .enumerate()
        .map(|(i, s)| EventSummary {
            name: s.name.clone(),
            samples: tracker.samples[i],
            lost: tracker.lost[i],
            throttled: tracker.throttled[i],
            rate: rates[i],
            read_by_leader: s.group.is_some_and(|g| g.leader_sampling && !g.leader),
        })
        .collect();
    if off_cpu_source.is_some() {
        let i = specs.len();
        events.push(EventSummary {
            name: crate::offcpu::EVENT_NAME.to_string(),
            samples: tracker.samples[i],
            lost: 0,
            throttled: 0,
            rate: SampleRate::Period(1),
            read_by_leader: false,
        });
    }
    Ok(RecordSummary {
        events,
        lost_records: tracker.lost_records,
        lost_samples: tracker.lost_samples,
        throttle_records: tracker.throttle,
        unthrottle_records: tracker.unthrottle,
        file_size: finished.file_size,
        data_size: finished.data_size,
        exit,
        interrupted,
        interrupt_signal,
        stopped,
        forced,
        build_ids: finished.build_ids,
        duration,
        rings: pollfds.len(),
        stop_reason,
        dropped_samples,
        compression: finished.compression,
        recorded: finished.recorded,
        files: finished.kept,
        removed_files: finished.removed,
    })
}

/// The output side of the recording loop: the files, what was written, and where notices
/// and warnings go.
struct Out<'a> {
    files: Files,
    tracker: Tracker,
    /// The output's first write error: the recording stops at once.
    failed: Option<std::io::Error>,
    /// What a new file starts with.
    state: StateSpec,
    warn: &'a mut dyn FnMut(String),
    notice: &'a mut dyn FnMut(Notice),
    /// --overwrite: the side-band records so far (written at the head of each snapshot).
    side_band: Option<Vec<u8>>,
    /// The side-band outgrew [`SIDE_BAND_LIMIT`] once and was rebuilt from /proc.
    side_band_compacted: bool,
}

/// The most side-band bytes (COMM, MMAP2, FORK, EXIT) `--overwrite` keeps in memory; past
/// it they are replaced by the state of the processes alive, from /proc.
const SIDE_BAND_LIMIT: usize = 64 << 20;

/// `PERF_COUNT_SW_DUMMY`: a software event that never counts, for side-band records.
const SW_DUMMY: u64 = 9;

/// --overwrite: writes the side-band records and the newest records of every overwrite
/// ring (paused while they are read) as one round.
fn snapshot(
    overwrite_rings: &mut [Ring],
    rings: &mut [Ring],
    buf: &mut Vec<u8>,
    out: &mut Out<'_>,
) {
    drain(rings, buf, out);
    if out.failed.is_some() {
        return;
    }
    buf.clear();
    buf.extend_from_slice(out.side_band.as_deref().unwrap_or(&[]));
    for r in overwrite_rings.iter() {
        let _ = r.pause(true);
    }
    for r in overwrite_rings.iter_mut() {
        r.snapshot_into(buf);
    }
    for r in overwrite_rings.iter() {
        let _ = r.pause(false);
    }
    records::push_finished_round(buf);
    if let Err(e) = out.files.emit(
        buf,
        &mut out.tracker,
        &out.state,
        &mut *out.notice,
        &mut *out.warn,
    ) {
        out.failed = Some(e);
    }
}

impl Out<'_> {
    /// Finishes the file and starts the next (`--switch-output`).
    fn switch(&mut self) -> std::io::Result<()> {
        self.files.switch(
            &mut self.tracker,
            &self.state,
            &mut *self.notice,
            &mut *self.warn,
        )
    }
}

/// Copies every ring's pending records to the output, with one FINISHED_ROUND after a pass
/// that wrote something (readers sort by time round by round, as perf does), and counts
/// the records written. After a write error (kept in `out.failed`) the rings are only
/// emptied.
fn drain(rings: &mut [Ring], buf: &mut Vec<u8>, out: &mut Out<'_>) {
    buf.clear();
    for r in rings.iter_mut() {
        r.drain_into(buf);
    }
    if let Some(o) = out.tracker.off_cpu.as_mut() {
        o.extend(buf);
    }
    if buf.is_empty() || out.failed.is_some() {
        return;
    }
    if let Some(side_band) = out.side_band.as_mut() {
        // --overwrite: the side band waits in memory for the next snapshot.
        side_band.extend_from_slice(buf);
        if side_band.len() > SIDE_BAND_LIMIT {
            *side_band = out.state.synthesize(&out.tracker);
            if !out.side_band_compacted {
                out.side_band_compacted = true;
                (out.warn)(format!(
                    "--overwrite: more than {} MiB of COMM/MMAP/FORK/EXIT records: replaced by \
                     the processes alive now (exited ones lose their names and mappings)",
                    SIDE_BAND_LIMIT >> 20
                ));
            }
        }
        return;
    }
    records::push_finished_round(buf);
    if let Err(e) = out.files.emit(
        buf,
        &mut out.tracker,
        &out.state,
        &mut *out.notice,
        &mut *out.warn,
    ) {
        out.failed = Some(e);
    }
}

/// Ends a launched command: SIGTERM, then SIGKILL after [`STOP_GRACE`], draining the rings
/// meanwhile; returns how it ended.
fn stop_child(pid: i32, drain: &mut dyn FnMut()) -> Option<ChildExit> {
    if let Some(e) = launch::try_wait(pid) {
        return Some(e);
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let t = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(10));
        drain();
        if let Some(e) = launch::try_wait(pid) {
            return Some(e);
        }
        if t.elapsed() >= STOP_GRACE {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let mut status = 0;
            // SAFETY: reaping our own child with a valid status pointer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return Some(ChildExit::Signaled(libc::SIGKILL));
        }
    }
}

/// Raises the soft open-file limit to the hard limit (perf does the same): a recording needs
/// events x CPUs (x threads for -p) descriptors.
pub(super) fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
