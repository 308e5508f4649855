//! `culprit trace`: the Solaris IBS provider's two example scripts on the IBS fixtures
//! (expected values hand-checked from ibs-vectors.json), errors with positions and hints,
//! the key limit, and live `profile:::`/`pmc:::` scripts on the workloads.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

fn example(name: &str) -> PathBuf {
    common::repo_root().join("examples/trace").join(name)
}

const IBS_FIXTURES: [&str; 4] = [
    "ibs-fam17h_m31_zen2.data",
    "ibs-fam19h_m01_zen3.data",
    "ibs-fam19h_m21_zen3.data",
    "ibs-fam19h_m11_zen4.data",
];

fn trace_json(args: &[&str]) -> Value {
    let out = common::run_ok(
        common::culprit()
            .args(["trace", "--format", "json"])
            .args(args),
    );
    json_of(&out.stdout)
}

/// The JSON document: the last line of stdout (a live command may print before it).
fn json_of(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn agg<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["aggregations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no @{name} in {doc}"))
}

/// Entries as (keys rendered with `|`, value).
fn entries(a: &Value) -> Vec<(String, i64)> {
    a["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let keys: Vec<String> = e["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| match k {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            (keys.join("|"), e["value"].as_i64().unwrap())
        })
        .collect()
}

// vectors.json, by hand: every variant has 18 op samples of `ibs-vector` (pid 4242) and 7
// fetch samples. IbsOpData3 bit 7 (DcMiss) is set in 10 op samples: CPU 0: 2, CPU 1: 2,
// CPU 2: 2, CPU 3: 4. IbsFetchCtl bit 56 (L2TlbMiss) is set in 1 fetch sample. All 10
// misses also have DcLinAddrValid, at 10 distinct (IbsDcLinAd, IbsDcPhysAd) pairs, e.g.
// (0x7ffd12345678, 0x1a2b3c5678) — sample 0, "load DC miss L2 miss DRAM".

#[test]
fn provider_example_1_dcache_misses_per_exec() {
    for f in IBS_FIXTURES {
        let file = fixture(f);
        let out = common::run_ok(common::culprit().args([
            "trace",
            "-s",
            example("dcache-misses-per-exec.d").to_str().unwrap(),
            "-i",
            file.to_str().unwrap(),
        ]));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Dcache misses per exec:", "{f}: {text}");
        // printa without a format: a blank line, then `  KEY  VALUE` sorted by value.
        assert_eq!(lines[1], "", "{f}: {text}");
        let fields: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(fields, ["ibs-vector", "10"], "{f}: {text}");
        assert_eq!(lines.len(), 3, "{f}: {text}");
        // The probe's period differs from the recording: said, not silently ignored.
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("ibs-exec-2000") && err.contains("period 32000") && err.contains("65536"),
            "{f}: {err}"
        );
        let doc = trace_json(&[
            "-s",
            example("dcache-misses-per-exec.d").to_str().unwrap(),
            "-i",
            file.to_str().unwrap(),
        ]);
        assert_eq!(
            entries(agg(&doc, "misses")),
            [("ibs-vector".to_string(), 10)]
        );
        assert_eq!(doc["samples"]["seen"], 25, "{f}");
        assert_eq!(doc["samples"]["matched"], 18, "{f}");
    }
}

