//! Parser tests of CPU table events (perf's pmu-events): Intel encodings with MSR terms,
//! refusals without the PMU (Top-Down's hand-written encodings are checked against the
//! tables in the CLI, which sees both crates).

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

fn zen4() -> Option<CpuIdentity> {
    Some(cpu("AuthenticAMD", 0x19, 0x11))
}

fn amd(fake: &FakeSysfs) -> EventParser {
    EventParser::new(Sysfs::at(&fake.root), zen5())
}

fn no_hw(fake: &FakeSysfs) -> EventParser {
    EventParser::new(Sysfs::at(&fake.root), Some(cpu("GenuineIntel", 6, 207)))
}

/// A fake Intel `cpu` PMU with the format files of a Skylake-class core.
fn intel_cpu_pmu() -> FakeSysfs {
    let fake = FakeSysfs::empty();
    fake.pmu(
        "cpu",
        4,
        &[
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("pc", "config:19"),
            ("any", "config:21"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
            ("offcore_rsp", "config1:0-63"),
            ("ldlat", "config1:0-15"),
            ("frontend", "config1:0-23"),
        ],
        &[],
        &[("max_precise", "3")],
    );
    fake
}

/// Zen 4 / Zen 5 named events (formerly culprit's hand-written catalog) from the tables.
#[test]
fn test_parse_event_zen_table_events() {
    let fake = FakeSysfs::amd();
    let p = amd(&fake);
    let e = p
        .parse_event("de_no_dispatch_per_slot.backend_stalls")
        .unwrap();
    assert_eq!((e.attr_type, e.config), (4, 0x100001EA0));
    let e = p.parse_event("ex_ret_ops:u").unwrap();
    assert_eq!(e.config, 0xC1);
    assert!(e.exclude_kernel);
    let e = p
        .parse_event("de_no_dispatch_per_slot.no_ops_from_frontend/cmask=8,period=200003/")
        .unwrap();
    assert_eq!(e.config, 0x1080001A0);
    assert_eq!(e.rate, Some(SampleRate::Period(200003)));
    let e = p.parse_event("EX_RET_INSTR").unwrap();
    assert_eq!(e.config, 0xC0);
    // Family-specific encodings.
    let z4 = EventParser::new(Sysfs::at(&fake.root), zen4());
    assert_eq!(
        z4.parse_event("ls_mab_alloc.all_allocations")
            .unwrap()
            .config,
        0x7F41
    );
    assert_eq!(
        p.parse_event("ls_mab_alloc.all_allocations")
            .unwrap()
            .config,
        0x0F41
    );
    assert_eq!(
        z4.parse_event("resyncs_or_nc_redirects").unwrap().config,
        0x96
    );
}

#[test]
fn test_parse_event_other_cpus_event() {
    let fake = FakeSysfs::amd();
    let z4 = EventParser::new(Sysfs::at(&fake.root), zen4());
    let err = z4.parse_event("bp_redirects.resync").unwrap_err();
    assert!(matches!(err, EventError::WrongCpu { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("perf's tables have it for x86/amdzen5"),
        "{msg}"
    );
    assert!(msg.contains("family 0x19 model 0x11"), "{msg}");
    assert!(
        msg.contains("CPU id AuthenticAMD-25-11-0, table x86/amdzen4"),
        "{msg}"
    );
    let fake = FakeSysfs::no_hw();
    let err = no_hw(&fake).parse_event("ex_ret_ops").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("this CPU is GenuineIntel family 0x6"), "{msg}");
    assert!(msg.contains("table x86/emeraldrapids"), "{msg}");
    // Unknown CPU and no CPU id: no table, so the name is another CPU's event (perf has no
    // table either and refuses it).
    let any = EventParser::new(Sysfs::at(&fake.root), None);
    let msg = any.parse_event("ex_ret_ops").unwrap_err().to_string();
    assert!(msg.contains("this CPU is unknown"), "{msg}");
}

/// A table event whose PMU is not in sysfs is refused, as perf refuses it; `PERF_CPUID`-style
/// ids pick another CPU's table.
#[test]
fn test_parse_event_table_event_needs_its_pmu() {
    let fake = FakeSysfs::no_hw();
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-55-4");
    assert_eq!(p.table().unwrap().row.model, "x86/skylakex");
    let err = p.parse_event("mem_load_retired.l3_miss:pp").unwrap_err();
    assert!(matches!(err, EventError::NoPmuForEvent { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("x86/skylakex event of the `cpu` PMU"), "{msg}");
    let msg = p.parse_event("unc_m_cas_count.rd").unwrap_err().to_string();
    assert!(msg.contains("`uncore_imc` PMU"), "{msg}");
}

/// Intel table events go through the `cpu` PMU's formats, including the MSR terms.
#[test]
fn test_parse_event_intel_table_events() {
    let fake = intel_cpu_pmu();
    let spr = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-8F-8");
    let e = spr.parse_event("frontend_retired.dsb_miss:pp").unwrap();
    assert_eq!((e.attr_type, e.config, e.config1), (4, 0x1c6, 0x11));
    assert_eq!(e.precise_ip, 2);
    assert_eq!(e.pmu.as_deref(), Some("cpu"));
    let skx = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-55-4");
    let e = skx.parse_event("MEM_LOAD_RETIRED.L3_MISS:u").unwrap();
    assert_eq!((e.config, e.config1), (0x20d1, 0));
    assert!(e.exclude_kernel && !e.exclude_user);
    // The `cpu/name/` spelling, with an extra term.
    let e = skx
        .parse_event("cpu/offcore_response.all_data_rd.l3_hit.hit_other_core_no_fwd,cmask=2/")
        .unwrap();
    assert_eq!((e.config, e.config1), (0x020001b7, 0x4003C0491));
    let e = skx
        .parse_event("mem_load_retired.l3_miss/cmask=1/")
        .unwrap();
    assert_eq!(e.config, 0x010020d1);
    // Another CPU's event names this CPU's close ones.
    match skx.parse_event("mem_load_retired.l3_mis").unwrap_err() {
        EventError::UnknownEvent { suggestions, .. } => {
            assert_eq!(
                suggestions[0], "mem_load_retired.l3_miss",
                "{suggestions:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// A table event of an uncore unit opens on every numbered instance of its PMU, in numeric
/// order, each on the CPUs of its `cpumask`; `pmu/terms/` without the number does the same,
/// with it only that instance (perf's expansion; the attr oracle compares it with perf).
#[test]
fn test_uncore_events_open_on_each_instance_and_its_cpumask() {
    let fake = intel_cpu_pmu();
    for (i, ty) in [(0, 40), (1, 41), (10, 42)] {
        let name = format!("uncore_imc_{i}");
        fake.pmu(
            &name,
            ty,
            &[("event", "config:0-7"), ("umask", "config:8-15")],
            &[],
            &[],
        );
        std::fs::write(fake.root.join(&name).join("cpumask"), "0,28\n").unwrap();
    }
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-55-4");
    let specs = p.parse_event_list("unc_m_cas_count.rd,cycles").unwrap();
    let shown: Vec<(u32, u64, Option<Vec<u32>>)> = specs
        .iter()
        .map(|s| (s.attr_type, s.config, s.cpumask.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (40, 0x304, Some(vec![0, 28])),
            (41, 0x304, Some(vec![0, 28])),
            (42, 0x304, Some(vec![0, 28])),
            (0, 0, None),
        ]
    );
    assert!(specs[..3].iter().all(|s| s.name == "unc_m_cas_count.rd"));
    let each = p
        .parse_event_list("uncore_imc/event=0x4,umask=0xc/")
        .unwrap();
    assert_eq!(
        each.iter().map(|s| s.attr_type).collect::<Vec<_>>(),
        [40, 41, 42]
    );
    let one = p.parse_event_list("uncore_imc_1/event=0x4/").unwrap();
    assert_eq!((one.len(), one[0].attr_type, one[0].config), (1, 41, 4));
    // The single-event API gives the first instance.
    assert_eq!(p.parse_event("unc_m_cas_count.wr").unwrap().attr_type, 40);
}

/// A table event's `period=` is perf's weak sample period: the event's own rate and `-c` win
/// over it, `-F` does not (perf 6.1: `-F 99 -e mem_load_retired.l3_miss` samples every
/// 100007), and events without a table period take `-F` or the default.
#[test]
fn test_table_period_is_weak() {
    let fake = intel_cpu_pmu();
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-55-4");
    let e = p.parse_event("mem_load_retired.l3_miss").unwrap();
    assert_eq!((e.table_period, e.rate), (Some(100007), None));
    let default = SampleRate::Frequency(4000);
    let c = Some(SampleRate::Period(1000));
    let f = Some(SampleRate::Frequency(99));
    assert_eq!(e.sample_rate(None, default), SampleRate::Period(100007));
    assert_eq!(e.sample_rate(f, default), SampleRate::Period(100007));
    assert_eq!(e.sample_rate(c, default), SampleRate::Period(1000));
    let own = p
        .parse_event("cpu/mem_load_retired.l3_miss,period=5000/")
        .unwrap();
    assert_eq!(own.sample_rate(c, default), SampleRate::Period(5000));
    let cycles = p.parse_event("cycles").unwrap();
    assert_eq!(cycles.table_period, None);
    assert_eq!(cycles.sample_rate(f, default), SampleRate::Frequency(99));
    assert_eq!(cycles.sample_rate(None, default), default);
}

/// On a hybrid Intel CPU a table event that both core types have opens on each core PMU,
/// named as perf names them; one only the big cores have opens once, under its own name.
#[test]
fn test_hybrid_table_events_open_on_each_core_pmu() {
    let fake = FakeSysfs::empty();
    for (name, ty) in [("cpu_core", 4), ("cpu_atom", 10)] {
        fake.pmu(
            name,
            ty,
            &[
                ("event", "config:0-7"),
                ("umask", "config:8-15"),
                ("cmask", "config:24-31"),
                ("ldlat", "config1:0-15"),
                ("frontend", "config1:0-23"),
                ("offcore_rsp", "config1:0-63"),
            ],
            &[],
            &[],
        );
    }
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-97-2");
    assert_eq!(p.table().unwrap().row.model, "x86/alderlake");
    let both = p
        .parse_event_list("br_misp_retired.all_branches:u")
        .unwrap();
    let shown: Vec<(&str, u32)> = both
        .iter()
        .map(|s| (s.name.as_str(), s.attr_type))
        .collect();
    assert_eq!(
        shown,
        [
            ("cpu_atom/br_misp_retired.all_branches/u", 10),
            ("cpu_core/br_misp_retired.all_branches/u", 4)
        ]
    );
    assert!(both.iter().all(|s| s.exclude_kernel && s.cpumask.is_none()));
    let core_only = p.parse_event_list("topdown.slots_p").unwrap();
    assert_eq!(core_only.len(), 1);
    assert_eq!(
        (core_only[0].name.as_str(), core_only[0].attr_type),
        ("topdown.slots_p", 4)
    );
}

/// A sysfs alias's `.scale`/`.unit` (RAPL) and a table event's ScaleUnit reach the event, for
/// stat to show count × scale in that unit as perf does.
#[test]
fn test_scale_and_unit_from_aliases_and_tables() {
    let fake = intel_cpu_pmu();
    fake.pmu(
        "power",
        60,
        &[("event", "config:0-7")],
        &[("energy-pkg", "event=0x02")],
        &[],
    );
    std::fs::write(
        fake.root.join("power/events/energy-pkg.scale"),
        "2.3283064365386962890625e-10\n",
    )
    .unwrap();
    std::fs::write(fake.root.join("power/events/energy-pkg.unit"), "Joules\n").unwrap();
    std::fs::write(fake.root.join("power/cpumask"), "0\n").unwrap();
    fake.pmu(
        "uncore_imc_0",
        40,
        &[("event", "config:0-7"), ("umask", "config:8-15")],
        &[],
        &[],
    );
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_cpuid("GenuineIntel-6-55-4");
    let rapl = p.parse_event("power/energy-pkg/").unwrap();
    assert_eq!(
        rapl.scale_unit,
        Some((
            "2.3283064365386962890625e-10".to_string(),
            "Joules".to_string()
        ))
    );
    assert_eq!(rapl.scale(), 2f64.powi(-32));
    assert_eq!(rapl.cpumask, Some(vec![0]));
    let bytes = p.parse_event("llc_misses.mem_read").unwrap();
    assert_eq!(
        bytes.scale_unit,
        Some(("64".to_string(), "Bytes".to_string()))
    );
    assert_eq!(p.parse_event("cycles").unwrap().scale(), 1.0);
}

/// perf's per-event `call-graph=` and `stack-size=` terms override `--call-graph` for that
/// event; `lbr` and bad sizes are refused with the reason.
#[test]
fn test_per_event_call_graph_terms() {
    use crate::record::{event_call_graph, CallGraph};
    let fake = FakeSysfs::no_hw();
    let p = EventParser::new(Sysfs::at(&fake.root), None);
    let dwarf = p
        .parse_event("cpu-clock/call-graph=dwarf,stack-size=4096/")
        .unwrap();
    assert_eq!(
        event_call_graph(&dwarf, CallGraph::None),
        CallGraph::Dwarf(4096)
    );
    let fp = p.parse_event("cpu-clock/call-graph=fp/").unwrap();
    assert_eq!(event_call_graph(&fp, CallGraph::Dwarf(8192)), CallGraph::Fp);
    let no = p.parse_event("cpu-clock/call-graph=no/").unwrap();
    assert_eq!(event_call_graph(&no, CallGraph::Fp), CallGraph::None);
    let plain_dwarf = p.parse_event("cpu-clock/call-graph=dwarf/").unwrap();
    assert_eq!(
        event_call_graph(&plain_dwarf, CallGraph::None),
        CallGraph::Dwarf(8192)
    );
    assert_eq!(
        event_call_graph(&plain_dwarf, CallGraph::Dwarf(1024)),
        CallGraph::Dwarf(1024)
    );
    let size_only = p.parse_event("cpu-clock/stack-size=2048/").unwrap();
    assert_eq!(
        event_call_graph(&size_only, CallGraph::Dwarf(8192)),
        CallGraph::Dwarf(2048)
    );
    assert_eq!(event_call_graph(&size_only, CallGraph::Fp), CallGraph::Fp);
    let lbr = p
        .parse_event("cpu-clock/call-graph=lbr/")
        .unwrap_err()
        .to_string();
    assert!(lbr.contains("call-graph=lbr"), "{lbr}");
    assert!(p.parse_event("cpu-clock/stack-size=100/").is_err());
}

/// Generic events on a hybrid CPU: where the kernel takes extended types (perf 6.12's probe),
/// one event per core PMU with its type in the config's high word, named and placed as perf
/// does; where it does not, the legacy single event (what perf 6.12 falls back to).
#[test]
fn test_hybrid_generic_events_use_extended_types() {
    let fake = FakeSysfs::empty();
    for (name, ty, cpus) in [("cpu_core", 4, "0-3"), ("cpu_atom", 10, "4-7")] {
        fake.pmu(name, ty, &[("event", "config:0-7")], &[], &[]);
        std::fs::write(fake.root.join(name).join("cpus"), format!("{cpus}\n")).unwrap();
    }
    let p = EventParser::new(Sysfs::at(&fake.root), None).with_extended_type(true);
    let cycles = p
        .parse_event_list("cycles:u,L1-dcache-load-misses")
        .unwrap();
    let shown: Vec<(&str, u32, u64, Option<Vec<u32>>)> = cycles
        .iter()
        .map(|s| (s.name.as_str(), s.attr_type, s.config, s.cpus.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "cpu_atom/cycles/u",
                0,
                0xa_0000_0000,
                Some(vec![4, 5, 6, 7])
            ),
            (
                "cpu_core/cycles/u",
                0,
                0x4_0000_0000,
                Some(vec![0, 1, 2, 3])
            ),
            (
                "cpu_atom/L1-dcache-load-misses/",
                3,
                0xa_0001_0000,
                Some(vec![4, 5, 6, 7])
            ),
            (
                "cpu_core/L1-dcache-load-misses/",
                3,
                0x4_0001_0000,
                Some(vec![0, 1, 2, 3])
            ),
        ]
    );
    assert!(cycles[0].exclude_kernel);
    // Software events and kernels without extended types: one event, as before.
    assert_eq!(p.parse_event_list("task-clock").unwrap().len(), 1);
    let legacy = EventParser::new(Sysfs::at(&fake.root), None).with_extended_type(false);
    let one = legacy.parse_event_list("cycles").unwrap();
    assert_eq!(
        (one.len(), one[0].config, one[0].name.as_str()),
        (1, 0, "cycles")
    );
}
