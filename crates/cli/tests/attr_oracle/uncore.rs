//! Uncore, RAPL, cstate and hybrid-core events compared with perf: one spelling opens on
//! every numbered instance of its PMU (`unc_m_cas_count.rd` on `uncore_imc_0`, `_1`, `_2`),
//! system-wide on the CPUs of the PMU's `cpumask`, or on each hybrid core PMU that has it
//! (`cpu_core`, `cpu_atom`), as perf does.
//!
//! Each case runs alone (`oracle/run-stat-cases.sh`: `perf stat -vv -a` and `culprit stat -vv
//! -a`) in a namespace faking a core PMU plus `fixtures/pmu/intel-uncore` or `amd-uncore`.
//! perf walks the instances in directory order and culprit in numeric order, so the attrs of
//! a case are compared as sets, each attr by [`super::COMPARED`], together with the set of
//! (pid, cpu) its opens went to. One difference fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{common, compared_fields, first_attrs, oracle_can_run, oracle_dir, oracle_perf_6_12};

/// One faked machine: (PERF_CPUID, fixture directories, which perf, spellings).
struct Machine {
    cpuid: &'static str,
    fixtures: &'static [&'static str],
    /// `false`: the system's perf 6.1; `true`: perf 6.12 (target/oracle-perf/perf).
    newer_perf: bool,
    /// Whether the (pid, cpu) of the opens are compared too. Not on hybrid cores: perf
    /// probes there on each PMU's CPUs, culprit on its own thread (the attrs are the same).
    compare_places: bool,
    cases: &'static [&'static str],
}

const MACHINES: &[Machine] = &[
    Machine {
        cpuid: "GenuineIntel-6-55-4",
        fixtures: &["intel-skylake", "intel-uncore"],
        newer_perf: false,
        compare_places: true,
        cases: &[
            // Table events of the IMC (3 instances) and the CHA (2).
            "unc_m_cas_count.rd",
            "unc_m_cas_count.wr",
            "llc_misses.mem_read",
            "unc_c_clockticks",
            "unc_m_cas_count.rd:u",
            // A PMU name without its number: every instance; with it: that one.
            "uncore_imc/event=0x4,umask=0x3/",
            "uncore_imc_1/event=0x4,umask=0xc/",
            "uncore_cha/event=0x34,umask=0x21,filter_opc0=0x202/",
            // A sysfs alias of the instances.
            "uncore_imc/cas_count_read/",
            // RAPL and cstate PMUs: one PMU, its cpumask.
            "power/energy-pkg/",
            "power/energy-ram/",
            "cstate_core/c6-residency/",
            "unc_m_cas_count.rd,power/energy-pkg/",
        ],
    },
    Machine {
        cpuid: "AuthenticAMD-25-1-1",
        fixtures: &["amd-zen4", "amd-uncore"],
        newer_perf: false,
        compare_places: true,
        cases: &[
            "l3_comb_clstr_state.other_l3_miss_typs",
            "dram_channel_data_controller_0",
            "amd_l3/event=0x4,umask=0xff/",
            "amd_df/event=0x1f,umask=0x7fe/",
            "power/energy-pkg/",
        ],
    },
    Machine {
        cpuid: "AuthenticAMD-25-11-1",
        fixtures: &["amd-zen4", "amd-uncore"],
        newer_perf: true,
        compare_places: true,
        cases: &[
            // Zen 4's memory controllers: `amd_umc` in the table, `amd_umc_N` in sysfs.
            "umc_act_cmd.all",
            "l3_lookup_state.all_coherent_accesses_to_l3",
            "local_processor_read_data_beats_cs0",
            "amd_umc/event=0x5/",
        ],
    },
    Machine {
        // Alder Lake: `cpu_core` (type 4, CPU 0) and `cpu_atom` (type 10, CPU 1), found by
        // perf 6.12 under /sys/bus/event_source (perf 6.1 looks in /sys/devices instead).
        cpuid: "GenuineIntel-6-97-2",
        fixtures: &["intel-hybrid"],
        newer_perf: true,
        compare_places: false,
        cases: &[
            // On both core types, one event each.
            "br_misp_retired.all_branches",
            "br_misp_retired.all_branches:u",
            "mem_load_retired.l3_miss",
            "cpu_core/event=0xc0/",
            "cpu_atom/event=0xc0,umask=0x0/",
        ],
    },
];