#[test]
fn provider_example_2_memtest() {
    let scratch = common::scratch("trace-example-2");
    let src = std::fs::read_to_string(example("memtest-tlb-dcache.d")).unwrap();
    // The fixtures' samples are from `ibs-vector`: the same script, aimed at that command.
    let script = scratch.join("ibs-vector.d");
    std::fs::write(&script, src.replace("\"memtest\"", "\"ibs-vector\"")).unwrap();
    for f in IBS_FIXTURES {
        let file = fixture(f);
        // Unchanged, it runs and finds no memtest samples.
        let doc = trace_json(&[
            "-s",
            example("memtest-tlb-dcache.d").to_str().unwrap(),
            "-i",
            file.to_str().unwrap(),
        ]);
        for a in doc["aggregations"].as_array().unwrap() {
            assert!(a["entries"].as_array().unwrap().is_empty(), "{f}: {a}");
        }
        let doc = trace_json(&["-s", script.to_str().unwrap(), "-i", file.to_str().unwrap()]);
        assert_eq!(
            entries(agg(&doc, "l2tlb")),
            [("ibs-vector".to_string(), 1)],
            "{f}"
        );
        let per_cpu: BTreeMap<String, i64> = entries(agg(&doc, "dcmiss")).into_iter().collect();
        let want: BTreeMap<String, i64> = [
            ("ibs-vector|0", 2),
            ("ibs-vector|1", 2),
            ("ibs-vector|2", 2),
            ("ibs-vector|3", 4),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(per_cpu, want, "{f}");
        let va = entries(agg(&doc, "va"));
        assert_eq!(va.len(), 10, "{f}: {va:?}");
        assert!(va.iter().all(|(_, n)| *n == 1), "{f}: {va:?}");
        assert!(
            va.iter().any(|(k, _)| k == "0x7ffd12345678|0x1a2b3c5678"),
            "{f}: {va:?}"
        );
        // The text: the printa formats, in order.
        let out = common::run_ok(common::culprit().args([
            "trace",
            "-s",
            script.to_str().unwrap(),
            "-i",
            file.to_str().unwrap(),
        ]));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.starts_with("L2 TLB misses (instruction fetch):\n"),
            "{text}"
        );
        assert!(
            text.contains("\nDcache misses per core:\n  ibs-vector       cpu 0    2\n"),
            "{text}"
        );
        assert!(text.contains("  ibs-vector       cpu 3    4\n"), "{text}");
        assert!(
            text.contains("\nTop 10 VA that caused dcache misses:\n"),
            "{text}"
        );
        assert!(
            text.contains("  0x7ffd12345678     0x1a2b3c5678       1\n"),
            "{text}"
        );
    }
}

#[test]
fn short_aliases_and_trunc_match_the_provider_names() {
    let file = fixture("ibs-fam19h_m11_zen4.data");
    let doc = trace_json(&[
        "-i",
        file.to_str().unwrap(),
        "-e",
        "ibs:::op /args->dc_miss/ { @a[cpu] = count(); @b[args[0]->cpu_id] = sum(args[0]->IbsOpData3.bit.IbsDcMiss); @lat = max(args->dc_miss_lat); } END { trunc(@a, 1); }",
    ]);
    assert_eq!(entries(agg(&doc, "a")), [("3".to_string(), 4)]);
    let b: i64 = entries(agg(&doc, "b")).iter().map(|e| e.1).sum();
    assert_eq!(b, 10);
    // Sample 0 has DcMissLat 250; the largest in the vectors is 65535 (saturated).
    assert_eq!(entries(agg(&doc, "lat"))[0].1, 65535);
}

