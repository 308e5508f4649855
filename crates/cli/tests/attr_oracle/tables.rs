//! Every named event of every model in perf 6.1's pmu-events tables, compared with perf.
//!
//! perf 6.1 knows 33 x86 tables (its mapfile rows; one PERF_CPUID of each is in [`MODELS`]).
//! For each, `oracle/run-tables.sh` asks perf itself for the model's events (`perf list
//! --raw-dump pmu` with and without the table), then runs `perf stat -vv` and `culprit stat
//! -vv` over all of them, bare and with each of [`MODIFIERS`], in batches. The attrs are
//! compared field by field ([`super::COMPARED`]): a single difference fails the test, and
//! every difference is listed. The same run measures `culprit list`: the share of perf's
//! events its table names, at least [`MIN_LIST_COVERAGE`] per model.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use super::{
    common, compared_fields, field, first_attrs, oracle_can_run, oracle_dir, oracle_perf_6_12,
    AttrFields, COMPARED,
};

/// The modifiers every event is also tried with (the issue's `u`, `k`, `p`, `pp`, `P`).
const MODIFIERS: &[&str] = &["u", "k", "p", "pp", "P"];

/// Spellings per `stat -e` run: large enough to be quick, small enough for one command line.
const BATCH: usize = 500;

/// The least share of perf's events `culprit list` must name on each model.
const MIN_LIST_COVERAGE: f64 = 0.95;

/// Where culprit's tables (kernel 6.12's JSON) differ from perf 6.1's on purpose: the kernel
/// corrected the event since 6.1. Each is (table, event, field, perf 6.1's value, culprit's
/// value): exactly this difference is accepted, and counted as `revised`. Each was checked
/// in both trees' JSON (Debian linux-source-6.1 6.1.192-2 and linux-source-6.12
/// 6.12.117-1~deb12u1, `tools/perf/pmu-events/arch/x86/TABLE/*.json`).
const TABLE_REVISIONS: &[(&str, &str, &str, &str, &str)] = &[
    // 6.1: CounterMask 10; 6.12: 16, matching its description "uops_ret < 16".
    (
        "broadwell",
        "uops_retired.total_cycles",
        "config",
        "0xa8001c2",
        "0x108001c2",
    ),
    (
        "broadwellde",
        "uops_retired.total_cycles",
        "config",
        "0xa8001c2",
        "0x108001c2",
    ),
    // 6.1: UMask 0x4N/0x50; 6.12: 0xcN/0xd0 (bit 7, demand-and-prefetch hits, as
    // broadwell's and broadwellx's tables already had).
    (
        "broadwellde",
        "l2_rqsts.code_rd_hit",
        "config",
        "0x4424",
        "0xc424",
    ),
    (
        "broadwellde",
        "l2_rqsts.demand_data_rd_hit",
        "config",
        "0x4124",
        "0xc124",
    ),
    (
        "broadwellde",
        "l2_rqsts.l2_pf_hit",
        "config",
        "0x5024",
        "0xd024",
    ),
    (
        "broadwellde",
        "l2_rqsts.rfo_hit",
        "config",
        "0x4224",
        "0xc224",
    ),
    // 6.1: no CounterMask; 6.12: CounterMask 1 (cycles the divider is active).
    (
        "sapphirerapids",
        "arith.idiv_active",
        "config",
        "0x8b0",
        "0x10008b0",
    ),
];

