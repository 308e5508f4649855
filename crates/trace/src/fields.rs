//! What `args[0]->…` can reach: the Solaris IBS provider's structures (`ibs_exec_data`,
//! `ibs_fetch_data`) over the raw IBS registers, short aliases, and the PEBS/perf fields of
//! ordinary PMU samples.
//!
//! IBS fields read the raw register bits as the provider did (no erratum masking: the
//! provider exposed the MSRs). Bit positions follow the AMD PPRs for families 17h+ (where
//! they differ from family 10h, the meaning wins: `IbsDcWcMemAcc` is bit 13).

use crate::error::hint;

/// Which structure `args[0]` points at in a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgsKind {
    /// `ibs_exec_data` (IBS op samples).
    Op,
    /// `ibs_fetch_data` (IBS fetch samples).
    Fetch,
    /// A PMU sample (pmc:::, profile:::): perf's sample fields and PEBS memory fields.
    Pmc,
    /// A tracepoint hit: the fields of its format (`args->prev_comm`).
    Tracepoint,
}

impl ArgsKind {
    /// The structure's name, for messages.
    pub fn struct_name(self) -> &'static str {
        match self {
            ArgsKind::Op => "ibs_exec_data",
            ArgsKind::Fetch => "ibs_fetch_data",
            ArgsKind::Pmc => "pmc_sample",
            ArgsKind::Tracepoint => "tracepoint record",
        }
    }
}

/// Where a field's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Bits `lo..lo+width` of raw IBS register `reg` (0 when the payload lacks it).
    Reg {
        /// Register index after the caps word.
        reg: u8,
        /// First bit.
        lo: u8,
        /// Width in bits (64 = whole register).
        width: u8,
    },
    /// The sample's CPU.
    Cpu,
    /// PERF_SAMPLE_ADDR (0 if absent).
    Addr,
    /// PERF_SAMPLE_WEIGHT (0 if absent).
    Weight,
    /// PERF_SAMPLE_PHYS_ADDR (0 if absent).
    PhysAddr,
    /// Bits of PERF_SAMPLE_DATA_SRC (0 if absent).
    DataSrc {
        /// First bit.
        lo: u8,
        /// Width.
        width: u8,
    },
    /// PERF_SAMPLE_WEIGHT_STRUCT var2 (instruction latency / retire latency).
    Weight2,
    /// An ARM SPE record field of an SPE sample (0 for other samples).
    Spe(SpeValue),
}

/// The ARM SPE record fields a PMU sample exposes beyond perf's (docs/spe.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeValue {
    /// Issue latency (cycles).
    IssueLatency,
    /// Translation latency (cycles).
    TranslationLatency,
    /// The whole events packet.
    Events,
    /// One bit of the events packet.
    EventBit(u8),
    /// Operation class: 0 other, 1 load/store/atomic, 2 branch.
    OpClass,
}

/// SPE names: `args[0]->NAME` of an SPE sample (`pmc:::llc-miss`, `pmc:::memory`, ...).
const SPE_FIELDS: &[(&str, SpeValue)] = &[
    ("issue_lat", SpeValue::IssueLatency),
    ("translation_lat", SpeValue::TranslationLatency),
    ("spe_events", SpeValue::Events),
    ("l1d_access", SpeValue::EventBit(2)),
    ("l1d_miss", SpeValue::EventBit(3)),
    ("tlb_access", SpeValue::EventBit(4)),
    ("tlb_miss", SpeValue::EventBit(5)),
    ("br_mispred", SpeValue::EventBit(7)),
    ("llc_access", SpeValue::EventBit(8)),
    ("llc_miss", SpeValue::EventBit(9)),
    ("remote_access", SpeValue::EventBit(10)),
    ("op_class", SpeValue::OpClass),
];

/// A resolved field: its source and whether it is an address (printed in hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Where the value comes from.
    pub source: Source,
    /// Whether the value is an address.
    pub is_addr: bool,
}

type Bits = &'static [(&'static str, u8, u8)];

