//! This CPU's perf event table (from `culprit-pmu-events`): which table perf would pick and
//! why, and which sysfs PMU a table event opens on.
//!
//! perf picks the table by a CPU id string: `PERF_CPUID` when set, else (x86)
//! `vendor-family-MODEL-STEPPING` from CPUID, e.g. `AuthenticAMD-26-2-1`, or (arm64) the MIDR
//! of the first CPU. The first `mapfile.csv` row the string matches names the table.

use culprit_pmu_events::{CpuTable, MapRow, Tables, DEFAULT_CORE};

use crate::sysfs::{CpuIdentity, Pmu, Sysfs};

/// Where the CPU id string came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuidSource {
    /// The `PERF_CPUID` environment variable (as perf honours it).
    PerfCpuidEnv,
    /// `/proc/cpuinfo` (x86: vendor, family, model, stepping).
    Cpuinfo,
    /// arm64: `/sys/devices/system/cpu/cpu*/regs/identification/midr_el1`.
    Midr,
    /// Given by the caller (tests, parsing for another machine).
    Given,
}

/// perf's x86 CPU id string for a cpuinfo identity (`AuthenticAMD-25-11-1`).
pub fn cpuid_string(cpu: &CpuIdentity) -> String {
    culprit_pmu_events::x86_cpuid_string(&cpu.vendor, cpu.family, cpu.model, cpu.stepping)
}

/// The running machine's CPU id string as perf builds it, and its source: `PERF_CPUID` when
/// set and not empty, else cpuinfo (x86) or the first CPU's MIDR (arm64).
pub fn system_cpuid(cpu: Option<&CpuIdentity>) -> Option<(String, CpuidSource)> {
    if let Ok(id) = std::env::var("PERF_CPUID") {
        if !id.is_empty() {
            return Some((id, CpuidSource::PerfCpuidEnv));
        }
    }
    if let Some(cpu) = cpu {
        return Some((cpuid_string(cpu), CpuidSource::Cpuinfo));
    }
    let entries = std::fs::read_dir("/sys/devices/system/cpu").ok()?;
    let mut cpus: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("cpu"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    cpus.sort();
    cpus.iter().find_map(|dir| {
        let midr = std::fs::read_to_string(dir.join("regs/identification/midr_el1")).ok()?;
        Some((midr.trim().to_string(), CpuidSource::Midr))
    })
}

/// The table for a CPU id string, when the tables know the CPU.
pub fn table_for(cpuid: &str) -> Option<CpuTable> {
    Tables::get().ok()?.for_cpuid(cpuid)
}

/// The models (`x86/amdzen4`, …) other than `except` whose tables have an event `name`.
pub fn models_with_event(name: &str, except: Option<&str>) -> Vec<&'static str> {
    let Ok(tables) = Tables::get() else {
        return Vec::new();
    };
    let mut models = tables.models_with_event(name);
    models.retain(|m| Some(*m) != except);
    models
}

/// The sysfs PMUs a table event opens on, by perf's naming: [`DEFAULT_CORE`] is the core PMU
/// (`cpu`, or on arm64 the `armv8_*`/`armv7_*` PMU); another name is the PMU of that name,
/// else each of its numbered instances (`uncore_imc` → `uncore_imc_0`, `uncore_imc_1`, …, in
/// numeric order), on each of which perf opens the event. Empty: this machine has none.
/// `Err` carries why a PMU could not be read, for the error message.
pub fn event_pmus(sysfs: &Sysfs, table_pmu: &str) -> Result<Vec<Pmu>, String> {
    let names = sysfs.pmu_names();
    let chosen: Vec<String> = if table_pmu == DEFAULT_CORE {
        names
            .iter()
            .find(|n| *n == "cpu")
            .or_else(|| {
                names
                    .iter()
                    .find(|n| n.starts_with("armv8_") || n.starts_with("armv7_"))
            })
            .cloned()
            .into_iter()
            .collect()
    } else if names.iter().any(|n| n == table_pmu) {
        vec![table_pmu.to_string()]
    } else {
        pmu_instances(&names, table_pmu)
    };
    let mut pmus = Vec::with_capacity(chosen.len());
    for name in chosen {
        if let Some(pmu) = sysfs.pmu(&name).map_err(|e| e.to_string())? {
            pmus.push(pmu);
        }
    }
    Ok(pmus)
}

