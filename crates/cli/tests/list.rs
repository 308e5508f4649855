//! `culprit list`: JSON structure and facts that hold on any Linux machine (checked against
//! /proc and /sys directly), text sections, the filter, and the hardware-only parts gated on
//! a usable PMU.

use crate::common;

use std::path::Path;

use serde_json::Value;

fn list_json(extra: &[&str]) -> Value {
    let _lock = common::pmu_lock();
    let out = common::run_ok(
        common::culprit()
            .args(["list", "--format", "json"])
            .args(extra),
    );
    serde_json::from_slice(&out.stdout).expect("culprit list --format json prints one JSON object")
}

fn read_trim(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

const IBS_SENTENCE: &str = "IBS: not available (no ibs_op/ibs_fetch PMU) — precise attribution is not possible here; culprit annotate estimates skid instead (labelled)";

#[test]
fn test_list_json_top_level_structure() {
    let v = list_json(&[]);
    for key in [
        "schema",
        "cpu",
        "virtualization",
        "hardware_pmu",
        "perf_event_paranoid",
        "perf_event_max_sample_rate",
        "nmi_watchdog",
        "capabilities",
        "pmus",
        "events",
        "table",
        "notes",
    ] {
        assert!(v.get(key).is_some(), "missing key {key} in {v}");
    }
    assert_eq!(v["schema"], 3);
    let caps = &v["capabilities"];
    for key in [
        "max_precise",
        "precise_ip_max",
        "precise_ip_why",
        "ibs_op",
        "ibs_fetch",
        "branch_stack",
        "counters",
    ] {
        assert!(caps.get(key).is_some(), "missing capabilities.{key}");
    }
    assert!(caps["counters"]["usable"].is_u64());
    assert!(caps["counters"]["tried"].is_array());
    assert!(caps["branch_stack"]["available"].is_boolean());
    assert!(v["notes"].as_array().unwrap().iter().all(Value::is_string));
}

#[test]
fn test_list_json_sysctls_match_proc() {
    let v = list_json(&[]);
    let paranoid: i64 = read_trim("/proc/sys/kernel/perf_event_paranoid")
        .parse()
        .unwrap();
    assert_eq!(v["perf_event_paranoid"].as_i64(), Some(paranoid));
    let rate: u64 = read_trim("/proc/sys/kernel/perf_event_max_sample_rate")
        .parse()
        .unwrap();
    assert_eq!(v["perf_event_max_sample_rate"].as_u64(), Some(rate));
    if let Ok(w) = std::fs::read_to_string("/proc/sys/kernel/nmi_watchdog") {
        assert_eq!(v["nmi_watchdog"].as_bool(), Some(w.trim() != "0"));
    }
}

#[test]
fn test_list_json_pmus_match_sysfs() {
    let v = list_json(&[]);
    let pmus = v["pmus"].as_array().unwrap();
    let devices = Path::new("/sys/bus/event_source/devices");
    let mut want: Vec<String> = std::fs::read_dir(devices)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("type").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    want.sort();
    let got: Vec<&str> = pmus.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(got, want);
    for p in pmus {
        let name = p["name"].as_str().unwrap();
        let ty: u64 = read_trim(devices.join(name).join("type")).parse().unwrap();
        assert_eq!(p["type"].as_u64(), Some(ty), "type of {name}");
        for f in p["formats"].as_array().unwrap() {
            let fname = f["name"].as_str().unwrap();
            let content = read_trim(devices.join(name).join("format").join(fname));
            assert_eq!(
                f["spec"].as_str(),
                Some(content.as_str()),
                "{name}/format/{fname}"
            );
        }
    }
    // The software PMU exists on every Linux kernel, with PERF_TYPE_SOFTWARE.
    let sw = pmus
        .iter()
        .find(|p| p["name"] == "software")
        .expect("software PMU");
    assert_eq!(sw["type"], 1);
}

#[test]
fn test_list_json_events_and_probes() {
    let v = list_json(&[]);
    let events = v["events"].as_array().unwrap();
    let find = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("event {name} listed"))
    };
    for name in ["cycles", "instructions", "branch-misses", "ref-cycles"] {
        assert_eq!(find(name)["kind"], "hardware");
        assert_eq!(find(name)["type"], 0);
    }
    assert_eq!(find("cycles")["aliases"][0], "cpu-cycles");
    for name in ["cpu-clock", "task-clock", "page-faults", "context-switches"] {
        let e = find(name);
        assert_eq!(e["kind"], "software");
        assert_eq!(e["type"], 1);
        // Software events open everywhere.
        assert_eq!(e["opens"], true, "{e}");
        assert!(e["error"].is_null());
    }
    let l1 = find("L1-dcache-load-misses");
    assert_eq!(
        (l1["type"].as_u64(), l1["config"].as_u64()),
        (Some(3), Some(0x10000))
    );
    // Hardware events open exactly when the hardware PMU is usable.
    let hw = common::hardware_pmu();
    assert_eq!(v["hardware_pmu"], hw);
    assert_eq!(find("instructions")["opens"], hw);
}

