//! AMD IBS (Instruction-Based Sampling) raw payloads, decoded.
//!
//! The kernel's PERF_SAMPLE_RAW payload of an `ibs_fetch`/`ibs_op` sample is a `u32` caps word
//! (CPUID 8000_001B EAX) followed by N little-endian `u64` MSR values, N = (size − 4) / 8:
//!
//! - fetch: IbsFetchCtl, IbsFetchLinAd, IbsFetchPhysAd, then IcIbsExtdCtl (caps bit 9);
//! - op: IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3, IbsDcLinAd, IbsDcPhysAd, then
//!   IbsBrTarget (caps bit 5), then IbsOpData4 (caps bit 10).
//!
//! Two views are offered:
//!
//! - **Typed** ([`IbsFetch`], [`IbsOp`]): every field of families 10h, 17h, 19h and 1Ah, with the
//!   raw size and caps deciding which registers exist, valid bits honoured (an address whose
//!   valid bit is clear is `None`; a valid address of zero, as unprivileged readers get, stays
//!   `Some(0)`), and errata applied by family/model (fields the hardware gets wrong are `None`).
//! - **perf-compatible** ([`IbsSample::perf_lines`]): exactly the lines and fields that
//!   `perf report -D` (perf 6.1, `amd-sample-raw.c`) prints, with the same text, so that
//!   `culprit script` can be checked against perf. perf's rules differ from the hardware truth in
//!   places (it prints CacheHitSt on parts where it is invalid, and reads IbsBrTarget whatever
//!   the caps say); the typed view follows the hardware documentation, this one follows perf.
//!
//! [`op_data_src`] maps an op sample to `perf_mem_data_src` as the kernel does for `perf mem`.

use serde::Serialize;

use crate::model::Meta;

mod data_src;
mod perf_lines;

pub use data_src::op_data_src;
pub use perf_lines::PerfLine;

/// IBS caps bits (CPUID Fn8000_001B EAX), as recorded in the first `u32` of the payload.
pub mod caps {
    /// IBS is available.
    pub const AVAIL: u32 = 1 << 0;
    /// Fetch sampling.
    pub const FETCHSAM: u32 = 1 << 1;
    /// Op sampling.
    pub const OPSAM: u32 = 1 << 2;
    /// Read/write of op counter.
    pub const RDWROPCNT: u32 = 1 << 3;
    /// Op counting mode (CntCtl).
    pub const OPCNT: u32 = 1 << 4;
    /// IbsBrTarget register.
    pub const BRNTRGT: u32 = 1 << 5;
    /// OpMaxCnt extension bits 26:20.
    pub const OPCNTEXT: u32 = 1 << 6;
    /// RipInvalid check.
    pub const RIPINVALIDCHK: u32 = 1 << 7;
    /// Fused branch bit.
    pub const OPBRNFUSE: u32 = 1 << 8;
    /// IcIbsExtdCtl register.
    pub const FETCHCTLEXTD: u32 = 1 << 9;
    /// IbsOpData4 register.
    pub const OPDATA4: u32 = 1 << 10;
    /// Zen 4 extensions (L3MissOnly, 5-bit DataSrc, FetchOcMiss, FetchL3Miss).
    pub const ZEN4: u32 = 1 << 11;
    /// Zen 5 load-latency filtering.
    pub const OPLDLAT: u32 = 1 << 12;
    /// Zen 5 DTLB page size in IbsOpData3.
    pub const OPDTLBPGSIZE: u32 = 1 << 19;
}

/// Why a raw payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IbsError {
    /// Too short for the caps word and the control register.
    #[error(
        "IBS raw payload of {0} bytes is too short (need at least 12: caps + control register)"
    )]
    TooShort(usize),
    /// En or Val is clear in the control register: the hardware did not produce a sample (perf
    /// refuses these too: "Invalid raw IBS Fetch/Op MSR data encountered").
    #[error("invalid IBS {kind} sample: En {en} Val {val} in the control register {ctl:#018x}")]
    NotValid {
        /// `fetch` or `op`.
        kind: &'static str,
        /// The En bit.
        en: bool,
        /// The Val bit.
        val: bool,
        /// The control register.
        ctl: u64,
    },
}

