//! The recording session: plans and opens the events (`plan`, `open`), creates the output
//! and writes its head, runs the main loop (poll, drain, switch files, signals, the
//! target's exit) and finishes the file into a [`RecordSummary`].

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use culprit_decode::abi::perf_type;

use super::attrs::group_desc;
use super::diagnose::check_groups;
use super::files::{Files, StateSpec};
use super::open::{open_events, Opened};
use super::output::NewOutput;
use super::plan::{event_attrs, launch_target, plan_events, Plan};
use super::tracker::Tracker;
use super::{
    EventSummary, Output, RecordOptions, RecordSummary, Sink, Target, Writer, POLL_INTERVAL_MS,
    STOP_GRACE,
};
use crate::error::{OutputFailure, RecordError, TargetAfterFailure};
use crate::events::SampleRate;
use crate::launch::{self, ChildExit};
use crate::modes::{Notice, StopReason, SwitchOutput};
use crate::perfdata::pipe::PipeWriter;
use crate::perfdata::records;
use crate::perfdata::{FileAttr, PerfDataWriter};
use crate::privilege::{self, Privileges};
use crate::procfs;
use crate::ring::{self, Ring};

/// Records into `sink`: the steps of the module documentation of `record`, in order.
pub(super) fn record_into(
    opts: &RecordOptions,
    sink: Sink,
    warn: &mut dyn FnMut(String),
    notice: &mut dyn FnMut(Notice),
) -> Result<RecordSummary, RecordError> {
    let stdout_is_stream = matches!(sink, Sink::Pipe(_, true));
    let plan = plan_events(opts, warn)?;
    let specs = &plan.specs;
    check_groups(specs, !matches!(opts.target, Target::System(_)), warn)?;
    // What kernel.perf_event_paranoid lets this user record: refused up front with the
    // reason, rather than a recording the kernel cuts down to nothing.
    let access = privilege::check(
        &Privileges::current(),
        matches!(opts.target, Target::System(_)),
        specs,
    )?;
    let mut kernel_excluded_warned = false;
    if let Some(w) = access.warning {
        warn(w);
        kernel_excluded_warned = true;
    }

    // 2. The target's tasks.
    let tasks = launch_target(opts, stdout_is_stream)?;

    // 3. Open everything.
    let attrs = event_attrs(opts, &plan, &access.user_only);
    let mut opened = open_events(opts, &plan, &tasks, attrs, kernel_excluded_warned, warn)?;

    // 4. Only now the output: the command exists (held, not started) and the events are
    //    open, so a failed start never touched the previous file.
    let Started {
        files,
        tracker,
        mut state,
        started,
        new_output: _new_output,
    } = start_output(opts, sink, &plan, &opened)?;
    let child_pid = tasks.child.map(|c| c.go());
    // A file started later describes the command's processes too.
    state.pids.extend(child_pid);

    // 5. The loop.
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
    let ring_count = opened.rings.len();
    let end = run_loop(opts, &mut opened, &mut buf, &mut out, child_pid, started);
    finish(opts, &plan, opened, &mut buf, out, end, ring_count)
}

/// The output once its head is written and the events are enabled.
struct Started {
    files: Files,
    tracker: Tracker,
    /// What a new file starts with.
    state: StateSpec,
    /// When the events were enabled.
    started: Instant,
    /// The output file (and its locks), held until the recording ends.
    new_output: Option<NewOutput>,
}

/// The file's events, its tracing data (HEADER_TRACING_DATA) and the tracker.
type FileEvents = (Vec<FileAttr>, Option<Vec<u8>>, Tracker);

