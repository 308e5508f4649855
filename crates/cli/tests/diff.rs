//! `culprit diff` against `perf diff` (perf 6.1 is the oracle): two recordings of
//! workloads/markup_names with different work splits; the Baseline, Delta and both periods of
//! every row equal perf's, new and vanished rows are marked, rows are sorted by |Delta|, and
//! names holding markup characters come out whole in text, JSON and CSV.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The diff JSON, read with types of its own (not culprit's).
#[derive(Debug, Deserialize)]
struct DiffJson {
    schema: u32,
    baseline: FileJson,
    other: FileJson,
    sort: Vec<String>,
    events: Vec<EventJson>,
    only_in_baseline: Vec<String>,
    only_in_other: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct FileJson {
    file: String,
}

#[derive(Debug, Deserialize)]
struct EventJson {
    name: String,
    baseline: TotalsJson,
    other: TotalsJson,
    rows: Vec<RowJson>,
}

#[derive(Debug, Deserialize)]
struct TotalsJson {
    samples: u64,
    period: u64,
}

#[derive(Debug, Deserialize)]
struct RowJson {
    keys: BTreeMap<String, serde_json::Value>,
    sym_level: Option<String>,
    status: String,
    baseline: Option<SideJson>,
    other: Option<SideJson>,
    delta: f64,
    ratio: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, Copy)]
struct SideJson {
    samples: u64,
    period: u64,
    percent: f64,
}

impl RowJson {
    fn key(&self, k: &str) -> &str {
        self.keys.get(k).and_then(|v| v.as_str()).unwrap_or("")
    }
}

const SCRIPT: &str = "<script>alert(1)</script>";
const AMP: &str = "a&b<c>";
const GONE: &str = "gone'&";
const FRESH: &str = "fresh<&>";

/// Records markup_names with `args` (units per function) into DIR/NAME.
fn record(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::culprit()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&out)
            .arg("--")
            .arg(common::workload("markup_names"))
            .args(args),
    );
    out
}

/// Two recordings: `3 1 1 0` (baseline) and `1 3 0 1`, made once per test binary.
fn recordings() -> (PathBuf, PathBuf) {
    static FILES: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    FILES
        .get_or_init(|| {
            let dir = common::scratch("diff");
            let a = record(&dir, "a.data", &["3", "1", "1", "0"]);
            let b = record(&dir, "b.data", &["1", "3", "0", "1"]);
            (a, b)
        })
        .clone()
}

fn culprit_diff(a: &Path, b: &Path, extra: &[&str]) -> String {
    let out = common::run_ok(common::culprit().arg("diff").arg(a).arg(b).args(extra));
    String::from_utf8(out.stdout).expect("diff output is UTF-8")
}

/// One row of `perf diff -p -t ';'`: Baseline %, Base period, Delta, Period, DSO, symbol.
#[derive(Debug)]
struct PerfRow {
    baseline: Option<f64>,
    base_period: u64,
    delta: Option<f64>,
    period: u64,
    dso: String,
    level: String,
    sym: String,
}

fn perf_diff(a: &Path, b: &Path) -> Vec<PerfRow> {
    let out = common::run_ok(common::perf().args(["diff", "-p", "-t", ";"]).arg(a).arg(b));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.splitn(6, ';').map(str::trim).collect();
        assert_eq!(f.len(), 6, "perf diff line: {line:?}");
        let num = |s: &str| -> Option<f64> {
            let s = s.trim_end_matches('%');
            (!s.is_empty()).then(|| s.parse().unwrap_or_else(|_| panic!("{line:?}")))
        };
        let count = |s: &str| -> u64 { s.parse().unwrap_or(0) };
        let (level, sym) = f[5].split_once(' ').unwrap_or(("", f[5]));
        rows.push(PerfRow {
            baseline: num(f[0]),
            base_period: count(f[1]),
            delta: num(f[2]),
            period: count(f[3]),
            dso: f[4].to_string(),
            level: level.to_string(),
            sym: sym.to_string(),
        });
    }
    rows
}

