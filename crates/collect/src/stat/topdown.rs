//! `culprit stat --topdown`: pick this CPU's Top-Down model, plan its counter groups
//! (`culprit_analysis::topdown`), count them (all at once, multiplexed, or one run per group),
//! and compute the tree; and the level-1 sampling events of `culprit record --topdown`.

use std::path::Path;

use culprit_analysis::topdown::{self, Count, EventDef, Level1, Model, Node, Plan, Topdown};
use serde::Serialize;

use super::{aggregate, StatError, StatReport};
use crate::count::{self, CountOptions, Reading};
use crate::events::EventSpec;
use crate::probe;
use crate::sysfs::{self, CpuIdentity};
use crate::target::Target;

/// Why Top-Down cannot run here, when the hardware PMU is missing (`verb`: `stat` or
/// `record`).
fn no_pmu_message(verb: &str) -> String {
    let flag = if verb == "stat" {
        "--topdown".to_string()
    } else {
        format!("{verb} --topdown")
    };
    format!(
        "{flag} needs a hardware PMU, and this machine has none usable ({}: the generic \
         `instructions` event does not open) — typical of VMs without a virtual PMU. Run it on \
         bare metal or a VM that exposes the PMU; software counters still work here, e.g. \
         `culprit stat -e task-clock,page-faults,context-switches -- CMD`",
        if Path::new("/sys/bus/event_source/devices/cpu").exists() {
            "the cpu PMU exists but refuses events"
        } else {
            "no /sys/bus/event_source/devices/cpu"
        }
    )
}

/// This machine's Top-Down model, with its CPU identity.
fn host_model(verb: &str) -> Result<(CpuIdentity, Model), StatError> {
    if !probe::hardware_pmu_available() {
        return Err(StatError::Invalid(no_pmu_message(verb)));
    }
    let cpu = sysfs::cpu_identity().ok_or_else(|| {
        StatError::Invalid(
            "--topdown: cannot identify the CPU from /proc/cpuinfo (vendor, family, model)".into(),
        )
    })?;
    let pmu_events = Path::new("/sys/bus/event_source/devices/cpu/events");
    let model = topdown::model_for(
        &cpu.vendor,
        cpu.family,
        cpu.model,
        pmu_events.join("topdown-fe-bound").exists(),
        pmu_events.join("topdown-heavy-ops").exists(),
    )?;
    Ok((cpu, model))
}

fn spec_of(e: &EventDef) -> EventSpec {
    EventSpec::new(e.name.clone(), Some("cpu"), e.attr_type, e.config)
}

/// The level-1 events `culprit record --topdown` samples on this machine (each its own
/// sampling event; the periods recorded with every sample estimate the counts per function).
pub fn sampling_specs() -> Result<Vec<EventSpec>, StatError> {
    let (_, model) = host_model("record")?;
    Ok(topdown::sampling_events(model)?
        .iter()
        .map(spec_of)
        .collect())
}

/// Options of `culprit stat --topdown`.
#[derive(Debug, Clone)]
pub struct TopdownOptions {
    /// Whom to count.
    pub target: Target,
    /// 1 or 2.
    pub level: u8,
    /// Run the command once per counter group instead of multiplexing them.
    pub no_multiplex: bool,
    /// Runs (each: one run, or one per group).
    pub repeat: u32,
}

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

/// Counts this CPU's Top-Down groups on the target and computes the tree: the stat report
/// with its `topdown` object set.
pub fn run(opts: &TopdownOptions, warn: &mut dyn FnMut(String)) -> Result<StatReport, StatError> {
    if opts.no_multiplex && opts.target.command().is_none() {
        return Err(StatError::Invalid(
            "--no-multiplex reruns the command once per counter group: give a command (it cannot re-run -p targets)".into(),
        ));
    }
    if opts.repeat == 0 {
        return Err(StatError::Invalid(
            "-r: the number of runs must be at least 1".into(),
        ));
    }
    let (cpu, model) = host_model("stat")?;
    // How many general-purpose counters really count (6 on Zen, but 5 on our VMs).
    let counters = probe::usable_counters(8).usable;
    let plan = topdown::plan(model, opts.level, counters)?;
    let groups: Vec<Vec<EventSpec>> = plan
        .groups
        .iter()
        .map(|g| g.iter().map(spec_of).collect())
        .collect();
    let mode = if opts.no_multiplex {
        "no_multiplex"
    } else if plan.fits_at_once() {
        "at_once"
    } else {
        "multiplexed"
    };
    // sums[g][e] over all runs (ratios of sums = ratios over the whole measured time).
    let mut sums: Vec<Vec<Reading>> = groups
        .iter()
        .map(|g| vec![Reading::default(); g.len()])
        .collect();
    let mut elapsed = Vec::new();
    let mut exit = None;
    let mut interrupted = false;
    'runs: for _ in 0..opts.repeat {
        // One run for all groups, or (--no-multiplex) one run per group.
        let sets: Vec<Vec<usize>> = if opts.no_multiplex {
            (0..groups.len()).map(|g| vec![g]).collect()
        } else {
            vec![(0..groups.len()).collect()]
        };
        for set in sets {
            let copts = CountOptions {
                groups: set.iter().map(|&g| groups[g].clone()).collect(),
                target: opts.target.clone(),
                interval: None,
            };
            let res = count::count(&copts, &mut |_| {}, warn)?;
            for (k, &g) in set.iter().enumerate() {
                for (e, r) in res.groups[k].iter().enumerate() {
                    let s = &mut sums[g][e];
                    s.value += r.value;
                    s.enabled_ns += r.enabled_ns;
                    s.running_ns += r.running_ns;
                }
            }
            elapsed.push(res.elapsed.as_nanos() as f64);
            exit = res.exit;
            if res.interrupted {
                interrupted = true;
                break 'runs;
            }
        }
    }
    let counts: Vec<Vec<Count>> = sums
        .iter()
        .map(|g| {
            g.iter()
                .map(|r| Count {
                    value: r.value,
                    enabled_ns: r.enabled_ns,
                    running_ns: r.running_ns,
                })
                .collect()
        })
        .collect();
    let td = topdown::compute(&plan, &counts);
    let readings: Vec<Vec<Option<Reading>>> = sums
        .iter()
        .map(|g| g.iter().copied().map(Some).collect())
        .collect();
    let events = aggregate(&groups, std::slice::from_ref(&readings));
    let mut report = StatReport::new(
        &opts.target,
        events,
        elapsed,
        Some(0),
        exit,
        interrupted,
        false,
        Some(cpu),
    );
    report.runs = opts.repeat;
    report.topdown = Some(TopdownOut::new(&plan, counters, mode, &td));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::topdown::Ev;

    /// A Zen 5 level-2 plan on 5 counters with pointer-chase-like counts, multiplexed.
    fn chase_topdown() -> (Plan, Topdown) {
        let plan = topdown::plan(Model::Zen5, 2, 5).unwrap();
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
        (plan, td)
    }

    #[test]
    fn test_json_topdown_has_the_issue_schema() {
        let (plan, td) = chase_topdown();
        let v = serde_json::to_value(TopdownOut::new(&plan, 5, "multiplexed", &td)).unwrap();
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
}
