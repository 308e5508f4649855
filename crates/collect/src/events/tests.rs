//! Parser tests against fake sysfs trees (an AMD Zen-like machine and a VM without a
//! hardware PMU): every spelling, every error and its message, suggestions.

use super::*;
use crate::sysfs::testutil::{FakeMachines, FakeSysfs};
use crate::sysfs::CpuIdentity;

fn cpu(vendor: &str, family: u32, model: u32) -> CpuIdentity {
    CpuIdentity {
        vendor: vendor.to_string(),
        family,
        model,
        stepping: 0,
        model_name: "test cpu".to_string(),
        hypervisor: false,
    }
}

fn zen5() -> Option<CpuIdentity> {
    Some(cpu("AuthenticAMD", 0x1A, 0x02))
}

fn amd(fake: &FakeSysfs) -> EventParser {
    EventParser::new(Sysfs::at(&fake.root), zen5())
}

fn no_hw(fake: &FakeSysfs) -> EventParser {
    EventParser::new(Sysfs::at(&fake.root), Some(cpu("GenuineIntel", 6, 207)))
}

#[test]
fn test_parse_event_generic_hardware_spellings() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    for (name, config) in [
        ("cycles", 0),
        ("cpu-cycles", 0),
        ("instructions", 1),
        ("cache-references", 2),
        ("cache-misses", 3),
        ("branches", 4),
        ("branch-instructions", 4),
        ("branch-misses", 5),
        ("bus-cycles", 6),
        ("stalled-cycles-frontend", 7),
        ("idle-cycles-frontend", 7),
        ("stalled-cycles-backend", 8),
        ("ref-cycles", 9),
    ] {
        let e = p.parse_event(name).unwrap();
        assert_eq!((e.attr_type, e.config), (0, config), "{name}");
        assert_eq!(e.name, name);
        assert_eq!(e.pmu, None);
        assert!(!e.exclude_user && !e.exclude_kernel && !e.exclude_hv);
    }
}

#[test]
fn test_parse_event_software_spellings() {
    let fake = FakeSysfs::no_hw();
    let p = no_hw(&fake);
    for (name, config) in [
        ("cpu-clock", 0),
        ("task-clock", 1),
        ("page-faults", 2),
        ("faults", 2),
        ("context-switches", 3),
        ("cs", 3),
        ("cpu-migrations", 4),
        ("migrations", 4),
        ("minor-faults", 5),
        ("major-faults", 6),
        ("alignment-faults", 7),
        ("emulation-faults", 8),
        ("dummy", 9),
    ] {
        let e = p.parse_event(name).unwrap();
        assert_eq!((e.attr_type, e.config), (1, config), "{name}");
        assert_eq!(e.pmu.as_deref(), Some("software"));
    }
}

#[test]
fn test_parse_event_cache_events() {
    let fake = FakeSysfs::no_hw();
    let p = no_hw(&fake);
    let e = p.parse_event("L1-dcache-load-misses").unwrap();
    assert_eq!((e.attr_type, e.config), (3, 0x10000));
    let e = p.parse_event("dTLB-loads:u").unwrap();
    assert_eq!((e.attr_type, e.config), (3, 0x3));
    assert!(e.exclude_kernel && e.exclude_hv && !e.exclude_user);
    let e = p.parse_event("branch-load-misses").unwrap();
    assert_eq!(e.config, 0x10005);
    let e = p.parse_event("node-prefetches").unwrap();
    assert_eq!(e.config, 0x206);
}

#[test]
fn test_parse_event_raw() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("r1a0").unwrap();
    assert_eq!((e.attr_type, e.config), (4, 0x1a0));
    assert_eq!(e.pmu.as_deref(), Some("cpu"));
    let e = p.parse_event("r0x100001EA0:u").unwrap();
    assert_eq!(e.config, 0x100001EA0);
    assert!(e.exclude_kernel);
    // Raw events take the cpu PMU's format terms and period.
    let e = p.parse_event("r76/cmask=2,period=5000/").unwrap();
    assert_eq!(e.config, 0x0200_0076);
    assert_eq!(e.rate, Some(SampleRate::Period(5000)));
    // Not hex: not raw.
    assert!(matches!(
        p.parse_event("rxyz"),
        Err(EventError::UnknownEvent { .. })
    ));
}

