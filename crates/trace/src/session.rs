//! A trace session: a compiled [`Program`] run over a perf.data file ([`trace_file`]) or a
//! live stream of samples ([`LiveSession`]), its printed output written as it is produced
//! (or collected for a JSON document), ending in an [`Outcome`] and its [`TraceReport`].
//!
//! Live mode streams: the caller records (the CLI drives culprit-collect's live recorder;
//! this crate opens no events) and hands the session every sample as it is recorded and a
//! wall-clock tick; `printf` output appears while the target runs, `tick-N` probes fire on
//! wall time (on sample time offline), END runs when the caller finishes the session (the
//! recording ended: Ctrl-C, the command or the processes exit) or after `exit()`, which
//! asks the caller to stop the recording ([`Flow::Stop`]).

use std::io::Write;
use std::time::{Duration, Instant};

use culprit_decode::model::{Profile, Sample};
use culprit_decode::tracepoint::TracepointFormat;
use culprit_decode::ReadError;
use culprit_symbols::{ProfileInput, ReadPlan, Symbolizer};
use serde::Serialize;

use crate::probe::Probe;
use crate::{Program, Runner, ScriptError, SymbolSource};

/// What becomes of the program's printed output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printing {
    /// Written to the output as it is printed (text); END prints the aggregations nobody
    /// printed, as DTrace does.
    Stream,
    /// Collected into [`Outcome::output`] (for a JSON document), up to [`OUTPUT_CAP`] bytes.
    Collect,
}

/// How much collected output a session keeps: a program printing per sample cannot grow
/// the JSON without limit.
pub const OUTPUT_CAP: usize = 64 << 20;

/// Output pending in the runner beyond which it is written out.
const FLUSH_BYTES: usize = 1 << 16;

/// From a pipe, pending output is written at least this often.
const PIPE_FLUSH: Duration = Duration::from_millis(100);

/// What a session tells its caller while it runs (the caller decides how to show it).
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// The program was bound to the input's events (not sent for a quiet program).
    Bound {
        /// Clauses of the program.
        clauses: usize,
        /// Probes over all clauses.
        probes: usize,
        /// The input, as named in messages (a path, or "the live recording").
        input: String,
    },
    /// With `timed` ([`trace_file`]): the file was read into memory, then evaluated.
    Timing {
        /// Samples evaluated.
        samples: u64,
        /// Time to read and decode the file.
        decode: Duration,
        /// Time to evaluate the program over the samples.
        evaluate: Duration,
    },
    /// The kernel lost samples during a live recording.
    LostSamples(u64),
}

/// Where a session's output and messages go, and the symbols it names code with.
pub struct SessionIo<'a> {
    /// Names code locations (`sym`, `mod`, `%a`, offenders).
    pub syms: &'a mut Symbolizer,
    /// Where the program's output is written, with [`Printing::Stream`].
    pub out: &'a mut dyn Write,
    /// What becomes of the program's printed output.
    pub printing: Printing,
    /// Told what happens while the session runs.
    pub on_event: &'a mut dyn FnMut(SessionEvent),
    /// Told the bytes read so far and the input's size while a file is read (a progress bar).
    pub progress: Box<dyn FnMut(u64, u64) + Send + 'a>,
}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The program does not fit the input's events.
    #[error(transparent)]
    Bind(#[from] ScriptError),
    /// Reading the perf.data input failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Writing the program's output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// How a session ended.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Samples the program saw.
    pub seen: u64,
    /// Samples some clause matched.
    pub matched: u64,
    /// The printed output, with [`Printing::Collect`] (empty otherwise).
    pub output: String,
    /// The aggregations, as the runner reports them (docs/trace.md).
    pub aggregations: Vec<crate::agg::AggregationJson>,
    /// Notes for the user (dropped keys, losses, truncation, how the recording ended).
    pub notes: Vec<String>,
    /// The program's `exit()` value.
    pub exit: Option<i64>,
    /// Why reading stopped early, when it did.
    pub stopped: Option<String>,
}

impl Outcome {
    /// The owned JSON report of the session; `input` is the recording read (`None` live).
    pub fn report(self, input: Option<String>) -> TraceReport {
        TraceReport {
            schema: 1,
            input,
            samples: SampleCounts {
                seen: self.seen,
                matched: self.matched,
            },
            output: self.output,
            aggregations: self.aggregations,
            notes: self.notes,
            exit: self.exit,
            stopped: self.stopped,
        }
    }
}

