//! Tests of the IBS decoding: the typed view, perf's lines and the data source.

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
    use crate::abi::mem::*;
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
