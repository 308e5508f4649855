//! Top-Down bottleneck analysis (Yasin, ISPASS 2014): which events to count, how to group them
//! onto the counters, and how to turn their counts into a tree of pipeline-slot fractions with
//! thresholds, reliability and a critical bottleneck. Pure: counting is the caller's job.
//!
//! Supported models (formulas and event codes from `topdown.md`, which read Linux's
//! `pmu-events` JSON and pmu-tools):
//! - AMD Zen 4 (family 0x19 models 0x10-0x1F, 0x60-0x7F, 0xA0-0xAF) and Zen 5 (family 0x1A):
//!   the `de_no_dispatch_per_slot` pipeline-utilization events, 6 / 8 dispatch slots per cycle,
//!   level 1 (frontend_bound, bad_speculation, backend_bound, retiring, smt_contention) and
//!   level 2.
//! - Intel Skylake class (4 slots): generic-event formulas, levels 1 and 2.
//! - Intel Ice Lake and later: the `slots` fixed counter with the PERF_METRICS pseudo-events
//!   (level 2 only where the CPU has the level-2 metrics, Sapphire Rapids and later).
//!
//! Anything else is [`TopdownError::Unsupported`]: no guessing.
//!
//! # Scheduling
//! Each *formula* (a set of events whose ratio makes one number) is placed whole in one group,
//! and every group gets its own cycles (or `slots`) event, so that every ratio is computed from
//! counts of one group (counted over the same time) and never mixes groups. Formulas are packed
//! first-fit into groups of at most the usable counter count ([`plan`]). Children are computed
//! as *parent × in-group share* (e.g. memory = backend_bound × load_not_complete /
//! not_complete), so each child ratio is dimensionless and the children sum to their parent.
//!
//! # Reliability
//! Per metric, 0..=1: the smallest running/enabled fraction of the counts it uses (the share
//! of the run that actually backs the number, as toplev's MUX column), times 0.8 when its
//! events had to be split over multiplexed groups (then scaled counts are combined). Below 0.7
//! ([`UNRELIABLE_BELOW`]) a metric is marked unreliable.

use serde::Serialize;

/// Reliability below which a metric is reported as unreliable (VTune's convention).
pub const UNRELIABLE_BELOW: f64 = 0.7;
/// Values outside this open interval are "mismeasured" (toplev) and never flagged.
pub const VALID_RANGE: (f64, f64) = (-0.05, 1.05);
/// Reliability factor for a formula whose events had to be split over several groups.
pub const SPLIT_PENALTY: f64 = 0.8;
/// The critical-bottleneck descent stops when the two highest flagged siblings are this close.
pub const BOTTLENECK_MARGIN: f64 = 0.05;

/// `perf_event_attr.type` values used here.
use culprit_decode::abi::perf_type::{HARDWARE as TYPE_HARDWARE, RAW as TYPE_RAW};

/// Why Top-Down cannot be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopdownError {
    /// The CPU has no Top-Down model in culprit.
    #[error("Top-Down is not supported on this CPU ({0}): culprit has formulas for AMD Zen 4/Zen 5 and Intel Skylake-class and Ice Lake-or-later cores only, and does not guess")]
    Unsupported(String),
    /// The requested level is not available for the model.
    #[error("Top-Down level {level} is not available on {model}: {why}")]
    Level {
        /// Requested level.
        level: u8,
        /// The model's name.
        model: String,
        /// Why.
        why: String,
    },
    /// Not enough usable counters.
    #[error("Top-Down needs at least {needed} usable general-purpose counters; this machine has {usable}")]
    TooFewCounters {
        /// Minimum needed.
        needed: usize,
        /// Usable.
        usable: usize,
    },
}

/// A CPU's Top-Down model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Model {
    /// AMD Zen 4 (6 dispatch slots per cycle).
    Zen4,
    /// AMD Zen 5 (8 dispatch slots per cycle).
    Zen5,
    /// Intel Skylake class: 4 slots, generic-event formulas.
    IntelSkylake,
    /// Intel Ice Lake or later with PERF_METRICS.
    IntelPerfMetrics {
        /// Slots per cycle (5 ICL/ICX, 6 SPR/ADL/MTL, 8 LNL).
        width: u32,
        /// Whether the level-2 metrics exist (Sapphire Rapids and later).
        level2: bool,
    },
}

impl Model {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Zen4 => "AMD Zen 4",
            Model::Zen5 => "AMD Zen 5",
            Model::IntelSkylake => "Intel Skylake class",
            Model::IntelPerfMetrics { .. } => "Intel Ice Lake+ (PERF_METRICS)",
        }
    }

    /// Pipeline slots per cycle.
    pub fn width(self) -> u32 {
        match self {
            Model::Zen4 => 6,
            Model::Zen5 => 8,
            Model::IntelSkylake => 4,
            Model::IntelPerfMetrics { width, .. } => width,
        }
    }

    /// Whether thresholds are Intel's TMA ones borrowed for another vendor.
    pub fn is_amd(self) -> bool {
        matches!(self, Model::Zen4 | Model::Zen5)
    }

    /// How the thresholds should be labelled.
    pub fn thresholds_label(self) -> &'static str {
        if self.is_amd() {
            "Intel TMA thresholds (AMD publishes none)"
        } else {
            "Intel TMA thresholds"
        }
    }
}

/// Picks the model from the CPU identity (`/proc/cpuinfo` vendor, family, model).
/// `perf_metrics` says whether `cpu/events/topdown-fe-bound` exists, `perf_metrics_l2`
/// whether `cpu/events/topdown-heavy-ops` does.
pub fn model_for(
    vendor: &str,
    family: u32,
    model: u32,
    perf_metrics: bool,
    perf_metrics_l2: bool,
) -> Result<Model, TopdownError> {
    let desc = || format!("{vendor} family {family:#x} model {model:#x}");
    match vendor {
        "AuthenticAMD" => match (family, model) {
            (0x19, 0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF) => Ok(Model::Zen4),
            (0x1A, _) => Ok(Model::Zen5),
            _ => Err(TopdownError::Unsupported(desc())),
        },
        "GenuineIntel" if family == 6 => {
            if perf_metrics {
                let width = match model {
                    // Ice Lake, Ice Lake server, Tiger Lake, Rocket Lake.
                    0x7D | 0x7E | 0x6A | 0x6C | 0x8C | 0x8D | 0xA7 => 5,
                    // Sapphire/Emerald/Granite Rapids, Alder/Raptor/Meteor Lake (P-cores).
                    0x8F | 0xCF | 0xAD | 0xAE | 0x97 | 0x9A | 0xB7 | 0xBA | 0xBF | 0xAA | 0xAC => 6,
                    // Lunar Lake, Panther Lake.
                    0xBD | 0xCC => 8,
                    _ => return Err(TopdownError::Unsupported(desc())),
                };
                return Ok(Model::IntelPerfMetrics {
                    width,
                    level2: perf_metrics_l2,
                });
            }
            match model {
                // Skylake client/server, Cascade Lake, Kaby/Coffee/Comet Lake.
                0x4E | 0x5E | 0x55 | 0x8E | 0x9E | 0xA5 | 0xA6 => Ok(Model::IntelSkylake),
                _ => Err(TopdownError::Unsupported(desc())),
            }
        }
        _ => Err(TopdownError::Unsupported(desc())),
    }
}