/// Which IBS PMU a sample came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IbsKind {
    /// `ibs_fetch`.
    Fetch,
    /// `ibs_op`.
    Op,
}

impl IbsKind {
    /// The kind of a PMU name from HEADER_PMU_MAPPINGS (`ibs_op`, `ibs_fetch`, or names that
    /// start with them, as perf matches).
    pub fn from_pmu(name: &str) -> Option<IbsKind> {
        if name.starts_with("ibs_op") {
            Some(IbsKind::Op)
        } else if name.starts_with("ibs_fetch") {
            Some(IbsKind::Fetch)
        } else {
            None
        }
    }
}

/// The CPU facts decoding depends on: family/model (errata, table choice) and whether the file
/// says the Zen 4 extensions are present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IbsContext {
    /// CPU family (decimal, e.g. 25 for 19h).
    pub family: u32,
    /// CPU model.
    pub model: u32,
    /// HEADER_PMU_CAPS has `zen4_ibs_extensions` on `ibs_op` (perf's only switch for the
    /// extended decoding).
    pub zen4_pmu_cap: bool,
}

impl IbsContext {
    /// The context of a file that does not say its CPU (no AMD CPUID): Zen 1 rules, no
    /// errata of a known model, no Zen 4 extensions. `culprit ibs` and the PGO exports
    /// decode IBS samples with it where perf would not decode them at all.
    pub const NEUTRAL: IbsContext = IbsContext {
        family: 0x17,
        model: 0,
        zen4_pmu_cap: false,
    };

    /// [`IbsContext::from_meta`], or [`IbsContext::NEUTRAL`] for a file that does not say
    /// it is from an x86 AMD CPU.
    pub fn from_meta_or_neutral(meta: &Meta) -> IbsContext {
        IbsContext::from_meta(meta).unwrap_or(IbsContext::NEUTRAL)
    }

    /// Reads family/model from HEADER_CPUID (`AuthenticAMD,family,model,stepping`) and the
    /// Zen 4 cap from HEADER_PMU_CAPS. `None` unless the file is from an x86 AMD CPU, the
    /// condition under which perf decodes IBS.
    pub fn from_meta(meta: &Meta) -> Option<IbsContext> {
        if let Some(arch) = &meta.arch {
            if !(arch == "x86_64" || arch == "x86" || arch.starts_with("i686")) {
                return None;
            }
        }
        let cpuid = meta.cpuid.as_deref()?;
        let mut parts = cpuid.split(',');
        if parts.next()? != "AuthenticAMD" {
            return None;
        }
        let family = parts.next()?.trim().parse().ok()?;
        let model = parts.next()?.trim().parse().ok()?;
        let zen4_pmu_cap = meta.pmu_caps.iter().any(|(pmu, cap, v)| {
            pmu == "ibs_op" && cap == "zen4_ibs_extensions" && v.trim() != "0"
        });
        Some(IbsContext {
            family,
            model,
            zen4_pmu_cap,
        })
    }

    /// Family 19h model < 10h (Zen 3 server parts): errata #1238, #1347, #1293 apply.
    pub fn zen3_errata(&self) -> bool {
        self.family == 0x19 && self.model < 0x10
    }

    /// Whether IbsOpData2 CacheHitSt is trustworthy (invalid on family 19h models 00–0F and
    /// 20–5F, as the kernel decides).
    pub fn cache_hit_st_valid(&self) -> bool {
        !(self.family == 0x19 && (self.model <= 0x0f || (0x20..=0x5f).contains(&self.model)))
    }
}

/// A page size reported by IBS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PageSize {
    /// 4 KiB.
    K4,
    /// 16 KiB (family 19h model < 10h fetch table, erratum #1347).
    K16,
    /// 2 MiB.
    M2,
    /// 1 GiB.
    G1,
    /// Reserved encoding.
    Reserved,
}

