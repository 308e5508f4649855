//! The perf-compatible view of IBS samples: the lines and fields `perf report -D` (perf 6.1,
//! `amd-sample-raw.c`) prints, with the same text.

use serde::Serialize;

use super::{bit, bits, fetch_page_size, IbsContext, IbsSample};

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

/// The lines perf prints for an IBS op sample (`regs`: ibs_op_ctl, IbsOpRip, ibs_op_data,
/// ibs_op_data2, ibs_op_data3, IbsDCLinAd, IbsDCPhysAd, IbsBrTarget), in perf's order and
/// on perf's conditions.
fn perf_op_lines(regs: &[u64], ctx: &IbsContext) -> Vec<PerfLine> {
    let mut out = Vec::new();
    let Some(&c) = regs.first() else {
        return out;
    };
    out.push(op_ctl_line(c, ctx));
    let data = regs.get(2).copied();
    let data3 = regs.get(4).copied();
    let rip_invalid = data.is_some_and(|d| bit(d, 38));
    if let Some(&rip) = regs.get(1).filter(|_| !rip_invalid) {
        out.push(addr_line("IbsOpRip", rip));
    }
    if let Some(d) = data {
        out.push(op_data_line(d));
    }
    let e1293 = ctx.zen3_errata() && data3.is_some_and(|d3| bit(d3, 16) || bit(d3, 21));
    if let Some(&d2) = regs.get(3).filter(|_| !e1293) {
        out.push(op_data2_line(d2, ctx));
    }
    if let Some(d3) = data3 {
        out.push(op_data3_line(d3, e1293));
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

/// perf's `ibs_op_ctl` line for the register value `c` (L3MissOnly on Zen 4 only).
fn op_ctl_line(c: u64, ctx: &IbsContext) -> PerfLine {
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
    PerfLine {
        label: "ibs_op_ctl",
        value: c,
        fields: f,
        text,
    }
}

/// perf's `ibs_op_data` line for the register value `d` (the branch outcome bits for
/// branch ops only).
fn op_data_line(d: u64) -> PerfLine {
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
    PerfLine {
        label: "ibs_op_data",
        value: d,
        fields: f,
        text,
    }
}

/// perf's `ibs_op_data2` line for the register value `d2`: the data source (named as the
/// CPU family names them) and the cache hit state where perf shows it.
fn op_data2_line(d2: u64, ctx: &IbsContext) -> PerfLine {
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
    PerfLine {
        label: "ibs_op_data2",
        value: d2,
        fields: f,
        text,
    }
}

/// perf's `ibs_op_data3` line for the register value `d3`; with erratum 1293 (`e1293`)
/// L2Miss and OpDcMissOpenMemReqs are left out, as perf does.
fn op_data3_line(d3: u64, e1293: bool) -> PerfLine {
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
    PerfLine {
        label: "ibs_op_data3",
        value: d3,
        fields: f,
        text,
    }
}