#[test]
fn test_parse_event_pmu_terms_split_range() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("cpu/event=0x1a0,umask=0x1e/").unwrap();
    assert_eq!((e.attr_type, e.config), (4, 0x100001EA0));
    assert_eq!(e.pmu.as_deref(), Some("cpu"));
    assert_eq!(e.name, "cpu/event=0x1a0,umask=0x1e/");
    let e = p.parse_event("cpu/event=0x1a0,umask=0x1,cmask=6/").unwrap();
    assert_eq!(e.config, 0x1060001A0);
    // Bare term = 1; decimal values.
    let e = p.parse_event("cpu/event=118,edge,inv/").unwrap();
    assert_eq!(e.config, 0x76 | 1 << 18 | 1 << 23);
    // config= writes the whole word; later terms override earlier bits.
    let e = p.parse_event("cpu/config=0x1234,umask=0x56/").unwrap();
    assert_eq!(e.config, 0x5634);
}

#[test]
fn test_parse_event_ibs() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("ibs_op/cnt_ctl=1/").unwrap();
    assert_eq!((e.attr_type, e.config), (11, 1 << 19));
    assert_eq!(e.pmu.as_deref(), Some("ibs_op"));
    let e = p
        .parse_event("ibs_op/cnt_ctl,l3missonly,ldlat=256/")
        .unwrap();
    assert_eq!(e.config, 1 << 19 | 1 << 16);
    assert_eq!(e.config1, 256);
    let e = p.parse_event("ibs_op/swfilt/u").unwrap();
    assert_eq!(e.config2, 1);
    assert!(e.exclude_kernel);
    let e = p.parse_event("ibs_fetch/rand_en=1/").unwrap();
    assert_eq!((e.attr_type, e.config), (10, 1 << 57));
    let e = p.parse_event("ibs_op//").unwrap();
    assert_eq!((e.attr_type, e.config), (11, 0));
    let e = p.parse_event("ibs_op/period=0x10000/").unwrap();
    assert_eq!(e.rate, Some(SampleRate::Period(0x10000)));
}

#[test]
fn test_parse_event_sysfs_aliases() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("cpu/cache-misses/").unwrap();
    assert_eq!((e.attr_type, e.config), (4, 0x964));
    let e = p.parse_event("cpu/cpu-cycles,period=1000/k").unwrap();
    assert_eq!(e.config, 0x76);
    assert_eq!(e.rate, Some(SampleRate::Period(1000)));
    assert!(e.exclude_user && !e.exclude_kernel);
    // Alias then an override of one of its fields.
    let e = p.parse_event("cpu/cache-misses,umask=0x8/").unwrap();
    assert_eq!(e.config, 0x864);
    // A bare alias owned by exactly one PMU.
    let e = p.parse_event("smi").unwrap();
    assert_eq!((e.attr_type, e.config), (12, 4));
    assert_eq!(e.pmu.as_deref(), Some("msr"));
    let e = p.parse_event("msr/tsc/").unwrap();
    assert_eq!((e.attr_type, e.config), (12, 0));
}

#[test]
fn test_parse_event_generic_with_period_freq_name() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("cycles/period=100000/").unwrap();
    assert_eq!((e.attr_type, e.config), (0, 0));
    assert_eq!(e.rate, Some(SampleRate::Period(100000)));
    let e = p.parse_event("cpu-clock/freq=999/u").unwrap();
    assert_eq!(e.rate, Some(SampleRate::Frequency(999)));
    assert!(e.exclude_kernel);
    let e = p
        .parse_event("instructions/name=insn,period=0x1000/:u")
        .unwrap();
    assert_eq!(e.name, "insn");
    assert_eq!(e.rate, Some(SampleRate::Period(4096)));
}

#[test]
fn test_parse_event_modifiers() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("cycles:k").unwrap();
    assert!(e.exclude_user && !e.exclude_kernel && e.exclude_hv);
    let e = p.parse_event("cycles:uk").unwrap();
    assert!(!e.exclude_user && !e.exclude_kernel && e.exclude_hv);
    let e = p.parse_event("cycles:ukh").unwrap();
    assert!(!e.exclude_user && !e.exclude_kernel && !e.exclude_hv);
    let e = p.parse_event("cycles:h").unwrap();
    assert!(e.exclude_user && e.exclude_kernel && !e.exclude_hv);
    assert_eq!(p.parse_event("cycles:p").unwrap().precise_ip, 1);
    assert_eq!(p.parse_event("cycles:upp").unwrap().precise_ip, 2);
    let max = p.parse_event("cycles:P").unwrap();
    assert!(max.precise_max && max.precise_ip == 0, "{max:?}");
    assert_eq!(p.parse_event("cpu/event=0x76/pp").unwrap().precise_ip, 2);
    // Software events are not checked against max_precise.
    assert_eq!(p.parse_event("cpu-clock:p").unwrap().precise_ip, 1);
}

