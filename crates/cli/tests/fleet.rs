//! `culprit report` over many inputs (`-i a -i b …`, `--from-parquet DIR…`): one report
//! whose numbers are those of one report of all the samples together.
//!
//! The oracle is built from independent single-file reports: `report -i X --format json`
//! of each input, its rows summed per event and per key (the JSON `keys` object), must
//! equal the merged report's rows summed the same way (samples and periods exactly,
//! self and children), its event totals the sums of the inputs', and its percentages the
//! summed periods over the summed totals. The single-file reports are themselves checked
//! against `perf report` by tests/report.rs; here perf's own per-file counts per command
//! (`perf report --sort comm --show-nr-samples`) are summed too, so the merged counts are
//! tied to perf directly.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Per (event, row key): samples, period, children samples, children period.
type Sums = BTreeMap<(String, String), [u64; 4]>;

/// A committed real perf.data file (tests/fixtures of culprit-decode).
fn real_fixture(name: &str) -> PathBuf {
    common::repo_root()
        .join("crates/decode/tests/fixtures")
        .join(name)
}

/// `culprit report --format json` of `inputs` (each as `-i`), with `extra` flags; the
/// exit code and the JSON.
fn report(inputs: &[&Path], extra: &[&str]) -> (i32, Value, String) {
    let mut cmd = common::culprit();
    cmd.arg("report");
    for i in inputs {
        cmd.arg("-i").arg(i);
    }
    cmd.args(["--format", "json"]).args(extra);
    let out = cmd.output().expect("run culprit report");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // A failed report (exit 2) prints nothing: Null then.
    let json = if out.stdout.is_empty() && out.status.code() == Some(2) {
        Value::Null
    } else {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{cmd:?}: no JSON ({e}), exit {:?}\nstderr:\n{stderr}",
                out.status
            )
        })
    };
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// [`report`] that must succeed.
fn report_ok(inputs: &[&Path], extra: &[&str]) -> Value {
    let (code, json, stderr) = report(inputs, extra);
    assert_eq!(code, 0, "report {inputs:?} {extra:?} failed:\n{stderr}");
    json
}

/// A row's key as the JSON shows it (the keys object, which holds `dso` and `sym_addr`
/// where a key needs them).
fn row_key(row: &Value) -> String {
    row["keys"].to_string()
}

/// The rows of a report summed per event and key (rows with nothing for an event skipped).
fn sums(json: &Value) -> Sums {
    let mut out = Sums::new();
    for row in json["rows"].as_array().expect("rows") {
        let key = row_key(row);
        for (ev, s) in row["samples"].as_object().expect("samples") {
            let v = [
                s.as_u64().unwrap(),
                row["period"][ev].as_u64().unwrap(),
                row["children_samples"][ev].as_u64().unwrap(),
                row["children_period"][ev].as_u64().unwrap(),
            ];
            if v.iter().all(|&x| x == 0) {
                continue;
            }
            let slot = out.entry((ev.clone(), key.clone())).or_default();
            for (a, b) in slot.iter_mut().zip(v) {
                *a += b;
            }
        }
    }
    out
}