#[test]
fn test_diff_equals_perf_diff_row_by_row() {
    if !common::require_perf("test_diff_equals_perf_diff_row_by_row") {
        return;
    }
    let (a, b) = recordings();
    let perf = perf_diff(&a, &b);
    let json: DiffJson = serde_json::from_str(&culprit_diff(&a, &b, &["--format", "json"]))
        .expect("diff JSON parses");
    common::validate_json_schema(
        "diff",
        &culprit_diff(&a, &b, &["--format", "json", "-e", "cpu-clock"]),
    );
    assert_eq!(json.schema, 1);
    assert_eq!(json.sort, ["dso", "sym"]);
    assert_eq!(json.baseline.file, a.display().to_string());
    assert_eq!(json.other.file, b.display().to_string());
    assert!(json.only_in_baseline.is_empty() && json.only_in_other.is_empty());
    assert_eq!(json.events.len(), 1, "{json:?}");
    let e = &json.events[0];
    assert_eq!(e.name, "cpu-clock");
    assert!(e.baseline.samples > 500 && e.other.samples > 500, "{e:?}");
    let base_total: u64 = e
        .rows
        .iter()
        .filter_map(|r| r.baseline)
        .map(|s| s.period)
        .sum();
    let other_total: u64 = e
        .rows
        .iter()
        .filter_map(|r| r.other)
        .map(|s| s.period)
        .sum();
    assert_eq!(
        base_total, e.baseline.period,
        "baseline rows add up to the total"
    );
    assert_eq!(
        other_total, e.other.period,
        "other rows add up to the total"
    );

    // Every row of perf's is culprit's, with the same periods and (to perf's two decimals)
    // the same Baseline and Delta; and culprit has no row perf lacks.
    let mut by_key: BTreeMap<(String, String), &RowJson> = BTreeMap::new();
    for r in &e.rows {
        by_key.insert((r.key("dso").to_string(), r.key("sym").to_string()), r);
    }
    assert_eq!(by_key.len(), e.rows.len(), "rows are distinct");
    assert_eq!(
        perf.len(),
        e.rows.len(),
        "row count: perf {perf:#?}\nculprit {:#?}",
        e.rows
    );
    for p in &perf {
        let r = by_key
            .get(&(p.dso.clone(), p.sym.clone()))
            .unwrap_or_else(|| panic!("perf's row {p:?} is not in culprit's diff"));
        assert_eq!(r.sym_level.as_deref(), Some(p.level.as_str()), "{p:?}");
        let base = r.baseline.map_or(0, |s| s.period);
        let other = r.other.map_or(0, |s| s.period);
        assert_eq!((base, other), (p.base_period, p.period), "periods of {p:?}");
        match p.baseline {
            Some(pct) => {
                let mine = r.baseline.expect("baseline side").percent;
                assert!(
                    (mine - pct).abs() <= 0.0051,
                    "Baseline {mine} vs perf {p:?}"
                );
            }
            None => assert_eq!(r.status, "new", "{p:?}"),
        }
        match p.delta {
            Some(d) => assert!(
                (r.delta - d).abs() <= 0.0051,
                "Delta {} vs perf {p:?}",
                r.delta
            ),
            // perf leaves a vanished row's Delta empty; culprit's is minus its Baseline.
            None => {
                assert_eq!(r.status, "vanished", "{p:?}");
                let base = r.baseline.expect("baseline side").percent;
                assert!((r.delta + base).abs() < 1e-3, "{r:?}");
            }
        }
        if let (Some(ratio), true) = (r.ratio, base > 0) {
            let want = other as f64 / base as f64;
            assert!((ratio - want).abs() < 1e-9, "ratio {ratio} of {p:?}");
        }
    }

    // The workload's rows, by construction: the first function's share falls from ~60% to
    // ~20%, the second's rises from ~20% to ~60%; one function vanished, one is new.
    let row = |sym: &str| {
        *by_key
            .get(&("markup_names".to_string(), sym.to_string()))
            .unwrap_or_else(|| panic!("no row for {sym} in {:#?}", e.rows))
    };
    assert_eq!(row(SCRIPT).status, "both");
    assert!(row(SCRIPT).delta < -20.0, "{:?}", row(SCRIPT));
    assert!(row(SCRIPT).ratio.is_some_and(|r| r < 0.6));
    assert!(row(AMP).delta > 20.0, "{:?}", row(AMP));
    assert!(row(AMP).ratio.is_some_and(|r| r > 1.6));
    assert_eq!(row(GONE).status, "vanished");
    assert!(row(GONE).other.is_none() && row(GONE).ratio == Some(0.0));
    assert_eq!(row(FRESH).status, "new");
    assert!(row(FRESH).baseline.is_none() && row(FRESH).ratio.is_none());
    assert!(row(FRESH).delta > 10.0);
    assert!(row(FRESH).other.is_some_and(|s| s.samples > 0));

    // Sorted by the absolute Delta.
    for w in e.rows.windows(2) {
        assert!(
            w[0].delta.abs() >= w[1].delta.abs(),
            "order: {:?} before {:?}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn test_diff_text_and_csv_keep_names_and_mark_new_and_vanished() {
    let (a, b) = recordings();
    let text = culprit_diff(&a, &b, &["--width", "0"]);
    let line = |sym: &str| {
        text.lines()
            .find(|l| l.ends_with(&format!("[.] {sym}")))
            .unwrap_or_else(|| panic!("no line for {sym}:\n{text}"))
            .to_string()
    };
    assert!(text.contains("Baseline") && text.contains("Delta") && text.contains("Ratio"));
    assert!(
        text.contains(&format!("# Baseline: {}", a.display())),
        "{text}"
    );
    assert!(text.contains("Event 'cpu-clock': baseline "), "{text}");
    let fresh = line(FRESH);
    assert!(
        fresh.contains("[+]") && fresh.trim_start().starts_with('+'),
        "{fresh}"
    );
    let gone = line(GONE);
    assert!(gone.contains("[-]"), "{gone}");
    let script = line(SCRIPT);
    assert!(
        !script.contains("[+]") && !script.contains("[-]"),
        "{script}"
    );
    // Baseline, then a negative Delta.
    let fields: Vec<&str> = script.split_whitespace().collect();
    assert!(
        fields[0].ends_with('%') && fields[1].starts_with('-'),
        "{script}"
    );
    // The first data line is the biggest change: the first function's.
    let first = text
        .lines()
        .skip_while(|l| !l.contains("+/-  Shared Object  "))
        .nth(1)
        .unwrap_or_default();
    assert!(first.ends_with(SCRIPT) || first.ends_with(AMP), "{text}");

    // CSV: a header and one row per function, names whole (none needs quoting).
    let csv = culprit_diff(&a, &b, &["--format", "csv"]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "event",
            "dso",
            "sym",
            "status",
            "baseline_samples",
            "baseline_period",
            "baseline_percent",
            "samples",
            "period",
            "percent",
            "delta",
            "ratio"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let find = |sym: &str| {
        rows.iter()
            .find(|r| r[2] == sym)
            .unwrap_or_else(|| panic!("no CSV row for {sym}:\n{csv}"))
    };
    let fresh = find(FRESH);
    assert_eq!(
        (fresh[0], fresh[1], fresh[3]),
        ("cpu-clock", "markup_names", "new")
    );
    assert_eq!((fresh[4], fresh[6], fresh[11]), ("0", "", ""));
    let gone = find(GONE);
    assert_eq!((gone[3], gone[7], gone[9]), ("vanished", "0", ""));
    assert!(find(SCRIPT)[10].starts_with('-'));
    assert!(find(AMP)[10].parse::<f64>().unwrap() > 20.0);
}

#[test]
fn test_diff_sort_keys_events_and_bad_arguments() {
    let (a, b) = recordings();
    // --sort sym: the rows match by symbol alone.
    let json: DiffJson = serde_json::from_str(&culprit_diff(
        &a,
        &b,
        &["--sort", "sym", "--format", "json"],
    ))
    .unwrap();
    assert_eq!(json.sort, ["sym"]);
    let rows = &json.events[0].rows;
    assert!(rows
        .iter()
        .any(|r| r.key("sym") == SCRIPT && r.status == "both"));
    assert!(rows
        .iter()
        .all(|r| !r.keys.contains_key("dso") || r.key("sym") == "[unknown]"));
    // A file diffed with itself: every row is in both, with no change.
    let same: DiffJson =
        serde_json::from_str(&culprit_diff(&a, &a, &["--format", "json"])).unwrap();
    assert!(same.events[0]
        .rows
        .iter()
        .all(|r| r.status == "both" && r.delta == 0.0 && r.ratio == Some(1.0)));
    // An event neither file has, one file, and a memory key are errors (exit 2).
    for args in [
        vec!["-e", "cycles"],
        vec!["--sort", "mem"],
        vec!["--sort", "nosuch"],
    ] {
        let out = common::culprit()
            .arg("diff")
            .arg(&a)
            .arg(&b)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
    let out = common::culprit().arg("diff").arg(&a).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("two files"));
}
