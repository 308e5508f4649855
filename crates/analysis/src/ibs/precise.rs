//! How a precise sample counts in the data-centric tables: which SPE sample stands for its
//! record, and when a PEBS data source says the L1 missed.

use culprit_decode::model::{Profile, Sample};
use culprit_decode::pebs::{MemDataSrc, MemLevel};

/// Whether `s` is the `memory` sample perf synthesises from an SPE record.
pub(super) fn is_spe_memory_sample(profile: &Profile, s: &Sample) -> bool {
    let name = profile
        .events
        .get(s.event as usize)
        .map(|e| e.name.as_str());
    name == Some(culprit_decode::spe::SpeEvent::Memory.perf_name())
}

/// Whether a PEBS data source says the access missed the L1: served beyond the L1, or an L1
/// access with the MISS bit (PEBS stores only say "L1 hit" / "L1 miss").
pub(super) fn pebs_l1_miss(data_src: Option<MemDataSrc>) -> bool {
    data_src.is_some_and(|d| {
        d.l1_miss()
            || (d.level == MemLevel::L1
                && (d.value >> culprit_decode::abi::mem::LVL_SHIFT)
                    & culprit_decode::abi::mem::LVL_MISS
                    != 0)
    })
}