/// Event totals of a report: name -> (samples, period, lost).
fn totals(json: &Value) -> BTreeMap<String, (u64, u64, u64)> {
    json["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                (
                    e["samples"].as_u64().unwrap(),
                    e["period"].as_u64().unwrap(),
                    e["lost"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Sums several reports' sums and totals (the oracle of their merge).
fn summed(parts: &[Value]) -> (Sums, BTreeMap<String, (u64, u64, u64)>) {
    let mut rows = Sums::new();
    let mut tot: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for p in parts {
        for (k, v) in sums(p) {
            let slot = rows.entry(k).or_default();
            for (a, b) in slot.iter_mut().zip(v) {
                *a += b;
            }
        }
        for (name, (s, per, l)) in totals(p) {
            let t = tot.entry(name).or_default();
            t.0 += s;
            t.1 += per;
            t.2 += l;
        }
    }
    // As one report: events without samples get no column when others have samples.
    if tot.values().any(|t| t.0 > 0) {
        tot.retain(|_, t| t.0 > 0);
    }
    (rows, tot)
}

/// Asserts that `merged` is the sum of `parts`: same rows with the same values, same event
/// totals, percentages of the summed totals, rows in order of the sort event's values.
fn assert_merged_is_sum(what: &str, merged: &Value, parts: &[Value]) {
    let (want_rows, want_totals) = summed(parts);
    assert_eq!(totals(merged), want_totals, "{what}: event totals");
    let got = sums(merged);
    let mut problems = Vec::new();
    for (k, v) in &want_rows {
        match got.get(k) {
            None => problems.push(format!("missing row {k:?} {v:?}")),
            Some(g) if g != v => problems.push(format!("row {k:?}: merged {g:?}, sum {v:?}")),
            _ => {}
        }
    }
    for k in got.keys() {
        if !want_rows.contains_key(k) {
            problems.push(format!("row {k:?} in no input"));
        }
    }
    assert!(
        problems.is_empty(),
        "{what}: {} differences (of {} rows):\n{}",
        problems.len(),
        want_rows.len(),
        problems[..problems.len().min(20)].join("\n")
    );
    // Percentages: of the merged totals, 4 decimals.
    let children = merged["children"].as_bool().unwrap();
    for row in merged["rows"].as_array().unwrap() {
        for (ev, (_, total, _)) in &want_totals {
            let pct = |field: &str| -> f64 {
                row[field][ev].as_u64().unwrap() as f64 * 100.0 / *total as f64
            };
            let near = |a: f64, b: &Value| (a - b.as_f64().unwrap()).abs() < 1.01e-4;
            assert!(
                near(pct("period"), &row["percent"][ev]),
                "{what}: {} percent of {ev}: {} for period {} of {total}",
                row_key(row),
                row["percent"][ev],
                row["period"][ev]
            );
            assert!(
                near(pct("children_period"), &row["children_percent"][ev]),
                "{what}: {} children percent of {ev}",
                row_key(row)
            );
        }
    }
    // Sorted by the sort event's value (children in children mode), biggest first.
    let ev = merged["sort_event"].as_str().unwrap();
    let field = if children {
        "children_period"
    } else {
        "period"
    };
    let values: Vec<u64> = merged["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field][ev].as_u64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] >= w[1]),
        "{what}: rows not sorted by {field} of {ev}"
    );
}

/// Records `cmd` with culprit (cpu-clock, frame-pointer chains when `g`).
fn culprit_record(dir: &Path, name: &str, g: bool, cmd: &[&str]) -> PathBuf {
    let file = dir.join(name);
    let mut c = common::culprit();
    c.args(["record", "-q", "-e", "cpu-clock", "-F", "2000"]);
    if g {
        c.arg("-g");
    }
    common::run_ok(c.arg("-o").arg(&file).arg("--").args(cmd));
    file
}

/// Three live recordings of different programs (two with call chains, one without), the
/// third by perf itself when it is installed.
fn live_recordings(test: &str) -> Vec<PathBuf> {
    let dir = common::scratch(test);
    let shares = common::workload("shares");
    let calltree = common::workload("calltree");
    let branchy = common::workload("branchy");
    let mut files = vec![
        culprit_record(&dir, "shares.data", true, &[shares.to_str().unwrap(), "20"]),
        culprit_record(
            &dir,
            "calltree.data",
            true,
            &[calltree.to_str().unwrap(), "150"],
        ),
    ];
    let branchy_args = [branchy.to_str().unwrap(), "4", "4"];
    if common::perf_installed() {
        let file = dir.join("branchy.data");
        common::run_ok(
            common::perf()
                .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-o"])
                .arg(&file)
                .arg("--")
                .args(branchy_args),
        );
        files.push(file);
    } else {
        files.push(culprit_record(&dir, "branchy.data", false, &branchy_args));
    }
    files
}

#[test]
fn test_fleet_report_equals_the_sum_of_single_reports_for_every_key() {
    let test = "test_fleet_report_equals_the_sum_of_single_reports_for_every_key";
    let files = live_recordings(test);
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    for sort in [
        "comm,dso,sym",
        "sym",
        "dso,sym",
        "comm",
        "pid",
        "tid",
        "dso",
        "srcline",
        "srcfile",
        "ip",
        "cpu",
        "comm,pid,srcline",
    ] {
        for mode in ["--no-children", "--children"] {
            let flags = ["--sort", sort, mode];
            let parts: Vec<Value> = inputs.iter().map(|f| report_ok(&[*f], &flags)).collect();
            let merged = report_ok(&inputs, &flags);
            assert_merged_is_sum(&format!("--sort {sort} {mode}"), &merged, &parts);
            assert_eq!(merged["children"], Value::Bool(mode == "--children"));
            let listed: Vec<&str> = merged["inputs"]
                .as_array()
                .expect("inputs")
                .iter()
                .map(|i| i["file"].as_str().unwrap())
                .collect();
            let given: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            assert_eq!(listed, given, "inputs listed in order");
        }
    }
    // The default mode: children, because some inputs have call chains.
    let merged = report_ok(&inputs, &[]);
    assert_eq!(merged["children"], Value::Bool(true));
    common::validate_json_schema("report", &merged.to_string());
}

#[test]
fn test_fleet_report_counts_agree_with_perf_per_file() {
    let test = "test_fleet_report_counts_agree_with_perf_per_file";
    if !common::require_perf(test) {
        return;
    }
    let files = live_recordings(test);
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    // perf's samples per (event, command), summed over the files.
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for f in &files {
        let out = common::run_ok(
            common::perf()
                .arg("report")
                .arg("-i")
                .arg(f)
                .args(["--stdio", "--no-group", "--no-children", "--sort", "comm"])
                .args(["--show-nr-samples", "-t", "|", "-g", "none"]),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let mut event = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# Samples: ") {
                event = rest.split('\'').nth(1).unwrap_or("").to_string();
            } else if !line.starts_with('#') && line.contains('|') {
                let cols: Vec<&str> = line.split('|').map(str::trim).collect();
                if cols.len() >= 3 && !cols[1].is_empty() {
                    *want
                        .entry((event.clone(), cols[2].to_string()))
                        .or_default() += cols[1].parse::<u64>().unwrap();
                }
            }
        }
    }
    let merged = report_ok(&inputs, &["--sort", "comm", "--no-children"]);
    let got: BTreeMap<(String, String), u64> = sums(&merged)
        .into_iter()
        .filter(|(_, v)| v[0] > 0)
        .map(|((ev, key), v)| {
            let k: Value = serde_json::from_str(&key).unwrap();
            ((ev, k["comm"].as_str().unwrap().to_string()), v[0])
        })
        .collect();
    assert_eq!(
        got, want,
        "merged samples per command vs perf's, summed over files"
    );
}

#[test]
fn test_fleet_report_of_real_multi_event_files_matches_events_by_name() {
    let test = "test_fleet_report_of_real_multi_event_files_matches_events_by_name";
    let dir = common::scratch(test);
    let shares = common::workload("shares");
    let local = culprit_record(&dir, "shares.data", true, &[shares.to_str().unwrap(), "10"]);
    // Real recordings from other machines: six hardware events (two perf versions), and
    // cycles + branch-misses + cpu-clock (its cpu-clock merges with the local one's).
    let busy4 = real_fixture("real-perf-data/google-perf_data_converter/perf.data.busy.0-3.4");
    let busy8 = real_fixture("real-perf-data/google-perf_data_converter/perf.data.busy.0-3.8");
    let hwsw = real_fixture("real-perf-data/google-perf_data_converter/perf.data.hw_and_sw-3.4");
    let two = real_fixture("two-events.data");
    let inputs: Vec<&Path> = vec![&busy4, &busy8, &hwsw, &two, &local];
    for sort in ["comm,dso,sym", "dso", "pid", "sym"] {
        for mode in ["--no-children", "--children"] {
            let flags = ["--sort", sort, mode];
            let parts: Vec<Value> = inputs.iter().map(|f| report_ok(&[*f], &flags)).collect();
            let merged = report_ok(&inputs, &flags);
            assert_merged_is_sum(&format!("real files --sort {sort} {mode}"), &merged, &parts);
        }
    }
    let merged = report_ok(&inputs, &["--sort", "comm"]);
    let names: Vec<String> = totals(&merged).into_keys().collect();
    for e in ["cycles", "instructions", "branch-misses", "cpu-clock"] {
        assert!(names.iter().any(|n| n == e), "{e} in {names:?}");
    }
    // cpu-clock is the sum of the local recording's and the real file's.
    let t = |j: &Value| totals(j).get("cpu-clock").copied().unwrap_or_default();
    let (a, b) = (
        report_ok(&[&hwsw], &["--sort", "comm"]),
        report_ok(&[&local], &["--sort", "comm"]),
    );
    assert_eq!(t(&merged).0, t(&a).0 + t(&b).0);
    assert_eq!(t(&merged).1, t(&a).1 + t(&b).1);
    // -e picks events by name in every input; an input without them counts nothing.
    let only = report_ok(&inputs, &["--sort", "comm", "-e", "cpu-clock"]);
    assert_eq!(totals(&only).into_keys().collect::<Vec<_>>(), ["cpu-clock"]);
    assert_eq!(t(&only), t(&merged));
    let (code, _, stderr) = report(&inputs, &["-e", "no-such-event"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no input has an event 'no-such-event'"),
        "{stderr}"
    );
}

/// A call-graph tree as a map: name -> (period, samples, children).
#[derive(Debug, PartialEq)]
struct Tree(BTreeMap<String, (u64, u64, Tree)>);

fn tree(node: &Value) -> Tree {
    Tree(
        node["children"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|n| {
                        (
                            n["name"].as_str().unwrap().to_string(),
                            (
                                n["period"].as_u64().unwrap(),
                                n["samples"].as_u64().unwrap(),
                                tree(n),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// `t` without the nodes below `threshold` (as report cuts its trees).
fn prune(t: &Tree, threshold: u64) -> Tree {
    Tree(
        t.0.iter()
            .filter(|(_, v)| v.0 >= threshold.max(1))
            .map(|(k, v)| (k.clone(), (v.0, v.1, prune(&v.2, threshold))))
            .collect(),
    )
}

/// `t` with every value doubled.
fn doubled(t: &Tree) -> Tree {
    Tree(
        t.0.iter()
            .map(|(k, v)| (k.clone(), (v.0 * 2, v.1 * 2, doubled(&v.2))))
            .collect(),
    )
}

/// Row key -> event -> (period, samples, tree) of a report with call graphs.
fn graphs(json: &Value) -> BTreeMap<(String, String), (u64, u64, Tree)> {
    let mut out = BTreeMap::new();
    for row in json["rows"].as_array().unwrap() {
        if let Some(g) = row["call_graph"].as_object() {
            for (ev, node) in g {
                if node.is_null() {
                    continue;
                }
                out.insert(
                    (row_key(row), ev.clone()),
                    (
                        node["period"].as_u64().unwrap(),
                        node["samples"].as_u64().unwrap(),
                        tree(node),
                    ),
                );
            }
        }
    }
    out
}

#[test]
fn test_fleet_report_merges_call_graphs() {
    let test = "test_fleet_report_merges_call_graphs";
    let files = live_recordings(test);
    let (a, b) = (files[0].as_path(), files[1].as_path());
    for order in ["caller", "callee"] {
        let flags = ["--sort", "comm,dso,sym", "-g", order];
        // The same file twice: every row, total and call-graph node doubled, the same
        // nodes above the threshold (a share of a doubled total).
        let one = report_ok(&[a], &flags);
        let twice = report_ok(&[a, a], &flags);
        assert_merged_is_sum(
            &format!("-g {order} a a"),
            &twice,
            &[one.clone(), one.clone()],
        );
        let g1 = graphs(&one);
        let g2 = graphs(&twice);
        assert!(!g1.is_empty(), "no call graphs in {}", a.display());
        assert_eq!(g1.keys().collect::<Vec<_>>(), g2.keys().collect::<Vec<_>>());
        for (k, (p, s, t)) in &g1 {
            let (p2, s2, t2) = &g2[k];
            assert_eq!((*p2, *s2), (p * 2, s * 2), "{k:?}");
            assert_eq!(t2, &doubled(t), "-g {order}: tree of {k:?}");
        }
        // Two programs (no row in common): each row's tree is its file's, cut at the
        // threshold of the merged total (0.5 %).
        let (ja, jb) = (report_ok(&[a], &flags), report_ok(&[b], &flags));
        let merged = report_ok(&[a, b], &flags);
        assert_merged_is_sum(
            &format!("-g {order} a b"),
            &merged,
            &[ja.clone(), jb.clone()],
        );
        let total = totals(&merged)["cpu-clock"].1;
        let threshold = (0.5 / 100.0 * total as f64) as u64;
        let gm = graphs(&merged);
        let mut single = graphs(&ja);
        single.extend(graphs(&jb));
        assert_eq!(
            gm.keys().collect::<Vec<_>>(),
            single.keys().collect::<Vec<_>>(),
            "rows with call graphs"
        );
        for (k, (p, s, t)) in &single {
            let (pm, sm, tm) = &gm[k];
            assert_eq!((pm, sm), (p, s), "{k:?}");
            assert_eq!(tm, &prune(t, threshold), "-g {order}: tree of {k:?}");
        }
    }
}

#[test]
fn test_fleet_report_limits_apply_to_the_merged_rows() {
    let test = "test_fleet_report_limits_apply_to_the_merged_rows";
    let files = live_recordings(test);
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let all = report_ok(&inputs, &["--sort", "sym", "--no-children"]);
    let rows = all["rows"].as_array().unwrap();
    assert!(rows.len() > 5, "{} rows", rows.len());
    let top = report_ok(&inputs, &["--sort", "sym", "--no-children", "--top", "5"]);
    let ev = all["sort_event"].as_str().unwrap();
    let periods = |j: &Value| -> Vec<u64> {
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["period"][ev].as_u64().unwrap())
            .collect()
    };
    assert_eq!(periods(&top), periods(&all)[..5]);
    assert_eq!(
        top["hidden_rows"].as_u64().unwrap() as usize,
        rows.len() - 5
    );
    // --percent-limit: the rows of at least 2 % of the merged total.
    let total = totals(&all)[ev].1;
    let limited = report_ok(
        &inputs,
        &["--sort", "sym", "--no-children", "--percent-limit", "2"],
    );
    let want: Vec<u64> = periods(&all)
        .into_iter()
        .filter(|&p| p as f64 * 100.0 / total as f64 >= 2.0)
        .collect();
    assert_eq!(periods(&limited), want);
    // Filters apply in every input.
    let comm = report_ok(
        &inputs,
        &["--sort", "comm,sym", "--no-children", "--comm", "shares"],
    );
    let comms: Vec<&str> = comm["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["keys"]["comm"].as_str().unwrap())
        .collect();
    assert!(
        !comms.is_empty() && comms.iter().all(|c| *c == "shares"),
        "{comms:?}"
    );
    // …and the percentages stay of all samples (perf's --percentage absolute).
    assert_eq!(totals(&comm), totals(&all));
    let (code, none, _) = report(&inputs, &["--sort", "comm", "--comm", "nosuch"]);
    assert_eq!(code, 0);
    assert_eq!(none["rows"].as_array().unwrap().len(), 0);
}

#[test]
fn test_fleet_report_text_and_csv() {
    let test = "test_fleet_report_text_and_csv";
    let files = live_recordings(test);
    // `culprit report ARGS -i F…` over the three recordings: its stdout.
    let merged = |args: &[&str]| {
        let mut cmd = common::culprit();
        cmd.arg("report").args(args);
        for f in &files {
            cmd.arg("-i").arg(f);
        }
        String::from_utf8(common::run_ok(&mut cmd).stdout).unwrap()
    };
    let text = merged(&["--sort", "comm,sym", "--no-children", "--width", "0"]);
    assert!(text.starts_with("# 3 inputs, merged"), "{text}");
    for f in &files {
        let line = format!("# Input {}: host ", f.display());
        assert!(text.contains(&line), "no {line:?} in\n{text}");
    }
    let json = report_ok(
        &files.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &["--sort", "comm,sym", "--no-children"],
    );
    let (samples, _, _) = totals(&json)["cpu-clock"];
    assert!(
        text.contains(&format!("# Event 'cpu-clock': {samples} samples")),
        "{text}"
    );
    // One line per row (the body), the hottest first.
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(body.len(), json["rows"].as_array().unwrap().len());
    let csv = merged(&["--sort", "comm,sym", "--no-children", "--format", "csv"]);
    assert_eq!(
        csv.lines().count(),
        1 + json["rows"].as_array().unwrap().len()
    );
}

#[test]
fn test_fleet_report_bad_inputs_fail_but_the_others_count() {
    let test = "test_fleet_report_bad_inputs_fail_but_the_others_count";
    let files = live_recordings(test);
    let dir = common::scratch(&format!("{test}-bad"));
    let missing = dir.join("missing.data");
    // A truncated copy of the biggest recording: reading stops, what came before counts.
    let big = files
        .iter()
        .max_by_key(|f| std::fs::metadata(f).unwrap().len())
        .unwrap();
    let bytes = std::fs::read(big).unwrap();
    let truncated = dir.join("truncated.data");
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (a, b) = (files[0].as_path(), files[1].as_path());
    let flags = ["--sort", "comm,dso,sym", "--no-children"];

    let (code, json, stderr) = report(&[a, &missing, b], &flags);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{}: not read", missing.display())),
        "{stderr}"
    );
    assert_merged_is_sum(
        "with a missing input",
        &json,
        &[report_ok(&[a], &flags), report_ok(&[b], &flags)],
    );
    let listed = &json["inputs"].as_array().unwrap()[1];
    assert_eq!(
        listed["file"].as_str().unwrap(),
        missing.display().to_string()
    );
    assert!(
        listed["error"].as_str().unwrap().contains("missing.data"),
        "{listed}"
    );
    common::validate_json_schema("report", &json.to_string());

    let (code, json, stderr) = report(&[a, &truncated], &flags);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("reading stopped at byte offset"),
        "{stderr}"
    );
    // The truncated file alone: exit 1 too, and its report is what the merge counted.
    let (code1, part, _) = report(&[&truncated], &flags);
    assert_eq!(code1, 1);
    assert_merged_is_sum(
        "with a truncated input",
        &json,
        &[report_ok(&[a], &flags), part],
    );
    assert!(!json["inputs"].as_array().unwrap()[1]["stopped"].is_null());
    assert!(!json["stopped"].is_null());

    // Nothing readable: exit 2.
    let (code, stderr) = {
        let out = common::culprit()
            .arg("report")
            .arg("-i")
            .arg(&missing)
            .arg("-i")
            .arg(dir.join("also-missing.data"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no input could be read"), "{stderr}");
    // Verbs of one file say so.
    let out = common::culprit()
        .arg("report")
        .arg("-i")
        .arg(a)
        .arg("-i")
        .arg(b)
        .arg("--offenders")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--offenders reads one perf.data file"));
}

// ---- --from-parquet: the report of Parquet exports equals -i over the files exported ----

/// `culprit export --format parquet` of `inputs` into `dir` (extra flags `extra`).
fn export_parquet(inputs: &[&Path], dir: &Path, extra: &[&str]) {
    let mut cmd = common::culprit();
    cmd.args(["export", "--format", "parquet", "--summary", "none", "-o"])
        .arg(dir)
        .args(extra);
    for i in inputs {
        cmd.arg("-i").arg(i);
    }
    common::run_ok(&mut cmd);
}

/// `culprit report --from-parquet DIRS --format json` with `extra` flags: exit code, JSON
/// (Null when it printed none) and stderr.
fn report_parquet(dirs: &[&Path], extra: &[&str]) -> (i32, Value, String) {
    let mut cmd = common::culprit();
    cmd.args(["report", "--format", "json", "--from-parquet"]);
    cmd.args(dirs);
    cmd.args(extra);
    let out = cmd.output().expect("run culprit report --from-parquet");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = if out.stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{cmd:?}: no JSON ({e})\nstderr:\n{stderr}"))
    };
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn report_parquet_ok(dirs: &[&Path], extra: &[&str]) -> Value {
    let (code, json, stderr) = report_parquet(dirs, extra);
    assert_eq!(
        code, 0,
        "report --from-parquet {dirs:?} {extra:?}:\n{stderr}"
    );
    json
}

/// Asserts that the report from the tables equals the sum of the one-file reports of the
/// files exported (rows, totals, percentages, order: [`assert_merged_is_sum`]), and that it
/// says the same about call chains as `-i` over the same files.
fn assert_parquet_equals_files(what: &str, dirs: &[&Path], files: &[&Path], flags: &[&str]) {
    // A file without the events of `-e` counts nothing (its own report refuses them).
    let parts: Vec<Value> = files
        .iter()
        .filter_map(|f| {
            let (code, json, stderr) = report(&[*f], flags);
            match code {
                0 => Some(json),
                2 if stderr.contains("no event '") => None,
                _ => panic!("report -i {} {flags:?}: exit {code}\n{stderr}", f.display()),
            }
        })
        .collect();
    let from_tables = report_parquet_ok(dirs, flags);
    assert_merged_is_sum(what, &from_tables, &parts);
    // Children as `-i` over the files gives them: asked for, or when a file has chains.
    let children = !flags.contains(&"--no-children")
        && (flags.contains(&"--children") || parts.iter().any(|p| p["children"] == true));
    assert_eq!(
        from_tables["children"],
        Value::Bool(children),
        "{what}: children"
    );
    assert_eq!(
        from_tables["inputs"].as_array().map(Vec::len),
        Some(files.len()),
        "{what}: one input per exported file"
    );
}

#[test]
fn test_from_parquet_equals_report_of_the_exported_files() {
    let test = "test_from_parquet_equals_report_of_the_exported_files";
    let files = live_recordings(test);
    let busy = real_fixture("real-perf-data/google-perf_data_converter/perf.data.busy.0-3.8");
    let hwsw = real_fixture("real-perf-data/google-perf_data_converter/perf.data.hw_and_sw-3.4");
    let system = real_fixture("system-wide-g.data");
    let two = real_fixture("two-events.data");
    // Two export directories: the live recordings in one, the fixtures in the other.
    let dir = common::scratch(&format!("{test}-parquet"));
    let (d1, d2) = (dir.join("live"), dir.join("real"));
    let live: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let real: Vec<&Path> = vec![&busy, &hwsw, &system, &two];
    export_parquet(&live, &d1, &[]);
    export_parquet(&real, &d2, &[]);
    let all: Vec<&Path> = live.iter().chain(&real).copied().collect();
    for sort in [
        "comm,dso,sym",
        "sym",
        "pid",
        "tid,dso",
        "srcline",
        "srcfile",
        "cpu",
    ] {
        for mode in ["--no-children", "--children"] {
            let flags = ["--sort", sort, mode];
            assert_parquet_equals_files(
                &format!("--from-parquet live real --sort {sort} {mode}"),
                &[&d1, &d2],
                &all,
                &flags,
            );
        }
    }
    // One directory; the default mode; limits, filters and -e on the merged rows.
    assert_parquet_equals_files("live, default mode", &[&d1], &live, &[]);
    for flags in [
        &["--sort", "sym", "-e", "cpu-clock", "--no-children"][..],
        &[
            "--sort",
            "comm,sym",
            "--comm",
            "shares,calltree",
            "--children",
        ],
        &["--sort", "dso", "--pid", "0", "--no-children"],
        &[
            "--sort",
            "comm,sym",
            "--dso",
            "libc.so.6,[kernel.kallsyms]",
            "--children",
        ],
    ] {
        assert_parquet_equals_files(&format!("{flags:?}"), &[&d1, &d2], &all, flags);
    }
    let top = ["--sort", "sym", "--no-children", "--top", "7"];
    let (a, b) = (report_parquet_ok(&[&d1, &d2], &top), report_ok(&all, &top));
    assert_eq!(a["rows"].as_array().unwrap().len(), 7);
    assert_eq!(a["hidden_rows"], b["hidden_rows"]);
    let periods = |j: &Value| -> Vec<u64> {
        let ev = j["sort_event"].as_str().unwrap();
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["period"][ev].as_u64().unwrap())
            .collect()
    };
    assert_eq!(periods(&a), periods(&b), "--top 7 rows");
    common::validate_json_schema("report", &a.to_string());
    // Text: each input listed.
    let out = common::run_ok(
        common::culprit()
            .args(["report", "--sort", "comm", "--width", "0", "--from-parquet"])
            .arg(&d1)
            .arg(&d2),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!("# {} inputs, merged", all.len())),
        "{text}"
    );
    for f in &all {
        assert!(
            text.contains(&format!("# Input {} (", f.display())),
            "{} not listed in\n{text}",
            f.display()
        );
    }
}

#[test]
fn test_from_parquet_of_several_processes_and_inline_exports() {
    let test = "test_from_parquet_of_several_processes_and_inline_exports";
    let dir = common::scratch(test);
    // Several processes running one DSO at different addresses (fork + exec here; a
    // system-wide recording of a real machine): the tables keep one address per code
    // location, so children rows of unnamed code (keyed by address, as perf keys them) are
    // not in them (docs/report.md); every other key is exact in both modes, `sym` self too.
    let exec = real_fixture("exec-g.data");
    let callgraph =
        real_fixture("real-perf-data/google-perf_data_converter/perf.data.callgraph-3.8");
    let d = dir.join("processes");
    export_parquet(&[&exec, &callgraph], &d, &[]);
    let both: Vec<&Path> = vec![&exec, &callgraph];
    for sort in [
        "comm",
        "pid",
        "tid",
        "dso",
        "comm,pid,dso",
        "srcline",
        "srcfile",
    ] {
        for mode in ["--no-children", "--children"] {
            assert_parquet_equals_files(
                &format!("several processes --sort {sort} {mode}"),
                &[&d],
                &both,
                &["--sort", sort, mode],
            );
        }
    }
    for sort in ["pid,sym", "comm,dso,sym"] {
        assert_parquet_equals_files(
            &format!("several processes --sort {sort} --no-children"),
            &[&d],
            &both,
            &["--sort", sort, "--no-children"],
        );
    }
    // --inline exports: inlined frames count for their function (sym), and a sample's
    // srcline is its innermost inline frame's.
    let files = live_recordings(&format!("{test}-live"));
    let live: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let inline = dir.join("inline");
    export_parquet(&live, &inline, &["--inline"]);
    for (sort, mode) in [
        ("sym", "--children"),
        ("comm,dso,sym", "--children"),
        ("srcline", "--no-children"),
        ("srcfile", "--no-children"),
    ] {
        assert_parquet_equals_files(
            &format!("--inline export --sort {sort} {mode}"),
            &[&inline],
            &live,
            &["--sort", sort, mode],
        );
    }
}

#[test]
fn test_from_parquet_bad_inputs() {
    let test = "test_from_parquet_bad_inputs";
    let files = live_recordings(test);
    let live: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let dir = common::scratch(&format!("{test}-parquet"));
    let good = dir.join("good");
    export_parquet(&live, &good, &[]);

    // A directory that is not an export, and one that does not exist: exit 2, saying so.
    let plain = dir.join("plain");
    std::fs::create_dir_all(plain.join("hosts")).unwrap();
    for (d, why) in [
        (&plain, "no events, frames, stacks, samples table"),
        (&dir.join("nosuch"), "no such directory"),
    ] {
        let (code, _, stderr) = report_parquet(&[&good, d], &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{} is not a culprit Parquet export ({why})",
                d.display()
            )),
            "{stderr}"
        );
    }
    // Keys and modes the tables cannot give: exit 2, naming what to use instead.
    for (flags, says) in [
        (&["--sort", "ip"][..], "sort key 'ip' is not in the tables"),
        (
            &["--sort", "sym", "-g", "caller"],
            "call graphs (-g caller|callee)",
        ),
        (&["--sort", "sym", "--deskid"], "--deskid disassembles"),
        (&["--sort", "mem"], "sort key 'mem' is not in the tables"),
    ] {
        let (code, _, stderr) = report_parquet(&[&good], flags);
        assert_eq!(code, 2, "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
    let (code, _, stderr) = report_parquet(&[&good], &["-e", "nosuch"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no input has an event 'nosuch'"),
        "{stderr}"
    );
    // --from-parquet and -i do not mix.
    let out = common::culprit()
        .args(["report", "-i"])
        .arg(live[0])
        .arg("--from-parquet")
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // One input of an export lost its samples table, another's frames are not Parquet:
    // exit 1, each listed with its error, the other input still counted.
    let broken = dir.join("broken");
    export_parquet(&live, &broken, &[]);
    let mut ids: Vec<String> = std::fs::read_dir(broken.join("hosts"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .replace(".parquet", "")
        })
        .collect();
    ids.sort();
    std::fs::remove_file(broken.join("samples").join(format!("{}.parquet", ids[0]))).unwrap();
    std::fs::write(
        broken.join("frames").join(format!("{}.parquet", ids[1])),
        b"not parquet",
    )
    .unwrap();
    let (code, json, stderr) = report_parquet(&[&broken], &["--sort", "comm,sym", "--no-children"]);
    assert_eq!(code, 1, "{stderr}");
    let inputs = json["inputs"].as_array().unwrap();
    let failed: Vec<&Value> = inputs.iter().filter(|i| !i["error"].is_null()).collect();
    assert_eq!(failed.len(), 2, "{inputs:?}");
    // One input lost its samples table, the other has a corrupt frames table (the inputs
    // are listed in directory order, which the file system decides).
    let errors: Vec<&str> = failed
        .iter()
        .map(|i| i["error"].as_str().unwrap())
        .collect();
    assert!(errors.iter().any(|e| e.contains("missing")), "{failed:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("frames") && !e.contains("missing")),
        "{failed:?}"
    );
    assert!(stderr.contains("not read"), "{stderr}");
    // The one left is one of the live files, counted in full.
    let ok = inputs.iter().find(|i| i["error"].is_null()).unwrap();
    let file = ok["file"].as_str().unwrap();
    let source = live
        .iter()
        .find(|f| file.starts_with(&format!("{} (", f.display())))
        .unwrap_or_else(|| panic!("{file} is none of the exported files"));
    assert_merged_is_sum(
        "export with broken inputs",
        &json,
        &[report_ok(
            &[*source],
            &["--sort", "comm,sym", "--no-children"],
        )],
    );
    common::validate_json_schema("report", &json.to_string());
}
