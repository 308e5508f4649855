//! Tests of the Firefox Profiler export (`super`).

use super::*;
use crate::testutil;
use serde_json::Value;

fn json(profile: &StackProfile) -> Value {
    let mut bytes = Vec::new();
    write(profile, &mut bytes).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// (thread name, tid) → (samples, summed weight, function names of the thread).
fn tracks(v: &Value) -> Vec<(String, String, u64, u64, Vec<String>)> {
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let samples = &t["samples"];
            let weights: u64 = samples["weight"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum();
            let strings = t["stringArray"].as_array().unwrap();
            let names = t["funcTable"]["name"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    strings[i.as_u64().unwrap() as usize]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect();
            (
                t["name"].as_str().unwrap().to_string(),
                t["tid"].as_str().unwrap().to_string(),
                samples["length"].as_u64().unwrap(),
                weights,
                names,
            )
        })
        .collect()
}

#[test]
fn test_write_tracks_per_thread_and_event_with_period_weights() {
    let model = testutil::profile();
    let v = json(&model);
    assert_eq!(v["meta"]["symbolicated"], true);
    let mut got = tracks(&v);
    got.sort();
    let summary: Vec<(&str, &str, u64, u64)> = got
        .iter()
        .map(|t| (t.0.as_str(), t.1.as_str(), t.2, t.3))
        .collect();
    assert_eq!(
        summary,
        [
            ("other <b>", "200", 2, 2_000_000),
            ("prog", "100", 7, 7_000_000),
            ("prog", "101", 1, 1_000_000),
            ("prog page-faults", "100.1", 3, 3),
            ("prog page-faults", "101.1", 1, 4),
        ]
    );
    let prog_101 = &got.iter().find(|t| t.1 == "101").unwrap().4;
    assert_eq!(prog_101, &["main", "work", "helper", "do_syscall"]);
    let other = &got.iter().find(|t| t.1 == "200").unwrap().4;
    assert_eq!(other, &["[libc.so.6]"]);
    let counters = v["counters"].as_array().unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0]["name"], "page-faults");
    let counted: f64 = counters[0]["samples"]["count"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .sum();
    assert_eq!(counted, 7.0);
}

#[test]
fn test_write_splits_weights_past_i32() {
    let mut model = testutil::profile();
    model.timeline.truncate(1);
    let big = 5_000_000_000u64;
    model.timeline[0].period = big;
    let got = tracks(&json(&model));
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].2, got[0].3), (3, big));
}

#[test]
fn test_write_bounds_a_huge_period() {
    let mut model = testutil::profile();
    model.timeline.truncate(2);
    model.timeline[0].period = i64::MAX as u64;
    let small = model.timeline[1].period;
    let started = std::time::Instant::now();
    let mut out = Vec::new();
    let samples = write(&model, &mut out).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(samples <= 2 * MAX_PIECES, "{samples} samples");
    assert!(out.len() < 1 << 20, "{} bytes", out.len());
    // One factor for every weight: the huge sample keeps (nearly) all the share, the
    // small one at least 1.
    let scale = weight_scale(i64::MAX as u64);
    assert!(scale > 1);
    let got = tracks(&json(&model));
    let total: u64 = got.iter().map(|t| t.3).sum();
    let expected = (i64::MAX as u64).div_ceil(scale) + (small / scale).max(1);
    assert!(total.abs_diff(expected) <= 2, "{total} vs {expected}");
}

/// A thread track, (name, tid), and its samples: (time in ms, leaf function, weight).
type TrackRows = ((String, String), Vec<(f64, String, u64)>);

/// Per thread track: each sample's (time in ms, leaf function, weight), read
/// back through the track's stack, frame, func and string tables.
fn samples_of(v: &Value) -> Vec<TrackRows> {
    let col = |t: &Value, table: &str, c: &str| -> Vec<Value> {
        t[table][c].as_array().cloned().unwrap_or_default()
    };
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let strings = t["stringArray"].as_array().unwrap().clone();
            let (frames, funcs, names) = (
                col(t, "stackTable", "frame"),
                col(t, "frameTable", "func"),
                col(t, "funcTable", "name"),
            );
            let at = |c: &[Value], i: &Value| c[i.as_u64().unwrap() as usize].clone();
            let mut time = 0.0;
            let rows = col(t, "samples", "stack")
                .iter()
                .zip(col(t, "samples", "timeDeltas"))
                .zip(col(t, "samples", "weight"))
                .map(|((stack, delta), weight)| {
                    time += delta.as_f64().unwrap();
                    let leaf = at(&strings, &at(&names, &at(&funcs, &at(&frames, stack))));
                    (
                        time,
                        leaf.as_str().unwrap().to_string(),
                        weight.as_u64().unwrap(),
                    )
                })
                .collect();
            let key = (
                t["name"].as_str().unwrap().to_string(),
                t["tid"].as_str().unwrap().to_string(),
            );
            (key, rows)
        })
        .collect()
}

