//! `culprit record --latency` and `culprit report --latency`: the Latency column, the
//! `parallelism` key and `--parallelism=RANGE` (perf 6.15's semantics, which perf 6.1 does
//! not have: the oracle is the `phases` workload's construction — 1 s of CPU serial on the
//! main thread, then 1 s of CPU over 2 threads at once).

use crate::common;

use std::path::Path;

use serde_json::Value;

fn report_json(file: &Path, args: &[&str]) -> Value {
    let o = common::run_ok(
        common::culprit()
            .args(["report", "--format", "json", "-i"])
            .arg(file)
            .args(args),
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    common::validate_json_schema("report-latency", &text);
    serde_json::from_str(&text).unwrap()
}

/// (key, latency %, overhead %) of each row.
fn rows(json: &Value) -> Vec<(String, f64, f64)> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["keys"][0].as_str().unwrap().to_string(),
                r["latency"].as_f64().unwrap(),
                r["overhead"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn test_record_latency_weighs_the_serial_phase_by_wall_clock_time() {
    let dir = common::scratch("latency-phases");
    let prog = common::workload("phases");
    let file = dir.join("perf.data");
    common::run_ok(
        common::culprit()
            .args([
                "record",
                "-q",
                "--latency",
                "-e",
                "cpu-clock",
                "-F",
                "999",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(&prog)
            .arg("600"),
    );
    let by_thread = report_json(&file, &["--latency", "--sort", "tid"]);
    assert_eq!(by_thread["schema"], 1);
    assert_eq!(by_thread["has_switches"], true);
    let threads = rows(&by_thread);
    // The main thread has the lowest tid.
    let tid = |k: &str| k.split(':').next().unwrap().parse::<i64>().unwrap();
    let main = threads
        .iter()
        .min_by_key(|(k, ..)| tid(k))
        .expect("rows")
        .clone();
    // CPU time: the serial phase is half (the workload spins on its own CPU clock).
    assert!(
        (main.2 - 50.0).abs() < 5.0,
        "serial overhead {main:?} of {threads:?}"
    );
    // Wall-clock: at least its CPU share; 2/3 when the workers truly ran at once.
    assert!(main.1 >= main.2 - 0.5, "{main:?}");
    let hist = rows(&report_json(&file, &["--sort", "latency,parallelism"]));
    assert!(hist.iter().all(|(k, ..)| k == "1" || k == "2"), "{hist:?}");
    let parallel = hist.iter().find(|(k, ..)| k == "2");
    let parallel_overhead = parallel.map_or(0.0, |p| p.2);
    if parallel_overhead > 45.0 {
        // An idle machine: the workers overlapped for their whole phase.
        assert!(
            (main.1 - 200.0 / 3.0).abs() < 5.0,
            "serial latency {main:?}"
        );
        let p = parallel.unwrap();
        assert!((p.1 - 100.0 / 3.0).abs() < 5.0, "{hist:?}");
    } else {
        eprintln!("busy machine: the workers overlapped for {parallel_overhead:.1}% of the CPU time; the exact shares are checked by the analysis unit tests");
    }
    // --parallelism=1 keeps only samples taken with one thread running.
    let serial = rows(&report_json(
        &file,
        &["--latency", "--parallelism", "1", "--sort", "parallelism"],
    ));
    assert_eq!(serial.len(), 1);
    assert_eq!(serial[0].0, "1");
    // CSV has both columns.
    let o = common::run_ok(
        common::culprit()
            .args([
                "report",
                "--latency",
                "--format",
                "csv",
                "--sort",
                "comm",
                "-i",
            ])
            .arg(&file),
    );
    let csv = String::from_utf8_lossy(&o.stdout);
    assert!(
        csv.starts_with("latency,overhead,samples,period,comm"),
        "{csv}"
    );
    parquet_parallelism_equals_report(&file, &dir);
}

/// The Parquet export's per-sample `parallelism` column, read back by pyarrow, gives each
/// parallelism the samples `report --sort parallelism` gives it.
fn parquet_parallelism_equals_report(file: &Path, dir: &Path) {
    let test = "test_record_latency_weighs_the_serial_phase_by_wall_clock_time (parquet)";
    if !common::require_pyarrow(test) {
        return;
    }
    let out = dir.join("parquet");
    let _ = std::fs::remove_dir_all(&out);
    common::run_ok(
        common::culprit()
            .args(["export", "--format", "parquet", "-i"])
            .arg(file)
            .arg("-o")
            .arg(&out),
    );
    let script = "import sys, json, collections, pyarrow.dataset as ds\n\
        t = ds.dataset(sys.argv[1] + '/samples', format='parquet').to_table(columns=['parallelism'])\n\
        print(json.dumps(collections.Counter(str(v) for v in t.column('parallelism').to_pylist())))";
    let o = common::run_ok(
        std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&out),
    );
    let counts: Value = serde_json::from_slice(&o.stdout).unwrap();
    let report = report_json(file, &["--sort", "parallelism"]);
    let mut want = serde_json::Map::new();
    for r in report["rows"].as_array().unwrap() {
        let key = r["keys"][0].as_str().unwrap().to_string();
        want.insert(key, r["samples"].clone());
    }
    assert_eq!(counts, Value::Object(want), "parquet vs report");
}

#[test]
fn test_report_latency_without_switch_records_warns_and_counts_parallelism_one() {
    let file = common::repo_root().join("crates/cli/tests/fixtures/cpu-clock-ppp.data");
    let json = report_json(&file, &["--latency", "--sort", "comm"]);
    assert_eq!(json["has_switches"], false);
    for (_, latency, overhead) in rows(&json) {
        assert!((latency - overhead).abs() < 1e-9);
    }
    let o = common::culprit()
        .args(["report", "--latency", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("record --latency"));
}