fn trace_err(args: &[&str]) -> String {
    let out = common::culprit().arg("trace").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn errors_point_at_the_spot_and_suggest() {
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let e = trace_err(&["-i", f, "-e", "pmc:::cpu-clock\n{\n  @ = count(;\n}"]);
    assert!(e.contains("<program>:3:13: syntax error"), "{e}");
    assert!(e.contains("\n    @ = count(;\n              ^"), "{e}");

    let e = trace_err(&[
        "-i",
        f,
        "-e",
        "ibs-exec-100 { @ = sum(args[0]->IbsOpData3.bit.IbsDcMis); }",
    ]);
    assert!(
        e.contains("unknown field") && e.contains("`IbsDcMiss`"),
        "{e}"
    );

    let e = trace_err(&["-i", f, "-e", "ibs:::opp { }"]);
    assert!(e.contains("unknown probe") && e.contains("ibs:::op"), "{e}");

    let e = trace_err(&[
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @[execname] = sum(execname); }",
    ]);
    assert!(
        e.contains("type error") && e.contains("needs an integer"),
        "{e}"
    );

    let e = trace_err(&[
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { printf(\"%d\\n\", execname); }",
    ]);
    assert!(e.contains("type error") && e.contains("%d"), "{e}");

    let e = trace_err(&["-i", f, "-e", "pmc:::cpu-clock { @[exename] = count(); }"]);
    assert!(e.contains("`execname`"), "{e}");

    let e = trace_err(&["-i", f, "-e", "pmc:::cpu-clock { system(\"rm -rf /\"); }"]);
    assert!(e.contains("not allowed"), "{e}");

    let e = trace_err(&["-i", f, "-e", "pmc:::cpu-clock { @ = cnt(); }"]);
    assert!(e.contains("`count`"), "{e}");

    // Events absent from the file: the error names the ones present.
    let e = trace_err(&["-i", f, "-e", "pmc:::cycles { @ = count(); }"]);
    assert!(
        e.contains("`pmc:::cycles`") && e.contains("cpu-clock"),
        "{e}"
    );
    let e = trace_err(&["-i", f, "-e", "ibs-exec-1000 { @ = count(); }"]);
    assert!(
        e.contains("no such event") && e.contains("cpu-clock"),
        "{e}"
    );
}

#[test]
fn key_limit_reports_what_it_dropped() {
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let all = trace_json(&[
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @[ip] = count(); @n = count(); }",
    ]);
    let total = entries(agg(&all, "n"))[0].1;
    let distinct = entries(agg(&all, "")).len();
    assert!(distinct > 3, "{distinct}");
    let doc = trace_json(&[
        "-i",
        f,
        "--max-keys",
        "2",
        "-e",
        "pmc:::cpu-clock { @[ip] = count(); }",
    ]);
    let a = agg(&doc, "");
    let kept: i64 = entries(a).iter().map(|e| e.1).sum();
    assert_eq!(entries(a).len(), 2);
    assert_eq!(kept + a["dropped_samples"].as_i64().unwrap(), total);
    assert_eq!(a["dropped_keys"].as_u64().unwrap() as usize, distinct - 2);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("key limit 2 reached"), "{notes}");
    // Text mode says it on stderr.
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f,
        "--max-keys",
        "2",
        "-e",
        "pmc:::cpu-clock { @[ip] = count(); }",
    ]));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("samples dropped"), "{err}");
}

#[test]
fn aggregation_memory_budget_reports_what_it_dropped() {
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let prog =
        "pmc:::cpu-clock { @[timestamp] = lquantize(timestamp, 0, 10000, 1); @n = count(); }";
    let all = trace_json(&["-i", f, "-e", prog]);
    let total = entries(agg(&all, "n"))[0].1;
    assert!(
        entries(agg(&all, "")).len() as i64 == total && total > 4,
        "{total}"
    );
    assert!(
        all["notes"].as_array().is_none_or(|n| n.is_empty()),
        "{all}"
    );
    // About 80 KB per key: 400K holds a few of them.
    let doc = trace_json(&["-i", f, "--agg-memory", "400K", "-e", prog]);
    let a = agg(&doc, "");
    let kept = entries(a).len() as i64;
    assert!(kept > 0 && kept < total, "{kept} of {total}");
    assert_eq!(kept + a["dropped_samples"].as_i64().unwrap(), total);
    assert_eq!(a["dropped_keys"].as_i64().unwrap(), total - kept);
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("aggregation memory budget 400K reached") && notes.contains("--agg-memory"),
        "{notes}"
    );
    // A size that is not one is refused.
    let e = trace_err(&["-i", f, "--agg-memory", "lots", "-e", prog]);
    assert!(e.contains("invalid size `lots`"), "{e}");
}