impl PageSize {
    /// perf's spelling (`4KB`, `2MB`, …).
    pub fn label(self) -> &'static str {
        match self {
            PageSize::K4 => "4KB",
            PageSize::K16 => "16KB",
            PageSize::M2 => "2MB",
            PageSize::G1 => "1GB",
            PageSize::Reserved => "RESERVED",
        }
    }

    /// Size in bytes (0 for reserved).
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::K4 => 4 << 10,
            PageSize::K16 => 16 << 10,
            PageSize::M2 => 2 << 20,
            PageSize::G1 => 1 << 30,
            PageSize::Reserved => 0,
        }
    }
}

fn bit(v: u64, n: u32) -> bool {
    (v >> n) & 1 == 1
}

fn bits(v: u64, lo: u32, width: u32) -> u64 {
    (v >> lo) & ((1u64 << width) - 1)
}

fn fetch_page_size(field: u64, erratum_1347: bool) -> PageSize {
    match (field, erratum_1347) {
        (0, _) => PageSize::K4,
        (1, true) => PageSize::K16,
        (1, false) | (2, true) => PageSize::M2,
        (2, false) | (3, true) => PageSize::G1,
        _ => PageSize::Reserved,
    }
}

/// The registers of a raw payload: the caps word and the `u64`s that are present.
fn split_raw(raw: &[u8]) -> Result<(u32, Vec<u64>), IbsError> {
    if raw.len() < 12 {
        return Err(IbsError::TooShort(raw.len()));
    }
    let caps = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let regs = raw[4..]
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    Ok((caps, regs))
}

/// IbsFetchCtl (MSR C001_1030), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FetchCtl {
    /// The whole register.
    pub value: u64,
    /// Sampling period in fetches (IbsFetchMaxCnt × 16).
    pub max_cnt: u32,
    /// Current count (IbsFetchCnt × 16).
    pub cnt: u32,
    /// Fetch latency in cycles.
    pub lat: u16,
    /// En.
    pub en: bool,
    /// Val.
    pub val: bool,
    /// Comp: the fetch completed.
    pub comp: bool,
    /// Instruction-cache miss; `None` on family 19h model < 10h (erratum #1238).
    pub ic_miss: Option<bool>,
    /// PhyAddrValid: IbsFetchPhysAd and the page size are valid.
    pub phy_addr_valid: bool,
    /// L1 ITLB page size (only with PhyAddrValid; erratum #1347 table on 19h < 10h).
    pub page_size: Option<PageSize>,
    /// L1 ITLB miss.
    pub l1_tlb_miss: bool,
    /// L2 ITLB miss.
    pub l2_tlb_miss: bool,
    /// RandEn.
    pub rand_en: bool,
    /// FetchL2Miss (only meaningful with Comp).
    pub l2_miss: Option<bool>,
    /// L3MissOnly (Zen 4+).
    pub l3_miss_only: Option<bool>,
    /// FetchOcMiss: op-cache miss (Zen 4+).
    pub oc_miss: Option<bool>,
    /// FetchL3Miss (Zen 4+).
    pub l3_miss: Option<bool>,
}

/// One decoded IBS fetch sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IbsFetch {
    /// The caps word of the payload.
    pub caps: u32,
    /// IbsFetchCtl.
    pub ctl: FetchCtl,
    /// IbsFetchLinAd: linear address of the fetch (`None` if the payload stops before it).
    pub lin_addr: Option<u64>,
    /// IbsFetchPhysAd, when present and PhyAddrValid.
    pub phys_addr: Option<u64>,
    /// IcIbsExtdCtl, when the caps announce it and the payload has it.
    pub extd_ctl: Option<u64>,
    /// ITLB refill latency (IcIbsExtdCtl bits 15:0).
    pub itlb_refill_lat: Option<u16>,
    /// The `u64` registers as recorded.
    pub regs: Vec<u64>,
}

impl IbsFetch {
    /// CodeAnalyst's *killed* fetch: none of the outcome bits (TLB misses, PhyAddrValid, Comp,
    /// IcMiss, L2Miss) is set, so the fetch was dropped before doing anything.
    pub fn killed(&self) -> bool {
        let v = self.ctl.value;
        !(bit(v, 50) || bit(v, 51) || bit(v, 52) || bit(v, 55) || bit(v, 56) || bit(v, 58))
    }

    /// A completed fetch (Comp).
    pub fn completed(&self) -> bool {
        self.ctl.comp
    }
}

