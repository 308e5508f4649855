use super::*;

fn c(value: u64, enabled_ns: u64, running_ns: u64) -> Count {
    Count {
        value,
        enabled_ns,
        running_ns,
    }
}

/// Builds counts for any plan from "true" per-cycle event rates: each group ran for
/// `fraction[g]` of a 1 s run at 3 GHz (`jitter` perturbs each group's rates a little, as
/// different time windows do).
fn counts_from_rates(
    plan: &Plan,
    rates: &[(Ev, f64)],
    fraction: &[f64],
    jitter: f64,
) -> Vec<Vec<Count>> {
    let enabled = 1_000_000_000u64;
    plan.groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let f = fraction[gi.min(fraction.len() - 1)];
            let running = (enabled as f64 * f) as u64;
            let cycles = 3.0e9 * f;
            let wobble = 1.0 + jitter * if gi % 2 == 0 { 1.0 } else { -1.0 };
            g.iter()
                .map(|e| {
                    let rate = if e.key == Ev::Cycles || e.key == Ev::Slots {
                        1.0
                    } else {
                        rates
                            .iter()
                            .find(|(k, _)| *k == e.key)
                            .map_or(0.0, |(_, r)| *r)
                            * wobble
                    };
                    c((rate * cycles) as u64, enabled, running)
                })
                .collect()
        })
        .collect()
}

/// Zen 5 pointer chase: almost every slot waits on the backend, mostly on loads.
const ZEN5_POINTER_CHASE: &[(Ev, f64)] = &[
    (Ev::AmdFeNoOps, 0.32),
    (Ev::AmdFeNoOpsCmask, 0.024),
    (Ev::AmdBackendStalls, 6.88),
    (Ev::AmdSmtContention, 0.16),
    (Ev::AmdRetOps, 0.40),
    (Ev::AmdOpsDispatched, 0.64),
    (Ev::AmdBrMisp, 0.001),
    (Ev::AmdRestarts, 0.0002),
    (Ev::AmdNotComplete, 0.90),
    (Ev::AmdLoadNotComplete, 0.837),
    (Ev::AmdUcodeOps, 0.004),
];

#[test]
fn test_model_for_vendors_and_generations() {
    assert_eq!(
        model_for("AuthenticAMD", 0x19, 0x11, false, false),
        Ok(Model::Zen4)
    );
    assert_eq!(
        model_for("AuthenticAMD", 0x19, 0x61, false, false),
        Ok(Model::Zen4)
    );
    assert_eq!(
        model_for("AuthenticAMD", 0x1A, 0x02, false, false),
        Ok(Model::Zen5)
    );
    // Zen 3 (family 0x19 model 0x01) has no pipeline-utilization events: refuse.
    assert!(matches!(
        model_for("AuthenticAMD", 0x19, 0x01, false, false),
        Err(TopdownError::Unsupported(_))
    ));
    assert_eq!(
        model_for("GenuineIntel", 6, 0x55, false, false),
        Ok(Model::IntelSkylake)
    );
    assert_eq!(
        model_for("GenuineIntel", 6, 0x6A, true, false),
        Ok(Model::IntelPerfMetrics {
            width: 5,
            level2: false
        })
    );
    assert_eq!(
        model_for("GenuineIntel", 6, 0x8F, true, true),
        Ok(Model::IntelPerfMetrics {
            width: 6,
            level2: true
        })
    );
    // Haswell, an unknown Intel with PERF_METRICS, and other vendors: no guessing.
    assert!(model_for("GenuineIntel", 6, 0x3C, false, false).is_err());
    assert!(model_for("GenuineIntel", 6, 0xFE, true, false).is_err());
    let err = model_for("CentaurHauls", 7, 0x1B, false, false).unwrap_err();
    assert!(err.to_string().contains("not supported"), "{err}");
}

