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
    /// Writing the output failed mid-recording (disk full…).
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
}
