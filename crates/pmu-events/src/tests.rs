//! Checks of the embedded tables: integrity, perf's CPUID matching, and encodings that
//! follow jevents.py's rules from the JSON (values below were read from the kernel's JSON).

use super::*;

fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn blob_is_what_the_generator_wrote() {
    // The header frame, then every model's frame in order, as the generator hashed them.
    let t = Tables::get().unwrap();
    let mut text = blob::decompress_frame(
        &generated::TABLES_ZST[..generated::HEADER_ZST_LEN],
        generated::HEADER_LEN,
    )
    .unwrap();
    let mut end = generated::HEADER_ZST_LEN;
    for chunk in &t.chunks {
        assert_eq!(chunk.range.start, end, "{}", chunk.model);
        text.push_str(
            &blob::decompress_frame(&generated::TABLES_ZST[chunk.range.clone()], chunk.len)
                .unwrap(),
        );
        end = chunk.range.end;
    }
    assert_eq!(end, generated::TABLES_ZST.len());
    assert_eq!(text.len(), generated::TABLES_LEN);
    assert_eq!(fnv1a64(text.as_bytes()), generated::TABLES_FNV1A64);
}

/// Metric flags are three digits, which must not be read as a pool id: perf's
/// MetricConstraint NO_GROUP_EVENTS reaches the metric (Sapphire Rapids' `tma_info_*`
/// metrics have it in the 6.12 JSON).
#[test]
fn metric_flags_are_not_pool_ids() {
    let spr = table("x86", "GenuineIntel-6-8F-8");
    assert!(
        spr.metrics.iter().any(|m| m.event_grouping == 1),
        "no NO_GROUP_EVENTS metric"
    );
    assert!(spr.metrics.iter().any(|m| m.event_grouping == 0));
}

#[test]
fn every_arch_and_mapfile_row_has_a_table() {
    let t = Tables::get().unwrap();
    for arch in ["x86", "arm64", "powerpc", "s390", "riscv"] {
        assert!(t.rows().iter().any(|r| r.arch == arch), "{arch}");
    }
    for row in t.rows() {
        let table = t.model(row.model).unwrap();
        assert!(
            !table.events.is_empty() || !table.metrics.is_empty(),
            "{}",
            row.model
        );
    }
    assert!(t.models().count() >= 80);
}

fn table(arch: &str, cpuid: &str) -> CpuTable {
    Tables::get()
        .unwrap()
        .for_arch_cpuid(arch, cpuid)
        .unwrap_or_else(|| panic!("no table for {cpuid}"))
}

fn terms(t: &CpuTable, name: &str) -> (String, String) {
    let e = t.event(name).unwrap_or_else(|| panic!("{name} missing"));
    (e.pmu.to_string(), e.terms.to_string())
}

#[test]
fn intel_models_pick_perfs_rows_and_encodings() {
    let skx = table("x86", "GenuineIntel-6-55-4");
    assert_eq!(skx.row.model, "x86/skylakex");
    assert_eq!(
        skx.row.csv(),
        "GenuineIntel-6-55-[01234],v1.35,skylakex,core"
    );
    assert_eq!(
        table("x86", "GenuineIntel-6-55-7").row.model,
        "x86/cascadelakex"
    );
    let e = skx.event("MEM_LOAD_RETIRED.L3_MISS").unwrap();
    assert_eq!(
        (e.pmu, e.terms.as_ref(), e.topic, e.pebs),
        (
            "default_core",
            "event=0xd1,period=100007,umask=0x20",
            "cache",
            1
        )
    );
    assert!(e
        .description
        .ends_with("Supports address when precise (Precise event)"));
    // MSRIndex 0x1a6,0x1a7 → offcore_rsp with MSRValue; EventCode "0xB7, 0xBB" → first.
    assert_eq!(
        terms(
            &skx,
            "offcore_response.all_data_rd.l3_hit.hit_other_core_no_fwd"
        )
        .1,
        "event=0xb7,period=100003,umask=1,offcore_rsp=0x4003C0491"
    );
    let cas = skx.event("unc_m_cas_count.rd").unwrap();
    assert_eq!(
        (cas.pmu, cas.terms.as_ref()),
        ("uncore_imc", "event=4,umask=3")
    );
    assert!(cas.per_pkg);
    // perf's fixed encodings for a few core events.
    assert_eq!(
        terms(&skx, "inst_retired.any").1,
        "event=0xc0,period=2000003"
    );

    let icx = table("x86", "GenuineIntel-6-6A-0");
    assert_eq!(icx.row.model, "x86/icelakex");
    assert_eq!(
        terms(&icx, "mem_trans_retired.load_latency_gt_128").1,
        "event=0xcd,period=1009,umask=1,ldlat=0x80"
    );
    let spr = table("x86", "GenuineIntel-6-8F-8");
    assert_eq!(spr.row.model, "x86/sapphirerapids");
    assert_eq!(
        terms(&spr, "frontend_retired.dsb_miss").1,
        "event=0xc6,period=100007,umask=1,frontend=0x11"
    );
    assert!(spr.metric("tma_frontend_bound").is_some());
}