#[test]
fn test_plan_zen5_level1_one_group_with_six_counters() {
    let p = plan(Model::Zen5, 1, 6).unwrap();
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].len(), 6);
    assert_eq!(p.groups[0][0].key, Ev::Cycles);
    assert_eq!(p.groups[0][0].config, 0x76);
    assert!(p.fits_at_once());
    let configs: Vec<u64> = p.groups[0].iter().map(|e| e.config).collect();
    for want in [0x1000001A0, 0x100001EA0, 0x1000060A0, 0x7AA, 0xC1] {
        assert!(configs.contains(&want), "{want:#x} in {configs:x?}");
    }
}

#[test]
fn test_plan_respects_counters_and_keeps_formulas_whole() {
    for (model, level, counters) in [
        (Model::Zen5, 1, 5),
        (Model::Zen5, 2, 5),
        (Model::Zen4, 2, 4),
        (Model::Zen5, 2, 3),
        (Model::IntelSkylake, 2, 4),
    ] {
        let p = plan(model, level, counters).unwrap();
        for g in &p.groups {
            assert_eq!(
                g[0].key,
                Ev::Cycles,
                "{model:?}: every group has its own cycles"
            );
            assert!(
                g.iter().filter(|e| !e.fixed).count() <= counters,
                "{model:?} {g:?}"
            );
        }
        for (f, gs) in &p.placement {
            for e in f.events(level >= 2) {
                assert!(
                    gs.iter()
                        .any(|&gi| p.groups[gi].iter().any(|d| d.key == *e)),
                    "{model:?} {f:?}: {e:?} placed"
                );
            }
            // Only the SKL memory-bound formula (5 events) cannot fit 4 counters.
            if gs.len() > 1 {
                assert_eq!((*f, counters), (Formula::SklBeSplit, 4));
            }
        }
    }
    // Zen 5 level 1 on 5 counters: two groups, so they multiplex.
    let p = plan(Model::Zen5, 1, 5).unwrap();
    assert_eq!(p.groups.len(), 2);
    assert!(!p.fits_at_once());
    // Zen 4 uses its own restart event and a cmask of 6.
    let p = plan(Model::Zen4, 2, 5).unwrap();
    let all: Vec<u64> = p.groups.iter().flatten().map(|e| e.config).collect();
    assert!(
        all.contains(&0x96) && all.contains(&0x1060001A0),
        "{all:x?}"
    );
    let p = plan(Model::Zen5, 2, 5).unwrap();
    let all: Vec<u64> = p.groups.iter().flatten().map(|e| e.config).collect();
    assert!(
        all.contains(&0x19F) && all.contains(&0x1080001A0),
        "{all:x?}"
    );
    assert!(matches!(
        plan(Model::Zen5, 1, 1),
        Err(TopdownError::TooFewCounters { .. })
    ));
    assert!(matches!(
        plan(
            Model::IntelPerfMetrics {
                width: 5,
                level2: false
            },
            2,
            8
        ),
        Err(TopdownError::Level { .. })
    ));
    assert!(plan(Model::Zen5, 3, 6).is_err());
}

#[test]
fn test_zen5_branchy_level1_bad_speculation() {
    // A Zen 5 run of workloads/branchy as one 6-counter group (counts as `perf stat -x,`
    // would print them): 1.2e9 cycles, 9.6e9 slots.
    let p = plan(Model::Zen5, 1, 6).unwrap();
    let order: Vec<Ev> = p.groups[0].iter().map(|e| e.key).collect();
    let value = |k: Ev| match k {
        Ev::Cycles => 1_200_000_000,
        Ev::AmdFeNoOps => 1_344_000_000,
        Ev::AmdBackendStalls => 1_823_000_000,
        Ev::AmdSmtContention => 96_000_000,
        Ev::AmdOpsDispatched => 6_398_000_000,
        Ev::AmdRetOps => 2_980_000_000,
        _ => unreachable!(),
    };
    let counts = vec![order
        .iter()
        .map(|&k| c(value(k), 400_000_000, 400_000_000))
        .collect()];
    let td = compute(&p, &counts);
    let s = 9.6e9;
    assert!((td.level1.frontend_bound - 1_344e6 / s).abs() < 1e-9);
    assert!((td.level1.bad_speculation - (6_398e6 - 2_980e6) / s).abs() < 1e-9);
    assert!((td.level1.retiring - 2_980e6 / s).abs() < 1e-9);
    assert!(td.level1.bad_speculation >= 0.15, "{:?}", td.level1);
    assert!(
        (td.level1.sum() - 1.0).abs() <= 0.01,
        "sum {}",
        td.level1.sum()
    );
    assert_eq!(td.bottleneck.as_deref(), Some("bad_speculation"));
    let bs = find(&td.tree, "bad_speculation").unwrap();
    assert!(bs.flagged && bs.critical && !bs.unreliable);
    assert_eq!(bs.reliability, 1.0);
    assert!(bs
        .hint
        .as_deref()
        .unwrap()
        .contains("culprit record -e ex_ret_brn_misp"));
    assert!(td.thresholds.starts_with("Intel TMA thresholds"));
    // Not flagged: no hint; smt_contention is never flagged.
    let ret = find(&td.tree, "retiring").unwrap();
    assert!(!ret.flagged && ret.hint.is_none());
    assert_eq!(find(&td.tree, "smt_contention").unwrap().threshold, None);
}