/// Decodes an `ibs_fetch` raw payload.
pub fn decode_fetch(raw: &[u8], ctx: &IbsContext) -> Result<IbsFetch, IbsError> {
    let (caps_word, regs) = split_raw(raw)?;
    let v = regs[0];
    let (en, val) = (bit(v, 48), bit(v, 49));
    if !(en && val) {
        return Err(IbsError::NotValid {
            kind: "fetch",
            en,
            val,
            ctl: v,
        });
    }
    let zen4 = ctx.zen4_pmu_cap || caps_word & caps::ZEN4 != 0;
    let comp = bit(v, 50);
    let phy_addr_valid = bit(v, 52);
    let ctl = FetchCtl {
        value: v,
        max_cnt: (bits(v, 0, 16) as u32) << 4,
        cnt: (bits(v, 16, 16) as u32) << 4,
        lat: bits(v, 32, 16) as u16,
        en,
        val,
        comp,
        ic_miss: (!ctx.zen3_errata()).then(|| bit(v, 51)),
        phy_addr_valid,
        page_size: phy_addr_valid.then(|| fetch_page_size(bits(v, 53, 2), ctx.zen3_errata())),
        l1_tlb_miss: bit(v, 55),
        l2_tlb_miss: bit(v, 56),
        rand_en: bit(v, 57),
        l2_miss: comp.then(|| bit(v, 58)),
        l3_miss_only: zen4.then(|| bit(v, 59)),
        oc_miss: zen4.then(|| bit(v, 60)),
        l3_miss: zen4.then(|| bit(v, 61)),
    };
    let extd_ctl = if caps_word & caps::FETCHCTLEXTD != 0 {
        regs.get(3).copied()
    } else {
        None
    };
    Ok(IbsFetch {
        caps: caps_word,
        ctl,
        lin_addr: regs.get(1).copied(),
        phys_addr: regs.get(2).copied().filter(|_| phy_addr_valid),
        extd_ctl,
        itlb_refill_lat: extd_ctl.map(|e| bits(e, 0, 16) as u16),
        regs,
    })
}

/// IbsOpCtl (MSR C001_1033), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpCtl {
    /// The whole register.
    pub value: u64,
    /// Sampling period (OpMaxCnt with the extension bits 26:20, × 16).
    pub max_cnt: u32,
    /// L3MissOnly (Zen 4+).
    pub l3_miss_only: Option<bool>,
    /// En.
    pub en: bool,
    /// Val.
    pub val: bool,
    /// CntCtl: counting dispatched micro-ops (true) or cycles (false).
    pub cnt_ctl_uops: bool,
    /// OpCurCnt (27 bits; 20 bits on family 10h).
    pub cur_cnt: u32,
    /// Load-latency threshold field (bits 62:59, Zen 5 with OPLDLAT).
    pub ldlat_thrsh: Option<u8>,
    /// Load-latency filtering enabled (bit 63, Zen 5 with OPLDLAT).
    pub ldlat_en: Option<bool>,
}

/// IbsOpData (MSR C001_1035), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpData {
    /// The whole register.
    pub value: u64,
    /// Cycles from completion to retire.
    pub comp_to_ret: u16,
    /// Cycles from tag to retire.
    pub tag_to_ret: u16,
    /// BrnResync (family 10h only).
    pub brn_resync: Option<bool>,
    /// MispReturn (family 10h only).
    pub misp_return: Option<bool>,
    /// The op is a return (meaningful when `brn_ret`).
    pub ret: bool,
    /// Taken branch (meaningful when `brn_ret`).
    pub brn_taken: bool,
    /// Mispredicted branch (meaningful when `brn_ret`).
    pub brn_misp: bool,
    /// The op is a retired branch.
    pub brn_ret: bool,
    /// IbsOpRip is invalid.
    pub rip_invalid: bool,
    /// Fused branch.
    pub brn_fuse: bool,
    /// Microcoded op.
    pub microcode: bool,
}