#[test]
fn hybrid_alder_lake_has_both_core_pmus() {
    let adl = table("x86", "GenuineIntel-6-97-2");
    assert_eq!(adl.row.model, "x86/alderlake");
    let pmus: Vec<&str> = adl
        .events_named("br_inst_retired.all_branches")
        .map(|e| e.pmu)
        .collect();
    assert_eq!(pmus, ["cpu_atom", "cpu_core"]);
    assert_eq!(
        terms(&adl, "mem_load_retired.l3_miss"),
        (
            "cpu_core".to_string(),
            "event=0xd1,period=50021,umask=0x20".to_string()
        )
    );
}

#[test]
fn amd_models_by_family_and_model() {
    let zen2 = table("x86", "AuthenticAMD-23-31-0");
    assert_eq!(zen2.row.model, "x86/amdzen2");
    assert_eq!(terms(&zen2, "ex_ret_instr").1, "event=0xc0");
    assert_eq!(table("x86", "AuthenticAMD-25-1-1").row.model, "x86/amdzen3");
    let zen4 = table("x86", "AuthenticAMD-25-11-1");
    assert_eq!(zen4.row.model, "x86/amdzen4");
    // EventCode > 0xff stays whole; the PMU's format splits it.
    assert_eq!(
        terms(&zen4, "de_no_dispatch_per_slot.backend_stalls").1,
        "event=0x1a0,umask=0x1e"
    );
    assert_eq!(
        terms(&zen4, "l3_lookup_state.all_coherent_accesses_to_l3"),
        ("amd_l3".to_string(), "event=4,umask=0xff".to_string())
    );
    assert_eq!(table("x86", "AuthenticAMD-26-2-1").row.model, "x86/amdzen5");
}

#[test]
fn arm64_arch_std_events_are_resolved() {
    let n1 = table("arm64", "0x00000000413fd0c1");
    assert_eq!(n1.row.model, "arm64/arm/neoverse-n1");
    let e = n1.event("L1D_CACHE_REFILL").unwrap();
    assert_eq!((e.pmu, e.terms.as_ref()), ("default_core", "event=3"));
    assert_eq!(e.description, "Level 1 data cache refill");
    // for_cpuid falls back to other arches' rows.
    let (row, ev) = Tables::get()
        .unwrap()
        .lookup("0x00000000413fd0c1", "l1d_cache_refill")
        .unwrap();
    assert_eq!((row.arch, ev.terms.as_ref()), ("arm64", "event=3"));
}

#[test]
fn unknown_cpus_have_no_table() {
    let t = Tables::get().unwrap();
    assert!(t.for_cpuid("GenuineIntel-6-FFF-1").is_none());
    assert!(t.for_cpuid("").is_none());
    assert!(t.for_cpuid("no such cpu").is_none());
}