/// perf 6.1's x86 mapfile rows as (a PERF_CPUID of the row, the table's name, the fake PMU
/// family in `fixtures/pmu`). The sysfs `cpu` PMU is the same for every Intel core before the
/// hybrid parts (the 6.1 kernel's format terms); AMD Zen 1–3 share Zen 4's `cpu` format.
/// Hybrid Alder/Meteor Lake are not here: perf 6.1 finds hybrid PMUs under /sys/devices,
/// which a mount namespace cannot fake (docs/events.md).
pub const MODELS: &[(&str, &str, &str)] = &[
    ("GenuineIntel-6-1C", "bonnell", "intel-skylake"),
    ("GenuineIntel-6-1A", "nehalemep", "intel-skylake"),
    ("GenuineIntel-6-25", "westmereep-sp", "intel-skylake"),
    ("GenuineIntel-6-2A", "sandybridge", "intel-skylake"),
    ("GenuineIntel-6-2C", "westmereep-dp", "intel-skylake"),
    ("GenuineIntel-6-2D", "jaketown", "intel-skylake"),
    ("GenuineIntel-6-2E", "nehalemex", "intel-skylake"),
    ("GenuineIntel-6-2F", "westmereex", "intel-skylake"),
    ("GenuineIntel-6-37", "silvermont", "intel-skylake"),
    ("GenuineIntel-6-3A", "ivybridge", "intel-skylake"),
    ("GenuineIntel-6-3C", "haswell", "intel-skylake"),
    ("GenuineIntel-6-3D", "broadwell", "intel-skylake"),
    ("GenuineIntel-6-3E", "ivytown", "intel-skylake"),
    ("GenuineIntel-6-3F", "haswellx", "intel-skylake"),
    ("GenuineIntel-6-4F", "broadwellx", "intel-skylake"),
    ("GenuineIntel-6-55-4", "skylakex", "intel-skylake"),
    ("GenuineIntel-6-55-7", "cascadelakex", "intel-skylake"),
    ("GenuineIntel-6-56", "broadwellde", "intel-skylake"),
    ("GenuineIntel-6-57", "knightslanding", "intel-skylake"),
    ("GenuineIntel-6-5C", "goldmont", "intel-skylake"),
    ("GenuineIntel-6-5E", "skylake", "intel-skylake"),
    ("GenuineIntel-6-6A", "icelakex", "intel-skylake"),
    ("GenuineIntel-6-7A", "goldmontplus", "intel-skylake"),
    ("GenuineIntel-6-7E", "icelake", "intel-skylake"),
    ("GenuineIntel-6-86", "snowridgex", "intel-skylake"),
    ("GenuineIntel-6-8C", "tigerlake", "intel-skylake"),
    ("GenuineIntel-6-8F", "sapphirerapids", "intel-skylake"),
    ("GenuineIntel-6-96", "elkhartlake", "intel-skylake"),
    ("AuthenticAMD-23-1", "amdzen1", "amd-zen4"),
    ("AuthenticAMD-23-31", "amdzen2", "amd-zen4"),
    ("AuthenticAMD-25-1", "amdzen3", "amd-zen4"),
];

/// kernel 6.12's x86 mapfile rows perf 6.1 has no table for, compared with perf 6.12 built
/// from the same tree as culprit's tables (scripts/oracle-perf.sh), in the same form as
/// [`MODELS`]. The hybrid ones (Alder, Meteor and Lunar Lake) need `cpu_core`/`cpu_atom`
/// fixtures and are not here yet (docs/events.md).
pub const NEWER_MODELS: &[(&str, &str, &str)] = &[
    ("GenuineIntel-6-A7", "rocketlake", "intel-skylake"),
    ("GenuineIntel-6-AD", "graniterapids", "intel-skylake"),
    ("GenuineIntel-6-AF", "sierraforest", "intel-skylake"),
    ("GenuineIntel-6-B6", "grandridge", "intel-skylake"),
    ("GenuineIntel-6-BE", "alderlaken", "intel-skylake"),
    ("GenuineIntel-6-CF", "emeraldrapids", "intel-skylake"),
    ("AuthenticAMD-25-11-1", "amdzen4", "amd-zen4"),
    ("AuthenticAMD-26-2-1", "amdzen5", "amd-zen4"),
];

/// Which perf is the oracle: perf 6.1 (the system's, where culprit's newer tables may differ
/// by a listed revision or a dropped event) or perf 6.12 (same tables: nothing may differ).
#[derive(Clone, Copy, PartialEq)]
enum Oracle {
    Perf61,
    Perf612,
    /// perf 6.12 on a faked hybrid CPU: batches compared as multisets.
    Perf612Hybrid,
}

