//! A live trace session: the events the program's sample probes record, and the live
//! recording (`collect::live`) whose samples and ticks feed the program's
//! [`LiveSession`], which runs END when the recording ends.

use culprit_collect::events::EventSpec;
use culprit_collect::launch::ChildExit;
use culprit_collect::live::events::{probe_event_specs, EventRequest, ProbeEventError};
use culprit_collect::live::{self, LiveOptions};
use culprit_decode::model::{Profile, Sample};
use culprit_trace::probe::Probe;
use culprit_trace::session::{self, Flow, LiveSession, Outcome, SessionIo};
use culprit_trace::Program;

use super::{session_error, LiveTrace};

/// The events to record live for the program's sample probes (`per_process`: the target
/// is processes, not whole CPUs).
fn live_events(prog: &Program, per_process: bool) -> Result<Vec<EventSpec>, ProbeEventError> {
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

/// The live options of a trace: the events of the program's probes, the target (its
/// usage error, if any, is reported after the events').
fn live_options(prog: &Program, live: LiveTrace) -> anyhow::Result<LiveOptions> {
    let events = live_events(prog, live.per_process)?;
    let target = live.target?;
    Ok(LiveOptions {
        events,
        rate: None,
        target: target.target,
        cpus: target.cpus,
        mmap_pages: live.mmap_pages,
        cmdline: live.cmdline,
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    })
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

/// Records `live`'s target and runs the program over the stream as it arrives; the
/// recorder's warnings go to stderr (from the recorder's thread).
pub(super) fn run(prog: &Program, live: LiveTrace, io: SessionIo<'_>) -> anyhow::Result<Outcome> {
    let warn = Box::new(|w: String| {
        eprintln!(
            "culprit trace: warning: {}",
            culprit_output::text::escape(&w)
        )
    });
    let opts = live_options(prog, live)?;
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