/// The leaf frame's name of a model stack (inlined frames: the innermost), as written.
fn leaf_name(model: &StackProfile, stack: u32) -> String {
    let (frame, _) = *model.stack_frames(stack).last().unwrap();
    frame_name(model, frame.function).to_string()
}

#[test]
fn test_spilled_samples_come_back_per_track_in_time_order_with_their_stacks() {
    // Many samples (several chunks per track), and one thread's out of time order.
    let mut model = testutil::profile();
    let base = model.timeline.clone();
    for k in 1..300u64 {
        for s in &base {
            let mut s = *s;
            s.time += k * 100_000_000;
            model.timeline.push(s);
        }
    }
    let last = model.timeline.len() - 1;
    let early = model
        .timeline
        .iter()
        .position(|s| s.thread == 0 && s.event == 0)
        .unwrap();
    model.timeline.swap(early, last - 20);
    let v = json(&model);
    let start = model.timeline.iter().map(|s| s.time).min().unwrap();
    for ((name, tid), rows) in samples_of(&v) {
        let thread = model
            .threads
            .iter()
            .position(|t| t.tid.to_string() == tid.split('.').next().unwrap())
            .unwrap() as u32;
        let event = u32::from(name.contains("page-faults"));
        let mut want: Vec<(f64, String, u64)> = model
            .timeline
            .iter()
            .filter(|s| s.thread == thread && s.event == event)
            .map(|s| {
                (
                    (s.time - start) as f64 / 1e6,
                    leaf_name(&model, s.stack),
                    s.period,
                )
            })
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(rows.len(), want.len(), "{name} {tid}");
        for (got, want) in rows.iter().zip(&want) {
            assert!(
                (got.0 - want.0).abs() < 1e-6,
                "{name} {tid}: {got:?} vs {want:?}"
            );
            assert_eq!((&got.1, got.2), (&want.1, want.2), "{name} {tid}");
        }
    }
    // The page-faults counter: every sample of the event, in time order.
    let counter = &v["counters"][0]["samples"];
    let deltas = counter["timeDeltas"].as_array().unwrap();
    assert_eq!(
        deltas.len(),
        model.timeline.iter().filter(|s| s.event == 1).count()
    );
    assert!(deltas.iter().skip(1).all(|d| d.as_f64().unwrap() >= 0.0));
    assert_eq!(counter["length"].as_u64().unwrap() as usize, deltas.len());
}

#[test]
fn test_splicer_replaces_placeholders_split_across_any_writes() {
    let track = |k: i32| {
        format!(
            "{TRACK_PLACEHOLDER}{}],\"threadCPUDelta\":[0]}}",
            TAG_BASE + k
        )
    };
    let counter = |k: i32| {
        format!(
            "{COUNTER_PLACEHOLDER}{}.0],\"number\":[1],\"timeDeltas\":[0.0]}}",
            TAG_BASE + k
        )
    };
    let text = format!(
        "{{\"threads\":[{{\"a\":1,{}}},{{{},\"b\":\"samples\"}}],\"counters\":[{{{}}}],\"x\":{}}}",
        track(0),
        track(1),
        counter(0),
        "7".repeat(300)
    );
    let want = text
        .replace(&track(0)["\"samples\":".len()..], "T0")
        .replace(&track(1)["\"samples\":".len()..], "T1")
        .replace(&counter(0)["\"samples\":".len()..], "C0");
    for chunk in [1, 2, 3, 7, 64, 150, 170, 200, 250, 333, 1000] {
        for threshold in [1, 50, 1 << 16] {
            let mut out = Vec::new();
            let mut splice = Splicer {
                out: &mut out,
                pending: Vec::new(),
                threshold,
                replace: |out: &mut dyn Write, p: Placeholder| match p {
                    Placeholder::Track(k) => write!(out, "T{k}"),
                    Placeholder::Counter(k) => write!(out, "C{k}"),
                },
            };
            for part in text.as_bytes().chunks(chunk) {
                splice.write_all(part).unwrap();
            }
            splice.finish().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{chunk} {threshold}");
        }
    }
}

#[test]
fn test_write_without_timeline_is_refused() {
    let mut model = testutil::profile();
    model.timeline.clear();
    let err = write(&model, Vec::new()).unwrap_err();
    assert!(matches!(err, ExportError::Unsupported(_)), "{err}");
}
