//! `culprit record`: open the events (per event, per CPU, per task), map one ring buffer per
//! CPU, launch or attach to the target, drain the rings into a perf.data file while the target
//! runs, and finish the file with the header features perf needs.
//!
//! The flow of [`record`]:
//! 1. check what the user may sample (`privilege`: kernel.perf_event_paranoid);
//! 2. fork the command, held on a pipe (`launch`: a missing command fails here), or list the
//!    threads of `-p` targets;
//! 3. open every event on every CPU: the first fd of a CPU gets the ring buffer
//!    (`ring::Ring`), the others are redirected into it with `PERF_EVENT_IOC_SET_OUTPUT`;
//!    the first event carries the side-band flags (mmap, mmap2, comm, comm_exec, task);
//! 4. only now touch the output: keep the previous file as `FILE.old`, create the new one
//!    (an unwritable `-o` fails here, the command still held), write the header/attrs, the
//!    synthesized kernel MMAP and, for `-p`/`-a`, COMM/MMAP2 records from /proc; then
//!    enable (`enable_on_exec` + releasing the child, or ioctl). A failure up to here puts
//!    the previous file back;
//! 5. poll the rings (with a timeout so Ctrl-C and the target's exit are seen), copy what is
//!    there to the file, and count samples, LOST and THROTTLE records on the way;
//! 6. after the target exits (or Ctrl-C), disable, drain, and write the feature sections,
//!    with the build ids of every object that got samples. A write error on the way (a
//!    full disk, a closed pipe) stops the recording, terminates a launched command and
//!    closes the file with the records written whole ([`RecordError::OutputFailed`]).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use culprit_decode::abi::{attr_flag, misc, perf_type, read_format, record_type, sample_type};
use culprit_decode::model::CpuMode;

use crate::error::{OutputFailure, RecordError, TargetAfterFailure};
use crate::events::{EventSpec, SampleRate};
use crate::launch::{self, ChildExit, PendingChild};
use crate::modes::{
    CompressionSummary, Notice, RecordModes, RecordedFile, StopReason, SwitchOutput,
};
use crate::perfdata::pipe::PipeWriter;
use crate::perfdata::records::{self, MmapArgs, SampleId};
use crate::perfdata::{Attr, BuildIdEntry, FileAttr, GroupDesc, PerfDataWriter};
use crate::privilege::{self, Privileges};
use crate::procfs;
use crate::ring::{self, Ring};

mod files;

use files::{Files, StateSpec};

/// Default sampling frequency when neither -c/-F nor the event says otherwise (perf's).
pub const DEFAULT_FREQUENCY: u64 = 4000;
/// Default ring buffer size per CPU in data pages (512 KiB with 4 KiB pages, as perf uses).
pub const DEFAULT_MMAP_PAGES: usize = 128;
/// Default user stack bytes copied per sample for `--call-graph dwarf`.
pub const DEFAULT_DWARF_STACK: u32 = 8192;
/// `sample_regs_user` for dwarf unwinding on x86_64: every general register but the segment
/// registers (perf's `PERF_REGS_MASK`).
pub const X86_64_REGS_MASK: u64 = 0xff0fff;

/// How call chains are collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// No call chains.
    None,
    /// Kernel-walked frame pointers (PERF_SAMPLE_CALLCHAIN).
    Fp,
    /// Register and stack copies for offline DWARF unwinding; the value is the stack size.
    Dwarf(u32),
}

pub use crate::target::Target;

/// A writer for a pipe-mode stream, handed to the recording that uses it (the options stay
/// `Clone`; the writer itself is taken once).
#[derive(Clone)]
pub struct StreamOutput {
    writer: Arc<Mutex<Option<Box<dyn Write + Send>>>>,
    is_stdout: bool,
}

impl StreamOutput {
    /// A stream into any writer (an OS pipe, a socket, a buffer).
    pub fn new(writer: Box<dyn Write + Send>) -> StreamOutput {
        StreamOutput {
            writer: Arc::new(Mutex::new(Some(writer))),
            is_stdout: false,
        }
    }

    /// The process's stdout (`-o -`): a launched command's stdout then goes to stderr, as
    /// with perf, so that its output does not corrupt the stream.
    pub fn stdout() -> StreamOutput {
        StreamOutput {
            writer: Arc::new(Mutex::new(Some(Box::new(std::io::stdout())))),
            is_stdout: true,
        }
    }

    fn take(&self) -> Option<Box<dyn Write + Send>> {
        self.writer.lock().ok()?.take()
    }
}

impl std::fmt::Debug for StreamOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_stdout { "stdout" } else { "stream" })
    }
}

/// Where a recording goes.
#[derive(Debug, Clone)]
pub enum Output {
    /// A perf.data file (file mode: the header is rewritten at the end).
    File(PathBuf),
    /// A pipe-mode stream (`perf record -o -` format), written as the rings are drained, with
    /// a FINISHED_ROUND after each drain pass.
    Stream(StreamOutput),
}

impl Output {
    /// The name to show: the path, or `-` for a stream.
    pub fn display_name(&self) -> PathBuf {
        match self {
            Output::File(p) => p.clone(),
            Output::Stream(_) => PathBuf::from("-"),
        }
    }
}