#[test]
fn test_zen5_pointer_chase_level2_memory_and_multiplexing() {
    // Multiplexed: 4 groups on 5 counters, each ran a quarter of the time.
    let p = plan(Model::Zen5, 2, 5).unwrap();
    let n = p.groups.len();
    assert!(n >= 3, "{n} groups");
    let mux = compute(
        &p,
        &counts_from_rates(&p, ZEN5_POINTER_CHASE, &[1.0 / n as f64], 0.01),
    );
    assert!(mux.level1.backend_bound >= 0.8, "{:?}", mux.level1);
    assert!(
        (mux.level1.sum() - 1.0).abs() <= 0.01,
        "sum {}",
        mux.level1.sum()
    );
    let be = find(&mux.tree, "backend_bound").unwrap();
    let mem = find(&mux.tree, "memory").unwrap();
    let cpu = find(&mux.tree, "cpu").unwrap();
    assert!(mem.value > cpu.value, "{mem:?} {cpu:?}");
    assert!((mem.value + cpu.value - be.value).abs() < 1e-9);
    assert!(be.flagged && mem.flagged && !cpu.flagged);
    assert_eq!(mux.bottleneck.as_deref(), Some("memory"));
    assert!(be.critical && mem.critical);
    assert!(mem
        .hint
        .as_deref()
        .unwrap()
        .contains("ls_any_fills_from_sys.all"));
    // A quarter of the run backs each number: unreliable.
    assert!(
        mem.reliability < UNRELIABLE_BELOW && mem.unreliable,
        "{mem:?}"
    );

    // --no-multiplex: each group alone in its own run, counted all the time.
    let solo = compute(&p, &counts_from_rates(&p, ZEN5_POINTER_CHASE, &[1.0], 0.01));
    let mem_solo = find(&solo.tree, "memory").unwrap();
    assert_eq!(mem_solo.reliability, 1.0);
    assert!(mem_solo.reliability > mem.reliability);
    for name in [
        "frontend_bound",
        "bad_speculation",
        "backend_bound",
        "retiring",
        "memory",
        "latency",
    ] {
        let a = find(&mux.tree, name).unwrap().value;
        let b = find(&solo.tree, name).unwrap().value;
        assert!((a - b).abs() <= 0.05, "{name}: {a} vs {b}");
    }
}