/// The events Top-Down counts (keys are stable, names are perf's spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ev {
    /// Core cycles (AMD ls_not_halted_cyc; Intel CPU_CLK_UNHALTED.THREAD).
    Cycles,
    /// AMD de_no_dispatch_per_slot.no_ops_from_frontend.
    AmdFeNoOps,
    /// Same with cmask = width (cycles with no op at all from the frontend).
    AmdFeNoOpsCmask,
    /// AMD de_no_dispatch_per_slot.backend_stalls.
    AmdBackendStalls,
    /// AMD de_no_dispatch_per_slot.smt_contention.
    AmdSmtContention,
    /// AMD de_src_op_disp.all.
    AmdOpsDispatched,
    /// AMD ex_ret_ops.
    AmdRetOps,
    /// AMD ex_ret_brn_misp.
    AmdBrMisp,
    /// AMD resyncs_or_nc_redirects (Zen 4) / bp_redirects.resync (Zen 5).
    AmdRestarts,
    /// AMD ex_no_retire.not_complete.
    AmdNotComplete,
    /// AMD ex_no_retire.load_not_complete.
    AmdLoadNotComplete,
    /// AMD ex_ret_ucode_ops.
    AmdUcodeOps,
    /// Intel IDQ_UOPS_NOT_DELIVERED.CORE.
    IntelIdqNotDelivered,
    /// Intel IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE.
    IntelIdqCycles0,
    /// Intel UOPS_ISSUED.ANY.
    IntelUopsIssued,
    /// Intel UOPS_RETIRED.RETIRE_SLOTS.
    IntelRetireSlots,
    /// Intel UOPS_RETIRED.MACRO_FUSED.
    IntelMacroFused,
    /// Intel INT_MISC.RECOVERY_CYCLES.
    IntelRecoveryCycles,
    /// Intel BR_MISP_RETIRED.ALL_BRANCHES.
    IntelBrMisp,
    /// Intel MACHINE_CLEARS.COUNT.
    IntelMachineClears,
    /// Intel CYCLE_ACTIVITY.STALLS_MEM_ANY.
    IntelStallsMemAny,
    /// Intel CYCLE_ACTIVITY.STALLS_TOTAL.
    IntelStallsTotal,
    /// Intel EXE_ACTIVITY.BOUND_ON_STORES.
    IntelBoundOnStores,
    /// Intel EXE_ACTIVITY.1_PORTS_UTIL.
    IntelPorts1,
    /// Intel EXE_ACTIVITY.2_PORTS_UTIL.
    IntelPorts2,
    /// INST_RETIRED.ANY (generic instructions).
    Instructions,
    /// Intel `slots` fixed counter (PERF_METRICS group leader).
    Slots,
    /// topdown-retiring.
    TdRetiring,
    /// topdown-bad-spec.
    TdBadSpec,
    /// topdown-fe-bound.
    TdFeBound,
    /// topdown-be-bound.
    TdBeBound,
    /// topdown-heavy-ops.
    TdHeavyOps,
    /// topdown-br-mispredict.
    TdBrMispredict,
    /// topdown-fetch-lat.
    TdFetchLat,
    /// topdown-mem-bound.
    TdMemBound,
}

/// One event to open: what the counting code needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventDef {
    /// Which event.
    pub key: Ev,
    /// perf-style name (what `-e` accepts and reports print).
    pub name: String,
    /// `perf_event_attr.type` (0 hardware, 4 raw).
    pub attr_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// Whether it runs on a fixed counter (does not use a general-purpose one).
    pub fixed: bool,
}

/// Encodes a core PMC event (AMD and Intel share the low layout; AMD adds event bits 8-11 at
/// config 32-35).
const fn raw(code: u16, umask: u8, edge: bool, cmask: u8) -> u64 {
    (code as u64 & 0xFF)
        | ((code as u64 >> 8) & 0xF) << 32
        | (umask as u64) << 8
        | (edge as u64) << 18
        | (cmask as u64) << 24
}

/// The definition of an event for a model.
pub fn event_def(model: Model, key: Ev) -> EventDef {
    let w = model.width() as u8;
    let (name, attr_type, config, fixed): (String, u32, u64, bool) = match key {
        Ev::Cycles if model.is_amd() => ("ls_not_halted_cyc".into(), TYPE_RAW, 0x76, false),
        // Intel: the generic event lands on fixed counter 1.
        Ev::Cycles => ("cycles".into(), TYPE_HARDWARE, 0, true),
        Ev::Instructions => ("instructions".into(), TYPE_HARDWARE, 1, !model.is_amd()),
        Ev::AmdFeNoOps => (
            "de_no_dispatch_per_slot.no_ops_from_frontend".into(),
            TYPE_RAW,
            raw(0x1A0, 0x01, false, 0),
            false,
        ),
        Ev::AmdFeNoOpsCmask => (
            format!("cpu/event=0x1a0,umask=0x1,cmask={w}/"),
            TYPE_RAW,
            raw(0x1A0, 0x01, false, w),
            false,
        ),
        Ev::AmdBackendStalls => (
            "de_no_dispatch_per_slot.backend_stalls".into(),
            TYPE_RAW,
            raw(0x1A0, 0x1E, false, 0),
            false,
        ),
        Ev::AmdSmtContention => (
            "de_no_dispatch_per_slot.smt_contention".into(),
            TYPE_RAW,
            raw(0x1A0, 0x60, false, 0),
            false,
        ),
        Ev::AmdOpsDispatched => (
            "de_src_op_disp.all".into(),
            TYPE_RAW,
            raw(0xAA, 0x07, false, 0),
            false,
        ),
        Ev::AmdRetOps => ("ex_ret_ops".into(), TYPE_RAW, raw(0xC1, 0, false, 0), false),
        Ev::AmdBrMisp => (
            "ex_ret_brn_misp".into(),
            TYPE_RAW,
            raw(0xC3, 0, false, 0),
            false,
        ),
        Ev::AmdRestarts if model == Model::Zen4 => (
            "resyncs_or_nc_redirects".into(),
            TYPE_RAW,
            raw(0x96, 0, false, 0),
            false,
        ),
        Ev::AmdRestarts => (
            "bp_redirects.resync".into(),
            TYPE_RAW,
            raw(0x9F, 0x01, false, 0),
            false,
        ),
        Ev::AmdNotComplete => (
            "ex_no_retire.not_complete".into(),
            TYPE_RAW,
            raw(0xD6, 0x02, false, 0),
            false,
        ),
        Ev::AmdLoadNotComplete => (
            "ex_no_retire.load_not_complete".into(),
            TYPE_RAW,
            raw(0xD6, 0xA2, false, 0),
            false,
        ),
        Ev::AmdUcodeOps => (
            "ex_ret_ucode_ops".into(),
            TYPE_RAW,
            raw(0x1C2, 0, false, 0),
            false,
        ),
        Ev::IntelIdqNotDelivered => intel("idq_uops_not_delivered.core", 0x9C, 0x01, false, 0),
        Ev::IntelIdqCycles0 => intel(
            "idq_uops_not_delivered.cycles_0_uops_deliv.core",
            0x9C,
            0x01,
            false,
            4,
        ),
        Ev::IntelUopsIssued => intel("uops_issued.any", 0x0E, 0x01, false, 0),
        Ev::IntelRetireSlots => intel("uops_retired.retire_slots", 0xC2, 0x02, false, 0),
        Ev::IntelMacroFused => intel("uops_retired.macro_fused", 0xC2, 0x04, false, 0),
        Ev::IntelRecoveryCycles => intel("int_misc.recovery_cycles", 0x0D, 0x01, false, 0),
        Ev::IntelBrMisp => intel("br_misp_retired.all_branches", 0xC5, 0x00, false, 0),
        Ev::IntelMachineClears => intel("machine_clears.count", 0xC3, 0x01, true, 1),
        Ev::IntelStallsMemAny => intel("cycle_activity.stalls_mem_any", 0xA3, 0x14, false, 20),
        Ev::IntelStallsTotal => intel("cycle_activity.stalls_total", 0xA3, 0x04, false, 4),
        Ev::IntelBoundOnStores => intel("exe_activity.bound_on_stores", 0xA6, 0x40, false, 0),
        Ev::IntelPorts1 => intel("exe_activity.1_ports_util", 0xA6, 0x02, false, 0),
        Ev::IntelPorts2 => intel("exe_activity.2_ports_util", 0xA6, 0x04, false, 0),
        Ev::Slots => ("slots".into(), TYPE_RAW, 0x0400, true),
        Ev::TdRetiring => ("topdown-retiring".into(), TYPE_RAW, 0x8000, true),
        Ev::TdBadSpec => ("topdown-bad-spec".into(), TYPE_RAW, 0x8100, true),
        Ev::TdFeBound => ("topdown-fe-bound".into(), TYPE_RAW, 0x8200, true),
        Ev::TdBeBound => ("topdown-be-bound".into(), TYPE_RAW, 0x8300, true),
        Ev::TdHeavyOps => ("topdown-heavy-ops".into(), TYPE_RAW, 0x8400, true),
        Ev::TdBrMispredict => ("topdown-br-mispredict".into(), TYPE_RAW, 0x8500, true),
        Ev::TdFetchLat => ("topdown-fetch-lat".into(), TYPE_RAW, 0x8600, true),
        Ev::TdMemBound => ("topdown-mem-bound".into(), TYPE_RAW, 0x8700, true),
    };
    EventDef {
        key,
        name,
        attr_type,
        config,
        fixed,
    }
}