const FETCH_CTL: Bits = &[
    ("IbsFetchMaxCnt", 0, 16),
    ("IbsFetchCnt", 16, 16),
    ("IbsFetchLat", 32, 16),
    ("IbsFetchEn", 48, 1),
    ("IbsFetchVal", 49, 1),
    ("IbsFetchComp", 50, 1),
    ("IbsIcMiss", 51, 1),
    ("IbsPhyAddrValid", 52, 1),
    ("IbsL1TlbPgSz", 53, 2),
    ("IbsL1TlbMiss", 55, 1),
    ("IbsL2TlbMiss", 56, 1),
    ("IbsRandEn", 57, 1),
    ("IbsFetchL2Miss", 58, 1),
    ("IbsL3MissOnly", 59, 1),
    ("IbsFetchOcMiss", 60, 1),
    ("IbsFetchL3Miss", 61, 1),
];

const OP_CTL: Bits = &[
    ("IbsOpMaxCnt", 0, 16),
    ("IbsL3MissOnly", 16, 1),
    ("IbsOpEn", 17, 1),
    ("IbsOpVal", 18, 1),
    ("IbsOpCntCtl", 19, 1),
    ("IbsOpMaxCntExt", 20, 7),
    ("IbsOpCurCnt", 32, 27),
    ("IbsLdLatThrsh", 59, 4),
    ("IbsLdLatEn", 63, 1),
];

const OP_DATA: Bits = &[
    ("IbsCompToRetCtr", 0, 16),
    ("IbsTagToRetCtr", 16, 16),
    ("IbsOpBrnResync", 32, 1),
    ("IbsOpMispReturn", 33, 1),
    ("IbsOpReturn", 34, 1),
    ("IbsOpBrnTaken", 35, 1),
    ("IbsOpBrnMisp", 36, 1),
    ("IbsOpBrnRet", 37, 1),
    ("IbsRipInvalid", 38, 1),
    ("IbsOpBrnFuse", 39, 1),
    ("IbsOpMicrocode", 40, 1),
];

const OP_DATA2: Bits = &[
    ("NbIbsReqSrc", 0, 3),
    ("NbIbsReqDstProc", 4, 1),
    ("NbIbsReqCacheHitSt", 5, 1),
    ("NbIbsReqSrcHi", 6, 2),
    ("IbsStrmSt", 8, 1),
    ("IbsRmtSocket", 9, 1),
];

const OP_DATA3: Bits = &[
    ("IbsLdOp", 0, 1),
    ("IbsStOp", 1, 1),
    ("IbsDcL1tlbMiss", 2, 1),
    ("IbsDcL2tlbMiss", 3, 1),
    ("IbsDcL1tlbHit2M", 4, 1),
    ("IbsDcL1tlbHit1G", 5, 1),
    ("IbsDcL2tlbHit2M", 6, 1),
    ("IbsDcMiss", 7, 1),
    ("IbsDcMisAcc", 8, 1),
    ("IbsDcLdBnkCon", 9, 1),
    ("IbsDcStBnkCon", 10, 1),
    ("IbsDcStToLdFwd", 11, 1),
    ("IbsDcStToLdCan", 12, 1),
    ("IbsDcWcMemAcc", 13, 1),
    ("IbsDcUcMemAcc", 14, 1),
    ("IbsDcLockedOp", 15, 1),
    ("IbsDcMabHit", 16, 1),
    ("IbsDcLinAddrValid", 17, 1),
    ("IbsDcPhyAddrValid", 18, 1),
    ("IbsDcL2tlbHit1G", 19, 1),
    ("IbsL2Miss", 20, 1),
    ("IbsSwPf", 21, 1),
    ("IbsOpMemWidth", 22, 4),
    ("IbsOpDcMissOpenMemReqs", 26, 6),
    ("IbsDcMissLat", 32, 16),
    ("IbsTlbRefillLat", 48, 16),
];

/// Union registers: (name, register index, bit fields).
const OP_UNIONS: &[(&str, u8, Bits)] = &[
    ("IbsOpCtl", 0, OP_CTL),
    ("IbsOpData", 2, OP_DATA),
    ("IbsOpData2", 3, OP_DATA2),
    ("IbsOpData3", 4, OP_DATA3),
];
const FETCH_UNIONS: &[(&str, u8, Bits)] = &[("IbsFetchCtl", 0, FETCH_CTL)];