#[test]
fn test_mismeasured_values_never_flagged() {
    // Dispatched < retired (a broken counter): bad_speculation comes out negative; and a
    // frontend count over the slot total.
    let p = plan(Model::Zen5, 1, 6).unwrap();
    let order: Vec<Ev> = p.groups[0].iter().map(|e| e.key).collect();
    let value = |k: Ev| match k {
        Ev::Cycles => 1_000_000,
        Ev::AmdFeNoOps => 9_000_000,
        Ev::AmdBackendStalls => 1_000_000,
        Ev::AmdSmtContention => 0,
        Ev::AmdOpsDispatched => 1_000_000,
        Ev::AmdRetOps => 2_000_000,
        _ => unreachable!(),
    };
    let counts = vec![order.iter().map(|&k| c(value(k), 10, 10)).collect()];
    let td = compute(&p, &counts);
    let fe = find(&td.tree, "frontend_bound").unwrap();
    let bs = find(&td.tree, "bad_speculation").unwrap();
    assert!(fe.value > 1.05 && fe.mismeasured && !fe.flagged, "{fe:?}");
    assert!(bs.value < -0.05 && bs.mismeasured && !bs.flagged, "{bs:?}");
    assert_ne!(td.bottleneck.as_deref(), Some("frontend_bound"));
}

#[test]
fn test_intel_skylake_levels_from_recorded_counts() {
    let p = plan(Model::IntelSkylake, 2, 4).unwrap();
    // A Skylake-class run: 1e9 cycles (4e9 slots), counted without multiplexing.
    let value = |k: Ev| -> u64 {
        match k {
            Ev::Cycles => 1_000_000_000,
            Ev::IntelIdqNotDelivered => 400_000_000,
            Ev::IntelIdqCycles0 => 60_000_000,
            Ev::IntelUopsIssued => 2_300_000_000,
            Ev::IntelRetireSlots => 2_000_000_000,
            Ev::IntelRecoveryCycles => 50_000_000,
            Ev::IntelBrMisp => 9_000_000,
            Ev::IntelMachineClears => 1_000_000,
            Ev::IntelStallsMemAny => 300_000_000,
            Ev::IntelBoundOnStores => 20_000_000,
            Ev::IntelStallsTotal => 400_000_000,
            Ev::IntelPorts1 => 100_000_000,
            Ev::IntelPorts2 => 200_000_000,
            Ev::IntelMacroFused => 150_000_000,
            Ev::Instructions => 1_900_000_000,
            _ => unreachable!("{k:?}"),
        }
    };
    let counts: Vec<Vec<Count>> = p
        .groups
        .iter()
        .map(|g| g.iter().map(|e| c(value(e.key), 500, 500)).collect())
        .collect();
    let td = compute(&p, &counts);
    let l1 = td.level1;
    assert!((l1.frontend_bound - 0.10).abs() < 1e-9);
    assert!((l1.bad_speculation - (300e6 + 200e6) / 4e9).abs() < 1e-9);
    assert!((l1.retiring - 0.5).abs() < 1e-9);
    assert!((l1.backend_bound - (1.0 - 0.1 - 0.125 - 0.5)).abs() < 1e-9);
    assert_eq!(l1.smt_contention, 0.0);
    assert!((l1.sum() - 1.0).abs() < 1e-9);
    // Level 2 by the TMA formulas.
    let fl = find(&td.tree, "fetch_latency").unwrap().value;
    assert!((fl - 4.0 * 60e6 / 4e9).abs() < 1e-9, "{fl}");
    let bm = find(&td.tree, "branch_mispredicts").unwrap().value;
    assert!((bm - 0.9 * 0.125).abs() < 1e-9);
    let mb = find(&td.tree, "memory_bound").unwrap();
    let want = (300e6 + 20e6) / (400e6 + 100e6 + 0.5 * 200e6 + 20e6) * 0.275;
    assert!((mb.value - want).abs() < 1e-9, "{} vs {want}", mb.value);
    // That formula spans 5 programmable events: split over two groups, which were not
    // multiplexed here, so nothing is lost...
    assert_eq!(mb.reliability, 1.0);
    let heavy = find(&td.tree, "heavy_operations").unwrap().value;
    assert!((heavy - 250e6 / 4e9).abs() < 1e-9);
    assert_eq!(td.thresholds, "Intel TMA thresholds");
    // backend 0.275 is flagged; memory_bound 0.14 is not (> 0.20 needed), core_bound
    // 0.135 is (> 0.10): the descent ends there.
    assert!(find(&td.tree, "backend_bound").unwrap().flagged);
    assert!(!mb.flagged);
    assert!(find(&td.tree, "core_bound").unwrap().flagged);
    assert_eq!(td.bottleneck.as_deref(), Some("core_bound"));
    assert!(find(&td.tree, "backend_bound").unwrap().critical);
    let hint = find(&td.tree, "backend_bound")
        .unwrap()
        .hint
        .clone()
        .unwrap();
    assert!(hint.contains("level-2 children below"), "{hint}");
    // At level 1 the same node points at the level-2 run.
    let p1 = plan(Model::IntelSkylake, 1, 4).unwrap();
    let counts1: Vec<Vec<Count>> = p1
        .groups
        .iter()
        .map(|g| g.iter().map(|e| c(value(e.key), 500, 500)).collect())
        .collect();
    let td1 = compute(&p1, &counts1);
    assert_eq!(td1.level1, td.level1);
    let hint = find(&td1.tree, "backend_bound")
        .unwrap()
        .hint
        .clone()
        .unwrap();
    assert!(hint.contains("culprit stat --topdown --level 2"), "{hint}");
    assert_eq!(td1.bottleneck.as_deref(), Some("backend_bound"));
    // ...but multiplexed (half the time each), the split formula is penalized.
    let half: Vec<Vec<Count>> = counts
        .iter()
        .map(|g| g.iter().map(|x| c(x.value / 2, 1000, 500)).collect())
        .collect();
    let td = compute(&p, &half);
    let mb = find(&td.tree, "memory_bound").unwrap();
    assert!(
        (mb.reliability - 0.5 * SPLIT_PENALTY).abs() < 1e-9,
        "{mb:?}"
    );
    assert!((find(&td.tree, "frontend_bound").unwrap().reliability - 0.5).abs() < 1e-9);
}

