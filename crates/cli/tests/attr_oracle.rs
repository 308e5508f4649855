//! perf as the oracle of culprit's perf_event_attrs, without the hardware.
//!
//! perf prints every attr with `-vv` before it tries to open it, so a PMU that exists only in
//! sysfs is enough: in a private mount namespace (`unshare -m`), `oracle/fake-pmu.sh` mounts a
//! tmpfs over `/sys/bus/event_source/devices`, links the real PMUs back and adds a model's
//! `cpu` PMU (and `ibs_op`/`ibs_fetch` on AMD) from `fixtures/pmu/MODEL`. For every event
//! spelling of `oracle/MODEL.events`, with each modifier and rate option listed there,
//! `oracle/run-both.sh` runs `perf record -vv` and `culprit record -vv`; this test then
//! compares the attrs they print field by field ([`COMPARED`]) and fails on a single
//! difference, listing each one.
//!
//! Adding events (e.g. every named event of a pmu-events table model) is adding lines to an
//! `.events` file, or a new `.events` file with its fixture directory: the harness does not
//! change.
//!
//! The namespace needs root (CAP_SYS_ADMIN): elsewhere the test skips loudly, and under `CI`
//! (which runs as root) it fails instead.

use crate::common;
#[path = "attr_oracle/tables.rs"]
mod tables;
#[path = "attr_oracle/uncore.rs"]
mod uncore;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The attr fields the oracle compares, as perf prints them. A field perf leaves out is 0.
/// `sample_type` is compared only in the bits an event spelling chooses (see
/// [`EVENT_SAMPLE_BITS`]): the rest is what every sample of a culprit recording carries.
const COMPARED: &[&str] = &[
    "type",
    "config",
    "{ bp_addr, config1 }",
    "{ bp_len, config2 }",
    "bp_type",
    "{ sample_period, sample_freq }",
    "freq",
    "precise_ip",
    "exclude_user",
    "exclude_kernel",
    "exclude_hv",
    "exclude_idle",
    "exclude_host",
    "exclude_guest",
    "pinned",
    "exclusive",
    "sample_type",
    "exclude_callchain_user",
    "sample_regs_user",
    "sample_stack_user",
];

/// The sample_type bits an event spelling decides (`:S` reads the group). Culprit always adds
/// IDENTIFIER, CPU and TIME, RAW for tracepoints and IBS, and the PEBS memory bits
/// for memory events (what perf adds with `--sample-cpu`, `-R` and `-d`); PERIOD follows
/// perf (only with a frequency) but is not compared.
const EVENT_SAMPLE_BITS: &[&str] = &[
    "READ",
    "BRANCH_STACK",
    "CALLCHAIN",
    "REGS_USER",
    "STACK_USER",
];

/// PMUs whose kernel driver refuses exclude_guest/exclude_host: perf sends them, gets EINVAL,
/// prints `switching off exclude_guest, exclude_host` and retries without; culprit never sends
/// them (record.rs). The comparison clears them on perf's side for these PMUs' types.
const NO_GUEST_FILTER_PMUS: &[&str] = &["ibs_op", "ibs_fetch"];

/// One model's input (`oracle/MODEL.events`).
struct Model {
    name: String,
    cpuid: String,
    /// The perf to compare with, as words (`perf arm64` in the file: perf 6.12 for arm64
    /// under qemu-user); `None`: the installed perf.
    perf: Option<Vec<String>>,
    fixture: PathBuf,
    cases: Vec<Case>,
}

/// One comparison: record options and an event spelling.
#[derive(Clone)]
struct Case {
    opts: String,
    event: String,
}

fn oracle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle")
}

/// `ev` with modifiers `m` appended as perf spells them (`-`: none).
fn with_modifiers(ev: &str, m: &str) -> String {
    if m == "-" {
        ev.to_string()
    } else if ev.ends_with('/') {
        format!("{ev}{m}")
    } else {
        format!("{ev}:{m}")
    }
}

