//! The host's capability inventory (`culprit list`): PMUs from sysfs, generic / software /
//! cache events (each tried with a counting perf_event_open on ourselves), this CPU's perf
//! event table (which one and why, its events by topic), and capabilities (precise sampling, IBS, branch stacks, usable
//! counters, perf sysctls, virtualization), with plain-language notes on what is (not)
//! possible here. JSON schema: docs/schemas/list.schema.json.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::events::tables::{self, TableOut};
use crate::events::{generic, EventParser, EventSpec};
use crate::support;
use crate::sysfs::{self, CpuIdentity, Pmu, Sysfs};

/// The whole inventory (the top-level JSON object of `culprit list --format json`).
#[derive(Serialize, Debug)]
pub struct Listing {
    /// Schema version of this JSON object.
    pub schema: u32,
    /// The CPU, from /proc/cpuinfo.
    pub cpu: Option<CpuIdentity>,
    /// Evidence that we run in a VM, or null.
    pub virtualization: Option<String>,
    /// Whether the generic `instructions` event opens.
    pub hardware_pmu: bool,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Option<i32>,
    /// `kernel.perf_event_max_sample_rate` in Hz.
    pub perf_event_max_sample_rate: Option<u64>,
    /// `/proc/sys/kernel/nmi_watchdog` != 0 (it holds one counter on x86).
    pub nmi_watchdog: Option<bool>,
    /// What can be measured here.
    pub capabilities: Capabilities,
    /// The PMUs under /sys/bus/event_source/devices.
    pub pmus: Vec<PmuOut>,
    /// The generic, software and cache events, each tried.
    pub events: Vec<EventOut>,
    /// This CPU's perf event table: the CPU id, the mapfile row that chose it, its events.
    pub table: TableOut,
    /// Plain-language statements about what is (not) possible here.
    pub notes: Vec<String>,
}

/// What can be measured here.
#[derive(Serialize, Debug)]
pub struct Capabilities {
    /// `cpu/caps/max_precise`, or null when there is no such file.
    pub max_precise: Option<u8>,
    /// The largest `:p` level culprit accepts here (max_precise, or 2 via IBS on AMD).
    pub precise_ip_max: u8,
    /// Why `precise_ip_max` has that value.
    pub precise_ip_why: String,
    /// The `ibs_op` PMU.
    pub ibs_op: IbsOut,
    /// The `ibs_fetch` PMU.
    pub ibs_fetch: IbsOut,
    /// Branch stack sampling (LBR/BRS).
    pub branch_stack: ProbeOut,
    /// General-purpose counters that count together.
    pub counters: CountersOut,
}

/// An IBS PMU.
#[derive(Serialize, Debug)]
pub struct IbsOut {
    /// Whether the PMU exists.
    pub present: bool,
    /// `perf_event_attr.type` of the PMU or event.
    #[serde(rename = "type")]
    pub attr_type: Option<u32>,
    /// The format terms (`name` = `config:0-7`).
    pub formats: Vec<FormatOut>,
    /// The `caps/` files and their values.
    pub caps: BTreeMap<String, String>,
}

/// Whether a feature opens.
#[derive(Serialize, Debug)]
pub struct ProbeOut {
    /// Whether it opens.
    pub available: bool,
    /// Why it does not open.
    pub error: Option<String>,
}

/// The usable general-purpose counters.
#[derive(Serialize, Debug)]
pub struct CountersOut {
    /// Largest N such that a group of N `instructions` counters all counted nonzero.
    pub usable: usize,
    /// Each group size tried.
    pub tried: Vec<CounterTry>,
}

/// One group size tried.
#[derive(Serialize, Debug)]
pub struct CounterTry {
    /// Group size.
    pub n: usize,
    /// What each member counted.
    pub counts: Option<Vec<u64>>,
    /// Why it does not open.
    pub error: Option<String>,
}

/// A PMU format term.
#[derive(Serialize, Debug)]
pub struct FormatOut {
    /// The name.
    pub name: String,
    /// Where the term goes (`config:0-7`).
    pub spec: String,
}

/// A PMU event alias from sysfs.
#[derive(Serialize, Debug)]
pub struct AliasOut {
    /// The name.
    pub name: String,
    /// Its terms (`event=0x76`).
    pub terms: String,
    /// Its unit, when sysfs gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Its scale, when sysfs gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
}