/// Hybrid Intel models of kernel 6.12's mapfile, compared with perf 6.12 on a faked
/// `cpu_core` (CPU 0) + `cpu_atom` (CPU 1) pair (perf 6.12 finds them under
/// /sys/bus/event_source; perf 6.1 looks in /sys/devices, which a namespace cannot fake).
pub const HYBRID_MODELS: &[(&str, &str, &str)] = &[
    ("GenuineIntel-6-97-2", "alderlake", "intel-hybrid"),
    ("GenuineIntel-6-AA-4", "meteorlake", "intel-hybrid"),
    ("GenuineIntel-6-BD-1", "lunarlake", "intel-hybrid"),
];

/// One model's outcome.
#[derive(Default)]
pub struct ModelResult {
    /// The table's name.
    pub name: String,
    /// Events perf names for the model.
    pub events: usize,
    /// Spellings compared (events × (1 + modifiers)).
    pub compared: usize,
    /// Spellings whose attrs are equal.
    pub equal: usize,
    /// Spellings that differ only by a [`TABLE_REVISIONS`] entry.
    pub revised: usize,
    /// Spellings of events perf 6.1's table has and culprit's newer one dropped (culprit
    /// refuses them as unknown, and its `culprit list` does not name them).
    pub dropped: usize,
    /// perf's events `culprit list` names.
    pub listed: usize,
    /// Every difference, one line each.
    pub diffs: Vec<String>,
}

/// culprit's attr per spelling, or why it printed none: the batch's output is a series of
/// runs, each under an `oracle-cases: COUNT` line and covering the next COUNT spellings.
fn culprit_attrs(output: &str, spellings: &[String]) -> Vec<Result<AttrFields, String>> {
    let mut result = Vec::with_capacity(spellings.len());
    for section in output.split("oracle-cases: ").skip(1) {
        let (count, body) = section.split_once('\n').unwrap_or((section, ""));
        let count: usize = count.trim().parse().unwrap_or(0);
        let attrs = first_attrs(body, count);
        let why = body
            .lines()
            .find(|l| l.starts_with("culprit: error"))
            .unwrap_or("culprit printed no attr");
        for i in 0..count {
            result.push(attrs.get(i).cloned().ok_or_else(|| why.to_string()));
        }
    }
    result.resize(
        spellings.len(),
        Err("no culprit run covered it".to_string()),
    );
    result
}

/// Whether culprit refused an event as one it does not know (perf 6.1's table has it, the
/// newer table culprit ships does not).
fn dropped_by_newer_table(why: &str) -> bool {
    why.contains("unknown event") || why.contains("is not an event of this CPU")
}

/// The differences of one attr pair, as `field: perf X, culprit Y`, and whether there were
/// only [`TABLE_REVISIONS`] ones (then they are not listed).
fn attr_diffs(
    model: &str,
    spelling: &str,
    perf: &AttrFields,
    ours: &AttrFields,
    accept_revisions: bool,
) -> (Vec<String>, bool) {
    let event = spelling.split(':').next().unwrap_or(spelling);
    let mut revised = false;
    let diffs = COMPARED
        .iter()
        .filter_map(|name| {
            let (pv, cv) = (field(perf, name), field(ours, name));
            if pv == cv {
                return None;
            }
            if accept_revisions
                && TABLE_REVISIONS.contains(&(model, event, name, pv.as_str(), cv.as_str()))
            {
                revised = true;
                return None;
            }
            Some(format!("{name}: perf {pv}, culprit {cv}"))
        })
        .collect::<Vec<_>>();
    let only_revised = revised && diffs.is_empty();
    (diffs, only_revised)
}