/// Reads `oracle/NAME.events` (format in its header) into the cases to compare.
fn load_model(name: &str) -> Model {
    let path = oracle_dir().join(format!("{name}.events"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let (mut cpuid, mut pmus) = (String::new(), String::new());
    let mut perf = None;
    let mut modifiers: Vec<String> = vec!["-".into()];
    let mut rates: Vec<String> = Vec::new();
    let mut cases = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "cpuid" => cpuid = rest.trim().to_string(),
            "pmus" => pmus = rest.trim().to_string(),
            "perf" => {
                assert_eq!(rest.trim(), "arm64", "{path:?}: `perf` takes `arm64`");
                perf = Some(vec![
                    "qemu-aarch64".to_string(),
                    oracle_perf_arm64().display().to_string(),
                ]);
            }
            "modifiers" => modifiers = rest.split_whitespace().map(String::from).collect(),
            "rates" => rates = rest.split('|').map(|r| r.trim().to_string()).collect(),
            _ => {
                let (event, own) = match line.split_once(" | ") {
                    Some((e, m)) => (e.trim(), Some(m.split_whitespace().map(String::from))),
                    None => (line, None),
                };
                let mods: Vec<String> = own.map_or_else(|| modifiers.clone(), Iterator::collect);
                for m in &mods {
                    cases.push(Case {
                        opts: String::new(),
                        event: with_modifiers(event, m),
                    });
                }
                for r in &rates {
                    cases.push(Case {
                        opts: r.clone(),
                        event: event.to_string(),
                    });
                }
            }
        }
    }
    assert!(
        !cpuid.is_empty() && !pmus.is_empty(),
        "{path:?}: needs `cpuid` and `pmus`"
    );
    Model {
        name: name.to_string(),
        cpuid,
        perf,
        fixture: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pmu")
            .join(pmus),
        cases,
    }
}

/// The number of events a spelling opens: its commas outside `/…/`, plus one.
fn event_count(spelling: &str) -> usize {
    let mut inside = false;
    let mut n = 1;
    for c in spelling.chars() {
        match c {
            '/' => inside = !inside,
            ',' if !inside => n += 1,
            _ => {}
        }
    }
    n
}

/// One printed attr: field → value.
type AttrFields = BTreeMap<String, String>;

/// The attrs a `-vv` output shows for the first try of each event (a retry after perf's
/// `decreasing precise_ip`, `switching off …` or `fall back` notes is the same event again),
/// at most `n`.
fn first_attrs(output: &str, n: usize) -> Vec<AttrFields> {
    let mut attrs = Vec::new();
    let mut between = String::new();
    let mut current: Option<AttrFields> = None;
    for line in output.lines() {
        if line == "perf_event_attr:" {
            current = Some(AttrFields::new());
            continue;
        }
        if let Some(fields) = current.as_mut() {
            if line.starts_with("----") {
                let retry = ["decreasing precise_ip", "switching off", "fall back"]
                    .iter()
                    .any(|note| between.contains(note));
                let fields = current.take().unwrap_or_default();
                if !retry && attrs.len() < n {
                    attrs.push(fields);
                }
                between.clear();
            } else if let Some(rest) = line.strip_prefix("  ") {
                // `  name<spaces>value`: names may contain spaces (`{ a, b }`).
                let (name, value) = match rest.rfind("  ") {
                    Some(i) => (rest[..i].trim(), rest[i..].trim()),
                    None => (rest.trim(), ""),
                };
                fields.insert(name.to_string(), value.to_string());
            }
            continue;
        }
        if !line.starts_with("----") {
            between.push_str(line);
            between.push('\n');
        }
    }
    attrs
}

/// One compared field's value: sample_type reduced to [`EVENT_SAMPLE_BITS`], absent = 0.
fn field(attr: &AttrFields, name: &str) -> String {
    let v = attr.get(name).map(String::as_str).unwrap_or("0");
    // perf 6.12 names some values: `4 (cpu)`, `0x4043 (ls_dmnd_fills_from_sys.dram_io_far)`.
    let v = v.split_once(" (").map_or(v, |(number, _)| number);
    if name == "sample_type" {
        let kept: Vec<&str> = v
            .split('|')
            .filter(|b| EVENT_SAMPLE_BITS.contains(b))
            .collect();
        return if kept.is_empty() {
            "0".into()
        } else {
            kept.join("|")
        };
    }
    v.to_string()
}

/// The dynamic types of the PMUs in [`NO_GUEST_FILTER_PMUS`] in a fixture.
fn no_guest_filter_types(fixture: &Path) -> Vec<String> {
    NO_GUEST_FILTER_PMUS
        .iter()
        .filter_map(|p| std::fs::read_to_string(fixture.join(p).join("type")).ok())
        .map(|t| t.trim().to_string())
        .collect()
}

