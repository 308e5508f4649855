//! `culprit export --format pprof|firefox|speedscope|chrome`, each read back by a reader its
//! users have and compared with `culprit report` on the same recording:
//! - pprof: Go's `go tool pprof -top` (Debian golang-go; `.ci/run` installs it);
//! - firefox: the processed profile read back as JSON (threads, samples, weights, names);
//! - speedscope: speedscope's published JSON schema (python3 jsonschema) and the weights;
//! - chrome: the trace events read back (slices nest, per-thread samples and periods).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{culprit, repo_root, run_ok, scratch};
use serde_json::Value;

/// The recording every test reads: `workloads/shares` (heavy ≈ 75%, light ≈ 25%) with
/// cpu-clock call chains and page faults as a second event. None without perf.
fn recording(test: &str) -> Option<&'static Path> {
    if !common::require_perf(test) {
        return None;
    }
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let shares = common::workload("shares");
        let _lock = common::pmu_lock();
        common::perf_record(
            "export-formats",
            &[
                "-e",
                "cpu-clock",
                "-F",
                "2000",
                "-e",
                "page-faults/period=1/",
                "-g",
            ],
            &[shares.to_str().unwrap(), "10"],
        )
    });
    Some(file.as_path())
}

/// Runs `culprit export -i FILE --format FORMAT -o OUT` and returns OUT.
fn export(file: &Path, format: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("export.{format}"));
    run_ok(
        culprit()
            .args(["export", "-i"])
            .arg(file)
            .args(["--format", format, "-o"])
            .arg(&out),
    );
    assert!(out.metadata().unwrap().len() > 0, "{format}: empty file");
    out
}

/// `culprit report --format json` with `args`.
fn report(file: &Path, args: &[&str]) -> Value {
    let out = run_ok(
        culprit()
            .args(["report", "-i"])
            .arg(file)
            .args(["--format", "json", "--no-children"])
            .args(args),
    );
    serde_json::from_slice(&out.stdout).expect("culprit report --format json")
}

/// Per event: (samples, period) from a report.
fn event_totals(report: &Value) -> BTreeMap<String, (u64, u64)> {
    common::culprit_event_totals(report)
}

/// Per (tid, event): (samples, period) from `report --sort tid`.
fn tid_totals(report: &Value) -> BTreeMap<(i64, String), (u64, u64)> {
    let mut out = BTreeMap::new();
    for row in report["rows"].as_array().unwrap() {
        let tid = row["keys"]["tid"].as_i64().unwrap();
        for (event, samples) in row["samples"].as_object().unwrap() {
            let samples = samples.as_u64().unwrap();
            let period = row["period"][event].as_u64().unwrap();
            if samples > 0 {
                let t: &mut (u64, u64) = out.entry((tid, event.clone())).or_default();
                t.0 += samples;
                t.1 += period;
            }
        }
    }
    out
}

/// Whether a report's `sym` is a real symbol (not an address or `[unknown]`).
fn named(sym: &str) -> bool {
    !sym.is_empty() && !sym.starts_with("0x") && !sym.starts_with('[')
}

/// Call at the start of a test that needs Go's pprof.
fn require_go(test: &str) -> bool {
    let go = common::runs("go", &["version"]);
    common::need(test, go, "go (Debian golang-go) is not installed")
}

/// `go tool pprof -top ARGS FILE`: (total line, rows of (name, flat%)).
fn pprof_top(file: &Path, args: &[&str]) -> (String, Vec<(String, f64)>) {
    let tmp = scratch("export-pprof-tmp");
    let out = run_ok(
        Command::new("go")
            .args([
                "tool",
                "pprof",
                "-top",
                "-nodecount=100000",
                "-nodefraction=0",
            ])
            .args(args)
            .arg(file)
            .env("PPROF_TMPDIR", &tmp)
            .env("HOME", &tmp),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let total = text
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for"))
        .unwrap_or_else(|| panic!("no total line in pprof's output:\n{text}"))
        .to_string();
    let rows = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            // flat flat% sum% cum cum% NAME (the name may hold spaces)
            let mut rest = l.trim_start();
            let mut fields = Vec::new();
            for _ in 0..5 {
                let end = rest.find(char::is_whitespace)?;
                fields.push(&rest[..end]);
                rest = rest[end..].trim_start();
            }
            let flat: f64 = fields[1].trim_end_matches('%').parse().ok()?;
            Some((rest.to_string(), flat))
        })
        .collect();
    (total, rows)
}