fn intel(name: &str, code: u16, umask: u8, edge: bool, cmask: u8) -> (String, u32, u64, bool) {
    (
        name.to_string(),
        TYPE_RAW,
        raw(code, umask, edge, cmask),
        false,
    )
}

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

/// One counted value with its enabled/running times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Raw count.
    pub value: u64,
    /// Nanoseconds enabled.
    pub enabled_ns: u64,
    /// Nanoseconds running.
    pub running_ns: u64,
}

impl Count {
    /// running/enabled in 0..=1 (1 when never enabled).
    pub fn fraction(&self) -> f64 {
        if self.enabled_ns == 0 {
            1.0
        } else {
            (self.running_ns as f64 / self.enabled_ns as f64).min(1.0)
        }
    }

    /// The count scaled to the enabled time (0 when it never ran).
    pub fn scaled(&self) -> f64 {
        if self.running_ns == 0 || self.running_ns >= self.enabled_ns {
            if self.running_ns == 0 && self.enabled_ns > 0 {
                return 0.0;
            }
            return self.value as f64;
        }
        self.value as f64 * self.enabled_ns as f64 / self.running_ns as f64
    }
}

/// The counts of one formula: raw values when it lives in one group, scaled otherwise.
struct FormulaCounts {
    values: Vec<(Ev, f64)>,
    /// Reference (cycles/slots) of the formula's first group, on the same footing.
    reference: f64,
    reliability: f64,
}

impl FormulaCounts {
    fn get(&self, e: Ev) -> f64 {
        self.values
            .iter()
            .find(|(k, _)| *k == e)
            .map_or(0.0, |(_, v)| *v)
    }
}

fn formula_counts(plan: &Plan, counts: &[Vec<Count>], f: Formula) -> Option<FormulaCounts> {
    let groups = &plan.placement.iter().find(|(g, _)| *g == f)?.1;
    let split = groups.len() > 1;
    let mut values = Vec::new();
    let mut reliability: f64 = 1.0;
    let mut reference = None;
    for &gi in groups {
        let defs = plan.groups.get(gi)?;
        let cs = counts.get(gi)?;
        for (d, c) in defs.iter().zip(cs) {
            reliability = reliability.min(c.fraction());
            // Inside one group the raw counts share one time base: no scaling (and none of
            // its error). Across groups, scaled counts only.
            let v = if split { c.scaled() } else { c.value as f64 };
            if d.key == Ev::Cycles || d.key == Ev::Slots {
                reference.get_or_insert(v);
            }
            if !values.iter().any(|(k, _)| *k == d.key) {
                values.push((d.key, v));
            }
        }
    }
    // Groups counted over different windows only disagree when they were multiplexed.
    if split && reliability < 1.0 {
        reliability *= SPLIT_PENALTY;
    }
    Some(FormulaCounts {
        values,
        reference: reference.unwrap_or(0.0),
        reliability,
    })
}

fn div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// Level-1 fractions of pipeline slots (0..1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Level1 {
    /// Slots lost because the frontend supplied nothing.
    pub frontend_bound: f64,
    /// Slots spent on ops that never retired.
    pub bad_speculation: f64,
    /// Slots lost because the backend could not accept ops.
    pub backend_bound: f64,
    /// Slots that retired ops.
    pub retiring: f64,
    /// Slots given to the other SMT thread (AMD; 0 on Intel).
    pub smt_contention: f64,
}

impl Level1 {
    /// The sum of the five fractions (1 by construction within one group).
    pub fn sum(&self) -> f64 {
        self.frontend_bound
            + self.bad_speculation
            + self.backend_bound
            + self.retiring
            + self.smt_contention
    }
}

/// What a node measures, for thresholds and hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Frontend bound.
    Frontend,
    /// Fetch latency.
    FetchLatency,
    /// Fetch bandwidth.
    FetchBandwidth,
    /// Bad speculation.
    BadSpeculation,
    /// Branch mispredicts.
    Mispredicts,
    /// Machine clears / pipeline restarts.
    Restarts,
    /// Backend bound.
    Backend,
    /// Memory bound.
    Memory,
    /// Core bound.
    Core,
    /// Retiring.
    Retiring,
    /// Heavy operations / microcode.
    Heavy,
    /// Light operations / fast path.
    Light,
    /// SMT contention.
    Smt,
}

/// A node of the Top-Down tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// Metric name (`frontend_bound`, `memory`, …).
    pub name: String,
    /// Fraction of pipeline slots.
    pub value: f64,
    /// Above its threshold (and its parent flagged, and not mismeasured).
    pub flagged: bool,
    /// 0..=1, see the module docs.
    pub reliability: f64,
    /// reliability < 0.7.
    pub unreliable: bool,
    /// Outside (-0.05, 1.05): a measurement problem, never flagged.
    pub mismeasured: bool,
    /// On the path to the critical bottleneck (the last one is the bottleneck).
    pub critical: bool,
    /// The threshold it is compared with (None: never flagged).
    pub threshold: Option<f64>,
    /// What it measures.
    pub role: Role,
    /// One line: what it usually means, what to try, which culprit command drills down
    /// (only for flagged nodes).
    pub hint: Option<String>,
    /// Level-2 children.
    pub children: Vec<Node>,
}

/// The result of a Top-Down analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topdown {
    /// Model name.
    pub model: String,
    /// Level computed.
    pub level: u8,
    /// Level-1 fractions.
    pub level1: Level1,
    /// The tree (level-1 nodes, with children at level 2).
    pub tree: Vec<Node>,
    /// The critical bottleneck's name, when something is flagged.
    pub bottleneck: Option<String>,
    /// The label of the thresholds used.
    pub thresholds: String,
}

/// The Intel TMA threshold of a node (topdown.md section 4), and whether a child needs its
/// parent flagged (always, by the drill-down rule).
pub fn threshold(role: Role) -> Option<f64> {
    match role {
        Role::Frontend => Some(0.15),
        Role::FetchLatency => Some(0.10),
        Role::FetchBandwidth => Some(0.20),
        Role::BadSpeculation => Some(0.15),
        Role::Mispredicts => Some(0.10),
        Role::Restarts => Some(0.10),
        Role::Backend => Some(0.20),
        Role::Memory => Some(0.20),
        Role::Core => Some(0.10),
        Role::Retiring => Some(0.70),
        Role::Heavy => Some(0.10),
        Role::Light => Some(0.60),
        // TMA has no SMT node: reported, never flagged.
        Role::Smt => None,
    }
}