/// IbsOpData2 (MSR C001_1036), decoded: where a load's data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpData2 {
    /// The whole register.
    pub value: u64,
    /// DataSrc (3 bits, or 5 bits with the Zen 4 extensions).
    pub data_src: u8,
    /// Data from a remote node.
    pub rmt_node: bool,
    /// CacheHitSt (0 M, 1 O); `None` where the kernel says it is invalid (19h models 00–0F,
    /// 20–5F).
    pub cache_hit_st: Option<u8>,
    /// Streaming store (bit 8; newer parts).
    pub strm_st: bool,
    /// Remote socket (bit 9; newer parts).
    pub rmt_socket: bool,
}

impl OpData2 {
    /// What DataSrc means for this family (`None` for 0 = no valid status, or reserved values).
    pub fn data_src_name(&self, zen4: bool) -> Option<&'static str> {
        data_src_name(self.data_src, zen4)
    }
}

/// The meaning of a DataSrc value (culprit's wording; `zen4` selects the 5-bit table).
pub fn data_src_name(src: u8, zen4: bool) -> Option<&'static str> {
    if zen4 {
        match src {
            1 => Some("local L3 or L1/L2 in the same CCX"),
            2 => Some("cache of another CCX, same node"),
            3 => Some("DRAM"),
            5 => Some("cache of another CCX, other node"),
            6 => Some("long-latency memory (DIMM/PMEM)"),
            7 => Some("MMIO/config/PCI/APIC"),
            8 => Some("extension memory (CXL)"),
            12 => Some("memory of another processor type"),
            _ => None,
        }
    } else {
        match src {
            2 => Some("local node cache"),
            3 => Some("DRAM"),
            4 => Some("remote node cache"),
            7 => Some("other/IO"),
            _ => None,
        }
    }
}

/// IbsOpData3 (MSR C001_1037), decoded: the load/store side of the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpData3 {
    /// The whole register.
    pub value: u64,
    /// Load op.
    pub ld_op: bool,
    /// Store op.
    pub st_op: bool,
    /// L1 DTLB miss (Zen 5: valid only with DcPhyAddrValid, else `false`).
    pub dc_l1_tlb_miss: bool,
    /// L2 DTLB miss (same validity as above).
    pub dc_l2_tlb_miss: bool,
    /// L1 DTLB hit in a 2M page (pre-Zen 5).
    pub dc_l1_tlb_hit_2m: bool,
    /// L1 DTLB hit in a 1G page (pre-Zen 5).
    pub dc_l1_tlb_hit_1g: bool,
    /// L2 DTLB hit in a 2M page (pre-Zen 5).
    pub dc_l2_tlb_hit_2m: bool,
    /// L2 DTLB hit in a 1G page (pre-Zen 5).
    pub dc_l2_tlb_hit_1g: bool,
    /// Zen 5 (OPDTLBPGSIZE): the DTLB page size, valid with DcPhyAddrValid.
    pub page_size: Option<PageSize>,
    /// Data-cache miss.
    pub dc_miss: bool,
    /// Misaligned access.
    pub dc_mis_acc: bool,
    /// Family 10h bank-conflict and forwarding bits 12:9 (LdBnkCon, StBnkCon, StToLdFwd,
    /// StToLdCan), `None` on later families where they are reserved.
    pub fam10h_bits: Option<u8>,
    /// Write-combining memory access.
    pub dc_wc_mem_acc: bool,
    /// Uncacheable memory access.
    pub dc_uc_mem_acc: bool,
    /// Locked op.
    pub dc_locked_op: bool,
    /// DcMissNoMabAlloc (DcMabHit on older parts).
    pub dc_miss_no_mab_alloc: bool,
    /// IbsDcLinAd is valid.
    pub dc_lin_addr_valid: bool,
    /// IbsDcPhysAd is valid.
    pub dc_phy_addr_valid: bool,
    /// L2 miss; `None` when erratum #1293 makes it invalid.
    pub l2_miss: Option<bool>,
    /// Software prefetch.
    pub sw_pf: bool,
    /// Access width in bytes (0 when not reported).
    pub mem_width: u32,
    /// Outstanding memory requests at DC miss; `None` under erratum #1293.
    pub open_mem_reqs: Option<u8>,
    /// DC miss latency in cycles.
    pub dc_miss_lat: u16,
    /// TLB refill latency in cycles.
    pub tlb_refill_lat: u16,
}