/// Options of a recording (the CLI's flags as plain data).
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Events to record; empty means the default (cycles, or cpu-clock without a PMU).
    pub events: Vec<EventSpec>,
    /// -c/-F: the rate of events that do not set their own.
    pub rate: Option<SampleRate>,
    /// -g / --call-graph.
    pub call_graph: CallGraph,
    /// The target.
    pub target: Target,
    /// -C: CPUs to record on (default: all online).
    pub cpus: Option<Vec<u32>>,
    /// -o: a file, or a pipe-mode stream.
    pub output: Output,
    /// Ring buffer data pages per CPU (a power of two).
    pub mmap_pages: usize,
    /// The command line, for HEADER_CMDLINE.
    pub cmdline: Vec<String>,
    /// The recording tool's version, for HEADER_VERSION.
    pub tool_version: String,
    /// Set to end the recording from another thread (a live consumer is done): the loop
    /// stops at its next turn; a launched command still running gets SIGTERM, then SIGKILL
    /// after [`STOP_GRACE`].
    pub stop: Option<Arc<AtomicBool>>,
    /// `--off-cpu`: also record where threads block and for how long, as samples of an
    /// `offcpu-time` event (`crate::offcpu`).
    pub off_cpu: bool,
    /// `--off-cpu=wakers`: also `sched:sched_waking` with call chains, the stack of the
    /// task that wakes a blocked one (taken in the waker's context).
    pub off_cpu_wakers: bool,
    /// `--latency`: PERF_RECORD_SWITCH records (on the first event), from which readers
    /// count the recorded threads running at each sample (perf 6.15's latency profiling).
    pub context_switches: bool,
    /// Compression, bounds, output switching, flight recorder (default: none).
    pub modes: RecordModes,
}

/// How long a launched command may take to exit after SIGTERM when the recording is stopped
/// with [`RecordOptions::stop`].
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// The longest wait for ring data in one turn of the recording loop: a live reader gets a
/// FINISHED_ROUND at least this often while samples arrive.
pub const POLL_INTERVAL_MS: i32 = 50;

/// Per-event results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSummary {
    /// Event name.
    pub name: String,
    /// Samples written.
    pub samples: u64,
    /// Samples the kernel reported lost (LOST records attributed to this event).
    pub lost: u64,
    /// THROTTLE records of this event.
    pub throttled: u64,
    /// The sampling setting used (after lowering to the kernel's maximum).
    pub rate: SampleRate,
    /// A member of a leader-sampled group (`{…}:S`): it does not sample, the leader's
    /// samples read its count (readers make samples of it from those).
    pub read_by_leader: bool,
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordSummary {
    /// Per event, in `-e` order.
    pub events: Vec<EventSummary>,
    /// LOST records written.
    pub lost_records: u64,
    /// Samples lost in total (sum over LOST and LOST_SAMPLES records).
    pub lost_samples: u64,
    /// THROTTLE records written.
    pub throttle_records: u64,
    /// UNTHROTTLE records written.
    pub unthrottle_records: u64,
    /// Size of the finished file (or of the whole stream) in bytes.
    pub file_size: u64,
    /// Bytes of records in the data section.
    pub data_size: u64,
    /// How the launched command ended (None for -p, or -a without a command).
    pub exit: Option<ChildExit>,
    /// Whether the recording was stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// The signal (SIGINT or SIGTERM) that interrupted the recording; a launched command
    /// was sent the same one.
    pub interrupt_signal: Option<i32>,
    /// Whether the recording was ended through [`RecordOptions::stop`].
    pub stopped: bool,
    /// Whether a second SIGINT/SIGTERM ended the recording before the launched command
    /// exited, and the command was terminated (SIGTERM, then SIGKILL).
    pub forced: bool,
    /// The build ids of the objects with samples (HEADER_BUILD_ID), for the build-id cache.
    pub build_ids: Vec<BuildIdEntry>,
    /// Wall time from enabling to the end of the recording.
    pub duration: Duration,
    /// Number of ring buffers (CPUs).
    pub rings: usize,
    /// Why the recording stopped on its own (`--duration`, `--max-size`).
    pub stop_reason: Option<StopReason>,
    /// Samples read from the rings but not written (past `--max-size`); the file has a
    /// LOST_SAMPLES record of them.
    pub dropped_samples: u64,
    /// What `-z` did.
    pub compression: Option<CompressionSummary>,
    /// Every file finished, in order (with `--switch-output`, including the ones
    /// `--switch-max-files` removed since).
    pub recorded: Vec<RecordedFile>,
    /// The files left on disk, oldest first (the -o file, or the switched files kept).
    pub files: Vec<PathBuf>,
    /// Files removed by `--switch-max-files`.
    pub removed_files: Vec<PathBuf>,
}

/// The call graph of one event: its own `call-graph=`/`stack-size=` terms over the
/// recording's `--call-graph` (perf's per-event config terms).
pub fn event_call_graph(spec: &EventSpec, global: CallGraph) -> CallGraph {
    use crate::events::EventCallGraph;
    let global_stack = match global {
        CallGraph::Dwarf(size) => Some(size),
        _ => None,
    };
    match spec.call_graph {
        Some(EventCallGraph::No) => CallGraph::None,
        Some(EventCallGraph::Fp) => CallGraph::Fp,
        Some(EventCallGraph::Dwarf) => CallGraph::Dwarf(
            spec.stack_size
                .or(global_stack)
                .unwrap_or(DEFAULT_DWARF_STACK),
        ),
        None => match (global, spec.stack_size) {
            (CallGraph::Dwarf(_), Some(size)) => CallGraph::Dwarf(size),
            _ => global,
        },
    }
}

