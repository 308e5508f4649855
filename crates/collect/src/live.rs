//! Live sample streams (`culprit trace` and `culprit top`): the recorder runs on a thread
//! and writes a pipe-mode perf.data stream into an OS pipe; the calling thread reads the other
//! end, decodes it incrementally (`culprit_decode::StreamDecoder`) and hands every sample to a
//! [`Consumer`], with a wall-clock tick in between (also when no data arrives).
//!
//! Why a pipe: it gives back-pressure for free (a slow consumer blocks the recorder's write;
//! the kernel then drops samples and says so in LOST records, which the summary reports) and
//! memory stays fixed: the pipe's buffer, the decoder's unflushed round, the consumer's state.
//!
//! Latency: the recorder drains the rings every [`record::POLL_INTERVAL_MS`] (50 ms) and ends
//! each pass with a FINISHED_ROUND; the decoder delivers a round's samples at the next
//! FINISHED_ROUND (perf's ordering rule), and everything still queued once the stream has been
//! quiet for [`IDLE_FLUSH`].
//!
//! Ending: the target exits (the recorder ends the stream), Ctrl-C (the recorder's SIGINT
//! handling), or the consumer returns [`Flow::Stop`] (a trace program's `exit()`, `q` in top,
//! a duration): the recorder is told to stop through `RecordOptions::stop` (a launched command
//! gets SIGTERM, then SIGKILL after a second) and the rest of the stream is read and dropped
//! so that the recorder is never blocked on a full pipe.
//!
//! [`events`] turns the sample probes of a live trace program into the events to record.

pub mod events;

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use culprit_decode::model::{Profile, Sample};
use culprit_decode::{DecodeError, StreamDecoder};

use crate::error::RecordError;
use crate::events::{EventSpec, SampleRate};
use crate::record::{self, CallGraph, Output, RecordOptions, RecordSummary, StreamOutput, Target};