#[test]
fn pmc_script_on_a_recorded_file_matches_perf() {
    if !common::require_perf("pmc_script_on_a_recorded_file_matches_perf") {
        return;
    }
    let _lock = common::pmu_lock();
    let dir = common::scratch("trace-pmc-recorded");
    let data = dir.join("perf.data");
    let shares = common::workload("shares");
    common::run_ok(common::culprit().args([
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-c",
        "200000",
        "-o",
        data.to_str().unwrap(),
        "--",
        shares.to_str().unwrap(),
        "10",
    ]));
    let doc = trace_json(&[
        "-i",
        data.to_str().unwrap(),
        "-e",
        "pmc:::cpu-clock { @c[execname] = count(); @p[execname] = sum(period); }",
    ]);
    // perf script's own view of the same file.
    let out = common::run_ok(common::perf().args([
        "script",
        "-F",
        "comm,period",
        "-i",
        data.to_str().unwrap(),
    ]));
    let mut want_c: BTreeMap<String, i64> = BTreeMap::new();
    let mut want_p: BTreeMap<String, i64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut it = line.split_whitespace();
        let (Some(c), Some(p)) = (it.next(), it.next()) else {
            continue;
        };
        *want_c.entry(c.to_string()).or_default() += 1;
        *want_p.entry(c.to_string()).or_default() += p.parse::<i64>().unwrap();
    }
    let got_c: BTreeMap<String, i64> = entries(agg(&doc, "c")).into_iter().collect();
    let got_p: BTreeMap<String, i64> = entries(agg(&doc, "p")).into_iter().collect();
    assert_eq!(got_c, want_c);
    assert_eq!(got_p, want_p);
}

#[test]
fn live_profile_probe_sees_the_workload_shares() {
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let doc = trace_json(&[
        "-e",
        "profile:::hz-999 /execname == \"shares\"/ { @[sym] = count(); @periods = quantize(period); }",
        "--",
        shares.to_str().unwrap(),
        "20",
    ]);
    let by_sym: BTreeMap<String, i64> = entries(agg(&doc, "")).into_iter().collect();
    let heavy = *by_sym.get("heavy").unwrap_or(&0) as f64;
    let light = *by_sym.get("light").unwrap_or(&0) as f64;
    assert!(heavy + light > 100.0, "{by_sym:?}");
    let share = heavy / (heavy + light);
    assert!(
        (0.65..0.85).contains(&share),
        "heavy share {share}: {by_sym:?}"
    );
    // cpu-clock at 999 Hz: periods near 1 ms, in the [524288, 1048576) or [1048576, …)
    // quantize buckets.
    let q = agg(&doc, "periods");
    let buckets = q["entries"][0]["buckets"].as_array().unwrap();
    let top = buckets
        .iter()
        .max_by_key(|b| b["count"].as_i64().unwrap())
        .unwrap();
    let lo = top["value"].as_i64().unwrap();
    assert!(lo == 524288 || lo == 1048576, "{q}");
    // Live: no input file.
    assert!(doc["input"].is_null(), "{doc}");
}

#[test]
fn live_pmc_cpu_clock_with_period_and_exit() {
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let out = common::culprit()
        .args([
            "trace",
            "-q",
            "-e",
            "pmc:::cpu-clock-100000 { @n = count(); @m[execname] = max(period); } pmc:::cpu-clock-100000 /@n == 0/ { }",
            "--",
            shares.to_str().unwrap(),
            "5",
        ])
        .output()
        .unwrap();
    // Aggregations are not values: a type error before anything runs (nothing recorded).
    assert_eq!(out.status.code(), Some(2));
    let out = common::culprit()
        .args([
            "trace",
            "--format",
            "json",
            "-e",
            "pmc:::cpu-clock-100000 /execname == \"shares\"/ { @m = max(period); @n = count(); n++; } pmc:::cpu-clock-100000 /n == 50/ { exit(3); }",
            "--",
            shares.to_str().unwrap(),
            "10",
        ])
        .output()
        .unwrap();
    // exit(3): the exit status, and no sample after the one that called it.
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let doc = json_of(&out.stdout);
    assert_eq!(doc["exit"], 3);
    assert_eq!(entries(agg(&doc, "m"))[0].1, 100000);
    assert_eq!(entries(agg(&doc, "n"))[0].1, 50);
}

