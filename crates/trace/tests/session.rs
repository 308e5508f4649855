//! `culprit_trace::session`: a program run over a recorded file, streamed or collected.

use std::path::PathBuf;

use culprit_symbols::{ProfileInput, ReadPlan, Symbolizer, SymbolizerOptions};
use culprit_trace::session::{self, Flow, LiveSession, Printing, SessionEvent, SessionIo};
use culprit_trace::{compile, Options, Program};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../decode/tests/fixtures")
        .join(name)
}

/// Runs `src` over a fixture; returns the outcome, what was written and the events told.
fn trace(
    src: &str,
    name: &str,
    printing: Printing,
    timed: bool,
    quiet: bool,
) -> (session::Outcome, String, Vec<SessionEvent>) {
    let opts = Options {
        quiet,
        ..Options::default()
    };
    let prog: Program = compile(src, &opts).unwrap();
    let input = ProfileInput::new(fixture(name), SymbolizerOptions::default());
    let mut syms = Symbolizer::new(SymbolizerOptions::default());
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut on_event = |e: SessionEvent| events.push(e);
    let io = SessionIo {
        syms: &mut syms,
        out: &mut out,
        printing,
        on_event: &mut on_event,
        progress: Box::new(|_, _| {}),
    };
    let outcome = session::trace_file(&prog, &input, timed, io).unwrap();
    (outcome, String::from_utf8(out).unwrap(), events)
}

const PROGRAM: &str =
    "BEGIN { printf(\"start\\n\"); } pmc:::cpu-clock { @n[execname] = count(); } END { exit(4); }";

#[test]
fn streamed_output_is_written_and_unprinted_aggregations_printed_at_end() {
    let (o, out, events) = trace(PROGRAM, "cpu-clock-g.data", Printing::Stream, false, true);
    assert!(o.seen > 0);
    assert_eq!(o.seen, o.matched);
    assert!(out.starts_with("start\n"), "{out}");
    // END prints the aggregation nobody printed, with the sample count.
    assert!(out.contains(&o.seen.to_string()), "{out}");
    assert!(o.output.is_empty());
    assert_eq!(o.exit, Some(4));
    assert!(
        events.is_empty(),
        "a quiet program is not announced: {events:?}"
    );
}

#[test]
fn collected_output_goes_into_the_report_with_schema_1() {
    let (o, out, _) = trace(PROGRAM, "cpu-clock-g.data", Printing::Collect, false, true);
    assert!(out.is_empty(), "nothing written when collecting: {out}");
    assert_eq!(o.output, "start\n");
    let seen = o.seen;
    let json = serde_json::to_value(o.report(Some("f.data".into()))).unwrap();
    assert_eq!(json["schema"], 1);
    assert_eq!(json["input"], "f.data");
    assert_eq!(json["samples"]["seen"], seen);
    assert_eq!(json["aggregations"][0]["name"], "n");
    assert_eq!(json["exit"], 4);
}

#[test]
fn timed_run_agrees_with_streamed_and_reports_timing() {
    let (streamed, _, _) = trace(PROGRAM, "cpu-clock-g.data", Printing::Collect, false, true);
    let (timed, _, events) = trace(PROGRAM, "cpu-clock-g.data", Printing::Collect, true, false);
    assert_eq!(timed.seen, streamed.seen);
    assert_eq!(timed.aggregations, streamed.aggregations);
    assert!(events
        .iter()
        .any(|e| matches!(e, SessionEvent::Timing { samples, .. } if *samples == streamed.seen)));
    assert!(matches!(
        &events[0],
        SessionEvent::Bound { clauses: 3, probes: 3, input } if input.ends_with("cpu-clock-g.data")
    ));
}

#[test]
fn a_probe_without_its_event_fails_to_bind() {
    let prog = compile("pmc:::no-such-event { @n = count(); }", &Options::default()).unwrap();
    let input = ProfileInput::new(fixture("cpu-clock-g.data"), SymbolizerOptions::default());
    let mut syms = Symbolizer::new(SymbolizerOptions::default());
    let mut out = Vec::new();
    let io = SessionIo {
        syms: &mut syms,
        out: &mut out,
        printing: Printing::Stream,
        on_event: &mut |_| {},
        progress: Box::new(|_, _| {}),
    };
    let err = session::trace_file(&prog, &input, false, io).unwrap_err();
    assert!(matches!(err, session::SessionError::Bind(_)), "{err}");
    assert!(err.to_string().contains("no such event"), "{err}");
}

/// The live engine needs no recorder: fed a file's samples and a tick, it reaches the same
/// counts and aggregations as the file session, runs END at `finish`, and tells the
/// losses it is given.
#[test]
fn a_live_session_fed_by_hand_agrees_with_the_file_session() {
    let (file, _, _) = trace(PROGRAM, "cpu-clock-g.data", Printing::Collect, false, true);
    let quiet = Options {
        quiet: true,
        ..Options::default()
    };
    let prog = compile(PROGRAM, &quiet).unwrap();
    let profile = ProfileInput::new(fixture("cpu-clock-g.data"), SymbolizerOptions::default())
        .read(&ReadPlan::default())
        .unwrap();
    let mut syms = Symbolizer::new(SymbolizerOptions::default());
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut on_event = |e: SessionEvent| events.push(e);
    let io = SessionIo {
        syms: &mut syms,
        out: &mut out,
        printing: Printing::Collect,
        on_event: &mut on_event,
        progress: Box::new(|_, _| {}),
    };
    let mut live = LiveSession::new(&prog, io);
    for s in &profile.samples {
        assert_eq!(live.sample(&profile, s), Flow::Continue);
    }
    assert_eq!(live.tick(&profile, 1), Flow::Continue);
    let outcome = live.finish(&profile, 7).unwrap();
    assert_eq!(outcome.seen, file.seen);
    assert_eq!(outcome.matched, file.matched);
    assert_eq!(outcome.aggregations, file.aggregations);
    assert_eq!(outcome.output, "start\n");
    assert_eq!(outcome.exit, Some(4), "END ran at finish");
    // Quiet: not announced; told the losses only.
    assert_eq!(events, [SessionEvent::LostSamples(7)]);
}

/// A program whose `exit()` runs on the first sample asks the recorder to stop.
#[test]
fn exit_in_a_live_session_asks_to_stop_the_recording() {
    let prog = compile("pmc:::cpu-clock { exit(3); }", &Options::default()).unwrap();
    let profile = ProfileInput::new(fixture("cpu-clock-g.data"), SymbolizerOptions::default())
        .read(&ReadPlan::default())
        .unwrap();
    let mut syms = Symbolizer::new(SymbolizerOptions::default());
    let mut out = Vec::new();
    let io = SessionIo {
        syms: &mut syms,
        out: &mut out,
        printing: Printing::Stream,
        on_event: &mut |_| {},
        progress: Box::new(|_, _| {}),
    };
    let mut live = LiveSession::new(&prog, io);
    assert_eq!(live.sample(&profile, &profile.samples[0]), Flow::Stop);
    let outcome = live.finish(&profile, 0).unwrap();
    assert_eq!(outcome.seen, 1);
    assert_eq!(outcome.exit, Some(3));
}