/// Plain (non-union) address members: (name, register index).
const OP_PLAIN: &[(&str, u8)] = &[
    ("IbsOpRip", 1),
    ("IbsDcLinAd", 5),
    ("IbsDcPhysAd", 6),
    ("IbsBrTarget", 7),
];
const FETCH_PLAIN: &[(&str, u8)] = &[("IbsFetchLinAd", 1), ("IbsFetchPhysAd", 2)];

/// Short aliases: (alias, union or plain member, bit field or "").
const OP_ALIASES: &[(&str, &str, &str)] = &[
    ("rip", "IbsOpRip", ""),
    ("dc_lin_addr", "IbsDcLinAd", ""),
    ("dc_phys_addr", "IbsDcPhysAd", ""),
    ("addr", "IbsDcLinAd", ""),
    ("br_target", "IbsBrTarget", ""),
    ("ld_op", "IbsOpData3", "IbsLdOp"),
    ("st_op", "IbsOpData3", "IbsStOp"),
    ("dc_miss", "IbsOpData3", "IbsDcMiss"),
    ("dc_mis_acc", "IbsOpData3", "IbsDcMisAcc"),
    ("dc_l1_tlb_miss", "IbsOpData3", "IbsDcL1tlbMiss"),
    ("dc_l2_tlb_miss", "IbsOpData3", "IbsDcL2tlbMiss"),
    ("dc_locked_op", "IbsOpData3", "IbsDcLockedOp"),
    ("dc_wc_mem_acc", "IbsOpData3", "IbsDcWcMemAcc"),
    ("dc_uc_mem_acc", "IbsOpData3", "IbsDcUcMemAcc"),
    ("dc_lin_addr_valid", "IbsOpData3", "IbsDcLinAddrValid"),
    ("dc_phy_addr_valid", "IbsOpData3", "IbsDcPhyAddrValid"),
    ("l2_miss", "IbsOpData3", "IbsL2Miss"),
    ("sw_pf", "IbsOpData3", "IbsSwPf"),
    ("dc_miss_lat", "IbsOpData3", "IbsDcMissLat"),
    ("latency", "IbsOpData3", "IbsDcMissLat"),
    ("tlb_refill_lat", "IbsOpData3", "IbsTlbRefillLat"),
    ("comp_to_ret", "IbsOpData", "IbsCompToRetCtr"),
    ("tag_to_ret", "IbsOpData", "IbsTagToRetCtr"),
    ("brn_ret", "IbsOpData", "IbsOpBrnRet"),
    ("brn_misp", "IbsOpData", "IbsOpBrnMisp"),
    ("brn_taken", "IbsOpData", "IbsOpBrnTaken"),
    ("ret", "IbsOpData", "IbsOpReturn"),
    ("rip_invalid", "IbsOpData", "IbsRipInvalid"),
    ("data_src", "IbsOpData2", "NbIbsReqSrc"),
    ("rmt_node", "IbsOpData2", "NbIbsReqDstProc"),
    ("cache_hit_st", "IbsOpData2", "NbIbsReqCacheHitSt"),
];
const FETCH_ALIASES: &[(&str, &str, &str)] = &[
    ("lin_addr", "IbsFetchLinAd", ""),
    ("addr", "IbsFetchLinAd", ""),
    ("phys_addr", "IbsFetchPhysAd", ""),
    ("fetch_lat", "IbsFetchCtl", "IbsFetchLat"),
    ("latency", "IbsFetchCtl", "IbsFetchLat"),
    ("comp", "IbsFetchCtl", "IbsFetchComp"),
    ("ic_miss", "IbsFetchCtl", "IbsIcMiss"),
    ("phy_addr_valid", "IbsFetchCtl", "IbsPhyAddrValid"),
    ("l1_tlb_miss", "IbsFetchCtl", "IbsL1TlbMiss"),
    ("l2_tlb_miss", "IbsFetchCtl", "IbsL2TlbMiss"),
    ("l1_tlb_pg_sz", "IbsFetchCtl", "IbsL1TlbPgSz"),
    ("l2_miss", "IbsFetchCtl", "IbsFetchL2Miss"),
    ("oc_miss", "IbsFetchCtl", "IbsFetchOcMiss"),
    ("l3_miss", "IbsFetchCtl", "IbsFetchL3Miss"),
];

