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

/// One line of perf's IBS dump: its label, its printed text and its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PerfLine {
    /// perf's label (`ibs_op_ctl`, `IbsOpRip`, `ibs_fetch_ctl`, …).
    pub label: &'static str,
    /// The whole register.
    pub value: u64,
    /// The fields perf prints, in order, with numeric values: counts as perf scales them,
    /// OpMemWidth in bytes, enumerations (CntCtl, DataSrc, CacheHitSt, L1TlbPgSz) as the
    /// field's number.
    pub fields: Vec<(&'static str, u64)>,
    /// The line exactly as perf 6.1 prints it (without the newline).
    pub text: String,
}

fn b(v: bool) -> u64 {
    v as u64
}

const DATA_SRC_DEFAULT: [&str; 8] = [
    "",
    "1=(reserved)",
    "2=Local node cache",
    "3=DRAM",
    "4=Remote node cache",
    "5=(reserved)",
    "6=(reserved)",
    "7=Other",
];

const DATA_SRC_ZEN4: [&str; 13] = [
    "",
    "1=Local L3 or other L1/L2 in CCX",
    "2=A peer cache in a near CCX",
    "3=Data returned from DRAM",
    "4=(reserved)",
    "5=A peer cache in a far CCX",
    "6=DRAM address map with \"long latency\" bit set",
    "7=Data returned from MMIO/Config/PCI/APIC",
    "8=Extension Memory (S-Link, GenZ, etc)",
    "9=(reserved)",
    "10=(reserved)",
    "11=(reserved)",
    "12=Peer Agent Memory",
];

fn addr_line(label: &'static str, v: u64) -> PerfLine {
    PerfLine {
        label,
        value: v,
        fields: Vec::new(),
        text: format!("{label}:\t{v:016x}"),
    }
}

impl IbsSample {
    /// The lines `perf report -D` (perf 6.1) prints for this sample, with their fields. Uses
    /// the raw registers and perf's own conditions (see the module doc); registers missing from
    /// a short payload are left out rather than read past the end as perf would.
    pub fn perf_lines(&self, ctx: &IbsContext) -> Vec<PerfLine> {
        match self {
            IbsSample::Fetch(f) => perf_fetch_lines(&f.regs, ctx),
            IbsSample::Op(o) => perf_op_lines(&o.regs, ctx),
        }
    }
}

