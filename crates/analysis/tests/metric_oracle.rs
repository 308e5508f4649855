//! culprit's metric evaluator against an independent one (`metric_eval.py`, written from
//! perf's `expr.l`/`expr.y`) on crafted counts, for every metric of every model in the
//! pmu-events tables (Intel TopdownL1–L6/`tma_*` on every model, hybrid `cpu_core`/`cpu_atom`,
//! AMD Zen 1–5 `PipelineL1/L2`, arm64 and the rest).
//!
//! Each model is evaluated on three count sets (all events counted and non-zero; some zero,
//! so divisions by zero happen; some missing, so NaN flows) and with SMT on and off, so
//! both branches of `#SMT_on` conditions are taken. A single differing value fails.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use culprit_analysis::metrics::table::{Counts, MachineFacts, Metrics};
use culprit_pmu_events::Tables;
use serde_json::{json, Map, Value};

fn fnv(text: &str, seed: u64) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325 ^ seed, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Counts for `events`: seed 0 all non-zero, seed 1 one in five zero, seed 2 one in six
/// missing.
fn crafted_counts(events: &BTreeSet<String>, seed: u64) -> Counts {
    let mut counts = Counts::default();
    for e in events {
        let h = fnv(e, seed);
        let value = match seed {
            1 if h.is_multiple_of(5) => 0.0,
            2 if h.is_multiple_of(6) => continue,
            _ => (1 + h % 1_000_000) as f64,
        };
        // duration_time reads in seconds in perf's metrics.
        let value = if e == "duration_time" {
            value / 1e5
        } else {
            value
        };
        counts.values.insert(e.clone(), value);
    }
    counts
}

fn facts(arch: &str, smt_on: bool) -> MachineFacts {
    MachineFacts {
        smt_on,
        num_cpus: 16.0,
        num_cpus_online: 16.0,
        num_cores: 8.0,
        num_dies: 1.0,
        num_packages: 1.0,
        system_tsc_freq: 2.4e9,
        core_wide: !smt_on,
        slots: 5.0,
        has_pmem: false,
        cpuid: if arch == "x86" {
            "GenuineIntel-6-55-4".into()
        } else {
            "0x410fd490".into()
        },
    }
}

fn encode(v: Result<f64, impl std::fmt::Debug>) -> Value {
    match v {
        Err(_) => json!("error"),
        Ok(v) if v.is_nan() => json!("nan"),
        Ok(v) if v.is_infinite() => json!(if v > 0.0 { "inf" } else { "-inf" }),
        Ok(v) => json!(v),
    }
}

/// The document for one model and SMT setting: metrics, and per count set culprit's values.
fn document(model: &str, smt_on: bool) -> (Value, usize) {
    let table = Tables::get().unwrap().model(model).unwrap();
    let facts = facts(table.row.arch, smt_on);
    let metrics = Metrics::new(&table, &facts);
    let mut events = BTreeSet::new();
    for m in &table.metrics {
        // Every metric's expression parses (perf's tables are all valid).
        let needed = metrics
            .events_needed(m)
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        events.extend(needed);
    }
    let mut cases = Vec::new();
    let mut evaluated = 0;
    for seed in 0..3 {
        let counts = crafted_counts(&events, seed);
        let mut results = Map::new();
        for m in &table.metrics {
            results.insert(
                format!("{}/{}", m.pmu, m.name),
                encode(metrics.value(m, &counts)),
            );
            evaluated += 1;
        }
        let counts: Map<String, Value> = counts
            .values
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        cases.push(json!({ "counts": counts, "results": results }));
    }
    let metric_list: Vec<Value> = table
        .metrics
        .iter()
        .map(|m| json!({ "pmu": m.pmu, "name": m.name, "expr": m.expr }))
        .collect();
    let doc = json!({
        "arch": table.row.arch,
        "facts": serde_json::to_value(&facts).unwrap(),
        "metrics": metric_list,
        "cases": cases,
    });
    (doc, evaluated)
}

fn python_agrees(doc: &Value) -> Result<String, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/metric_eval.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (the independent evaluator needs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

#[test]
fn every_table_metric_agrees_with_an_independent_evaluation() {
    let tables = Tables::get().unwrap();
    let mut models: Vec<&str> = tables.models().collect();
    models.sort_unstable();
    models.dedup();
    let mut failures = Vec::new();
    let mut total = 0;
    for model in &models {
        for smt_on in [true, false] {
            let (doc, evaluated) = document(model, smt_on);
            if evaluated == 0 {
                continue;
            }
            total += evaluated;
            if let Err(report) = python_agrees(&doc) {
                failures.push(format!("{model} (smt {smt_on}):\n{report}"));
            }
        }
    }
    eprintln!(
        "compared {total} metric values over {} models",
        models.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The tables hold thousands of metrics; a collapse to a few would mean a broken table.
    assert!(total > 20_000, "only {total} metric values compared");
}

#[test]
fn the_named_models_have_their_top_down_metrics() {
    let tables = Tables::get().unwrap();
    for (model, group, at_least) in [
        ("x86/skylakex", "TopdownL1", 4),
        ("x86/icelake", "TopdownL6", 1),
        ("x86/sapphirerapids", "tma_L1_group", 4),
        ("x86/alderlake", "TopdownL1", 8),
        ("x86/amdzen4", "PipelineL1", 4),
        ("x86/amdzen4", "PipelineL2", 8),
        ("x86/amdzen5", "PipelineL2", 8),
    ] {
        let table = tables.model(model).unwrap();
        let chosen = culprit_analysis::metrics::table::select(&table, group).unwrap();
        assert!(
            chosen.len() >= at_least,
            "{model} {group}: {}",
            chosen.len()
        );
    }
}

#[test]
fn top_down_groups_of_the_tables() {
    use culprit_analysis::metrics::table::topdown_groups;
    let tables = Tables::get().unwrap();
    let groups = |model: &str, level| topdown_groups(&tables.model(model).unwrap(), level);
    assert_eq!(groups("x86/skylakex", 1).as_deref(), Some("TopdownL1"));
    assert_eq!(
        groups("x86/alderlake", 2).as_deref(),
        Some("TopdownL1,TopdownL2")
    );
    assert_eq!(
        groups("x86/amdzen5", 2).as_deref(),
        Some("PipelineL1,PipelineL2")
    );
    // Zen 3's table has no pipeline-utilization metrics.
    assert_eq!(groups("x86/amdzen3", 1), None);
}