/// perf_mem_data_src sub-fields: (name, lo, width).
const DATA_SRC: Bits = &[
    ("op", 0, 5),
    ("lvl", 5, 14),
    ("snoop", 19, 5),
    ("lock", 24, 2),
    ("dtlb", 26, 7),
    ("lvl_num", 33, 4),
    ("remote", 37, 1),
    ("snoopx", 38, 2),
    ("blk", 40, 3),
    ("hops", 43, 3),
];

/// A path element that failed, with its index in the path and the message.
pub type FieldError = (usize, String);

/// Resolves `args[0]->path` for a structure kind.
pub fn resolve(kind: ArgsKind, path: &[&str]) -> Result<Field, FieldError> {
    let Some(&first) = path.first() else {
        return Err((0, "`args[0]` must be followed by `->FIELD`".into()));
    };
    match kind {
        ArgsKind::Pmc => resolve_pmc(path),
        ArgsKind::Tracepoint => Err((
            0,
            "a tracepoint's fields come from its format (compile with the formats)".into(),
        )),
        ArgsKind::Op | ArgsKind::Fetch => {
            let (unions, plain, aliases) = if kind == ArgsKind::Op {
                (OP_UNIONS, OP_PLAIN, OP_ALIASES)
            } else {
                (FETCH_UNIONS, FETCH_PLAIN, FETCH_ALIASES)
            };
            if first == "cpu_id" {
                return leaf(
                    path,
                    1,
                    Field {
                        source: Source::Cpu,
                        is_addr: false,
                    },
                );
            }
            if let Some(&(_, reg)) = plain.iter().find(|(n, _)| *n == first) {
                return leaf(path, 1, whole(reg, true));
            }
            if let Some(&(_, reg, bits)) = unions.iter().find(|(n, _, _)| *n == first) {
                return match path.get(1) {
                    None => Err((
                        0,
                        format!("`{first}` is a union: use `{first}.reg` or `{first}.bit.FIELD`"),
                    )),
                    Some(&"reg") => leaf(path, 2, whole(reg, false)),
                    Some(&"bit") => match path.get(2) {
                        None => Err((1, format!("`{first}.bit` needs a field name"))),
                        Some(f) => match bits.iter().find(|(n, _, _)| n == f) {
                            Some(&(_, lo, width)) => leaf(
                                path,
                                3,
                                Field {
                                    source: Source::Reg { reg, lo, width },
                                    is_addr: false,
                                },
                            ),
                            None => Err((
                                2,
                                format!(
                                    "`{first}` has no bit field `{f}`{}",
                                    hint(f, bits.iter().map(|b| b.0))
                                ),
                            )),
                        },
                    },
                    Some(other) => Err((
                        1,
                        format!("expected `reg` or `bit` after `{first}.`, found `{other}`"),
                    )),
                };
            }
            if let Some(&(_, member, bit)) = aliases.iter().find(|(n, _, _)| *n == first) {
                let f = if bit.is_empty() {
                    resolve(kind, &[member])
                } else {
                    resolve(kind, &[member, "bit", bit])
                }?;
                return leaf(path, 1, f);
            }
            let mut names: Vec<&str> = vec!["cpu_id"];
            names.extend(plain.iter().map(|p| p.0));
            names.extend(unions.iter().map(|u| u.0));
            names.extend(aliases.iter().map(|a| a.0));
            // A bit field written without its union is a common slip: name the union.
            let owner = unions
                .iter()
                .find(|(_, _, bits)| bits.iter().any(|b| b.0 == first));
            let extra = match owner {
                Some((u, _, _)) => format!(" (it is a bit field: `{u}.bit.{first}`)"),
                None => hint(first, names.iter().copied()),
            };
            Err((
                0,
                format!("`{}` has no member `{first}`{extra}", kind.struct_name()),
            ))
        }
    }
}

fn whole(reg: u8, is_addr: bool) -> Field {
    Field {
        source: Source::Reg {
            reg,
            lo: 0,
            width: 64,
        },
        is_addr,
    }
}

fn leaf(path: &[&str], used: usize, f: Field) -> Result<Field, FieldError> {
    if path.len() > used {
        return Err((used, format!("`{}` has no members", path[..used].join("."))));
    }
    Ok(f)
}

