//! What `culprit trace` takes from this machine, kept out of the language crate
//! (culprit-trace evaluates samples it is given and opens nothing): the tracepoint formats
//! of the program's `tracepoint:` probes (from tracefs), the events its sample probes
//! record, and the live recording (`collect::live`) whose samples and ticks feed the
//! program's [`LiveSession`]; and how a session's error reaches `main` (file and live sessions).

use culprit_collect::events::EventSpec;
use culprit_collect::launch::ChildExit;
use culprit_collect::live::events::{probe_event_specs, EventRequest, ProbeEventError};
use culprit_collect::live::{self, LiveOptions};
use culprit_collect::tracefs::Tracefs;
use culprit_decode::model::{Profile, Sample};
use culprit_decode::tracepoint::TracepointFormat;
use culprit_symbols::ProfileInput;
use culprit_trace::probe::Probe;
use culprit_trace::session::{self, Flow, LiveSession, Outcome, SessionError, SessionIo};
use culprit_trace::Program;

/// The tracepoint formats the program `source` is typed with: a recording's own when
/// `input` is a perf.data file, else this machine's (tracefs) for each tracepoint probe
/// (`session::tracepoint_formats`).
pub fn tracepoint_formats(source: &str, input: Option<&ProfileInput>) -> Vec<TracepointFormat> {
    // Tracefs is looked for only when a probe needs this machine's formats.
    let mut tracefs: Option<Option<Tracefs>> = None;
    let mut machine_formats = |pattern: &str| -> Vec<TracepointFormat> {
        tracefs
            .get_or_insert_with(Tracefs::system)
            .as_ref()
            .and_then(|t| t.formats(&[pattern.to_string()]).ok())
            .unwrap_or_default()
    };
    session::tracepoint_formats(source, input, &mut machine_formats)
}

/// The events to record live for the program's sample probes (`per_process`: the target
/// is processes, not whole CPUs).
pub fn live_events(prog: &Program, per_process: bool) -> Result<Vec<EventSpec>, ProbeEventError> {
    let probes: Vec<(EventRequest, String)> = prog
        .sample_probes()
        .into_iter()
        .filter_map(|(p, text)| {
            let req = match p {
                Probe::Pmc { event, period } => EventRequest::Event {
                    name: event,
                    period,
                },
                Probe::Profile { hz } => EventRequest::Profile { hz },
                Probe::Breakpoint { addr, access, len } => EventRequest::Event {
                    name: Probe::breakpoint_event(addr, access.as_deref(), len),
                    period: None,
                },
                Probe::IbsOp { period } => EventRequest::IbsOp { period },
                Probe::IbsFetch { period } => EventRequest::IbsFetch { period },
                Probe::Tracepoint { event } => EventRequest::Tracepoint { event },
                Probe::Begin | Probe::End | Probe::Tick { .. } => return None,
            };
            Some((req, text))
        })
        .collect();
    probe_event_specs(&probes, per_process)
}

/// Hands the live recorder's samples and ticks to the program's session.
struct Feed<'s, 'p, 'a>(&'s mut LiveSession<'p, 'a>);

/// The recorder's flow for the session's.
fn recorder_flow(flow: Flow) -> live::Flow {
    match flow {
        Flow::Continue => live::Flow::Continue,
        Flow::Stop => live::Flow::Stop,
    }
}

impl live::Consumer for Feed<'_, '_, '_> {
    fn sample(&mut self, profile: &Profile, sample: &Sample) -> live::Flow {
        recorder_flow(self.0.sample(profile, sample))
    }

    fn tick(&mut self, profile: &Profile, now: u64) -> live::Flow {
        recorder_flow(self.0.tick(profile, now))
    }
}

/// Records live with `opts` and runs the program over the stream as it arrives. `warn`
/// gets the recorder's warnings (from the recorder's thread).
pub fn trace_live(
    prog: &Program,
    opts: LiveOptions,
    warn: Box<dyn FnMut(String) + Send>,
    io: SessionIo<'_>,
) -> anyhow::Result<Outcome> {
    let launched = opts.launches();
    let mut session = LiveSession::new(prog, io);
    let end = live::run(opts, session::LIVE_TICK, warn, &mut Feed(&mut session))?;
    let s = &end.summary;
    let mut outcome = session
        .finish(&end.profile, s.lost_samples)
        .map_err(session_error)?;
    if s.stopped && launched {
        if let Some(e) = s.exit {
            outcome.notes.push(format!(
                "exit() stopped the recording; the launched command {}",
                match e {
                    ChildExit::Exited(c) => format!("had already exited (status {c})"),
                    ChildExit::Signaled(sig) => format!("was terminated (signal {sig})"),
                }
            ));
        }
    }
    Ok(outcome)
}

/// A session's error for `main`: an I/O error stays an `io::Error` in the chain (a closed
/// stdout — `culprit trace … | head` — then ends quietly with status 0, as in every verb).
pub fn session_error(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::Io(io) => io.into(),
        other => other.into(),
    }
}
