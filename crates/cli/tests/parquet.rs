//! `culprit export --format parquet`, read back by an independent reader (pyarrow, from
//! PyPI; `.ci/run` installs it) through `tests/parquet_read.py`, and compared with culprit's
//! own verbs on the same files:
//! - top functions by period per event (samples joined to their depth-0 leaf frame) equal
//!   `culprit report --sort sym --no-children`, and sample counts per event equal;
//! - the stacks (stacks.frame_ids → frames) equal `culprit script`'s call chains;
//! - the precise fields of the IBS fixtures and of PEBS samples equal what `culprit script`
//!   decodes;
//! - a truncated input exits 1 with what was read exported;
//! - the tables' columns and types equal the schema documented in docs/fleet.md.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{culprit, repo_root, run_ok, scratch};
use serde_json::Value;

fn fixtures() -> PathBuf {
    repo_root().join("crates/decode/tests/fixtures")
}

use common::require_pyarrow;

/// `culprit export --format parquet` of `inputs` into `dir`, with `extra` flags.
fn export(inputs: &[&Path], dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = culprit();
    cmd.args(["export", "--format", "parquet", "--summary", "none", "-o"])
        .arg(dir);
    for i in inputs {
        cmd.arg("-i").arg(i);
    }
    cmd.args(extra).output().expect("run culprit export")
}

/// What pyarrow reads from an export directory (see tests/parquet_read.py).
fn read_back(dir: &Path, chains: usize) -> Value {
    let script = repo_root().join("crates/cli/tests/parquet_read.py");
    let out = run_ok(
        Command::new("python3")
            .arg(&script)
            .arg(dir)
            .arg(chains.to_string()),
    );
    serde_json::from_slice(&out.stdout).expect("parquet_read.py prints JSON")
}

/// The entry of input `file` (as given to export) in a read-back.
fn file_entry<'a>(read: &'a Value, file: &Path) -> &'a Value {
    let key = file.to_str().unwrap();
    read["files"]
        .get(key)
        .unwrap_or_else(|| panic!("no hosts row for {key} in {:?}", read["files"]))
}

/// Per event, per key (`sym:NAME`, or `unknown:0xOFFSET` for code without a symbol):
/// (samples, period), from `culprit report --sort sym --no-children --format json`. Rows
/// of the same name (a function of that name in two DSOs) are summed, as the read-back
/// groups by name.
fn report_top(file: &Path) -> BTreeMap<String, BTreeMap<String, (u64, u64)>> {
    // Exit 1 for a truncated file: what was read is reported.
    let out = culprit()
        .args(["report", "--unknown", "address"])
        .arg("-i")
        .arg(file)
        .args(["--sort", "sym", "--no-children", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "report {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    let mut top: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        let keys = &row["keys"];
        let sym = keys["sym"].as_str().unwrap();
        let key = match keys["sym_addr"].as_str() {
            Some(addr) if sym == "[unknown]" => format!("unknown:{addr}"),
            _ => format!("sym:{sym}"),
        };
        for (event, samples) in row["samples"].as_object().unwrap() {
            let samples = samples.as_u64().unwrap();
            if samples == 0 {
                continue;
            }
            let period = row["period"][event].as_u64().unwrap();
            let e = top
                .entry(event.clone())
                .or_default()
                .entry(key.clone())
                .or_default();
            e.0 += samples;
            e.1 += period;
        }
    }
    top
}

/// The read-back's top functions of one file, in [`report_top`]'s shape.
fn parquet_top(entry: &Value) -> BTreeMap<String, BTreeMap<String, (u64, u64)>> {
    let mut top: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for (event, rows) in entry["top"].as_object().unwrap() {
        for r in rows.as_array().unwrap() {
            let key = r[0].as_str().unwrap().to_string();
            let v = (r[1].as_u64().unwrap(), r[2].as_u64().unwrap());
            top.entry(event.clone()).or_default().insert(key, v);
        }
    }
    top
}

/// Asserts the top functions per event and the sample counts per event of `file` in the
/// read-back equal culprit report's; returns the number of samples.
fn assert_top_equals_report(read: &Value, file: &Path, entry_file: &Path) -> u64 {
    let entry = file_entry(read, entry_file);
    let want = report_top(file);
    let got = parquet_top(entry);
    assert!(!want.is_empty(), "{}: report has no rows", file.display());
    assert_eq!(got, want, "{}: top functions per event", file.display());
    // Samples and periods per event: from the samples rows and from the events table.
    let mut samples = 0;
    for (event, keys) in &want {
        let (n, p) = keys.values().fold((0, 0), |(n, p), v| (n + v.0, p + v.1));
        samples += n;
        let counts = &entry["counts"][event];
        assert_eq!(
            (counts[0].as_u64(), counts[1].as_u64()),
            (Some(n), Some(p)),
            "{}: {event}: samples rows",
            file.display()
        );
        let totals = &entry["events"][event];
        assert_eq!(
            (totals[0].as_u64(), totals[1].as_u64()),
            (Some(n), Some(p)),
            "{}: {event}: events table",
            file.display()
        );
    }
    assert_eq!(
        entry["events"].as_object().unwrap().len(),
        want.len(),
        "{}: events with samples",
        file.display()
    );
    assert_eq!(entry["host"]["samples"].as_u64(), Some(samples));
    assert_eq!(entry["rows"].as_u64(), Some(samples));
    samples
}

/// A live `culprit record -g` recording of workloads/shares (cpu-clock, frame pointers).
fn live_recording() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = scratch("parquet-live-recording");
        let file = dir.join("perf.data");
        let shares = common::workload("shares");
        run_ok(
            culprit()
                .args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&shares)
                .arg("100"),
        );
        file
    })
}