/// The differences of one case, as lines (empty: equal).
fn compare(case: &Case, perf: &str, ours: &str, no_guest_types: &[String]) -> Vec<String> {
    let n = event_count(&case.event);
    let theirs = first_attrs(perf, n);
    let mine = first_attrs(ours, n);
    let title = format!("`record {} -e {}`", case.opts, case.event);
    if theirs.len() != mine.len() {
        let last = |s: &str| {
            s.lines()
                .rev()
                .find(|l| !l.starts_with("  ") && !l.trim().is_empty())
                .unwrap_or("")
                .to_string()
        };
        return vec![format!(
            "{title}: perf shows {} attr(s), culprit {} (perf: {:?}; culprit: {:?})",
            theirs.len(),
            mine.len(),
            last(perf),
            last(ours)
        )];
    }
    let mut diffs = Vec::new();
    for (i, (t, m)) in theirs.iter().zip(&mine).enumerate() {
        let mut t = t.clone();
        if no_guest_types.contains(&field(&t, "type")) {
            t.remove("exclude_guest");
            t.remove("exclude_host");
        }
        for name in COMPARED {
            let (pv, cv) = (field(&t, name), field(m, name));
            if pv != cv {
                diffs.push(format!(
                    "{title} event {i}: {name}: perf {pv}, culprit {cv}"
                ));
            }
        }
    }
    diffs
}

/// Whether this process may make a private mount namespace and mount in it.
fn namespaces_allowed() -> Result<(), String> {
    let out = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "mount",
            "-t",
            "tmpfs",
            "probe",
        ])
        .arg(std::env::temp_dir())
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`unshare -m` + mount not permitted: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs every case of a model in its faked namespace; returns (case, perf's, culprit's
/// output).
fn run_model(model: &Model) -> Vec<(Case, String, String)> {
    let dir = common::scratch(&format!("attr-oracle-{}", model.name));
    let list: String = model
        .cases
        .iter()
        .map(|c| {
            let opts = if c.opts.is_empty() { "-" } else { &c.opts };
            format!("{opts}\t{}\n", c.event)
        })
        .collect();
    let cases_file = dir.join("cases.tsv");
    std::fs::write(&cases_file, list).unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh"])
        .arg(oracle_dir().join("fake-pmu.sh"))
        .arg(&model.fixture)
        .arg("sh")
        .arg(oracle_dir().join("run-both.sh"))
        .arg(&cases_file)
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_culprit"))
        .env("PERF_CPUID", &model.cpuid)
        .env(
            "PERF",
            model
                .perf
                .as_ref()
                .map_or("perf".to_string(), |w| w.join(" ")),
        )
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "{}: the faked namespace failed: {}",
        model.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |i: usize, tool: &str| {
        std::fs::read_to_string(dir.join(format!("{i}.{tool}"))).unwrap_or_default()
    };
    model
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.clone(), read(i, "perf"), read(i, "culprit")))
        .collect()
}

/// Whether an oracle test can run here: perf is installed and a private mount namespace
/// can be made (root). Elsewhere it skips loudly; under CI (root) it fails instead.
fn oracle_can_run(test: &str) -> bool {
    if !common::require_perf(test) {
        return false;
    }
    match namespaces_allowed() {
        Ok(()) => true,
        Err(why) => common::require_tool(test, &why),
    }
}

/// perf 6.12, built from the kernel tree of culprit's tables by scripts/oracle-perf.sh
/// (which scripts/test.sh runs) into target/oracle-perf/perf.
fn oracle_perf_6_12() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/oracle-perf/perf")
}

/// perf 6.12 for arm64 (static), built by scripts/oracle-perf.sh where the aarch64 cross
/// compiler is installed; it runs under qemu-user.
fn oracle_perf_arm64() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/oracle-perf/perf-arm64")
}

/// Whether the arm64 oracle can run: qemu-user and the arm64 perf are there. Elsewhere it
/// skips loudly; under CI (which installs both) it fails instead.
fn arm64_oracle_can_run(test: &str) -> bool {
    let qemu = common::runs("qemu-aarch64", &["--version"]);
    common::need(test, qemu, "no qemu-aarch64 (Debian qemu-user)")
        && common::need(
            test,
            oracle_perf_arm64().exists(),
            "no target/oracle-perf/perf-arm64 (scripts/oracle-perf.sh builds it with gcc-aarch64-linux-gnu)",
        )
}

/// An attr as its [`COMPARED`] fields, in order: what two attrs are equal by.
fn compared_fields(a: &AttrFields) -> Vec<(String, String)> {
    COMPARED
        .iter()
        .map(|f| (f.to_string(), field(a, f)))
        .collect()
}

