//! What `stat -M` counts for a set of table metrics, and their values afterwards: the
//! events each metric needs, put into perf's groups (one group per metric, unless the
//! table's MetricConstraint says not to group), and each metric evaluated on the counts of
//! its own events.
//!
//! Pure: the caller opens the events (perf's spelling from [`event_string`]) and hands back
//! what each one counted.

use std::collections::BTreeMap;

use culprit_pmu_events::Metric as TableMetric;
use serde::Serialize;

use super::table::{scale_unit, Counts, MetricError, Metrics};

/// perf's tool events: not opened, their values come from the run itself (seconds).
pub const TOOL_EVENTS: &[&str] = &["duration_time", "user_time", "system_time"];

/// One metric of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedMetric {
    /// MetricName.
    pub name: String,
    /// The table PMU (`default_core`, `cpu_core`, …).
    pub pmu: String,
    /// MetricGroup (`;`-separated).
    pub groups: String,
    /// The events it reads (expression spelling), tool events included.
    pub events: Vec<String>,
    /// Where each event of [`Self::events`] is counted: (group, index) in
    /// [`MetricPlan::groups`]; `None` for tool events.
    pub places: Vec<Option<(usize, usize)>>,
    /// The ScaleUnit's factor (100 for `100%`).
    pub scale: f64,
    /// The ScaleUnit's unit (`%`, `GHz`, `per_instr`), empty when the table has none.
    pub unit: String,
}

/// Events to open and the metrics computed from them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricPlan {
    /// Event groups in perf's event spelling (`cpu/UOPS_RETIRED.MS,cmask=1/`); a group of
    /// one is an ungrouped event.
    pub groups: Vec<Vec<String>>,
    /// The metrics, in the table's order.
    pub metrics: Vec<PlannedMetric>,
}

/// perf's event spelling of an expression name: the first and last `@` are `/`
/// (`cpu@UOPS_RETIRED.MS,cmask=1@` → `cpu/UOPS_RETIRED.MS,cmask=1/`).
pub fn event_string(name: &str) -> String {
    let (Some(first), Some(last)) = (name.find('@'), name.rfind('@')) else {
        return name.to_string();
    };
    let mut s = name.to_string();
    s.replace_range(first..first + 1, "/");
    if last != first {
        s.replace_range(last..last + 1, "/");
    }
    s
}

/// Whether perf groups a metric's events: MetricConstraint `NO_GROUP_EVENTS` never,
/// `…_NMI` not while the NMI watchdog holds a counter, `…_SMT` not with SMT on; and not
/// when the user asked for no groups.
fn grouped(m: &TableMetric, nmi_watchdog: bool, smt_on: bool, no_group: bool) -> bool {
    !no_group
        && match m.event_grouping {
            1 => false,
            2 => !nmi_watchdog,
            3 => !smt_on,
            _ => true,
        }
}

/// Settings of a plan besides the metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanOptions {
    /// The NMI watchdog holds a counter (`/proc/sys/kernel/nmi_watchdog`).
    pub nmi_watchdog: bool,
    /// Count every event on its own (perf's `--metric-no-group`).
    pub no_group: bool,
}

/// Plans the events of `chosen` metrics.
pub fn plan(
    metrics: &Metrics<'_>,
    chosen: &[&TableMetric],
    smt_on: bool,
    opts: PlanOptions,
) -> Result<MetricPlan, MetricError> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut single: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for m in chosen {
        let events: Vec<String> = metrics.events_needed(m)?.into_iter().collect();
        let counted: Vec<String> = events
            .iter()
            .filter(|e| !TOOL_EVENTS.contains(&e.as_str()))
            .map(|e| event_string(e))
            .collect();
        let together = grouped(m, opts.nmi_watchdog, smt_on, opts.no_group) && counted.len() > 1;
        let group_of = if together {
            // perf shares a group between metrics with the same events.
            Some(
                groups
                    .iter()
                    .position(|g| *g == counted)
                    .unwrap_or_else(|| {
                        groups.push(counted.clone());
                        groups.len() - 1
                    }),
            )
        } else {
            None
        };
        let places = events
            .iter()
            .map(|e| {
                if TOOL_EVENTS.contains(&e.as_str()) {
                    return None;
                }
                let spelled = event_string(e);
                match group_of {
                    Some(g) => groups[g].iter().position(|x| *x == spelled).map(|i| (g, i)),
                    None => Some((
                        *single.entry(spelled.clone()).or_insert_with(|| {
                            groups.push(vec![spelled]);
                            groups.len() - 1
                        }),
                        0,
                    )),
                }
            })
            .collect();
        let (scale, unit) = if m.scale_unit.is_empty() {
            (1.0, "")
        } else {
            scale_unit(m.scale_unit)
        };
        out.push(PlannedMetric {
            name: m.name.to_string(),
            pmu: m.pmu.to_string(),
            groups: m.group.to_string(),
            events,
            places,
            scale,
            unit: unit.to_string(),
        });
    }
    Ok(MetricPlan {
        groups,
        metrics: out,
    })
}

