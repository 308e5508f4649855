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
//!
//! Where each part lives: `plan` (CPUs, events, rates, attrs, tasks: steps 1-2), `attrs`
//! (the attr of an event), `diagnose` (why an open failed), `open` (step 3), `output` (the
//! file and `FILE.old`), `synth` (the synthesized COMM/MMAP records), `session` (steps 4-6:
//! the main loop), `tracker` (what the written records say) and `files` (file switching,
//! size bounds, compression).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::RecordError;
use crate::events::{EventSpec, SampleRate};
use crate::launch::{self, ChildExit};
use crate::modes::{
    CompressionSummary, Notice, RecordModes, RecordedFile, StopReason, SwitchOutput,
};
use crate::perfdata::pipe::PipeWriter;
use crate::perfdata::{BuildIdEntry, PerfDataWriter};

mod attrs;
mod diagnose;
mod files;
mod open;
mod output;
mod plan;
mod session;
mod synth;
mod tracker;

use attrs::check_ring_holds_a_sample;
pub use attrs::{default_event, event_call_graph, max_dwarf_sample_bytes};
use session::{raise_fd_limit, record_into};

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

#[cfg(test)]
mod tests {
    use super::attrs::build_attr;
    use super::tracker::Tracker;
    use super::*;
    use crate::perfdata::records::{self, MmapArgs, SampleId};
    use crate::perfdata::Attr;
    use culprit_decode::abi::{attr_flag, misc, record_type, sample_type};

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
