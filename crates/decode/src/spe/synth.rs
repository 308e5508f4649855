//! Which perf events a record becomes, as perf 6.1's `arm_spe_sample` synthesises them with
//! the default `--itrace` options (every SPE event kind on).
//!
//! perf 6.1 knows `l1d-miss`, `l1d-access`, `llc-miss`, `llc-access`, `tlb-miss`,
//! `tlb-access`, `branch-miss`, `remote-access` and `memory` (its binary has no SPE
//! `instructions` event; that came later). One record yields one sample per matching kind, in
//! the order below (flc, llc, tlb, branch, remote, memory: perf's `arm_spe_sample`); `memory`
//! only for loads/stores/atomics (op class 1): perf skips it when the synthesised data source
//! is zero, which it is for other ops. Not yet checked against perf 6.1's own output: in the
//! Neoverse data-source variant the non-memory data source may not be zero (see docs/spe.md).

use super::record::{
    SpeRecord, EVENT_L1D_ACCESS, EVENT_L1D_REFILL, EVENT_LLC_ACCESS, EVENT_LLC_MISS,
    EVENT_MISPREDICTED, EVENT_REMOTE_ACCESS, EVENT_TLB_ACCESS, EVENT_TLB_WALK,
};

/// A perf-synthesised SPE event kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpeEvent {
    /// L1 data cache refill.
    L1dMiss,
    /// L1 data cache access.
    L1dAccess,
    /// Last-level cache miss.
    LlcMiss,
    /// Last-level cache access.
    LlcAccess,
    /// TLB walk.
    TlbMiss,
    /// TLB access.
    TlbAccess,
    /// Mispredicted branch.
    BranchMiss,
    /// Access served by another socket or chip.
    RemoteAccess,
    /// Any load or store.
    Memory,
}

impl SpeEvent {
    /// The event name perf gives the synthesised samples.
    pub fn perf_name(self) -> &'static str {
        match self {
            SpeEvent::L1dMiss => "l1d-miss",
            SpeEvent::L1dAccess => "l1d-access",
            SpeEvent::LlcMiss => "llc-miss",
            SpeEvent::LlcAccess => "llc-access",
            SpeEvent::TlbMiss => "tlb-miss",
            SpeEvent::TlbAccess => "tlb-access",
            SpeEvent::BranchMiss => "branch-miss",
            SpeEvent::RemoteAccess => "remote-access",
            SpeEvent::Memory => "memory",
        }
    }
}

/// Op class of loads, stores and atomics in the op type packet.
const OP_CLASS_LOAD_STORE: u8 = 1;

/// The events perf 6.1 synthesises for `record`, in perf's order.
pub fn synthesized_events(record: &SpeRecord) -> Vec<SpeEvent> {
    const BY_EVENT_BIT: [(u64, SpeEvent); 8] = [
        (EVENT_L1D_REFILL, SpeEvent::L1dMiss),
        (EVENT_L1D_ACCESS, SpeEvent::L1dAccess),
        (EVENT_LLC_MISS, SpeEvent::LlcMiss),
        (EVENT_LLC_ACCESS, SpeEvent::LlcAccess),
        (EVENT_TLB_WALK, SpeEvent::TlbMiss),
        (EVENT_TLB_ACCESS, SpeEvent::TlbAccess),
        (EVENT_MISPREDICTED, SpeEvent::BranchMiss),
        (EVENT_REMOTE_ACCESS, SpeEvent::RemoteAccess),
    ];
    let mut events: Vec<SpeEvent> = BY_EVENT_BIT
        .iter()
        .filter(|(bit, _)| record.has_event(*bit))
        .map(|&(_, event)| event)
        .collect();
    if matches!(record.op_type, Some((OP_CLASS_LOAD_STORE, _))) {
        events.push(SpeEvent::Memory);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_load_yields_its_miss_and_access_events_then_memory() {
        let record = SpeRecord {
            events: EVENT_L1D_ACCESS | EVENT_L1D_REFILL | EVENT_TLB_ACCESS | EVENT_LLC_MISS,
            op_type: Some((OP_CLASS_LOAD_STORE, 0)),
            ..SpeRecord::default()
        };
        let names: Vec<_> = synthesized_events(&record)
            .into_iter()
            .map(SpeEvent::perf_name)
            .collect();
        assert_eq!(
            names,
            ["l1d-miss", "l1d-access", "llc-miss", "tlb-access", "memory"]
        );
    }

    #[test]
    fn a_mispredicted_branch_is_no_memory_sample() {
        let record = SpeRecord {
            events: EVENT_MISPREDICTED,
            op_type: Some((2, 0)),
            ..SpeRecord::default()
        };
        assert_eq!(synthesized_events(&record), [SpeEvent::BranchMiss]);
        assert!(synthesized_events(&SpeRecord::default()).is_empty());
    }
}
