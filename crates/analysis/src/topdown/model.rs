//! The CPU models Top-Down knows, their events and how they are encoded.

use serde::Serialize;

use super::*;

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