#[test]
fn live_branch_misses_per_function() {
    if !common::require_hardware_pmu("live_branch_misses_per_function") {
        return;
    }
    let _lock = common::pmu_lock();
    let branchy = common::workload("branchy");
    let doc = trace_json(&[
        "-s",
        example("branch-misses-per-function.d").to_str().unwrap(),
        "--",
        branchy.to_str().unwrap(),
    ]);
    let a = entries(agg(&doc, "misses"));
    assert!(!a.is_empty(), "{doc}");
    assert!(a.len() <= 10);
}

#[test]
fn event_names_with_terms_and_period_notes() {
    // two-events.data: perf record -e task-clock/period=100000/,page-faults/period=20/;
    // perf script counts 300 task-clock and 9 page-faults samples.
    let f = fixture("two-events.data");
    let doc = trace_json(&[
        "-i",
        f.to_str().unwrap(),
        "-e",
        "pmc:::task-clock-100000 { @[event] = count(); } pmc:::page-faults-10 { @[event] = count(); @pf = sum(period); }",
    ]);
    let got: BTreeMap<String, i64> = entries(agg(&doc, "")).into_iter().collect();
    let want: BTreeMap<String, i64> = [
        ("page-faults/period=20/".to_string(), 9),
        ("task-clock/period=100000/".to_string(), 300),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert_eq!(entries(agg(&doc, "pf"))[0].1, 9 * 20);
    // Only the page-faults probe's period differs from the recording.
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("pmc:::page-faults-10") && notes[0].contains("period 20"),
        "{notes:?}"
    );
}

/// Live mode streams: a tick's printf reaches stdout while the workload still runs. The
/// workload prints its own `sink = …` line to the same stdout when it ends, so the order of
/// the lines (no timing threshold) says whether the program's output came before the end.
#[test]
fn live_output_appears_while_the_target_runs() {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::time::Instant;
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let t0 = Instant::now();
    let mut child = common::culprit()
        .args([
            "trace",
            "-q",
            "-e",
            "profile:::hz-99 { @n = count(); } tick-200ms { t++; printf(\"tick %d\\n\", t); }",
            "--",
        ])
        .arg(&shares)
        .arg("150")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines: Vec<(f64, String)> = Vec::new();
    for l in stdout.lines() {
        lines.push((t0.elapsed().as_secs_f64(), l.unwrap()));
    }
    let status = child.wait().unwrap();
    let exited = t0.elapsed().as_secs_f64();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    eprintln!("{lines:?} exited at {exited:.3}s\n{err}");
    assert!(status.success(), "{err}");
    let end = lines
        .iter()
        .position(|(_, l)| l.starts_with("sink = "))
        .expect("the workload's own line");
    let ticks: Vec<&(f64, String)> = lines
        .iter()
        .filter(|(_, l)| l.starts_with("tick "))
        .collect();
    assert!(!ticks.is_empty(), "{lines:?}");
    assert_eq!(ticks[0].1, "tick 1");
    // The first tick line was printed before the workload ended (and so before culprit did).
    assert!(
        lines[..end].iter().any(|(_, l)| l == "tick 1"),
        "tick output held back until the end: {lines:?}"
    );
    assert!(ticks[0].0 < exited);
    // Ticks on wall time: about 5 per second of the run (the workload runs ~1.5 s or more).
    assert!(ticks.len() >= 3, "{lines:?}");
}

/// `exit()` in live mode stops the recording and terminates the launched command (which
/// would otherwise run for minutes), and END still runs.
#[test]
fn live_exit_stops_recording_and_target() {
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let t0 = std::time::Instant::now();
    let out = common::culprit()
        .args([
            "trace",
            "-q",
            "-e",
            "profile:::hz-199 { @n = count(); } tick-300ms { exit(4); } END { printf(\"end\\n\"); }",
            "--",
        ])
        .arg(&shares)
        .arg("100000")
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(text.contains("end"), "{text}");
    assert!(
        !text.contains("sink = "),
        "the workload ran to its end: {text}"
    );
    assert!(err.contains("was terminated (signal 15)"), "{err}");
    // shares 100000 runs for many minutes; stopping must not wait for it.
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
}