/// Why a live session failed. Each message is one clause; the cause is the error's source
/// (print the chain, as `{:#}` of anyhow does, for the whole sentence).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// The pipe between the recorder and the decoder could not be made.
    #[error("cannot create the pipe for the live stream")]
    Pipe(#[source] std::io::Error),
    /// The recorder thread could not be started.
    #[error("cannot start the recorder thread")]
    Thread(#[source] std::io::Error),
    /// The recorder thread panicked.
    #[error("the recorder thread panicked")]
    RecorderPanicked,
    /// The recording failed (its message says why: no such process, permissions…).
    #[error("recording failed")]
    Record(#[from] RecordError),
    /// Reading the stream failed.
    #[error("cannot read the live stream")]
    Read(#[source] std::io::Error),
    /// The stream is not perf.data.
    #[error("cannot decode the live stream")]
    Decode(#[from] DecodeError),
}

/// What to record live: the events, whom, where. The stream output and the stop flag are
/// the session's own.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Events; empty: the default (cycles, or cpu-clock without a PMU).
    pub events: Vec<EventSpec>,
    /// The rate of events that do not set their own (`None`: the recorder's default).
    pub rate: Option<SampleRate>,
    /// Whom to record.
    pub target: Target,
    /// Only these CPUs.
    pub cpus: Option<Vec<u32>>,
    /// Ring buffer data pages per CPU (a power of two).
    pub mmap_pages: usize,
    /// The command line, for the stream's HEADER_CMDLINE.
    pub cmdline: Vec<String>,
    /// The tool's version, for HEADER_VERSION.
    pub tool_version: String,
}

impl LiveOptions {
    /// Whether the session launches a command (which it terminates when the consumer stops).
    pub fn launches(&self) -> bool {
        matches!(self.target, Target::Command(_) | Target::System(Some(_)))
    }
}

/// Whether the consumer wants more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Stop the recording (and the launched command) and end.
    Stop,
}

/// What a live view does with the stream.
pub trait Consumer {
    /// One decoded sample, in perf's delivery order.
    fn sample(&mut self, profile: &Profile, sample: &Sample) -> Flow;
    /// The wall-clock tick; `now` is CLOCK_MONOTONIC in nanoseconds (the clock perf sample
    /// times approximate for software events).
    fn tick(&mut self, profile: &Profile, now: u64) -> Flow;
}

/// Everything still queued is delivered once the stream has been quiet this long: no later
/// record can be older than that (each drain pass takes every ring's records).
pub const IDLE_FLUSH: Duration = Duration::from_millis(200);

/// How a live run ended.
pub struct LiveEnd {
    /// The decoder's final profile (events, DSOs, meta, losses; no samples).
    pub profile: Profile,
    /// The recorder's summary.
    pub summary: RecordSummary,
    /// The consumer asked to stop.
    pub stopped_by_consumer: bool,
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime with a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors; O_CLOEXEC keeps them out of the launched
    // command (it would otherwise hold the write end open and the stream would never end).
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors we own.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // A larger pipe absorbs bursts while the consumer is busy (best effort: capped by
    // /proc/sys/fs/pipe-max-size for unprivileged users).
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    Ok((r, w))
}

/// Hands one sample to the consumer unless it asked to stop.
fn give(consumer: &mut dyn Consumer, stopped: &mut bool, p: &Profile, s: &Sample) {
    if !*stopped && consumer.sample(p, s) == Flow::Stop {
        *stopped = true;
    }
}

/// Records with `opts` and feeds the consumer until the stream ends. `warn` gets the
/// recorder's warnings (from the recorder thread: a full-screen view collects them and
/// prints them once it has left the screen). `tick` is the wall-clock tick interval.
pub fn run(
    opts: LiveOptions,
    tick: Duration,
    warn: Box<dyn FnMut(String) + Send>,
    consumer: &mut dyn Consumer,
) -> Result<LiveEnd, LiveError> {
    // Before the thread starts: a Ctrl-C from now on ends the recording, never the process.
    crate::launch::install_sigint_handler();
    let (rd, wr) = pipe().map_err(LiveError::Pipe)?;
    let stop = Arc::new(AtomicBool::new(false));
    let opts = RecordOptions {
        events: opts.events,
        rate: opts.rate,
        call_graph: CallGraph::None,
        target: opts.target,
        cpus: opts.cpus,
        output: Output::Stream(StreamOutput::new(Box::new(std::fs::File::from(wr)))),
        mmap_pages: opts.mmap_pages,
        cmdline: opts.cmdline,
        tool_version: opts.tool_version,
        stop: Some(stop.clone()),
        off_cpu: false,
        off_cpu_wakers: false,
        context_switches: false,
        modes: crate::modes::RecordModes::default(),
    };
    let recorder = std::thread::Builder::new()
        .name("culprit-record".into())
        .spawn(move || {
            let mut warn = warn;
            record::record(&opts, &mut *warn)
        })
        .map_err(LiveError::Thread)?;

    let mut input = std::fs::File::from(rd);
    let mut dec = StreamDecoder::new();
    let mut buf = vec![0u8; 256 << 10];
    let tick = tick.max(Duration::from_millis(1));
    let mut next_tick = Instant::now() + tick;
    let mut stopped = false;
    let mut last_data = Instant::now();
    let mut unflushed = false;
    let mut decode_err = None;
    let mut read_err = None;
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd: input.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc > 0 {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(e) => {
                    read_err = Some(e);
                    stop.store(true, Ordering::SeqCst);
                    break;
                }
            };
            if n > 0 && !stopped && decode_err.is_none() {
                last_data = Instant::now();
                unflushed = true;
                if let Err(e) = dec.push(&buf[..n], &mut |p, s| give(consumer, &mut stopped, p, s))
                {
                    decode_err = Some(e);
                    stopped = true;
                }
            }
        }
        if !stopped && unflushed && last_data.elapsed() >= IDLE_FLUSH {
            unflushed = false;
            dec.flush_all(&mut |p, s| give(consumer, &mut stopped, p, s));
        }
        if Instant::now() >= next_tick {
            while next_tick <= Instant::now() {
                next_tick += tick;
            }
            if !stopped && consumer.tick(dec.profile(), monotonic_ns()) == Flow::Stop {
                stopped = true;
            }
        }
        if stopped {
            // Keep reading (and dropping) until the recorder closes the stream.
            stop.store(true, Ordering::SeqCst);
        }
    }
    drop(input);
    let rec: Result<RecordSummary, RecordError> =
        recorder.join().map_err(|_| LiveError::RecorderPanicked)?;
    let summary = rec?;
    if let Some(e) = read_err {
        return Err(LiveError::Read(e));
    }
    if let Some(e) = decode_err {
        return Err(LiveError::Decode(e));
    }
    let profile = dec.finish(&mut |p, s| give(consumer, &mut stopped, p, s));
    Ok(LiveEnd {
        profile,
        summary,
        stopped_by_consumer: stopped,
    })
}