#[test]
fn test_parse_event_bad_modifiers() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    for (ev, m) in [
        ("cycles:W", "W"),
        ("cycles:b", "b"),
        ("cycles:uu", "u"),
        ("cycles:x", "x"),
    ] {
        match p.parse_event(ev).unwrap_err() {
            EventError::BadModifier { modifier, .. } => assert_eq!(modifier, m, "{ev}"),
            other => panic!("{ev}: {other:?}"),
        }
    }
    let msg = p.parse_event("cycles:W").unwrap_err().to_string();
    assert!(msg.contains("weak groups"), "{msg}");
    assert!(msg.contains("supported modifiers: u (user)"), "{msg}");
    let msg = p.parse_event("cycles:pppp").unwrap_err().to_string();
    assert!(msg.contains("at most three `p`"), "{msg}");
    let msg = p.parse_event("sched:sched_switch").unwrap_err().to_string();
    assert!(msg.contains("tracing file system is not mounted"), "{msg}");
}

#[test]
fn test_parse_tracepoints_and_wildcards() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-tmp")
        .join(format!("culprit-events-tp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (sys, name, id) in [
        ("sched", "sched_switch", 316),
        ("syscalls", "sys_enter_read", 600),
        ("syscalls", "sys_enter_write", 601),
        ("syscalls", "sys_exit_read", 602),
    ] {
        let d = root.join("events").join(sys).join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("id"), format!("{id}\n")).unwrap();
    }
    let fake = FakeSysfs::amd();
    let p = amd(&fake).with_tracefs(Some(crate::tracefs::Tracefs::at(&root)));
    let tp = p.parse_event("sched:sched_switch").unwrap();
    assert_eq!(
        (tp.name.as_str(), tp.attr_type, tp.config),
        ("sched:sched_switch", perf_type::TRACEPOINT, 316)
    );
    let list = p
        .parse_event_list("cpu-clock,syscalls:sys_enter_*,cycles:u")
        .unwrap();
    let names: Vec<(&str, u64)> = list.iter().map(|e| (e.name.as_str(), e.config)).collect();
    assert_eq!(
        names[1..3],
        [
            ("syscalls:sys_enter_read", 600),
            ("syscalls:sys_enter_write", 601)
        ]
    );
    assert_eq!(list.len(), 4);
    assert!(list[3].exclude_kernel, "cycles:u keeps its modifier");
    let msg = p
        .parse_event_list("sched:sched_swich")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("did you mean sched:sched_switch"), "{msg}");
    let msg = p.parse_event_list("nosuch:*").unwrap_err().to_string();
    assert!(msg.contains("unknown tracepoint `nosuch:*`"), "{msg}");
}

/// The precision `spelling` parses to (as perf, unchecked) and why this machine refuses it
/// at open time ([`EventParser::precise_refusal`]).
fn refusal(parser: &EventParser, spelling: &str) -> EventError {
    let spec = parser.parse_event(spelling).unwrap();
    parser.precise_refusal(&spec).unwrap_err()
}

#[test]
fn test_parse_event_precise_unavailable() {
    // The fake AMD tree: max_precise 0 but IBS serves 1-2; ppp is too much.
    let fake = FakeSysfs::amd();
    let parser = amd(&fake);
    let err = refusal(&parser, "cycles:ppp");
    assert_eq!(
        err,
        EventError::PreciseUnavailable {
            event: "cycles:ppp".into(),
            requested: 3,
            max: 2,
            why: "cpu/caps/max_precise is 0, and IBS serves precise_ip 1-2; for exact IPs sample with IBS instead: `-e ibs_op//`"
                .into(),
        }
    );
    // No hardware PMU at all.
    let fake = FakeSysfs::no_hw();
    let msg = refusal(&no_hw(&fake), "cycles:p").to_string();
    assert!(msg.contains("supports at most 0"), "{msg}");
    assert!(msg.contains("no hardware PMU"), "{msg}");
    assert!(msg.contains("estimates skid"), "{msg}");
    // An AMD VM without IBS: max_precise 0.
    let fake = FakeSysfs::empty();
    fake.pmu(
        "cpu",
        4,
        &[("event", "config:0-7,32-35")],
        &[],
        &[("max_precise", "0")],
    );
    let p = EventParser::new(Sysfs::at(&fake.root), zen5());
    let msg = refusal(&p, "r76:pp").to_string();
    assert!(msg.contains("max_precise is 0"), "{msg}");
    // `:P` is resolved at open time, by the kernel (perf's precise_max).
    assert!(p.parse_event("r76:P").unwrap().precise_max);
}

