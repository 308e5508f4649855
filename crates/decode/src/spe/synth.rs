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

/// perf's `perf_mem_data_src` bit fields used by the SPE synthesis (uapi perf_event.h).
mod mem {
    pub const OP_LOAD: u64 = 0x02;
    pub const OP_STORE: u64 = 0x04;
    pub const LVL_SHIFT: u32 = 5;
    pub const LVL_HIT: u64 = 0x02;
    pub const LVL_MISS: u64 = 0x04;
    pub const LVL_L1: u64 = 0x08;
    pub const LVL_L3: u64 = 0x40;
    pub const DTLB_SHIFT: u32 = 26;
    pub const TLB_HIT: u64 = 0x02;
    pub const TLB_MISS: u64 = 0x04;
    pub const TLB_WK: u64 = 0x20;
    pub const REMOTE_SHIFT: u32 = 37;
}

/// The `perf_mem_data_src` value perf 6.1 gives the samples of `record`
/// (`arm_spe__synth_data_source` with the generic, non-Neoverse level mapping): 0 for ops that
/// are neither loads nor stores; else the op, the cache level (LLC events first, then L1D)
/// with hit/miss, remote as `mem_remote`, and the TLB walk with hit/miss. The Neoverse
/// mapping (chosen by perf from the CPUID MIDR) reads the data source packet instead; it is
/// not reproduced (see docs/spe.md).
pub fn data_source(record: &SpeRecord) -> u64 {
    let op = match record.op_type {
        Some((OP_CLASS_LOAD_STORE, subclass)) if subclass & 1 == 1 => mem::OP_STORE,
        Some((OP_CLASS_LOAD_STORE, _)) => mem::OP_LOAD,
        _ => return 0,
    };
    let level = if record.has_event(EVENT_LLC_ACCESS | EVENT_LLC_MISS) {
        let hit = if record.has_event(EVENT_LLC_MISS) {
            mem::LVL_MISS
        } else {
            mem::LVL_HIT
        };
        mem::LVL_L3 | hit
    } else if record.has_event(EVENT_L1D_ACCESS | EVENT_L1D_REFILL) {
        let hit = if record.has_event(EVENT_L1D_REFILL) {
            mem::LVL_MISS
        } else {
            mem::LVL_HIT
        };
        mem::LVL_L1 | hit
    } else {
        0
    };
    let mut value = op | (level << mem::LVL_SHIFT);
    if record.has_event(EVENT_REMOTE_ACCESS) {
        value |= 1 << mem::REMOTE_SHIFT;
    }
    if record.has_event(EVENT_TLB_ACCESS | EVENT_TLB_WALK) {
        let hit = if record.has_event(EVENT_TLB_WALK) {
            mem::TLB_MISS
        } else {
            mem::TLB_HIT
        };
        value |= (mem::TLB_WK | hit) << mem::DTLB_SHIFT;
    }
    value
}

/// The address perf gives a synthesised sample (`sample.addr`): the branch target for
/// `branch-miss`, the data virtual address for every other event.
pub fn sample_address(event: SpeEvent, record: &SpeRecord) -> Option<u64> {
    match event {
        SpeEvent::BranchMiss => record.branch_target,
        _ => record.data_virtual,
    }
}

/// Every synthesised event, in the order perf creates their evsels.
pub const ALL_EVENTS: [SpeEvent; 9] = [
    SpeEvent::L1dMiss,
    SpeEvent::L1dAccess,
    SpeEvent::LlcMiss,
    SpeEvent::LlcAccess,
    SpeEvent::TlbMiss,
    SpeEvent::TlbAccess,
    SpeEvent::BranchMiss,
    SpeEvent::RemoteAccess,
    SpeEvent::Memory,
];

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
        assert_eq!(data_source(&record), 0);
    }

    #[test]
    fn data_source_of_a_load_and_a_remote_store() {
        // Values perf 6.1 printed for the crafted file (tests/fixtures/spe/perf-6.1-script.txt).
        let load = SpeRecord {
            events: EVENT_L1D_ACCESS
                | EVENT_L1D_REFILL
                | EVENT_TLB_ACCESS
                | EVENT_TLB_WALK
                | EVENT_LLC_ACCESS
                | EVENT_LLC_MISS,
            op_type: Some((OP_CLASS_LOAD_STORE, 0)),
            ..SpeRecord::default()
        };
        assert_eq!(data_source(&load), 0x9000_0882);
        let store = SpeRecord {
            events: EVENT_L1D_ACCESS | EVENT_REMOTE_ACCESS,
            op_type: Some((OP_CLASS_LOAD_STORE, 1)),
            ..SpeRecord::default()
        };
        assert_eq!(data_source(&store), 0x20_0000_0144);
    }
}
