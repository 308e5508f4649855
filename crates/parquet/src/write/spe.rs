//! The precise columns of an ARM SPE sample (docs/spe.md): perf's fields as PEBS fills them,
//! and from the SPE record the columns IBS fills where the meaning is the same.

use culprit_decode::model::{Sample, SpeFields};
use culprit_decode::spe::record::{EVENT_L1D_REFILL, EVENT_MISPREDICTED, EVENT_TLB_WALK};

use super::precise::PreciseFields;

/// Event bit 6 of the events packet: a branch was not taken.
const EVENT_NOT_TAKEN: u64 = 1 << 6;
/// Op class of branches in the op type packet.
const OP_CLASS_BRANCH: u8 = 2;

/// `fields` (from perf's sample fields) completed with the SPE record's: L1D refill and TLB
/// walk of loads/stores, outcome of branches, total latency as the op latency (IBS's
/// tag-to-retire).
pub(super) fn complete(s: &Sample, spe: &SpeFields, fields: PreciseFields) -> PreciseFields {
    let memory = spe.is_memory();
    let branch = matches!(spe.op_type, Some((OP_CLASS_BRANCH, _)));
    PreciseFields {
        dc_miss: memory.then(|| spe.has_event(EVENT_L1D_REFILL)),
        dtlb_miss: memory.then(|| spe.has_event(EVENT_TLB_WALK)),
        branch_taken: branch.then(|| !spe.has_event(EVENT_NOT_TAKEN)),
        branch_mispredicted: branch.then(|| spe.has_event(EVENT_MISPREDICTED)),
        ibs_op_latency: spe.total_latency.map(u64::from),
        // perf gives a branch sample the branch target as its address: not data.
        data_addr: if branch { None } else { fields.data_addr },
        weight: fields.weight.or(s.weight.filter(|&w| w != 0)),
        ..fields
    }
}