fn perf_fetch_lines(regs: &[u64], ctx: &IbsContext) -> Vec<PerfLine> {
    let mut out = Vec::new();
    let Some(&v) = regs.first() else {
        return out;
    };
    let e = ctx.zen3_errata();
    let mut f: Vec<(&'static str, u64)> = Vec::new();
    let max_cnt = bits(v, 0, 16) << 4;
    let cnt = bits(v, 16, 16) << 4;
    let lat = bits(v, 32, 16);
    let (en, val, comp) = (bit(v, 48), bit(v, 49), bit(v, 50));
    let pav = bit(v, 52);
    let pgsz = bits(v, 53, 2);
    f.extend([
        ("MaxCnt", max_cnt),
        ("Cnt", cnt),
        ("Lat", lat),
        ("En", b(en)),
        ("Val", b(val)),
        ("Comp", b(comp)),
    ]);
    let mut text = format!(
        "ibs_fetch_ctl:\t{v:016x} MaxCnt {max_cnt:7} Cnt {cnt:7} Lat {lat:5} En {} Val {} Comp {}",
        b(en),
        b(val),
        b(comp)
    );
    if !e {
        f.push(("IcMiss", b(bit(v, 51))));
        text += &format!(" IcMiss {}", b(bit(v, 51)));
    }
    f.push(("PhyAddrValid", b(pav)));
    text += &format!(" PhyAddrValid {}", b(pav));
    if pav {
        f.push(("L1TlbPgSz", pgsz));
        text += &format!(" L1TlbPgSz {}", fetch_page_size(pgsz, e).label());
    }
    f.extend([
        ("L1TlbMiss", b(bit(v, 55))),
        ("L2TlbMiss", b(bit(v, 56))),
        ("RandEn", b(bit(v, 57))),
    ]);
    text += &format!(
        " L1TlbMiss {} L2TlbMiss {} RandEn {}",
        b(bit(v, 55)),
        b(bit(v, 56)),
        b(bit(v, 57))
    );
    if comp {
        f.push(("L2Miss", b(bit(v, 58))));
        text += &format!(" L2Miss {}", b(bit(v, 58)));
    }
    if ctx.zen4_pmu_cap {
        f.extend([
            ("L3MissOnly", b(bit(v, 59))),
            ("FetchOcMiss", b(bit(v, 60))),
            ("FetchL3Miss", b(bit(v, 61))),
        ]);
        text += &format!(
            " L3MissOnly {} FetchOcMiss {} FetchL3Miss {}",
            b(bit(v, 59)),
            b(bit(v, 60)),
            b(bit(v, 61))
        );
    }
    out.push(PerfLine {
        label: "ibs_fetch_ctl",
        value: v,
        fields: f,
        text,
    });
    if let Some(&lin) = regs.get(1) {
        out.push(addr_line("IbsFetchLinAd", lin));
    }
    if let Some(&phys) = regs.get(2).filter(|_| pav) {
        out.push(addr_line("IbsFetchPhysAd", phys));
    }
    if let Some(&x) = regs.get(3) {
        let lat = bits(x, 0, 16);
        out.push(PerfLine {
            label: "ic_ibs_ext_ctl",
            value: x,
            fields: vec![("IbsItlbRefillLat", lat)],
            text: format!("ic_ibs_ext_ctl:\t{x:016x} IbsItlbRefillLat {lat:3}"),
        });
    }
    out
}

fn perf_op_lines(regs: &[u64], ctx: &IbsContext) -> Vec<PerfLine> {
    let mut out = Vec::new();
    let Some(&c) = regs.first() else {
        return out;
    };
    // ibs_op_ctl
    let max_cnt = ((bits(c, 20, 7) << 16) | bits(c, 0, 16)) << 4;
    let cur = bits(c, 32, 27);
    let cnt_ctl = bit(c, 19);
    let mut f = vec![("MaxCnt", max_cnt)];
    let mut text = format!("ibs_op_ctl:\t{c:016x} MaxCnt {max_cnt:9}");
    if ctx.zen4_pmu_cap {
        f.push(("L3MissOnly", b(bit(c, 16))));
        text += &format!(" L3MissOnly {}", b(bit(c, 16)));
    }
    f.extend([
        ("En", b(bit(c, 17))),
        ("Val", b(bit(c, 18))),
        ("CntCtl", b(cnt_ctl)),
        ("CurCnt", cur),
    ]);
    text += &format!(
        " En {} Val {} CntCtl {}={} CurCnt {cur:9}",
        b(bit(c, 17)),
        b(bit(c, 18)),
        b(cnt_ctl),
        if cnt_ctl { "uOps" } else { "cycles" }
    );
    out.push(PerfLine {
        label: "ibs_op_ctl",
        value: c,
        fields: f,
        text,
    });
    let data = regs.get(2).copied();
    let data3 = regs.get(4).copied();
    let rip_invalid = data.is_some_and(|d| bit(d, 38));
    if let Some(&rip) = regs.get(1).filter(|_| !rip_invalid) {
        out.push(addr_line("IbsOpRip", rip));
    }
    if let Some(d) = data {
        let brn_ret = bit(d, 37);
        let (c2r, t2r) = (bits(d, 0, 16), bits(d, 16, 16));
        let mut f = vec![("CompToRetCtr", c2r), ("TagToRetCtr", t2r)];
        let mut text = format!("ibs_op_data:\t{d:016x} CompToRetCtr {c2r:5} TagToRetCtr {t2r:5}");
        if brn_ret {
            for (name, n) in [("OpReturn", 34), ("OpBrnTaken", 35), ("OpBrnMisp", 36)] {
                f.push((name, b(bit(d, n))));
                text += &format!(" {name} {}", b(bit(d, n)));
            }
        }
        f.extend([
            ("BrnRet", b(brn_ret)),
            ("RipInvalid", b(bit(d, 38))),
            ("BrnFuse", b(bit(d, 39))),
            ("Microcode", b(bit(d, 40))),
        ]);
        // perf prints two spaces before RipInvalid.
        text += &format!(
            " BrnRet {}  RipInvalid {} BrnFuse {} Microcode {}",
            b(brn_ret),
            b(bit(d, 38)),
            b(bit(d, 39)),
            b(bit(d, 40))
        );
        out.push(PerfLine {
            label: "ibs_op_data",
            value: d,
            fields: f,
            text,
        });
    }
    let e1293 = ctx.zen3_errata() && data3.is_some_and(|d3| bit(d3, 16) || bit(d3, 21));
    if let Some(&d2) = regs.get(3).filter(|_| !e1293) {
        let (src, name): (u64, &str) = if ctx.zen4_pmu_cap {
            let s = (bits(d2, 6, 2) << 3) | bits(d2, 0, 3);
            (s, DATA_SRC_ZEN4.get(s as usize).copied().unwrap_or(""))
        } else {
            let s = bits(d2, 0, 3);
            (s, DATA_SRC_DEFAULT.get(s as usize).copied().unwrap_or(""))
        };
        let hit_st_shown = if ctx.zen4_pmu_cap {
            matches!(src, 1 | 2 | 5)
        } else {
            src == 2
        };
        let mut f = Vec::new();
        let mut text = format!("ibs_op_data2:\t{d2:016x} ");
        if hit_st_shown {
            let st = bits(d2, 5, 1);
            f.push(("CacheHitSt", st));
            text += if st == 1 {
                "CacheHitSt 1=O-State "
            } else {
                "CacheHitSt 0=M-state "
            };
        }
        f.push(("RmtNode", b(bit(d2, 4))));
        text += &format!("RmtNode {}", b(bit(d2, 4)));
        if !name.is_empty() {
            f.push(("DataSrc", src));
            text += &format!(" DataSrc {name}");
        }
        out.push(PerfLine {
            label: "ibs_op_data2",
            value: d2,
            fields: f,
            text,
        });
    }
    if let Some(d3) = data3 {
        let names_a: [(&'static str, u32); 17] = [
            ("LdOp", 0),
            ("StOp", 1),
            ("DcL1TlbMiss", 2),
            ("DcL2TlbMiss", 3),
            ("DcL1TlbHit2M", 4),
            ("DcL1TlbHit1G", 5),
            ("DcL2TlbHit2M", 6),
            ("DcMiss", 7),
            ("DcMisAcc", 8),
            ("DcWcMemAcc", 13),
            ("DcUcMemAcc", 14),
            ("DcLockedOp", 15),
            ("DcMissNoMabAlloc", 16),
            ("DcLinAddrValid", 17),
            ("DcPhyAddrValid", 18),
            ("DcL2TlbHit1G", 19),
            ("L2Miss", 20),
        ];
        let mut f = Vec::new();
        let mut text = format!("ibs_op_data3:\t{d3:016x}");
        for (name, n) in names_a {
            if name == "L2Miss" && e1293 {
                continue;
            }
            f.push((name, b(bit(d3, n))));
            text += &format!(" {name} {}", b(bit(d3, n)));
        }
        f.push(("SwPf", b(bit(d3, 21))));
        text += &format!(" SwPf {}", b(bit(d3, 21)));
        let width = bits(d3, 22, 4);
        if width != 0 {
            let bytes = 1u64 << (width - 1);
            f.push(("OpMemWidth", bytes));
            text += &format!(" OpMemWidth {bytes:2} bytes");
        }
        if !e1293 {
            let reqs = bits(d3, 26, 6);
            f.push(("OpDcMissOpenMemReqs", reqs));
            text += &format!(" OpDcMissOpenMemReqs {reqs:2}");
        }
        let (lat, tlb) = (bits(d3, 32, 16), bits(d3, 48, 16));
        f.extend([("DcMissLat", lat), ("TlbRefillLat", tlb)]);
        text += &format!(" DcMissLat {lat:5} TlbRefillLat {tlb:5}");
        out.push(PerfLine {
            label: "ibs_op_data3",
            value: d3,
            fields: f,
            text,
        });
        if let Some(&lin) = regs.get(5).filter(|_| bit(d3, 17)) {
            out.push(addr_line("IbsDCLinAd", lin));
        }
        if let Some(&phys) = regs.get(6).filter(|_| bit(d3, 18)) {
            out.push(addr_line("IbsDCPhysAd", phys));
        }
    }
    if let (Some(d), Some(&t)) = (data, regs.get(7)) {
        if bit(d, 37) && t != 0 {
            out.push(addr_line("IbsBrTarget", t));
        }
    }
    out
}

/// `perf_mem_data_src` bit encodings (include/uapi/linux/perf_event.h).
pub mod mem {
    /// mem_op shift.
    pub const OP_SHIFT: u32 = 0;
    /// mem_lvl shift.
    pub const LVL_SHIFT: u32 = 5;
    /// mem_snoop shift.
    pub const SNOOP_SHIFT: u32 = 19;
    /// mem_lock shift.
    pub const LOCK_SHIFT: u32 = 24;
    /// mem_dtlb shift.
    pub const TLB_SHIFT: u32 = 26;
    /// mem_lvl_num shift.
    pub const LVLNUM_SHIFT: u32 = 33;
    /// mem_remote shift.
    pub const REMOTE_SHIFT: u32 = 37;
    /// mem_snoopx shift.
    pub const SNOOPX_SHIFT: u32 = 38;
    /// mem_blk shift.
    pub const BLK_SHIFT: u32 = 40;
    /// mem_hops shift.
    pub const HOPS_SHIFT: u32 = 43;

    /// mem_op: not available.
    pub const OP_NA: u64 = 0x01;
    /// mem_op: load.
    pub const OP_LOAD: u64 = 0x02;
    /// mem_op: store.
    pub const OP_STORE: u64 = 0x04;
    /// mem_op: prefetch.
    pub const OP_PFETCH: u64 = 0x08;
    /// mem_op: code execution.
    pub const OP_EXEC: u64 = 0x10;

    /// mem_lvl: not available.
    pub const LVL_NA: u64 = 0x01;
    /// mem_lvl: hit.
    pub const LVL_HIT: u64 = 0x02;
    /// mem_lvl: miss.
    pub const LVL_MISS: u64 = 0x04;
    /// mem_lvl: L1.
    pub const LVL_L1: u64 = 0x08;
    /// mem_lvl: line fill buffer.
    pub const LVL_LFB: u64 = 0x10;
    /// mem_lvl: L2.
    pub const LVL_L2: u64 = 0x20;
    /// mem_lvl: L3.
    pub const LVL_L3: u64 = 0x40;
    /// mem_lvl: local DRAM.
    pub const LVL_LOC_RAM: u64 = 0x80;
    /// mem_lvl: remote DRAM, one hop.
    pub const LVL_REM_RAM1: u64 = 0x100;
    /// mem_lvl: remote DRAM, two hops.
    pub const LVL_REM_RAM2: u64 = 0x200;
    /// mem_lvl: remote cache, one hop.
    pub const LVL_REM_CCE1: u64 = 0x400;
    /// mem_lvl: remote cache, two hops.
    pub const LVL_REM_CCE2: u64 = 0x800;
    /// mem_lvl: I/O memory.
    pub const LVL_IO: u64 = 0x1000;
    /// mem_lvl: uncached memory.
    pub const LVL_UNC: u64 = 0x2000;

    /// mem_snoop: not available.
    pub const SNOOP_NA: u64 = 0x01;
    /// mem_snoop: no snoop.
    pub const SNOOP_NONE: u64 = 0x02;
    /// mem_snoop: snoop hit.
    pub const SNOOP_HIT: u64 = 0x04;
    /// mem_snoop: snoop miss.
    pub const SNOOP_MISS: u64 = 0x08;
    /// mem_snoop: snoop hit modified.
    pub const SNOOP_HITM: u64 = 0x10;

    /// mem_lock: not available.
    pub const LOCK_NA: u64 = 0x01;
    /// mem_lock: locked transaction.
    pub const LOCK_LOCKED: u64 = 0x02;

    /// mem_dtlb: not available.
    pub const TLB_NA: u64 = 0x01;
    /// mem_dtlb: hit.
    pub const TLB_HIT: u64 = 0x02;
    /// mem_dtlb: miss.
    pub const TLB_MISS: u64 = 0x04;
    /// mem_dtlb: L1.
    pub const TLB_L1: u64 = 0x08;
    /// mem_dtlb: L2.
    pub const TLB_L2: u64 = 0x10;
    /// mem_dtlb: hardware walker.
    pub const TLB_WK: u64 = 0x20;
    /// mem_dtlb: OS fault handler.
    pub const TLB_OS: u64 = 0x40;

    /// mem_lvl_num: L1.
    pub const LVLNUM_L1: u64 = 0x01;
    /// mem_lvl_num: L2.
    pub const LVLNUM_L2: u64 = 0x02;
    /// mem_lvl_num: L3.
    pub const LVLNUM_L3: u64 = 0x03;
    /// mem_lvl_num: L4.
    pub const LVLNUM_L4: u64 = 0x04;
    /// mem_lvl_num: L2 miss handling buffer.
    pub const LVLNUM_L2_MHB: u64 = 0x05;
    /// mem_lvl_num: memory-side cache.
    pub const LVLNUM_MSC: u64 = 0x06;
    /// mem_lvl_num: uncached.
    pub const LVLNUM_UNC: u64 = 0x08;
    /// mem_lvl_num: CXL.
    pub const LVLNUM_CXL: u64 = 0x09;
    /// mem_lvl_num: I/O.
    pub const LVLNUM_IO: u64 = 0x0a;
    /// mem_lvl_num: any cache.
    pub const LVLNUM_ANY_CACHE: u64 = 0x0b;
    /// mem_lvl_num: line fill buffer.
    pub const LVLNUM_LFB: u64 = 0x0c;
    /// mem_lvl_num: DRAM.
    pub const LVLNUM_RAM: u64 = 0x0d;
    /// mem_lvl_num: persistent memory.
    pub const LVLNUM_PMEM: u64 = 0x0e;
    /// mem_lvl_num: not available.
    pub const LVLNUM_NA: u64 = 0x0f;

    /// `PERF_MEM_NA`: what an unfilled data_src holds.
    pub const NA: u64 = (OP_NA << OP_SHIFT)
        | (LVL_NA << LVL_SHIFT)
        | (SNOOP_NA << SNOOP_SHIFT)
        | (LOCK_NA << LOCK_SHIFT)
        | (TLB_NA << TLB_SHIFT);
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn vectors() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ibs-vectors.json"
        );
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    /// perf's printed value of a field turned into culprit's number: "3=DRAM" → 3,
    /// "8 bytes" → 8, page sizes by their index in the table perf used.
    fn perf_number(name: &str, v: &Value, erratum_1347: bool) -> u64 {
        if let Some(n) = v.as_u64() {
            return n;
        }
        let s = v.as_str().unwrap();
        if name == "L1TlbPgSz" {
            let table: [&str; 4] = if erratum_1347 {
                ["4KB", "16KB", "2MB", "1GB"]
            } else {
                ["4KB", "2MB", "1GB", "RESERVED"]
            };
            return table.iter().position(|t| *t == s).unwrap() as u64;
        }
        let head = s.split(['=', ' ']).next().unwrap();
        head.parse().unwrap()
    }

    #[test]
    fn test_perf_lines_match_perf_61_for_all_vectors() {
        let v = vectors();
        let samples = v["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 100);
        let mut decoded = 0;
        for s in samples {
            let ctx = IbsContext {
                family: s["family"].as_u64().unwrap() as u32,
                model: s["model"].as_u64().unwrap() as u32,
                zen4_pmu_cap: s["zen4_ibs_extensions"].as_bool().unwrap(),
            };
            let kind = match s["kind"].as_str().unwrap() {
                "op" => IbsKind::Op,
                _ => IbsKind::Fetch,
            };
            let what = format!("{} #{}", s["variant"], s["index"]);
            let raw = hex_bytes(s["raw_hex"].as_str().unwrap());
            let r = decode(kind, &raw, &ctx);
            if !s["perf_decoded"].as_bool().unwrap() {
                assert!(matches!(r, Err(IbsError::NotValid { .. })), "{what}: {r:?}");
                continue;
            }
            let sample = r.unwrap_or_else(|e| panic!("{what}: {e}"));
            let lines = sample.perf_lines(&ctx);
            let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            let want: Vec<&str> = s["perf_lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect();
            assert_eq!(texts, want, "{what}");
            let fields = s["perf_fields"].as_object().unwrap();
            assert_eq!(lines.len(), fields.len(), "{what}");
            for line in &lines {
                let want = fields[line.label].as_object().unwrap();
                let want_value = u64::from_str_radix(want["value"].as_str().unwrap(), 16).unwrap();
                assert_eq!(line.value, want_value, "{what} {}", line.label);
                let want_fields: Vec<(&str, u64)> = want
                    .iter()
                    .filter(|(k, _)| *k != "value")
                    .map(|(k, v)| (k.as_str(), perf_number(k, v, ctx.zen3_errata())))
                    .collect();
                let mut got = line.fields.clone();
                got.sort();
                let mut want_sorted = want_fields;
                want_sorted.sort();
                assert_eq!(got, want_sorted, "{what} {}", line.label);
            }
            decoded += 1;
        }
        // 25 samples per variant, one invalid fetch and one invalid op in each.
        assert_eq!(decoded, 92);
    }

    fn op_raw(caps: u32, regs: &[u64]) -> Vec<u8> {
        let mut out = caps.to_le_bytes().to_vec();
        for r in regs {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out
    }

    const ZEN2: IbsContext = IbsContext {
        family: 0x17,
        model: 0x31,
        zen4_pmu_cap: false,
    };
    const ZEN3_EARLY: IbsContext = IbsContext {
        family: 0x19,
        model: 0x01,
        zen4_pmu_cap: false,
    };

    const EN_VAL: u64 = (1 << 17) | (1 << 18);

    #[test]
    fn test_raw_size_and_caps_decide_registers() {
        // Only ctl + rip: no data registers, no crash.
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 0x401000]), &ZEN2).unwrap();
        assert_eq!(o.rip, Some(0x401000));
        assert!(o.data.is_none() && o.data3.is_none() && o.br_target.is_none());
        // Eight registers but no BRNTRGT cap: the eighth is not a branch target.
        let regs = [EN_VAL, 1, 1 << 37, 0, 0, 0, 0, 0x5000];
        let o = decode_op(&op_raw(0x1f, &regs), &ZEN2).unwrap();
        assert_eq!(o.br_target, None);
        let o = decode_op(&op_raw(0x3f, &regs), &ZEN2).unwrap();
        assert_eq!(o.br_target, Some(0x5000));
        // OPDATA4 after BrTarget.
        let regs9 = [EN_VAL, 1, 0, 0, 0, 0, 0, 0x5000, 1];
        let o = decode_op(&op_raw(0x3f | caps::OPDATA4, &regs9), &ZEN2).unwrap();
        assert_eq!(o.data4, Some(1));
        assert_eq!(decode_op(&[0; 11], &ZEN2), Err(IbsError::TooShort(11)));
    }

    #[test]
    fn test_valid_but_zero_physical_address_is_kept() {
        let d3 = (1 << 0) | (1 << 7) | (1 << 17) | (1 << 18);
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 3, d3, 0x7000, 0]), &ZEN2).unwrap();
        assert_eq!(o.dc_phys_addr, Some(0));
        assert_eq!(o.dc_lin_addr, Some(0x7000));
        let d3 = (1 << 0) | (1 << 7);
        let o = decode_op(
            &op_raw(0x3ff, &[EN_VAL, 1, 0, 3, d3, 0x7000, 0x1234]),
            &ZEN2,
        )
        .unwrap();
        assert_eq!((o.dc_lin_addr, o.dc_phys_addr), (None, None));
    }

    #[test]
    fn test_errata_1293_and_1238_apply_only_to_19h_early_models() {
        // SwPf set: data2, L2Miss and open requests are invalid on 19h model 1.
        let d3 = (1 << 0) | (1 << 7) | (1 << 20) | (1 << 21) | (5 << 26);
        let regs = [EN_VAL, 1, 0, 3, d3, 0, 0];
        let o = decode_op(&op_raw(0x3ff, &regs), &ZEN3_EARLY).unwrap();
        assert!(o.data2.is_none());
        let d = o.data3.unwrap();
        assert_eq!((d.l2_miss, d.open_mem_reqs), (None, None));
        let o = decode_op(&op_raw(0x3ff, &regs), &ZEN2).unwrap();
        assert_eq!(o.data2.unwrap().data_src, 3);
        assert_eq!(o.data3.unwrap().l2_miss, Some(true));
        // IcMiss hidden on 19h model 1.
        let ctl = (1 << 48) | (1 << 49) | (1 << 51);
        let f = decode_fetch(&op_raw(0x3ff, &[ctl, 0x400000, 0, 0]), &ZEN3_EARLY).unwrap();
        assert_eq!(f.ctl.ic_miss, None);
        let f = decode_fetch(&op_raw(0x3ff, &[ctl, 0x400000, 0, 0]), &ZEN2).unwrap();
        assert_eq!(f.ctl.ic_miss, Some(true));
        // CacheHitSt is invalid on 19h model 21h.
        let m21 = IbsContext {
            family: 0x19,
            model: 0x21,
            zen4_pmu_cap: false,
        };
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 0x22, 1, 0, 0]), &m21).unwrap();
        assert_eq!(o.data2.unwrap().cache_hit_st, None);
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 0x22, 1, 0, 0]), &ZEN2).unwrap();
        assert_eq!(o.data2.unwrap().cache_hit_st, Some(1));
    }

    #[test]
    fn test_zen5_page_size_and_ldlat_fields() {
        let zen5 = IbsContext {
            family: 0x1a,
            model: 0x02,
            zen4_pmu_cap: true,
        };
        let caps = 0x3ff | caps::ZEN4 | caps::OPLDLAT | caps::OPDTLBPGSIZE;
        let ctl = EN_VAL | (1 << 63) | (3 << 59);
        // Page size 2M (bits 5:4 = 1), L1 TLB miss, phys valid.
        let d3 = 1 | (1 << 2) | (1 << 4) | (1 << 18);
        let o = decode_op(&op_raw(caps, &[ctl, 1, 0, 0, d3, 0, 0x1000]), &zen5).unwrap();
        let d = o.data3.unwrap();
        assert_eq!(d.page_size, Some(PageSize::M2));
        assert!(d.dc_l1_tlb_miss && !d.dc_l1_tlb_hit_2m);
        assert_eq!((o.ctl.ldlat_en, o.ctl.ldlat_thrsh), (Some(true), Some(3)));
        // Without DcPhyAddrValid the TLB bits mean nothing.
        let d3 = 1 | (1 << 2) | (1 << 4);
        let o = decode_op(&op_raw(caps, &[ctl, 1, 0, 0, d3, 0, 0]), &zen5).unwrap();
        let d = o.data3.unwrap();
        assert_eq!(d.page_size, None);
        assert!(!d.dc_l1_tlb_miss);
    }

    #[test]
    fn test_fetch_killed_and_straddle_classes() {
        let ctl = (1 << 48) | (1 << 49);
        let f = decode_fetch(&op_raw(0x3ff, &[ctl, 0x400000, 0, 0]), &ZEN2).unwrap();
        assert!(f.killed());
        let f = decode_fetch(&op_raw(0x3ff, &[ctl | (1 << 50), 0x400000, 0, 0]), &ZEN2).unwrap();
        assert!(!f.killed() && f.completed());
    }

    #[test]
    fn test_op_data_src_like_the_kernel() {
        use mem::*;
        // Load, DC miss, L2 miss, DataSrc 3 (DRAM), lin addr valid, L1 TLB hit.
        let d3 = 1 | (1 << 7) | (1 << 17) | (1 << 20);
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 3, d3, 0, 0]), &ZEN2).unwrap();
        let ds = op_data_src(&o, &ZEN2).unwrap();
        assert_eq!(
            ds,
            OP_LOAD
                | ((LVL_LOC_RAM | LVL_HIT) << LVL_SHIFT)
                | (LVLNUM_RAM << LVLNUM_SHIFT)
                | (SNOOP_NA << SNOOP_SHIFT)
                | (LOCK_NA << LOCK_SHIFT)
                | ((TLB_L1 | TLB_HIT) << TLB_SHIFT)
        );
        // RmtNode makes it remote DRAM, one hop.
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 0x13, d3, 0, 0]), &ZEN2).unwrap();
        let ds = op_data_src(&o, &ZEN2).unwrap();
        assert_eq!((ds >> LVL_SHIFT) & 0x3fff, LVL_REM_RAM1 | LVL_HIT);
        assert_eq!((ds >> REMOTE_SHIFT) & 1, 1);
        assert_eq!((ds >> HOPS_SHIFT) & 7, 1);
        // DC hit: L1. Store, locked.
        let d3 = 2 | (1 << 15);
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 0, d3, 0, 0]), &ZEN2).unwrap();
        let ds = op_data_src(&o, &ZEN2).unwrap();
        assert_eq!(ds & 0x1f, OP_STORE);
        assert_eq!((ds >> LVL_SHIFT) & 0x3fff, LVL_L1 | LVL_HIT);
        assert_eq!((ds >> LOCK_SHIFT) & 3, LOCK_LOCKED);
        assert_eq!((ds >> TLB_SHIFT) & 0x7f, TLB_NA);
        // Neither load nor store: nothing.
        let o = decode_op(&op_raw(0x3ff, &[EN_VAL, 1, 0, 0, 0, 0, 0]), &ZEN2).unwrap();
        assert_eq!(op_data_src(&o, &ZEN2), None);
        // Zen 4 DataSrc 8 (bits 7:6 = 1, 2:0 = 0): CXL.
        let zen4 = IbsContext {
            family: 0x19,
            model: 0x11,
            zen4_pmu_cap: true,
        };
        let d3 = 1 | (1 << 7) | (1 << 20);
        let o = decode_op(&op_raw(0xbff, &[EN_VAL, 1, 0, 0x40, d3, 0, 0]), &zen4).unwrap();
        assert_eq!(o.data2.unwrap().data_src, 8);
        let ds = op_data_src(&o, &zen4).unwrap();
        assert_eq!((ds >> LVLNUM_SHIFT) & 0xf, LVLNUM_CXL);
    }

    #[test]
    fn test_context_from_meta() {
        let mut meta = Meta {
            cpuid: Some("AuthenticAMD,25,17,1".into()),
            arch: Some("x86_64".into()),
            ..Meta::default()
        };
        meta.pmu_caps
            .push(("ibs_op".into(), "zen4_ibs_extensions".into(), "1".into()));
        let c = IbsContext::from_meta(&meta).unwrap();
        assert_eq!((c.family, c.model, c.zen4_pmu_cap), (25, 17, true));
        meta.cpuid = Some("GenuineIntel,6,143,8".into());
        assert!(IbsContext::from_meta(&meta).is_none());
        meta.cpuid = Some("AuthenticAMD,25,17,1".into());
        meta.arch = Some("aarch64".into());
        assert!(IbsContext::from_meta(&meta).is_none());
    }
}