/// Wildcards in live probe names expand to the events known here (`*-clock`: cpu-clock,
/// task-clock); the program sees each as its own event.
#[test]
fn live_wildcard_probe_records_every_matching_event() {
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let doc = trace_json(&[
        "-e",
        "pmc:::*-clock-200000 /execname == \"shares\"/ { @[event] = count(); }",
        "--",
        shares.to_str().unwrap(),
        "40",
    ]);
    let by_event: BTreeMap<String, i64> = entries(agg(&doc, "")).into_iter().collect();
    assert!(
        by_event.get("cpu-clock").is_some_and(|&n| n > 10),
        "{by_event:?}"
    );
    assert!(
        by_event.get("task-clock").is_some_and(|&n| n > 10),
        "{by_event:?}"
    );
}

#[test]
fn offenders_aggregation_agrees_with_report_offenders() {
    // The same detector (default T1 = 100, T2 = 5 samples) over the same sample stream:
    // `@w = offenders(ip)` without keys must confirm what `report --offenders` confirms.
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let doc = trace_json(&[
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @w = offenders(ip); @k[execname] = offenders(ip, 100, 5); }",
    ]);
    let rep = common::run_ok(common::culprit().args([
        "report",
        "-i",
        f,
        "--offenders",
        "--format",
        "json",
    ]));
    let rep: Value = serde_json::from_slice(&rep.stdout).unwrap();
    let counters = |list: &Value| -> Vec<(u64, u64, u64)> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["confirmations"].as_u64().unwrap(),
                    o["count1"].as_u64().unwrap(),
                    o["count2"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let want = counters(&rep["events"][0]["offenders"]);
    assert!(!want.is_empty(), "{rep}");
    let w = &agg(&doc, "w")["entries"][0];
    assert_eq!(counters(&w["offenders"]), want, "{doc}");
    assert_eq!(
        w["value"].as_u64().unwrap(),
        want.iter().map(|x| x.0).sum::<u64>()
    );
    // One command in the file: the per-command detector sees the same stream.
    let k = &agg(&doc, "k")["entries"][0];
    assert_eq!(k["keys"][0], "shares");
    assert_eq!(counters(&k["offenders"]), want);
    // Text: the table under the key, ranked like the report.
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f,
        "-s",
        example("worst-offenders.d").to_str().unwrap(),
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("Worst offenders per command (CONF: rounds that confirmed the address):\n\n  shares\n      CONF   COUNT1   COUNT2  ADDRESS            SYMBOL\n"),
        "{text}"
    );
    let first = text.lines().nth(4).unwrap();
    let fields: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(fields[0], want[0].0.to_string(), "{text}");
}

#[test]
fn without_quiet_firings_print_dtrace_probe_lines() {
    let f = fixture("cpu-clock-g.data");
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-i",
        f.to_str().unwrap(),
        "-e",
        "BEGIN { x = 1; } pmc:::cpu-clock { @n = count(); } END { printf(\"x=%d\", x); }",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "CPU     ID                    FUNCTION:NAME\n  0      1                           :BEGIN \n  0      3                             :END x=1\n\n                93\n"
    );
    // -q: only what the program prints.
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f.to_str().unwrap(),
        "-e",
        "BEGIN { x = 1; } END { printf(\"x=%d\\n\", x); }",
    ]));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "x=1\n");
}

#[test]
fn several_aggregations_in_one_printa_and_declarations() {
    // 93 cpu-clock samples of `shares`: the table joins three aggregations on the command.
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let doc = trace_json(&[
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @n[execname] = count(); @ev[execname] = sum(period); }",
    ]);
    let n = entries(agg(&doc, "n"))[0].1;
    let ev = entries(agg(&doc, "ev"))[0].1;
    assert_eq!(n, 93);
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f,
        "-s",
        example("period-stats-per-command.d").to_str().unwrap(),
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    let want = format!(
        "{:<20} {:>10} {:>14} {:>14}\n{:<20} {:>10} {:>14} {:>14.1}\n{ev} events in all; ",
        "COMMAND",
        "SAMPLES",
        "EVENTS",
        "MEAN PERIOD",
        "shares",
        n,
        ev,
        ev as f64 / n as f64
    );
    assert!(text.starts_with(&want), "{text}\n---\n{want}");
}