/// One decoded IBS op sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IbsOp {
    /// The caps word of the payload.
    pub caps: u32,
    /// Whether the Zen 4 extensions are in force (PMU cap or caps bit 11).
    pub zen4: bool,
    /// IbsOpCtl.
    pub ctl: OpCtl,
    /// IbsOpRip, unless RipInvalid (or absent from the payload).
    pub rip: Option<u64>,
    /// IbsOpData, if present.
    pub data: Option<OpData>,
    /// IbsOpData2, if present and not invalidated by erratum #1293.
    pub data2: Option<OpData2>,
    /// IbsOpData3, if present.
    pub data3: Option<OpData3>,
    /// IbsDcLinAd, when present and DcLinAddrValid (may be 0 and still valid).
    pub dc_lin_addr: Option<u64>,
    /// IbsDcPhysAd (48 bits), when present and DcPhyAddrValid (zeroed for unprivileged readers
    /// on newer kernels, still valid).
    pub dc_phys_addr: Option<u64>,
    /// IbsBrTarget, when the caps announce it and the payload has it.
    pub br_target: Option<u64>,
    /// IbsOpData4, when the caps announce it and the payload has it.
    pub data4: Option<u64>,
    /// The `u64` registers as recorded.
    pub regs: Vec<u64>,
}

impl IbsOp {
    /// A load op.
    pub fn is_load(&self) -> bool {
        self.data3.is_some_and(|d| d.ld_op)
    }

    /// A store op.
    pub fn is_store(&self) -> bool {
        self.data3.is_some_and(|d| d.st_op)
    }

    /// A data-cache miss.
    pub fn dc_miss(&self) -> bool {
        self.data3.is_some_and(|d| d.dc_miss)
    }
}