/// A hybrid model's batch: an event both core types have opens twice (`cpu_core`,
/// `cpu_atom`), so attrs cannot be matched to spellings by position; the batch's attrs are
/// compared as multisets instead (both tools' runs start with `cpu-clock`, which keeps
/// culprit's stat from its nothing-countable retry). A batch counts as equal when both
/// multisets are the same.
fn compare_batch_as_multiset(
    result: &mut ModelResult,
    name: &str,
    n: usize,
    spellings: &[String],
    read: &dyn Fn(&str) -> String,
) {
    let multiset = |text: &str| {
        let mut attrs: Vec<Vec<(String, String)>> = first_attrs(text, usize::MAX)
            .iter()
            .map(compared_fields)
            .collect();
        attrs.sort();
        attrs
    };
    let theirs = multiset(&read(&format!("{n}.perf")));
    let ours = multiset(&read(&format!("{n}.culprit")));
    result.compared += spellings.len();
    if theirs.len() <= 1 {
        result.diffs.push(format!(
            "{name} batch {n}: perf printed no attr for its events"
        ));
        return;
    }
    let only = |a: &[Vec<(String, String)>], b: &[Vec<(String, String)>]| {
        let mut rest = b.to_vec();
        a.iter()
            .filter(|x| match rest.iter().position(|y| y == *x) {
                Some(i) => {
                    rest.swap_remove(i);
                    false
                }
                None => true,
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    let (perf_only, culprit_only) = (only(&theirs, &ours), only(&ours, &theirs));
    if perf_only.is_empty() && culprit_only.is_empty() {
        result.equal += spellings.len();
        return;
    }
    for a in perf_only {
        result
            .diffs
            .push(format!("{name} batch {n}: only perf opens {a:?}"));
    }
    for a in culprit_only {
        result
            .diffs
            .push(format!("{name} batch {n}: only culprit opens {a:?}"));
    }
}

/// Compares one model's batches in `dir` (run-tables.sh's output).
fn compare_model(dir: &Path, name: &str, oracle: Oracle) -> ModelResult {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let events: Vec<String> = read("events").lines().map(String::from).collect();
    let mut result = ModelResult {
        name: name.to_string(),
        events: events.len(),
        ..ModelResult::default()
    };
    let listed: BTreeSet<String> =
        serde_json::from_str::<serde_json::Value>(&read("culprit-list.json"))
            .ok()
            .and_then(|j| {
                j["table"]["events"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|e| e["name"].as_str().map(str::to_lowercase))
                        .collect()
                })
            })
            .unwrap_or_default();
    for n in 1.. {
        let list = read(&format!("{n}.list"));
        if list.is_empty() {
            break;
        }
        let spellings: Vec<String> = list.lines().map(String::from).collect();
        if oracle == Oracle::Perf612Hybrid {
            compare_batch_as_multiset(&mut result, name, n, &spellings, &read);
            continue;
        }
        let perf = first_attrs(&read(&format!("{n}.perf")), spellings.len());
        let ours = culprit_attrs(&read(&format!("{n}.culprit")), &spellings);
        for (i, spelling) in spellings.iter().enumerate() {
            result.compared += 1;
            let Some(theirs) = perf.get(i) else {
                result
                    .diffs
                    .push(format!("{name} `{spelling}`: perf printed no attr"));
                continue;
            };
            let event = spelling
                .split(':')
                .next()
                .unwrap_or(spelling)
                .to_lowercase();
            match &ours[i] {
                Err(why)
                    if oracle == Oracle::Perf61
                        && dropped_by_newer_table(why)
                        && !listed.contains(&event) =>
                {
                    result.dropped += 1;
                }
                Err(why) => result
                    .diffs
                    .push(format!("{name} `{spelling}`: culprit refused it: {why}")),
                Ok(mine) => {
                    let (d, only_revised) =
                        attr_diffs(name, spelling, theirs, mine, oracle == Oracle::Perf61);
                    if only_revised {
                        result.revised += 1;
                    } else if d.is_empty() {
                        result.equal += 1;
                    }
                    result
                        .diffs
                        .extend(d.into_iter().map(|l| format!("{name} `{spelling}`: {l}")));
                }
            }
        }
    }
    result.listed = events
        .iter()
        .filter(|e| listed.contains(&e.to_lowercase()))
        .count();
    result
}

/// Runs the models of one fixture family in one faked namespace; returns their results.
fn run_family(
    fixture: &str,
    models: &[&(&str, &str, &str)],
    perf: &Path,
    oracle: Oracle,
) -> Vec<ModelResult> {
    let dir = common::scratch(&format!("attr-oracle-tables-{}", models[0].1));
    let list: String = models.iter().map(|m| format!("{}\n", m.0)).collect();
    let models_file = dir.join("models.txt");
    std::fs::write(&models_file, list).unwrap();
    let lead = if oracle == Oracle::Perf612Hybrid {
        "cpu-clock"
    } else {
        ""
    };
    let out = Command::new("unshare")
        .env("PERF", perf)
        .env("ORACLE_LEAD_EVENT", lead)
        .args(["-m", "--propagation", "private", "sh"])
        .arg(oracle_dir().join("fake-pmu.sh"))
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/pmu")
                .join(fixture),
        )
        .arg("sh")
        .arg(oracle_dir().join("run-tables.sh"))
        .arg(&models_file)
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_culprit"))
        .arg(BATCH.to_string())
        .args(MODIFIERS)
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "{fixture}: the faked namespace failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    models
        .iter()
        .map(|m| compare_model(&dir.join(m.0), m.1, oracle))
        .collect()
}