#[test]
fn test_export_pprof_top_matches_report() {
    let test = "test_export_pprof_top_matches_report";
    let Some(file) = recording(test) else { return };
    if !require_go(test) {
        return;
    }
    let dir = scratch("export-pprof");
    let out = export(file, "pprof", &dir);
    let report = report(file, &["--sort", "sym"]);
    let totals = event_totals(&report);
    for (event, (samples, _)) in &totals {
        // Percentages: period shares, the function of the symbol (inlines folded into it).
        let (_, rows) = pprof_top(&out, &["-noinlines", &format!("-sample_index={event}")]);
        let pprof: BTreeMap<&str, f64> = rows.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        // pprof merges functions of one name (`_start` of ld.so and of the program); the
        // report keeps them apart per DSO: compare sums per name.
        let mut ours: BTreeMap<&str, f64> = BTreeMap::new();
        for row in report["rows"].as_array().unwrap() {
            let sym = row["keys"]["sym"].as_str().unwrap();
            *ours.entry(sym).or_default() += row["percent"][event.as_str()].as_f64().unwrap_or(0.0);
        }
        let mut compared = 0;
        for (sym, pct) in ours {
            if !named(sym) || pct < 0.5 {
                continue;
            }
            let theirs = pprof.get(sym).copied().unwrap_or_else(|| {
                panic!("{event}: {sym} ({pct:.2}%) is not in pprof's top: {rows:?}")
            });
            assert!(
                (theirs - pct).abs() <= 0.1 + 1e-9,
                "{event}: {sym}: pprof {theirs}% vs report {pct:.3}%"
            );
            compared += 1;
        }
        assert!(compared > 0, "{event}: no function compared");
        // The sample counts: pprof's total of the count type is the report's.
        let count_type = format!("-sample_index={event}_samples");
        let (total, _) = pprof_top(&out, &[&count_type]);
        assert!(
            total.ends_with(&format!(" of {samples} total")),
            "{event}: {total:?} vs {samples} samples"
        );
    }
    // The workload's shares lead pprof's cpu-clock top, in the report's order.
    let (_, rows) = pprof_top(&out, &["-noinlines", "-sample_index=cpu-clock"]);
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).take(2).collect();
    assert_eq!(names, ["heavy", "light"], "{rows:?}");
}

