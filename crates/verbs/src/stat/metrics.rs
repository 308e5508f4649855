//! `culprit stat -M METRIC|GROUP[,…]` and `--metric-only`: the CPU's pmu-events metrics.
//! The plan (events and groups) and the values come from `culprit_analysis::metrics`,
//! counting from `culprit_collect::stat` (rows by `culprit_analysis::stat`); this module
//! joins them, and `culprit_analysis::stat::metrics_render` lays them out as perf 6.1 does.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use culprit_analysis::metrics::plan::{self, MetricPlan, PlanOptions, ToolValues};
use culprit_analysis::metrics::table::{self, MachineFacts, Metrics};
use culprit_collect::events::{self, tables};
use culprit_collect::stat::{self, StatOptions as CountOptions};
use culprit_collect::sysfs;

use super::{exit_code, OpenOutput, Sink, StatFormat, StatOptions};
use culprit_analysis::stat::metrics_render::{csv_lines, text_lines, Outcome};

/// Where each planned event went: its row in the report, or why it is not counted.
type Placement = Vec<Vec<Result<usize, String>>>;

/// `spec` when it opens here (or fails only for permissions, which counting reports); else
/// why not, so that one refused event (perf's `<not supported>`) does not stop the others.
fn opens(spec: events::EventSpec) -> Result<events::EventSpec, String> {
    match culprit_collect::support::try_open_event(&spec) {
        Ok(()) => Ok(spec),
        Err(errno) => {
            let e = std::io::Error::from_raw_os_error(errno);
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Ok(spec)
            } else {
                Err(format!(
                    "<not supported>: the kernel refuses to open it ({e})"
                ))
            }
        }
    }
}

/// The counting groups for the plan (after the user's `-e` groups), and where each planned
/// event lands among the report's rows.
fn open_plan(
    plan: &MetricPlan,
    mut groups: Vec<Vec<events::EventSpec>>,
) -> (Vec<Vec<events::EventSpec>>, Placement) {
    let mut row = groups.iter().map(Vec::len).sum::<usize>();
    let mut placement = Vec::new();
    for g in &plan.groups {
        let mut specs = Vec::new();
        let mut places = Vec::new();
        for name in g {
            match events::parse_event(name)
                .map_err(|e| e.to_string())
                .and_then(opens)
            {
                Ok(spec) => {
                    places.push(Ok(row));
                    row += 1;
                    specs.push(spec);
                }
                Err(why) => places.push(Err(why)),
            }
        }
        if !specs.is_empty() {
            groups.push(specs);
        }
        placement.push(places);
    }
    (groups, placement)
}

/// This CPU's Top-Down metric groups down to `level` (`TopdownL1,TopdownL2`,
/// `PipelineL1`), when its table has them.
pub fn topdown_groups(level: u8) -> Option<String> {
    let (cpuid, _) = tables::system_cpuid(sysfs::cpu_identity().as_ref())?;
    table::topdown_groups(&tables::table_for(&cpuid)?, level)
}