/// `culprit record -o - … | culprit trace -i -`: the program runs over the stream as it
/// arrives, so its output appears before the recording ends (compared with the recorder
/// process's exit, not with a time threshold).
#[test]
fn piped_stream_is_traced_while_it_is_recorded() {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::time::Instant;
    let _lock = common::pmu_lock();
    let shares = common::workload("shares");
    let t0 = Instant::now();
    let mut rec = common::culprit()
        .args([
            "record",
            "-q",
            "-o",
            "-",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "--",
        ])
        .arg(&shares)
        .arg("200")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stream = rec.stdout.take().unwrap();
    let mut trace = common::culprit()
        .args([
            "trace",
            "-q",
            "-i",
            "-",
            "-e",
            "pmc:::cpu-clock { n++; } pmc:::cpu-clock /n % 100 == 0/ { printf(\"n %d\\n\", n); }",
        ])
        .stdin(Stdio::from(stream))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = std::thread::spawn(move || {
        let st = rec.wait().unwrap();
        (st, t0.elapsed().as_secs_f64())
    });
    let out = std::io::BufReader::new(trace.stdout.take().unwrap());
    let lines: Vec<(f64, String)> = out
        .lines()
        .map(|l| (t0.elapsed().as_secs_f64(), l.unwrap()))
        .collect();
    assert!(trace.wait().unwrap().success());
    let (st, rec_end) = waiter.join().unwrap();
    assert!(st.success());
    eprintln!("{lines:?}; the recorder ended at {rec_end:.3}s");
    assert!(lines.len() >= 2, "{lines:?}");
    assert_eq!(lines[0].1, "n 100");
    assert!(
        lines[0].0 < rec_end,
        "the first line came after the recording ended: {lines:?} vs {rec_end:.3}s"
    );
}

/// `exit(N)` outside 0..255 exits 255 with a warning: never 0 (success) for exit(-1) or
/// exit(256), as a plain truncation or clamp to the byte would give.
#[test]
fn exit_status_outside_a_byte_is_255_with_a_warning() {
    let file = fixture("cpu-clock-g.data");
    for (v, status, warned) in [
        (-1, 255, true),
        (256, 255, true),
        (255, 255, false),
        (0, 0, false),
    ] {
        let out = common::culprit()
            .args([
                "trace",
                "-q",
                "-e",
                &format!("BEGIN {{ exit({v}); }}"),
                "-i",
            ])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "exit({v}): {err}");
        assert_eq!(err.contains("outside 0..255"), warned, "exit({v}): {err}");
    }
}

