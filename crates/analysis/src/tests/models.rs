//! `diff` and `annotate` on hand-built profiles (symbols from the tests' JIT map: f1 at
//! 0x1000, f2 at 0x2000, main at 0x3000).

use super::*;
use crate::annotate::{annotate, AnnotateOptions, Target};
use crate::diff::{diff, DiffSide, KeyValueJson, Status};
use crate::recording::RecordingMeta;

/// A profile of `cpu-clock` samples of period 100 at each address of `ips`.
fn flat_profile(ips: &[u64]) -> Profile {
    let mut b = Builder::new(&["cpu-clock"]);
    for &ip in ips {
        b.sample(0, 0, 100, &[ip]);
    }
    b.p
}

/// The text of key `name` of a diff row.
fn key_text(keys: &crate::diff::Keys, name: &str) -> String {
    match keys.0.iter().find(|(k, _)| *k == name).map(|(_, v)| v) {
        Some(KeyValueJson::Text(t)) => t.clone(),
        Some(KeyValueJson::Number(n)) => n.to_string(),
        None => panic!("no key {name}"),
    }
}

#[test]
fn test_diff_matches_rows_by_key_with_status_delta_and_ratio() {
    // Baseline: f1 75 %, f2 25 %. Other: f2 50 %, main 50 % (f1 gone, main new).
    let a = flat_profile(&[0x1010, 0x1010, 0x1020, 0x2010]);
    let b = flat_profile(&[0x2010, 0x2020, 0x3010, 0x3010]);
    let opts = HotspotOptions {
        keys: vec![SortKey::Sym],
        ..HotspotOptions::default()
    };
    let (ha, hb) = (run(&a, "diff-a", &opts), run(&b, "diff-b", &opts));
    let (ma, mb) = (RecordingMeta::of(&a), RecordingMeta::of(&b));
    let kinds = [(1, 0)];
    let side = |file, hotspots, meta| DiffSide {
        file,
        hotspots,
        meta,
        period_is_ns: &[true],
        event_kinds: &kinds,
        stopped: None,
    };
    let d = diff(
        side("a.data", &ha, &ma),
        side("b.data", &hb, &mb),
        Vec::new(),
    );
    assert_eq!(d.events.len(), 1);
    let ev = &d.events[0];
    assert_eq!((ev.baseline.period, ev.other.period), (400, 400));
    let rows: Vec<(String, Status, f64, Option<f64>)> = ev
        .rows
        .iter()
        .map(|r| (key_text(&r.keys, "sym"), r.status, r.delta.0, r.ratio))
        .collect();
    // Biggest absolute delta first.
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["f1", "main", "f2"], "{rows:?}");
    assert_eq!(rows[0].1, Status::Vanished);
    assert!((rows[0].2 + 75.0).abs() < 1e-9, "{rows:?}");
    assert_eq!(rows[1].1, Status::New);
    assert!(
        (rows[1].2 - 50.0).abs() < 1e-9 && rows[1].3.is_none(),
        "{rows:?}"
    );
    assert_eq!(rows[2].1, Status::Both);
    assert!((rows[2].2 - 25.0).abs() < 1e-9, "{rows:?}");
    assert_eq!(rows[2].3, Some(2.0));
    // A new row has no baseline values, a vanished one no other values.
    assert!(ev.rows[1].baseline.is_none() && ev.rows[0].other.is_none());
}

#[test]
fn test_diff_matches_events_by_kind_and_lists_the_others() {
    let a = flat_profile(&[0x1010]);
    let mut b = flat_profile(&[0x1010]);
    // The other file's event has another name but the same kind: one event.
    b.events[0].name = "cpu-clock:u".into();
    let opts = HotspotOptions::default();
    let (ha, hb) = (run(&a, "kind-a", &opts), run(&b, "kind-b", &opts));
    let (ma, mb) = (RecordingMeta::of(&a), RecordingMeta::of(&b));
    let same = [(1, 0)];
    let other = [(1, 9)];
    let side = |file, hotspots, meta, kinds| DiffSide {
        file,
        hotspots,
        meta,
        period_is_ns: &[true],
        event_kinds: kinds,
        stopped: None,
    };
    let d = diff(
        side("a", &ha, &ma, &same),
        side("b", &hb, &mb, &same),
        Vec::new(),
    );
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].other_name.as_deref(), Some("cpu-clock:u"));
    // Another kind: not compared, listed on each side.
    let d = diff(
        side("a", &ha, &ma, &same),
        side("b", &hb, &mb, &other),
        Vec::new(),
    );
    assert!(d.events.is_empty());
    assert_eq!(d.only_in_baseline, ["cpu-clock"]);
    assert_eq!(d.only_in_other, ["cpu-clock:u"]);
}

#[test]
fn test_annotate_targets_and_rows_without_code() {
    // f1: 3 samples at 0x1010, 1 at 0x1020; f2: 1 at 0x2010. JIT code has no bytes here:
    // one row per sampled address.
    let p = flat_profile(&[0x1010, 0x1010, 0x1020, 0x1010, 0x2010]);
    let annotated = |tag: &str, target: Target| {
        let mut sym = symbolizer(tag);
        let opts = AnnotateOptions {
            target,
            ..AnnotateOptions::default()
        };
        annotate(&p, &mut sym, &opts).unwrap()
    };
    let hottest = annotated("ann-hot", Target::Hottest(1));
    assert_eq!(hottest.functions.len(), 1);
    let f1 = &hottest.functions[0];
    assert_eq!(
        (f1.symbol.as_str(), f1.start, f1.end),
        ("f1", 0x1000, 0x1100)
    );
    assert!(!f1.disassembled);
    let rows: Vec<(u64, u64)> = f1
        .insns
        .iter()
        .map(|r| (r.insn.addr, r.samples[0]))
        .collect();
    assert_eq!(rows, [(0x1010, 3), (0x1020, 1)]);
    assert!(f1
        .insns
        .iter()
        .all(|r| r.insn.text == "(code not available)"));
    assert_eq!((f1.events[0].samples, f1.events[0].period), (4, 400));

    let by_addr = annotated("ann-addr", Target::Addr(0x2050));
    assert_eq!(by_addr.functions.len(), 1);
    assert_eq!(by_addr.functions[0].symbol, "f2");
    // A name with no samples: no function, the hottest ones as candidates.
    let missing = annotated("ann-none", Target::Symbol("nope".into()));
    assert!(missing.functions.is_empty());
    assert_eq!(
        missing.candidates,
        [("f1".to_string(), 4), ("f2".to_string(), 1)]
    );
}