/// Runs `culprit stat -M LIST` (`list`: metrics and metric groups, comma-separated) with
/// the rest of `opts` (target, `-e` events counted beside, runs, format), writing the
/// results to the writer `open` gives once the counting is done.
pub fn run(opts: &StatOptions, list: &str, open: &mut OpenOutput) -> anyhow::Result<ExitCode> {
    let system_wide = matches!(opts.target, culprit_collect::target::Target::System(_));
    let (cpuid, _) = tables::system_cpuid(sysfs::cpu_identity().as_ref())
        .context("-M: the CPU id could not be built (set PERF_CPUID)")?;
    let cpu_table = tables::table_for(&cpuid).with_context(|| {
        format!("-M: no pmu-events table for CPU id `{cpuid}` (`culprit list` says which CPUs have one; PERF_CPUID picks another)")
    })?;
    let m = stat::facts::machine();
    let facts = MachineFacts {
        smt_on: m.smt_on,
        num_cpus: m.num_cpus,
        num_cpus_online: m.num_cpus_online,
        num_cores: m.num_cores,
        num_dies: m.num_dies,
        num_packages: m.num_packages,
        system_tsc_freq: m.system_tsc_freq,
        // perf's core_wide: system-wide counting, or no SMT sibling to share a core with.
        core_wide: system_wide || !m.smt_on,
        slots: m.slots,
        has_pmem: m.has_pmem,
        cpuid: cpuid.clone(),
    };
    let metrics = Metrics::new(&cpu_table, &facts);
    let chosen = table::select(&cpu_table, list)?;
    let popts = PlanOptions {
        nmi_watchdog: stat::facts::nmi_watchdog(),
        no_group: opts.metric_no_group,
    };
    let plan = plan::plan(&metrics, &chosen, facts.smt_on, popts)?;
    let user = if opts.events.is_empty() {
        Vec::new()
    } else {
        stat::groups_of(&opts.events)?
    };
    let user_rows = user.iter().map(Vec::len).sum::<usize>();
    let (mut groups, placement) = open_plan(&plan, user);
    if groups.is_empty() {
        // Nothing of the metrics opens here: time the command with task-clock (hidden) so
        // the run and its elapsed time still happen, as perf's run would.
        groups = stat::groups_of(&["task-clock".to_string()])?;
    }
    let sopts = CountOptions {
        groups,
        target: opts.target.clone(),
        interval: opts.interval_ms.map(Duration::from_millis),
        repeat: opts.repeat,
    };
    let report = super::count_report(&sopts, &mut |_| {}, &mut super::warn)?;
    let value_of = |row: usize| {
        report
            .events
            .get(row)
            .filter(|e| e.supported)
            .and_then(|e| e.scaled)
    };
    let counted: Vec<Vec<Option<f64>>> = placement
        .iter()
        .map(|g| {
            g.iter()
                .map(|p| p.as_ref().ok().and_then(|&r| value_of(r)))
                .collect()
        })
        .collect();
    let tools = ToolValues {
        duration_s: report.elapsed_ns as f64 / 1e9,
        user_s: None,
        system_s: None,
    };
    let values = plan::evaluate_plan(&metrics, &chosen, &plan, &counted, tools);
    let mut entries: Vec<(String, Option<usize>)> = report.events
        [..user_rows.min(report.events.len())]
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), Some(i)))
        .collect();
    for (g, places) in plan.groups.iter().zip(&placement) {
        for (name, p) in g.iter().zip(places) {
            if !entries.iter().any(|(n, _)| n == name) {
                entries.push((name.clone(), p.as_ref().ok().copied()));
            }
        }
    }
    let leaders = plan
        .metrics
        .iter()
        .map(|m| {
            let (g, i) = m.places.iter().flatten().next()?;
            let name = &plan.groups[*g][*i];
            entries.iter().position(|(n, _)| n == name)
        })
        .collect();
    let mut not_counted: Vec<(String, String)> = Vec::new();
    for (g, places) in plan.groups.iter().zip(&placement) {
        for (name, p) in g.iter().zip(places) {
            let why = match p {
                Err(e) => Some(e.clone()),
                Ok(r) if value_of(*r).is_none() => Some(
                    "<not supported>: this machine cannot count it (no hardware PMU counter for it)"
                        .to_string(),
                ),
                Ok(_) => None,
            };
            if let Some(why) = why {
                if !not_counted.iter().any(|(n, _)| n == name) {
                    not_counted.push((name.clone(), why));
                }
            }
        }
    }
    let outcome = Outcome {
        report: &report,
        values,
        leaders,
        not_counted,
        entries,
    };
    let mut sink = Sink::open(open)?;
    match &opts.format {
        StatFormat::Json => {
            let mut doc = serde_json::to_value(&report)?;
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("pmu_metrics".into(), serde_json::to_value(&outcome.values)?);
                obj.insert(
                    "metric_table".into(),
                    serde_json::json!({
                        "model": cpu_table.row.model,
                        "cpuid": cpuid,
                    }),
                );
            }
            culprit_output::json::write(&mut *sink.out, &doc)?;
        }
        StatFormat::Csv(sep) => sink.lines(&csv_lines(&outcome, sep, opts.metric_only))?,
        StatFormat::Text => sink.lines(&text_lines(&outcome, opts.metric_only))?,
    }
    Ok(exit_code(&report))
}