#[test]
fn test_parse_event_precise_via_ibs_only_for_cycles_and_ops() {
    // An AMD machine whose core PMU reports max_precise 0 but which has IBS: the kernel
    // forwards cycles / r76 / rC1 with precise_ip 1-2 to IBS and refuses anything else.
    let fake = FakeSysfs::empty();
    fake.pmu(
        "cpu",
        4,
        &[("event", "config:0-7,32-35"), ("umask", "config:8-15")],
        &[],
        &[("max_precise", "0")],
    )
    .pmu("ibs_op", 11, &[("cnt_ctl", "config:19")], &[], &[]);
    let p = EventParser::new(Sysfs::at(&fake.root), zen5());
    assert_eq!(p.parse_event("cycles:pp").unwrap().precise_ip, 2);
    assert_eq!(p.parse_event("r76:p").unwrap().precise_ip, 1);
    assert_eq!(p.parse_event("ex_ret_ops:p").unwrap().precise_ip, 1);
    assert_eq!(p.parse_event("ls_not_halted_cyc:pp").unwrap().precise_ip, 2);
    assert_eq!(p.parse_event("cpu/event=0xc1/p").unwrap().precise_ip, 1);
    assert!(p.parse_event("cycles:P").unwrap().precise_max);
    let msg = refusal(&p, "instructions:p").to_string();
    assert!(msg.contains("served by IBS"), "{msg}");
    assert!(msg.contains("`-e ibs_op//`"), "{msg}");
    assert!(matches!(
        refusal(&p, "ex_ret_brn_misp:p"),
        EventError::PreciseUnavailable { .. }
    ));
    let msg = refusal(&p, "cycles:ppp").to_string();
    assert!(msg.contains("at most 2"), "{msg}");
    // Software events are unaffected.
    assert_eq!(p.parse_event("cpu-clock:p").unwrap().precise_ip, 1);
}

#[test]
fn test_parse_event_ibs_privilege_filter_needs_swfilt() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p.parse_event("ibs_op/swfilt,cnt_ctl/k").unwrap();
    assert!(e.exclude_user && !e.exclude_kernel);
    assert_eq!(e.config2, 1);
    let msg = p.parse_event("ibs_op/cnt_ctl/u").unwrap_err().to_string();
    assert!(
        msg.contains("add the `swfilt` term, e.g. `ibs_op/swfilt/u`"),
        "{msg}"
    );
    // No swfilt format at all (kernels before 6.14).
    let msg = p
        .parse_event("ibs_fetch/rand_en/u")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("cannot filter by privilege level"), "{msg}");
    assert!(p.parse_event("ibs_fetch/rand_en/").is_ok());
}

#[test]
fn test_parse_event_ibs_unavailable() {
    let fake = FakeSysfs::no_hw();
    let p = no_hw(&fake);
    for ev in ["ibs_op//", "ibs_op/cnt_ctl=1/", "ibs_fetch/rand_en/"] {
        let err = p.parse_event(ev).unwrap_err();
        assert!(
            matches!(err, EventError::IbsUnavailable { .. }),
            "{ev}: {err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("IBS is not available here"), "{msg}");
        assert!(
            msg.contains("precise attribution is not possible here"),
            "{msg}"
        );
        // No core PMU: no `cycles` to fall back to either.
        assert!(msg.contains("sample `cpu-clock`"), "{msg}");
        assert!(!msg.contains("`cycles` or"), "{msg}");
    }
    // With a core PMU but no IBS (an Intel or a Zen guest without IBS), cycles work.
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    if let Err(err @ EventError::IbsUnavailable { .. }) = p.parse_event("ibs_fetch/rand_en/x/") {
        assert!(err.to_string().contains("`cycles` or `cpu-clock`"), "{err}");
    }
}

/// On a machine without a hardware PMU, a misspelt hardware event is not "corrected" into
/// another event that cannot open there; software events still are.
#[test]
fn test_suggestions_without_a_pmu_only_name_openable_events() {
    let fake = FakeSysfs::no_hw();
    let p = no_hw(&fake);
    let msg = p.parse_event("cyles").unwrap_err().to_string();
    assert!(!msg.contains("`cycles`"), "{msg}");
    let msg = p.parse_event("instructons").unwrap_err().to_string();
    assert!(!msg.contains("did you mean"), "{msg}");
    let msg = p.parse_event("cpu-clok").unwrap_err().to_string();
    assert!(msg.contains("did you mean `cpu-clock`"), "{msg}");
    let msg = p.parse_event("task-clok").unwrap_err().to_string();
    assert!(msg.contains("`task-clock`"), "{msg}");
}

#[test]
fn test_parse_event_unknown_event_suggestions() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    match p.parse_event("cycels").unwrap_err() {
        EventError::UnknownEvent { name, suggestions } => {
            assert_eq!(name, "cycels");
            assert_eq!(suggestions[0], "cycles");
            assert!(suggestions.len() <= 3);
        }
        other => panic!("{other:?}"),
    }
    let msg = p.parse_event("instructons:u").unwrap_err().to_string();
    assert_eq!(
        msg,
        "unknown event `instructons` (did you mean `instructions`?); `culprit list` shows what this machine supports"
    );
    match p.parse_event("ls_dmnd_fills_from_sys").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert_eq!(suggestions.len(), 3);
            assert!(
                suggestions
                    .iter()
                    .all(|s| s.starts_with("ls_dmnd_fills_from_sys.")),
                "{suggestions:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    match p.parse_event("L1-dcache-load-mises").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert_eq!(suggestions[0], "L1-dcache-load-misses");
        }
        other => panic!("{other:?}"),
    }
    // sysfs aliases are suggested too.
    match p.parse_event("cache-mises").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert!(
                suggestions.contains(&"cache-misses".to_string()),
                "{suggestions:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    match p.parse_event("smii").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert!(suggestions.contains(&"smi".to_string()), "{suggestions:?}");
        }
        other => panic!("{other:?}"),
    }
    match p.parse_event("ex_ret_brn_misq").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert_eq!(suggestions[0], "ex_ret_brn_misp");
        }
        other => panic!("{other:?}"),
    }
    let msg = p.parse_event("qqqqqqqqqqqq").unwrap_err().to_string();
    assert!(!msg.contains("did you mean"), "{msg}");
}