/// A metric's value after counting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricValue {
    /// MetricName.
    pub name: String,
    /// The table PMU (`default_core`; `cpu_core`/`cpu_atom` on hybrid CPUs, whose tables
    /// have each metric once per core type).
    pub pmu: String,
    /// The value with its ScaleUnit applied; `None` when perf prints none (an event did not
    /// count, a division by zero, or the expression fails).
    pub value: Option<f64>,
    /// The unit after scaling (`%`, `GHz`), empty when none.
    pub unit: String,
    /// The events that did not count (not supported or not opened).
    pub missing: Vec<String>,
}

/// Tool-event values of a run, in seconds (perf's scale in metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ToolValues {
    /// Wall time.
    pub duration_s: f64,
    /// User CPU time, when known.
    pub user_s: Option<f64>,
    /// System CPU time, when known.
    pub system_s: Option<f64>,
}

/// Evaluates each planned metric on `counted[group][index]` (`None`: did not count).
pub fn evaluate_plan(
    metrics: &Metrics<'_>,
    chosen: &[&TableMetric],
    plan: &MetricPlan,
    counted: &[Vec<Option<f64>>],
    tools: ToolValues,
) -> Vec<MetricValue> {
    plan.metrics
        .iter()
        .zip(chosen)
        .map(|(p, m)| {
            let mut counts = Counts::default();
            let mut missing = Vec::new();
            for (e, place) in p.events.iter().zip(&p.places) {
                let v = match (e.as_str(), place) {
                    ("duration_time", _) => Some(tools.duration_s),
                    ("user_time", _) => tools.user_s,
                    ("system_time", _) => tools.system_s,
                    (_, Some((g, i))) => counted.get(*g).and_then(|g| g.get(*i)).copied().flatten(),
                    (_, None) => None,
                };
                match v {
                    Some(v) => {
                        counts.values.insert(e.clone(), v);
                    }
                    None => missing.push(event_string(e)),
                }
            }
            let value = metrics
                .value(m, &counts)
                .ok()
                .filter(|v| v.is_finite())
                .map(|v| v * p.scale);
            MetricValue {
                name: p.name.clone(),
                pmu: p.pmu.clone(),
                // perf prints nothing for a metric whose events did not all count.
                value: if missing.is_empty() { value } else { None },
                unit: p.unit.clone(),
                missing,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::table::{select, MachineFacts};

    fn facts() -> MachineFacts {
        MachineFacts {
            smt_on: false,
            num_cpus: 4.0,
            num_cpus_online: 4.0,
            num_cores: 4.0,
            num_dies: 1.0,
            num_packages: 1.0,
            system_tsc_freq: 2e9,
            core_wide: true,
            slots: 0.0,
            has_pmem: false,
            cpuid: "AuthenticAMD-25-17-1".into(),
        }
    }

    #[test]
    fn spelling_of_pmu_terms() {
        assert_eq!(
            event_string("cpu@UOPS_RETIRED.MS,cmask=1@"),
            "cpu/UOPS_RETIRED.MS,cmask=1/"
        );
        assert_eq!(event_string("cpu_core@X@R"), "cpu_core/X/R");
        assert_eq!(event_string("INST_RETIRED.ANY"), "INST_RETIRED.ANY");
    }

    #[test]
    fn zen4_pipeline_l1_is_one_group_per_metric_and_evaluates() {
        let table = culprit_pmu_events::Tables::get()
            .unwrap()
            .model("x86/amdzen4")
            .unwrap();
        let facts = facts();
        let metrics = Metrics::new(&table, &facts);
        let chosen = select(&table, "PipelineL1").unwrap();
        let p = plan(&metrics, &chosen, false, PlanOptions::default()).unwrap();
        let names: Vec<&str> = p.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "backend_bound",
                "bad_speculation",
                "frontend_bound",
                "retiring",
                "smt_contention"
            ]
        );
        // frontend_bound = d_ratio(de_no_dispatch_per_slot.no_ops_from_frontend,
        // total_dispatch_slots), total_dispatch_slots = 6 * ls_not_halted_cyc.
        let fe = &p.metrics[2];
        let counted: Vec<Vec<Option<f64>>> = p
            .groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|e| match e.as_str() {
                        "de_no_dispatch_per_slot.no_ops_from_frontend" => Some(300.0),
                        "ls_not_halted_cyc" => Some(100.0),
                        _ => Some(50.0),
                    })
                    .collect()
            })
            .collect();
        let v = evaluate_plan(&metrics, &chosen, &p, &counted, ToolValues::default());
        assert_eq!(v[2].name, fe.name);
        assert_eq!(v[2].unit, "%");
        assert!((v[2].value.unwrap() - 50.0).abs() < 1e-9, "{:?}", v[2]);
        // An event that did not count: no value, and it is named.
        let mut partial = counted.clone();
        partial[fe.places[0].unwrap().0][fe.places[0].unwrap().1] = None;
        let v = evaluate_plan(&metrics, &chosen, &p, &partial, ToolValues::default());
        assert_eq!(v[2].value, None);
        assert_eq!(v[2].missing.len(), 1);
    }
}
