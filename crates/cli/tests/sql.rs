//! `culprit sql` (cargo feature `sql`) over Parquet exports: the named queries give exactly the
//! numbers of `culprit report` on the perf.data files the exports came from — per file, one
//! export of several files, several exports at once — and Apache Spark (pyspark, local mode)
//! computes the same from the same files. Errors name what is wrong.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{culprit, repo_root, run_ok, scratch};
use serde_json::Value;

/// A recording of the repository's fixtures.
fn fixture(name: &str) -> PathBuf {
    repo_root().join("crates/decode/tests/fixtures").join(name)
}

/// Recordings of several kinds: this machine's software events with call chains (file and
/// pipe mode, two events, fork + exec, system-wide with kernel frames) and other machines'
/// hardware events, whose binaries are not here (every function `[unknown]`, by address).
const FILES: &[&str] = &[
    "cpu-clock-g.data",
    "two-events.data",
    "exec-g.data",
    "pipe-g.data",
    "system-wide-g.data",
    "real-perf-data/google-perf_data_converter/perf.data.busy.1-3.8",
    "real-perf-data/google-perf_data_converter/perf.data.callgraph-3.8",
];

/// `culprit export --format parquet -i F… -o DIR [--host H]`.
fn export(inputs: &[PathBuf], dir: &Path, host: Option<&str>) {
    let mut cmd = culprit();
    cmd.args(["export", "--format", "parquet"]);
    for i in inputs {
        cmd.arg("-i").arg(i);
    }
    cmd.arg("-o").arg(dir);
    if let Some(h) = host {
        cmd.args(["--host", h]);
    }
    run_ok(&mut cmd);
}

/// Parses stdout as JSON.
fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}

/// `culprit sql ARGS… --format json`, checked against docs/schemas/sql.schema.json.
fn sql_json(args: &[&str], dirs: &[&Path]) -> Value {
    let mut cmd = culprit();
    cmd.arg("sql")
        .args(args)
        .args(["--format", "json"])
        .args(dirs);
    let out = run_ok(&mut cmd);
    common::validate_json_schema("sql", &String::from_utf8_lossy(&out.stdout));
    json(&out)
}

/// (event, function, sym_addr of an address without a symbol).
type Key = (String, String, Option<String>);
/// Per key: (samples, period).
type Rows = BTreeMap<Key, (u64, u64)>;

fn add(rows: &mut Rows, key: Key, samples: u64, period: u64) {
    let e = rows.entry(key).or_default();
    e.0 += samples;
    e.1 += period;
}

/// `culprit report --unknown address --sort sym --no-children --format json -i FILE`: one
/// row per unnamed address, as `sql --top-functions` gives them.
fn report(file: &Path) -> Value {
    let mut cmd = culprit();
    cmd.args([
        "report",
        "--unknown",
        "address",
        "--sort",
        "sym",
        "--no-children",
        "--format",
        "json",
        "--width",
        "0",
        "-i",
    ])
    .arg(file);
    json(&run_ok(&mut cmd))
}

/// The report's rows per (event, sym, sym_addr); rows of functions of the same name in
/// different DSOs add up (the JSON of `--sort sym` does not name a resolved symbol's DSO).
fn report_rows(r: &Value) -> Rows {
    let mut rows = Rows::new();
    for row in r["rows"].as_array().unwrap() {
        let keys = &row["keys"];
        let sym = keys["sym"].as_str().unwrap().to_string();
        let addr = keys
            .get("sym_addr")
            .and_then(Value::as_str)
            .map(str::to_string);
        for (event, period) in row["period"].as_object().unwrap() {
            let samples = row["samples"][event].as_u64().unwrap();
            if samples > 0 {
                add(
                    &mut rows,
                    (event.clone(), sym.clone(), addr.clone()),
                    samples,
                    period.as_u64().unwrap(),
                );
            }
        }
    }
    rows
}

