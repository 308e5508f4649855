//! culprit's hand-written Zen 4 / Zen 5 Top-Down (`analysis::topdown`) against the
//! pmu-events tables' own `PipelineL1`/`PipelineL2` metrics, evaluated by
//! `analysis::metrics` on the same counts: every node must equal its JSON metric.
//!
//! Counts are one unmultiplexed run (running = enabled), the case where both read the same
//! numbers; the JSON's `cpu@…\,cmask\=0xN@` event is the hand-written plan's
//! `cpu/event=0x1a0,umask=0x1,cmask=N/`.

use culprit_analysis::metrics::table::{select, Counts, MachineFacts, Metrics};
use culprit_analysis::topdown::{self, Count, Ev, Model, Node};

fn facts() -> MachineFacts {
    MachineFacts {
        smt_on: true,
        num_cpus: 2.0,
        num_cpus_online: 2.0,
        num_cores: 1.0,
        num_dies: 1.0,
        num_packages: 1.0,
        system_tsc_freq: 0.0,
        core_wide: false,
        slots: 0.0,
        has_pmem: false,
        cpuid: String::new(),
    }
}

/// Per-cycle rates of a memory-bound run (a pointer chase), 3e9 cycles.
const RATES: &[(Ev, f64)] = &[
    (Ev::AmdFeNoOps, 0.32),
    (Ev::AmdFeNoOpsCmask, 0.024),
    (Ev::AmdBackendStalls, 4.1),
    (Ev::AmdSmtContention, 0.16),
    (Ev::AmdRetOps, 0.40),
    (Ev::AmdOpsDispatched, 0.64),
    (Ev::AmdBrMisp, 0.001),
    (Ev::AmdRestarts, 0.0002),
    (Ev::AmdNotComplete, 0.90),
    (Ev::AmdLoadNotComplete, 0.837),
    (Ev::AmdUcodeOps, 0.004),
];

fn value_of(key: Ev) -> u64 {
    let rate = if key == Ev::Cycles {
        1.0
    } else {
        RATES.iter().find(|(k, _)| *k == key).map_or(0.0, |r| r.1)
    };
    (rate * 3e9) as u64
}

/// The JSON metric name of each hand-written node (Zen 5 renamed the level-2 ones).
fn json_name(model: Model, node: &str, parent: Option<&str>) -> String {
    let Some(parent) = parent else {
        return node.to_string();
    };
    let joint = match (model, parent) {
        (Model::Zen5, "backend_bound" | "frontend_bound") => "_by_",
        (Model::Zen5, _) => "_from_",
        _ => "_",
    };
    format!("{parent}{joint}{node}")
}

fn check(model: Model, table_model: &str) {
    let plan = topdown::plan(model, 2, 64).unwrap();
    let counts: Vec<Vec<Count>> = plan
        .groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|e| Count {
                    value: value_of(e.key),
                    enabled_ns: 1_000_000_000,
                    running_ns: 1_000_000_000,
                })
                .collect()
        })
        .collect();
    let tree = topdown::compute(&plan, &counts).tree;

    let table = culprit_pmu_events::Tables::get()
        .unwrap()
        .model(table_model)
        .unwrap();
    let facts = facts();
    let metrics = Metrics::new(&table, &facts);
    let width = model.width();
    let mut json_counts = Counts::default();
    for g in &plan.groups {
        for e in g {
            let name = if e.key == Ev::AmdFeNoOpsCmask {
                format!("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x{width:x}@")
            } else {
                e.name.clone()
            };
            json_counts.values.insert(name, value_of(e.key) as f64);
        }
    }
    let chosen = select(&table, "PipelineL1,PipelineL2").unwrap();
    let mut compared = 0;
    let mut visit = |n: &Node, parent: Option<&str>| {
        let name = json_name(model, &n.name, parent);
        let m = chosen
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{table_model}: no JSON metric {name}"));
        let v = metrics.value(m, &json_counts).unwrap();
        assert!(
            (v - n.value).abs() <= 1e-12 * v.abs().max(1.0),
            "{table_model} {name}: JSON {v}, hand-written {}",
            n.value
        );
        compared += 1;
    };
    for n in &tree {
        visit(n, None);
        for c in &n.children {
            visit(c, Some(&n.name));
        }
    }
    // Five level-1 nodes, eight level-2 children.
    assert_eq!(compared, 13, "{table_model}");
}

#[test]
fn zen4_top_down_equals_the_tables_pipeline_metrics() {
    check(Model::Zen4, "x86/amdzen4");
}

#[test]
fn zen5_top_down_equals_the_tables_pipeline_metrics() {
    check(Model::Zen5, "x86/amdzen5");
}