#[test]
fn test_parse_event_unknown_pmu() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let err = p.parse_event("cpuu/event=1/").unwrap_err();
    match &err {
        EventError::UnknownPmu {
            pmu,
            suggestions,
            available,
            ..
        } => {
            assert_eq!(pmu, "cpuu");
            assert_eq!(suggestions[0], "cpu");
            assert_eq!(
                available,
                &["cpu", "ibs_fetch", "ibs_op", "msr", "software"]
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .contains("PMUs on this machine: cpu, ibs_fetch"),
        "{err}"
    );
    // A misspelled event with terms is reported as an unknown event, with suggestions.
    match p.parse_event("cycels/period=1000/").unwrap_err() {
        EventError::UnknownEvent { name, suggestions } => {
            assert_eq!(name, "cycels");
            assert_eq!(suggestions[0], "cycles");
        }
        other => panic!("{other:?}"),
    }
    // On the VM there is no cpu PMU.
    let fake = FakeSysfs::no_hw();
    let err = no_hw(&fake).parse_event("cpu/event=0x76/").unwrap_err();
    assert!(matches!(err, EventError::UnknownPmu { .. }), "{err:?}");
}

#[test]
fn test_parse_event_unknown_term_lists_formats() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let err = p.parse_event("ibs_op/cnt_ctrl=1/").unwrap_err();
    match &err {
        EventError::UnknownTerm {
            term, known, pmu, ..
        } => {
            assert_eq!(term, "cnt_ctrl");
            assert_eq!(pmu, "PMU ibs_op");
            for k in [
                "cnt_ctl",
                "l3missonly",
                "ldlat",
                "swfilt",
                "period",
                "config1",
            ] {
                assert!(known.iter().any(|x| x == k), "{k} in {known:?}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().starts_with(
            "unknown term `cnt_ctrl` for PMU ibs_op in `ibs_op/cnt_ctrl=1/`; valid terms: cnt_ctl,"
        ),
        "{err}"
    );
    let err = p.parse_event("cycles/umask=1/").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown term `umask` for generic event cycles in `cycles/umask=1/`; valid terms: period, freq, name, call-graph, stack-size"
    );
    // A table event takes its PMU's terms.
    let err = p.parse_event("ex_ret_ops/foo=1/").unwrap_err();
    assert!(
        err.to_string().starts_with(
            "unknown term `foo` for PMU cpu in `ex_ret_ops/foo=1/`; valid terms: cmask, edge, event, inv, umask, config,"
        ),
        "{err}"
    );
}

#[test]
fn test_parse_event_value_errors() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let err = p.parse_event("cpu/umask=0x100/").unwrap_err();
    assert_eq!(
        err,
        EventError::ValueOutOfRange {
            event: "cpu/umask=0x100/".into(),
            term: "umask".into(),
            value: 0x100,
            max: 0xff,
            field: "config:8-15".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "value 0x100 for `umask` in `cpu/umask=0x100/` does not fit `config:8-15` (max 0xff)"
    );
    let err = p.parse_event("cpu/event=0x1000/").unwrap_err();
    assert!(
        err.to_string().contains("config:0-7,32-35` (max 0xfff)"),
        "{err}"
    );
    let err = p.parse_event("ibs_op/cnt_ctl=2/").unwrap_err();
    assert!(
        matches!(err, EventError::ValueOutOfRange { max: 1, .. }),
        "{err:?}"
    );
    let err = p.parse_event("ibs_op/ldlat=4096/").unwrap_err();
    assert!(
        matches!(err, EventError::ValueOutOfRange { max: 0xfff, .. }),
        "{err:?}"
    );
    let err = p.parse_event("cpu/event=zz/").unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad value `zz` for `event` in `cpu/event=zz/`: expected a decimal or 0x-hex number"
    );
    assert!(matches!(
        p.parse_event("cycles/period=0/"),
        Err(EventError::BadValue { .. })
    ));
    assert!(matches!(
        p.parse_event("cycles/period=10,freq=10/"),
        Err(EventError::Syntax { .. })
    ));
    assert!(matches!(
        p.parse_event("cycles/name=a b/"),
        Err(EventError::Syntax { .. })
    ));
}