/// Builds the attr of one event.
fn build_attr(spec: &EventSpec, rate: SampleRate, opts: &RecordOptions, first: bool) -> Attr {
    let mut st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::CPU
        | sample_type::PERIOD;
    // The exclusions, pinned, exclusive and precise_ip the event string chose.
    let mut flags =
        attr_flag::DISABLED | attr_flag::SAMPLE_ID_ALL | attr_flag::INHERIT | spec.modifier_flags();
    let mut regs = 0;
    let mut stack = 0;
    match event_call_graph(spec, opts.call_graph) {
        CallGraph::None => {}
        CallGraph::Fp => st |= sample_type::CALLCHAIN,
        CallGraph::Dwarf(size) => {
            // As perf: the kernel part of the chain from CALLCHAIN, the user part unwound
            // offline from the register and stack copies.
            st |= sample_type::CALLCHAIN | sample_type::REGS_USER | sample_type::STACK_USER;
            flags |= attr_flag::EXCLUDE_CALLCHAIN_USER;
            regs = X86_64_REGS_MASK;
            stack = size;
        }
    }
    if spec.attr_type == perf_type::TRACEPOINT {
        // The tracepoint's fields (decoded with its format, saved in the file).
        st |= sample_type::RAW;
    }
    if spec.pmu.as_deref().is_some_and(|p| p.starts_with("ibs")) {
        st |= sample_type::RAW;
        // The IBS PMUs reject exclude_host/exclude_guest/exclude_idle with EINVAL.
        flags &= !attr_flag::EXCLUDE_GUEST;
    }
    st |= crate::ibs::pebs_memory_sample_bits(spec);
    if spec.precise_max {
        // `:P` starts at the highest precision and falls back when the kernel refuses it
        // (`open_precise_fallback`), as perf record does.
        flags |= 3 << attr_flag::PRECISE_IP_SHIFT;
    }
    if matches!(opts.target, Target::Command(_)) {
        flags |= attr_flag::ENABLE_ON_EXEC;
    }
    if first {
        flags |= attr_flag::MMAP
            | attr_flag::MMAP2
            | attr_flag::COMM
            | attr_flag::COMM_EXEC
            | attr_flag::TASK;
        if matches!(event_call_graph(spec, opts.call_graph), CallGraph::Dwarf(_)) {
            // As perf: DWARF unwinders look up the stack and data mappings too.
            flags |= attr_flag::MMAP_DATA;
        }
    }
    let mut period = match rate {
        SampleRate::Period(p) => {
            // As perf: a fixed period is in the attr, not in each sample. The kernel's
            // software and breakpoint events sample *every* hit when PERIOD is sampled
            // without freq (perf_swevent_event), so keeping it would ignore `-c`.
            // Tracepoints keep it, as perf's do.
            if spec.attr_type != perf_type::TRACEPOINT {
                st &= !sample_type::PERIOD;
            }
            p
        }
        SampleRate::Frequency(f) => {
            flags |= attr_flag::FREQ;
            f
        }
    };
    let mut read_format = read_format::ID;
    if let Some(g) = spec.group {
        if !g.leader {
            // As perf: members are enabled with their leader.
            flags &= !(attr_flag::DISABLED | attr_flag::ENABLE_ON_EXEC);
        }
        if g.leader_sampling {
            // As perf: every event of the group reads the whole group by id, and counters
            // are not inherited (kernels before 6.11 refuse inherited PERF_SAMPLE_READ, and
            // perf before 6.12 takes deltas per id, not per thread).
            st |= sample_type::READ;
            read_format |= read_format::GROUP;
            flags &= !attr_flag::INHERIT;
            if !g.leader {
                // Members do not sample: the leader's samples read them.
                period = 0;
                flags &= !attr_flag::FREQ;
            }
        }
    }
    Attr {
        attr_type: spec.attr_type,
        config: spec.config,
        sample_period_or_freq: period,
        sample_type: st,
        read_format,
        flags,
        config1: spec.config1,
        config2: spec.config2,
        bp_type: spec.bp_type,
        sample_regs_user: regs,
        sample_stack_user: stack,
        ..Attr::default()
    }
}

/// HEADER_GROUP_DESC of the events: every group of more than one event.
fn group_desc(specs: &[EventSpec]) -> Vec<GroupDesc> {
    let mut out: Vec<GroupDesc> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        match s.group {
            Some(g) if g.leader => out.push(GroupDesc {
                leader: i as u32,
                members: 1,
            }),
            Some(_) => {
                if let Some(last) = out.last_mut() {
                    last.members += 1;
                }
            }
            None => {}
        }
    }
    out.retain(|g| g.members > 1);
    out
}

/// The event a recording without `-e` samples: cycles if the PMU can *sample* it here (some
/// VMs count but cannot sample), else cpu-clock, as perf falls back; with the sentence that
/// says why it fell back (information: the recording works either way).
pub fn default_event(opts: &RecordOptions) -> (EventSpec, Option<String>) {
    let cycles = crate::events::default_event();
    let trial = Attr {
        flags: attr_flag::DISABLED | attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV,
        ..build_attr(
            &cycles,
            SampleRate::Frequency(DEFAULT_FREQUENCY),
            opts,
            false,
        )
    };
    match ring::perf_event_open(&trial, 0, -1) {
        Ok(_) => (cycles, None),
        Err(e) => (
            crate::events::cpu_clock(),
            Some(format!(
                "cycles cannot be sampled here ({}): falling back to cpu-clock",
                cycles_unavailable_reason(e)
            )),
        ),
    }
}