#[test]
fn test_intel_perf_metrics_level1_and_level2() {
    let model = Model::IntelPerfMetrics {
        width: 6,
        level2: true,
    };
    let p = plan(model, 2, 8).unwrap();
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0][0].name, "slots");
    assert_eq!(p.groups[0][0].config, 0x0400);
    // Values as the kernel reports them: slots x metric fraction.
    let value = |k: Ev| -> u64 {
        match k {
            Ev::Slots => 6_000_000_000,
            Ev::TdRetiring => 1_500_000_000,
            Ev::TdBadSpec => 300_000_000,
            Ev::TdFeBound => 600_000_000,
            Ev::TdBeBound => 3_600_000_000,
            Ev::TdHeavyOps => 120_000_000,
            Ev::TdBrMispredict => 270_000_000,
            Ev::TdFetchLat => 420_000_000,
            Ev::TdMemBound => 3_000_000_000,
            _ => unreachable!(),
        }
    };
    // Multiplexed with another tool's events: ran 60% of the time.
    let counts = vec![p.groups[0]
        .iter()
        .map(|e| c(value(e.key), 1000, 600))
        .collect()];
    let td = compute(&p, &counts);
    assert!((td.level1.backend_bound - 0.6).abs() < 1e-9);
    assert!((td.level1.retiring - 0.25).abs() < 1e-9);
    assert!((td.level1.sum() - 1.0).abs() < 1e-9);
    let mb = find(&td.tree, "memory_bound").unwrap();
    assert!((mb.value - 0.5).abs() < 1e-9);
    assert!((find(&td.tree, "core_bound").unwrap().value - 0.1).abs() < 1e-9);
    assert!((find(&td.tree, "machine_clears").unwrap().value - 0.005).abs() < 1e-9);
    assert!((mb.reliability - 0.6).abs() < 1e-9 && mb.unreliable);
    assert_eq!(td.bottleneck.as_deref(), Some("memory_bound"));
    // Level 1 only on Ice Lake.
    let icl = Model::IntelPerfMetrics {
        width: 5,
        level2: false,
    };
    let p = plan(icl, 1, 8).unwrap();
    assert_eq!(p.groups[0].len(), 5);
}

