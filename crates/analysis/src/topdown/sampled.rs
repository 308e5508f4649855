//! Per-function Top-Down from sampled periods (`culprit record --topdown`).

use serde::Serialize;

use super::*;

/// Parses perf's HEADER_CPUID string on x86 (`AuthenticAMD,26,2,1`: vendor, family, model,
/// stepping in decimal) into (vendor, family, model).
pub fn parse_cpuid(cpuid: &str) -> Option<(String, u32, u32)> {
    let mut f = cpuid.split(',');
    let vendor = f.next()?.trim().to_string();
    let family = f.next()?.trim().parse().ok()?;
    let model = f.next()?.trim().parse().ok()?;
    Some((vendor, family, model))
}

/// The level-1 events to *sample* for per-function Top-Down (`culprit record --topdown`).
/// PERF_METRICS cannot be sampled, so Ice Lake+ is refused.
pub fn sampling_events(model: Model) -> Result<Vec<EventDef>, TopdownError> {
    let keys: &[Ev] = match model {
        Model::Zen4 | Model::Zen5 => &[
            Ev::Cycles,
            Ev::AmdFeNoOps,
            Ev::AmdBackendStalls,
            Ev::AmdSmtContention,
            Ev::AmdOpsDispatched,
            Ev::AmdRetOps,
        ],
        Model::IntelSkylake => &[
            Ev::Cycles,
            Ev::IntelIdqNotDelivered,
            Ev::IntelUopsIssued,
            Ev::IntelRetireSlots,
            Ev::IntelRecoveryCycles,
        ],
        Model::IntelPerfMetrics { .. } => {
            return Err(TopdownError::Level {
                level: 1,
                model: model.name().into(),
                why: "the PERF_METRICS topdown events can only be counted, not sampled; use \
                      `culprit stat --topdown` for the whole run"
                    .into(),
            })
        }
    };
    Ok(keys.iter().map(|&k| event_def(model, k)).collect())
}

/// Which sampling event of [`sampling_events`] an event of a file is (by type and config).
pub fn sampled_event(model: Model, attr_type: u32, config: u64) -> Option<Ev> {
    sampling_events(model)
        .ok()?
        .into_iter()
        .find(|e| e.attr_type == attr_type && e.config == config)
        .map(|e| e.key)
}

/// Per-function level-1 estimate from sampled periods.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SampledLevel1 {
    /// The estimated fractions (may fall outside 0..1 for rows with few samples).
    pub level1: Level1,
    /// Samples of all the level-1 events in the row.
    pub samples: u64,
    /// Samples of the least-sampled event the estimate uses (the weakest link).
    pub min_samples: u64,
}

/// Estimates a row's level-1 breakdown from the summed sample periods of each sampled event
/// (`(event, period sum, samples)`): every sample stands for `period` events at its IP, so
/// the period sums estimate the counts inside the row. `None` when the row has no cycles.
pub fn level1_from_samples(model: Model, rows: &[(Ev, u64, u64)]) -> Option<SampledLevel1> {
    let p = |e: Ev| {
        rows.iter()
            .filter(|(k, _, _)| *k == e)
            .map(|(_, p, _)| *p as f64)
            .sum::<f64>()
    };
    let cycles = p(Ev::Cycles);
    if cycles <= 0.0 {
        return None;
    }
    let slots = model.width() as f64 * cycles;
    let level1 = match model {
        Model::Zen4 | Model::Zen5 => Level1 {
            frontend_bound: p(Ev::AmdFeNoOps) / slots,
            bad_speculation: (p(Ev::AmdOpsDispatched) - p(Ev::AmdRetOps)) / slots,
            backend_bound: p(Ev::AmdBackendStalls) / slots,
            retiring: p(Ev::AmdRetOps) / slots,
            smt_contention: p(Ev::AmdSmtContention) / slots,
        },
        Model::IntelSkylake => {
            let fe = p(Ev::IntelIdqNotDelivered) / slots;
            let bs = (p(Ev::IntelUopsIssued) - p(Ev::IntelRetireSlots)
                + model.width() as f64 * p(Ev::IntelRecoveryCycles))
                / slots;
            let ret = p(Ev::IntelRetireSlots) / slots;
            Level1 {
                frontend_bound: fe,
                bad_speculation: bs,
                backend_bound: 1.0 - fe - bs - ret,
                retiring: ret,
                smt_contention: 0.0,
            }
        }
        Model::IntelPerfMetrics { .. } => return None,
    };
    let used = sampling_events(model).ok()?;
    let samples_of = |e: Ev| {
        rows.iter()
            .filter(|(k, _, _)| *k == e)
            .map(|(_, _, s)| *s)
            .sum::<u64>()
    };
    Some(SampledLevel1 {
        level1,
        samples: used.iter().map(|e| samples_of(e.key)).sum(),
        min_samples: used.iter().map(|e| samples_of(e.key)).min().unwrap_or(0),
    })
}

/// The node with this name anywhere in the tree.
pub fn find<'a>(tree: &'a [Node], name: &str) -> Option<&'a Node> {
    for n in tree {
        if n.name == name {
            return Some(n);
        }
        if let Some(c) = find(&n.children, name) {
            return Some(c);
        }
    }
    None
}
