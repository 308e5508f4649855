//! `culprit stat --topdown`'s model: the Top-Down tree of a plan's summed counts
//! (`crate::topdown` computes it), with the plan's groups and the event rows.

use serde::Serialize;

use super::{aggregate, EventInfo, RunFacts, StatReport};
use crate::topdown::{self, Count, Ev, Level1, Model, Node, Plan, Topdown, TopdownError};

/// One event of a Top-Down group, with its encoding (so others can count the same thing).
#[derive(Debug, Clone, Serialize)]
pub struct GroupEvent {
    /// Its name.
    pub name: String,
    /// `perf_event_attr.type`.
    pub attr_type: u32,
    /// `perf_event_attr.config` in hex (`0x1000001a0`); perf accepts it as `r1000001a0`.
    pub config: String,
}

/// The `topdown` object of the stat report.
#[derive(Debug, Clone, Serialize)]
pub struct TopdownOut {
    /// The model's name.
    pub model: String,
    /// 1 or 2.
    pub level: u8,
    /// Dispatch slots per cycle.
    pub slots_per_cycle: u32,
    /// General-purpose counters that count together.
    pub usable_counters: usize,
    /// Which thresholds flag nodes.
    pub thresholds: String,
    /// How the groups were counted: "multiplexed" (one run, groups time-shared), "at_once"
    /// (one run, every group on a counter) or "no_multiplex" (one run per group).
    pub mode: String,
    /// The counter groups.
    pub groups: Vec<Vec<GroupEvent>>,
    /// The level-1 fractions.
    pub level1: Level1,
    /// The tree.
    pub tree: Vec<Node>,
    /// The critical bottleneck's name.
    pub bottleneck: Option<String>,
}

impl TopdownOut {
    /// The `topdown` object of a computed plan.
    pub fn new(plan: &Plan, counters: usize, mode: &str, td: &Topdown) -> TopdownOut {
        let model = plan.model;
        TopdownOut {
            model: model.name().to_string(),
            level: plan.level,
            slots_per_cycle: model.width(),
            usable_counters: counters,
            thresholds: model.thresholds_label().to_string(),
            mode: mode.to_string(),
            groups: plan
                .groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|e| GroupEvent {
                            name: e.name.clone(),
                            attr_type: e.attr_type,
                            config: format!("{:#x}", e.config),
                        })
                        .collect()
                })
                .collect(),
            level1: td.level1,
            tree: td.tree.clone(),
            bottleneck: td.bottleneck.clone(),
        }
    }
}

/// How `plan`'s groups are counted: `no_multiplex` (one run per group, as asked), else
/// `at_once` when every group fits on the counters together, else `multiplexed`.
pub fn mode(plan: &Plan, no_multiplex: bool) -> &'static str {
    if no_multiplex {
        "no_multiplex"
    } else if plan.fits_at_once() {
        "at_once"
    } else {
        "multiplexed"
    }
}

/// The stat report of `plan`'s counts summed over all runs (`sums[g][e]`: ratios of sums
/// are ratios over the whole measured time), on `counters` usable counters, counted in
/// `mode`, `repeat` times.
pub fn report(
    plan: &Plan,
    counters: usize,
    no_multiplex: bool,
    repeat: u32,
    sums: &[Vec<Count>],
    facts: RunFacts,
) -> StatReport {
    let td = topdown::compute(plan, sums);
    let infos: Vec<Vec<EventInfo>> = plan
        .groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|e| EventInfo {
                    name: e.name.clone(),
                    scale: 1.0,
                    unit: None,
                    uncore: false,
                })
                .collect()
        })
        .collect();
    let readings: Vec<Vec<Option<Count>>> = sums
        .iter()
        .map(|g| g.iter().copied().map(Some).collect())
        .collect();
    let events = aggregate(&infos, std::slice::from_ref(&readings));
    let mut report = StatReport::new(events, facts, Some(0));
    report.runs = repeat;
    report.topdown = Some(TopdownOut::new(
        plan,
        counters,
        mode(plan, no_multiplex),
        &td,
    ));
    report
}

/// A Zen 5 level-2 Top-Down on 5 counters, multiplexed, of a pointer-chasing loop's counts
/// (memory-bound: backend 86 %, the critical bottleneck `memory`): the one example the
/// model's and the renderers' tests share.
pub fn pointer_chase_example() -> Result<(Plan, TopdownOut), TopdownError> {
    let plan = topdown::plan(Model::Zen5, 2, 5)?;
    let rate = |k: Ev| -> f64 {
        use Ev::*;
        match k {
            Cycles => 1.0,
            AmdFeNoOps => 0.32,
            AmdFeNoOpsCmask => 0.024,
            AmdBackendStalls => 6.88,
            AmdSmtContention => 0.16,
            AmdRetOps => 0.40,
            AmdOpsDispatched => 0.64,
            AmdBrMisp => 0.001,
            AmdRestarts => 0.0002,
            AmdNotComplete => 0.9,
            AmdLoadNotComplete => 0.837,
            AmdUcodeOps => 0.004,
            _ => 0.0,
        }
    };
    let n = plan.groups.len() as f64;
    let counts: Vec<Vec<Count>> = plan
        .groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|e| Count {
                    value: (rate(e.key) * 3e9 / n) as u64,
                    enabled_ns: 1_000_000_000,
                    running_ns: (1e9 / n) as u64,
                })
                .collect()
        })
        .collect();
    let td = topdown::compute(&plan, &counts);
    let out = TopdownOut::new(&plan, 5, "multiplexed", &td);
    Ok((plan, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_json_topdown_has_the_issue_schema() {
        let (_, out) = pointer_chase_example().unwrap();
        let v = serde_json::to_value(out).unwrap();
        for k in [
            "frontend_bound",
            "bad_speculation",
            "backend_bound",
            "retiring",
            "smt_contention",
        ] {
            let f = v["level1"][k].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&f), "{k} {f}");
        }
        assert_eq!(v["bottleneck"], "memory");
        let be = v["tree"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "backend_bound")
            .unwrap();
        for k in ["name", "value", "flagged", "reliability", "children"] {
            assert!(be.get(k).is_some(), "{k} in {be}");
        }
        assert_eq!(be["children"][0]["name"], "memory");
        assert_eq!(v["groups"][0][0]["name"], "ls_not_halted_cyc");
        assert_eq!(v["groups"][0][0]["config"], "0x76");
        assert_eq!(v["slots_per_cycle"], 8);
    }

    /// The report of summed counts: one row per planned event, the repeat count as runs,
    /// the tree from the sums.
    #[test]
    fn test_report_rows_follow_the_plan() {
        let (plan, example) = pointer_chase_example().unwrap();
        let sums: Vec<Vec<Count>> = plan
            .groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|_| Count {
                        value: 10,
                        enabled_ns: 100,
                        running_ns: 50,
                    })
                    .collect()
            })
            .collect();
        let facts = RunFacts {
            elapsed_runs: vec![1e6, 3e6],
            ..RunFacts::default()
        };
        let r = report(&plan, 5, true, 3, &sums, facts);
        assert_eq!(r.runs, 3);
        assert_eq!(r.elapsed_ns, 2_000_000);
        let planned: usize = plan.groups.iter().map(Vec::len).sum();
        assert_eq!(r.events.len(), planned);
        assert_eq!(r.events[0].scaled, Some(20.0));
        let td = r.topdown.unwrap();
        assert_eq!(td.mode, "no_multiplex");
        assert_eq!(td.groups.len(), example.groups.len());
    }
}