#[test]
fn test_parse_event_syntax_errors() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let msg = p.parse_event("cpu/event=1").unwrap_err().to_string();
    assert!(msg.contains("missing the closing `/`"), "{msg}");
    assert!(matches!(
        p.parse_event("/event=1/"),
        Err(EventError::Syntax { .. })
    ));
    assert!(matches!(
        p.parse_event("cpu/a/b/"),
        Err(EventError::Syntax { .. })
    ));
    assert!(matches!(
        p.parse_event("cpu//"),
        Err(EventError::Syntax { .. })
    ));
    assert!(matches!(p.parse_event("  "), Err(EventError::Empty { .. })));
}

#[test]
fn test_parse_event_list() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let list = p
        .parse_event_list(
            "cycles,cpu/event=0x1a0,umask=0x1e/,instructions:u,ibs_op/cnt_ctl=1,l3missonly/",
        )
        .unwrap();
    let names: Vec<&str> = list.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cycles",
            "cpu/event=0x1a0,umask=0x1e/",
            "instructions:u",
            "ibs_op/cnt_ctl=1,l3missonly/"
        ]
    );
    assert_eq!(list[1].config, 0x100001EA0);
    assert_eq!(list[3].config, 1 << 19 | 1 << 16);
    let err = p.parse_event_list("cycles,,instructions").unwrap_err();
    assert_eq!(
        err.to_string(),
        "empty event name in `cycles,,instructions`: write events separated by commas, e.g. `-e cycles,instructions`"
    );
    assert!(matches!(
        p.parse_event_list("cycles,"),
        Err(EventError::Empty { .. })
    ));
    // Groups parse (test_parse_event_list_groups).
    assert_eq!(
        p.parse_event_list("{cycles,instructions}").unwrap().len(),
        2
    );
    // The first bad event is reported.
    assert!(matches!(
        p.parse_event_list("cycles,nope,cycels"),
        Err(EventError::UnknownEvent { ref name, .. }) if name == "nope"
    ));
}

#[test]
fn test_default_and_cpu_clock() {
    let d = default_event();
    assert_eq!((d.name.as_str(), d.attr_type, d.config), ("cycles", 0, 0));
    let c = cpu_clock();
    assert_eq!(
        (c.name.as_str(), c.attr_type, c.config),
        ("cpu-clock", 1, 0)
    );
    assert_eq!(c.pmu.as_deref(), Some("software"));
}

#[test]
fn test_parse_event_on_this_system_software() {
    // The real sysfs: software events parse on every Linux machine.
    let e = parse_event("cpu-clock:u").unwrap();
    assert_eq!((e.attr_type, e.config), (1, 0));
    let list = parse_event_list("task-clock,page-faults").unwrap();
    assert_eq!(list.len(), 2);
}

/// The first `perf_event_attr:` block `perf stat -vv` prints for `event`, as field → value
/// (perf omits zero fields). `None` when perf printed no attr (it rejected the event).
fn perf_attr(event: &str) -> Option<std::collections::BTreeMap<String, String>> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-vv", "-e", event, "true"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("perf_event_attr:"));
    lines.next()?;
    let mut fields = std::collections::BTreeMap::new();
    for line in lines.take_while(|l| !l.starts_with("----")) {
        let mut parts = line.split_whitespace();
        if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
            fields.insert(k.to_string(), v.to_string());
        }
    }
    Some(fields)
}