/// The one-line hint of a node for a model.
pub fn hint(model: Model, role: Role) -> String {
    let amd = model.is_amd();
    let pick = |a: &str, i: &str| if amd { a.to_string() } else { i.to_string() };
    match role {
        Role::Frontend => format!(
            "instruction supply starves dispatch (i-cache/iTLB misses, decode limits): shrink or reorder hot code (PGO/LTO); drill down: `culprit stat --topdown --level 2 -- CMD`, then `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ic_tag_hit_miss.instruction_cache_miss", "L1-icache-load-misses")
        ),
        Role::FetchLatency => format!(
            "fetch stalls (i-cache/iTLB misses, branch resteers): improve code locality, fewer indirect branches; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ic_tag_hit_miss.instruction_cache_miss", "L1-icache-load-misses")
        ),
        Role::FetchBandwidth => format!(
            "the frontend delivers too few ops per cycle (op-cache misses, decoder limits): tighten hot loops; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("op_cache_hit_miss.op_cache_miss", "cycles")
        ),
        Role::BadSpeculation => format!(
            "work thrown away after mispredictions or restarts: make branches predictable (branchless code, sorted data); drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_brn_misp", "branch-misses")
        ),
        Role::Mispredicts => format!(
            "branch mispredictions: use branchless selects, sort or partition the data, hint likely paths; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_brn_misp", "branch-misses")
        ),
        Role::Restarts => format!(
            "pipeline restarts (memory-ordering clears, self-modifying code, false sharing): look for shared written lines; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            match model {
                Model::Zen4 => "resyncs_or_nc_redirects",
                Model::Zen5 => "bp_redirects.resync",
                _ => "machine_clears.count (raw r10401c3)",
            }
        ),
        Role::Backend => "the backend cannot accept ops (waiting for data or execution units): drill down: `culprit stat --topdown --level 2 -- CMD`".to_string(),
        Role::Memory => format!(
            "loads wait for cache/DRAM misses: improve locality (blocking, smaller/denser data, prefetch); drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ls_any_fills_from_sys.all", "L1-dcache-load-misses")
        ),
        Role::Core => "execution units or dependency chains limit (divides, long latency ops): break dependency chains, vectorize; drill down: `culprit record -e cycles -- CMD` + `culprit annotate`".to_string(),
        Role::Retiring => "most slots do useful work: speed now comes from doing less work (better algorithm, vectorization); `culprit record -e instructions -- CMD` shows where".to_string(),
        Role::Heavy => format!(
            "microcoded/multi-op instructions (divides, gathers, string ops): replace them in hot code; drill down: `culprit record -e {} -- CMD` + `culprit annotate`",
            pick("ex_ret_ucode_ops", "instructions")
        ),
        Role::Light => "many simple ops: vectorize or reduce the instruction count; `culprit record -e instructions -- CMD` + `culprit annotate`".to_string(),
        Role::Smt => "the sibling SMT thread took dispatch slots: pin threads to separate cores (taskset) or disable SMT".to_string(),
    }
}

/// A node before flagging.
struct Raw {
    name: &'static str,
    role: Role,
    value: f64,
    reliability: f64,
    children: Vec<Raw>,
}

fn leaf(name: &'static str, role: Role, value: f64, reliability: f64) -> Raw {
    Raw {
        name,
        role,
        value,
        reliability,
        children: Vec::new(),
    }
}

/// Splits a parent into two children by an in-group share.
fn split(
    parent: &Raw,
    share: f64,
    rel: f64,
    a: (&'static str, Role),
    b: (&'static str, Role),
) -> Vec<Raw> {
    let r = parent.reliability.min(rel);
    vec![
        leaf(a.0, a.1, parent.value * share, r),
        leaf(b.0, b.1, parent.value * (1.0 - share), r),
    ]
}

/// Computes the Top-Down tree from the counts of `plan`'s groups (`counts[g][i]` is the count
/// of `plan.groups[g][i]`). Groups may come from one multiplexed run or from one run each
/// (`--no-multiplex`): every ratio uses counts of one group.
pub fn compute(plan: &Plan, counts: &[Vec<Count>]) -> Topdown {
    let model = plan.model;
    let w = model.width() as f64;
    let fc = |f| formula_counts(plan, counts, f);
    let l2 = plan.level >= 2;
    let mut nodes: Vec<Raw> = Vec::new();
    match model {
        Model::Zen4 | Model::Zen5 => {
            let frac = |f: Formula, num: &dyn Fn(&FormulaCounts) -> f64| -> (f64, f64) {
                fc(f).map_or((0.0, 0.0), |c| {
                    (div(num(&c), w * c.reference), c.reliability)
                })
            };
            let (fe, fe_r) = frac(Formula::AmdFe, &|c| c.get(Ev::AmdFeNoOps));
            let (be, be_r) = frac(Formula::AmdBe, &|c| c.get(Ev::AmdBackendStalls));
            let (smt, smt_r) = frac(Formula::AmdSmt, &|c| c.get(Ev::AmdSmtContention));
            let (ret, ret_r) = frac(Formula::AmdRet, &|c| c.get(Ev::AmdRetOps));
            let (bs, bs_r) = frac(Formula::AmdBs, &|c| {
                c.get(Ev::AmdOpsDispatched) - c.get(Ev::AmdRetOps)
            });
            let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, fe_r);
            let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, bs_r);
            let mut be_n = leaf("backend_bound", Role::Backend, be, be_r);
            let mut ret_n = leaf("retiring", Role::Retiring, ret, ret_r);
            let smt_n = leaf("smt_contention", Role::Smt, smt, smt_r);
            if l2 {
                if let Some(c) = fc(Formula::AmdFeSplit) {
                    let share = div(w * c.get(Ev::AmdFeNoOpsCmask), c.get(Ev::AmdFeNoOps));
                    fe_n.children = split(
                        &fe_n,
                        share,
                        c.reliability,
                        ("latency", Role::FetchLatency),
                        ("bandwidth", Role::FetchBandwidth),
                    );
                }
                if let Some(c) = fc(Formula::AmdBsSplit) {
                    let m = c.get(Ev::AmdBrMisp);
                    let share = div(m, m + c.get(Ev::AmdRestarts));
                    bs_n.children = split(
                        &bs_n,
                        share,
                        c.reliability,
                        ("mispredicts", Role::Mispredicts),
                        ("pipeline_restarts", Role::Restarts),
                    );
                }
                if let Some(c) = fc(Formula::AmdBeSplit) {
                    let share = div(c.get(Ev::AmdLoadNotComplete), c.get(Ev::AmdNotComplete));
                    be_n.children = split(
                        &be_n,
                        share,
                        c.reliability,
                        ("memory", Role::Memory),
                        ("cpu", Role::Core),
                    );
                }
                if let Some(c) = fc(Formula::AmdRetSplit) {
                    let share = 1.0 - div(c.get(Ev::AmdUcodeOps), c.get(Ev::AmdRetOps));
                    ret_n.children = split(
                        &ret_n,
                        share,
                        c.reliability,
                        ("fastpath", Role::Light),
                        ("microcode", Role::Heavy),
                    );
                }
            }
            nodes.extend([fe_n, bs_n, be_n, ret_n, smt_n]);
        }
        Model::IntelSkylake => {
            let slots = |c: &FormulaCounts| w * c.reference;
            let (fe, fe_r) = fc(Formula::SklFe).map_or((0.0, 0.0), |c| {
                (
                    div(c.get(Ev::IntelIdqNotDelivered), slots(&c)),
                    c.reliability,
                )
            });
            let (bs, bs_r) = fc(Formula::SklBs).map_or((0.0, 0.0), |c| {
                (
                    div(
                        c.get(Ev::IntelUopsIssued) - c.get(Ev::IntelRetireSlots)
                            + w * c.get(Ev::IntelRecoveryCycles),
                        slots(&c),
                    ),
                    c.reliability,
                )
            });
            let (ret, ret_r) = fc(Formula::SklRet).map_or((0.0, 0.0), |c| {
                (div(c.get(Ev::IntelRetireSlots), slots(&c)), c.reliability)
            });
            // TMA defines backend_bound as the remainder.
            let be = 1.0 - fe - bs - ret;
            let be_r = fe_r.min(bs_r).min(ret_r);
            let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, fe_r);
            let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, bs_r);
            let mut be_n = leaf("backend_bound", Role::Backend, be, be_r);
            let mut ret_n = leaf("retiring", Role::Retiring, ret, ret_r);
            if l2 {
                if let Some(c) = fc(Formula::SklFeSplit) {
                    let share = div(
                        w * c.get(Ev::IntelIdqCycles0),
                        c.get(Ev::IntelIdqNotDelivered),
                    );
                    fe_n.children = split(
                        &fe_n,
                        share,
                        c.reliability,
                        ("fetch_latency", Role::FetchLatency),
                        ("fetch_bandwidth", Role::FetchBandwidth),
                    );
                }
                if let Some(c) = fc(Formula::SklBsSplit) {
                    let m = c.get(Ev::IntelBrMisp);
                    let share = div(m, m + c.get(Ev::IntelMachineClears));
                    bs_n.children = split(
                        &bs_n,
                        share,
                        c.reliability,
                        ("branch_mispredicts", Role::Mispredicts),
                        ("machine_clears", Role::Restarts),
                    );
                }
                if let Some(c) = fc(Formula::SklBeSplit) {
                    let stores = c.get(Ev::IntelBoundOnStores);
                    let share = div(
                        c.get(Ev::IntelStallsMemAny) + stores,
                        c.get(Ev::IntelStallsTotal)
                            + c.get(Ev::IntelPorts1)
                            + ret * c.get(Ev::IntelPorts2)
                            + stores,
                    );
                    be_n.children = split(
                        &be_n,
                        share,
                        c.reliability.min(ret_r),
                        ("memory_bound", Role::Memory),
                        ("core_bound", Role::Core),
                    );
                }
                if let Some(c) = fc(Formula::SklRetSplit) {
                    let heavy = div(
                        c.get(Ev::IntelRetireSlots) + c.get(Ev::IntelMacroFused)
                            - c.get(Ev::Instructions),
                        slots(&c),
                    );
                    let r = ret_n.reliability.min(c.reliability);
                    ret_n.children = vec![
                        leaf("light_operations", Role::Light, ret - heavy, r),
                        leaf("heavy_operations", Role::Heavy, heavy, r),
                    ];
                }
            }
            nodes.extend([fe_n, bs_n, be_n, ret_n]);
        }
        Model::IntelPerfMetrics { .. } => {
            let c = fc(Formula::PerfMetrics);
            let r = c.as_ref().map_or(0.0, |c| c.reliability);
            let f = |e: Ev| c.as_ref().map_or(0.0, |c| div(c.get(e), c.reference));
            let (fe, bs, be, ret) = (
                f(Ev::TdFeBound),
                f(Ev::TdBadSpec),
                f(Ev::TdBeBound),
                f(Ev::TdRetiring),
            );
            let mut fe_n = leaf("frontend_bound", Role::Frontend, fe, r);
            let mut bs_n = leaf("bad_speculation", Role::BadSpeculation, bs, r);
            let mut be_n = leaf("backend_bound", Role::Backend, be, r);
            let mut ret_n = leaf("retiring", Role::Retiring, ret, r);
            if l2 {
                let (fl, bm, mb, hv) = (
                    f(Ev::TdFetchLat),
                    f(Ev::TdBrMispredict),
                    f(Ev::TdMemBound),
                    f(Ev::TdHeavyOps),
                );
                fe_n.children = vec![
                    leaf("fetch_latency", Role::FetchLatency, fl, r),
                    leaf("fetch_bandwidth", Role::FetchBandwidth, fe - fl, r),
                ];
                bs_n.children = vec![
                    leaf("branch_mispredicts", Role::Mispredicts, bm, r),
                    leaf("machine_clears", Role::Restarts, bs - bm, r),
                ];
                be_n.children = vec![
                    leaf("memory_bound", Role::Memory, mb, r),
                    leaf("core_bound", Role::Core, be - mb, r),
                ];
                ret_n.children = vec![
                    leaf("light_operations", Role::Light, ret - hv, r),
                    leaf("heavy_operations", Role::Heavy, hv, r),
                ];
            }
            nodes.extend([fe_n, bs_n, be_n, ret_n]);
        }
    }
    let value_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n.name == name)
            .map_or(0.0, |n| n.value)
    };
    let level1 = Level1 {
        frontend_bound: value_of("frontend_bound"),
        bad_speculation: value_of("bad_speculation"),
        backend_bound: value_of("backend_bound"),
        retiring: value_of("retiring"),
        smt_contention: value_of("smt_contention"),
    };
    let mut tree: Vec<Node> = nodes.into_iter().map(|n| flag(model, n, true)).collect();
    let bottleneck = mark_bottleneck(&mut tree);
    Topdown {
        model: model.name().to_string(),
        level: plan.level,
        level1,
        tree,
        bottleneck,
        thresholds: model.thresholds_label().to_string(),
    }
}

