//! `culprit stat -M`, `--metric-only` and `culprit list --metrics` end to end, on tables
//! picked with `PERF_CPUID` (as perf honours it).
//!
//! Without hardware counters the metrics' events cannot open: each shows `<not supported>`
//! with the reason, and no metric value is printed (perf prints none either). The values
//! themselves are checked on crafted counts against an independent evaluator in
//! `crates/analysis/tests/metric_oracle.rs`.

use crate::common;

use std::process::Output;

use common::{culprit, hardware_pmu, skip};
use serde_json::Value;

const SKYLAKE_X: &str = "GenuineIntel-6-55-4";
const ZEN4: &str = "AuthenticAMD-25-17-1";

fn stat(cpuid: &str, args: &[&str]) -> Output {
    culprit()
        .env("PERF_CPUID", cpuid)
        .arg("stat")
        .args(args)
        .args(["--", "true"])
        .output()
        .unwrap()
}

/// The document validates against docs/schemas/stat.schema.json (python3 jsonschema).
fn assert_schema_valid(doc: &[u8]) {
    let schema = common::repo_root().join("docs/schemas/stat.schema.json");
    let dir = common::repo_root().join("target/test-tmp/stat-metrics");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.json", std::process::id()));
    std::fs::write(&file, doc).unwrap();
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
errs = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))
sys.exit("; ".join(f"{list(e.path)}: {e.message}" for e in errs[:5]) if errs else 0)
"#;
    let checked = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .arg(&file)
        .output()
        .expect("run python3 (jsonschema)");
    assert!(
        checked.status.success(),
        "stat -M JSON does not validate: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

fn no_counters(test: &str) -> bool {
    if hardware_pmu() {
        // Here the table's events could count, so "not supported" would not be the answer.
        return skip(
            test,
            "hardware counters are present; the events would count",
        );
    }
    true
}

#[test]
fn stat_m_topdown_l1_without_counters_says_not_supported_and_prints_no_metric() {
    if !no_counters("stat_m_topdown_l1_without_counters") {
        return;
    }
    let o = stat(SKYLAKE_X, &["-M", "TopdownL1", "-e", "task-clock"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("Performance counter stats for 'true':"),
        "{err}"
    );
    // The user's event counts; Skylake-SP's TopdownL1 events do not open here.
    assert!(
        err.lines()
            .any(|l| l.contains("msec") && l.contains("task-clock")),
        "{err}"
    );
    for event in [
        "CPU_CLK_UNHALTED.THREAD",
        "IDQ_UOPS_NOT_DELIVERED.CORE",
        "UOPS_RETIRED.RETIRE_SLOTS",
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains("<not supported>") && l.trim_end().ends_with(event)),
            "{event}:\n{err}"
        );
        assert!(
            err.contains(&format!("`{event}` not counted: ")),
            "{event}:\n{err}"
        );
    }
    assert!(!err.contains(" # "), "a metric was printed:\n{err}");
    for metric in [
        "tma_frontend_bound",
        "tma_bad_speculation",
        "tma_backend_bound",
        "tma_retiring",
    ] {
        assert!(
            err.contains(&format!("metric {metric} not printed")),
            "{metric}:\n{err}"
        );
    }
}

#[test]
fn stat_m_json_names_each_metric_and_what_did_not_count() {
    if !no_counters("stat_m_json_names_each_metric") {
        return;
    }
    let o = stat(ZEN4, &["-M", "PipelineL1", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_schema_valid(&o.stdout);
    assert_eq!(j["metric_table"]["model"], "x86/amdzen4");
    let metrics = j["pmu_metrics"].as_array().unwrap();
    let names: Vec<&str> = metrics
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for want in [
        "backend_bound",
        "bad_speculation",
        "frontend_bound",
        "retiring",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    for m in metrics {
        assert!(m["value"].is_null(), "{m}");
        assert!(!m["missing"].as_array().unwrap().is_empty(), "{m}");
    }
    let fe = metrics
        .iter()
        .find(|m| m["name"] == "frontend_bound")
        .unwrap();
    assert_eq!(fe["unit"], "%");
    let missing: Vec<&str> = fe["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        missing.contains(&"de_no_dispatch_per_slot.no_ops_from_frontend")
            && missing.contains(&"ls_not_halted_cyc"),
        "{missing:?}"
    );
}

#[test]
fn metric_only_csv_has_one_column_per_metric() {
    if !no_counters("metric_only_csv") {
        return;
    }
    let o = stat(ZEN4, &["-M", "PipelineL2", "--metric-only", "-x", ";"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    assert!(header.contains(&"% frontend_bound_latency"), "{header:?}");
    assert!(header.contains(&"% backend_bound_memory"), "{header:?}");
    let values: Vec<&str> = lines.next().unwrap().split(';').collect();
    assert_eq!(values.len(), header.len());
    assert!(values.iter().all(|v| v.is_empty()), "{values:?}");
}

#[test]
fn unknown_metric_is_perfs_error() {
    let o = stat(SKYLAKE_X, &["-M", "tma_retiring,no_such_metric"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Cannot find metric or group `no_such_metric'"),
        "{err}"
    );
    let o = stat(SKYLAKE_X, &["--metric-only", "-e", "task-clock"]);
    assert!(!o.status.success(), "--metric-only without -M");
}

#[test]
fn list_metrics_json_and_text_by_group() {
    let o = culprit()
        .env("PERF_CPUID", ZEN4)
        .args(["list", "--metrics", "--format", "json", "PipelineL1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["model"], "x86/amdzen4");
    assert_eq!(j["cpuid"], ZEN4);
    let group = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "PipelineL1")
        .expect("PipelineL1 group");
    let members: Vec<&str> = group["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(members.contains(&"frontend_bound") && members.contains(&"retiring"));
    let fe = j["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "frontend_bound")
        .unwrap();
    assert!(fe["expr"].as_str().unwrap().contains("d_ratio("), "{fe}");

    let o = culprit()
        .env("PERF_CPUID", SKYLAKE_X)
        .args(["list", "--metrics", "TopdownL1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("Metrics of x86/skylakex: CPU id GenuineIntel-6-55-4 matches"),
        "{text}"
    );
    assert!(text
        .lines()
        .any(|l| l == "TopdownL1:" || l.starts_with("TopdownL1: [")));
    assert!(text.lines().any(|l| l == "  tma_retiring"), "{text}");
}