/// Compares every case of the models; panics with every difference.
fn check_models(test: &str, names: &[&str]) {
    if !oracle_can_run(test) {
        return;
    }
    let models: Vec<Model> = names.iter().map(|n| load_model(n)).collect();
    let results: Vec<Vec<(Case, String, String)>> = std::thread::scope(|s| {
        let handles: Vec<_> = models.iter().map(|m| s.spawn(|| run_model(m))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut report = Vec::new();
    let mut diffs = Vec::new();
    for (model, results) in models.iter().zip(&results) {
        let no_guest = no_guest_filter_types(&model.fixture);
        let mut equal = 0;
        let mut perf_attrs = 0;
        for (case, perf, ours) in results {
            let d = compare(case, perf, ours, &no_guest);
            perf_attrs += usize::from(!first_attrs(perf, 1).is_empty());
            if d.is_empty() {
                equal += 1;
            }
            diffs.extend(d.into_iter().map(|l| format!("{}: {l}", model.name)));
        }
        report.push(format!(
            "{}: {} cases ({} where perf printed an attr), {} equal",
            model.name,
            results.len(),
            perf_attrs,
            equal
        ));
        // The oracle must have been consulted: perf printing nothing means a broken setup.
        assert!(
            perf_attrs * 2 > results.len(),
            "{}: perf printed attrs for only {perf_attrs} of {} cases: is the fake PMU seen?",
            model.name,
            results.len()
        );
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        diffs.is_empty(),
        "{} difference(s) between perf's and culprit's attrs:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn test_attrs_equal_perf_on_faked_intel_and_amd_pmus() {
    check_models(
        "test_attrs_equal_perf_on_faked_intel_and_amd_pmus",
        &["intel-skylake", "amd-zen4"],
    );
}

/// ARM: the armv8_pmuv3 PMU of a Neoverse N1 (generic, sysfs, raw and table events) against
/// perf 6.12 for arm64.
#[test]
fn test_attrs_equal_arm64_perf_on_a_faked_armv8_pmu() {
    let test = "test_attrs_equal_arm64_perf_on_a_faked_armv8_pmu";
    if arm64_oracle_can_run(test) {
        check_models(test, &["arm-neoverse-n1"]);
    }
}

/// The table models of one test part: a slice of [`tables::MODELS`] by table name.
fn table_models(range: std::ops::Range<usize>) -> Vec<&'static str> {
    tables::MODELS[range].iter().map(|m| m.1).collect()
}

#[test]
fn test_every_table_event_equals_perf_part1_old_intel() {
    let models = table_models(0..8);
    tables::check_tables(
        "test_every_table_event_equals_perf_part1_old_intel",
        &models,
    );
}

#[test]
fn test_every_table_event_equals_perf_part2_intel() {
    let models = table_models(8..16);
    tables::check_tables("test_every_table_event_equals_perf_part2_intel", &models);
}

#[test]
fn test_every_table_event_equals_perf_part3_new_intel() {
    let models = table_models(16..28);
    tables::check_tables(
        "test_every_table_event_equals_perf_part3_new_intel",
        &models,
    );
}

#[test]
fn test_every_table_event_equals_perf_part4_amd() {
    let models = table_models(28..tables::MODELS.len());
    tables::check_tables("test_every_table_event_equals_perf_part4_amd", &models);
}

#[test]
fn test_uncore_rapl_and_cstate_events_equal_perf() {
    uncore::check_uncore("test_uncore_rapl_and_cstate_events_equal_perf");
}

#[test]
fn test_every_newer_table_event_equals_perf_6_12() {
    tables::check_newer_tables("test_every_newer_table_event_equals_perf_6_12");
}

#[test]
fn test_oracle_parses_perf_vv_blocks() {
    // A `:P` retry and perf's cycles → cpu-clock fallback are not new events.
    let out = "\
------------------------------------------------------------
perf_event_attr:
  type                             4
  { sample_period, sample_freq }   4000
  precise_ip                       3
------------------------------------------------------------
sys_perf_event_open: pid 1  cpu 0  group_fd -1  flags 0x8
sys_perf_event_open failed, error -2
decreasing precise_ip by one (2)
------------------------------------------------------------
perf_event_attr:
  type                             4
  precise_ip                       2
------------------------------------------------------------
";
    let attrs = first_attrs(out, 2);
    assert_eq!(attrs.len(), 1);
    assert_eq!(field(&attrs[0], "precise_ip"), "3");
    assert_eq!(field(&attrs[0], "{ sample_period, sample_freq }"), "4000");
    assert_eq!(field(&attrs[0], "exclude_user"), "0");
    assert_eq!(event_count("{cpu-clock,cpu/event=1,umask=2/}:S"), 2);
    let case = Case {
        opts: String::new(),
        event: "cycles:P".into(),
    };
    let other = out.replace(
        "precise_ip                       3",
        "precise_ip                       1",
    );
    let d = compare(&case, out, &other, &[]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].contains("precise_ip: perf 3, culprit 1"), "{d:?}");
}
