//! The precise fields of a sample (PEBS-style sample fields, IBS registers): the
//! `samples` columns data_addr … ibs_fetch_latency. Decoders of new precise sources (ARM
//! SPE) add their reading here.

use culprit_decode::abi::mem;
use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample};
use culprit_decode::model::Sample;
use culprit_decode::pebs;

/// How the precise fields of an event's samples are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Precise {
    /// From the sample's fields (ADDR, PHYS_ADDR, WEIGHT, DATA_SRC: PEBS and the like).
    Fields,
    /// From the raw IBS registers.
    Ibs(IbsKind),
}

/// The precise fields of one sample (all `None` when it has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PreciseFields {
    pub(super) data_addr: Option<u64>,
    pub(super) phys_addr: Option<u64>,
    pub(super) weight: Option<u64>,
    pub(super) data_src: Option<u64>,
    pub(super) dc_miss: Option<bool>,
    pub(super) dtlb_miss: Option<bool>,
    pub(super) branch_taken: Option<bool>,
    pub(super) branch_mispredicted: Option<bool>,
    pub(super) ibs_op_latency: Option<u64>,
    pub(super) ibs_dc_miss_latency: Option<u64>,
    pub(super) ibs_fetch_latency: Option<u64>,
}

/// The precise fields of a PEBS-style sample (ADDR, PHYS_ADDR, WEIGHT, DATA_SRC as
/// recorded; unfilled values, 0 or `PERF_MEM_NA`, are null).
pub(super) fn precise_from_fields(s: &Sample) -> PreciseFields {
    let Some(p) = pebs::from_pebs(s) else {
        return PreciseFields::default();
    };
    let src = p.data_src;
    PreciseFields {
        data_addr: p.addr,
        phys_addr: p.phys_addr,
        weight: p.latency,
        data_src: src.map(|d| d.value),
        dc_miss: src
            .filter(|d| d.level != pebs::MemLevel::Na)
            .map(|d| d.l1_miss()),
        dtlb_miss: src.and_then(|d| l1_dtlb_miss(d.value)),
        ..PreciseFields::default()
    }
}

/// Whether a `perf_mem_data_src` says the access missed the first-level DTLB: a TLB miss,
/// or a hit in the L2 TLB alone; `None` when the TLB outcome is not available or names no
/// single level (Intel's "L1 or L2 hit").
pub(super) fn l1_dtlb_miss(data_src: u64) -> Option<bool> {
    let tlb = (data_src >> mem::TLB_SHIFT) & 0x7f;
    let (l1, l2) = (tlb & mem::TLB_L1 != 0, tlb & mem::TLB_L2 != 0);
    if tlb & mem::TLB_MISS != 0 {
        return Some(true);
    }
    match (tlb & mem::TLB_HIT != 0, l1, l2) {
        (true, true, false) => Some(false),
        (true, false, true) => Some(true),
        _ => None,
    }
}

/// The precise fields of an IBS sample, from its raw registers (decoded as `culprit
/// script` and `culprit ibs` decode them); all null when the payload is not a valid sample.
pub(super) fn precise_from_ibs(
    kind: IbsKind,
    raw: &[u8],
    ctx: &IbsContext,
    ip: u64,
) -> PreciseFields {
    match ibs::decode(kind, raw, ctx) {
        Ok(IbsSample::Op(op)) => {
            let p = pebs::from_ibs_op(&op, ctx, ip);
            let mem_op = op.data3.filter(|d| d.ld_op || d.st_op);
            let branch = op.data.filter(|d| d.brn_ret);
            PreciseFields {
                data_addr: p.addr,
                phys_addr: p.phys_addr,
                weight: p.latency,
                data_src: p.data_src.map(|d| d.value),
                dc_miss: mem_op.map(|d| d.dc_miss),
                dtlb_miss: mem_op.map(|d| d.dc_l1_tlb_miss),
                branch_taken: branch.map(|d| d.brn_taken),
                branch_mispredicted: branch.map(|d| d.brn_misp),
                ibs_op_latency: op.data.map(|d| u64::from(d.tag_to_ret)),
                ibs_dc_miss_latency: op
                    .data3
                    .filter(|d| d.ld_op && d.dc_miss)
                    .map(|d| u64::from(d.dc_miss_lat)),
                ibs_fetch_latency: None,
            }
        }
        Ok(IbsSample::Fetch(f)) => PreciseFields {
            ibs_fetch_latency: Some(u64::from(f.ctl.lat)),
            ..PreciseFields::default()
        },
        Err(_) => PreciseFields::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlb(bits: u64) -> u64 {
        bits << mem::TLB_SHIFT
    }

    #[test]
    fn test_l1_dtlb_miss_of_each_data_src_tlb_outcome() {
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_MISS | mem::TLB_L2)), Some(true));
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L1)), Some(false));
        // A hit in the L2 TLB missed the L1 DTLB (IBS: DcL1TlbMiss without DcL2TlbMiss).
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L2)), Some(true));
        // Intel's "L1 or L2 hit" does not say which.
        assert_eq!(
            l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L1 | mem::TLB_L2)),
            None
        );
        assert_eq!(l1_dtlb_miss(tlb(1)), None, "TLB N/A");
        assert_eq!(l1_dtlb_miss(0), None);
    }
}