fn perf_field(fields: &std::collections::BTreeMap<String, String>, key: &str) -> u64 {
    fields.get(key).map_or(0, |v| {
        v.strip_prefix("0x")
            .map(|h| u64::from_str_radix(h, 16).unwrap())
            .unwrap_or_else(|| v.parse().unwrap())
    })
}

/// Our parser and perf's agree on type, config, exclude bits and precise_ip, for events that
/// parse on any x86 Linux machine (and sysfs aliases of PMUs present here).
#[test]
fn test_parse_event_matches_perf() {
    if !culprit_testkit::require_perf("test_parse_event_matches_perf") {
        return;
    }
    let _lock = culprit_testkit::pmu_lock();
    let mut events: Vec<&str> = vec![
        "cpu-clock",
        "task-clock:u",
        "page-faults:k",
        "cs",
        "migrations:uk",
        "minor-faults",
        "major-faults:h",
        "alignment-faults",
        "emulation-faults",
        "dummy",
        "cpu-clock:pp",
        "cycles",
        "cpu-cycles:u",
        "instructions:k",
        "branches",
        "branch-misses",
        "cache-references",
        "stalled-cycles-frontend",
        "idle-cycles-backend",
        "ref-cycles",
        "L1-dcache-load-misses",
        "L1-dcache-stores:u",
        "l1d-read-miss",
        "L1-icache-loads",
        "LLC-prefetch-misses",
        "dTLB-loads",
        "iTLB-load-misses",
        "branch-loads",
        "node-stores",
        "r1a0",
        "r76:u",
    ];
    let sysfs = Sysfs::system();
    if sysfs.has_pmu("msr") {
        events.extend(["msr/tsc/", "msr/event=0x4/"]);
    }
    if sysfs.has_pmu("cpu") {
        // Not `cpu/instructions/`: newer perf turns legacy names under a PMU into
        // PERF_TYPE_HARDWARE with an extended type, so perf versions disagree on it.
        events.extend(["cpu/event=0xc0/", "cpu/event=0x76,umask=0/u"]);
    }
    let parser = EventParser::system();
    let mut compared = 0;
    for ev in events {
        let ours = parser
            .parse_event(ev)
            .unwrap_or_else(|e| panic!("{ev}: {e}"));
        let Some(theirs) = perf_attr(ev) else {
            panic!("perf printed no perf_event_attr for {ev}");
        };
        let got = (
            u64::from(ours.attr_type),
            ours.config,
            ours.config1,
            u64::from(ours.precise_ip),
        );
        let want = (
            perf_field(&theirs, "type"),
            perf_field(&theirs, "config"),
            perf_field(&theirs, "config1"),
            perf_field(&theirs, "precise_ip"),
        );
        assert_eq!(got, want, "{ev}: ours {ours:?}, perf {theirs:?}");
        // perf may exclude the kernel on its own (paranoid, non-root): compare the
        // privilege bits only where a modifier chose them.
        if ev.contains(':') {
            let got = (ours.exclude_user, ours.exclude_kernel, ours.exclude_hv);
            let want = (
                perf_field(&theirs, "exclude_user") == 1,
                perf_field(&theirs, "exclude_kernel") == 1,
                perf_field(&theirs, "exclude_hv") == 1,
            );
            assert_eq!(got, want, "{ev}: exclude bits, perf {theirs:?}");
        }
        compared += 1;
    }
    assert!(compared >= 31);
}

/// Skips loudly without a usable hardware PMU, fails instead when `CULPRIT_REQUIRE_PMU=1`
/// (the test kit's rule).
fn require_hardware_pmu(test: &str) -> bool {
    culprit_testkit::require_pmu(test, crate::support::hardware_pmu_available())
}

/// Parsed hardware events really count: generic, raw and (on AMD Zen 4/5) table-event and
/// sysfs-format spellings of "retired instructions" all count a busy loop.
#[test]
fn test_parsed_hardware_events_count() {
    if !require_hardware_pmu("test_parsed_hardware_events_count") {
        return;
    }
    let _lock = culprit_testkit::pmu_lock();
    let parser = EventParser::system();
    let mut events = vec!["instructions:u", "cycles:u", "branches:u"];
    let zen = parser
        .table()
        .is_some_and(|t| matches!(t.row.model, "x86/amdzen4" | "x86/amdzen5"));
    if zen {
        events.extend([
            "ex_ret_instr:u",
            "ls_not_halted_cyc:u",
            "ex_ret_brn:u",
            "r0c0:u",
            "cpu/event=0xc0/u",
            "de_src_op_disp.all:u",
        ]);
    }
    for ev in events {
        let spec = parser
            .parse_event(ev)
            .unwrap_or_else(|e| panic!("{ev}: {e}"));
        let count = crate::support::count_event(&spec)
            .unwrap_or_else(|e| panic!("{ev}: {}", crate::support::describe_errno(e)));
        assert!(count > 0, "{ev} counted 0");
    }
}

