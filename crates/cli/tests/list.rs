//! `culprit list`: JSON structure and facts that hold on any Linux machine (checked against
//! /proc and /sys directly), text sections, the filter, and the hardware-only parts gated on
//! a usable PMU.

mod common;

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
        "catalog",
        "notes",
    ] {
        assert!(v.get(key).is_some(), "missing key {key} in {v}");
    }
    assert_eq!(v["schema"], 1);
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
        // The catalog covers Zen 4 (0x19, some models) and Zen 5 (0x1A) only.
        if vendor != "AuthenticAMD" || fam < 0x19 {
            assert!(v["catalog"]["generation"].is_null());
            assert_eq!(v["catalog"]["events"].as_array().unwrap().len(), 0);
        }
        if fam == 0x1A {
            assert_eq!(v["catalog"]["generation"], "zen5");
            let names: Vec<&str> = v["catalog"]["events"]
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
        "\nCatalog events (",
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