/// A PMU from sysfs.
#[derive(Serialize, Debug)]
pub struct PmuOut {
    /// The name.
    pub name: String,
    /// `perf_event_attr.type` of the PMU or event.
    #[serde(rename = "type")]
    pub attr_type: u32,
    /// The format terms (`name` = `config:0-7`).
    pub formats: Vec<FormatOut>,
    /// The generic, software and cache events, each tried.
    pub events: Vec<AliasOut>,
    /// The `caps/` files and their values.
    pub caps: BTreeMap<String, String>,
}

/// A generic, software or cache event, tried.
#[derive(Serialize, Debug)]
pub struct EventOut {
    /// The name.
    pub name: String,
    /// Other names of the event.
    pub aliases: Vec<String>,
    /// `hardware`, `software` or `cache`.
    pub kind: &'static str,
    /// `perf_event_attr.type` of the PMU or event.
    #[serde(rename = "type")]
    pub attr_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// What it counts.
    pub description: String,
    /// Whether it opens here.
    pub opens: bool,
    /// Why it does not open.
    pub error: Option<String>,
}

fn format_out(pmu: &Pmu) -> Vec<FormatOut> {
    pmu.formats
        .iter()
        .map(|f| FormatOut {
            name: f.name.clone(),
            spec: f.spec(),
        })
        .collect()
}

fn ibs_out(pmu: Option<&Pmu>) -> IbsOut {
    match pmu {
        Some(p) => IbsOut {
            present: true,
            attr_type: Some(p.attr_type),
            formats: format_out(p),
            caps: p.caps.iter().cloned().collect(),
        },
        None => IbsOut {
            present: false,
            attr_type: None,
            formats: Vec::new(),
            caps: BTreeMap::new(),
        },
    }
}

fn matches(filter: &Option<String>, name: &str) -> bool {
    filter
        .as_ref()
        .is_none_or(|f| name.to_ascii_lowercase().contains(&f.to_ascii_lowercase()))
}

/// Tries one generic, software or cache event (a counting open on ourselves): its row.
fn try_event(kind: &'static str, attr_type: u32, e: (&[&str], u64, &str)) -> EventOut {
    let (names, config, description) = e;
    let spec = EventSpec::new(names[0], None, attr_type, config);
    let result = support::try_open_event(&spec);
    EventOut {
        name: names[0].to_string(),
        aliases: names[1..].iter().map(|s| s.to_string()).collect(),
        kind,
        attr_type,
        config,
        description: description.to_string(),
        opens: result.is_ok(),
        error: result.err().map(support::describe_errno),
    }
}