fn valid(v: f64) -> bool {
    v > VALID_RANGE.0 && v < VALID_RANGE.1
}

fn flag(model: Model, raw: Raw, parent_flagged: bool) -> Node {
    let th = threshold(raw.role);
    let mismeasured = !valid(raw.value);
    let mut flagged = parent_flagged && !mismeasured && th.is_some_and(|t| raw.value > t);
    // Retiring is also flagged when its heavy-operations child is over its threshold.
    if raw.role == Role::Retiring && !mismeasured {
        flagged |= raw.children.iter().any(|c| {
            c.role == Role::Heavy
                && valid(c.value)
                && threshold(Role::Heavy).is_some_and(|t| c.value > t)
        });
    }
    let children: Vec<Node> = raw
        .children
        .into_iter()
        .map(|c| flag(model, c, flagged))
        .collect();
    Node {
        name: raw.name.to_string(),
        value: raw.value,
        flagged,
        reliability: raw.reliability,
        unreliable: raw.reliability < UNRELIABLE_BELOW,
        mismeasured,
        critical: false,
        threshold: th,
        role: raw.role,
        // With level-2 children present, point at them instead of "rerun at level 2".
        hint: flagged.then(|| {
            if raw.role == Role::Backend && !children.is_empty() {
                "the backend cannot accept ops (waiting for data or execution units): see its \
                 level-2 children below"
                    .to_string()
            } else {
                hint(model, raw.role)
            }
        }),
        children,
    }
}

