//! A built-in catalog of named AMD Zen 4 / Zen 5 core events, so that `-e ex_ret_ops` works
//! without perf's JSON tables.
//!
//! Sources (facts only: names, codes, unit masks): the project's Top-Down reference notes
//! (sections 0-1, from Linux `tools/perf/pmu-events/arch/x86/amdzen{4,5}/*.json`), and those
//! JSON files themselves for the Zen 4 / Zen 5 differences (`ls_mab_alloc.*`,
//! `l2_request_g1.*`). Entries marked Zen 4 only were checked against the Zen 4 tables alone.
//!
//! Encoding (AMD core PMC, `PERF_TYPE_RAW`): the 12-bit event code is split, bits 0-7 go to
//! config bits 0-7 and bits 8-11 to config bits 32-35; `umask` is config 8-15, `edge` bit 18,
//! `inv` bit 23, `cmask` bits 24-31. See [`CatalogEvent::config`].

use culprit_decode::abi::perf_type;

/// Which AMD core generations an event exists on (a bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Families(u8);

impl Families {
    /// Zen 4: family 0x19, models 0x10-0x1F, 0x60-0x7F, 0xA0-0xAF.
    pub const ZEN4: Families = Families(1);
    /// Zen 5: family 0x1A (any model).
    pub const ZEN5: Families = Families(2);
    /// Zen 4 and Zen 5 with the same encoding.
    pub const ZEN4_ZEN5: Families = Families(3);

    /// Whether `self` includes every generation in `other`.
    pub fn contains(self, other: Families) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// Human names, e.g. `Zen 4/Zen 5`.
    pub fn describe(self) -> &'static str {
        match self.0 {
            1 => "Zen 4",
            2 => "Zen 5",
            3 => "Zen 4/Zen 5",
            _ => "none",
        }
    }

    /// Names for JSON: `["zen4", "zen5"]`.
    pub fn names(self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.0 & 1 != 0 {
            v.push("zen4");
        }
        if self.0 & 2 != 0 {
            v.push("zen5");
        }
        v
    }
}

/// The AMD core generation of a CPU (family, model from cpuinfo), when the catalog covers it.
pub fn generation(family: u32, model: u32) -> Option<Families> {
    match (family, model) {
        (0x19, 0x10..=0x1F | 0x60..=0x7F | 0xA0..=0xAF) => Some(Families::ZEN4),
        (0x1A, _) => Some(Families::ZEN5),
        _ => None,
    }
}

/// One named event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEvent {
    /// perf's name, e.g. `de_no_dispatch_per_slot.backend_stalls`.
    pub name: &'static str,
    /// 12-bit event code (e.g. 0x1A0).
    pub code: u16,
    /// Unit mask.
    pub umask: u8,
    /// Counter mask (count cycles where the per-cycle count is >= cmask); 0 = off.
    pub cmask: u8,
    /// Edge detect.
    pub edge: bool,
    /// Invert the cmask comparison.
    pub inv: bool,
    /// Generations with this encoding.
    pub families: Families,
    /// One-line description.
    pub description: &'static str,
}

impl CatalogEvent {
    /// `perf_event_attr.config` for `PERF_TYPE_RAW`.
    pub const fn config(&self) -> u64 {
        amd_raw_config(self.code, self.umask, self.edge, self.inv, self.cmask)
    }

    /// `perf_event_attr.type`.
    pub const fn attr_type(&self) -> u32 {
        perf_type::RAW
    }
}

/// Encodes an AMD core PMC event: `(code & 0xFF) | ((code >> 8) & 0xF) << 32 | umask << 8 |
/// edge << 18 | inv << 23 | cmask << 24`.
pub const fn amd_raw_config(code: u16, umask: u8, edge: bool, inv: bool, cmask: u8) -> u64 {
    (code as u64 & 0xFF)
        | ((code as u64 >> 8) & 0xF) << 32
        | (umask as u64) << 8
        | (edge as u64) << 18
        | (inv as u64) << 23
        | (cmask as u64) << 24
}

