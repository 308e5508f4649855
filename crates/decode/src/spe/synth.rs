//! Which perf events a record becomes, as perf 6.1's `arm_spe_sample` synthesises them with
//! the default `--itrace` options (every SPE event kind on).
//!
//! perf 6.1 knows `l1d-miss`, `l1d-access`, `llc-miss`, `llc-access`, `tlb-miss`,
//! `tlb-access`, `branch-miss`, `remote-access` and `memory` (its binary has no SPE
//! `instructions` event; that came later). One record yields one sample per matching kind, in
//! the order below (flc, llc, tlb, branch, remote, memory: perf's `arm_spe_sample`); `memory`
//! only for loads/stores/atomics (op class 1): perf skips it when the synthesised data source
//! is zero, which it is for other ops (in both data source mappings: checked against perf 6.1
//! on the crafted files, generic and Neoverse). [`data_source`] gives that data source.

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
    pub const LVL_NA: u64 = 0x01;
    pub const LVL_HIT: u64 = 0x02;
    pub const LVL_MISS: u64 = 0x04;
    pub const LVL_L1: u64 = 0x08;
    pub const LVL_L2: u64 = 0x20;
    pub const LVL_L3: u64 = 0x40;
    pub const LVL_LOC_RAM: u64 = 0x80;
    pub const SNOOP_SHIFT: u32 = 19;
    pub const SNOOP_NA: u64 = 0x01;
    pub const SNOOP_NONE: u64 = 0x02;
    pub const SNOOP_HIT: u64 = 0x04;
    pub const DTLB_SHIFT: u32 = 26;
    pub const TLB_HIT: u64 = 0x02;
    pub const TLB_MISS: u64 = 0x04;
    pub const TLB_WK: u64 = 0x20;
    pub const LVLNUM_SHIFT: u32 = 33;
    pub const LVLNUM_RAM: u64 = 0x0d;
    pub const LVLNUM_NA: u64 = 0x0f;
    pub const REMOTE_SHIFT: u32 = 37;
    pub const SNOOPX_SHIFT: u32 = 38;
    pub const SNOOPX_PEER: u64 = 0x02;
}

/// Which data source mapping perf 6.1 uses: the Neoverse one (it reads the data source
/// packet) on Neoverse N1, N2 and V1 cores, by the MIDR in the file's CPUID header, the
/// generic one (from the event bits) elsewhere and when the header is absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DataSourceMapping {
    /// `arm_spe__synth_data_source_generic`.
    #[default]
    Generic,
    /// `arm_spe__synth_data_source_neoverse`.
    Neoverse,
}

impl DataSourceMapping {
    /// The mapping for a HEADER_CPUID string (`0x00000000410fd0c0`: perf reads it with
    /// `strtol(.., 16)`); variant and revision are ignored (`MIDR_ALL_VERSIONS`).
    pub fn from_cpuid(cpuid: Option<&str>) -> DataSourceMapping {
        /// Implementer, architecture and part number (`MIDR_CPU_MODEL_MASK`).
        const MODEL_MASK: u64 = 0xff0f_fff0;
        /// Neoverse N1, N2 and V1 (perf 6.1's `neoverse_spe` list).
        const NEOVERSE: [u64; 3] = [0x410f_d0c0, 0x410f_d490, 0x410f_d400];
        let midr = cpuid.and_then(|c| {
            let c = c.trim();
            let digits = c
                .strip_prefix("0x")
                .or_else(|| c.strip_prefix("0X"))
                .unwrap_or(c);
            u64::from_str_radix(digits, 16).ok()
        });
        match midr {
            Some(m) if NEOVERSE.contains(&(m & MODEL_MASK)) => DataSourceMapping::Neoverse,
            _ => DataSourceMapping::Generic,
        }
    }
}