#[test]
fn test_list_json_ibs_and_notes_consistent_with_sysfs() {
    let v = list_json(&[]);
    let devices = Path::new("/sys/bus/event_source/devices");
    let has_ibs_op = devices.join("ibs_op/type").is_file();
    assert_eq!(v["capabilities"]["ibs_op"]["present"], has_ibs_op);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let no_ibs = !has_ibs_op && !devices.join("ibs_fetch/type").is_file();
    assert_eq!(notes.contains(&IBS_SENTENCE), no_ibs, "{notes:?}");
    if !common::hardware_pmu() {
        assert_eq!(v["capabilities"]["counters"]["usable"], 0);
        if !devices.join("cpu").exists() {
            assert_eq!(v["capabilities"]["precise_ip_max"], 0);
        }
        assert!(
            notes
                .iter()
                .any(|n| n.contains("only software events work here")
                    && n.contains("-cpu host,pmu=on")),
            "{notes:?}"
        );
    }
    match std::fs::read_to_string(devices.join("cpu/caps/max_precise")) {
        Ok(s) => assert_eq!(
            v["capabilities"]["max_precise"].as_u64(),
            Some(s.trim().parse().unwrap())
        ),
        Err(_) => assert!(v["capabilities"]["max_precise"].is_null()),
    }
}

#[test]
fn test_list_json_cpu_matches_cpuinfo() {
    let v = list_json(&[]);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let field = |key: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    if let (Some(vendor), Some(family)) = (field("vendor_id"), field("cpu family")) {
        assert_eq!(v["cpu"]["vendor"].as_str(), Some(vendor.as_str()));
        assert_eq!(v["cpu"]["family"].as_u64(), family.parse().ok());
        let fam: u64 = family.parse().unwrap();
        // perf's mapfile has a row for every AMD family from 0x17 (Zen 1-5).
        if vendor == "AuthenticAMD" && fam >= 0x17 {
            assert!(v["table"]["model"]
                .as_str()
                .unwrap()
                .starts_with("x86/amdzen"));
            assert_eq!(v["table"]["cpuid_source"], "cpuinfo");
        }
        if vendor == "AuthenticAMD" && fam == 0x1A {
            assert_eq!(v["table"]["model"], "x86/amdzen5");
            let names: Vec<&str> = v["table"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap())
                .collect();
            assert!(names.contains(&"bp_redirects.resync"));
            assert!(!names.contains(&"resyncs_or_nc_redirects"));
        }
    }
}

#[test]
fn test_list_filter_restricts_events() {
    let v = list_json(&["clock"]);
    let names: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cpu-clock", "task-clock"]);
}

#[test]
fn test_list_text_sections() {
    let _lock = common::pmu_lock();
    let out = common::run_ok(common::culprit().arg("list"));
    let text = String::from_utf8(out.stdout).unwrap();
    for section in [
        "System\n",
        "\nCapabilities\n",
        "\nPMUs (sysfs)\n",
        "\nSoftware events\n",
        "\nEvent table ",
    ] {
        assert!(text.contains(section), "missing {section:?} in\n{text}");
    }
    assert!(text.contains("  cpu-clock "), "{text}");
    let no_ibs = !Path::new("/sys/bus/event_source/devices/ibs_op").exists()
        && !Path::new("/sys/bus/event_source/devices/ibs_fetch").exists();
    // Notes wrap to the width: compare with whitespace runs as one blank.
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(flat(&text).contains(&flat(IBS_SENTENCE)), no_ibs, "{text}");
    assert!(
        text.lines().all(|l| l.chars().count() <= 80),
        "list text wider than 80 columns:\n{text}"
    );
}

