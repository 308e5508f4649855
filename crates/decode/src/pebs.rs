//! Precise memory samples: `perf_mem_data_src` decoded, and the one precise-sample model that
//! Intel PEBS (PERF_SAMPLE_ADDR / DATA_SRC / WEIGHT(_STRUCT) / PHYS_ADDR) and AMD IBS op
//! samples (via [`crate::ibs::op_data_src`]) both turn into.
//!
//! Unfilled PEBS fields are what the kernel writes when it has nothing: weight 0,
//! data_src `PERF_MEM_NA`, addr 0; they become `None` here.

use serde::Serialize;

use crate::ibs::{self, mem, IbsContext, IbsOp};
use crate::model::Sample;

/// The memory operation of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemOp {
    /// Not available.
    Na,
    /// Load.
    Load,
    /// Store.
    Store,
    /// Prefetch.
    Prefetch,
    /// Code execution.
    Exec,
}

/// Where the data was found, as one level (culprit's summary of mem_lvl / mem_lvl_num).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemLevel {
    /// L1 data cache.
    L1,
    /// Line fill buffer / miss address buffer.
    Lfb,
    /// L2.
    L2,
    /// L3.
    L3,
    /// L4 or a memory-side cache.
    L4,
    /// Some cache (another core's or CCX's), as AMD reports.
    AnyCache,
    /// DRAM.
    Ram,
    /// Persistent / long-latency memory.
    Pmem,
    /// CXL memory.
    Cxl,
    /// I/O (MMIO).
    Io,
    /// Uncached memory.
    Uncached,
    /// Not available.
    Na,
}

impl MemLevel {
    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            MemLevel::L1 => "L1",
            MemLevel::Lfb => "LFB",
            MemLevel::L2 => "L2",
            MemLevel::L3 => "L3",
            MemLevel::L4 => "L4",
            MemLevel::AnyCache => "cache",
            MemLevel::Ram => "RAM",
            MemLevel::Pmem => "PMEM",
            MemLevel::Cxl => "CXL",
            MemLevel::Io => "IO",
            MemLevel::Uncached => "uncached",
            MemLevel::Na => "N/A",
        }
    }
}

/// Snoop result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Snoop {
    /// Not available.
    Na,
    /// No snoop.
    None,
    /// Snoop hit.
    Hit,
    /// Snoop miss.
    Miss,
    /// Snoop hit in a modified line.
    HitM,
    /// Snoop forward (snoopx).
    Fwd,
    /// Peer cache (snoopx).
    Peer,
}

/// DTLB outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tlb {
    /// Not available.
    Na,
    /// L1 DTLB hit.
    L1Hit,
    /// L2 (STLB) hit.
    L2Hit,
    /// Missed the TLBs (page walk or fault).
    Miss,
    /// Hit, level unknown.
    Hit,
}

/// A decoded `union perf_mem_data_src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemDataSrc {
    /// The raw value.
    pub value: u64,
    /// The operation.
    pub op: MemOp,
    /// Where the data came from.
    pub level: MemLevel,
    /// mem_lvl had the HIT bit (or the level number is set without MISS).
    pub hit: bool,
    /// Remote (another node or socket).
    pub remote: bool,
    /// mem_hops (0 local core … 4 remote board).
    pub hops: u8,
    /// Snoop result.
    pub snoop: Snoop,
    /// Locked access (`None`: not available).
    pub locked: Option<bool>,
    /// DTLB outcome.
    pub tlb: Tlb,
    /// mem_blk bits (data/address blocked).
    pub blk: u8,
}