/// Decodes an `ibs_op` raw payload.
pub fn decode_op(raw: &[u8], ctx: &IbsContext) -> Result<IbsOp, IbsError> {
    let (caps_word, regs) = split_raw(raw)?;
    let v = regs[0];
    let (en, val) = (bit(v, 17), bit(v, 18));
    if !(en && val) {
        return Err(IbsError::NotValid {
            kind: "op",
            en,
            val,
            ctl: v,
        });
    }
    let zen4 = ctx.zen4_pmu_cap || caps_word & caps::ZEN4 != 0;
    let fam10h = ctx.family == 0x10;
    let ldlat = caps_word & caps::OPLDLAT != 0;
    let ext = if fam10h { 0 } else { bits(v, 20, 7) };
    let ctl = OpCtl {
        value: v,
        max_cnt: (((ext << 16) | bits(v, 0, 16)) << 4) as u32,
        l3_miss_only: zen4.then(|| bit(v, 16)),
        en,
        val,
        cnt_ctl_uops: bit(v, 19),
        cur_cnt: bits(v, 32, if fam10h { 20 } else { 27 }) as u32,
        ldlat_thrsh: ldlat.then(|| bits(v, 59, 4) as u8),
        ldlat_en: ldlat.then(|| bit(v, 63)),
    };
    let data = regs.get(2).map(|&d| OpData {
        value: d,
        comp_to_ret: bits(d, 0, 16) as u16,
        tag_to_ret: bits(d, 16, 16) as u16,
        brn_resync: fam10h.then(|| bit(d, 32)),
        misp_return: fam10h.then(|| bit(d, 33)),
        ret: bit(d, 34),
        brn_taken: bit(d, 35),
        brn_misp: bit(d, 36),
        brn_ret: bit(d, 37),
        rip_invalid: bit(d, 38),
        brn_fuse: bit(d, 39),
        microcode: bit(d, 40),
    });
    let pgsize = caps_word & caps::OPDTLBPGSIZE != 0;
    let data3 = regs.get(4).map(|&d| {
        let sw_pf = bit(d, 21);
        let no_mab = bit(d, 16);
        let e1293 = ctx.zen3_errata() && (sw_pf || no_mab);
        let phys_valid = bit(d, 18);
        // Zen 5: TLB bits 2–5 are meaningful only with a valid physical address.
        let tlb_ok = !pgsize || phys_valid;
        let width = bits(d, 22, 4) as u32;
        OpData3 {
            value: d,
            ld_op: bit(d, 0),
            st_op: bit(d, 1),
            dc_l1_tlb_miss: tlb_ok && bit(d, 2),
            dc_l2_tlb_miss: tlb_ok && bit(d, 3),
            dc_l1_tlb_hit_2m: !pgsize && bit(d, 4),
            dc_l1_tlb_hit_1g: !pgsize && bit(d, 5),
            dc_l2_tlb_hit_2m: !pgsize && bit(d, 6),
            dc_l2_tlb_hit_1g: !pgsize && bit(d, 19),
            page_size: (pgsize && phys_valid).then(|| match bits(d, 4, 2) {
                0 => PageSize::K4,
                1 => PageSize::M2,
                2 => PageSize::G1,
                _ => PageSize::Reserved,
            }),
            dc_miss: bit(d, 7),
            dc_mis_acc: bit(d, 8),
            fam10h_bits: fam10h.then(|| bits(d, 9, 4) as u8),
            dc_wc_mem_acc: bit(d, 13),
            dc_uc_mem_acc: bit(d, 14),
            dc_locked_op: bit(d, 15),
            dc_miss_no_mab_alloc: no_mab,
            dc_lin_addr_valid: bit(d, 17),
            dc_phy_addr_valid: phys_valid,
            l2_miss: (!e1293).then(|| bit(d, 20)),
            sw_pf,
            mem_width: if width == 0 { 0 } else { 1 << (width - 1) },
            open_mem_reqs: (!e1293).then(|| bits(d, 26, 6) as u8),
            dc_miss_lat: bits(d, 32, 16) as u16,
            tlb_refill_lat: bits(d, 48, 16) as u16,
        }
    });
    let e1293 = data3.is_some_and(|d| d.l2_miss.is_none());
    let data2 = regs.get(3).filter(|_| !e1293).map(|&d| OpData2 {
        value: d,
        data_src: if zen4 {
            ((bits(d, 6, 2) << 3) | bits(d, 0, 3)) as u8
        } else {
            bits(d, 0, 3) as u8
        },
        rmt_node: bit(d, 4),
        cache_hit_st: ctx.cache_hit_st_valid().then(|| bits(d, 5, 1) as u8),
        strm_st: bit(d, 8),
        rmt_socket: bit(d, 9),
    });
    let rip_invalid = data.is_some_and(|d| d.rip_invalid);
    let br_idx = 7;
    let br_target = if caps_word & caps::BRNTRGT != 0 {
        regs.get(br_idx).copied()
    } else {
        None
    };
    let d4_idx = if caps_word & caps::BRNTRGT != 0 { 8 } else { 7 };
    let data4 = if caps_word & caps::OPDATA4 != 0 {
        regs.get(d4_idx).copied()
    } else {
        None
    };
    Ok(IbsOp {
        caps: caps_word,
        zen4,
        ctl,
        rip: regs.get(1).copied().filter(|_| !rip_invalid),
        data,
        data2,
        data3,
        dc_lin_addr: regs
            .get(5)
            .copied()
            .filter(|_| data3.is_some_and(|d| d.dc_lin_addr_valid)),
        dc_phys_addr: regs
            .get(6)
            .map(|p| p & 0xffff_ffff_ffff)
            .filter(|_| data3.is_some_and(|d| d.dc_phy_addr_valid)),
        br_target,
        data4,
        regs,
    })
}

/// A decoded IBS sample of either kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IbsSample {
    /// From `ibs_fetch`.
    Fetch(IbsFetch),
    /// From `ibs_op`.
    Op(IbsOp),
}

/// Decodes a raw payload of the given kind.
pub fn decode(kind: IbsKind, raw: &[u8], ctx: &IbsContext) -> Result<IbsSample, IbsError> {
    match kind {
        IbsKind::Fetch => decode_fetch(raw, ctx).map(IbsSample::Fetch),
        IbsKind::Op => decode_op(raw, ctx).map(IbsSample::Op),
    }
}

#[cfg(test)]
mod tests;