/// `culprit trace --format json` (docs/schemas/trace.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// JSON schema version.
    pub schema: u32,
    /// The recording read (`null` live).
    pub input: Option<String>,
    /// Samples seen and matched.
    pub samples: SampleCounts,
    /// What the program printed.
    pub output: String,
    /// The aggregations, as the runner reports them (docs/trace.md).
    pub aggregations: Vec<crate::agg::AggregationJson>,
    /// Notes for the user.
    pub notes: Vec<String>,
    /// The program's `exit()` value.
    pub exit: Option<i64>,
    /// Why reading stopped early, when it did.
    pub stopped: Option<String>,
}

/// Samples of a [`TraceReport`].
#[derive(Debug, Clone, Serialize)]
pub struct SampleCounts {
    /// Samples the program saw.
    pub seen: u64,
    /// Samples some clause matched.
    pub matched: u64,
}

/// Whether a program's text may name code (functions, modules, addresses, offenders), so
/// that the kernel's symbols are worth loading ahead of time. A false positive only costs
/// that work.
pub fn may_name_code(source: &str) -> bool {
    ["sym", "mod", "%a", "%A", "offenders"]
        .iter()
        .any(|t| source.contains(t))
}

/// The tracepoint formats a program's `tracepoint:` probes are typed with
/// ([`crate::Options::tracepoints`]): a recording's own (its header's tracing data) when
/// `input` is a perf.data file, else (live, or a stream whose formats arrive with its
/// records) this machine's formats of the tracepoints the probes name, which
/// `machine_formats` gives for one probe's `system:name` pattern (the caller reads them
/// from tracefs). Empty when the program has no tracepoint probe or does not parse
/// (compiling it says why).
pub fn tracepoint_formats(
    source: &str,
    input: Option<&ProfileInput>,
    machine_formats: &mut dyn FnMut(&str) -> Vec<TracepointFormat>,
) -> Vec<TracepointFormat> {
    let Ok(ast) = crate::parser::parse(source) else {
        return Vec::new();
    };
    let patterns: Vec<String> = ast
        .clauses
        .iter()
        .flat_map(|c| c.probes.iter())
        .filter_map(|(text, _)| match crate::probe::parse(text) {
            Ok(Probe::Tracepoint { event }) => Some(event),
            _ => None,
        })
        .collect();
    if patterns.is_empty() {
        return Vec::new();
    }
    if let Some(formats) = input.and_then(|i| i.reader().tracepoint_formats()) {
        return formats;
    }
    let mut out: Vec<TracepointFormat> = Vec::new();
    for p in &patterns {
        for f in machine_formats(p) {
            if !out.iter().any(|o| o.id == f.id) {
                out.push(f);
            }
        }
    }
    out
}

/// Where the program's output goes: written as it is printed, or collected.
struct Sink<'o> {
    printing: Printing,
    out: &'o mut dyn Write,
    text: String,
    truncated: bool,
}

impl<'o> Sink<'o> {
    fn new(printing: Printing, out: &'o mut dyn Write) -> Self {
        Sink {
            printing,
            out,
            text: String::new(),
            truncated: false,
        }
    }

    /// Writes (or collects) what the runner printed since the last call.
    fn flush_runner(&mut self, r: &mut Runner<'_>) -> std::io::Result<()> {
        let s = r.take_output();
        if s.is_empty() {
            return Ok(());
        }
        match self.printing {
            Printing::Collect => {
                if self.text.len() + s.len() <= OUTPUT_CAP {
                    self.text.push_str(&s);
                } else {
                    self.truncated = true;
                }
                Ok(())
            }
            Printing::Stream => {
                self.out.write_all(s.as_bytes())?;
                // Live output appears as it is printed.
                self.out.flush()
            }
        }
    }
}

/// Binds the program to the profile's events, telling the caller unless it is quiet.
fn bind<'p>(
    prog: &'p Program,
    profile: &Profile,
    what: &str,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Result<Runner<'p>, ScriptError> {
    let r = prog.runner(&profile.events, what)?;
    if !prog.quiet {
        on_event(SessionEvent::Bound {
            clauses: prog.clauses().len(),
            probes: prog.clauses().iter().map(|c| c.probes.len()).sum(),
            input: what.to_string(),
        });
    }
    Ok(r)
}

/// Runs END and gathers the outcome: the runner's notes, then why reading stopped and
/// what the kernel lost.
fn conclude(
    mut r: Runner<'_>,
    p: &Profile,
    mut sink: Sink<'_>,
    syms: &mut dyn SymbolSource,
) -> Result<Outcome, SessionError> {
    r.end(p, syms, sink.printing == Printing::Stream);
    sink.flush_runner(&mut r)?;
    sink.out.flush()?;
    let mut notes = Vec::new();
    if sink.truncated {
        notes.push(format!(
            "output truncated at {OUTPUT_CAP} bytes in the JSON document"
        ));
    }
    notes.extend(r.notes().iter().cloned());
    let stopped = p.stopped.as_ref().map(|s| {
        format!(
            "reading stopped at offset {} ({}) after {} records; the samples before it were traced",
            s.offset, s.reason, s.records_read
        )
    });
    if let Some(s) = &stopped {
        notes.push(s.clone());
    }
    if p.lost > 0 {
        notes.push(format!(
            "the kernel lost {} samples while recording",
            p.lost
        ));
    }
    Ok(Outcome {
        seen: r.samples_seen,
        matched: r.samples_matched,
        output: sink.text,
        aggregations: r.aggregations_json(),
        notes,
        exit: r.exit_code(),
        stopped,
    })
}