impl MemDataSrc {
    /// Decodes the bit fields of `perf_mem_data_src`.
    pub fn decode(value: u64) -> MemDataSrc {
        let f = |shift: u32, width: u32| (value >> shift) & ((1u64 << width) - 1);
        let op_bits = f(mem::OP_SHIFT, 5);
        let op = if op_bits & mem::OP_LOAD != 0 {
            MemOp::Load
        } else if op_bits & mem::OP_STORE != 0 {
            MemOp::Store
        } else if op_bits & mem::OP_PFETCH != 0 {
            MemOp::Prefetch
        } else if op_bits & mem::OP_EXEC != 0 {
            MemOp::Exec
        } else {
            MemOp::Na
        };
        let lvl = f(mem::LVL_SHIFT, 14);
        let num = f(mem::LVLNUM_SHIFT, 4);
        // mem_lvl_num is the newer, more precise encoding: prefer it when set.
        let level = match num {
            1 => MemLevel::L1,
            2 => MemLevel::L2,
            3 => MemLevel::L3,
            4..=6 => MemLevel::L4,
            8 => MemLevel::Uncached,
            9 => MemLevel::Cxl,
            0xa => MemLevel::Io,
            0xb => MemLevel::AnyCache,
            0xc => MemLevel::Lfb,
            0xd => MemLevel::Ram,
            0xe => MemLevel::Pmem,
            _ => {
                if lvl & mem::LVL_L1 != 0 {
                    MemLevel::L1
                } else if lvl & mem::LVL_LFB != 0 {
                    MemLevel::Lfb
                } else if lvl & mem::LVL_L2 != 0 {
                    MemLevel::L2
                } else if lvl & mem::LVL_L3 != 0 {
                    MemLevel::L3
                } else if lvl & (mem::LVL_LOC_RAM | mem::LVL_REM_RAM1 | mem::LVL_REM_RAM2) != 0 {
                    MemLevel::Ram
                } else if lvl & (mem::LVL_REM_CCE1 | mem::LVL_REM_CCE2) != 0 {
                    MemLevel::AnyCache
                } else if lvl & mem::LVL_IO != 0 {
                    MemLevel::Io
                } else if lvl & mem::LVL_UNC != 0 {
                    MemLevel::Uncached
                } else {
                    MemLevel::Na
                }
            }
        };
        let remote = f(mem::REMOTE_SHIFT, 1) == 1
            || lvl & (mem::LVL_REM_RAM1 | mem::LVL_REM_RAM2 | mem::LVL_REM_CCE2) != 0;
        let snoop_bits = f(mem::SNOOP_SHIFT, 5);
        let snoopx = f(mem::SNOOPX_SHIFT, 2);
        let snoop = if snoop_bits & mem::SNOOP_HITM != 0 {
            Snoop::HitM
        } else if snoop_bits & mem::SNOOP_HIT != 0 {
            Snoop::Hit
        } else if snoop_bits & mem::SNOOP_MISS != 0 {
            Snoop::Miss
        } else if snoopx & 1 != 0 {
            Snoop::Fwd
        } else if snoopx & 2 != 0 {
            Snoop::Peer
        } else if snoop_bits & mem::SNOOP_NONE != 0 {
            Snoop::None
        } else {
            Snoop::Na
        };
        let lock = f(mem::LOCK_SHIFT, 2);
        let tlb_bits = f(mem::TLB_SHIFT, 7);
        let tlb = if tlb_bits & mem::TLB_MISS != 0 {
            Tlb::Miss
        } else if tlb_bits & mem::TLB_HIT != 0 {
            if tlb_bits & mem::TLB_L1 != 0 {
                Tlb::L1Hit
            } else if tlb_bits & mem::TLB_L2 != 0 {
                Tlb::L2Hit
            } else {
                Tlb::Hit
            }
        } else {
            Tlb::Na
        };
        MemDataSrc {
            value,
            op,
            level,
            hit: lvl & mem::LVL_HIT != 0 || (num != 0 && num != 0xf && lvl & mem::LVL_MISS == 0),
            remote,
            hops: f(mem::HOPS_SHIFT, 3) as u8,
            snoop,
            locked: match lock {
                l if l & mem::LOCK_LOCKED != 0 => Some(true),
                l if l & mem::LOCK_NA != 0 => None,
                _ => Some(false),
            },
            tlb,
            blk: f(mem::BLK_SHIFT, 3) as u8,
        }
    }

    /// Whether the access missed the L1 data cache (served by a level beyond L1).
    pub fn l1_miss(&self) -> bool {
        !matches!(self.level, MemLevel::L1 | MemLevel::Na)
    }
}

/// Where a precise sample came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreciseSource {
    /// AMD IBS op sample.
    Ibs,
    /// Intel PEBS (or any event with DATA_SRC/WEIGHT/ADDR).
    Pebs,
}

/// One precise memory sample, whatever the hardware: the instruction, the data address, the
/// latency and where the data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PreciseSample {
    /// IBS or PEBS.
    pub source: PreciseSource,
    /// Instruction address (exact when `exact_ip`).
    pub ip: u64,
    /// The IP is the sampled instruction itself (no skid).
    pub exact_ip: bool,
    /// Data linear address, if known.
    pub addr: Option<u64>,
    /// Data physical address, if known (may be a valid 0 for unprivileged readers).
    pub phys_addr: Option<u64>,
    /// Load latency in cycles (PEBS weight / WEIGHT_STRUCT var1; IBS DcMissLat of a missing
    /// load), if known.
    pub latency: Option<u64>,
    /// Instruction latency (WEIGHT_STRUCT var2: PEBS instruction latency; IBS TagToRetCtr).
    pub ins_latency: Option<u64>,
    /// Where the data came from.
    pub data_src: Option<MemDataSrc>,
    /// Data page size in bytes, if known.
    pub data_page_size: Option<u64>,
}

