//! `culprit report --offenders`: the paired-sampling detector over recorded files, compared
//! with the exact per-address histogram of the same samples (`--exact`).
//!
//! cpu-clock tests run everywhere; the cache-fill done-criterion (top exact offender reported
//! within the first 10% of the run) needs a hardware PMU and is gated.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Records `argv` with `event` into DIR/perf.data (holding the PMU lock).
fn record(dir: &Path, event: &str, extra: &[&str], argv: &[String]) -> Option<PathBuf> {
    let data = dir.join("perf.data");
    let _lock = common::pmu_lock();
    let mut cmd = common::culprit();
    cmd.args(["record", "-e", event, "-o"])
        .arg(&data)
        .args(extra)
        .arg("--")
        .args(argv);
    let out = cmd.output().expect("spawn culprit record");
    if !out.status.success() {
        eprintln!(
            "record -e {event} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(data)
}

fn offenders_json(data: &Path, extra: &[&str]) -> Value {
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--offenders", "--exact", "--format", "json", "-i"])
            .arg(data)
            .args(extra),
    );
    serde_json::from_slice(&out.stdout).expect("offenders JSON")
}

fn event<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no event {name} in {v:#}"))
}

fn pointer_chase_argv() -> Vec<String> {
    // A 16 MiB ring walked 30M times: the chase dominates the run (the set-up shuffle is a
    // small share of it).
    vec![
        common::workload("pointer_chase").display().to_string(),
        "16".into(),
        "30000000".into(),
    ]
}

#[test]
fn cpu_clock_pointer_chase_top_offender_is_the_exact_top_address_in_chase() {
    let dir = common::scratch("offenders-chase");
    let data = record(&dir, "cpu-clock", &["-F", "2000"], &pointer_chase_argv())
        .expect("cpu-clock recording works without a PMU");
    let v = offenders_json(&data, &[]);
    let e = event(&v, "cpu-clock");
    eprintln!("{e:#}");
    let offs = e["offenders"].as_array().unwrap();
    assert!(!offs.is_empty(), "an offender is confirmed");
    let exact_top = &e["exact"]["top"][0];
    // The exact top address is in chase() and is what the detector ranks first.
    assert_eq!(exact_top["symbol"], "chase", "{exact_top}");
    assert_eq!(exact_top["dso"], "pointer_chase");
    assert_eq!(offs[0]["ip"], exact_top["ip"], "ranked first = exact top-1");
    assert_eq!(offs[0]["dso"], "pointer_chase");
    assert!(offs[0]["ip"].as_str().unwrap().starts_with("0x"));
    assert_eq!(e["exact"]["recall_top1"], 1.0);
    // Found early: within the first quarter of the chase's samples (typically under 10%;
    // 0.116 was seen on a loaded CI machine, so the bound leaves room for the randomness of
    // which samples arrive first).
    let first = e["exact"]["top1_first_observation_fraction"]
        .as_f64()
        .unwrap();
    assert!(
        first <= 0.25,
        "top-1 first confirmed at {first} of the samples"
    );
    // Every reported offender is significant by the detector's own definition (share of
    // at least T2/T1) or at least in the exact top 5.
    assert!(
        e["exact"]["precision_top5"].as_f64().unwrap() >= 0.5,
        "{e:#}"
    );
}

#[test]
fn detector_memory_is_constant_while_the_histogram_grows() {
    // Two files with very different numbers of distinct sampled addresses: shares (a few
    // loops) and the C compiler optimizing 500 functions (thousands of addresses in cc1).
    let dir = common::scratch("offenders-memory");
    let small = record(
        &dir,
        "cpu-clock",
        &["-F", "2000"],
        &[
            common::workload("shares").display().to_string(),
            "20".into(),
        ],
    )
    .unwrap();
    let v_small = offenders_json(&small, &[]);
    let dir2 = common::scratch("offenders-memory-2");
    let mut src = String::from("#include <stdint.h>\n");
    for i in 0..500 {
        src.push_str(&format!(
            "uint64_t f{i}(uint64_t x) {{ for (int k = 0; k < {}; k++) x = x * {} + (x >> {}); return x ^ {i}; }}\n",
            i % 7 + 2,
            i + 3,
            i % 13 + 1
        ));
    }
    let c = dir2.join("big.c");
    std::fs::write(&c, src).unwrap();
    let big = record(
        &dir2,
        "cpu-clock",
        &["-F", "4000"],
        &[
            "cc".into(),
            "-O2".into(),
            "-c".into(),
            c.display().to_string(),
            "-o".into(),
            dir2.join("big.o").display().to_string(),
        ],
    )
    .unwrap();
    let v_big = offenders_json(&big, &[]);
    let s = event(&v_small, "cpu-clock");
    let b = event(&v_big, "cpu-clock");
    let (ds, db) = (
        s["detector_bytes"].as_u64().unwrap(),
        b["detector_bytes"].as_u64().unwrap(),
    );
    let (hs, hb) = (
        s["exact"]["histogram_bytes"].as_u64().unwrap(),
        b["exact"]["histogram_bytes"].as_u64().unwrap(),
    );
    let (ns, nb) = (
        s["exact"]["distinct_addresses"].as_u64().unwrap(),
        b["exact"]["distinct_addresses"].as_u64().unwrap(),
    );
    eprintln!("shares: {ns} addresses, histogram {hs} B, detector {ds} B; cc: {nb} addresses, histogram {hb} B, detector {db} B");
    assert_eq!(ds, db, "detector memory does not depend on the input");
    assert!(
        nb > 10 * ns,
        "python spreads samples over many more addresses"
    );
    assert!(hb > hs, "the full histogram grows with distinct addresses");
    assert!(
        db < hb,
        "the detector is smaller than the histogram it replaces"
    );
}

#[test]
fn text_output_and_threshold_errors() {
    let dir = common::scratch("offenders-text");
    let data = record(
        &dir,
        "cpu-clock",
        &["-F", "2000"],
        &[
            common::workload("shares").display().to_string(),
            "120".into(),
        ],
    )
    .unwrap();
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--offenders", "--t1", "40", "--t2", "4", "-i"])
            .arg(&data),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(text.contains("# Event 'cpu-clock'"), "{text}");
    assert!(text.contains("T1=40 T2=4 (samples)"), "{text}");
    // heavy() takes 75% of the time, spread over its ~7-instruction loop (~10-20% each): a
    // candidate there reaches T2=4 of T1=40 most rounds, and ~40 rounds make a miss unlikely.
    assert!(
        text.lines()
            .any(|l| !l.starts_with('#') && l.contains("shares") && l.contains("heavy")),
        "{text}"
    );
    // In events, the default thresholds scale by the event's median period (cpu-clock at
    // 2000 Hz: 500000 ns per sample), so the same offenders come out.
    let ev = offenders_json(&data, &["--offenders-unit", "events"]);
    let e = event(&ev, "cpu-clock");
    assert_eq!(e["unit"], "events");
    assert_eq!(e["t1"], 100 * 500_000, "{e:#}");
    assert_eq!(e["t2"], 5 * 500_000);
    // heavy() owns 75% of the candidates and its instructions reach T2 far more often. The
    // workload runs in phases (~10 samples of heavy, then ~3 of light), and a round starts
    // right after a confirmation, so a light() candidate tends to be followed by another: with
    // the default T1=100 the ~20 rounds of a 60-unit run put heavy <= light about once in 12 runs
    // (measured, 60 units). With 120 units and T1=40/T2=4 there are ~75 rounds; the smallest
    // margin over 10 recordings was 36 to 21. Round boundaries differ between the units (periods jitter), so
    // the loop instructions trade places: compare the functions' confirmations, not one row.
    let ev = offenders_json(
        &data,
        &[
            "--offenders-unit",
            "events",
            "--t1",
            "20000000",
            "--t2",
            "2000000",
        ],
    );
    let sa = offenders_json(&data, &["--t1", "40", "--t2", "4"]);
    for v in [event(&ev, "cpu-clock"), event(&sa, "cpu-clock")] {
        let by = |f: &str| -> u64 {
            v["offenders"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["symbol"] == f)
                .map(|o| o["confirmations"].as_u64().unwrap())
                .sum()
        };
        assert!(by("heavy") > by("light"), "{v:#}");
    }
    let bad = common::culprit()
        .args(["report", "--offenders", "--t1", "5", "--t2", "6", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must not exceed --t1"));
    let unknown = common::culprit()
        .args(["report", "--offenders", "-e", "nope", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}

/// The done-criterion: on pointer chase and matrix multiply, the top exact offender
/// of a cache-fill event is reported within the first 10% of the run.
#[test]
fn cache_fill_top_offender_within_first_tenth_of_the_run() {
    if !common::require_hardware_pmu("cache_fill_top_offender_within_first_tenth_of_the_run") {
        return;
    }
    let amd = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .contains("AuthenticAMD");
    // AMD expresses L1D misses as fills: ls_dmnd_fills_from_sys (0x43), umask 0xFF = demand
    // fills from any source (L2 for the matrix multiply, DRAM for the chase); then the DRAM
    // fills alone, then the generic cache-misses event (elsewhere only that one).
    let events: &[&str] = if amd {
        &[
            "rff43",
            "ls_dmnd_fills_from_sys.dram_io_near",
            "cache-misses",
        ]
    } else {
        &["cache-misses"]
    };
    let matmul = vec![
        common::workload("simple_classic").display().to_string(),
        "600".into(),
    ];
    for (name, argv) in [("chase", pointer_chase_argv()), ("matmul", matmul)] {
        let dir = common::scratch(&format!("offenders-fill-{name}"));
        let mut done = false;
        for ev in events {
            // One sample per 10000 fills stays under perf_event_max_sample_rate (12500 Hz on
            // the CI VMs) on a 30M-step chase.
            let Some(data) = record(&dir, ev, &["-c", "10000"], &argv) else {
                continue;
            };
            let v = offenders_json(&data, &[]);
            let e = &v["events"][0];
            eprintln!("{name} {ev}: {e:#}");
            assert_eq!(e["exact"]["recall_top1"], 1.0, "{name}: top-1 reported");
            let t = e["exact"]["top1_first_time_fraction"].as_f64().unwrap();
            assert!(
                t <= 0.10,
                "{name} {ev}: top-1 first confirmed at {t} of the run"
            );
            done = true;
            break;
        }
        assert!(done, "{name}: no cache-fill event could be recorded");
    }
}

/// The JSON validates against docs/schemas/report-offenders.schema.json, with and without
/// `--exact`; flags of the hotspot report that do not apply are refused.
#[test]
fn json_schema_and_inapplicable_flags() {
    let f = common::repo_root().join("crates/decode/tests/fixtures/cpu-clock-g.data");
    for extra in [&["--exact"][..], &[][..]] {
        let out = common::run_ok(
            common::culprit()
                .args(["report", "--offenders", "--format", "json", "-i"])
                .arg(&f)
                .args(extra),
        );
        let text = String::from_utf8(out.stdout).unwrap();
        common::validate_json_schema("report-offenders", &text);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], 1);
        assert_eq!(v["events"][0].get("exact").is_some(), !extra.is_empty());
    }
    let cases: &[(&[&str], &str)] = &[
        (
            &["--format", "csv"],
            "report --offenders has no --format csv",
        ),
        (&["-s", "sym"], "--sort does not apply to --offenders"),
        (&["--comm", "x", "--top", "3"], "--top, --comm do not apply"),
        (&["-g", "caller"], "--call-graph does not apply"),
    ];
    for (args, want) in cases {
        let out = common::culprit()
            .args(["report", "--offenders", "-i"])
            .arg(&f)
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
