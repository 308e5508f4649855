//! Derived metrics of `culprit stat`, computed when their events were counted: IPC/CPI,
//! branch mispredict ratio, cache-miss ratio, L1D fills (AMD's L1D misses) and DTLB misses per
//! kilo-instruction, CPUs utilized and GHz. Pure functions of the counts.
//!
//! A ratio of two events of one group uses their raw counts (same time window); across
//! groups it uses scaled counts (`value × enabled / running`). Each metric carries a
//! reliability like Top-Down's ([`crate::topdown`]): the smallest running/enabled fraction
//! of its inputs, × 0.8 when they came from different multiplexed groups.
//!
//! perf's table metrics (`stat -M`): [`expr`] parses the stored expressions, [`eval`]
//! evaluates them with perf's rules, [`table`] picks them by name or group and resolves
//! references between them.

pub mod eval;
pub mod expr;
pub mod listing;
pub mod plan;
pub mod table;

use serde::Serialize;

use crate::topdown::{Count, SPLIT_PENALTY, UNRELIABLE_BELOW};

/// One counted event as the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counted<'a> {
    /// The event's name as given (`cycles`, `cycles:u`, `ex_ret_instr`, …).
    pub name: &'a str,
    /// Its count.
    pub count: Count,
    /// Which group it was in (events of one group share a time window).
    pub group: usize,
}

/// A derived metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    /// Stable key, e.g. `ipc`, `branch_miss_ratio`, `l1d_fills_pki`.
    pub name: String,
    /// The value.
    pub value: f64,
    /// What it is, perf-style (`insn per cycle`, `of all branches`, …).
    pub unit: String,
    /// 0..=1.
    pub reliability: f64,
    /// reliability < 0.7.
    pub unreliable: bool,
    /// The events it was computed from.
    pub inputs: Vec<String>,
}

/// Name spellings (modifiers such as `:u` are ignored) for each role.
const CYCLES: &[&str] = &["cycles", "cpu-cycles", "ls_not_halted_cyc"];
const INSTRUCTIONS: &[&str] = &["instructions", "ex_ret_instr"];
const BRANCHES: &[&str] = &["branches", "branch-instructions", "ex_ret_brn"];
const BRANCH_MISSES: &[&str] = &["branch-misses", "ex_ret_brn_misp"];
const CACHE_REFS: &[&str] = &["cache-references"];
const CACHE_MISSES: &[&str] = &["cache-misses"];
const TASK_CLOCK: &[&str] = &["task-clock"];

fn base(name: &str) -> &str {
    // `cycles:u` → `cycles`; `cpu/cycles/` stays as is.
    match name.rsplit_once(':') {
        Some((b, m)) if !m.is_empty() && m.chars().all(|c| "ukhpPGHIS".contains(c)) => b,
        _ => name,
    }
}

fn find<'a, 'b>(counted: &'b [Counted<'a>], names: &[&str]) -> Option<&'b Counted<'a>> {
    counted
        .iter()
        .find(|c| names.iter().any(|n| base(c.name).eq_ignore_ascii_case(n)))
}

/// `a / b × scale` with the in-group / scaled rule and its reliability.
fn ratio(a: &Counted, b: &Counted, scale: f64) -> Option<(f64, f64)> {
    let same = a.group == b.group;
    let (x, y) = if same {
        (a.count.value as f64, b.count.value as f64)
    } else {
        (a.count.scaled(), b.count.scaled())
    };
    if y == 0.0 {
        return None;
    }
    let mut rel = a.count.fraction().min(b.count.fraction());
    if !same && rel < 1.0 {
        rel *= SPLIT_PENALTY;
    }
    Some((x / y * scale, rel))
}

fn metric(name: &str, unit: &str, value: f64, rel: f64, inputs: &[&Counted]) -> Metric {
    Metric {
        name: name.to_string(),
        value,
        unit: unit.to_string(),
        reliability: rel,
        unreliable: rel < UNRELIABLE_BELOW,
        inputs: inputs.iter().map(|c| c.name.to_string()).collect(),
    }
}

