//! IBS op samples as `perf_mem_data_src`, computed as the kernel does for `perf mem`.

use crate::abi::mem;

use super::{bit, bits, caps, IbsContext, IbsOp};

fn lvl_hit(l: u64) -> u64 {
    (l | mem::LVL_HIT) << mem::LVL_SHIFT
}

fn lvlnum(n: u64) -> u64 {
    n << mem::LVLNUM_SHIFT
}

const REMOTE: u64 = 1 << mem::REMOTE_SHIFT;

fn hops(n: u64) -> u64 {
    n << mem::HOPS_SHIFT
}

/// The `perf_mem_data_src` value the kernel computes for an IBS op sample (as `perf mem` on
/// AMD sees it), or `None` for ops that are neither loads nor stores (the kernel leaves
/// `PERF_MEM_NA` there). `zen4` means the kernel's `ibs_caps` has the Zen 4 bit.
pub fn op_data_src(op: &IbsOp, ctx: &IbsContext) -> Option<u64> {
    let d3 = op.data3?;
    let mem_op = if d3.ld_op {
        mem::OP_LOAD
    } else if d3.st_op {
        mem::OP_STORE
    } else {
        return None;
    };
    let zen4 = op.caps & caps::ZEN4 != 0 || ctx.zen4_pmu_cap;
    // The kernel zeroes OpData2 under erratum #1293.
    let d2 = if ctx.zen3_errata() && (d3.sw_pf || d3.dc_miss_no_mab_alloc) {
        0
    } else {
        op.regs.get(3).copied().unwrap_or(0)
    };
    let src = if zen4 {
        ((bits(d2, 6, 2) << 3) | bits(d2, 0, 3)) as u8
    } else {
        bits(d2, 0, 3) as u8
    };
    let rmt_node = bit(d2, 4);
    let v3 = d3.value;
    let lvl = (|| {
        // The kernel compares with the (Zen 4) IO encoding 7 whatever the family.
        if bit(v3, 14) && src != 7 {
            return lvl_hit(mem::LVL_UNC) | lvlnum(mem::LVLNUM_UNC);
        }
        if !bit(v3, 7) {
            return lvl_hit(mem::LVL_L1) | lvlnum(mem::LVLNUM_L1);
        }
        if !bit(v3, 20) && !(ctx.zen3_errata() && (d3.sw_pf || d3.dc_miss_no_mab_alloc)) {
            return lvl_hit(mem::LVL_L2) | lvlnum(mem::LVLNUM_L2);
        }
        if mem_op == mem::OP_LOAD {
            let (val, rmt_applies, dram) = if zen4 {
                let val = match src {
                    1 => lvl_hit(mem::LVL_L3) | lvlnum(mem::LVLNUM_L3),
                    2 => lvl_hit(mem::LVL_REM_CCE1) | lvlnum(mem::LVLNUM_ANY_CACHE) | REMOTE,
                    3 => lvl_hit(mem::LVL_LOC_RAM) | lvlnum(mem::LVLNUM_RAM),
                    5 => {
                        lvl_hit(mem::LVL_REM_CCE2)
                            | lvlnum(mem::LVLNUM_ANY_CACHE)
                            | REMOTE
                            | hops(1)
                    }
                    6 => lvlnum(mem::LVLNUM_PMEM),
                    7 => lvl_hit(mem::LVL_IO) | lvlnum(mem::LVLNUM_IO),
                    8 => lvlnum(mem::LVLNUM_CXL),
                    _ => 0,
                };
                (val, matches!(src, 3 | 6 | 8), src == 3)
            } else {
                let val = match src {
                    2 => {
                        lvl_hit(mem::LVL_L3)
                            | lvl_hit(mem::LVL_REM_CCE1)
                            | lvlnum(mem::LVLNUM_ANY_CACHE)
                    }
                    3 => lvl_hit(mem::LVL_LOC_RAM) | lvlnum(mem::LVLNUM_RAM),
                    4 => {
                        lvl_hit(mem::LVL_REM_CCE2)
                            | lvlnum(mem::LVLNUM_ANY_CACHE)
                            | REMOTE
                            | hops(1)
                    }
                    7 => lvl_hit(mem::LVL_IO) | lvlnum(mem::LVLNUM_IO),
                    _ => 0,
                };
                (val, src == 3, src == 3)
            };
            if val != 0 {
                if rmt_node && rmt_applies {
                    if dram {
                        return lvl_hit(mem::LVL_REM_RAM1)
                            | lvlnum(mem::LVLNUM_RAM)
                            | REMOTE
                            | hops(1);
                    }
                    return val | REMOTE | hops(1);
                }
                return val;
            }
        }
        // MAB hit: only when DataSrc says nothing.
        if d3.dc_miss_no_mab_alloc {
            return lvl_hit(mem::LVL_LFB) | lvlnum(mem::LVLNUM_LFB);
        }
        (mem::LVL_NA << mem::LVL_SHIFT) | lvlnum(mem::LVLNUM_NA)
    })();
    let lvl_bits = (lvl >> mem::LVL_SHIFT) & 0x3fff;
    let mut snoop = mem::SNOOP_NA;
    if ctx.cache_hit_st_valid()
        && mem_op == mem::OP_LOAD
        && lvl_bits & (mem::LVL_L1 | mem::LVL_L2) == 0
        && !bit(d2, 5)
    {
        let hitm = if zen4 {
            matches!(src, 1 | 2 | 5)
        } else {
            src == 2
        };
        if hitm {
            snoop = mem::SNOOP_HITM;
        }
    }
    let dtlb = if !d3.dc_lin_addr_valid {
        mem::TLB_NA
    } else if !bit(v3, 2) {
        mem::TLB_L1 | mem::TLB_HIT
    } else if !bit(v3, 3) {
        mem::TLB_L2 | mem::TLB_HIT
    } else {
        mem::TLB_L2 | mem::TLB_MISS
    };
    let lock = if d3.dc_locked_op {
        mem::LOCK_LOCKED
    } else {
        mem::LOCK_NA
    };
    Some(
        (mem_op << mem::OP_SHIFT)
            | lvl
            | (snoop << mem::SNOOP_SHIFT)
            | (lock << mem::LOCK_SHIFT)
            | (dtlb << mem::TLB_SHIFT),
    )
}