/// Runs the program over the samples of a perf.data file (or a pipe-mode stream on
/// stdin). `timed`: read the whole file into memory first, so that the evaluation is timed
/// alone ([`SessionEvent::Timing`]); otherwise samples are streamed from the file.
pub fn trace_file(
    prog: &Program,
    input: &ProfileInput,
    timed: bool,
    io: SessionIo<'_>,
) -> Result<Outcome, SessionError> {
    let SessionIo {
        syms,
        out,
        printing,
        on_event,
        progress,
    } = io;
    let sink = Sink::new(printing, out);
    let what = input.path().display().to_string();
    if timed {
        run_in_memory(prog, input, &what, sink, syms, on_event)
    } else {
        run_streaming(prog, input, &what, sink, syms, on_event, progress)
    }
}

fn run_streaming(
    prog: &Program,
    input: &ProfileInput,
    what: &str,
    mut sink: Sink<'_>,
    syms: &mut Symbolizer,
    on_event: &mut dyn FnMut(SessionEvent),
    progress: Box<dyn FnMut(u64, u64) + Send + '_>,
) -> Result<Outcome, SessionError> {
    // Bound on first sample: the events are known once the header is read.
    let mut runner: Option<Runner<'_>> = None;
    let mut failed: Option<ScriptError> = None;
    let mut io_err: Option<std::io::Error> = None;
    // From a pipe (`culprit record -o - … | culprit trace -i -`) the samples arrive while the
    // recording runs: print at least every 100 ms, not only when 64 KiB are pending.
    let piped = input.is_stdin();
    let mut last_flush = Instant::now();
    // The common case: bound, nothing failed, not a pipe.
    let mut fast = false;
    let mut on_sample = |p: &Profile, s: &Sample| {
        if fast {
            if let Some(r) = runner.as_mut() {
                r.sample(p, s, syms);
                if r.pending_output() > FLUSH_BYTES {
                    if let Err(e) = sink.flush_runner(r) {
                        io_err = Some(e);
                        fast = false;
                    }
                }
                return;
            }
        }
        if failed.is_some() || io_err.is_some() {
            return;
        }
        if runner.is_none() {
            match bind(prog, p, what, on_event) {
                Ok(mut r) => {
                    r.begin(p, syms);
                    runner = Some(r);
                    fast = !piped;
                }
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            }
        }
        if let Some(r) = runner.as_mut() {
            r.sample(p, s, syms);
            let pending = r.pending_output();
            let due = piped && pending > 0 && last_flush.elapsed() >= PIPE_FLUSH;
            if pending > FLUSH_BYTES || due {
                last_flush = Instant::now();
                if let Err(e) = sink.flush_runner(r) {
                    io_err = Some(e);
                }
            }
        }
    };
    // Programs never look at call chains: not decoding them is much faster on -g files.
    // Code locations are resolved only for programs that name code (sym, mod, %a…).
    let plan = ReadPlan {
        skip_callchains: true,
        skip_locations: !prog.uses_locations(),
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, progress, &mut on_sample)?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(e) = io_err {
        return Err(e.into());
    }
    let mut r = match runner {
        Some(r) => r,
        None => {
            // No samples at all: BEGIN and END still run.
            let mut r = bind(prog, &profile, what, on_event)?;
            r.begin(&profile, syms);
            r
        }
    };
    sink.flush_runner(&mut r)?;
    conclude(r, &profile, sink, syms)
}

fn run_in_memory(
    prog: &Program,
    input: &ProfileInput,
    what: &str,
    mut sink: Sink<'_>,
    syms: &mut Symbolizer,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Result<Outcome, SessionError> {
    let t0 = Instant::now();
    let profile = input.read(&ReadPlan::default())?;
    let decode = t0.elapsed();
    let mut r = bind(prog, &profile, what, on_event)?;
    r.begin(&profile, syms);
    let t1 = Instant::now();
    for s in &profile.samples {
        if !r.sample(&profile, s, syms) {
            break;
        }
        if r.pending_output() > FLUSH_BYTES {
            sink.flush_runner(&mut r)?;
        }
    }
    let evaluate = t1.elapsed();
    sink.flush_runner(&mut r)?;
    on_event(SessionEvent::Timing {
        samples: r.samples_seen,
        decode,
        evaluate,
    });
    conclude(r, &profile, sink, syms)
}

/// What a live session asks of the recording after a sample or a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep recording.
    Continue,
    /// Stop the recording (and a launched command): the program called `exit()`, failed to
    /// bind, or its output could not be written. [`LiveSession::finish`] then ends it.
    Stop,
}