/// `offenders(ip)` names addresses as `report --offenders` and `report --sort ip` do: the
/// address the ELF file states (objdump's, nm's) and the DSO, not the run-time address of a
/// PIE program.
#[test]
fn offenders_print_elf_addresses_like_report_offenders() {
    let bin = common::workload("shares");
    let dir = common::scratch("trace-offenders-elf");
    let data = dir.join("perf.data");
    {
        let _lock = common::pmu_lock();
        common::run_ok(
            common::culprit()
                .args(["record", "-e", "cpu-clock", "-F", "2000", "-o"])
                .arg(&data)
                .arg("--")
                .arg(&bin)
                .arg("60"),
        );
    }
    let f = data.to_str().unwrap();
    let out = common::run_ok(common::culprit().args([
        "trace",
        "--format",
        "json",
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @w = offenders(ip, 40, 4); }",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    common::validate_json_schema("trace", &text);
    let doc = json_of(text.as_bytes());
    let rep = common::run_ok(common::culprit().args([
        "report",
        "--offenders",
        "--t1",
        "40",
        "--t2",
        "4",
        "--format",
        "json",
        "-i",
        f,
    ]));
    let rep_text = String::from_utf8(rep.stdout).unwrap();
    common::validate_json_schema("report-offenders", &rep_text);
    let rep: Value = serde_json::from_str(&rep_text).unwrap();
    let want: Vec<(String, String)> = rep["events"][0]["offenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["ip"].as_str().unwrap().to_string(),
                o["dso"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let got: Vec<(String, String)> = agg(&doc, "w")["entries"][0]["offenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["address"].as_str().unwrap().to_string(),
                o["dso"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(!want.is_empty(), "{rep}");
    assert_eq!(got, want, "trace and report --offenders agree");
    // nm: the hottest offender of shares is inside heavy() or light() as the ELF file states
    // them.
    let nm = std::process::Command::new("nm")
        .arg("-S")
        .arg(&bin)
        .output()
        .expect("run nm");
    let syms = String::from_utf8_lossy(&nm.stdout);
    let range = |name: &str| -> (u64, u64) {
        let l = syms
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(name))
            .unwrap_or_else(|| panic!("nm has no {name}: {syms}"));
        let f: Vec<&str> = l.split_whitespace().collect();
        let start = u64::from_str_radix(f[0], 16).unwrap();
        (start, start + u64::from_str_radix(f[1], 16).unwrap())
    };
    let (hs, he) = range("heavy");
    let (ls, le) = range("light");
    let (addr, dso) = &got[0];
    let a = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
    assert_eq!(dso, "shares");
    assert!(
        (hs..he).contains(&a) || (ls..le).contains(&a),
        "{addr} is in neither heavy [{hs:#x}, {he:#x}) nor light [{ls:#x}, {le:#x})"
    );
    // The text table shows the same address.
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f,
        "-e",
        "pmc:::cpu-clock { @w = offenders(ip, 40, 4); }",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!(" {addr} ")), "{addr} in\n{text}");
}

/// Flags that do not apply are refused, not ignored.
#[test]
fn inapplicable_flags_are_refused() {
    let f = fixture("cpu-clock-g.data");
    let f = f.to_str().unwrap();
    let prog = "pmc:::cpu-clock { @ = count(); }";
    let cases: &[(&[&str], &str)] = &[
        (
            &["-i", f, "-e", prog, "--", "true"],
            "-i runs the program over a recording",
        ),
        (
            &["-i", f, "-e", prog, "-a"],
            "-i runs the program over a recording",
        ),
        (
            &["-i", f, "-e", prog, "-m", "64"],
            "-m sizes the live recording",
        ),
        (
            &["-e", prog, "--stats", "--", "true"],
            "--stats times the evaluation",
        ),
        (
            &["-i", f, "-e", prog, "--format", "csv"],
            "trace has no --format csv",
        ),
    ];
    for (args, want) in cases {
        let out = common::culprit().arg("trace").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// ARM SPE (docs/spe.md): the samples perf synthesises from SPE are `pmc:::EVENT` probes whose
/// predicates read perf's fields (addr, latency) and the SPE record's (event bits, issue and
/// translation latency, op class). On the crafted file: one load missing L1D (PC 0x400123,
/// VA 0x7fff12345678, total 120, issue 5, translation 9 cycles), one remote store.
#[test]
fn spe_fields_in_predicates() {
    let f = fixture("spe/spe-crafted.data");
    let f = f.to_str().unwrap();
    let out = common::run_ok(common::culprit().args([
        "trace",
        "-q",
        "-i",
        f,
        "-e",
        "pmc:::memory /args[0]->l1d_miss == 1 && args[0]->latency > 100/ \
         { printf(\"%x %d %d %d\\n\", args[0]->addr, args[0]->latency, args[0]->issue_lat, \
         args[0]->translation_lat); }",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines, ["7fff12345678 120 5 9"], "{text}");
    let doc = trace_json(&[
        "-i",
        f,
        "-e",
        "pmc:::memory /args[0]->remote_access == 1 && args[0]->op_class == 1/ \
         { @[args[0]->tlb_miss] = count(); }",
    ]);
    // One remote store, without a TLB walk.
    let entries = &doc["aggregations"][0]["entries"];
    assert_eq!(
        entries,
        &serde_json::json!([{"keys": [0], "value": 1}]),
        "{doc}"
    );
}
