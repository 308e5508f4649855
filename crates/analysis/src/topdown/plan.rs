//! Scheduling: which formulas go into which counter group ([`plan`]).

use serde::Serialize;

use super::*;

/// A formula: the events whose ratio makes one number; placed whole in one group when the
/// counters allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Formula {
    /// AMD frontend_bound.
    AmdFe,
    /// AMD backend_bound.
    AmdBe,
    /// AMD smt_contention.
    AmdSmt,
    /// AMD retiring.
    AmdRet,
    /// AMD bad_speculation.
    AmdBs,
    /// AMD frontend latency share.
    AmdFeSplit,
    /// AMD mispredict share.
    AmdBsSplit,
    /// AMD memory share.
    AmdBeSplit,
    /// AMD microcode share.
    AmdRetSplit,
    /// Intel SKL frontend_bound.
    SklFe,
    /// Intel SKL bad_speculation.
    SklBs,
    /// Intel SKL retiring.
    SklRet,
    /// Intel SKL fetch latency share.
    SklFeSplit,
    /// Intel SKL branch mispredict share.
    SklBsSplit,
    /// Intel SKL memory-bound share.
    SklBeSplit,
    /// Intel SKL heavy operations.
    SklRetSplit,
    /// Intel PERF_METRICS level 1 (and level 2 when present): one group.
    PerfMetrics,
}

impl Formula {
    /// The events of the formula (cycles is added to each group by the planner).
    pub fn events(self, level2: bool) -> &'static [Ev] {
        use Ev::*;
        match self {
            Formula::AmdFe => &[AmdFeNoOps],
            Formula::AmdBe => &[AmdBackendStalls],
            Formula::AmdSmt => &[AmdSmtContention],
            Formula::AmdRet => &[AmdRetOps],
            Formula::AmdBs => &[AmdOpsDispatched, AmdRetOps],
            Formula::AmdFeSplit => &[AmdFeNoOps, AmdFeNoOpsCmask],
            Formula::AmdBsSplit => &[AmdBrMisp, AmdRestarts],
            Formula::AmdBeSplit => &[AmdNotComplete, AmdLoadNotComplete],
            Formula::AmdRetSplit => &[AmdRetOps, AmdUcodeOps],
            Formula::SklFe => &[IntelIdqNotDelivered],
            Formula::SklBs => &[IntelUopsIssued, IntelRetireSlots, IntelRecoveryCycles],
            Formula::SklRet => &[IntelRetireSlots],
            Formula::SklFeSplit => &[IntelIdqNotDelivered, IntelIdqCycles0],
            Formula::SklBsSplit => &[IntelBrMisp, IntelMachineClears],
            Formula::SklBeSplit => &[
                IntelStallsMemAny,
                IntelBoundOnStores,
                IntelStallsTotal,
                IntelPorts1,
                IntelPorts2,
            ],
            Formula::SklRetSplit => &[IntelRetireSlots, IntelMacroFused, Instructions],
            Formula::PerfMetrics if level2 => &[
                TdRetiring,
                TdBadSpec,
                TdFeBound,
                TdBeBound,
                TdHeavyOps,
                TdBrMispredict,
                TdFetchLat,
                TdMemBound,
            ],
            Formula::PerfMetrics => &[TdRetiring, TdBadSpec, TdFeBound, TdBeBound],
        }
    }
}

/// Where the events go: groups of events, and which group(s) each formula reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The CPU model.
    pub model: Model,
    /// 1 or 2.
    pub level: u8,
    /// Usable general-purpose counters the plan was made for.
    pub counters: usize,
    /// Event groups; each starts with its reference event (cycles or slots).
    pub groups: Vec<Vec<EventDef>>,
    /// Per formula, the groups holding its events (one unless it had to be split).
    pub placement: Vec<(Formula, Vec<usize>)>,
}

impl Plan {
    /// The number of events in all groups.
    pub fn event_count(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }

    /// Whether all groups fit the counters at once (no multiplexing needed).
    pub fn fits_at_once(&self) -> bool {
        let used: usize = self.groups.iter().flatten().filter(|e| !e.fixed).count();
        used <= self.counters
            && self
                .groups
                .iter()
                .filter(|g| g.first().is_some_and(|e| e.key == Ev::Slots))
                .count()
                <= 1
    }
}