/// The program's side of a live stream: the caller records and hands it every sample and a
/// wall-clock tick ([`LIVE_TICK`]) as they arrive; it binds on the first data (the events
/// are known from the stream's head), runs BEGIN, every sample and the ticks, and writes
/// the output as it is produced. [`LiveSession::finish`] runs END once the recording ended.
pub struct LiveSession<'p, 'a> {
    prog: &'p Program,
    runner: Option<Runner<'p>>,
    sink: Sink<'a>,
    syms: &'a mut Symbolizer,
    on_event: &'a mut dyn FnMut(SessionEvent),
    failed: Option<SessionError>,
}

/// How often a live session wants its tick: the resolution of `tick-N` probes and of
/// output flushing.
pub const LIVE_TICK: Duration = Duration::from_millis(10);

/// How live inputs are named in messages.
const LIVE_INPUT: &str = "the live recording";

impl<'p, 'a> LiveSession<'p, 'a> {
    /// A session of `prog` writing to `io` (its progress callback is for files: unused).
    pub fn new(prog: &'p Program, io: SessionIo<'a>) -> Self {
        LiveSession {
            prog,
            runner: None,
            sink: Sink::new(io.printing, io.out),
            syms: io.syms,
            on_event: io.on_event,
            failed: None,
        }
    }

    /// The runner, bound (and BEGIN run) once the stream's events are known.
    fn runner(&mut self, p: &Profile) -> Option<&mut Runner<'p>> {
        if self.runner.is_none() && self.failed.is_none() && !p.events.is_empty() {
            match bind(self.prog, p, LIVE_INPUT, self.on_event) {
                Ok(mut r) => {
                    r.set_wall_clock_ticks(true);
                    r.begin(p, self.syms);
                    self.runner = Some(r);
                }
                Err(e) => self.failed = Some(e.into()),
            }
        }
        self.runner.as_mut()
    }

    fn flush(&mut self) -> Flow {
        if let Some(r) = self.runner.as_mut() {
            if let Err(e) = self.sink.flush_runner(r) {
                self.failed = Some(e.into());
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// One decoded sample of the stream `p`, in perf's delivery order.
    pub fn sample(&mut self, p: &Profile, s: &Sample) -> Flow {
        if self.runner(p).is_none() {
            return Flow::Stop;
        }
        let Some(r) = self.runner.as_mut() else {
            return Flow::Stop;
        };
        let go = r.sample(p, s, self.syms);
        if !go {
            self.flush();
            return Flow::Stop;
        }
        if r.pending_output() > FLUSH_BYTES {
            return self.flush();
        }
        Flow::Continue
    }

    /// The wall-clock tick; `now` is CLOCK_MONOTONIC in nanoseconds (the clock perf sample
    /// times approximate for software events).
    pub fn tick(&mut self, p: &Profile, now: u64) -> Flow {
        if self.runner(p).is_none() {
            return if self.failed.is_some() {
                Flow::Stop
            } else {
                Flow::Continue
            };
        }
        let go = match self.runner.as_mut() {
            Some(r) => r.tick(p, now, self.syms),
            None => true,
        };
        // Output produced by samples and ticks appears at least every tick.
        let flushed = self.flush();
        if !go {
            return Flow::Stop;
        }
        flushed
    }

    /// Ends the session once the recording ended: `profile` is the stream's final profile
    /// (events, DSOs, losses), `lost_samples` what the recorder counted as lost (told as
    /// [`SessionEvent::LostSamples`]). Runs END (and BEGIN first if nothing arrived) and
    /// gathers the outcome, or returns why the session failed while it ran.
    pub fn finish(mut self, profile: &Profile, lost_samples: u64) -> Result<Outcome, SessionError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if lost_samples > 0 {
            (self.on_event)(SessionEvent::LostSamples(lost_samples));
        }
        let mut r = match self.runner.take() {
            Some(r) => r,
            None => {
                // Nothing arrived (no samples): BEGIN and END still run.
                let mut r = bind(self.prog, profile, LIVE_INPUT, self.on_event)?;
                r.begin(profile, self.syms);
                r
            }
        };
        self.sink.flush_runner(&mut r)?;
        conclude(r, profile, self.sink, self.syms)
    }
}