/// Takes the inventory of this machine; `filter` keeps the events, aliases and table
/// entries whose name contains it (case-insensitive).
pub fn collect(filter: Option<&str>) -> Listing {
    let filter = filter.map(str::to_string);
    let sysfs = Sysfs::system();
    let cpu = sysfs::cpu_identity();
    let pmus = sysfs.pmus();
    let find = |name: &str| pmus.iter().find(|p| p.name == name);
    let hardware_pmu = support::hardware_pmu_available();

    let mut events = Vec::new();
    for e in generic::HARDWARE {
        if e.names.iter().any(|n| matches(&filter, n)) {
            events.push(try_event(
                "hardware",
                culprit_decode::abi::perf_type::HARDWARE,
                (e.names, e.config, e.description),
            ));
        }
    }
    for e in generic::SOFTWARE {
        if e.names.iter().any(|n| matches(&filter, n)) {
            events.push(try_event(
                "software",
                culprit_decode::abi::perf_type::SOFTWARE,
                (e.names, e.config, e.description),
            ));
        }
    }
    for (name, config) in generic::cache_events() {
        if matches(&filter, &name) {
            events.push(try_event(
                "cache",
                culprit_decode::abi::perf_type::HW_CACHE,
                (&[name.as_str()], config, "generic hardware-cache event"),
            ));
        }
    }

    let parser = EventParser::system();
    let table = tables::table_listing(&parser, filter.as_deref());

    let counters = support::usable_counters(8);
    let branch = support::branch_stack_available();
    let max_precise = find("cpu")
        .and_then(|p| p.cap("max_precise"))
        .and_then(|v| v.parse().ok());
    let (precise_ip_max, precise_ip_why) = parser.max_precise();
    let capabilities = Capabilities {
        max_precise,
        precise_ip_max,
        precise_ip_why,
        ibs_op: ibs_out(find("ibs_op")),
        ibs_fetch: ibs_out(find("ibs_fetch")),
        branch_stack: ProbeOut {
            available: branch.is_ok(),
            error: branch.err().map(support::describe_errno),
        },
        counters: CountersOut {
            usable: counters.usable,
            tried: counters
                .tried
                .into_iter()
                .map(|(n, r)| match r {
                    Ok(counts) => CounterTry {
                        n,
                        counts: Some(counts),
                        error: None,
                    },
                    Err(e) => CounterTry {
                        n,
                        counts: None,
                        error: Some(support::describe_errno(e)),
                    },
                })
                .collect(),
        },
    };

    let pmus_out: Vec<PmuOut> = pmus
        .iter()
        .map(|p| PmuOut {
            name: p.name.clone(),
            attr_type: p.attr_type,
            formats: format_out(p),
            events: p
                .events
                .iter()
                .filter(|a| matches(&filter, &a.name) || matches(&filter, &p.name))
                .map(|a| AliasOut {
                    name: a.name.clone(),
                    terms: a.terms.clone(),
                    unit: a.unit.clone(),
                    scale: a.scale.clone(),
                })
                .collect(),
            caps: p.caps.iter().cloned().collect(),
        })
        .collect();

    let paranoid = support::perf_event_paranoid();
    let mut listing = Listing {
        schema: 3,
        virtualization: sysfs::virtualization(),
        cpu,
        hardware_pmu,
        perf_event_paranoid: paranoid,
        perf_event_max_sample_rate: support::perf_event_max_sample_rate(),
        nmi_watchdog: support::nmi_watchdog(),
        capabilities,
        pmus: pmus_out,
        events,
        table,
        notes: Vec::new(),
    };
    listing.notes = notes(&listing);
    listing
}

/// The plain-language statements: what is impossible here and what to do about it.
pub fn notes(l: &Listing) -> Vec<String> {
    let mut notes = Vec::new();
    let has_cpu_pmu = l
        .pmus
        .iter()
        .any(|p| p.name == "cpu" || crate::events::tables::is_arm_core_pmu(&p.name));
    if !l.hardware_pmu {
        let vm = if l.virtualization.is_some() {
            " This is a VM without a virtual PMU."
        } else {
            ""
        };
        notes.push(format!(
            "Hardware PMU: not available ({}) — only software events work here (cpu-clock, task-clock, page-faults, context-switches, …); culprit record falls back to cpu-clock.{vm} To measure cycles, instructions, caches and branches, run on bare metal or in a VM with a virtual PMU (e.g. KVM/QEMU `-cpu host,pmu=on`, or a cloud instance type that exposes the PMU).",
            if has_cpu_pmu { "the `instructions` event does not open" } else { "no `cpu` (or Arm core) PMU under /sys/bus/event_source/devices" }
        ));
    }
    if !l.capabilities.ibs_op.present && !l.capabilities.ibs_fetch.present {
        notes.push("IBS: not available (no ibs_op/ibs_fetch PMU) — precise attribution is not possible here; culprit annotate estimates skid instead (labelled)".to_string());
    }
    let (max, why) = (
        l.capabilities.precise_ip_max,
        &l.capabilities.precise_ip_why,
    );
    if max == 0 {
        notes.push(format!(
            "Precise sampling (`:p`, PEBS/IBS): not available — {why}; sampled IPs may skid past the instruction that caused the event."
        ));
    }
    if !l.capabilities.branch_stack.available {
        notes.push(format!(
            "Branch stacks (LBR/BRS): not available ({}); `-b`/branch sampling will not work here.",
            l.capabilities
                .branch_stack
                .error
                .as_deref()
                .unwrap_or("unknown error")
        ));
    }
    if l.hardware_pmu {
        notes.push(format!(
            "General-purpose counters: {} usable together (more events than that are multiplexed and scaled).",
            l.capabilities.counters.usable
        ));
    }
    if l.hardware_pmu && l.nmi_watchdog == Some(true) {
        notes.push("The NMI watchdog is on and holds one general-purpose counter; `sudo sysctl kernel.nmi_watchdog=0` frees it.".to_string());
    }
    if let Some(p) = l.perf_event_paranoid {
        if p >= 2 {
            notes.push(format!(
                "perf_event_paranoid is {p}: unprivileged users can profile their own processes in user space only; for kernel samples or -a run as root or `sudo sysctl kernel.perf_event_paranoid=1`."
            ));
        }
    }
    if l.table.model.is_none() {
        notes.push(format!(
            "Event table: {}; use generic events or raw `rNNNN` codes.",
            tables::table_reason(&l.table)
        ));
    }
    notes
}

