//! The recorder's error type: one variant per thing a user can get wrong or hit, carrying
//! the values needed for a one-line actionable message (the CLI prints `Display`).

use std::path::PathBuf;

use crate::launch::LaunchError;

/// Why `culprit record` could not record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The output file cannot be created or written.
    #[error("cannot write the output file {}: {source}", path.display())]
    OutputNotWritable {
        /// The -o path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Another recording holds the output file (or its `.old`) locked.
    #[error(
        "{} is being written by another recording (it holds the file locked); use another -o, \
         or wait for that recording to end",
        path.display()
    )]
    OutputInUse {
        /// The locked path.
        path: PathBuf,
    },
    /// Writing the head of the output failed, before the recording started (the previous
    /// file, if any, is back in place).
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The -o path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The command could not be started.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A -p process does not exist (any more).
    #[error("no such process: {0} (it exited, or the PID is wrong)")]
    NoSuchProcess(i32),
    /// A -C CPU is not online.
    #[error("CPU {cpu} is not online (online CPUs: {online})")]
    CpuNotOnline {
        /// The requested CPU.
        cpu: u32,
        /// The online list.
        online: String,
    },
    /// The kernel refused the event for lack of privileges.
    #[error(
        "no permission to open event '{event}' (kernel.perf_event_paranoid = {}): \
         run as root, grant CAP_PERFMON, or lower the limit with \
         `sysctl -w kernel.perf_event_paranoid=1` (0 or lower for -a, -1 for everything)",
        paranoid.map_or("unknown".to_string(), |p| p.to_string())
    )]
    PermissionDenied {
        /// The event's name.
        event: String,
        /// The current `perf_event_paranoid` level.
        paranoid: Option<i32>,
    },
    /// The PMU does not support the event (or sampling it) on this machine.
    #[error("event '{event}' is not supported here: {reason}")]
    EventNotSupported {
        /// The event's name.
        event: String,
        /// What the errno means for this event.
        reason: String,
    },
    /// The kernel rejected the event's settings.
    #[error("event '{event}' was rejected (EINVAL): {reason}")]
    EventInvalid {
        /// The event's name.
        event: String,
        /// Likely causes.
        reason: String,
    },
    /// Out of file descriptors.
    #[error(
        "too many open files: {needed} perf events are needed (events x CPUs x threads); \
         raise the limit (`ulimit -n`) or record fewer events/CPUs/threads"
    )]
    TooManyFiles {
        /// How many event fds the recording needs.
        needed: usize,
    },
    /// Any other perf_event_open failure.
    #[error("cannot open event '{event}': {source}")]
    Open {
        /// The event's name.
        event: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// mmap of the ring buffer failed.
    #[error("cannot map the ring buffer of CPU {cpu}: {source}; try fewer pages (-m)")]
    Mmap {
        /// The CPU.
        cpu: u32,
        /// The OS error.
        source: std::io::Error,
    },
    /// An ioctl on an event failed.
    #[error("perf ioctl {what} failed: {source}")]
    Ioctl {
        /// Which ioctl.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// Invalid options (e.g. a zero period).
    #[error("{0}")]
    Invalid(String),
    /// `kernel.perf_event_paranoid` forbids what was asked (kernel-only events, `-a`) to
    /// this user: the level, what it allows and how to change it.
    #[error("{0}")]
    NotPermitted(String),
    /// Writing the output failed while recording (a full disk, a closed pipe): the
    /// recording stopped, the target was handled, what was written is kept.
    #[error("{0}")]
    OutputFailed(Box<OutputFailure>),
}

impl RecordError {
    /// Whether the output was a pipe whose reader went away (`record -o - | head`): the
    /// CLI exits 141 (128 + SIGPIPE) as perf does.
    pub fn is_broken_pipe(&self) -> bool {
        let e = match self {
            RecordError::Write { source, .. } => source,
            RecordError::OutputFailed(f) => &f.error,
            _ => return false,
        };
        e.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// What happened to the target when the output failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetAfterFailure {
    /// The launched command was still running: it was terminated (SIGTERM, then SIGKILL),
    /// as perf does with its workload.
    Terminated,
    /// The launched command had already exited.
    Exited,
    /// `-p` processes: the events were closed, the processes run on.
    Detached,
    /// System-wide without a command: nothing to do.
    Nothing,
}

/// A recording cut short by a write error.
#[derive(Debug)]
pub struct OutputFailure {
    /// The -o path (`-` for a stream).
    pub path: PathBuf,
    /// The output is a pipe-mode stream (nothing to close or keep).
    pub stream: bool,
    /// The write error.
    pub error: std::io::Error,
    /// Bytes of records kept (file) or written (stream) before the failure.
    pub data_size: u64,
    /// Samples in them.
    pub samples: u64,
    /// File mode: the size of the file kept, or why it could not be closed.
    pub closed: Result<u64, std::io::Error>,
    /// The file is closed without its feature sections (no room for them).
    pub without_features: bool,
    /// The recording has tracepoint events (`-e sched:…`, `--off-cpu`): without the feature
    /// sections their formats (HEADER_TRACING_DATA) are lost too.
    pub has_tracepoints: bool,
    /// What happened to the target.
    pub target: TargetAfterFailure,
}

impl std::fmt::Display for OutputFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
        if self.stream {
            write!(
                f,
                "writing the output stream failed: {}; the recording stopped after {:.3} MB of \
                 records ({} samples)",
                self.error,
                mb(self.data_size),
                self.samples
            )?;
        } else {
            write!(
                f,
                "writing {} failed: {}; the recording stopped",
                self.path.display(),
                self.error
            )?;
            match &self.closed {
                Ok(size) if self.without_features && self.has_tracepoints => write!(
                    f,
                    "; {} keeps what was written, {:.3} MB ({} samples), but without its \
                     header's feature sections (no room for them): the host description, build \
                     ids and the tracepoints' formats are missing, so neither culprit nor perf \
                     can name its tracepoint and off-CPU samples (perf: \"broken or missing \
                     trace data\"); its other events read normally",
                    self.path.display(),
                    mb(*size),
                    self.samples,
                )?,
                Ok(size) => write!(
                    f,
                    "; {} keeps what was written, {:.3} MB ({} samples), readable by culprit \
                     report and perf report{}",
                    self.path.display(),
                    mb(*size),
                    self.samples,
                    if self.without_features {
                        " (without the host description and build ids: no room for them)"
                    } else {
                        ""
                    }
                )?,
                Err(e) => write!(
                    f,
                    "; {} could not be closed ({e}): it may not be readable",
                    self.path.display()
                )?,
            }
        }
        match self.target {
            TargetAfterFailure::Terminated => f.write_str("; the command was terminated"),
            TargetAfterFailure::Detached => {
                f.write_str("; the processes were detached and keep running")
            }
            TargetAfterFailure::Exited | TargetAfterFailure::Nothing => Ok(()),
        }
    }
}