/// Garbage in, an error out: the parser never panics on random event strings built from the
/// characters that matter to it (plus some multi-byte ones).
#[test]
fn test_parse_event_list_random_input_never_panics() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let alphabet: Vec<char> = "/:,=.{}-_ rpPukhGcyclesibs_opcpueventumask0x1aAfF9é€"
        .chars()
        .collect();
    let seeds = [
        "cpu/event=0x1a0,umask=0x1e/",
        "ibs_op/cnt_ctl=1/u",
        "cycles:ppp",
        "L1-dcache-load-misses",
        "ex_ret_ops/cmask=8/",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        // xorshift64: deterministic, so a failure reproduces.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut errors = 0;
    for i in 0..2000 {
        let mut s: Vec<char> = seeds[i % seeds.len()].chars().collect();
        for _ in 0..(next() % 4 + 1) {
            let c = alphabet[(next() % alphabet.len() as u64) as usize];
            let at = (next() % (s.len() as u64 + 1)) as usize;
            match next() % 3 {
                0 => s.insert(at, c),
                1 if at < s.len() => {
                    s.remove(at);
                }
                _ if at < s.len() => s[at] = c,
                _ => s.push(c),
            }
        }
        let text: String = s.into_iter().collect();
        if p.parse_event_list(&text).is_err() {
            errors += 1;
        }
    }
    // Most mutations break the event; some survive. Both outcomes were exercised.
    assert!(errors > 400 && errors < 2000, "{errors}");
}

#[test]
fn test_parse_event_list_groups() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let group = |l: &str| -> Vec<(String, Option<EventGroup>)> {
        p.parse_event_list(l)
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.group))
            .collect()
    };
    let leader = |s| {
        Some(EventGroup {
            leader: true,
            leader_sampling: s,
        })
    };
    let member = |s| {
        Some(EventGroup {
            leader: false,
            leader_sampling: s,
        })
    };
    // Groups among plain events; commas inside `/…/` and inside braces.
    assert_eq!(
        group("cpu-clock,{cycles,cpu/event=0x76,umask=0/},page-faults"),
        [
            ("cpu-clock".to_string(), None),
            ("cycles".to_string(), leader(false)),
            ("cpu/event=0x76,umask=0/".to_string(), member(false)),
            ("page-faults".to_string(), None),
        ]
    );
    // `:S` is leader sampling; the other modifiers apply to every member, as perf names them.
    assert_eq!(
        group("{cycles,instructions:k}:Su"),
        [
            ("cycles:u".to_string(), leader(true)),
            ("instructions:ku".to_string(), member(true)),
        ]
    );
    let e = p.parse_event_list("{cycles,instructions}:u").unwrap();
    assert!(e.iter().all(|e| e.exclude_kernel && !e.exclude_user));
    // What does not parse, with the reason.
    for (bad, why) in [
        ("{cycles,instructions", "without a closing"),
        ("cycles}", "without an opening"),
        ("{cycles,{instructions}}", "do not nest"),
        ("x{cycles}", "must start an item"),
        ("{cycles}x", "only `:modifiers`"),
    ] {
        let err = p.parse_event_list(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    assert!(matches!(
        p.parse_event_list("{}"),
        Err(EventError::Empty { .. })
    ));
    let err = p
        .parse_event_list("{cycles,ibs_op//}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("IBS events cannot be in an event group"),
        "{err}"
    );
}

#[test]
fn test_max_precise_on_arm_names_the_core_pmu_and_spe() {
    let fake = FakeSysfs::empty();
    fake.pmu("armv8_pmuv3_0", 10, &[("event", "config:0-15")], &[], &[]);
    let p = EventParser::new(Sysfs::at(&fake.root), None);
    let (max, why) = p.max_precise();
    assert_eq!(max, 0);
    assert!(
        why.contains("armv8_pmuv3_0") && why.contains("no arm_spe PMU"),
        "{why}"
    );
    fake.pmu("arm_spe_0", 11, &[("ts_enable", "config:0")], &[], &[]);
    let (_, why) = EventParser::new(Sysfs::at(&fake.root), None).max_precise();
    assert!(why.contains("SPE (the arm_spe PMU"), "{why}");
    let none = FakeSysfs::empty();
    let (_, why) = EventParser::new(Sysfs::at(&none.root), None).max_precise();
    assert!(why.contains("no hardware PMU"), "{why}");
}