#[test]
fn test_parquet_top_functions_per_event_equal_report_on_several_files() {
    let test = "test_parquet_top_functions_per_event_equal_report_on_several_files";
    if !require_pyarrow(test) {
        return;
    }
    let live = live_recording();
    let files = [
        live.to_path_buf(),
        // Two events (task-clock, page-faults), perf 6.1.
        fixtures().join("two-events.data"),
        // Pipe mode.
        fixtures().join("pipe-g.data"),
        // Recorded on other machines: three hardware events, one process; system-wide.
        fixtures()
            .join("real-perf-data/google-perf_data_converter/multi-event-single-process.perf.data"),
        fixtures().join("system-wide-g.data"),
    ];
    // All into one directory: the tables of several files union.
    let dir = scratch(test);
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let out = export(&inputs, &dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = read_back(&dir, 0);
    assert_eq!(read["files"].as_object().unwrap().len(), files.len());
    for f in &files {
        let n = assert_top_equals_report(&read, f, f);
        assert!(n > 0, "{}: no samples", f.display());
    }
    let live_samples = file_entry(&read, live)["rows"].as_u64().unwrap();
    assert!(live_samples > 500, "live recording: {live_samples} samples");
    // Every table has one file per input, named by its file id.
    for t in ["hosts", "events", "frames", "stacks", "samples"] {
        let n = std::fs::read_dir(dir.join(t)).unwrap().count();
        assert_eq!(n, files.len(), "{t}: files");
    }
    // Exported again into the same directory: replaced, not duplicated (same file ids).
    let out = export(&inputs[..2], &dir, &[]);
    assert!(out.status.success());
    let again = read_back(&dir, 0);
    assert_eq!(again["files"], read["files"]);
}

#[test]
fn test_parquet_of_stdin_and_small_row_groups_and_split_files_equal_report() {
    let test = "test_parquet_of_stdin_and_small_row_groups_and_split_files_equal_report";
    if !require_pyarrow(test) {
        return;
    }
    let dir = scratch(test);
    // A pipe-mode stream on stdin, in row groups of 16 rows and files of 32.
    let pipe = fixtures().join("pipe-g.data");
    let out = culprit()
        .args(["export", "--format", "parquet", "-i", "-", "-o"])
        .arg(&dir)
        .args([
            "--row-group-rows",
            "16",
            "--file-rows",
            "32",
            "--summary",
            "json",
        ])
        .stdin(std::fs::File::open(&pipe).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8(out.stdout).unwrap();
    common::validate_json_schema("export", &summary);
    let summary: Value = serde_json::from_str(&summary).unwrap();
    let read = read_back(&dir, 0);
    let entry = file_entry(&read, Path::new("-"));
    let rows = entry["rows"].as_u64().unwrap();
    assert_eq!(summary["samples"].as_u64(), Some(rows));
    assert_eq!(summary["format"], "parquet");
    let files = summary["parquet"]["files"][0]["files"].as_array().unwrap();
    let sample_files = files
        .iter()
        .filter(|f| f.as_str().unwrap().starts_with("samples/"))
        .count() as u64;
    assert_eq!(sample_files, rows.div_ceil(32), "samples files of 32 rows");
    assert!(read["row_groups"]["samples"].as_u64().unwrap() >= rows.div_ceil(16));
    let want = report_top(&pipe);
    assert_eq!(parquet_top(entry), want, "top functions of the stream");
    // stacks.frame_ids is never dictionary-encoded; names and ids are.
    assert_eq!(read["dictionary"]["stacks"]["frame_ids"], false);
    assert_eq!(read["dictionary"]["samples"]["comm"], true);
    assert_eq!(read["dictionary"]["samples"]["time"], false);
}

/// One sample of `culprit script --format json`: its time and thread, its call chain as
/// (function, dso, offset) frames, and its own function and DSO.
struct ScriptSample {
    time: Value,
    tid: Value,
    chain: Vec<(Value, String, u64)>,
    sym: Value,
    dso: String,
}

/// `culprit script --format json`'s samples, in order.
fn script_samples(file: &Path) -> Vec<ScriptSample> {
    let out = run_ok(
        culprit()
            .args(["script", "--format", "json", "-i"])
            .arg(file),
    );
    let dso = |v: &Value| v.as_str().unwrap_or("[unknown]").to_string();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let s: Value = serde_json::from_str(l).unwrap();
            let frame = |f: &Value| {
                let off = f["dso_offset"]
                    .as_u64()
                    .unwrap_or_else(|| f["ip"].as_u64().unwrap());
                (f["sym"].clone(), dso(&f["dso"]), off)
            };
            ScriptSample {
                time: s["time"].clone(),
                tid: s["tid"].clone(),
                chain: s["callchain"]
                    .as_array()
                    .map(|c| c.iter().map(frame).collect())
                    .unwrap_or_default(),
                sym: s["sym"].clone(),
                dso: dso(&s["dso"]),
            }
        })
        .collect()
}