/// The events of the file (the opened ones, then `--off-cpu`'s `offcpu-time`), its
/// tracing data, and the tracker that counts them.
fn file_events(plan: &Plan, opened: &Opened) -> Result<FileEvents, RecordError> {
    let (specs, attrs, ids) = (&plan.specs, &opened.attrs, &opened.ids);
    let mut file_attrs: Vec<FileAttr> = specs
        .iter()
        .zip(attrs)
        .zip(ids)
        .map(|((s, a), ids)| FileAttr {
            attr: *a,
            name: s.name.clone(),
            ids: ids.clone(),
        })
        .collect();
    let tracing_data = crate::offcpu::tracing_data(specs)?;
    let off_cpu = match plan.off_cpu_source {
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
    Ok((file_attrs, tracing_data, tracker))
}

/// Creates the output (`FILE.old` kept), writes its head and the synthesized records, and
/// enables the events. A failure puts the previous file back.
fn start_output(
    opts: &RecordOptions,
    sink: Sink,
    plan: &Plan,
    opened: &Opened,
) -> Result<Started, RecordError> {
    let (file_attrs, tracing_data, mut tracker) = file_events(plan, opened)?;
    let (specs, attrs, ids, fds) = (&plan.specs, &opened.attrs, &opened.ids, &opened.fds);
    let write_err = |source| RecordError::Write {
        path: opts.output.display_name(),
        source,
    };
    // Unbuffered: each pass over the rings is one write, so the file grows while recording.
    let mut base_features = procfs::host_features();
    base_features.version = Some(opts.tool_version.clone());
    base_features.cmdline = opts.cmdline.clone();
    base_features.group_desc = group_desc(specs);
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
        opened.pages * page,
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
    let side_band = if opts.modes.overwrite {
        plan.user_events
    } else {
        0
    };
    let first_id = ids[side_band].first().copied().unwrap_or(0);
    let state = StateSpec {
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
            for f in fds {
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
    Ok(Started {
        files,
        tracker,
        state,
        started,
        new_output,
    })
}

/// How the main loop ended.
struct LoopEnd {
    /// The launched command, started.
    child_pid: Option<i32>,
    /// When the events were enabled.
    started: Instant,
    exit: Option<ChildExit>,
    interrupted: bool,
    interrupt_signal: Option<i32>,
    stopped: bool,
    stop_reason: Option<StopReason>,
    forced: bool,
}

/// Polls and drains the rings until the target ends, a signal or a bound stops the
/// recording, or a write fails; switches files on the way (`--switch-output`).
fn run_loop(
    opts: &RecordOptions,
    opened: &mut Opened,
    buf: &mut Vec<u8>,
    out: &mut Out<'_>,
    child_pid: Option<i32>,
    started: Instant,
) -> LoopEnd {
    let Opened {
        rings,
        overwrite_rings,
        ..
    } = opened;
    let mut pollfds: Vec<libc::pollfd> = rings
        .iter()
        .map(|r| libc::pollfd {
            fd: r.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
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
        drain(rings, buf, out);
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
                exit = stop_child(pid, &mut || drain(rings, buf, out));
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
                snapshot(overwrite_rings, rings, buf, out);
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
                    exit = stop_child(pid, &mut || drain(rings, buf, out));
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
    LoopEnd {
        child_pid,
        started,
        exit,
        interrupted,
        interrupt_signal,
        stopped,
        stop_reason,
        forced,
    }
}

/// Ends the recording: ends a launched command after a write error, disables the events,
/// drains the rings, finishes the file and sums up.
fn finish(
    opts: &RecordOptions,
    plan: &Plan,
    opened: Opened,
    buf: &mut Vec<u8>,
    mut out: Out<'_>,
    end: LoopEnd,
    ring_count: usize,
) -> Result<RecordSummary, RecordError> {
    let Opened {
        fds,
        mut rings,
        mut overwrite_rings,
        ..
    } = opened;
    let LoopEnd {
        child_pid,
        started,
        mut exit,
        interrupted,
        interrupt_signal,
        stopped,
        stop_reason,
        forced,
    } = end;
    let (specs, rates, user_events) = (&plan.specs, &plan.rates, plan.user_events);
    // A write error: end the command we launched, as perf does (nothing would record it);
    // -p processes are not ours, they are detached.
    let target_after = match (child_pid, exit) {
        (Some(pid), None) if out.failed.is_some() => {
            exit = stop_child(pid, &mut || drain(&mut rings, buf, &mut out));
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
        snapshot(&mut overwrite_rings, &mut rings, buf, &mut out);
    } else {
        drain(&mut rings, buf, &mut out);
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
    if plan.off_cpu_source.is_some() {
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
        rings: ring_count,
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