/// The numbered instances `{base}_N` among `names`, in numeric order (`_2` before `_10`).
pub fn pmu_instances(names: &[String], base: &str) -> Vec<String> {
    let mut found: Vec<(u64, String)> = names
        .iter()
        .filter_map(|n| {
            let suffix = n.strip_prefix(base)?.strip_prefix('_')?;
            let index = suffix.parse::<u64>().ok()?;
            suffix
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| (index, n.clone()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, n)| n).collect()
}

/// Whether `pmu` is an Arm core PMU (`armv8_pmuv3_0`, `armv8_cortex_a53`, `armv7_cortex_a15`):
/// the CPU's counters on Arm, where there is no `cpu` PMU.
pub fn is_arm_core_pmu(pmu: &str) -> bool {
    pmu.starts_with("armv8_") || pmu.starts_with("armv7_")
}

/// Whether `pmu` (a sysfs PMU) is where a table event of `table_pmu` belongs.
pub fn pmu_serves(pmu: &str, table_pmu: &str) -> bool {
    if table_pmu == DEFAULT_CORE {
        pmu == "cpu" || is_arm_core_pmu(pmu)
    } else {
        // The PMU itself or one of its numbered instances (`uncore_imc_0`).
        pmu == table_pmu
            || pmu
                .strip_prefix(table_pmu)
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// perf's ScaleUnit split into its factor (as written) and unit: `6.103515625e-5MiB` →
/// (`6.103515625e-5`, `MiB`), `64Bytes` → (`64`, `Bytes`), `Joules` → (`1`, `Joules`);
/// `None` when empty.
pub fn scale_unit(text: &str) -> Option<(String, String)> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    // The longest prefix that is a number (perf reads it with strtod).
    let split = (1..=text.len())
        .rev()
        .filter(|&i| text.is_char_boundary(i))
        .find(|&i| text[..i].parse::<f64>().is_ok_and(f64::is_finite));
    match split {
        Some(i) => Some((text[..i].to_string(), text[i..].trim().to_string())),
        None => Some(("1".to_string(), text.to_string())),
    }
}

/// The PMU name to show for a table event: `cpu` for the core PMU on x86.
pub fn display_pmu(row: &MapRow, table_pmu: &str) -> String {
    if table_pmu != DEFAULT_CORE {
        return table_pmu.to_string();
    }
    match row.arch {
        "x86" => "cpu".to_string(),
        "arm64" => "armv8_pmuv3".to_string(),
        _ => "cpu".to_string(),
    }
}

/// This CPU's event table for `culprit list`: which table was chosen, why, and its events.
#[derive(Debug, serde::Serialize)]
pub struct TableOut {
    /// perf's CPU id string (`AuthenticAMD-26-2-1`), or null when it could not be built.
    pub cpuid: Option<String>,
    /// Where the CPU id string came from.
    pub cpuid_source: Option<CpuidSource>,
    /// The chosen table (`x86/amdzen5`), or null when no mapfile row matches.
    pub model: Option<&'static str>,
    /// The `mapfile.csv` row that matched, as the file spells it.
    pub mapfile_row: Option<String>,
    /// The kernel source the tables come from.
    pub source: &'static str,
    /// The table's events by topic then name, filtered by the listing's pattern; the ones
    /// the table marks deprecated are included with `deprecated` set (perf 6.12 hides them,
    /// but perf 6.1 listed many of them as current, and culprit still opens them).
    pub events: Vec<TableEventOut>,
}

/// One event of the table.
#[derive(Debug, serde::Serialize)]
pub struct TableEventOut {
    /// The name (`ls_dmnd_fills_from_sys.all`).
    pub name: String,
    /// perf list's topic (`cache`, `uncore memory`).
    pub topic: String,
    /// The PMU it opens on (`cpu`, `cpu_core`, `amd_l3`, `uncore_imc`, …).
    pub pmu: String,
    /// perf's terms for that PMU (`event=0x43,umask=0xff`).
    pub terms: String,
    /// Short description.
    pub description: String,
    /// Long description, when the tables have one that differs.
    pub long_description: Option<String>,
    /// The table marks it deprecated: it still opens, but a newer name replaces it.
    pub deprecated: bool,
}

/// The table part of the listing for a parser's CPU; `filter` keeps names containing it
/// (case-insensitive).
pub fn table_listing(parser: &super::EventParser, filter: Option<&str>) -> TableOut {
    let table = parser.table();
    let filter = filter.map(str::to_ascii_lowercase);
    let mut events: Vec<TableEventOut> = table
        .map(|t| {
            t.events
                .iter()
                .filter(|e| filter.as_ref().is_none_or(|f| e.name.contains(f.as_str())))
                .map(|e| TableEventOut {
                    name: e.name.to_string(),
                    topic: e.topic.to_string(),
                    pmu: display_pmu(&t.row, e.pmu),
                    terms: e.terms.to_string(),
                    description: e.description.to_string(),
                    long_description: (!e.long_description.is_empty()
                        && e.long_description != e.description)
                        .then(|| e.long_description.to_string()),
                    deprecated: e.deprecated,
                })
                .collect()
        })
        .unwrap_or_default();
    events.sort_by(|a, b| (&a.topic, &a.name, &a.pmu).cmp(&(&b.topic, &b.name, &b.pmu)));
    let (cpuid, cpuid_source) = match parser.cpuid() {
        Some((id, src)) => (Some(id.to_string()), Some(src)),
        None => (None, None),
    };
    TableOut {
        cpuid,
        cpuid_source,
        model: table.map(|t| t.row.model),
        mapfile_row: table.map(|t| t.row.csv()),
        source: culprit_pmu_events::generated::SOURCE,
        events,
    }
}

/// Why this table: one sentence for the listing's text.
pub fn table_reason(t: &TableOut) -> String {
    let from = match t.cpuid_source {
        Some(CpuidSource::PerfCpuidEnv) => "from PERF_CPUID",
        Some(CpuidSource::Cpuinfo) => "from /proc/cpuinfo",
        Some(CpuidSource::Midr) => "from the MIDR in sysfs",
        Some(CpuidSource::Given) | None => "given",
    };
    match (&t.cpuid, t.model, &t.mapfile_row) {
        (Some(id), Some(model), Some(row)) => {
            format!("{model}: CPU id {id} ({from}) matches mapfile.csv row `{row}`")
        }
        (Some(id), _, _) => format!(
            "none: no mapfile.csv row matches CPU id {id} ({from}); perf has no named events for this CPU either"
        ),
        _ => "none: the CPU id could not be built (set PERF_CPUID)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_string_picks_the_models_table() {
        let cpu = CpuIdentity {
            vendor: "AuthenticAMD".to_string(),
            family: 0x19,
            model: 0x11,
            stepping: 1,
            model_name: String::new(),
            hypervisor: false,
        };
        assert_eq!(cpuid_string(&cpu), "AuthenticAMD-25-11-1");
        assert_eq!(
            table_for(&cpuid_string(&cpu)).unwrap().row.model,
            "x86/amdzen4"
        );
        let models = models_with_event("ex_ret_ops", Some("x86/amdzen4"));
        assert!(models.contains(&"x86/amdzen5"), "{models:?}");
        assert!(!models.contains(&"x86/amdzen4"));
    }

    #[test]
    fn numbered_instances_in_numeric_order() {
        let names: Vec<String> = [
            "uncore_imc_10",
            "uncore_imc_2",
            "uncore_imc",
            "uncore_imc_free_running_0",
            "uncore_imc_x",
            "uncore_cha_0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            pmu_instances(&names, "uncore_imc"),
            ["uncore_imc_2", "uncore_imc_10"]
        );
        assert_eq!(
            pmu_instances(&names, "uncore_imc_free_running"),
            ["uncore_imc_free_running_0"]
        );
        assert!(pmu_instances(&names, "amd_l3").is_empty());
    }

    #[test]
    fn table_pmus_map_to_sysfs_names() {
        assert!(pmu_serves("cpu", DEFAULT_CORE));
        assert!(pmu_serves("armv8_pmuv3_0", DEFAULT_CORE));
        assert!(!pmu_serves("amd_l3", DEFAULT_CORE));
        assert!(pmu_serves("amd_l3", "amd_l3"));
        assert!(pmu_serves("uncore_imc_3", "uncore_imc"));
        assert!(!pmu_serves("uncore_imc_free_running_0", "uncore_imc"));
        let su = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(scale_unit("6.103515625e-5MiB"), su("6.103515625e-5", "MiB"));
        assert_eq!(scale_unit("64Bytes"), su("64", "Bytes"));
        assert_eq!(scale_unit("Joules"), su("1", "Joules"));
        assert_eq!(scale_unit(" "), None);
    }
}