impl Listing {
    /// An example listing (an AMD Zen 5 VM, with or without a hardware PMU and IBS), for
    /// the tests of renderers and of the notes.
    pub fn example(hardware_pmu: bool, ibs: bool) -> Listing {
        let ibs_op = if ibs {
            IbsOut {
                present: true,
                attr_type: Some(11),
                formats: vec![FormatOut {
                    name: "cnt_ctl".into(),
                    spec: "config:19".into(),
                }],
                caps: [("zen4_ibs_extensions".to_string(), "1".to_string())].into(),
            }
        } else {
            ibs_out(None)
        };
        Listing {
            schema: 1,
            cpu: Some(CpuIdentity {
                vendor: "AuthenticAMD".into(),
                family: 0x1A,
                model: 2,
                stepping: 0,
                model_name: "AMD EPYC test".into(),
                hypervisor: true,
            }),
            virtualization: Some("cpuinfo flag `hypervisor`".into()),
            hardware_pmu,
            perf_event_paranoid: Some(2),
            perf_event_max_sample_rate: Some(12500),
            nmi_watchdog: Some(true),
            capabilities: Capabilities {
                max_precise: Some(0),
                precise_ip_max: if ibs { 2 } else { 0 },
                precise_ip_why: "test".into(),
                ibs_op,
                ibs_fetch: ibs_out(None),
                branch_stack: ProbeOut {
                    available: false,
                    error: Some("EOPNOTSUPP: x".into()),
                },
                counters: CountersOut {
                    usable: if hardware_pmu { 5 } else { 0 },
                    tried: vec![],
                },
            },
            pmus: vec![],
            events: vec![],
            table: TableOut {
                cpuid: Some("AuthenticAMD-26-2-0".into()),
                cpuid_source: Some(tables::CpuidSource::Cpuinfo),
                model: Some("x86/amdzen5"),
                mapfile_row: Some("AuthenticAMD-26-[[:xdigit:]]+,v1,amdzen5,core".into()),
                source: "test",
                events: vec![tables::TableEventOut {
                    name: "ex_ret_ops".into(),
                    topic: "pipeline".into(),
                    pmu: "cpu".into(),
                    terms: "event=0xc1".into(),
                    description: "retired macro-ops".into(),
                    long_description: None,
                    deprecated: false,
                }],
            },
            notes: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_notes_without_hardware_pmu() {
        let notes = notes(&Listing::example(false, false));
        assert!(notes
            .iter()
            .any(|n| n.contains("only software events work here")
                && n.contains("This is a VM without a virtual PMU")
                && n.contains("`-cpu host,pmu=on`")));
        assert!(notes.contains(&"IBS: not available (no ibs_op/ibs_fetch PMU) — precise attribution is not possible here; culprit annotate estimates skid instead (labelled)".to_string()));
        assert!(notes.iter().any(|n| n.starts_with("Precise sampling")));
        // Counter and watchdog notes only make sense with a PMU.
        assert!(!notes
            .iter()
            .any(|n| n.starts_with("General-purpose counters")));
        assert!(!notes.iter().any(|n| n.contains("NMI watchdog")));
    }

    #[test]
    fn test_notes_with_pmu_and_ibs() {
        let notes = notes(&Listing::example(true, true));
        assert!(
            !notes.iter().any(|n| n.starts_with("Precise sampling")),
            "{notes:?}"
        );
        assert!(!notes.iter().any(|n| n.starts_with("IBS")), "{notes:?}");
        assert!(
            !notes.iter().any(|n| n.starts_with("Hardware PMU")),
            "{notes:?}"
        );
        assert!(notes.contains(&"General-purpose counters: 5 usable together (more events than that are multiplexed and scaled).".to_string()));
        assert!(notes.iter().any(|n| n.contains("NMI watchdog is on")));
    }
}