#[test]
fn test_list_rejects_bad_format() {
    let out = common::culprit()
        .args(["list", "--format", "yaml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("yaml"), "{err}");
}

#[test]
fn test_list_hardware_counters_usable() {
    if !common::require_hardware_pmu("test_list_hardware_counters_usable") {
        return;
    }
    let v = list_json(&[]);
    let counters = &v["capabilities"]["counters"];
    let usable = counters["usable"].as_u64().unwrap();
    assert!((1..=8).contains(&usable), "{counters}");
    // Every group up to `usable` counted on every member.
    for t in counters["tried"].as_array().unwrap() {
        let n = t["n"].as_u64().unwrap();
        if n <= usable {
            let counts = t["counts"].as_array().unwrap();
            assert_eq!(counts.len() as u64, n);
            assert!(counts.iter().all(|c| c.as_u64().unwrap() > 0), "{t}");
        }
    }
    let events = v["events"].as_array().unwrap();
    let cycles = events.iter().find(|e| e["name"] == "cycles").unwrap();
    assert_eq!(cycles["opens"], true);
}

#[test]
fn test_list_json_validates_against_schema() {
    let _lock = common::pmu_lock();
    let out = common::run_ok(common::culprit().args(["list", "--format", "json"]));
    let text = String::from_utf8(out.stdout).unwrap();
    common::validate_json_schema("list", &text);
    // list has no CSV.
    let o = common::culprit()
        .args(["list", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no --format csv"));
}

/// `PERF_CPUID` picks another CPU's perf table, as it does for perf: the listing says which
/// mapfile row matched and names every non-deprecated event of that model's JSON (counts
/// taken from the kernel 6.12 JSON files: EventName/ArchStdEvent entries without
/// `"Deprecated": "1"`; Alder Lake lists its events once per core PMU).
#[test]
fn test_list_perf_cpuid_names_each_models_events() {
    // (CPU id, table, mapfile row, event count, (an event, its PMU, its terms)).
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        usize,
        (&'a str, &'a str, &'a str),
    );
    let models: [Case; 8] = [
        (
            "GenuineIntel-6-55-4",
            "x86/skylakex",
            "GenuineIntel-6-55-[01234],v1.35,skylakex,core",
            3006,
            (
                "mem_load_retired.l3_miss",
                "cpu",
                "event=0xd1,period=100007,umask=0x20",
            ),
        ),
        (
            "GenuineIntel-6-6A-6",
            "x86/icelakex",
            "GenuineIntel-6-6[AC],v1.26,icelakex,core",
            4282,
            (
                "mem_trans_retired.load_latency_gt_128",
                "cpu",
                "event=0xcd,period=1009,umask=1,ldlat=0x80",
            ),
        ),
        (
            "GenuineIntel-6-8F-8",
            "x86/sapphirerapids",
            "GenuineIntel-6-8F,v1.23,sapphirerapids,core",
            2655,
            ("unc_m_cas_count.rd", "uncore_imc", "event=5,umask=0xcf"),
        ),
        (
            "GenuineIntel-6-97-2",
            "x86/alderlake",
            "GenuineIntel-6-(97|9A|B7|BA|BF),v1.27,alderlake,core",
            461,
            (
                "mem_load_retired.l3_miss",
                "cpu_core",
                "event=0xd1,period=50021,umask=0x20",
            ),
        ),
        (
            "AuthenticAMD-23-31-0",
            "x86/amdzen2",
            "AuthenticAMD-23-[[:xdigit:]]+,v1,amdzen2,core",
            219,
            ("ex_ret_instr", "cpu", "event=0xc0"),
        ),
        (
            "AuthenticAMD-25-1-1",
            "x86/amdzen3",
            "AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),v1,amdzen3,core",
            243,
            (
                "ls_dmnd_fills_from_sys.mem_io_local",
                "cpu",
                "event=0x43,umask=8",
            ),
        ),
        (
            "AuthenticAMD-25-11-1",
            "x86/amdzen4",
            "AuthenticAMD-25-[[:xdigit:]]+,v1,amdzen4,core",
            502,
            (
                "de_no_dispatch_per_slot.backend_stalls",
                "cpu",
                "event=0x1a0,umask=0x1e",
            ),
        ),
        (
            "0x00000000413fd0c1",
            "arm64/arm/neoverse-n1",
            "0x00000000410fd0c0,v1,arm/neoverse-n1,core",
            109,
            ("l1d_cache_refill", "armv8_pmuv3", "event=3"),
        ),
    ];
    for (cpuid, model, row, count, (name, pmu, terms)) in models {
        let out = common::run_ok(
            common::culprit()
                .args(["list", "--format", "json"])
                .env("PERF_CPUID", cpuid),
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = &v["table"];
        assert_eq!(t["cpuid"], cpuid);
        assert_eq!(t["cpuid_source"], "perf_cpuid_env");
        assert_eq!(t["model"], model, "{cpuid}");
        assert_eq!(t["mapfile_row"], row, "{cpuid}");
        let events = t["events"].as_array().unwrap();
        let current = events.iter().filter(|e| e["deprecated"] == false).count();
        assert_eq!(current, count, "{model}");
        let e = events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{model}: no {name}"));
        assert_eq!(
            (e["pmu"].as_str(), e["terms"].as_str()),
            (Some(pmu), Some(terms)),
            "{model}"
        );
        assert!(!e["topic"].as_str().unwrap().is_empty());
    }
}

/// Events the newer table deprecates are still listed (perf 6.1 listed them as current and
/// culprit opens them): in JSON with `deprecated`, in text by name at the end. Snow Ridge's
/// 6.12 table deprecates 28, among them `bus_lock.all` and `ocr.demand_data_rd.l3_miss`.
#[test]
fn test_list_names_deprecated_events_apart() {
    let out = common::run_ok(
        common::culprit()
            .args(["list", "--format", "json"])
            .env("PERF_CPUID", "GenuineIntel-6-86"),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = v["table"]["events"].as_array().unwrap();
    let deprecated: Vec<&str> = events
        .iter()
        .filter(|e| e["deprecated"] == true)
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(deprecated.len(), 28, "{deprecated:?}");
    assert!(deprecated.contains(&"bus_lock.all"), "{deprecated:?}");
    let out = common::run_ok(
        common::culprit()
            .args(["list", "bus_lock"])
            .env("PERF_CPUID", "GenuineIntel-6-86"),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (current, old) = text
        .split_once("\ndeprecated (still accepted")
        .unwrap_or_else(|| panic!("no deprecated section: {text}"));
    assert!(current.contains("\n  bus_lock.self_locks\n"), "{text}");
    assert!(!current.contains("bus_lock.all"), "{text}");
    assert!(old.contains(" bus_lock.all"), "{text}");
    // A table without deprecated events has no such section.
    let out = common::run_ok(
        common::culprit()
            .args(["list", "ex_ret"])
            .env("PERF_CPUID", "AuthenticAMD-25-11-1"),
    );
    assert!(!String::from_utf8(out.stdout)
        .unwrap()
        .contains("\ndeprecated ("));
}

/// The text listing groups the table by topic and says why the table was chosen; a CPU id
/// that matches no row says so.
#[test]
fn test_list_text_names_the_table_and_why() {
    let out = common::run_ok(
        common::culprit()
            .args(["list", "mem_load_retired.l3"])
            .env("PERF_CPUID", "GenuineIntel-6-55-4"),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The heading wraps to the width: compare with whitespace runs as one blank.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Event table x86/skylakex: CPU id GenuineIntel-6-55-4 (from PERF_CPUID) matches mapfile.csv row `GenuineIntel-6-55-[01234],v1.35,skylakex,core`"), "{text}");
    assert!(
        text.contains("\ncache:\n  mem_load_retired.l3_hit\n       [Retired load instructions with L3 cache hits"),
        "{text}"
    );
    assert!(text.contains("\n  mem_load_retired.l3_miss\n"), "{text}");
    let out = common::run_ok(
        common::culprit()
            .args(["list", "--format", "json", "zzzz"])
            .env("PERF_CPUID", "NoSuchVendor-1-2-3"),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["table"]["model"].is_null());
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("no mapfile.csv row matches CPU id NoSuchVendor-1-2-3")),
        "{notes:?}"
    );
}