fn resolve_pmc(path: &[&str]) -> Result<Field, FieldError> {
    let first = path[0];
    let f = |source, is_addr| Field { source, is_addr };
    match first {
        "cpu_id" => leaf(path, 1, f(Source::Cpu, false)),
        "addr" => leaf(path, 1, f(Source::Addr, true)),
        "phys_addr" => leaf(path, 1, f(Source::PhysAddr, true)),
        "latency" | "weight" => leaf(path, 1, f(Source::Weight, false)),
        "ins_lat" | "weight2" => leaf(path, 1, f(Source::Weight2, false)),
        "data_src" => match path.get(1) {
            None => leaf(path, 1, f(Source::DataSrc { lo: 0, width: 64 }, false)),
            Some(sub) => match DATA_SRC.iter().find(|(n, _, _)| n == sub) {
                Some(&(_, lo, width)) => leaf(path, 2, f(Source::DataSrc { lo, width }, false)),
                None => Err((
                    1,
                    format!(
                        "`data_src` has no field `{sub}`{}",
                        hint(sub, DATA_SRC.iter().map(|d| d.0))
                    ),
                )),
            },
        },
        _ if SPE_FIELDS.iter().any(|(n, _)| *n == first) => {
            let value = SPE_FIELDS.iter().find(|(n, _)| *n == first).map(|s| s.1);
            let value = value.unwrap_or(SpeValue::Events);
            leaf(path, 1, f(Source::Spe(value), false))
        }
        _ => {
            let names = [
                "cpu_id",
                "addr",
                "phys_addr",
                "latency",
                "weight",
                "ins_lat",
                "data_src",
                "issue_lat",
                "translation_lat",
                "llc_miss",
            ];
            let ibs_names = OP_UNIONS.iter().chain(FETCH_UNIONS).any(|u| u.0 == first)
                || OP_PLAIN.iter().chain(FETCH_PLAIN).any(|p| p.0 == first);
            let extra = if ibs_names {
                " (IBS structure members need an `ibs:::op`/`ibs-exec-N` or `ibs:::fetch`/`ibs-fetch-N` probe)".to_string()
            } else {
                hint(first, names)
            };
            Err((0, format!("a PMU sample has no field `{first}`{extra}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_paths() {
        let f = resolve(ArgsKind::Op, &["IbsOpData3", "bit", "IbsDcMiss"]).unwrap();
        assert_eq!(
            f.source,
            Source::Reg {
                reg: 4,
                lo: 7,
                width: 1
            }
        );
        let f = resolve(ArgsKind::Op, &["IbsDcLinAd"]).unwrap();
        assert!(f.is_addr);
        let f = resolve(ArgsKind::Fetch, &["IbsFetchCtl", "bit", "IbsL2TlbMiss"]).unwrap();
        assert_eq!(
            f.source,
            Source::Reg {
                reg: 0,
                lo: 56,
                width: 1
            }
        );
        assert_eq!(
            resolve(ArgsKind::Op, &["dc_miss"]).unwrap(),
            resolve(ArgsKind::Op, &["IbsOpData3", "bit", "IbsDcMiss"]).unwrap()
        );
        let f = resolve(ArgsKind::Op, &["IbsOpData3", "reg"]).unwrap();
        assert_eq!(
            f.source,
            Source::Reg {
                reg: 4,
                lo: 0,
                width: 64
            }
        );
    }

    #[test]
    fn unknown_fields_suggest() {
        let e = resolve(ArgsKind::Op, &["IbsOpData3", "bit", "IbsDcMis"]).unwrap_err();
        assert!(e.1.contains("`IbsDcMiss`"), "{}", e.1);
        let e = resolve(ArgsKind::Op, &["IbsDcMiss"]).unwrap_err();
        assert!(e.1.contains("IbsOpData3.bit.IbsDcMiss"), "{}", e.1);
        let e = resolve(ArgsKind::Pmc, &["data_src", "lvll"]).unwrap_err();
        assert!(e.1.contains("`lvl`"), "{}", e.1);
        let e = resolve(ArgsKind::Pmc, &["IbsDcLinAd"]).unwrap_err();
        assert!(e.1.contains("ibs:::op"), "{}", e.1);
    }
}