const fn ev(
    name: &'static str,
    code: u16,
    umask: u8,
    families: Families,
    description: &'static str,
) -> CatalogEvent {
    CatalogEvent {
        name,
        code,
        umask,
        cmask: 0,
        edge: false,
        inv: false,
        families,
        description,
    }
}

const B: Families = Families::ZEN4_ZEN5;
const Z4: Families = Families::ZEN4;
const Z5: Families = Families::ZEN5;

/// Every catalog event. A name may appear twice when Zen 4 and Zen 5 encode it differently.
pub const CATALOG: &[CatalogEvent] = &[
    // Pipeline utilization (Top-Down level 1 and 2).
    ev("ls_not_halted_cyc", 0x76, 0, B, "core cycles not in halt"),
    ev(
        "de_no_dispatch_per_slot.no_ops_from_frontend",
        0x1A0,
        0x01,
        B,
        "dispatch slots left empty because the frontend supplied no ops",
    ),
    ev(
        "de_no_dispatch_per_slot.backend_stalls",
        0x1A0,
        0x1E,
        B,
        "dispatch slots left empty because of backend resource stalls",
    ),
    ev(
        "de_no_dispatch_per_slot.smt_contention",
        0x1A0,
        0x60,
        B,
        "dispatch slots left empty because the other SMT thread was dispatching",
    ),
    ev(
        "de_src_op_disp.all",
        0xAA,
        0x07,
        B,
        "ops dispatched from any source",
    ),
    ev("ex_ret_ops", 0xC1, 0, B, "retired macro-ops"),
    ev("ex_ret_instr", 0xC0, 0, B, "retired instructions"),
    ev("ex_ret_brn", 0xC2, 0, B, "retired branch instructions"),
    ev(
        "ex_ret_brn_misp",
        0xC3,
        0,
        B,
        "retired mispredicted branch instructions",
    ),
    ev(
        "ex_ret_brn_tkn",
        0xC4,
        0,
        B,
        "retired taken branch instructions",
    ),
    ev(
        "ex_ret_cond",
        0xD1,
        0,
        B,
        "retired conditional branch instructions",
    ),
    ev("ex_ret_ucode_ops", 0x1C2, 0, B, "retired microcode ops"),
    ev(
        "ex_no_retire.not_complete",
        0xD6,
        0x02,
        B,
        "cycles with no retirement because the oldest op had not completed",
    ),
    ev(
        "ex_no_retire.load_not_complete",
        0xD6,
        0xA2,
        B,
        "cycles with no retirement because the oldest op was a load that had not completed",
    ),
    ev(
        "resyncs_or_nc_redirects",
        0x96,
        0,
        Z4,
        "pipeline restarts: resyncs and non-cacheable redirects",
    ),
    ev(
        "bp_redirects.resync",
        0x9F,
        0x01,
        Z5,
        "pipeline restarts (resyncs)",
    ),
    // Data cache fills by source.
    ev(
        "ls_dmnd_fills_from_sys.local_l2",
        0x43,
        0x01,
        B,
        "demand L1D fills from the local L2",
    ),
    ev(
        "ls_dmnd_fills_from_sys.local_ccx",
        0x43,
        0x02,
        B,
        "demand L1D fills from L3 or another L2 in the same CCX",
    ),
    ev(
        "ls_dmnd_fills_from_sys.local_all",
        0x43,
        0x03,
        B,
        "demand L1D fills from the local L2, L3 or same-CCX caches",
    ),
    ev(
        "ls_dmnd_fills_from_sys.near_cache",
        0x43,
        0x04,
        B,
        "demand L1D fills from another CCX's cache, same NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.dram_io_near",
        0x43,
        0x08,
        B,
        "demand L1D fills from DRAM or MMIO, same NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.far_cache",
        0x43,
        0x10,
        B,
        "demand L1D fills from another CCX's cache, other NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.remote_cache",
        0x43,
        0x14,
        B,
        "demand L1D fills from another CCX's cache, any NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.dram_io_far",
        0x43,
        0x40,
        B,
        "demand L1D fills from DRAM or MMIO, other NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.dram_io_all",
        0x43,
        0x48,
        B,
        "demand L1D fills from DRAM or MMIO, any NUMA node",
    ),
    ev(
        "ls_dmnd_fills_from_sys.far_all",
        0x43,
        0x50,
        B,
        "demand L1D fills from another NUMA node (cache, DRAM or MMIO)",
    ),
    ev(
        "ls_dmnd_fills_from_sys.alternate_memories",
        0x43,
        0x80,
        B,
        "demand L1D fills from extension (alternate) memory",
    ),
    ev(
        "ls_dmnd_fills_from_sys.all",
        0x43,
        0xFF,
        B,
        "demand L1D fills from any source",
    ),
    ev(
        "ls_any_fills_from_sys.local_l2",
        0x44,
        0x01,
        B,
        "any L1D fills from the local L2",
    ),
    ev(
        "ls_any_fills_from_sys.local_ccx",
        0x44,
        0x02,
        B,
        "any L1D fills from L3 or another L2 in the same CCX",
    ),
    ev(
        "ls_any_fills_from_sys.local_all",
        0x44,
        0x03,
        B,
        "any L1D fills from the local L2, L3 or same-CCX caches",
    ),
    ev(
        "ls_any_fills_from_sys.near_cache",
        0x44,
        0x04,
        B,
        "any L1D fills from another CCX's cache, same NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.dram_io_near",
        0x44,
        0x08,
        B,
        "any L1D fills from DRAM or MMIO, same NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.far_cache",
        0x44,
        0x10,
        B,
        "any L1D fills from another CCX's cache, other NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.remote_cache",
        0x44,
        0x14,
        B,
        "any L1D fills from another CCX's cache, any NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.dram_io_far",
        0x44,
        0x40,
        B,
        "any L1D fills from DRAM or MMIO, other NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.dram_io_all",
        0x44,
        0x48,
        B,
        "any L1D fills from DRAM or MMIO, any NUMA node",
    ),
    ev(
        "ls_any_fills_from_sys.far_all",
        0x44,
        0x50,
        B,
        "any L1D fills from another NUMA node (cache, DRAM or MMIO)",
    ),
    ev(
        "ls_any_fills_from_sys.alternate_memories",
        0x44,
        0x80,
        B,
        "any L1D fills from extension (alternate) memory",
    ),
    ev(
        "ls_any_fills_from_sys.all",
        0x44,
        0xFF,
        B,
        "any L1D fills from any source",
    ),
    // Miss address buffer allocations: the unit masks differ between Zen 4 and Zen 5.
    ev(
        "ls_mab_alloc.load_store_allocations",
        0x41,
        0x3F,
        Z4,
        "miss address buffer entries allocated for loads and stores",
    ),
    ev(
        "ls_mab_alloc.hardware_prefetcher_allocations",
        0x41,
        0x40,
        Z4,
        "miss address buffer entries allocated for hardware prefetches",
    ),
    ev(
        "ls_mab_alloc.all_allocations",
        0x41,
        0x7F,
        Z4,
        "miss address buffer entries allocated, all kinds",
    ),
    ev(
        "ls_mab_alloc.load_store_allocations",
        0x41,
        0x07,
        Z5,
        "miss address buffer entries allocated for loads and stores",
    ),
    ev(
        "ls_mab_alloc.hardware_prefetcher_allocations",
        0x41,
        0x08,
        Z5,
        "miss address buffer entries allocated for hardware prefetches",
    ),
    ev(
        "ls_mab_alloc.all_allocations",
        0x41,
        0x0F,
        Z5,
        "miss address buffer entries allocated, all kinds",
    ),
    // Load/store dispatch.
    ev(
        "ls_dispatch.ld_dispatch",
        0x29,
        0x01,
        B,
        "load ops dispatched to the load-store unit",
    ),
    ev(
        "ls_dispatch.store_dispatch",
        0x29,
        0x02,
        B,
        "store ops dispatched to the load-store unit",
    ),
    ev(
        "ls_dispatch.ld_st_dispatch",
        0x29,
        0x04,
        B,
        "load-op-store ops dispatched to the load-store unit",
    ),
    ev(
        "ls_dispatch.all",
        0x29,
        0x07,
        B,
        "all ops dispatched to the load-store unit",
    ),
    // TLBs.
    ev("ls_l1_d_tlb_miss.all", 0x45, 0xFF, B, "L1 data TLB misses"),
    ev(
        "ls_l1_d_tlb_miss.all_l2_miss",
        0x45,
        0xF0,
        B,
        "L1 data TLB misses that also missed the L2 TLB (page walks)",
    ),
    ev(
        "bp_l1_tlb_miss_l2_tlb_hit",
        0x84,
        0,
        B,
        "instruction fetches missing the L1 ITLB, hitting the L2 TLB",
    ),
    ev(
        "bp_l1_tlb_miss_l2_tlb_miss",
        0x85,
        0x0F,
        B,
        "instruction fetches missing both the L1 ITLB and the L2 TLB (page walks)",
    ),
    // L2 cache. Group-1 request unit masks differ between Zen 4 and Zen 5.
    ev(
        "l2_request_g1.all",
        0x60,
        0xFF,
        Z4,
        "L2 requests (group 1), all",
    ),
    ev(
        "l2_request_g1.all_no_prefetch",
        0x60,
        0xF9,
        Z4,
        "L2 requests (group 1) except prefetches",
    ),
    ev(
        "l2_request_g1.all_dc",
        0x60,
        0xE8,
        Z4,
        "L2 requests (group 1) from the data cache",
    ),
    ev(
        "l2_request_g1.all",
        0x60,
        0xF7,
        Z5,
        "L2 requests (group 1), all",
    ),
    ev(
        "l2_request_g1.all_no_prefetch",
        0x60,
        0xF1,
        Z5,
        "L2 requests (group 1) except prefetches",
    ),
    ev(
        "l2_request_g1.all_dc",
        0x60,
        0xE0,
        Z5,
        "L2 requests (group 1) from the data cache",
    ),
    ev(
        "l2_cache_req_stat.ic_dc_miss_in_l2",
        0x64,
        0x09,
        B,
        "instruction and data cache requests that missed the L2",
    ),
    ev(
        "l2_cache_req_stat.ls_rd_blk_c",
        0x64,
        0x08,
        B,
        "data cache requests that missed the L2",
    ),
    ev(
        "l2_cache_req_stat.ic_dc_hit_in_l2",
        0x64,
        0xF6,
        B,
        "instruction and data cache requests that hit the L2",
    ),
    ev(
        "l2_pf_hit_l2.all",
        0x70,
        0xFF,
        B,
        "L2 prefetches that hit the L2",
    ),
    ev(
        "l2_pf_miss_l2_hit_l3.all",
        0x71,
        0xFF,
        B,
        "L2 prefetches that missed the L2 and hit L3",
    ),
    ev(
        "l2_pf_miss_l2_l3.all",
        0x72,
        0xFF,
        B,
        "L2 prefetches that missed the L2 and L3",
    ),
    // More retirement, branch and TLB detail.
    ev(
        "ex_ret_brn_tkn_misp",
        0xC5,
        0,
        Z4,
        "retired taken branch instructions mispredicted",
    ),
    ev("ex_ret_near_ret", 0xC8, 0, Z4, "retired near returns"),
    ev(
        "ex_ret_near_ret_mispred",
        0xC9,
        0,
        Z4,
        "retired near returns mispredicted",
    ),
    ev(
        "ex_ret_brn_ind_misp",
        0xCA,
        0,
        Z4,
        "retired indirect branches mispredicted",
    ),
    ev(
        "ex_ret_ind_brch_instr",
        0xCC,
        0,
        Z4,
        "retired indirect branch instructions",
    ),
    ev(
        "ex_no_retire.empty",
        0xD6,
        0x01,
        Z4,
        "cycles with no retirement because the retire queue had no valid ops",
    ),
    ev("ex_div_busy", 0xD3, 0, Z4, "cycles the divider is busy"),
    ev("ex_div_count", 0xD4, 0, Z4, "divide ops executed"),
    ev(
        "l2_cache_req_stat.dc_hit_in_l2",
        0x64,
        0xF0,
        Z4,
        "data cache requests that hit the L2",
    ),
    ev(
        "l2_cache_req_stat.dc_access_in_l2",
        0x64,
        0xF8,
        Z4,
        "data cache requests to the L2",
    ),
    ev(
        "l2_cache_req_stat.all",
        0x64,
        0xFF,
        Z4,
        "instruction and data cache requests to the L2",
    ),
    ev(
        "bp_l1_tlb_miss_l2_tlb_miss.all",
        0x85,
        0x0F,
        Z5,
        "instruction fetches missing both the L1 ITLB and the L2 TLB, all page sizes",
    ),
    ev(
        "bp_redirects.ex_redir",
        0x9F,
        0x02,
        Z5,
        "branch predictor redirects caused by mispredicts",
    ),
    ev(
        "bp_redirects.all",
        0x9F,
        0,
        Z5,
        "branch predictor redirects",
    ),
    ev(
        "ic_cache_fill_l2",
        0x82,
        0,
        B,
        "instruction cache lines filled from the L2",
    ),
    ev(
        "ic_cache_fill_sys",
        0x83,
        0,
        B,
        "instruction cache lines filled from memory or another cache",
    ),
    ev(
        "ic_tag_hit_miss.instruction_cache_hit",
        0x18E,
        0x07,
        B,
        "instruction cache hits",
    ),
    ev(
        "op_cache_hit_miss.op_cache_hit",
        0x28F,
        0x03,
        B,
        "op cache hits",
    ),
    // Instruction cache and op cache.
    ev(
        "ic_tag_hit_miss.instruction_cache_miss",
        0x18E,
        0x18,
        B,
        "instruction cache misses",
    ),
    ev(
        "ic_tag_hit_miss.all_instruction_cache_accesses",
        0x18E,
        0x1F,
        B,
        "instruction cache accesses",
    ),
    ev(
        "op_cache_hit_miss.op_cache_miss",
        0x28F,
        0x04,
        B,
        "op cache misses",
    ),
    ev(
        "op_cache_hit_miss.all_op_cache_accesses",
        0x28F,
        0x07,
        B,
        "op cache accesses",
    ),
];