/// Compares every event of the models whose table names are in `names`; panics listing every
/// difference, and on a model where `culprit list` names too few of perf's events.
pub fn check_tables(test: &str, names: &[&str]) {
    let chosen: Vec<&(&str, &str, &str)> = MODELS.iter().filter(|m| names.contains(&m.1)).collect();
    assert_eq!(chosen.len(), names.len(), "unknown model in {names:?}");
    check(test, chosen, Path::new("perf"), Oracle::Perf61);
}

/// Compares every event of [`NEWER_MODELS`] with perf 6.12 (target/oracle-perf/perf, built
/// by scripts/oracle-perf.sh, which scripts/test.sh runs): no difference at all is accepted.
pub fn check_newer_tables(test: &str) {
    let perf = oracle_perf_6_12();
    let why = format!(
        "no perf 6.12 at {} (bash scripts/oracle-perf.sh builds it)",
        perf.display()
    );
    if !common::need(test, perf.exists(), &why) {
        return;
    }
    // CULPRIT_ORACLE_ALL_MODELS=1 also holds perf 6.1's models against perf 6.12 (where no
    // revision may differ): a 4-minute check for table regenerations, not part of the suite.
    let all = std::env::var("CULPRIT_ORACLE_ALL_MODELS").is_ok_and(|v| v == "1");
    let extra = if all { MODELS } else { &[] };
    check(
        test,
        NEWER_MODELS.iter().chain(extra).collect(),
        &perf,
        Oracle::Perf612,
    );
    check(
        test,
        HYBRID_MODELS.iter().collect(),
        &perf,
        Oracle::Perf612Hybrid,
    );
}

fn check(test: &str, chosen: Vec<&(&str, &str, &str)>, perf: &Path, oracle: Oracle) {
    if !oracle_can_run(test) {
        return;
    }
    let mut families: BTreeMap<&str, Vec<&(&str, &str, &str)>> = BTreeMap::new();
    for m in chosen {
        families.entry(m.2).or_default().push(m);
    }
    let results: Vec<ModelResult> = families
        .iter()
        .flat_map(|(fixture, models)| run_family(fixture, models, perf, oracle))
        .collect();
    let mut table = vec![format!(
        "{:<16} {:>7} {:>9} {:>9} {:>8} {:>8} {:>8}",
        "model", "events", "compared", "equal", "revised", "dropped", "listed"
    )];
    let mut failures = Vec::new();
    for r in &results {
        let coverage = r.listed as f64 / r.events.max(1) as f64;
        table.push(format!(
            "{:<16} {:>7} {:>9} {:>9} {:>8} {:>8} {:>7.1}%",
            r.name,
            r.events,
            r.compared,
            r.equal,
            r.revised,
            r.dropped,
            coverage * 100.0
        ));
        // perf naming nothing means the fake PMU or PERF_CPUID was not seen.
        if r.events == 0 || r.compared != r.events * (1 + MODIFIERS.len()) {
            failures.push(format!(
                "{}: perf listed {} events, {} spellings compared",
                r.name, r.events, r.compared
            ));
        }
        if coverage < MIN_LIST_COVERAGE {
            failures.push(format!(
                "{}: culprit list names {} of perf's {} events",
                r.name, r.listed, r.events
            ));
        }
        failures.extend(r.diffs.iter().cloned());
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "{} difference(s) from perf:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