#[test]
fn test_export_firefox_tracks_weights_and_symbols_match_report() {
    let test = "test_export_firefox_tracks_weights_and_symbols_match_report";
    let Some(file) = recording(test) else { return };
    let dir = scratch("export-firefox");
    let out = export(file, "firefox", &dir);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["meta"]["symbolicated"], true, "symbols are embedded");
    let report_tids = tid_totals(&report(file, &["--sort", "tid"]));
    let events: Vec<String> = event_totals(&report(file, &[])).into_keys().collect();
    let first = "cpu-clock";
    let mut got: BTreeMap<(i64, String), (u64, u64)> = BTreeMap::new();
    let mut names = BTreeSet::new();
    for t in v["threads"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        // Extra tracks of the other events are named "COMM EVENT"; tids may get ".N".
        let event = events
            .iter()
            .find(|e| e.as_str() != first && name.ends_with(&format!(" {e}")))
            .map_or(first.to_string(), |e| e.clone());
        let tid: i64 = t["tid"]
            .as_str()
            .unwrap()
            .split('.')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let samples = &t["samples"];
        let weight: u64 = samples["weight"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .sum();
        let e = got.entry((tid, event)).or_default();
        e.0 += samples["length"].as_u64().unwrap();
        e.1 += weight;
        let strings = t["stringArray"].as_array().unwrap();
        for i in t["funcTable"]["name"].as_array().unwrap() {
            names.insert(
                strings[i.as_u64().unwrap() as usize]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    assert_eq!(
        got, report_tids,
        "per thread and event: (samples, summed weight)"
    );
    let syms = report(file, &["--sort", "sym"]);
    for row in syms["rows"].as_array().unwrap().iter().take(10) {
        let sym = row["keys"]["sym"].as_str().unwrap();
        if named(sym) {
            assert!(
                names.contains(sym),
                "{sym} is not among the profile's functions"
            );
        }
    }
    for f in ["heavy", "light"] {
        assert!(names.contains(f), "{f} missing: {names:?}");
    }
}

#[test]
fn test_export_speedscope_validates_against_the_published_schema() {
    let test = "test_export_speedscope_validates_against_the_published_schema";
    let Some(file) = recording(test) else { return };
    let dir = scratch("export-speedscope");
    let out = export(file, "speedscope", &dir);
    let schema = repo_root().join("crates/cli/tests/fixtures/speedscope/file-format-schema.json");
    let script = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
errs = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
if errs:
    sys.exit("; ".join(f"{list(e.path)}: {e.message}" for e in errs[:5]))
"#;
    let checked = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .arg(&out)
        .output()
        .expect("run python3 (jsonschema)");
    assert!(
        checked.status.success(),
        "speedscope export does not validate: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    // The validator must reject what speedscope would: a weight that is not a number.
    let mut bad: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    bad["profiles"][0]["weights"][0] = Value::from("1");
    let bad_file = dir.join("bad.json");
    std::fs::write(&bad_file, bad.to_string()).unwrap();
    let rejected = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .arg(&bad_file)
        .output()
        .unwrap();
    assert!(
        !rejected.status.success(),
        "the schema check accepts anything"
    );

    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let totals = event_totals(&report(file, &[]));
    let frames = v["shared"]["frames"].as_array().unwrap();
    for (event, (_, period)) in &totals {
        let mut sum = 0;
        for p in v["profiles"].as_array().unwrap() {
            if !p["name"].as_str().unwrap().ends_with(&format!(" {event}")) {
                continue;
            }
            let weights: u64 = p["weights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum();
            assert_eq!(weights, p["endValue"].as_u64().unwrap());
            for stack in p["samples"].as_array().unwrap() {
                for f in stack.as_array().unwrap() {
                    assert!((f.as_u64().unwrap() as usize) < frames.len());
                }
            }
            sum += weights;
        }
        assert_eq!(sum, *period, "{event}: weights vs the report's period");
    }
    assert!(frames.iter().any(|f| f["name"] == "heavy"));
}

#[test]
fn test_export_chrome_slices_nest_and_add_up_per_thread() {
    let test = "test_export_chrome_slices_nest_and_add_up_per_thread";
    let Some(file) = recording(test) else { return };
    let dir = scratch("export-chrome");
    let out = export(file, "chrome", &dir);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    // Per tid, the slices sorted by start (longest first) must nest like a call stack.
    let mut per_tid: BTreeMap<i64, Vec<(f64, f64, u64, u64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        per_tid
            .entry(e["tid"].as_i64().unwrap())
            .or_default()
            .push((
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
                e["args"]["samples"].as_u64().unwrap(),
                e["args"]["period"].as_u64().unwrap(),
            ));
    }
    let mut got: BTreeMap<(i64, String), (u64, u64)> = BTreeMap::new();
    for (tid, mut slices) in per_tid {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<(f64, u64)> = Vec::new();
        let total = got.entry((tid, "cpu-clock".to_string())).or_default();
        for (ts, dur, samples, period) in slices {
            assert!(dur > 0.0, "tid {tid}: empty slice at {ts}");
            while open.last().is_some_and(|&(end, _)| end <= ts + 1e-6) {
                open.pop();
            }
            match open.last() {
                Some(&(end, parent_samples)) => {
                    assert!(
                        ts + dur <= end + 1e-6,
                        "tid {tid}: slice at {ts} leaves its parent"
                    );
                    assert!(
                        samples <= parent_samples,
                        "tid {tid}: child has more samples"
                    );
                }
                None => {
                    total.0 += samples;
                    total.1 += period;
                }
            }
            open.push((ts + dur, samples));
        }
    }
    let expected: BTreeMap<(i64, String), (u64, u64)> =
        tid_totals(&report(file, &["--sort", "tid"]))
            .into_iter()
            .filter(|((_, e), _)| e == "cpu-clock")
            .collect();
    assert_eq!(
        got, expected,
        "per thread: samples and period of the outermost slices"
    );
    // The second event is a counter track.
    let totals = event_totals(&report(file, &[]));
    let faults = totals
        .get("page-faults/period=1/")
        .or(totals.get("page-faults"));
    if let Some(&(_, period)) = faults {
        let counted: u64 = events
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| {
                e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|x| x.as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(counted, period, "page faults in the counter track");
    }
    let names: BTreeSet<&str> = events.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(names.contains("heavy") && names.contains("thread_name"));
}

#[test]
fn test_export_summary_json_of_each_format_counts_what_was_written() {
    let test = "test_export_summary_json_of_each_format_counts_what_was_written";
    let Some(file) = recording(test) else { return };
    let dir = scratch("export-summary");
    let totals = event_totals(&report(file, &[]));
    for format in ["pprof", "firefox", "speedscope", "chrome"] {
        let out = dir.join(format!("summary.{format}"));
        let run = run_ok(
            culprit()
                .args(["export", "-i"])
                .arg(file)
                .args(["--format", format, "--summary", "json", "-o"])
                .arg(&out),
        );
        let text = String::from_utf8(run.stdout).unwrap();
        common::validate_json_schema("export", &text);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format"], format);
        assert_eq!(
            v["bytes"].as_u64().unwrap(),
            out.metadata().unwrap().len(),
            "{format}"
        );
        assert!(v["records"].as_u64().unwrap() > 0, "{format}");
        let exported: BTreeSet<&str> = v["exported_events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let expected: BTreeSet<&str> = totals.keys().map(String::as_str).collect();
        assert_eq!(exported, expected, "{format}: every event is exported");
        let samples: u64 = totals.values().map(|t| t.0).sum();
        assert_eq!(v["samples"].as_u64().unwrap(), samples, "{format}");
    }
    // The Firefox export writes one sample per sample read.
    let out = dir.join("count.firefox");
    let run = run_ok(
        culprit()
            .args(["export", "-i"])
            .arg(file)
            .args(["--format", "firefox", "--summary", "json", "-o"])
            .arg(&out),
    );
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["records"], v["samples"]);
}

#[test]
fn test_exports_read_on_several_threads_equal_the_sequential_read() {
    let test = "test_exports_read_on_several_threads_equal_the_sequential_read";
    if !common::require_perf(test) {
        return;
    }
    // Two processes sampled at once (their samples interleave in time order); small ring
    // buffers (`-m 8`: 8 pages) make perf write many rounds, for the file to be cut into
    // shares.
    let shares = common::workload("shares");
    let file = {
        let _lock = common::pmu_lock();
        let cmd = format!("{0} 60 & {0} 60; wait", shares.display());
        common::perf_record(
            "export-threads",
            &[
                "-e",
                "cpu-clock",
                "-F",
                "4000",
                "-e",
                "page-faults/period=1/",
                "-g",
                "-m",
                "8",
            ],
            &["sh", "-c", &cmd],
        )
    };
    let stats = common::perf()
        .args(["report", "--stats", "-i"])
        .arg(&file)
        .output()
        .expect("perf report --stats");
    let stats = String::from_utf8_lossy(&stats.stdout);
    let rounds: u64 = stats
        .lines()
        .find(|l| l.contains("FINISHED_ROUND events:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(rounds >= 4, "too few rounds to cut the file: {stats}");
    let dir = scratch("export-threads-out");
    let read = |threads: usize, format: &str, extra: &[&str]| -> Vec<u8> {
        let out = dir.join(format!("{threads}.{format}"));
        let mut cmd = culprit();
        if format == "svg" {
            cmd.args(["flamegraph", "-i"]).arg(&file);
        } else {
            cmd.args(["export", "-i"])
                .arg(&file)
                .args(["--format", format]);
        }
        run_ok(
            cmd.args(extra)
                .arg("-o")
                .arg(&out)
                .env("CULPRIT_READ_THREADS", threads.to_string()),
        );
        std::fs::read(&out).unwrap()
    };
    for (format, extra) in [
        ("folded", &["--tid"][..]),
        ("pprof", &[][..]),
        ("firefox", &[][..]),
        ("speedscope", &[][..]),
        ("chrome", &[][..]),
        ("svg", &[][..]),
    ] {
        let one = read(1, format, extra);
        assert!(!one.is_empty(), "{format}");
        for threads in [2, 3] {
            assert!(
                read(threads, format, extra) == one,
                "{format}: read on {threads} threads differs from the sequential read"
            );
        }
    }
}

#[test]
fn test_export_chrome_streams_the_same_trace_from_stdin_and_writes_nothing_on_an_unknown_event() {
    // The Chrome trace is written as the samples are read (issue 34): stdin gives the file's
    // events, and a read that fails before its first sample leaves no half-written JSON.
    let file = repo_root().join("crates/decode/tests/fixtures/cpu-clock-g.data");
    let trace = |stdin: bool| export_stdout("chrome", &file, stdin, None);
    let (from_file, from_stdin) = (trace(false), trace(true));
    let events = from_file["traceEvents"].as_array().unwrap();
    assert!(events.iter().filter(|e| e["ph"] == "X").count() > 10);
    assert_eq!(from_file["traceEvents"], from_stdin["traceEvents"]);
    let out = culprit()
        .args(["export", "--format", "chrome", "-e", "no-such-event", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// One Firefox sample: its time delta (as written), weight, CPU delta and stack (its
/// frames' function names, leaf first).
type FirefoxSample = (String, u64, u64, Vec<String>);

/// Per thread track (name, tid): each sample, read through the track's tables.
fn firefox_samples(v: &Value) -> BTreeMap<(String, String), Vec<FirefoxSample>> {
    let mut out = BTreeMap::new();
    for t in v["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap();
        let (prefix, frame) = (&t["stackTable"]["prefix"], &t["stackTable"]["frame"]);
        let func = &t["frameTable"]["func"];
        let name = &t["funcTable"]["name"];
        let names_of = |stack: &Value| {
            let mut names = Vec::new();
            let mut at = stack.as_u64();
            while let Some(s) = at {
                let f = func[frame[s as usize].as_u64().unwrap() as usize]
                    .as_u64()
                    .unwrap();
                let n = name[f as usize].as_u64().unwrap() as usize;
                names.push(strings[n].as_str().unwrap().to_string());
                at = prefix[s as usize].as_u64();
            }
            names
        };
        let samples = &t["samples"];
        let rows = (0..samples["length"].as_u64().unwrap() as usize)
            .map(|i| {
                (
                    samples["timeDeltas"][i].to_string(),
                    samples["weight"][i].as_u64().unwrap(),
                    samples["threadCPUDelta"][i].as_u64().unwrap(),
                    names_of(&samples["stack"][i]),
                )
            })
            .collect();
        let key = (
            t["name"].as_str().unwrap().to_string(),
            t["tid"].as_str().unwrap().to_string(),
        );
        out.insert(key, rows);
    }
    out
}

#[test]
fn test_export_firefox_from_stdin_spills_its_samples_and_equals_the_files() {
    // From stdin the Firefox export keeps no sample in memory (issue 34: spilled to an
    // unlinked temporary file, read back per track): the same tracks, samples, times,
    // weights and stacks as from the file.
    let file = repo_root().join("crates/decode/tests/fixtures/cpu-clock-g.data");
    let dir = scratch("export-firefox-stdin");
    let profile = |stdin: bool| export_stdout("firefox", &file, stdin, Some(&dir));
    let (from_file, from_stdin) = (profile(false), profile(true));
    let (a, b) = (firefox_samples(&from_file), firefox_samples(&from_stdin));
    let samples: usize = a.values().map(Vec::len).sum();
    assert!(samples > 50, "{samples} samples");
    assert!(a.values().flatten().any(|s| s.3.len() >= 2), "call stacks");
    assert_eq!(a, b);
    assert_eq!(from_file["counters"], from_stdin["counters"]);
    assert_eq!(from_file["meta"], from_stdin["meta"]);
    // The temporary file was unlinked as soon as it was made.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `culprit export --format FORMAT` of `file` (from stdin when `stdin`) to stdout, as JSON;
/// with `tmpdir`, its temporary files go there.
fn export_stdout(format: &str, file: &Path, stdin: bool, tmpdir: Option<&Path>) -> Value {
    let mut cmd = culprit();
    if let Some(dir) = tmpdir {
        cmd.env("TMPDIR", dir);
    }
    cmd.args(["export", "--format", format, "--summary", "none", "-i"]);
    if stdin {
        cmd.arg("-").stdin(std::fs::File::open(file).unwrap());
    } else {
        cmd.arg(file);
    }
    serde_json::from_slice(&run_ok(&mut cmd).stdout).unwrap()
}