/// Why perf_event_open of a cycles sampler failed with `errno`, in words (not the raw
/// `os error N` of the errno, which says nothing to a user).
fn cycles_unavailable_reason(errno: i32) -> String {
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

/// The largest sample a `--call-graph dwarf,SIZE` event can write, in bytes: the fixed
/// fields, a kernel call chain of up to 127 frames, the user registers and SIZE bytes of
/// stack with their size words.
pub fn max_dwarf_sample_bytes(stack: u32) -> usize {
    const FIXED: usize = 8 * 8;
    const KERNEL_CHAIN: usize = 8 + 8 * 128;
    const REGS: usize = 8 + 8 * X86_64_REGS_MASK.count_ones() as usize;
    FIXED + KERNEL_CHAIN + REGS + 16 + stack as usize
}

/// Refuses a ring buffer too small for one sample of the call-graph's size: the kernel
/// would drop every sample (a recording of 0 samples).
fn check_ring_holds_a_sample(opts: &RecordOptions) -> Result<(), RecordError> {
    // The largest stack copy of any event (`--call-graph dwarf,N` or an event's own
    // `call-graph=dwarf,stack-size=N`).
    let largest = opts
        .events
        .iter()
        .map(|e| event_call_graph(e, opts.call_graph))
        .chain([opts.call_graph])
        .filter_map(|cg| match cg {
            CallGraph::Dwarf(stack) => Some(stack),
            _ => None,
        })
        .max();
    let Some(stack) = largest else {
        return Ok(());
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let ring_bytes = opts.mmap_pages * page;
    let sample = max_dwarf_sample_bytes(stack);
    if ring_bytes <= sample {
        let needed = (sample / page + 1).next_power_of_two();
        return Err(RecordError::Invalid(format!(
            "-m {} ({} KiB per CPU) cannot hold one sample of --call-graph dwarf,{stack} (up to \
             {} KiB with its stack copy): the kernel would drop every sample; use -m {needed} or \
             more, or a smaller stack size",
            opts.mmap_pages,
            ring_bytes / 1024,
            sample.div_ceil(1024)
        )));
    }
    Ok(())
}

/// The output file of a recording, from its creation until the recording has started:
/// a failure before then puts things back as they were.
struct NewOutput {
    path: PathBuf,
    /// Where the previous file went (`FILE.old`), as perf keeps it.
    old: Option<PathBuf>,
    /// The path did not exist: the file is this recording's own.
    created: bool,
    /// The path was an empty regular file, written in place.
    was_empty: bool,
    /// The previous file (now `FILE.old`) and whatever `FILE.old` was, held locked until the
    /// recording has started: a concurrent `record -o FILE` must not move them meanwhile.
    _held: Vec<File>,
}

/// Takes an exclusive lock on the regular file at `path` if there is one (`None`: no
/// regular file there), without waiting: a lock held elsewhere is another recording of
/// the same output ([`RecordError::OutputInUse`]). The lock is taken on what the path names
/// after the lock too (else the file was moved meanwhile: it is retried).
fn lock_existing(path: &std::path::Path) -> Result<Option<File>, RecordError> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    for _ in 0..8 {
        // Only regular files: opening a FIFO would block, and a device is never moved.
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Ok(None);
        }
        let Ok(file) = File::open(path) else {
            continue;
        };
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(RecordError::OutputInUse {
                path: path.to_path_buf(),
            });
        }
        let same = match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            return Ok(Some(file));
        }
    }
    Err(RecordError::OutputInUse {
        path: path.to_path_buf(),
    })
}