#[test]
fn test_parquet_stacks_equal_script_call_chains() {
    let test = "test_parquet_stacks_equal_script_call_chains";
    if !require_pyarrow(test) {
        return;
    }
    let mut deep_stacks = 0;
    for (i, file) in [
        live_recording().to_path_buf(),
        fixtures().join("cpu-clock-g.data"),
        fixtures().join("system-wide-g.data"),
    ]
    .iter()
    .enumerate()
    {
        let dir = scratch(&format!("{test}-{i}"));
        let out = export(&[file], &dir, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = read_back(&dir, 300);
        let chains = file_entry(&read, file)["chains"]
            .as_array()
            .unwrap()
            .clone();
        let script = script_samples(file);
        assert!(
            chains.len() >= 50,
            "{}: {} chains",
            file.display(),
            chains.len()
        );
        let mut deep = 0;
        for (n, c) in chains.iter().enumerate() {
            let want = &script[n];
            assert_eq!(
                (&c["time"], &c["tid"]),
                (&want.time, &want.tid),
                "sample {n} in row order"
            );
            let got: Vec<(Value, String, u64)> = c["chain"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f[0].clone(),
                        f[1].as_str().unwrap().to_string(),
                        f[2].as_u64().unwrap(),
                    )
                })
                .collect();
            if want.chain.is_empty() {
                // No call chain recorded (an empty one): the stack is the sampled frame.
                assert_eq!(got.len(), 1, "{}: sample {n}: stack", file.display());
                assert_eq!((&got[0].0, &got[0].1), (&want.sym, &want.dso), "sample {n}");
            } else {
                assert_eq!(got, want.chain, "{}: sample {n}: stack", file.display());
            }
            if got.len() >= 3 {
                deep += 1;
            }
        }
        deep_stacks += deep;
    }
    assert!(deep_stacks > 0, "no stack of 3 frames or more");
}