/// The catalog events valid for a CPU (by cpuinfo family and model); empty for CPUs the
/// catalog does not cover (Intel, AMD before Zen 4, Zen 4c models not listed).
pub fn for_cpu(family: u32, model: u32) -> Vec<&'static CatalogEvent> {
    match generation(family, model) {
        Some(gen) => CATALOG
            .iter()
            .filter(|e| e.families.contains(gen))
            .collect(),
        None => Vec::new(),
    }
}

/// Finds an event by name (ASCII case-insensitive) for a generation; with `None` (unknown
/// CPU), the first entry of that name.
pub fn lookup(name: &str, generation: Option<Families>) -> Option<&'static CatalogEvent> {
    let mut matching = CATALOG.iter().filter(|e| e.name.eq_ignore_ascii_case(name));
    match generation {
        Some(gen) => matching.find(|e| e.families.contains(gen)),
        None => matching.next(),
    }
}

/// Whether any catalog entry has this name (for any generation).
pub fn is_known_name(name: &str) -> bool {
    CATALOG.iter().any(|e| e.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_config_matches_reference_table() {
        // The raw configs listed in topdown.md section 1.
        let want: &[(&str, u64)] = &[
            ("ls_not_halted_cyc", 0x76),
            ("de_no_dispatch_per_slot.no_ops_from_frontend", 0x1000001A0),
            ("de_no_dispatch_per_slot.backend_stalls", 0x100001EA0),
            ("de_no_dispatch_per_slot.smt_contention", 0x1000060A0),
            ("de_src_op_disp.all", 0x7AA),
            ("ex_ret_ops", 0xC1),
            ("ex_ret_brn_misp", 0xC3),
            ("resyncs_or_nc_redirects", 0x96),
            ("bp_redirects.resync", 0x19F),
            ("ex_no_retire.not_complete", 0x2D6),
            ("ex_no_retire.load_not_complete", 0xA2D6),
            ("ex_ret_ucode_ops", 0x1000000C2),
        ];
        for (name, config) in want {
            let e = lookup(name, None).unwrap();
            assert_eq!(e.config(), *config, "{name}");
            assert_eq!(e.attr_type(), 4);
        }
    }

    #[test]
    fn test_cmask_encoding() {
        // no_ops_from_frontend with cmask = 6 (Zen 4) and 8 (Zen 5).
        assert_eq!(amd_raw_config(0x1A0, 0x01, false, false, 6), 0x1060001A0);
        assert_eq!(amd_raw_config(0x1A0, 0x01, false, false, 8), 0x1080001A0);
        assert_eq!(
            amd_raw_config(0x76, 0, true, true, 1),
            0x76 | 1 << 18 | 1 << 23 | 1 << 24
        );
    }

    #[test]
    fn test_generation_by_family_model() {
        assert_eq!(generation(0x19, 0x11), Some(Families::ZEN4));
        assert_eq!(generation(0x19, 0x61), Some(Families::ZEN4));
        assert_eq!(generation(0x19, 0xA0), Some(Families::ZEN4));
        assert_eq!(generation(0x19, 0x01), None); // Zen 3 (Milan)
        assert_eq!(generation(0x19, 0x21), None); // Zen 3 (Vermeer)
        assert_eq!(generation(0x1A, 0x02), Some(Families::ZEN5));
        assert_eq!(generation(6, 207), None);
    }

    #[test]
    fn test_for_cpu_family_specific_entries() {
        let zen4 = for_cpu(0x19, 0x11);
        let zen5 = for_cpu(0x1A, 0x02);
        assert!(zen4.iter().any(|e| e.name == "resyncs_or_nc_redirects"));
        assert!(!zen4.iter().any(|e| e.name == "bp_redirects.resync"));
        assert!(zen5.iter().any(|e| e.name == "bp_redirects.resync"));
        assert!(!zen5.iter().any(|e| e.name == "resyncs_or_nc_redirects"));
        assert!(for_cpu(6, 207).is_empty());
        // One entry per name per generation.
        for list in [&zen4, &zen5] {
            let mut names: Vec<_> = list.iter().map(|e| e.name).collect();
            names.sort();
            let n = names.len();
            names.dedup();
            assert_eq!(n, names.len());
        }
        let mab4 = lookup("ls_mab_alloc.all_allocations", Some(Families::ZEN4)).unwrap();
        let mab5 = lookup("ls_mab_alloc.all_allocations", Some(Families::ZEN5)).unwrap();
        assert_eq!((mab4.config(), mab5.config()), (0x7F41, 0x0F41));
    }

    #[test]
    fn test_catalog_fields_fit_encoding() {
        for e in CATALOG {
            assert!(e.code <= 0xFFF, "{}", e.name);
            assert!(!e.description.is_empty(), "{}", e.name);
            assert_eq!(e.name, e.name.to_ascii_lowercase(), "{}", e.name);
        }
    }
}