impl NewOutput {
    /// Keeps an existing output file as `FILE.old`, as perf does (only a regular,
    /// non-empty file, or a link to one: never a device such as /dev/null), then creates
    /// the new file without ever truncating someone else's.
    fn create(path: &std::path::Path) -> Result<(NewOutput, File), RecordError> {
        let not_writable = |path: &std::path::Path, source| RecordError::OutputNotWritable {
            path: path.to_path_buf(),
            source,
        };
        // Two recordings of one output: the file being written is locked by its recording
        // (and the previous one and `.old` while they move), so the second one stops here
        // instead of moving or truncating them.
        let previous = lock_existing(path)?;
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let is_data = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
        let mut out = NewOutput {
            path: path.to_path_buf(),
            old: None,
            created: false,
            was_empty: false,
            _held: Vec::new(),
        };
        if is_data || (link && std::fs::metadata(path).is_ok_and(|m| m.is_file())) {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            let old = PathBuf::from(old);
            if let Some(older) = lock_existing(&old)? {
                out._held.push(older);
            }
            std::fs::rename(path, &old).map_err(|e| not_writable(&old, e))?;
            out.old = Some(old);
        }
        // Last: `pop` lets the in-place file's lock go below.
        out._held.extend(previous);
        let opened = match std::fs::symlink_metadata(path) {
            // An empty file or a device: written in place, never removed.
            Ok(m) => {
                out.was_empty = m.is_file();
                File::create(path)
            }
            Err(_) => {
                out.created = true;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
            }
        };
        match opened {
            Ok(file) => {
                use std::os::unix::io::AsRawFd;
                // The new file is this recording's for as long as it is open: locked on the
                // writer's own descriptor (an empty file written in place was locked through
                // `previous`, another description: that lock is let go first). A device is
                // not locked.
                if !(out.created || out.was_empty) {
                    return Ok((out, file));
                }
                if out.was_empty {
                    out._held.pop();
                }
                // SAFETY: flock on the descriptor just opened.
                if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                    // Another recording took the path in between: it is theirs, untouched.
                    return Err(RecordError::OutputInUse {
                        path: path.to_path_buf(),
                    });
                }
                Ok((out, file))
            }
            Err(e) if out.created && e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Another recording created the path after this one looked: it is theirs (the
                // previous file stays at `.old`, as after any recording).
                Err(RecordError::OutputInUse {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => {
                out.created = false;
                out.abandon();
                Err(not_writable(path, e))
            }
        }
    }

    /// The recording did not start: removes the new file if this recording created it and
    /// puts the previous one back.
    fn abandon(self) {
        if self.created
            && std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_file())
        {
            let _ = std::fs::remove_file(&self.path);
        }
        if self.was_empty {
            let _ = File::create(&self.path);
        }
        if let Some(old) = &self.old {
            let _ = std::fs::rename(old, &self.path);
        }
    }
}

/// Refuses event groups that cannot be recorded as written.
/// `per_task`: the events follow tasks (not whole CPUs), so not inheriting them matters.
fn check_groups(
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
fn open_error(spec: &EventSpec, attr: &Attr, errno: i32, nfds: usize) -> RecordError {
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

/// Raises the soft open-file limit to the hard limit (perf does the same): a recording needs
/// events x CPUs (x threads for -p) descriptors.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// An executable mapping the sample tracker knows about.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    start: u64,
    end: u64,
    name: u32,
    pgoff: u64,
    prot: u32,
    flags: u32,
}

/// Walks records as they are written: counts per-event samples, LOST and THROTTLE records,
/// sample time range, and which objects got samples (for HEADER_BUILD_ID).
#[derive(Debug, Default)]
struct Tracker {
    id_to_event: HashMap<u64, usize>,
    samples: Vec<u64>,
    lost: Vec<u64>,
    throttled: Vec<u64>,
    lost_records: u64,
    lost_samples: u64,
    throttle: u64,
    unthrottle: u64,
    first_time: Option<u64>,
    last_time: u64,
    maps: HashMap<u32, Vec<Mapping>>,
    /// The last command name of each process seen in the stream: a rotated file describes
    /// a process that exited before the switch from these (its /proc entry is gone).
    comms: HashMap<u32, Vec<u8>>,
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    hit: HashSet<u32>,
    kernel_hit: bool,
    /// `--off-cpu`: turns each pass's context switches into `offcpu-time` samples before
    /// the pass is written.
    off_cpu: Option<crate::offcpu::OffCpu>,
    /// Samples in the current file.
    file_samples: u64,
}

fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn c_str(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

impl Tracker {
    fn new(nevents: usize) -> Tracker {
        Tracker {
            samples: vec![0; nevents],
            lost: vec![0; nevents],
            throttled: vec![0; nevents],
            ..Tracker::default()
        }
    }

    fn event_of(&self, id: u64) -> usize {
        self.id_to_event.get(&id).copied().unwrap_or(0)
    }

    fn intern(&mut self, name: &[u8]) -> u32 {
        let name = String::from_utf8_lossy(name).into_owned();
        if let Some(&i) = self.name_ids.get(&name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.clone());
        self.name_ids.insert(name, i);
        i
    }

    /// Processes a buffer of whole records. `id_off`: offset of the sample id in a
    /// record's sample_id trailer counted from the record's end (IDENTIFIER is last).
    fn walk(&mut self, buf: &[u8]) {
        let mut pos = 0;
        while pos + 8 <= buf.len() {
            let ty = rd_u32(buf, pos).unwrap_or(0);
            let misc = u16::from_le_bytes([buf[pos + 4], buf[pos + 5]]);
            let size = u16::from_le_bytes([buf[pos + 6], buf[pos + 7]]) as usize;
            if size < 8 || pos + size > buf.len() {
                break; // cannot happen with kernel records; never loop forever
            }
            self.record(ty, misc, &buf[pos..pos + size]);
            pos += size;
        }
    }

    fn record(&mut self, ty: u32, misc: u16, r: &[u8]) {
        // The sample_id trailer ends with IDENTIFIER on every non-sample record.
        let trailer_id = || rd_u64(r, r.len().saturating_sub(8)).unwrap_or(0);
        match ty {
            record_type::SAMPLE => {
                let (Some(id), Some(ip), Some(pid), Some(time)) =
                    (rd_u64(r, 8), rd_u64(r, 16), rd_u32(r, 24), rd_u64(r, 32))
                else {
                    return;
                };
                let ev = self.event_of(id);
                self.samples[ev] += 1;
                self.file_samples += 1;
                self.first_time = Some(self.first_time.map_or(time, |t| t.min(time)));
                self.last_time = self.last_time.max(time);
                match CpuMode::from_misc(misc) {
                    CpuMode::Kernel => self.kernel_hit = true,
                    CpuMode::User => {
                        if let Some(m) = self
                            .maps
                            .get(&pid)
                            .and_then(|v| v.iter().rev().find(|m| m.start <= ip && ip < m.end))
                        {
                            self.hit.insert(m.name);
                        }
                    }
                    _ => {}
                }
            }
            record_type::LOST => {
                let lost = rd_u64(r, 16).unwrap_or(0);
                let ev = self.event_of(rd_u64(r, 8).unwrap_or(0));
                self.lost[ev] += lost;
                self.lost_records += 1;
                self.lost_samples += lost;
            }
            record_type::LOST_SAMPLES => {
                let lost = rd_u64(r, 8).unwrap_or(0);
                let ev = self.event_of(trailer_id());
                self.lost[ev] += lost;
                self.lost_records += 1;
                self.lost_samples += lost;
            }
            record_type::THROTTLE => {
                self.throttle += 1;
                let ev = self.event_of(rd_u64(r, 16).unwrap_or(0));
                self.throttled[ev] += 1;
            }
            record_type::UNTHROTTLE => self.unthrottle += 1,
            record_type::FORK => {
                let (Some(pid), Some(ppid)) = (rd_u32(r, 8), rd_u32(r, 12)) else {
                    return;
                };
                if pid != ppid {
                    let inherited = self.maps.get(&ppid).cloned().unwrap_or_default();
                    self.maps.insert(pid, inherited);
                    if let Some(comm) = self.comms.get(&ppid).cloned() {
                        self.comms.insert(pid, comm);
                    }
                }
            }
            record_type::COMM => {
                let (Some(pid), Some(tid)) = (rd_u32(r, 8), rd_u32(r, 12)) else {
                    return;
                };
                if misc & misc::COMM_EXEC != 0 {
                    // exec replaced the process image: its old mappings are gone.
                    self.maps.remove(&pid);
                }
                if pid == tid {
                    self.comms
                        .insert(pid, c_str(r.get(16..).unwrap_or(&[])).to_vec());
                }
            }
            record_type::MMAP2 => {
                let (Some(pid), Some(addr), Some(len), Some(prot)) =
                    (rd_u32(r, 8), rd_u64(r, 16), rd_u64(r, 24), rd_u32(r, 64))
                else {
                    return;
                };
                let (Some(pgoff), Some(flags)) = (rd_u64(r, 32), rd_u32(r, 68)) else {
                    return;
                };
                if prot & libc::PROT_EXEC as u32 == 0 || pid == u32::MAX {
                    return;
                }
                let name = c_str(r.get(72..).unwrap_or(&[]));
                let name = self.intern(name);
                let list = self.maps.entry(pid).or_default();
                // A new mapping replaces what it overlaps.
                let end = addr.saturating_add(len);
                list.retain(|m| m.end <= addr || m.start >= end);
                list.push(Mapping {
                    start: addr,
                    end,
                    name,
                    pgoff,
                    prot,
                    flags,
                });
            }
            _ => {}
        }
    }

    /// A new file starts: its build ids, sample times and samples are counted afresh
    /// (the mappings carry over).
    fn start_file(&mut self) {
        self.hit.clear();
        self.kernel_hit = false;
        self.first_time = None;
        self.last_time = 0;
        self.file_samples = 0;
    }

    /// The processes seen so far (with mappings, or forked).
    /// COMM and MMAP2 records of process `pid` as the stream described it (its executable
    /// mappings): the state of a process that exited before a file switch.
    fn synthesize_from_stream(&self, out: &mut Vec<u8>, attr: &Attr, id: u64, pid: u32) {
        // Only processes the stream mapped code for (not kernel threads).
        if self.maps.get(&pid).is_none_or(|m| m.is_empty()) {
            return;
        }
        let sid = SampleId {
            pid,
            tid: pid,
            time: 0,
            id,
            cpu: 0,
        };
        if let Some(name) = self.comms.get(&pid) {
            records::push_comm(out, attr, pid, pid, name, false, &sid);
        }
        for m in self.maps.get(&pid).into_iter().flatten() {
            let args = MmapArgs {
                pid,
                tid: pid,
                start: m.start,
                len: m.end - m.start,
                pgoff: m.pgoff,
                maj: 0,
                min: 0,
                ino: 0,
                prot: m.prot,
                flags: m.flags,
                filename: self.names[m.name as usize].as_bytes(),
                misc: misc::USER,
            };
            records::push_mmap2(out, attr, &args, &sid);
        }
    }

    fn known_pids(&self) -> Vec<i32> {
        self.maps
            .keys()
            .filter(|&&p| p != u32::MAX && p != 0)
            .map(|&p| p as i32)
            .collect()
    }

    /// Build-id entries of every object that got samples.
    fn build_ids(&self) -> Vec<BuildIdEntry> {
        let mut out = Vec::new();
        if self.kernel_hit {
            if let Some(id) = crate::buildid::kernel_build_id() {
                out.push(BuildIdEntry {
                    cpumode: misc::KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".into(),
                });
            }
        }
        let mut hit: Vec<u32> = self.hit.iter().copied().collect();
        hit.sort_unstable();
        for i in hit {
            let name = &self.names[i as usize];
            let id = if name == "[vdso]" {
                crate::buildid::vdso_build_id()
            } else if name.starts_with('/') && !name.ends_with(" (deleted)") {
                crate::buildid::file_build_id(name)
            } else {
                None
            };
            if let Some(id) = id {
                out.push(BuildIdEntry {
                    cpumode: misc::USER,
                    build_id: id,
                    filename: name.clone(),
                });
            }
        }
        out
    }
}

/// One opened event fd.
struct OpenFd {
    fd: OwnedFd,
}

/// Records according to `opts`. `warn` receives one-line warnings (fallbacks, lowered
/// frequencies); the CLI prints them. Returns the summary; the file is complete on success.
pub fn record(
    opts: &RecordOptions,
    warn: &mut dyn FnMut(String),
) -> Result<RecordSummary, RecordError> {
    record_with_notices(opts, warn, &mut |_| {})
}

/// Refuses combinations of [`RecordModes`] that cannot work.
fn check_modes(opts: &RecordOptions) -> Result<(), RecordError> {
    let m = &opts.modes;
    let stream = matches!(opts.output, Output::Stream(_));
    let invalid = |s: &str| Err(RecordError::Invalid(s.to_string()));
    if let Some(level) = m.compression_level {
        if !crate::perfdata::compress::LEVELS.contains(&level) {
            return Err(RecordError::Invalid(format!(
                "--compression-level {level}: zstd levels are 1 to 22"
            )));
        }
        if stream {
            return invalid("-z/--compression-level writes a file: it cannot be used with -o -");
        }
    }
    if stream && (m.switch_output.is_some() || m.overwrite) {
        return invalid(
            "--switch-output and --overwrite write files: they cannot be used with -o -",
        );
    }
    if m.switch_max_files.is_some() && m.switch_output.is_none() && !m.overwrite {
        return invalid("--switch-max-files needs --switch-output (or --overwrite)");
    }
    if m.switch_max_files == Some(0) {
        return invalid("--switch-max-files must be at least 1");
    }
    if m.overwrite && matches!(m.switch_output, Some(SwitchOutput::Size(_))) {
        return invalid(
            "--overwrite keeps the newest data in the ring buffers and writes it on SIGUSR2 or \
             at the end: --switch-output can be `signal` or a time with it, not a size",
        );
    }
    if m.max_size == Some(0) || m.duration == Some(Duration::ZERO) {
        return invalid("--max-size and --duration must be more than 0");
    }
    Ok(())
}

/// [`record`], telling `notice` what long recordings do as it happens (files switched and
/// removed, a bound reached).
pub fn record_with_notices(
    opts: &RecordOptions,
    warn: &mut dyn FnMut(String),
    notice: &mut dyn FnMut(Notice),
) -> Result<RecordSummary, RecordError> {
    check_modes(opts)?;
    if opts.mmap_pages == 0 || !opts.mmap_pages.is_power_of_two() {
        return Err(RecordError::Invalid(format!(
            "mmap pages must be a power of two, not {}",
            opts.mmap_pages
        )));
    }
    check_ring_holds_a_sample(opts)?;
    raise_fd_limit();
    launch::install_sigint_handler();
    // Always caught, as perf ignores it: SIGUSR2's default would kill the recorder and leave
    // an unfinished file and an unprofiled command. Counted only; only the modes that dump on
    // it act. (A caught signal, unlike SIG_IGN, is back to its default in the exec'd command.)
    launch::install_sigusr2_handler();

    // The output file is touched only once everything that can fail at the start has
    // succeeded (the command exists, the events open): a failed start never harms it.
    match &opts.output {
        Output::File(p) => record_into(opts, Sink::File(p.clone()), warn, notice),
        Output::Stream(s) => {
            let w = s.take().ok_or_else(|| {
                RecordError::Invalid("the output stream was already used by a recording".into())
            })?;
            record_into(opts, Sink::Pipe(w, s.is_stdout), warn, notice)
        }
    }
}

/// The output before its head is written.
enum Sink {
    /// The -o path, not created yet.
    File(PathBuf),
    /// The writer, and whether it is our stdout.
    Pipe(Box<dyn Write + Send>, bool),
}

/// The output while recording.
enum Writer {
    File(PerfDataWriter<File>),
    Pipe(PipeWriter<Box<dyn Write + Send>>),
}

impl Writer {
    fn write_data(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Writer::File(w) => w.write_data(bytes),
            Writer::Pipe(w) => w.write_data(bytes),
        }
    }

    fn data_size(&self) -> u64 {
        match self {
            Writer::File(w) => w.data_size(),
            Writer::Pipe(w) => w.data_size(),
        }
    }
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

fn record_into(
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

/// The kernel's text mapping, as perf synthesizes it: MMAP, pid -1, `[kernel.kallsyms]_text`,
/// pgoff = start.
fn synthesize_kernel(out: &mut Vec<u8>, attr: &Attr, id: u64) {
    let Some((start, end)) = procfs::kernel_text_range() else {
        return;
    };
    let m = MmapArgs {
        pid: u32::MAX,
        tid: 0,
        start,
        len: end - start,
        pgoff: start,
        maj: 0,
        min: 0,
        ino: 0,
        prot: 0,
        flags: 0,
        filename: b"[kernel.kallsyms]_text",
        misc: misc::KERNEL,
    };
    records::push_mmap(
        out,
        attr,
        &m,
        &SampleId {
            pid: u32::MAX,
            tid: 0,
            time: 0,
            id,
            cpu: 0,
        },
    );
}

/// COMM for every thread and MMAP2 for every executable mapping (every mapping with
/// `mmap_data`) of a running process.
///
/// Returns the number of mappings written (none for a process that is gone or a zombie).
fn synthesize_process(out: &mut Vec<u8>, attr: &Attr, id: u64, pid: i32) -> usize {
    // With mmap_data (dwarf call graphs) the data mappings matter too, as for perf.
    let data = attr.flags & attr_flag::MMAP_DATA != 0;
    let tids = procfs::threads(pid);
    if tids.is_empty() {
        return 0;
    }
    let p = pid as u32;
    for &tid in &tids {
        if let Some(name) = procfs::comm(pid, tid) {
            let sid = SampleId {
                pid: p,
                tid: tid as u32,
                time: 0,
                id,
                cpu: 0,
            };
            records::push_comm(out, attr, p, tid as u32, name.as_bytes(), false, &sid);
        }
    }
    let sid = SampleId {
        pid: p,
        tid: p,
        time: 0,
        id,
        cpu: 0,
    };
    let mut written = 0;
    for m in procfs::maps(pid).iter().filter(|m| data || m.is_exec()) {
        written += 1;
        let name = if m.path.is_empty() {
            "//anon"
        } else {
            m.path.as_str()
        };
        let args = MmapArgs {
            pid: p,
            tid: p,
            start: m.start,
            len: m.end - m.start,
            pgoff: m.pgoff,
            maj: m.maj,
            min: m.min,
            ino: m.ino,
            prot: m.prot,
            flags: m.flags,
            filename: name.as_bytes(),
            misc: misc::USER,
        };
        records::push_mmap2(out, attr, &args, &sid);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(target: Target) -> RecordOptions {
        RecordOptions {
            events: vec![crate::events::cpu_clock()],
            rate: None,
            call_graph: CallGraph::None,
            target,
            cpus: None,
            output: Output::File(PathBuf::from("/dev/null")),
            mmap_pages: 16,
            cmdline: vec![],
            tool_version: "test".into(),
            stop: None,
            off_cpu: false,
            off_cpu_wakers: false,
            context_switches: false,
            modes: RecordModes::default(),
        }
    }

    #[test]
    fn test_build_attr_first_event_tracking_and_dwarf() {
        let mut o = opts(Target::Command(vec!["true".into()]));
        o.call_graph = CallGraph::Dwarf(4096);
        let a = build_attr(
            &crate::events::cpu_clock(),
            SampleRate::Frequency(4000),
            &o,
            true,
        );
        assert_eq!(a.attr_type, 1);
        assert_eq!(a.sample_period_or_freq, 4000);
        assert!(a.flags & attr_flag::FREQ != 0);
        assert!(a.flags & attr_flag::ENABLE_ON_EXEC != 0);
        assert!(
            a.flags & (attr_flag::MMAP2 | attr_flag::COMM | attr_flag::TASK)
                == attr_flag::MMAP2 | attr_flag::COMM | attr_flag::TASK
        );
        assert!(
            a.sample_type
                & (sample_type::REGS_USER | sample_type::STACK_USER | sample_type::CALLCHAIN)
                != 0
        );
        assert_eq!(a.sample_regs_user, X86_64_REGS_MASK);
        assert_eq!(a.sample_stack_user, 4096);
        let b = build_attr(
            &crate::events::cpu_clock(),
            SampleRate::Period(1000),
            &opts(Target::Pids(vec![1])),
            false,
        );
        assert!(b.flags & (attr_flag::FREQ | attr_flag::MMAP | attr_flag::ENABLE_ON_EXEC) == 0);
        assert_eq!(b.sample_period_or_freq, 1000);
    }

    #[test]
    fn test_tracker_counts_and_dso_hits() {
        let attr = Attr {
            sample_type: sample_type::IDENTIFIER | sample_type::TID | sample_type::TIME,
            ..Attr::default()
        };
        let mut t = Tracker::new(2);
        t.id_to_event.insert(7, 0);
        t.id_to_event.insert(8, 1);
        let mut buf = Vec::new();
        let m = MmapArgs {
            pid: 10,
            tid: 10,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            maj: 0,
            min: 0,
            ino: 0,
            prot: libc::PROT_EXEC as u32 | libc::PROT_READ as u32,
            flags: 2,
            filename: b"/bin/prog",
            misc: misc::USER,
        };
        records::push_mmap2(&mut buf, &attr, &m, &SampleId::default());
        // sample of event 1 in /bin/prog, then one in no mapping
        for (id, ip) in [(8u64, 0x1800u64), (7, 0x9000)] {
            buf.extend_from_slice(&record_type::SAMPLE.to_le_bytes());
            buf.extend_from_slice(&misc::USER.to_le_bytes());
            buf.extend_from_slice(&40u16.to_le_bytes());
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&ip.to_le_bytes());
            buf.extend_from_slice(&10u32.to_le_bytes());
            buf.extend_from_slice(&10u32.to_le_bytes());
            buf.extend_from_slice(&123u64.to_le_bytes());
        }
        // LOST of event 1: 5 samples
        buf.extend_from_slice(&record_type::LOST.to_le_bytes());
        buf.extend_from_slice(&0u16.to_le_bytes());
        buf.extend_from_slice(&24u16.to_le_bytes());
        buf.extend_from_slice(&8u64.to_le_bytes());
        buf.extend_from_slice(&5u64.to_le_bytes());
        t.walk(&buf);
        assert_eq!(t.samples, vec![1, 1]);
        assert_eq!(t.lost, vec![0, 5]);
        assert_eq!((t.lost_records, t.lost_samples), (1, 5));
        assert_eq!(t.hit.len(), 1);
        assert_eq!(t.names[*t.hit.iter().next().unwrap() as usize], "/bin/prog");
        assert_eq!((t.first_time, t.last_time), (Some(123), 123));
    }
}