/// Turns a PEBS-style sample (DATA_SRC / WEIGHT(_STRUCT) / ADDR / PHYS_ADDR) into the precise
/// model. `None` when the sample carries none of these fields.
pub fn from_pebs(sample: &Sample) -> Option<PreciseSample> {
    if sample.data_src.is_none()
        && sample.weight.is_none()
        && sample.addr.is_none()
        && sample.phys_addr.is_none()
    {
        return None;
    }
    let data_src = sample
        .data_src
        .filter(|&d| d != mem::NA && d != 0)
        .map(MemDataSrc::decode);
    let ins_latency = sample
        .weight_struct
        .map(|w| (w >> 32) & 0xffff)
        .filter(|&w| w != 0);
    Some(PreciseSample {
        source: PreciseSource::Pebs,
        ip: sample.ip,
        exact_ip: sample.exact_ip,
        addr: sample.addr.filter(|&a| a != 0),
        phys_addr: sample.phys_addr.filter(|&a| a != 0),
        latency: sample.weight.filter(|&w| w != 0),
        ins_latency,
        data_src,
        data_page_size: sample.data_page_size.filter(|&p| p != 0),
    })
}

/// Turns a decoded IBS op into the precise model, as the kernel fills the PEBS-style fields
/// for `perf mem` (data_src mapping, weight = DcMissLat of a missing load, addresses when
/// valid). `ip` is the sample's IP (IbsOpRip unless RipInvalid).
pub fn from_ibs_op(op: &IbsOp, ctx: &IbsContext, ip: u64) -> PreciseSample {
    let d3 = op.data3;
    let load_miss = d3.is_some_and(|d| d.ld_op && d.dc_miss);
    PreciseSample {
        source: PreciseSource::Ibs,
        ip: op.rip.unwrap_or(ip),
        exact_ip: op.rip.is_some(),
        addr: op.dc_lin_addr,
        phys_addr: op.dc_phys_addr,
        latency: d3.filter(|_| load_miss).map(|d| d.dc_miss_lat as u64),
        ins_latency: op.data.map(|d| d.tag_to_ret as u64),
        data_src: ibs::op_data_src(op, ctx).map(MemDataSrc::decode),
        data_page_size: d3.and_then(|d| d.page_size).map(|p| p.bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_decode_intel_style_l3_hit_snoop_hitm() {
        // Load, L3 hit, snoop HITM, TLB L1 hit, locked N/A.
        let v = mem::OP_LOAD
            | ((mem::LVL_L3 | mem::LVL_HIT) << mem::LVL_SHIFT)
            | (mem::SNOOP_HITM << mem::SNOOP_SHIFT)
            | (mem::LOCK_NA << mem::LOCK_SHIFT)
            | ((mem::TLB_L1 | mem::TLB_HIT) << mem::TLB_SHIFT);
        let d = MemDataSrc::decode(v);
        assert_eq!(d.op, MemOp::Load);
        assert_eq!(d.level, MemLevel::L3);
        assert!(d.hit && !d.remote);
        assert_eq!(d.snoop, Snoop::HitM);
        assert_eq!(d.locked, None);
        assert_eq!(d.tlb, Tlb::L1Hit);
        assert!(d.l1_miss());
    }

    #[test]
    fn test_decode_remote_dram_with_lvl_num_and_hops() {
        let v = mem::OP_LOAD
            | ((mem::LVL_REM_RAM1 | mem::LVL_HIT) << mem::LVL_SHIFT)
            | (mem::LVLNUM_RAM << mem::LVLNUM_SHIFT)
            | (1 << mem::REMOTE_SHIFT)
            | (2 << mem::HOPS_SHIFT)
            | (mem::LOCK_LOCKED << mem::LOCK_SHIFT)
            | ((mem::TLB_L2 | mem::TLB_MISS) << mem::TLB_SHIFT);
        let d = MemDataSrc::decode(v);
        assert_eq!(d.level, MemLevel::Ram);
        assert!(d.remote);
        assert_eq!(d.hops, 2);
        assert_eq!(d.locked, Some(true));
        assert_eq!(d.tlb, Tlb::Miss);
    }

    #[test]
    fn test_na_decodes_as_nothing() {
        let d = MemDataSrc::decode(mem::NA);
        assert_eq!(d.op, MemOp::Na);
        assert_eq!(d.level, MemLevel::Na);
        assert_eq!(d.snoop, Snoop::Na);
        assert_eq!(d.tlb, Tlb::Na);
        assert!(!d.l1_miss());
    }
}
