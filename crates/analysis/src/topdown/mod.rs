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

mod compute;
mod model;
mod plan;
mod report;
mod sampled;
#[cfg(test)]
mod tests;

pub use compute::*;
pub use model::*;
pub use plan::*;
pub use report::*;
pub use sampled::*;

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
    /// A file for per-function Top-Down holds none of the Top-Down sampling events.
    #[error("the file has no Top-Down events (its events: {}): record them with `culprit record --topdown -- CMD`", events.join(", "))]
    NoTopdownEvents {
        /// The file's events.
        events: Vec<String>,
    },
    /// A file for per-function Top-Down does not say which CPU recorded it.
    #[error("the file has no x86 CPUID header (HEADER_CPUID), so the CPU model of its Top-Down events is unknown")]
    NoCpuid,
    /// A file for per-function Top-Down lacks some level-1 events of its CPU's model.
    #[error("the file lacks the level-1 events {} (record it with `culprit record --topdown -- CMD`)", .0.join(", "))]
    MissingEvents(Vec<String>),
    /// Not enough usable counters.
    #[error("Top-Down needs at least {needed} usable general-purpose counters; this machine has {usable}")]
    TooFewCounters {
        /// Minimum needed.
        needed: usize,
        /// Usable.
        usable: usize,
    },
}