/// Descends into the highest flagged sibling at each level, stopping when there is none or
/// when the two highest flagged siblings are within [`BOTTLENECK_MARGIN`] (then the parent is
/// the bottleneck; at the top the higher one is taken). Marks the path `critical`.
fn mark_bottleneck(tree: &mut [Node]) -> Option<String> {
    let mut level: &mut [Node] = tree;
    let mut found: Option<String> = None;
    let mut top = true;
    loop {
        let mut flagged: Vec<usize> = (0..level.len()).filter(|&i| level[i].flagged).collect();
        flagged.sort_by(|&a, &b| level[b].value.total_cmp(&level[a].value));
        let Some(&best) = flagged.first() else {
            break;
        };
        if !top {
            if let Some(&second) = flagged.get(1) {
                if level[best].value - level[second].value <= BOTTLENECK_MARGIN {
                    break;
                }
            }
        }
        level[best].critical = true;
        found = Some(level[best].name.clone());
        let ambiguous_top = top
            && flagged
                .get(1)
                .is_some_and(|&s| level[best].value - level[s].value <= BOTTLENECK_MARGIN);
        if ambiguous_top {
            break;
        }
        top = false;
        level = &mut level[best].children;
    }
    found
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn c(value: u64, enabled_ns: u64, running_ns: u64) -> Count {
        Count {
            value,
            enabled_ns,
            running_ns,
        }
    }

    /// Builds counts for any plan from "true" per-cycle event rates: each group ran for
    /// `fraction[g]` of a 1 s run at 3 GHz (`jitter` perturbs each group's rates a little, as
    /// different time windows do).
    fn counts_from_rates(
        plan: &Plan,
        rates: &[(Ev, f64)],
        fraction: &[f64],
        jitter: f64,
    ) -> Vec<Vec<Count>> {
        let enabled = 1_000_000_000u64;
        plan.groups
            .iter()
            .enumerate()
            .map(|(gi, g)| {
                let f = fraction[gi.min(fraction.len() - 1)];
                let running = (enabled as f64 * f) as u64;
                let cycles = 3.0e9 * f;
                let wobble = 1.0 + jitter * if gi % 2 == 0 { 1.0 } else { -1.0 };
                g.iter()
                    .map(|e| {
                        let rate = if e.key == Ev::Cycles || e.key == Ev::Slots {
                            1.0
                        } else {
                            rates
                                .iter()
                                .find(|(k, _)| *k == e.key)
                                .map_or(0.0, |(_, r)| *r)
                                * wobble
                        };
                        c((rate * cycles) as u64, enabled, running)
                    })
                    .collect()
            })
            .collect()
    }

    /// Zen 5 pointer chase: almost every slot waits on the backend, mostly on loads.
    const ZEN5_POINTER_CHASE: &[(Ev, f64)] = &[
        (Ev::AmdFeNoOps, 0.32),
        (Ev::AmdFeNoOpsCmask, 0.024),
        (Ev::AmdBackendStalls, 6.88),
        (Ev::AmdSmtContention, 0.16),
        (Ev::AmdRetOps, 0.40),
        (Ev::AmdOpsDispatched, 0.64),
        (Ev::AmdBrMisp, 0.001),
        (Ev::AmdRestarts, 0.0002),
        (Ev::AmdNotComplete, 0.90),
        (Ev::AmdLoadNotComplete, 0.837),
        (Ev::AmdUcodeOps, 0.004),
    ];

    #[test]
    fn test_model_for_vendors_and_generations() {
        assert_eq!(
            model_for("AuthenticAMD", 0x19, 0x11, false, false),
            Ok(Model::Zen4)
        );
        assert_eq!(
            model_for("AuthenticAMD", 0x19, 0x61, false, false),
            Ok(Model::Zen4)
        );
        assert_eq!(
            model_for("AuthenticAMD", 0x1A, 0x02, false, false),
            Ok(Model::Zen5)
        );
        // Zen 3 (family 0x19 model 0x01) has no pipeline-utilization events: refuse.
        assert!(matches!(
            model_for("AuthenticAMD", 0x19, 0x01, false, false),
            Err(TopdownError::Unsupported(_))
        ));
        assert_eq!(
            model_for("GenuineIntel", 6, 0x55, false, false),
            Ok(Model::IntelSkylake)
        );
        assert_eq!(
            model_for("GenuineIntel", 6, 0x6A, true, false),
            Ok(Model::IntelPerfMetrics {
                width: 5,
                level2: false
            })
        );
        assert_eq!(
            model_for("GenuineIntel", 6, 0x8F, true, true),
            Ok(Model::IntelPerfMetrics {
                width: 6,
                level2: true
            })
        );
        // Haswell, an unknown Intel with PERF_METRICS, and other vendors: no guessing.
        assert!(model_for("GenuineIntel", 6, 0x3C, false, false).is_err());
        assert!(model_for("GenuineIntel", 6, 0xFE, true, false).is_err());
        let err = model_for("CentaurHauls", 7, 0x1B, false, false).unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
    }

    #[test]
    fn test_plan_zen5_level1_one_group_with_six_counters() {
        let p = plan(Model::Zen5, 1, 6).unwrap();
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0].len(), 6);
        assert_eq!(p.groups[0][0].key, Ev::Cycles);
        assert_eq!(p.groups[0][0].config, 0x76);
        assert!(p.fits_at_once());
        let configs: Vec<u64> = p.groups[0].iter().map(|e| e.config).collect();
        for want in [0x1000001A0, 0x100001EA0, 0x1000060A0, 0x7AA, 0xC1] {
            assert!(configs.contains(&want), "{want:#x} in {configs:x?}");
        }
    }

    #[test]
    fn test_plan_respects_counters_and_keeps_formulas_whole() {
        for (model, level, counters) in [
            (Model::Zen5, 1, 5),
            (Model::Zen5, 2, 5),
            (Model::Zen4, 2, 4),
            (Model::Zen5, 2, 3),
            (Model::IntelSkylake, 2, 4),
        ] {
            let p = plan(model, level, counters).unwrap();
            for g in &p.groups {
                assert_eq!(
                    g[0].key,
                    Ev::Cycles,
                    "{model:?}: every group has its own cycles"
                );
                assert!(
                    g.iter().filter(|e| !e.fixed).count() <= counters,
                    "{model:?} {g:?}"
                );
            }
            for (f, gs) in &p.placement {
                for e in f.events(level >= 2) {
                    assert!(
                        gs.iter()
                            .any(|&gi| p.groups[gi].iter().any(|d| d.key == *e)),
                        "{model:?} {f:?}: {e:?} placed"
                    );
                }
                // Only the SKL memory-bound formula (5 events) cannot fit 4 counters.
                if gs.len() > 1 {
                    assert_eq!((*f, counters), (Formula::SklBeSplit, 4));
                }
            }
        }
        // Zen 5 level 1 on 5 counters: two groups, so they multiplex.
        let p = plan(Model::Zen5, 1, 5).unwrap();
        assert_eq!(p.groups.len(), 2);
        assert!(!p.fits_at_once());
        // Zen 4 uses its own restart event and a cmask of 6.
        let p = plan(Model::Zen4, 2, 5).unwrap();
        let all: Vec<u64> = p.groups.iter().flatten().map(|e| e.config).collect();
        assert!(
            all.contains(&0x96) && all.contains(&0x1060001A0),
            "{all:x?}"
        );
        let p = plan(Model::Zen5, 2, 5).unwrap();
        let all: Vec<u64> = p.groups.iter().flatten().map(|e| e.config).collect();
        assert!(
            all.contains(&0x19F) && all.contains(&0x1080001A0),
            "{all:x?}"
        );
        assert!(matches!(
            plan(Model::Zen5, 1, 1),
            Err(TopdownError::TooFewCounters { .. })
        ));
        assert!(matches!(
            plan(
                Model::IntelPerfMetrics {
                    width: 5,
                    level2: false
                },
                2,
                8
            ),
            Err(TopdownError::Level { .. })
        ));
        assert!(plan(Model::Zen5, 3, 6).is_err());
    }

    #[test]
    fn test_zen5_branchy_level1_bad_speculation() {
        // A Zen 5 run of workloads/branchy as one 6-counter group (counts as `perf stat -x,`
        // would print them): 1.2e9 cycles, 9.6e9 slots.
        let p = plan(Model::Zen5, 1, 6).unwrap();
        let order: Vec<Ev> = p.groups[0].iter().map(|e| e.key).collect();
        let value = |k: Ev| match k {
            Ev::Cycles => 1_200_000_000,
            Ev::AmdFeNoOps => 1_344_000_000,
            Ev::AmdBackendStalls => 1_823_000_000,
            Ev::AmdSmtContention => 96_000_000,
            Ev::AmdOpsDispatched => 6_398_000_000,
            Ev::AmdRetOps => 2_980_000_000,
            _ => unreachable!(),
        };
        let counts = vec![order
            .iter()
            .map(|&k| c(value(k), 400_000_000, 400_000_000))
            .collect()];
        let td = compute(&p, &counts);
        let s = 9.6e9;
        assert!((td.level1.frontend_bound - 1_344e6 / s).abs() < 1e-9);
        assert!((td.level1.bad_speculation - (6_398e6 - 2_980e6) / s).abs() < 1e-9);
        assert!((td.level1.retiring - 2_980e6 / s).abs() < 1e-9);
        assert!(td.level1.bad_speculation >= 0.15, "{:?}", td.level1);
        assert!(
            (td.level1.sum() - 1.0).abs() <= 0.01,
            "sum {}",
            td.level1.sum()
        );
        assert_eq!(td.bottleneck.as_deref(), Some("bad_speculation"));
        let bs = find(&td.tree, "bad_speculation").unwrap();
        assert!(bs.flagged && bs.critical && !bs.unreliable);
        assert_eq!(bs.reliability, 1.0);
        assert!(bs
            .hint
            .as_deref()
            .unwrap()
            .contains("culprit record -e ex_ret_brn_misp"));
        assert!(td.thresholds.starts_with("Intel TMA thresholds"));
        // Not flagged: no hint; smt_contention is never flagged.
        let ret = find(&td.tree, "retiring").unwrap();
        assert!(!ret.flagged && ret.hint.is_none());
        assert_eq!(find(&td.tree, "smt_contention").unwrap().threshold, None);
    }

    #[test]
    fn test_zen5_pointer_chase_level2_memory_and_multiplexing() {
        // Multiplexed: 4 groups on 5 counters, each ran a quarter of the time.
        let p = plan(Model::Zen5, 2, 5).unwrap();
        let n = p.groups.len();
        assert!(n >= 3, "{n} groups");
        let mux = compute(
            &p,
            &counts_from_rates(&p, ZEN5_POINTER_CHASE, &[1.0 / n as f64], 0.01),
        );
        assert!(mux.level1.backend_bound >= 0.8, "{:?}", mux.level1);
        assert!(
            (mux.level1.sum() - 1.0).abs() <= 0.01,
            "sum {}",
            mux.level1.sum()
        );
        let be = find(&mux.tree, "backend_bound").unwrap();
        let mem = find(&mux.tree, "memory").unwrap();
        let cpu = find(&mux.tree, "cpu").unwrap();
        assert!(mem.value > cpu.value, "{mem:?} {cpu:?}");
        assert!((mem.value + cpu.value - be.value).abs() < 1e-9);
        assert!(be.flagged && mem.flagged && !cpu.flagged);
        assert_eq!(mux.bottleneck.as_deref(), Some("memory"));
        assert!(be.critical && mem.critical);
        assert!(mem
            .hint
            .as_deref()
            .unwrap()
            .contains("ls_any_fills_from_sys.all"));
        // A quarter of the run backs each number: unreliable.
        assert!(
            mem.reliability < UNRELIABLE_BELOW && mem.unreliable,
            "{mem:?}"
        );

        // --no-multiplex: each group alone in its own run, counted all the time.
        let solo = compute(&p, &counts_from_rates(&p, ZEN5_POINTER_CHASE, &[1.0], 0.01));
        let mem_solo = find(&solo.tree, "memory").unwrap();
        assert_eq!(mem_solo.reliability, 1.0);
        assert!(mem_solo.reliability > mem.reliability);
        for name in [
            "frontend_bound",
            "bad_speculation",
            "backend_bound",
            "retiring",
            "memory",
            "latency",
        ] {
            let a = find(&mux.tree, name).unwrap().value;
            let b = find(&solo.tree, name).unwrap().value;
            assert!((a - b).abs() <= 0.05, "{name}: {a} vs {b}");
        }
    }

    #[test]
    fn test_mismeasured_values_never_flagged() {
        // Dispatched < retired (a broken counter): bad_speculation comes out negative; and a
        // frontend count over the slot total.
        let p = plan(Model::Zen5, 1, 6).unwrap();
        let order: Vec<Ev> = p.groups[0].iter().map(|e| e.key).collect();
        let value = |k: Ev| match k {
            Ev::Cycles => 1_000_000,
            Ev::AmdFeNoOps => 9_000_000,
            Ev::AmdBackendStalls => 1_000_000,
            Ev::AmdSmtContention => 0,
            Ev::AmdOpsDispatched => 1_000_000,
            Ev::AmdRetOps => 2_000_000,
            _ => unreachable!(),
        };
        let counts = vec![order.iter().map(|&k| c(value(k), 10, 10)).collect()];
        let td = compute(&p, &counts);
        let fe = find(&td.tree, "frontend_bound").unwrap();
        let bs = find(&td.tree, "bad_speculation").unwrap();
        assert!(fe.value > 1.05 && fe.mismeasured && !fe.flagged, "{fe:?}");
        assert!(bs.value < -0.05 && bs.mismeasured && !bs.flagged, "{bs:?}");
        assert_ne!(td.bottleneck.as_deref(), Some("frontend_bound"));
    }

    #[test]
    fn test_intel_skylake_levels_from_recorded_counts() {
        let p = plan(Model::IntelSkylake, 2, 4).unwrap();
        // A Skylake-class run: 1e9 cycles (4e9 slots), counted without multiplexing.
        let value = |k: Ev| -> u64 {
            match k {
                Ev::Cycles => 1_000_000_000,
                Ev::IntelIdqNotDelivered => 400_000_000,
                Ev::IntelIdqCycles0 => 60_000_000,
                Ev::IntelUopsIssued => 2_300_000_000,
                Ev::IntelRetireSlots => 2_000_000_000,
                Ev::IntelRecoveryCycles => 50_000_000,
                Ev::IntelBrMisp => 9_000_000,
                Ev::IntelMachineClears => 1_000_000,
                Ev::IntelStallsMemAny => 300_000_000,
                Ev::IntelBoundOnStores => 20_000_000,
                Ev::IntelStallsTotal => 400_000_000,
                Ev::IntelPorts1 => 100_000_000,
                Ev::IntelPorts2 => 200_000_000,
                Ev::IntelMacroFused => 150_000_000,
                Ev::Instructions => 1_900_000_000,
                _ => unreachable!("{k:?}"),
            }
        };
        let counts: Vec<Vec<Count>> = p
            .groups
            .iter()
            .map(|g| g.iter().map(|e| c(value(e.key), 500, 500)).collect())
            .collect();
        let td = compute(&p, &counts);
        let l1 = td.level1;
        assert!((l1.frontend_bound - 0.10).abs() < 1e-9);
        assert!((l1.bad_speculation - (300e6 + 200e6) / 4e9).abs() < 1e-9);
        assert!((l1.retiring - 0.5).abs() < 1e-9);
        assert!((l1.backend_bound - (1.0 - 0.1 - 0.125 - 0.5)).abs() < 1e-9);
        assert_eq!(l1.smt_contention, 0.0);
        assert!((l1.sum() - 1.0).abs() < 1e-9);
        // Level 2 by the TMA formulas.
        let fl = find(&td.tree, "fetch_latency").unwrap().value;
        assert!((fl - 4.0 * 60e6 / 4e9).abs() < 1e-9, "{fl}");
        let bm = find(&td.tree, "branch_mispredicts").unwrap().value;
        assert!((bm - 0.9 * 0.125).abs() < 1e-9);
        let mb = find(&td.tree, "memory_bound").unwrap();
        let want = (300e6 + 20e6) / (400e6 + 100e6 + 0.5 * 200e6 + 20e6) * 0.275;
        assert!((mb.value - want).abs() < 1e-9, "{} vs {want}", mb.value);
        // That formula spans 5 programmable events: split over two groups, which were not
        // multiplexed here, so nothing is lost...
        assert_eq!(mb.reliability, 1.0);
        let heavy = find(&td.tree, "heavy_operations").unwrap().value;
        assert!((heavy - 250e6 / 4e9).abs() < 1e-9);
        assert_eq!(td.thresholds, "Intel TMA thresholds");
        // backend 0.275 is flagged; memory_bound 0.14 is not (> 0.20 needed), core_bound
        // 0.135 is (> 0.10): the descent ends there.
        assert!(find(&td.tree, "backend_bound").unwrap().flagged);
        assert!(!mb.flagged);
        assert!(find(&td.tree, "core_bound").unwrap().flagged);
        assert_eq!(td.bottleneck.as_deref(), Some("core_bound"));
        assert!(find(&td.tree, "backend_bound").unwrap().critical);
        let hint = find(&td.tree, "backend_bound")
            .unwrap()
            .hint
            .clone()
            .unwrap();
        assert!(hint.contains("level-2 children below"), "{hint}");
        // At level 1 the same node points at the level-2 run.
        let p1 = plan(Model::IntelSkylake, 1, 4).unwrap();
        let counts1: Vec<Vec<Count>> = p1
            .groups
            .iter()
            .map(|g| g.iter().map(|e| c(value(e.key), 500, 500)).collect())
            .collect();
        let td1 = compute(&p1, &counts1);
        assert_eq!(td1.level1, td.level1);
        let hint = find(&td1.tree, "backend_bound")
            .unwrap()
            .hint
            .clone()
            .unwrap();
        assert!(hint.contains("culprit stat --topdown --level 2"), "{hint}");
        assert_eq!(td1.bottleneck.as_deref(), Some("backend_bound"));
        // ...but multiplexed (half the time each), the split formula is penalized.
        let half: Vec<Vec<Count>> = counts
            .iter()
            .map(|g| g.iter().map(|x| c(x.value / 2, 1000, 500)).collect())
            .collect();
        let td = compute(&p, &half);
        let mb = find(&td.tree, "memory_bound").unwrap();
        assert!(
            (mb.reliability - 0.5 * SPLIT_PENALTY).abs() < 1e-9,
            "{mb:?}"
        );
        assert!((find(&td.tree, "frontend_bound").unwrap().reliability - 0.5).abs() < 1e-9);
    }

    #[test]
    fn test_intel_perf_metrics_level1_and_level2() {
        let model = Model::IntelPerfMetrics {
            width: 6,
            level2: true,
        };
        let p = plan(model, 2, 8).unwrap();
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.groups[0][0].name, "slots");
        assert_eq!(p.groups[0][0].config, 0x0400);
        // Values as the kernel reports them: slots x metric fraction.
        let value = |k: Ev| -> u64 {
            match k {
                Ev::Slots => 6_000_000_000,
                Ev::TdRetiring => 1_500_000_000,
                Ev::TdBadSpec => 300_000_000,
                Ev::TdFeBound => 600_000_000,
                Ev::TdBeBound => 3_600_000_000,
                Ev::TdHeavyOps => 120_000_000,
                Ev::TdBrMispredict => 270_000_000,
                Ev::TdFetchLat => 420_000_000,
                Ev::TdMemBound => 3_000_000_000,
                _ => unreachable!(),
            }
        };
        // Multiplexed with another tool's events: ran 60% of the time.
        let counts = vec![p.groups[0]
            .iter()
            .map(|e| c(value(e.key), 1000, 600))
            .collect()];
        let td = compute(&p, &counts);
        assert!((td.level1.backend_bound - 0.6).abs() < 1e-9);
        assert!((td.level1.retiring - 0.25).abs() < 1e-9);
        assert!((td.level1.sum() - 1.0).abs() < 1e-9);
        let mb = find(&td.tree, "memory_bound").unwrap();
        assert!((mb.value - 0.5).abs() < 1e-9);
        assert!((find(&td.tree, "core_bound").unwrap().value - 0.1).abs() < 1e-9);
        assert!((find(&td.tree, "machine_clears").unwrap().value - 0.005).abs() < 1e-9);
        assert!((mb.reliability - 0.6).abs() < 1e-9 && mb.unreliable);
        assert_eq!(td.bottleneck.as_deref(), Some("memory_bound"));
        // Level 1 only on Ice Lake.
        let icl = Model::IntelPerfMetrics {
            width: 5,
            level2: false,
        };
        let p = plan(icl, 1, 8).unwrap();
        assert_eq!(p.groups[0].len(), 5);
    }

    #[test]
    fn test_sampled_level1_per_function() {
        assert_eq!(
            parse_cpuid("AuthenticAMD,26,2,1"),
            Some(("AuthenticAMD".to_string(), 26, 2))
        );
        assert_eq!(parse_cpuid("garbage"), None);
        let evs = sampling_events(Model::Zen5).unwrap();
        assert_eq!(evs.len(), 6);
        assert_eq!(
            sampled_event(Model::Zen5, 4, 0x1000001A0),
            Some(Ev::AmdFeNoOps)
        );
        assert_eq!(sampled_event(Model::Zen5, 4, 0x76), Some(Ev::Cycles));
        assert_eq!(sampled_event(Model::Zen5, 0, 0), None);
        assert!(sampling_events(Model::IntelPerfMetrics {
            width: 5,
            level2: false
        })
        .is_err());
        // A function with 1e9 cycles (8e9 slots) sampled at period 1e6 (cycles) / 4e6 (rest).
        let rows = [
            (Ev::Cycles, 1_000_000_000, 1000),
            (Ev::AmdFeNoOps, 800_000_000, 200),
            (Ev::AmdBackendStalls, 4_000_000_000, 1000),
            (Ev::AmdSmtContention, 0, 0),
            (Ev::AmdOpsDispatched, 3_600_000_000, 900),
            (Ev::AmdRetOps, 2_400_000_000, 600),
        ];
        let r = level1_from_samples(Model::Zen5, &rows).unwrap();
        assert!((r.level1.frontend_bound - 0.1).abs() < 1e-12);
        assert!((r.level1.backend_bound - 0.5).abs() < 1e-12);
        assert!((r.level1.bad_speculation - 0.15).abs() < 1e-12);
        assert!((r.level1.retiring - 0.3).abs() < 1e-12);
        assert!((r.level1.sum() - 1.05).abs() < 1e-12);
        assert_eq!((r.samples, r.min_samples), (3700, 0));
        assert_eq!(level1_from_samples(Model::Zen5, &rows[1..]), None);
    }

    #[test]
    fn test_bottleneck_stops_when_siblings_are_close() {
        // Zen 4 level 2, backend 0.45 split evenly between memory and cpu: backend is the
        // bottleneck, the descent stops there.
        let rates: &[(Ev, f64)] = &[
            (Ev::AmdFeNoOps, 0.6),
            (Ev::AmdFeNoOpsCmask, 0.05),
            (Ev::AmdBackendStalls, 2.7),
            (Ev::AmdSmtContention, 0.0),
            (Ev::AmdRetOps, 2.4),
            (Ev::AmdOpsDispatched, 2.7),
            (Ev::AmdBrMisp, 0.01),
            (Ev::AmdRestarts, 0.001),
            (Ev::AmdNotComplete, 1.0),
            (Ev::AmdLoadNotComplete, 0.52),
            (Ev::AmdUcodeOps, 0.01),
        ];
        let p = plan(Model::Zen4, 2, 6).unwrap();
        let td = compute(&p, &counts_from_rates(&p, rates, &[1.0], 0.0));
        assert!(
            (td.level1.backend_bound - 0.45).abs() < 1e-6,
            "{:?}",
            td.level1
        );
        assert!(find(&td.tree, "memory").unwrap().flagged);
        assert!(find(&td.tree, "cpu").unwrap().flagged);
        assert_eq!(td.bottleneck.as_deref(), Some("backend_bound"));
        assert!(!find(&td.tree, "memory").unwrap().critical);
        // Level 1 ambiguity: frontend 0.30 vs backend 0.32 -> the higher is named, no descent.
        let rates: &[(Ev, f64)] = &[
            (Ev::AmdFeNoOps, 1.8),
            (Ev::AmdBackendStalls, 1.92),
            (Ev::AmdRetOps, 2.28),
            (Ev::AmdOpsDispatched, 2.28),
            (Ev::AmdNotComplete, 1.0),
            (Ev::AmdLoadNotComplete, 0.9),
        ];
        let td = compute(&p, &counts_from_rates(&p, rates, &[1.0], 0.0));
        assert_eq!(td.bottleneck.as_deref(), Some("backend_bound"));
        assert!(!find(&td.tree, "memory").unwrap().critical);
    }
}