/// The `perf_mem_data_src` value perf 6.1 gives the samples of `record`
/// (`arm_spe__synth_data_source`): 0 for ops that are neither loads nor stores; else the op,
/// the level from `mapping`, and the DTLB walk with hit/miss.
pub fn data_source(record: &SpeRecord, mapping: DataSourceMapping) -> u64 {
    let op = match record.op_type {
        Some((OP_CLASS_LOAD_STORE, subclass)) if subclass & 1 == 1 => mem::OP_STORE,
        Some((OP_CLASS_LOAD_STORE, _)) => mem::OP_LOAD,
        _ => return 0,
    };
    let mut value = op
        | match mapping {
            DataSourceMapping::Generic => generic_level(record),
            DataSourceMapping::Neoverse => neoverse_level(record, op == mem::OP_STORE),
        };
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

/// The generic mapping: cache level from the LLC events, else the L1D events, with hit/miss;
/// remote access as `mem_remote`.
fn generic_level(record: &SpeRecord) -> u64 {
    let outcome = |miss: u64| {
        if record.has_event(miss) {
            mem::LVL_MISS
        } else {
            mem::LVL_HIT
        }
    };
    let level = if record.has_event(EVENT_LLC_ACCESS | EVENT_LLC_MISS) {
        mem::LVL_L3 | outcome(EVENT_LLC_MISS)
    } else if record.has_event(EVENT_L1D_ACCESS | EVENT_L1D_REFILL) {
        mem::LVL_L1 | outcome(EVENT_L1D_REFILL)
    } else {
        0
    };
    let mut value = level << mem::LVL_SHIFT;
    if record.has_event(EVENT_REMOTE_ACCESS) {
        value |= 1 << mem::REMOTE_SHIFT;
    }
    value
}

/// The Neoverse mapping of the data source packet (perf 6.1's values, each checked against
/// its output): level, level number and snoop; stores say nothing (all N/A). A record
/// without the packet reads as source 0 (L1D), as in perf, whose record starts zeroed.
fn neoverse_level(record: &SpeRecord, store: bool) -> u64 {
    let fields = |lvl: u64, lvl_num: u64, snoop: u64, snoopx: u64, remote: u64| {
        (lvl << mem::LVL_SHIFT)
            | (lvl_num << mem::LVLNUM_SHIFT)
            | (snoop << mem::SNOOP_SHIFT)
            | (snoopx << mem::SNOOPX_SHIFT)
            | (remote << mem::REMOTE_SHIFT)
    };
    if store {
        return fields(mem::LVL_NA, mem::LVLNUM_NA, mem::SNOOP_NA, 0, 0);
    }
    let hit = mem::LVL_HIT;
    match record.data_source.unwrap_or(0) {
        // L1D, L2.
        0x0 => fields(mem::LVL_L1 | hit, 1, mem::SNOOP_NONE, 0, 0),
        0x8 => fields(mem::LVL_L2 | hit, 2, mem::SNOOP_NONE, 0, 0),
        // Peer core: L2 of another core.
        0x9 => fields(mem::LVL_L2 | hit, 2, 0, mem::SNOOPX_PEER, 0),
        // Local cluster, peer cluster: some cache-to-cache transfer, taken as L3.
        0xa | 0xc => fields(mem::LVL_L3 | hit, 3, 0, mem::SNOOPX_PEER, 0),
        // System cache, taken as L3.
        0xb => fields(mem::LVL_L3 | hit, 3, mem::SNOOP_HIT, 0, 0),
        // Another socket: level unknown.
        0xd => fields(mem::LVL_NA, mem::LVLNUM_NA, 0, mem::SNOOPX_PEER, 1),
        // DRAM.
        0xe => fields(
            mem::LVL_LOC_RAM | hit,
            mem::LVLNUM_RAM,
            mem::SNOOP_NONE,
            0,
            0,
        ),
        _ => 0,
    }
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
    fn neoverse_data_sources_equal_perf_61() {
        // perf 6.1's `perf script -F data_src` of loads with each Neoverse data source value
        // (L1D and LLC access events), on a file whose CPUID is Neoverse N1, then a store.
        let expected = [
            (0x0, 0x2_0010_0142u64),
            (0x8, 0x4_0010_0442),
            (0x9, 0x84_0000_0442),
            (0xa, 0x86_0000_0842),
            (0xb, 0x6_0020_0842),
            (0xc, 0x86_0000_0842),
            (0xd, 0xbe_0000_0022),
            (0xe, 0x1a_0010_1042),
            (0x3, 0x2),
        ];
        for (source, value) in expected {
            let load = SpeRecord {
                events: EVENT_L1D_ACCESS | EVENT_LLC_ACCESS,
                op_type: Some((OP_CLASS_LOAD_STORE, 0)),
                data_source: Some(source),
                ..SpeRecord::default()
            };
            assert_eq!(
                data_source(&load, DataSourceMapping::Neoverse),
                value,
                "source {source:#x}"
            );
        }
        let store = SpeRecord {
            events: EVENT_L1D_ACCESS | EVENT_LLC_ACCESS,
            op_type: Some((OP_CLASS_LOAD_STORE, 1)),
            data_source: Some(0xe),
            ..SpeRecord::default()
        };
        assert_eq!(
            data_source(&store, DataSourceMapping::Neoverse),
            0x1e_0008_0024
        );
    }

    #[test]
    fn mapping_from_the_cpuid_header() {
        use DataSourceMapping::*;
        for (cpuid, mapping) in [
            (Some("0x00000000410fd0c0"), Neoverse),
            (Some("0x00000000411fd0c1"), Neoverse),
            (Some("0x00000000410fd490"), Neoverse),
            (Some("0x00000000410fd400"), Neoverse),
            (Some("0x00000000410fd4f0"), Generic),
            (Some("0x00000000410fd080"), Generic),
            (Some("GenuineIntel,6,85,4"), Generic),
            (None, Generic),
        ] {
            assert_eq!(DataSourceMapping::from_cpuid(cpuid), mapping, "{cpuid:?}");
        }
    }

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
        assert_eq!(data_source(&record, DataSourceMapping::Generic), 0);
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
        assert_eq!(data_source(&load, DataSourceMapping::Generic), 0x9000_0882);
        let store = SpeRecord {
            events: EVENT_L1D_ACCESS | EVENT_REMOTE_ACCESS,
            op_type: Some((OP_CLASS_LOAD_STORE, 1)),
            ..SpeRecord::default()
        };
        assert_eq!(
            data_source(&store, DataSourceMapping::Generic),
            0x20_0000_0144
        );
    }
}