/// The report's events: name -> (samples, period).
fn report_events(r: &Value) -> BTreeMap<String, (u64, u64)> {
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["samples"].as_u64().unwrap() > 0)
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                (
                    e["samples"].as_u64().unwrap(),
                    e["period"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Index of each column of a `culprit sql` JSON result.
fn columns(v: &Value) -> BTreeMap<String, usize> {
    v["columns"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| (c["name"].as_str().unwrap().to_string(), i))
        .collect()
}

/// The rows of `--top-functions`, keyed as [`report_rows`].
fn top_rows(v: &Value) -> Rows {
    assert_eq!(v["named"], "top-functions");
    let c = columns(v);
    let mut rows = Rows::new();
    for r in v["rows"].as_array().unwrap() {
        let text = |n: &str| r[c[n]].as_str().map(str::to_string);
        add(
            &mut rows,
            (
                text("event").unwrap(),
                text("function").unwrap(),
                text("sym_addr"),
            ),
            r[c["samples"]].as_u64().unwrap(),
            r[c["period"]].as_u64().unwrap(),
        );
    }
    rows
}

/// Per event, the sums of `rows`.
fn totals(rows: &Rows) -> BTreeMap<String, (u64, u64)> {
    let mut t: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for ((e, _, _), &(s, p)) in rows {
        let x = t.entry(e.clone()).or_default();
        x.0 += s;
        x.1 += p;
    }
    t
}

/// Asserts two row sets are equal, printing the first differences.
fn assert_rows_eq(what: &str, sql: &Rows, report: &Rows) {
    if sql == report {
        return;
    }
    let mut diffs = Vec::new();
    for (k, v) in sql {
        if report.get(k) != Some(v) {
            diffs.push(format!("{k:?}: sql {v:?}, report {:?}", report.get(k)));
        }
    }
    for (k, v) in report {
        if !sql.contains_key(k) {
            diffs.push(format!("{k:?}: sql none, report {v:?}"));
        }
    }
    diffs.truncate(15);
    panic!(
        "{what}: culprit sql --top-functions differs from culprit report ({} vs {} rows):\n{}",
        sql.len(),
        report.len(),
        diffs.join("\n")
    );
}

/// Top functions per event: one export directory per file, then all the directories at once,
/// equal to culprit report on each file and to the sum of the reports.
#[test]
fn test_top_functions_equal_report_per_file_and_over_several_dirs() {
    let dir = scratch("sql-per-file");
    let mut all = Rows::new();
    let mut dirs = Vec::new();
    for (i, f) in FILES.iter().enumerate() {
        let input = fixture(f);
        let d = dir.join(format!("e{i}"));
        export(std::slice::from_ref(&input), &d, None);
        let r = report(&input);
        let want = report_rows(&r);
        assert!(!want.is_empty(), "{f}: the report has no rows");
        let got = top_rows(&sql_json(&["--top-functions"], &[&d]));
        assert_rows_eq(f, &got, &want);
        assert_eq!(totals(&got), report_events(&r), "{f}: event totals");
        for (k, v) in want {
            add(&mut all, k, v.0, v.1);
        }
        dirs.push(d);
    }
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let got = top_rows(&sql_json(&["--top-functions"], &dirs));
    assert_rows_eq("all directories", &got, &all);
}

/// One export of several files: the sum of the files' reports.
#[test]
fn test_top_functions_equal_report_on_one_export_of_several_files() {
    let dir = scratch("sql-one-dir");
    let inputs: Vec<PathBuf> = FILES.iter().map(|f| fixture(f)).collect();
    export(&inputs, &dir.join("fleet"), None);
    let mut want = Rows::new();
    for i in &inputs {
        for (k, v) in report_rows(&report(i)) {
            add(&mut want, k, v.0, v.1);
        }
    }
    let v = sql_json(&["--top-functions"], &[&dir.join("fleet")]);
    assert_eq!(v["recordings"], inputs.len());
    assert_rows_eq("one export of all files", &top_rows(&v), &want);
}

/// `--top-functions -e EVENT --limit N`: the N hottest functions of that event, ranked, with
/// their share of the event's period; the same rows as without the limit.
#[test]
fn test_top_functions_event_and_limit() {
    let dir = scratch("sql-limit");
    let input = fixture("two-events.data");
    export(std::slice::from_ref(&input), &dir, None);
    let full = sql_json(&["--top-functions"], &[&dir]);
    let c = columns(&full);
    let event = full["rows"][0][c["event"]].as_str().unwrap().to_string();
    let limited = sql_json(&["--top-functions", "-e", &event, "--limit", "2"], &[&dir]);
    let rows = limited["rows"].as_array().unwrap();
    let of_event: Vec<&Value> = full["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[c["event"]] == event.as_str())
        .collect();
    assert_eq!(rows.len(), of_event.len().min(2));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(&r, &of_event[i], "row {i}");
        assert_eq!(r[c["rank"]], i + 1);
    }
    // Periods descend, and the shares are of the event's total.
    let total: u64 = of_event
        .iter()
        .map(|r| r[c["period"]].as_u64().unwrap())
        .sum();
    for r in &of_event {
        let p = r[c["period"]].as_u64().unwrap() as f64;
        let share = r[c["percent"]].as_f64().unwrap();
        assert!((share - 100.0 * p / total as f64).abs() < 1e-4, "{r}");
    }
}

/// `--by-host`: per host and event, the samples and period of that host's recordings.
#[test]
fn test_by_host_equals_report_totals() {
    let dir = scratch("sql-by-host");
    let (a, b) = (fixture("cpu-clock-g.data"), fixture("two-events.data"));
    // Two hosts; host-b has two recordings in two directories.
    export(std::slice::from_ref(&a), &dir.join("d1"), Some("host-a"));
    export(std::slice::from_ref(&b), &dir.join("d1"), Some("host-b"));
    export(std::slice::from_ref(&a), &dir.join("d2"), Some("host-b"));
    let mut want: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    for (host, file) in [("host-a", &a), ("host-b", &b), ("host-b", &a)] {
        for (event, (s, p)) in report_events(&report(file)) {
            let e = want.entry((event, host.to_string())).or_default();
            e.0 += 1;
            e.1 += s;
            e.2 += p;
        }
    }
    let v = sql_json(&["--by-host"], &[&dir.join("d1"), &dir.join("d2")]);
    let c = columns(&v);
    let mut got = BTreeMap::new();
    for r in v["rows"].as_array().unwrap() {
        got.insert(
            (
                r[c["event"]].as_str().unwrap().to_string(),
                r[c["host"]].as_str().unwrap().to_string(),
            ),
            (
                r[c["recordings"]].as_u64().unwrap(),
                r[c["samples"]].as_u64().unwrap(),
                r[c["period"]].as_u64().unwrap(),
            ),
        );
    }
    assert_eq!(got, want);
}

/// The report's self period per (event, dso, function), `[unknown]` addresses summed per DSO.
fn dso_sym_periods(file: &Path) -> BTreeMap<(String, String, String), u64> {
    let mut cmd = culprit();
    cmd.args([
        "report",
        "--sort",
        "dso,sym",
        "--no-children",
        "--format",
        "json",
        "-i",
    ])
    .arg(file);
    let r = json(&run_ok(&mut cmd));
    let mut out = BTreeMap::new();
    for row in r["rows"].as_array().unwrap() {
        let dso = row["keys"]["dso"].as_str().unwrap().to_string();
        let sym = row["keys"]["sym"].as_str().unwrap().to_string();
        for (event, p) in row["period"].as_object().unwrap() {
            if row["samples"][event].as_u64().unwrap() > 0 {
                *out.entry((event.clone(), dso.clone(), sym.clone()))
                    .or_default() += p.as_u64().unwrap();
            }
        }
    }
    out
}

/// `--diff A B` between two hosts: each function's share of the event's period on each side
/// and the change, computed here from the two files' reports.
#[test]
fn test_diff_between_hosts_equals_the_reports_shares() {
    let dir = scratch("sql-diff");
    let (a, b) = (fixture("cpu-clock-g.data"), fixture("exec-g.data"));
    export(std::slice::from_ref(&a), &dir, Some("old"));
    export(std::slice::from_ref(&b), &dir, Some("new"));
    let (pa, pb) = (dso_sym_periods(&a), dso_sym_periods(&b));
    let total = |p: &BTreeMap<(String, String, String), u64>, e: &str| -> u64 {
        p.iter().filter(|(k, _)| k.0 == e).map(|(_, v)| v).sum()
    };
    let v = sql_json(&["--diff", "old", "new"], &[&dir]);
    let c = columns(&v);
    let rows = v["rows"].as_array().unwrap();
    let mut keys: Vec<_> = pa.keys().chain(pb.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    assert_eq!(rows.len(), keys.len(), "{v}");
    for r in rows {
        let k = (
            r[c["event"]].as_str().unwrap().to_string(),
            r[c["dso"]].as_str().unwrap().to_string(),
            r[c["function"]].as_str().unwrap().to_string(),
        );
        let (x, y) = (
            pa.get(&k).copied().unwrap_or(0),
            pb.get(&k).copied().unwrap_or(0),
        );
        assert_eq!(r[c["period_a"]].as_u64(), Some(x), "{k:?}");
        assert_eq!(r[c["period_b"]].as_u64(), Some(y), "{k:?}");
        let share = |p: u64, t: u64| {
            if t == 0 {
                0.0
            } else {
                100.0 * p as f64 / t as f64
            }
        };
        let (sa, sb) = (share(x, total(&pa, &k.0)), share(y, total(&pb, &k.0)));
        let close = |col: &str, want: f64| {
            let got = r[c[col]].as_f64().unwrap();
            assert!((got - want).abs() < 2e-4, "{k:?} {col}: {got} vs {want}");
        };
        close("share_a", sa);
        close("share_b", sb);
        close("delta", sb - sa);
    }
    // Rows go by |delta|, biggest first, per event.
    let deltas: Vec<f64> = rows
        .iter()
        .filter(|r| r[c["event"]] == rows[0][c["event"]])
        .map(|r| r[c["delta"]].as_f64().unwrap().abs())
        .collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "{deltas:?}");
}

/// Runs `culprit sql ARGS…` and returns (exit code, stderr).
fn sql_fails(args: &[&str]) -> (i32, String) {
    let out = culprit().arg("sql").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn test_errors_name_the_problem() {
    let dir = scratch("sql-errors");
    let good = dir.join("good");
    export(&[fixture("cpu-clock-g.data")], &good, None);
    let good = good.to_str().unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty = empty.to_str().unwrap();
    let tables = dir.join("tables");
    for t in ["hosts", "events", "frames", "stacks", "samples"] {
        std::fs::create_dir_all(tables.join(t)).unwrap();
    }
    let tables = tables.to_str().unwrap();
    let nosuch = dir.join("nosuch");
    let nosuch = nosuch.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["SELEC 1", good], "query failed: SQL error"),
        (
            &["SELECT * FROM nosuch", good],
            "the tables are hosts, events, frames, stacks, samples",
        ),
        (&["SELECT nosuch FROM samples", good], "query failed"),
        (&["SELECT 1", nosuch], "no such directory"),
        (
            &["SELECT 1", empty],
            "not a culprit Parquet export: it has no hosts/ directory",
        ),
        (&["SELECT 1", tables], "no hosts data"),
        (&["SELECT 1"], "no export directory given"),
        (&[], "culprit sql needs a query"),
        (
            &["--top-functions", "-e", "nosuch", good],
            "-e nosuch: no such event",
        ),
        (
            &["--diff", "nosuch", "other", good],
            "'nosuch' is no host name",
        ),
        (
            &["--limit", "3", "SELECT 1", good],
            "-e and --limit go with a named query",
        ),
        (
            &["--by-host", "--limit", "3", good],
            "--limit goes with --top-functions or --diff",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = sql_fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The same recording given twice would count twice.
    let (code, err) = sql_fails(&["SELECT 1", good, good]);
    assert_eq!(code, 2);
    assert!(err.contains("is in both"), "{err}");
}

/// Text is an aligned table with a header line; CSV has a header row; names are escaped;
/// --show-query prints the SQL that runs.
#[test]
fn test_text_csv_escaping_and_show_query() {
    let dir = scratch("sql-text");
    export(
        &[fixture("cpu-clock-g.data")],
        &dir,
        Some("evil\u{1b}[31mhost,\"x\""),
    );
    let q = "SELECT host, COUNT(*) AS samples, SUM(period) AS period FROM samples GROUP BY host";
    let out = run_ok(culprit().args(["sql", q]).arg(&dir).args(["--width", "0"]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("evil\\x1b[31mhost"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("# culprit sql: 1 row over 1 recording in "),
        "{text}"
    );
    let header = lines.iter().find(|l| l.contains("samples")).unwrap();
    let row = lines.iter().find(|l| l.contains("evil")).unwrap();
    // Numbers right-aligned under their header.
    let r = report(&fixture("cpu-clock-g.data"));
    let (samples, period) = report_events(&r)["cpu-clock"];
    let row = row.trim_end();
    let period_at = row.len() - period.to_string().len();
    assert_eq!(&row[period_at..], period.to_string(), "{text}");
    let before = row[..period_at].trim_end();
    assert!(before.ends_with(&samples.to_string()), "{text}");
    let end_of = |word: &str| header.find(word).unwrap() + word.len();
    assert_eq!(end_of("period"), row.len(), "{text}");
    assert_eq!(end_of("samples"), before.len(), "{text}");
    let out = run_ok(culprit().args(["sql", q, "--format", "csv"]).arg(&dir));
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        csv,
        format!("host,samples,period\n\"evil\\x1b[31mhost,\"\"x\"\"\",{samples},{period}\n")
    );
    let out = run_ok(culprit().args(["sql", "--top-functions", "--limit", "5", "--show-query"]));
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(
        shown.contains("FROM samples") && shown.contains("rank <= 5"),
        "{shown}"
    );
    // The shown SQL runs as a plain query (after `--`: it starts with a `--` comment) and
    // gives the named query's rows.
    let out = run_ok(
        culprit()
            .args(["sql", "--format", "json", "--", shown.trim()])
            .arg(&dir),
    );
    common::validate_json_schema("sql", &String::from_utf8_lossy(&out.stdout));
    let plain = json(&out);
    let named = sql_json(&["--top-functions", "--limit", "5"], &[&dir]);
    assert_eq!(plain["rows"], named["rows"]);
    assert_eq!(plain["named"], Value::Null);
}

/// The AMD IBS fixtures (fetch and op samples of Zen 2, 3 and 4).
const IBS_FIXTURES: &[&str] = &[
    "ibs-fam17h_m31_zen2.data",
    "ibs-fam19h_m01_zen3.data",
    "ibs-fam19h_m11_zen4.data",
    "ibs-fam19h_m21_zen3.data",
];

/// The precise columns of every sample with the file it came from (the same query is
/// `PRECISE` in tests/fleet_spark.py).
const PRECISE_SQL: &str = "SELECT h.file, s.time, s.tid, s.event, s.data_addr, s.phys_addr, \
     s.weight, s.data_src, s.dc_miss, s.dtlb_miss, s.branch_taken, s.branch_mispredicted, \
     s.ibs_op_latency, s.ibs_dc_miss_latency, s.ibs_fetch_latency \
     FROM samples s JOIN hosts h ON h.file_id = s.file_id \
     ORDER BY h.file, s.time, s.tid, s.event";

/// A query's rows as objects keyed by column name.
fn row_objects(v: &Value) -> Vec<serde_json::Map<String, Value>> {
    let c = columns(v);
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| c.iter().map(|(n, &i)| (n.clone(), r[i].clone())).collect())
        .collect()
}

/// A column that Parquet stores as INT64 but means an unsigned value, as script prints it.
fn unsigned(v: &Value) -> Value {
    match v.as_i64() {
        Some(i) if i < 0 => Value::from(i as u64),
        _ => v.clone(),
    }
}

/// The precise fields of the IBS fixtures, queried with SQL from one export of all four,
/// equal what `culprit script` decodes, sample by sample (exact IBS register fields: latencies,
/// data and physical addresses, DC/DTLB miss, branch taken/mispredicted, data source).
#[test]
fn test_precise_fields_round_trip_on_the_ibs_fixtures() {
    let dir = scratch("sql-precise").join("ibs");
    let inputs: Vec<PathBuf> = IBS_FIXTURES.iter().map(|f| fixture(f)).collect();
    export(&inputs, &dir, None);
    let rows = row_objects(&sql_json(&[PRECISE_SQL], &[&dir]));
    let mut checked = BTreeMap::<&str, u64>::new();
    for input in &inputs {
        let name = input.file_name().unwrap().to_string_lossy();
        let file = input.to_str().unwrap();
        let mine: Vec<_> = rows.iter().filter(|r| r["file"] == file).collect();
        let script = common::script_json(input);
        assert_eq!(mine.len(), script.len(), "{name}: samples");
        // Times are unique in these files: the query's order is script's.
        for (n, (row, s)) in mine.iter().zip(&script).enumerate() {
            let at = format!("{name}: sample {n}");
            assert_eq!((&row["time"], &row["tid"]), (&s["time"], &s["tid"]), "{at}");
            let (want, kinds) = common::expected_ibs_precise_columns(s);
            for (k, v) in &want {
                let got = match *k {
                    "data_addr" | "phys_addr" | "data_src" => unsigned(&row[*k]),
                    _ => row[*k].clone(),
                };
                assert_eq!(&got, v, "{at}: {k}");
            }
            for k in kinds {
                *checked.entry(k).or_default() += 1;
            }
        }
    }
    for k in common::IBS_PRECISE_KINDS {
        assert!(
            checked.get(k).copied().unwrap_or(0) > 0,
            "no {k} sample checked: {checked:?}"
        );
    }
}

/// Whether pyspark and java are here; on CI (or with CULPRIT_REQUIRE_SPARK=1) they must be.
fn require_spark(test: &str) -> bool {
    let pyspark = Command::new("python3")
        .args(["-c", "import pyspark"])
        .output()
        .is_ok_and(|o| o.status.success());
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if pyspark && java {
        return true;
    }
    let why = match (pyspark, java) {
        (false, false) => "neither pyspark (pip install pyspark) nor java is installed",
        (false, true) => "pyspark is not installed (python3 -m pip install pyspark)",
        _ => "java is not installed (apt-get install openjdk-17-jre-headless)",
    };
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0")
        || std::env::var("CULPRIT_REQUIRE_SPARK").as_deref() == Ok("1")
    {
        panic!(
            "{test}: {why}, but CI / CULPRIT_REQUIRE_SPARK=1 requires Spark (.ci/run installs it)"
        );
    }
    common::skip(test, why)
}

/// Apache Spark (pyspark, local mode) reads the exports of several recordings in several
/// directories and computes the top functions by period per event
/// (crates/cli/tests/fleet_spark.py, the Spark SQL of docs/fleet.md): equal to `culprit sql
/// --top-functions` and to the sum of `culprit report` on the perf.data files.
#[test]
fn test_spark_top_functions_equal_sql_and_report() {
    if !require_spark("test_spark_top_functions_equal_sql_and_report") {
        return;
    }
    let dir = scratch("sql-spark");
    let files = [
        "cpu-clock-g.data",
        "two-events.data",
        "system-wide-g.data",
        "real-perf-data/google-perf_data_converter/perf.data.busy.1-3.8",
        "ibs-fam19h_m11_zen4.data",
        "ibs-fam17h_m31_zen2.data",
    ];
    let mut want = Rows::new();
    let mut dirs = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let input = fixture(f);
        // Two directories, two hosts each.
        let d = dir.join(format!("region{}", i % 2));
        export(std::slice::from_ref(&input), &d, Some(&format!("host{i}")));
        for (k, v) in report_rows(&report(&input)) {
            add(&mut want, k, v.0, v.1);
        }
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let dir_refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let sql = top_rows(&sql_json(&["--top-functions"], &dir_refs));
    assert_rows_eq("culprit sql vs report", &sql, &want);

    let script = repo_root().join("crates/cli/tests/fleet_spark.py");
    let out = run_ok(
        Command::new("python3")
            .arg(&script)
            .arg("--precise")
            .args(&dirs),
    );
    let v = json(&out);
    let mut spark = Rows::new();
    for r in v["rows"].as_array().unwrap() {
        add(
            &mut spark,
            (
                r["event"].as_str().unwrap().to_string(),
                r["function"].as_str().unwrap().to_string(),
                r["sym_addr"].as_str().map(str::to_string),
            ),
            r["samples"].as_u64().unwrap(),
            r["period"].as_u64().unwrap(),
        );
    }
    assert!(spark.len() > 10, "{v}");
    assert_rows_eq("Spark vs report", &spark, &want);

    // The precise fields, sample by sample: Spark reads what DataFusion reads.
    let sql_precise = row_objects(&sql_json(&[PRECISE_SQL], &dir_refs));
    let spark_precise: Vec<serde_json::Map<String, Value>> = v["precise"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect();
    let ibs_ops = sql_precise
        .iter()
        .filter(|r| r["ibs_op_latency"] != Value::Null)
        .count();
    assert!(ibs_ops > 10, "few IBS op samples: {ibs_ops}");
    assert_eq!(sql_precise.len(), spark_precise.len(), "precise rows");
    for (n, (a, b)) in sql_precise.iter().zip(&spark_precise).enumerate() {
        assert_eq!(a, b, "precise row {n}: culprit sql vs Spark");
    }
}