/// The distinct attrs of an output, each as its compared fields, sorted.
fn attr_set(output: &str) -> BTreeSet<Vec<(String, String)>> {
    first_attrs(output, usize::MAX)
        .iter()
        .map(compared_fields)
        .collect()
}

/// The distinct (pid, cpu) of the opens an output shows.
fn open_places(output: &str) -> BTreeSet<(String, String)> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("sys_perf_event_open: pid "))
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            let pid = words.next()?.to_string();
            let cpu = (words.next()? == "cpu").then(|| words.next())??.to_string();
            Some((pid, cpu))
        })
        .collect()
}

/// Runs one machine's cases; returns every difference.
fn run_machine(m: &Machine, perf: &Path) -> (usize, Vec<String>) {
    let dir = common::scratch(&format!("attr-oracle-uncore-{}", m.cpuid));
    let cases: String = m.cases.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(dir.join("cases"), cases).unwrap();
    let fixtures: Vec<String> = m
        .fixtures
        .iter()
        .map(|f| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/pmu")
                .join(f)
                .display()
                .to_string()
        })
        .collect();
    let out = Command::new("unshare")
        .env("PERF", perf)
        .env("PERF_CPUID", m.cpuid)
        .args(["-m", "--propagation", "private", "sh"])
        .arg(oracle_dir().join("fake-pmu.sh"))
        .arg(fixtures.join(":"))
        .arg("sh")
        .arg(oracle_dir().join("run-stat-cases.sh"))
        .arg(dir.join("cases"))
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_culprit"))
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "{}: the faked namespace failed: {}",
        m.cpuid,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut diffs = Vec::new();
    let mut equal = 0;
    for (n, case) in m.cases.iter().enumerate() {
        let read = |tool: &str| std::fs::read_to_string(dir.join(format!("{n}.{tool}")));
        let (perf_out, ours) = (read("perf").unwrap(), read("culprit").unwrap());
        let (theirs, mine) = (attr_set(&perf_out), attr_set(&ours));
        let before = diffs.len();
        if theirs.is_empty() {
            diffs.push(format!("{} `{case}`: perf printed no attr", m.cpuid));
            continue;
        }
        for a in theirs.difference(&mine) {
            diffs.push(format!("{} `{case}`: only perf opens {a:?}", m.cpuid));
        }
        for a in mine.difference(&theirs) {
            diffs.push(format!("{} `{case}`: only culprit opens {a:?}", m.cpuid));
        }
        let (pp, cp) = (open_places(&perf_out), open_places(&ours));
        if m.compare_places && pp != cp {
            diffs.push(format!(
                "{} `{case}`: opens on (pid, cpu) perf {pp:?}, culprit {cp:?}",
                m.cpuid
            ));
        }
        equal += usize::from(diffs.len() == before);
    }
    (equal, diffs)
}

/// Compares every machine's cases; panics listing each difference.
pub fn check_uncore(test: &str) {
    if !oracle_can_run(test) {
        return;
    }
    let mut diffs = Vec::new();
    for m in MACHINES {
        let perf = if m.newer_perf {
            let perf = oracle_perf_6_12();
            let why = format!("{}: no perf 6.12 at {}", m.cpuid, perf.display());
            if !common::need(test, perf.exists(), &why) {
                continue;
            }
            perf
        } else {
            PathBuf::from("perf")
        };
        let (equal, d) = run_machine(m, &perf);
        eprintln!("{}: {} cases, {equal} equal", m.cpuid, m.cases.len());
        diffs.extend(d);
    }
    assert!(
        diffs.is_empty(),
        "{} difference(s) from perf:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
