//! `culprit stat --topdown`'s counting: what the host offers a Top-Down model (a usable
//! hardware PMU, the CPU, the `topdown-*` events of its core PMU), and the counting of the
//! planned groups (all at once, multiplexed, or one run per group), summed over the runs.
//! The model, the plan and the tree are `analysis::topdown`'s.

use std::path::Path;
use std::time::Duration;

use super::StatError;
use crate::count::{self, CountOptions, Reading};
use crate::events::EventSpec;
use crate::launch::ChildExit;
use crate::support;
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

/// What this machine offers a Top-Down model (`analysis::topdown::model_for` picks it).
#[derive(Debug, Clone)]
pub struct TopdownHost {
    /// The CPU, from /proc/cpuinfo.
    pub cpu: CpuIdentity,
    /// The core PMU has `events/topdown-fe-bound` (Intel's fixed Top-Down metrics).
    pub has_topdown_fe_bound: bool,
    /// The core PMU has `events/topdown-heavy-ops` (level 2 of those metrics).
    pub has_topdown_heavy_ops: bool,
}

/// This machine's Top-Down facts, or why Top-Down cannot run here (`verb`: `stat` or
/// `record`, for the message).
pub fn host(verb: &str) -> Result<TopdownHost, StatError> {
    if !support::hardware_pmu_available() {
        return Err(StatError::Invalid(no_pmu_message(verb)));
    }
    let cpu = sysfs::cpu_identity().ok_or_else(|| {
        StatError::Invalid(
            "--topdown: cannot identify the CPU from /proc/cpuinfo (vendor, family, model)".into(),
        )
    })?;
    let pmu_events = Path::new("/sys/bus/event_source/devices/cpu/events");
    Ok(TopdownHost {
        cpu,
        has_topdown_fe_bound: pmu_events.join("topdown-fe-bound").exists(),
        has_topdown_heavy_ops: pmu_events.join("topdown-heavy-ops").exists(),
    })
}

/// Options of `culprit stat --topdown`'s counting.
#[derive(Debug, Clone)]
pub struct TopdownOptions {
    /// Whom to count.
    pub target: Target,
    /// Run the command once per counter group instead of multiplexing them.
    pub no_multiplex: bool,
    /// Runs (each: one run, or one per group).
    pub repeat: u32,
}

/// Whether the options go together (checked before anything is probed).
pub fn check(opts: &TopdownOptions) -> Result<(), StatError> {
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
    Ok(())
}

/// The planned groups' readings summed over all runs.
#[derive(Debug, Clone)]
pub struct SummedCounts {
    /// `sums[g][e]` over all runs (ratios of sums = ratios over the whole measured time).
    pub sums: Vec<Vec<Reading>>,
    /// Each counting run's wall time (one per group and repeat with `no_multiplex`).
    pub elapsed_runs: Vec<Duration>,
    /// How the last launched command ended.
    pub exit: Option<ChildExit>,
    /// Whether Ctrl-C ended counting.
    pub interrupted: bool,
}

/// Counts `groups` (the Top-Down plan's, as event specs) on the target: `opts.repeat`
/// times, each one run for all groups or (`no_multiplex`) one run per group.
pub fn count_groups(
    groups: &[Vec<EventSpec>],
    opts: &TopdownOptions,
    warn: &mut dyn FnMut(String),
) -> Result<SummedCounts, StatError> {
    check(opts)?;
    let mut out = SummedCounts {
        sums: groups
            .iter()
            .map(|g| vec![Reading::default(); g.len()])
            .collect(),
        elapsed_runs: Vec::new(),
        exit: None,
        interrupted: false,
    };
    'runs: for _ in 0..opts.repeat {
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
                let Some(readings) = res.groups.get(k) else {
                    continue;
                };
                for (sum, r) in out.sums[g].iter_mut().zip(readings) {
                    sum.value += r.value;
                    sum.enabled_ns += r.enabled_ns;
                    sum.running_ns += r.running_ns;
                }
            }
            out.elapsed_runs.push(res.elapsed);
            out.exit = res.exit;
            if res.interrupted {
                out.interrupted = true;
                break 'runs;
            }
        }
    }
    Ok(out)
}