fn formulas(model: Model, level: u8) -> Vec<Formula> {
    use Formula::*;
    let l2 = level >= 2;
    match model {
        Model::Zen4 | Model::Zen5 => {
            let mut v = vec![AmdFe, AmdBe, AmdSmt, AmdRet, AmdBs];
            if l2 {
                v.extend([AmdFeSplit, AmdBsSplit, AmdBeSplit, AmdRetSplit]);
            }
            v
        }
        Model::IntelSkylake => {
            let mut v = vec![SklFe, SklBs, SklRet];
            if l2 {
                v.extend([SklFeSplit, SklBsSplit, SklBeSplit, SklRetSplit]);
            }
            v
        }
        Model::IntelPerfMetrics { .. } => vec![PerfMetrics],
    }
}

/// Plans the groups for a model and level on a machine with `counters` usable
/// general-purpose counters: formulas packed first-fit, each group led by its own cycles (or
/// `slots`) event; a formula larger than a group is split (and its reliability penalized).
pub fn plan(model: Model, level: u8, counters: usize) -> Result<Plan, TopdownError> {
    if !(1..=2).contains(&level) {
        return Err(TopdownError::Level {
            level,
            model: model.name().into(),
            why: "levels 1 and 2 exist".into(),
        });
    }
    if let Model::IntelPerfMetrics { level2: false, .. } = model {
        if level == 2 {
            return Err(TopdownError::Level {
                level,
                model: model.name().into(),
                why: "this CPU has no level-2 PERF_METRICS (topdown-heavy-ops and friends \
                      arrived with Sapphire Rapids); use --level 1"
                    .into(),
            });
        }
    }
    let reference = if matches!(model, Model::IntelPerfMetrics { .. }) {
        Ev::Slots
    } else {
        Ev::Cycles
    };
    let ref_def = event_def(model, reference);
    // General-purpose counters a group may use besides its reference event.
    let ref_cost = usize::from(!ref_def.fixed);
    let budget = counters.saturating_sub(ref_cost);
    let needs_gp = !matches!(model, Model::IntelPerfMetrics { .. });
    if needs_gp && budget < 2 {
        return Err(TopdownError::TooFewCounters {
            needed: 2 + ref_cost,
            usable: counters,
        });
    }
    let cost =
        |keys: &[Ev]| -> usize { keys.iter().filter(|&&k| !event_def(model, k).fixed).count() };
    let mut groups: Vec<Vec<Ev>> = Vec::new();
    let mut placement = Vec::new();
    for f in formulas(model, level) {
        let evs: Vec<Ev> = f
            .events(level >= 2)
            .iter()
            .copied()
            .filter(|&e| e != reference)
            .collect();
        let fits = |g: &Vec<Ev>| {
            let mut u = g.clone();
            for e in &evs {
                if !u.contains(e) {
                    u.push(*e);
                }
            }
            !needs_gp || cost(&u) <= budget
        };
        if let Some(gi) = groups.iter().position(fits) {
            for e in &evs {
                if !groups[gi].contains(e) {
                    groups[gi].push(*e);
                }
            }
            placement.push((f, vec![gi]));
        } else if !needs_gp || cost(&evs) <= budget {
            groups.push(evs);
            placement.push((f, vec![groups.len() - 1]));
        } else {
            // Larger than any group: split into chunks, each with its own reference.
            let mut idx = Vec::new();
            let mut chunk: Vec<Ev> = Vec::new();
            for e in evs {
                if cost(&chunk) + cost(&[e]) > budget {
                    groups.push(std::mem::take(&mut chunk));
                    idx.push(groups.len() - 1);
                }
                chunk.push(e);
            }
            if !chunk.is_empty() {
                groups.push(chunk);
                idx.push(groups.len() - 1);
            }
            placement.push((f, idx));
        }
    }
    let groups = groups
        .into_iter()
        .map(|g| {
            std::iter::once(reference)
                .chain(g)
                .map(|k| event_def(model, k))
                .collect()
        })
        .collect();
    Ok(Plan {
        model,
        level,
        counters,
        groups,
        placement,
    })
}