/// The derived metrics whose events are present. `elapsed_ns` is the wall time of the run
/// (for CPUs utilized).
pub fn derived(counted: &[Counted], elapsed_ns: u64) -> Vec<Metric> {
    let mut out = Vec::new();
    let cycles = find(counted, CYCLES);
    let instructions = find(counted, INSTRUCTIONS);
    if let Some(tc) = find(counted, TASK_CLOCK) {
        if elapsed_ns > 0 {
            // task-clock counts nanoseconds of CPU time.
            let v = tc.count.scaled() / elapsed_ns as f64;
            out.push(metric(
                "cpus_utilized",
                "CPUs utilized",
                v,
                tc.count.fraction(),
                &[tc],
            ));
        }
        if let Some(cy) = cycles {
            if let Some((v, r)) = ratio(cy, tc, 1.0) {
                out.push(metric("ghz", "GHz", v, r, &[cy, tc]));
            }
        }
        // perf's rates of software events, per second of task-clock.
        for (names, key) in [
            (&["page-faults", "faults"][..], "page_faults_per_sec"),
            (&["context-switches", "cs"][..], "context_switches_per_sec"),
            (
                &["cpu-migrations", "migrations"][..],
                "cpu_migrations_per_sec",
            ),
            (&["minor-faults"][..], "minor_faults_per_sec"),
            (&["major-faults"][..], "major_faults_per_sec"),
        ] {
            if let Some(e) = find(counted, names) {
                if let Some((v, r)) = ratio(e, tc, 1e9) {
                    out.push(metric(key, "/sec", v, r, &[e, tc]));
                }
            }
        }
    }
    if let (Some(ins), Some(cy)) = (instructions, cycles) {
        if let Some((v, r)) = ratio(ins, cy, 1.0) {
            out.push(metric("ipc", "insn per cycle", v, r, &[ins, cy]));
        }
        if let Some((v, r)) = ratio(cy, ins, 1.0) {
            out.push(metric("cpi", "cycles per insn", v, r, &[cy, ins]));
        }
    }
    if let (Some(m), Some(b)) = (find(counted, BRANCH_MISSES), find(counted, BRANCHES)) {
        if let Some((v, r)) = ratio(m, b, 1.0) {
            out.push(metric(
                "branch_miss_ratio",
                "of all branches",
                v,
                r,
                &[m, b],
            ));
        }
    }
    if let (Some(m), Some(rf)) = (find(counted, CACHE_MISSES), find(counted, CACHE_REFS)) {
        if let Some((v, r)) = ratio(m, rf, 1.0) {
            out.push(metric(
                "cache_miss_ratio",
                "of all cache refs",
                v,
                r,
                &[m, rf],
            ));
        }
    }
    if let Some(ins) = instructions {
        let pki: &[(&[&str], &str, &str)] = &[
            (
                &["ls_any_fills_from_sys.all"],
                "l1d_fills_pki",
                "L1D fills (misses) per kilo-insn",
            ),
            (
                &["ls_dmnd_fills_from_sys.all"],
                "l1d_demand_fills_pki",
                "L1D demand fills per kilo-insn",
            ),
            (
                &["L1-dcache-load-misses"],
                "l1d_misses_pki",
                "L1D load misses per kilo-insn",
            ),
            (
                &["ls_l1_d_tlb_miss.all", "dTLB-load-misses"],
                "dtlb_misses_pki",
                "DTLB misses per kilo-insn",
            ),
            (
                &["ls_l1_d_tlb_miss.all_l2_miss"],
                "l2_dtlb_misses_pki",
                "L2 DTLB misses per kilo-insn",
            ),
            (
                &["branch-misses", "ex_ret_brn_misp"],
                "branch_misses_pki",
                "branch misses per kilo-insn",
            ),
        ];
        for (names, key, unit) in pki {
            if let Some(e) = find(counted, names) {
                if let Some((v, r)) = ratio(e, ins, 1000.0) {
                    out.push(metric(key, unit, v, r, &[e, ins]));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, value: u64, group: usize, enabled_ns: u64, running_ns: u64) -> Counted<'_> {
        Counted {
            name,
            count: Count {
                value,
                enabled_ns,
                running_ns,
            },
            group,
        }
    }

    fn get<'a>(m: &'a [Metric], name: &str) -> &'a Metric {
        m.iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("{name} in {m:?}"))
    }

    #[test]
    fn test_derived_ipc_branches_fills_in_one_group() {
        // A Zen 5 pointer-chase run: one group of 5, no multiplexing.
        let e = 2_000_000_000;
        let counted = [
            ev("cycles", 6_000_000_000, 0, e, e),
            ev("instructions", 1_500_000_000, 0, e, e),
            ev("ex_ret_brn_misp", 1_500_000, 0, e, e),
            ev("ex_ret_brn", 300_000_000, 0, e, e),
            ev("ls_any_fills_from_sys.all", 90_000_000, 0, e, e),
            ev("ls_l1_d_tlb_miss.all", 45_000_000, 0, e, e),
            ev("task-clock", 1_990_000_000, 1, e, e),
        ];
        let m = derived(&counted, 2_000_000_000);
        assert!((get(&m, "ipc").value - 0.25).abs() < 1e-12);
        assert!((get(&m, "cpi").value - 4.0).abs() < 1e-12);
        assert!((get(&m, "branch_miss_ratio").value - 0.005).abs() < 1e-12);
        assert!((get(&m, "l1d_fills_pki").value - 60.0).abs() < 1e-9);
        assert!((get(&m, "dtlb_misses_pki").value - 30.0).abs() < 1e-9);
        assert!((get(&m, "cpus_utilized").value - 0.995).abs() < 1e-9);
        assert!((get(&m, "ghz").value - 6.0 / 1.99).abs() < 1e-9);
        assert!(m.iter().all(|x| x.reliability == 1.0 && !x.unreliable));
        assert!(m.iter().all(|x| !x.name.ends_with("_per_sec")));
        assert_eq!(get(&m, "ipc").inputs, vec!["instructions", "cycles"]);
    }

    #[test]
    fn test_derived_across_multiplexed_groups_scales_and_penalizes() {
        // cycles ran 40% of the time, instructions 100%: scale cycles before dividing.
        let counted = [
            ev("cycles:u", 400, 0, 1000, 400),
            ev("instructions:u", 2000, 1, 1000, 1000),
        ];
        let m = derived(&counted, 0);
        let ipc = get(&m, "ipc");
        assert!((ipc.value - 2.0).abs() < 1e-12, "{ipc:?}");
        assert!((ipc.reliability - 0.4 * SPLIT_PENALTY).abs() < 1e-12);
        assert!(ipc.unreliable);
        // Inside one group the raw counts are used even when multiplexed.
        let counted = [
            ev("cycles", 400, 0, 1000, 400),
            ev("instructions", 800, 0, 1000, 400),
        ];
        let ipc = derived(&counted, 0)
            .into_iter()
            .find(|x| x.name == "ipc")
            .unwrap();
        assert!((ipc.value - 2.0).abs() < 1e-12);
        assert!((ipc.reliability - 0.4).abs() < 1e-12);
    }

    #[test]
    fn test_derived_only_when_inputs_present() {
        let counted = [
            ev("page-faults", 100, 0, 10, 10),
            ev("context-switches", 3, 1, 10, 10),
        ];
        assert!(derived(&counted, 1000).is_empty());
        // With task-clock: per-second rates as perf prints them (/sec of task-clock).
        let counted = [
            ev("task-clock", 500_000_000, 0, 10, 10),
            ev("page-faults", 100, 1, 10, 10),
            ev("cs", 3, 2, 10, 10),
        ];
        let m = derived(&counted, 1_000_000_000);
        assert!((get(&m, "page_faults_per_sec").value - 200.0).abs() < 1e-9);
        assert!((get(&m, "context_switches_per_sec").value - 6.0).abs() < 1e-9);
        assert!((get(&m, "cpus_utilized").value - 0.5).abs() < 1e-12);
        // Zero denominators give no metric rather than inf/NaN.
        let counted = [
            ev("instructions", 10, 0, 10, 10),
            ev("cycles", 0, 0, 10, 10),
        ];
        let m = derived(&counted, 0);
        assert!(m.iter().all(|x| x.name != "ipc"));
        assert!(m.iter().all(|x| x.value.is_finite()));
    }
}