#[test]
fn test_parquet_precise_fields_round_trip_on_the_ibs_fixtures() {
    let test = "test_parquet_precise_fields_round_trip_on_the_ibs_fixtures";
    if !require_pyarrow(test) {
        return;
    }
    let mut checked = BTreeMap::<&str, u64>::new();
    for name in [
        "ibs-fam17h_m31_zen2.data",
        "ibs-fam19h_m01_zen3.data",
        "ibs-fam19h_m11_zen4.data",
        "ibs-fam19h_m21_zen3.data",
    ] {
        let file = fixtures().join(name);
        let dir = scratch(&format!("{test}-{name}"));
        let out = export(&[&file], &dir, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = read_back(&dir, 10_000);
        let entry = file_entry(&read, &file);
        assert_top_equals_report(&read, &file, &file);
        let rows = entry["precise"].as_array().unwrap();
        let script = common::script_json(&file);
        assert_eq!(rows.len(), script.len(), "{name}: samples");
        for (n, (row, s)) in rows.iter().zip(&script).enumerate() {
            let at = format!("{name}: sample {n}");
            assert_eq!((&row["time"], &row["tid"]), (&s["time"], &s["tid"]), "{at}");
            let (want, kinds) = common::expected_ibs_precise_columns(s);
            for (k, v) in &want {
                assert_eq!(&row[*k], v, "{at}: {k}");
            }
            for k in kinds {
                *checked.entry(k).or_default() += 1;
            }
        }
    }
    // The fixtures exercise each kind of field.
    for k in common::IBS_PRECISE_KINDS {
        assert!(
            checked.get(k).copied().unwrap_or(0) > 0,
            "no {k} sample checked: {checked:?}"
        );
    }
}

#[test]
fn test_parquet_of_a_truncated_input_exits_1_with_what_was_read() {
    let test = "test_parquet_of_a_truncated_input_exits_1_with_what_was_read";
    if !require_pyarrow(test) {
        return;
    }
    let dir = scratch(test);
    let whole = std::fs::read(fixtures().join("pipe-g.data")).unwrap();
    let cut = dir.join("cut.data");
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    let out_dir = dir.join("out");
    let out = export(&[&cut], &out_dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reading stopped at byte"), "{stderr}");
    let read = read_back(&out_dir, 0);
    // Report reads the same samples from the cut file (and exits 1 too).
    let n = assert_top_equals_report(&read, &cut, &cut);
    assert!(n > 10, "{n} samples read before the cut");
    // No temporary file is left behind.
    for t in ["hosts", "events", "frames", "stacks", "samples"] {
        for e in std::fs::read_dir(out_dir.join(t)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(
                name.ends_with(".parquet") && !name.starts_with('.'),
                "{t}/{name}"
            );
        }
    }
}

/// The tables of docs/fleet.md's "Schema" section: per table, (column, type, nullable).
fn documented_schema() -> BTreeMap<String, Vec<(String, String, bool)>> {
    let doc = std::fs::read_to_string(repo_root().join("docs/fleet.md")).unwrap();
    let mut out: BTreeMap<String, Vec<(String, String, bool)>> = BTreeMap::new();
    let mut table: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("### table `") {
            table = h.split('`').next().map(str::to_string);
            continue;
        }
        if line.starts_with('#') {
            table = None;
        }
        let Some(t) = &table else { continue };
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `column` | TYPE | nullable | meaning |
        if cells.len() < 5 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let nullable = match cells[3] {
            "yes" => true,
            "no" => false,
            other => panic!("docs/fleet.md: {t}.{name}: nullable is {other:?}"),
        };
        out.entry(t.clone())
            .or_default()
            .push((name, cells[2].to_string(), nullable));
    }
    out
}

#[test]
fn test_parquet_schema_equals_the_documented_one() {
    let test = "test_parquet_schema_equals_the_documented_one";
    if !require_pyarrow(test) {
        return;
    }
    let dir = scratch(test);
    let file = fixtures().join("ibs-fam19h_m11_zen4.data");
    let out = export(&[&file], &dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = read_back(&dir, 0);
    let docs = documented_schema();
    assert_eq!(
        docs.keys().collect::<Vec<_>>(),
        ["events", "frames", "hosts", "samples", "stacks"],
        "docs/fleet.md documents every table"
    );
    for (table, columns) in &docs {
        let got: Vec<(String, String, bool)> = read["schemas"][table]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c[0].as_str().unwrap().to_string(),
                    c[1].as_str().unwrap().to_string(),
                    c[2].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(&got, columns, "table {table}: columns, types, nullability");
    }
    // The version the docs state is the one written.
    let entry = file_entry(&read, &file);
    assert_eq!(entry["host"]["schema_version"], 1);
    let doc = std::fs::read_to_string(repo_root().join("docs/fleet.md")).unwrap();
    assert!(
        doc.contains("schema version 1"),
        "docs/fleet.md states the version"
    );
}

#[test]
fn test_export_several_inputs_only_for_parquet_and_parquet_needs_a_directory() {
    let a = fixtures().join("cpu-clock-g.data");
    let b = fixtures().join("pipe-g.data");
    let out = culprit()
        .args(["export", "--format", "folded", "-i"])
        .arg(&a)
        .arg("-i")
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("folded takes one input"), "{stderr}");
    let out = culprit()
        .args(["export", "--format", "parquet", "-i"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-o DIR"), "{stderr}");
    let out = culprit()
        .args(["export", "--format", "folded", "--host", "h", "-i"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--host is for --format parquet"));
    // A file where the directory should be.
    let dir = scratch("parquet-not-a-dir");
    let file = dir.join("f");
    std::fs::write(&file, b"x").unwrap();
    let out = export(&[&a], &file, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));
}

#[test]
fn test_parquet_host_flag_names_every_row() {
    let test = "test_parquet_host_flag_names_every_row";
    if !require_pyarrow(test) {
        return;
    }
    let dir = scratch(test);
    let file = fixtures().join("two-events.data");
    // The same file as two hosts: two file ids, the rows of each named by its host.
    let a = export(&[&file], &dir, &["--host", "web-1"]);
    let b = export(&[&file], &dir, &["--host", "web-2"]);
    assert!(a.status.success() && b.status.success());
    let script = r#"
import sys, collections, pyarrow.dataset as ds
s = ds.dataset(sys.argv[1] + "/samples").to_table()
h = ds.dataset(sys.argv[1] + "/hosts").to_table()
print(sorted(collections.Counter(s.column("host").to_pylist()).items()), sorted(h.column("host").to_pylist()), len(set(s.column("file_id").to_pylist())))
"#;
    let out = run_ok(Command::new("python3").args(["-c", script]).arg(&dir));
    let n = 309; // two-events.data: 300 task-clock + 9 page-faults samples.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("[('web-1', {n}), ('web-2', {n})] ['web-1', 'web-2'] 2")
    );
}

#[test]
fn test_parquet_inline_frames_extend_the_stacks_and_keep_the_leaf_functions() {
    let test = "test_parquet_inline_frames_extend_the_stacks_and_keep_the_leaf_functions";
    if !require_pyarrow(test) {
        return;
    }
    // workloads/shares: spin() is always inlined into heavy() and light().
    let file = live_recording();
    let plain = scratch(&format!("{test}-plain"));
    let inline = scratch(&format!("{test}-inline"));
    assert!(export(&[file], &plain, &[]).status.success());
    let out = export(&[file], &inline, &["--inline"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plain = read_back(&plain, 1000);
    let inline = read_back(&inline, 1000);
    // The leaf (depth 0) functions are report's, with or without --inline.
    assert_top_equals_report(&inline, file, file);
    let plain = file_entry(&plain, file)["chains"]
        .as_array()
        .unwrap()
        .clone();
    let inline = file_entry(&inline, file)["chains"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(plain.len(), inline.len());
    let mut spin = 0;
    for (p, i) in plain.iter().zip(&inline) {
        let frames = i["chain"].as_array().unwrap();
        // Without the inline frames, the same stack.
        let outer: Vec<&Value> = frames.iter().filter(|f| f[3] == 0).collect();
        let p: Vec<&Value> = p["chain"].as_array().unwrap().iter().collect();
        assert_eq!(outer, p, "depth-0 frames of an --inline stack");
        // Inline frames come before (inside) the frame they are inlined into, deepest first.
        let mut last_depth = None;
        for f in frames {
            let d = f[3].as_u64().unwrap();
            if let Some(l) = last_depth {
                assert!(l == 0 || d == l - 1, "inline depths in order: {frames:?}");
            }
            last_depth = Some(d);
            if d > 0 && f[0] == "spin" {
                spin += 1;
            }
        }
        assert_eq!(last_depth, Some(0), "a stack ends with a depth-0 frame");
    }
    assert!(spin > 0, "no inlined spin() frame");
}

#[test]
fn test_parquet_precise_fields_of_pebs_samples_equal_script() {
    let test = "test_parquet_precise_fields_of_pebs_samples_equal_script";
    if !require_pyarrow(test) {
        return;
    }
    // Intel PEBS load-latency samples (MEM_TRANS_RETIRED.LOAD_LATENCY) recorded elsewhere:
    // ADDR, WEIGHT_STRUCT and DATA_SRC.
    let file = fixtures().join("real-perf-data/google-perf_data_converter/perf.data.weight_struct");
    let dir = scratch(test);
    let out = export(&[&file], &dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = read_back(&dir, 100_000);
    assert_top_equals_report(&read, &file, &file);
    let rows = file_entry(&read, &file)["precise"]
        .as_array()
        .unwrap()
        .clone();
    let script = common::script_json(&file);
    assert_eq!(rows.len(), script.len());
    let mut checked = 0;
    for (n, (row, s)) in rows.iter().zip(&script).enumerate() {
        assert_eq!(
            (&row["time"], &row["tid"]),
            (&s["time"], &s["tid"]),
            "sample {n}"
        );
        let Some(p) = s.get("precise") else {
            for k in ["data_addr", "weight", "data_src", "dc_miss", "dtlb_miss"] {
                assert_eq!(
                    row[k],
                    Value::Null,
                    "sample {n}: {k} without precise fields"
                );
            }
            continue;
        };
        assert_eq!(row["data_addr"], p["addr"], "sample {n}: address");
        assert_eq!(row["phys_addr"], p["phys_addr"], "sample {n}");
        assert_eq!(row["weight"], p["latency"], "sample {n}: latency");
        let src = p.get("data_src").cloned().unwrap_or(Value::Null);
        assert_eq!(row["data_src"], src, "sample {n}: data_src");
        // dc_miss: served beyond the L1 data cache, by script's level.
        let dc_miss = match p["level"].as_str() {
            Some("L1") => Value::Bool(false),
            None | Some("N/A") => Value::Null,
            Some(_) => Value::Bool(true),
        };
        assert_eq!(row["dc_miss"], dc_miss, "sample {n}: level {}", p["level"]);
        // dtlb_miss from perf_mem_data_src's mem_dtlb bits (bit 26: N/A, HIT, MISS, L1, L2).
        let dtlb = src.as_u64().map(|v| (v >> 26) & 0x7f);
        let want = match dtlb {
            Some(t) if t & 0x04 != 0 => Value::Bool(true),
            Some(t) if t & 0x02 != 0 && t & 0x18 == 0x08 => Value::Bool(false),
            Some(t) if t & 0x02 != 0 && t & 0x18 == 0x10 => Value::Bool(true),
            _ => Value::Null,
        };
        assert_eq!(row["dtlb_miss"], want, "sample {n}: tlb {}", p["tlb"]);
        for k in ["branch_taken", "ibs_op_latency", "ibs_fetch_latency"] {
            assert_eq!(row[k], Value::Null, "sample {n}: {k} of a PEBS sample");
        }
        if row["data_addr"] != Value::Null && row["weight"] != Value::Null {
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "{checked} PEBS samples with address and latency"
    );
}

/// ARM SPE (docs/spe.md): the precise columns of the samples perf synthesises from the
/// crafted SPE file equal perf 6.1's `perf script -F event,ip,addr,phys_addr,weight,data_src`
/// (checked in next to the file; 0 is null), and the SPE record fills the columns IBS fills
/// where the meaning is the same (L1D refill, TLB walk, branch outcome, total latency).
#[test]
fn test_parquet_precise_fields_of_spe_samples_equal_perf() {
    let test = "test_parquet_precise_fields_of_spe_samples_equal_perf";
    if !require_pyarrow(test) {
        return;
    }
    let file = fixtures().join("spe/spe-crafted.data");
    let dir = scratch(test);
    let out = export(&[&file], &dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = read_back(&dir, 100);
    let rows = file_entry(&read, &file)["precise"]
        .as_array()
        .unwrap()
        .clone();
    let perf = std::fs::read_to_string(fixtures().join("spe/perf-6.1-script.txt")).unwrap();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    let non_zero = |v: u64| if v == 0 { Value::Null } else { v.into() };
    let perf_lines: Vec<&str> = perf.lines().collect();
    assert_eq!(rows.len(), perf_lines.len(), "{rows:?}");
    for (row, line) in rows.iter().zip(&perf_lines) {
        // "l1d-miss: ADDR DATA_SRC |OP ...|BLK  N/A  WEIGHT IP PHYS_ADDR"
        let (head, tail) = line.split_once("|BLK  N/A").unwrap();
        let head: Vec<&str> = head.split_whitespace().collect();
        let tail: Vec<&str> = tail.split_whitespace().collect();
        let branch = head[0] == "branch-miss:";
        let at = format!("{line}: {row}");
        if !branch {
            assert_eq!(row["data_addr"], non_zero(hex(head[1])), "{at}");
        }
        assert_eq!(row["data_src"], non_zero(hex(head[2])), "{at}");
        assert_eq!(row["weight"], non_zero(tail[0].parse().unwrap()), "{at}");
        assert_eq!(row["phys_addr"], non_zero(hex(tail[2])), "{at}");
        assert_eq!(row["ibs_op_latency"], row["weight"], "{at}");
        assert_eq!(row["tid"], 4242, "{at}");
    }
    // The crafted records: a load missing L1D and TLB, a store hitting, a mispredicted branch.
    let column = |k: &str| rows.iter().map(|r| r[k].clone()).collect::<Vec<_>>();
    let (t, f, n) = (Value::Bool(true), Value::Bool(false), Value::Null);
    let mut dc_miss = vec![t.clone(); 7];
    dc_miss.extend([f.clone(), f.clone(), f.clone(), n.clone()]);
    assert_eq!(column("dc_miss"), dc_miss);
    assert_eq!(column("dtlb_miss"), dc_miss);
    let mut branch = vec![n.clone(); 10];
    branch.push(t.clone());
    assert_eq!(column("branch_mispredicted"), branch);
    assert_eq!(column("branch_taken"), branch);
}