#[test]
fn test_sampled_level1_per_function() {
    assert_eq!(
        parse_cpuid("AuthenticAMD,26,2,1"),
        Some(("AuthenticAMD".to_string(), 26, 2))
    );
    assert_eq!(parse_cpuid("garbage"), None);
    let evs = sampling_events(Model::Zen5).unwrap();
    assert_eq!(evs.len(), 6);
    assert_eq!(
        sampled_event(Model::Zen5, 4, 0x1000001A0),
        Some(Ev::AmdFeNoOps)
    );
    assert_eq!(sampled_event(Model::Zen5, 4, 0x76), Some(Ev::Cycles));
    assert_eq!(sampled_event(Model::Zen5, 0, 0), None);
    assert!(sampling_events(Model::IntelPerfMetrics {
        width: 5,
        level2: false
    })
    .is_err());
    // A function with 1e9 cycles (8e9 slots) sampled at period 1e6 (cycles) / 4e6 (rest).
    let rows = [
        (Ev::Cycles, 1_000_000_000, 1000),
        (Ev::AmdFeNoOps, 800_000_000, 200),
        (Ev::AmdBackendStalls, 4_000_000_000, 1000),
        (Ev::AmdSmtContention, 0, 0),
        (Ev::AmdOpsDispatched, 3_600_000_000, 900),
        (Ev::AmdRetOps, 2_400_000_000, 600),
    ];
    let r = level1_from_samples(Model::Zen5, &rows).unwrap();
    assert!((r.level1.frontend_bound - 0.1).abs() < 1e-12);
    assert!((r.level1.backend_bound - 0.5).abs() < 1e-12);
    assert!((r.level1.bad_speculation - 0.15).abs() < 1e-12);
    assert!((r.level1.retiring - 0.3).abs() < 1e-12);
    assert!((r.level1.sum() - 1.05).abs() < 1e-12);
    assert_eq!((r.samples, r.min_samples), (3700, 0));
    assert_eq!(level1_from_samples(Model::Zen5, &rows[1..]), None);
}

#[test]
fn test_bottleneck_stops_when_siblings_are_close() {
    // Zen 4 level 2, backend 0.45 split evenly between memory and cpu: backend is the
    // bottleneck, the descent stops there.
    let rates: &[(Ev, f64)] = &[
        (Ev::AmdFeNoOps, 0.6),
        (Ev::AmdFeNoOpsCmask, 0.05),
        (Ev::AmdBackendStalls, 2.7),
        (Ev::AmdSmtContention, 0.0),
        (Ev::AmdRetOps, 2.4),
        (Ev::AmdOpsDispatched, 2.7),
        (Ev::AmdBrMisp, 0.01),
        (Ev::AmdRestarts, 0.001),
        (Ev::AmdNotComplete, 1.0),
        (Ev::AmdLoadNotComplete, 0.52),
        (Ev::AmdUcodeOps, 0.01),
    ];
    let p = plan(Model::Zen4, 2, 6).unwrap();
    let td = compute(&p, &counts_from_rates(&p, rates, &[1.0], 0.0));
    assert!(
        (td.level1.backend_bound - 0.45).abs() < 1e-6,
        "{:?}",
        td.level1
    );
    assert!(find(&td.tree, "memory").unwrap().flagged);
    assert!(find(&td.tree, "cpu").unwrap().flagged);
    assert_eq!(td.bottleneck.as_deref(), Some("backend_bound"));
    assert!(!find(&td.tree, "memory").unwrap().critical);
    // Level 1 ambiguity: frontend 0.30 vs backend 0.32 -> the higher is named, no descent.
    let rates: &[(Ev, f64)] = &[
        (Ev::AmdFeNoOps, 1.8),
        (Ev::AmdBackendStalls, 1.92),
        (Ev::AmdRetOps, 2.28),
        (Ev::AmdOpsDispatched, 2.28),
        (Ev::AmdNotComplete, 1.0),
        (Ev::AmdLoadNotComplete, 0.9),
    ];
    let td = compute(&p, &counts_from_rates(&p, rates, &[1.0], 0.0));
    assert_eq!(td.bottleneck.as_deref(), Some("backend_bound"));
    assert!(!find(&td.tree, "memory").unwrap().critical);
}
