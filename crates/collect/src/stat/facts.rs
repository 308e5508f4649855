//! The machine facts perf's metric `#literals` read, taken where perf takes them: CPU
//! topology from sysfs, SMT from `smt/active`, the TSC frequency from the CPU's model name,
//! `caps/slots` of the core PMU, the NFIT table, and the NMI watchdog (for grouping).

use std::collections::BTreeSet;
use std::path::Path;

/// What sysfs and cpuinfo say about the machine (the inputs of perf's `#literals`; the
/// metrics themselves are evaluated in `analysis`).
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// SMT siblings are online (`smt/active`).
    pub smt_on: bool,
    /// The highest present CPU number + 1.
    pub num_cpus: f64,
    /// Online CPUs.
    pub num_cpus_online: f64,
    /// Distinct core sibling lists.
    pub num_cores: f64,
    /// Distinct die sibling lists.
    pub num_dies: f64,
    /// Distinct package sibling lists.
    pub num_packages: f64,
    /// The TSC frequency in Hz from the model name (0 when it says none).
    pub system_tsc_freq: f64,
    /// The core PMU's `caps/slots`, 0 when absent.
    pub slots: f64,
    /// An ACPI NFIT table exists.
    pub has_pmem: bool,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The CPUs of a list such as `0-3,8` (perf's cpu map syntax).
fn cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
            out.extend(lo..=hi.min(lo.saturating_add(65_535)));
        }
    }
    out
}

/// perf's count of topology lists: distinct `topology/<kind>_cpus_list` strings over the
/// online CPUs (at least 1).
fn distinct_lists(online: &[u32], kind: &str) -> f64 {
    let lists: BTreeSet<String> = online
        .iter()
        .filter_map(|c| {
            read(format!(
                "/sys/devices/system/cpu/cpu{c}/topology/{kind}_cpus_list"
            ))
        })
        .collect();
    lists.len().max(1) as f64
}

/// The TSC frequency in Hz from a model name ending in `@ 2.40GHz` (0 when it says none,
/// as perf when CPUID does not tell it either).
fn tsc_from_model_name() -> f64 {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.rsplit_once('@'))
        .and_then(|(_, f)| f.trim().strip_suffix("GHz"))
        .and_then(|f| f.trim().parse::<f64>().ok())
        .map_or(0.0, |ghz| ghz * 1e9)
}

/// This machine's facts.
pub fn machine() -> Machine {
    let online = cpu_list(&read("/sys/devices/system/cpu/online").unwrap_or_default());
    let present = cpu_list(&read("/sys/devices/system/cpu/present").unwrap_or_default());
    let smt_on = read("/sys/devices/system/cpu/smt/active").as_deref() == Some("1");
    let slots = ["cpu", "cpu_core"]
        .iter()
        .find_map(|p| read(format!("/sys/bus/event_source/devices/{p}/caps/slots")))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    Machine {
        smt_on,
        num_cpus: present.iter().max().map_or(1.0, |m| f64::from(m + 1)),
        num_cpus_online: online.len().max(1) as f64,
        num_cores: distinct_lists(&online, "core"),
        num_dies: distinct_lists(&online, "die"),
        num_packages: distinct_lists(&online, "package"),
        system_tsc_freq: tsc_from_model_name(),
        slots,
        has_pmem: Path::new("/sys/firmware/acpi/tables/NFIT").exists(),
    }
}

/// Whether the NMI watchdog holds a counter (perf then does not group
/// `NO_GROUP_EVENTS_NMI` metrics).
pub fn nmi_watchdog() -> bool {
    read("/proc/sys/kernel/nmi_watchdog").as_deref() == Some("1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_as_perf_reads_them() {
        assert_eq!(cpu_list("0-3,8"), vec![0, 1, 2, 3, 8]);
        assert_eq!(cpu_list(""), Vec::<u32>::new());
        assert_eq!(cpu_list("5"), vec![5]);
    }

    #[test]
    fn facts_of_this_machine_are_sane() {
        let f = machine();
        assert!(f.num_cpus_online >= 1.0 && f.num_cores >= 1.0 && f.num_packages >= 1.0);
        assert!(f.num_cpus >= f.num_cpus_online);
    }
}
