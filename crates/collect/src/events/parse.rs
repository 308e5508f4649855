//! The event-string parser (perf's `-e` syntax, see `docs/events.md`).
//!
//! Grammar, informally:
//!
//! ```text
//! list   := event (',' event)*            commas inside /…/ do not split
//! event  := name [':' mods]
//!         | name '/' terms '/' [[':'] mods]   name is a PMU, or an event taking terms
//! terms  := term (',' term)*
//! term   := key ['=' value]               bare key = 1, or a sysfs alias to expand
//! mods   := [ukhpP]+
//! ```

use culprit_decode::abi::perf_type;

use crate::sysfs::{ConfigWord, CpuIdentity, FormatField, Pmu, Sysfs};
use crate::tracefs::{split_tracepoint, Tracefs, TracefsError};

use std::sync::OnceLock;

use culprit_pmu_events::{CpuTable, Event as TableEvent};

use super::generic;
use super::tables::{self, CpuidSource};
use super::{suggest, EventCallGraph, EventError, EventGroup, EventSpec, SampleRate};

mod group;
mod terms;

/// Terms every event accepts.
const SPECIAL_TERMS: &[&str] = &["period", "freq", "name", "call-graph", "stack-size"];
/// Terms that set a whole config word (PMU events only).
const CONFIG_TERMS: &[&str] = &["config", "config1", "config2"];

/// Parses event strings against one sysfs tree and CPU identity.
#[derive(Debug, Clone)]
pub struct EventParser {
    sysfs: Sysfs,
    cpu: Option<CpuIdentity>,
    /// perf's CPU id string that picks the event table, and where it came from.
    cpuid: Option<(String, CpuidSource)>,
    /// This CPU's table, looked up on first use (`None` inside: no table for the CPU).
    table: OnceLock<Option<CpuTable>>,
    /// Where tracepoints (`SYSTEM:NAME`) are looked up; `None`: not mounted.
    tracefs: Option<Tracefs>,
    /// Whether the kernel takes a PMU type in the high word of a generic event's config
    /// (perf's extended type, which hybrid CPUs need to open `cycles` on each core PMU):
    /// probed on first use, as perf 6.12 does, or set by [`EventParser::with_extended_type`].
    extended_type: OnceLock<bool>,
}

/// perf's PERF_PMU_TYPE_SHIFT: a generic event's config carries the PMU type above it.
const PMU_TYPE_SHIFT: u32 = 32;

/// What a name (before `/` or `:`) resolved to.
enum Target {
    /// A generic hardware, software or cache event, or a raw code: fixed type and config.
    Fixed {
        attr_type: u32,
        config: u64,
        pmu: Option<String>,
        /// The `cpu` PMU when it is a raw event, for its format terms.
        format_pmu: Option<Pmu>,
        kind: String,
    },
    /// A sysfs PMU (`cpu/…/`), terms required or optional.
    Pmu(Pmu),
    /// A named event of this CPU's table, on the sysfs PMU that serves it.
    Table(TableEvent, Pmu),
    /// One name that opens on several PMUs, as perf does: a table event on each numbered
    /// uncore instance (`uncore_imc_0`, `_1`, …) or on each hybrid core PMU that has it
    /// (`cpu_core`, `cpu_atom`), or `uncore_imc/…/` on each instance. One event each.
    Each {
        targets: Vec<Target>,
        /// The PMUs are a hybrid CPU's core PMUs: each one's event is reported apart, named
        /// as perf names it (`cpu_core/br_misp_retired.all_branches/`). Otherwise they are
        /// uncore instances, summed under the name as written.
        per_core_pmu: bool,
    },
}

/// Accumulates config words while terms are applied.
#[derive(Default)]
struct Words {
    config: u64,
    config1: u64,
    config2: u64,
    rate: Option<SampleRate>,
    /// The table's `period=` (weak: see EventSpec::table_period).
    table_period: Option<u64>,
    /// From the alias or table event used (EventSpec::scale_unit).
    scale_unit: Option<(String, String)>,
    /// `call-graph=` and `stack-size=` (EventSpec::call_graph).
    call_graph: Option<EventCallGraph>,
    stack_size: Option<u32>,
    name: Option<String>,
}

impl Words {
    fn set_field(
        &mut self,
        field: &FormatField,
        value: u64,
        event: &str,
    ) -> Result<(), EventError> {
        let (mask, bits) = field
            .place(value)
            .ok_or_else(|| EventError::ValueOutOfRange {
                event: event.to_string(),
                term: field.name.clone(),
                value,
                max: field.max_value(),
                field: field.spec(),
            })?;
        let word = match field.word {
            ConfigWord::Config => &mut self.config,
            ConfigWord::Config1 => &mut self.config1,
            ConfigWord::Config2 => &mut self.config2,
            ConfigWord::Config3 => {
                return Err(EventError::Unsupported {
                    event: event.to_string(),
                    what: format!(
                        "term `{}` writes config3, which culprit cannot pass to the kernel yet",
                        field.name
                    ),
                })
            }
        };
        *word = (*word & !mask) | bits;
        Ok(())
    }
}

/// Parses `123` or `0x7b`.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        s.parse::<u64>().ok()
    }
}

/// Splits `a=b,c` into `(key, Some(value))`/`(key, None)` pairs.
fn split_terms(terms: &str) -> Vec<(&str, Option<&str>)> {
    terms
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (t, None),
        })
        .collect()
}

impl EventParser {
    /// A parser for the running system: `/sys/bus/event_source/devices` and `/proc/cpuinfo`.
    pub fn system() -> EventParser {
        let cpu = crate::sysfs::cpu_identity();
        let cpuid = tables::system_cpuid(cpu.as_ref());
        let mut parser = EventParser::new(Sysfs::system(), cpu).with_tracefs(Tracefs::system());
        parser.cpuid = cpuid;
        parser
    }

    /// A parser for the given PMU tree and CPU (`None`: unknown CPU, no event table unless
    /// [`EventParser::with_cpuid`] names one).
    pub fn new(sysfs: Sysfs, cpu: Option<CpuIdentity>) -> EventParser {
        let cpuid = cpu
            .as_ref()
            .map(|c| (tables::cpuid_string(c), CpuidSource::Cpuinfo));
        EventParser {
            sysfs,
            cpu,
            cpuid,
            table: OnceLock::new(),
            tracefs: None,
            extended_type: OnceLock::new(),
        }
    }

    /// The same parser with the kernel's extended-type support given instead of probed.
    pub fn with_extended_type(self, supported: bool) -> EventParser {
        let _ = self.extended_type.set(supported);
        self
    }

    /// The core PMUs of a hybrid CPU (`cpu_atom`, `cpu_core`: PMUs named `cpu_*` that
    /// publish their `cpus`), sorted by name as perf scans them; empty elsewhere.
    fn hybrid_core_pmus(&self) -> Vec<Pmu> {
        let names = self.sysfs.pmu_names();
        if names.iter().any(|n| n == "cpu") {
            return Vec::new();
        }
        let pmus: Vec<Pmu> = names
            .iter()
            .filter(|n| n.starts_with("cpu_"))
            .filter_map(|n| self.sysfs.pmu(n).ok().flatten())
            .filter(|p| p.cpus.is_some())
            .collect();
        if pmus.len() < 2 {
            return Vec::new();
        }
        pmus
    }

    /// perf 6.12's probe of extended types: `cycles` with the first core PMU's type in its
    /// config, user space only, must open.
    fn supports_extended_type(&self, first_core: &Pmu) -> bool {
        *self.extended_type.get_or_init(|| {
            let config = (u64::from(first_core.attr_type) << PMU_TYPE_SHIFT)
                | u64::from(crate::support::HW_CPU_CYCLES);
            crate::support::try_open_counter(perf_type::HARDWARE, config).is_ok()
        })
    }

    /// A generic hardware or cache event on a hybrid CPU whose kernel takes extended types:
    /// one event per core PMU (`cpu_atom/cycles/`, `cpu_core/cycles/`), its type in the
    /// config's high word, on that PMU's CPUs, as perf opens it. `None`: not hybrid.
    fn hybrid_generic(&self, attr_type: u32, config: u64, kind: &str) -> Option<Target> {
        if attr_type != perf_type::HARDWARE && attr_type != perf_type::HW_CACHE {
            return None;
        }
        let cores = self.hybrid_core_pmus();
        let first = cores.first()?;
        if !self.supports_extended_type(first) {
            return None;
        }
        let targets = cores
            .iter()
            .map(|pmu| Target::Fixed {
                attr_type,
                config: config | (u64::from(pmu.attr_type) << PMU_TYPE_SHIFT),
                pmu: Some(pmu.name.clone()),
                format_pmu: Some(pmu.clone()),
                kind: kind.to_string(),
            })
            .collect();
        Some(Target::Each {
            targets,
            per_core_pmu: true,
        })
    }

    /// The same parser, choosing the event table by this CPU id string (as `PERF_CPUID`).
    pub fn with_cpuid(mut self, cpuid: impl Into<String>) -> EventParser {
        self.cpuid = Some((cpuid.into(), CpuidSource::Given));
        self.table = OnceLock::new();
        self
    }

    /// perf's CPU id string for this parser's CPU and where it came from.
    pub fn cpuid(&self) -> Option<(&str, CpuidSource)> {
        self.cpuid.as_ref().map(|(id, src)| (id.as_str(), *src))
    }

    /// This CPU's event table (perf's pmu-events for the model), when the tables know it.
    pub fn table(&self) -> Option<&CpuTable> {
        self.table
            .get_or_init(|| {
                self.cpuid
                    .as_ref()
                    .and_then(|(id, _)| tables::table_for(id))
            })
            .as_ref()
    }

    /// Names a user can write here (generic, cache, this CPU's table, sysfs aliases).
    pub fn known_names(&self) -> Vec<String> {
        super::known_names(&self.sysfs, self.table())
    }

    /// The same parser, looking tracepoints up in `tracefs` (`None`: tracepoints are
    /// refused as "not mounted").
    pub fn with_tracefs(mut self, tracefs: Option<Tracefs>) -> EventParser {
        self.tracefs = tracefs;
        self
    }

    /// Whether an event string names a tracepoint: `SYSTEM:NAME` whose first part is no
    /// event of its own (`cycles:x` is an event with a bad modifier, refused as such).
    fn is_tracepoint(&self, event: &str) -> bool {
        // `mem:…` is a breakpoint, even a malformed one (its parser says what is wrong).
        if super::breakpoint::is_breakpoint(event) {
            return false;
        }
        split_tracepoint(event).is_some_and(|(sys, _)| {
            generic::lookup(generic::HARDWARE, sys).is_none()
                && generic::lookup(generic::SOFTWARE, sys).is_none()
                && generic::parse_cache(sys).is_none()
                && self.table().is_none_or(|t| t.event(sys).is_none())
        })
    }

    /// The tracepoints matching `SYSTEM:NAME` (wildcards expand to every match, as perf
    /// does), as events of type PERF_TYPE_TRACEPOINT with the tracepoint's id as config,
    /// named `system:name`.
    pub fn tracepoints(&self, pattern: &str) -> Result<Vec<EventSpec>, EventError> {
        let tracefs = self
            .tracefs
            .as_ref()
            .ok_or_else(|| EventError::Tracepoint {
                error: TracefsError::NotMounted {
                    event: pattern.to_string(),
                },
            })?;
        let wrap = |error| EventError::Tracepoint { error };
        tracefs
            .expand(pattern)
            .map_err(wrap)?
            .into_iter()
            .map(|(sys, name)| {
                let id = tracefs.id(&sys, &name).map_err(wrap)?;
                Ok(EventSpec::new(
                    format!("{sys}:{name}"),
                    Some("tracepoint"),
                    perf_type::TRACEPOINT,
                    id,
                ))
            })
            .collect()
    }

    /// The PMU tree this parser reads.
    pub fn sysfs(&self) -> &Sysfs {
        &self.sysfs
    }

    /// Parses one event; where it opens on several PMUs (uncore instances, hybrid cores),
    /// the first of them (lists, [`Self::parse_event_list`], keep every one).
    pub fn parse_event(&self, s: &str) -> Result<EventSpec, EventError> {
        let mut specs = self.parse_event_instances(s)?;
        Ok(specs.swap_remove(0))
    }

    /// Parses one event into the events perf would open for it: one, or one per PMU it
    /// opens on (`unc_m_cas_count.rd` on each `uncore_imc_N`). Never empty.
    pub fn parse_event_instances(&self, s: &str) -> Result<Vec<EventSpec>, EventError> {
        let event = s.trim();
        if event.is_empty() {
            return Err(EventError::Empty {
                spec: s.to_string(),
            });
        }
        if super::breakpoint::is_breakpoint(event) {
            let (mut spec, mods) = super::breakpoint::parse(event)?;
            self.apply_modifiers(&mut spec, mods, event, false)?;
            return Ok(vec![spec]);
        }
        let (head, terms, mods) = match event.split_once('/') {
            Some((head, rest)) => {
                let (terms, tail) = rest.split_once('/').ok_or_else(|| EventError::Syntax {
                    event: event.to_string(),
                    why: "missing the closing `/` (write `pmu/term=value,…/`)".to_string(),
                })?;
                if tail.contains('/') {
                    return Err(EventError::Syntax {
                        event: event.to_string(),
                        why: "too many `/` (write `pmu/term=value,…/`, one event per comma)"
                            .to_string(),
                    });
                }
                (head, Some(terms), tail.strip_prefix(':').unwrap_or(tail))
            }
            None => match event.split_once(':') {
                Some((head, mods)) => (head, None, mods),
                None => (event, None, ""),
            },
        };
        if head.is_empty() {
            return Err(EventError::Syntax {
                event: event.to_string(),
                why: "no event or PMU name before `/`".to_string(),
            });
        }
        if terms.is_none() && self.is_tracepoint(event) {
            let tps = self.tracepoints(event)?;
            if tps.len() == 1 {
                return Ok(tps);
            }
            return Err(EventError::Unsupported {
                event: event.to_string(),
                what: format!(
                    "matches {} tracepoints where one event is expected; `-e` lists expand it",
                    tps.len()
                ),
            });
        }
        let (targets, per_core_pmu) = match self.resolve(head, event, terms)? {
            Target::Each {
                targets,
                per_core_pmu,
            } => (targets, per_core_pmu),
            target => (vec![target], false),
        };
        let mut specs = Vec::with_capacity(targets.len());
        for target in targets {
            let mut spec = self.build(target, terms.unwrap_or(""), event)?;
            self.apply_modifiers(&mut spec, mods, event, false)?;
            if per_core_pmu {
                if let Some(pmu) = spec.pmu.as_deref() {
                    let base = event.split([':', '/']).next().unwrap_or(event);
                    let mods = event.split_once(':').map_or("", |(_, m)| m);
                    spec.name = format!("{pmu}/{base}/{mods}");
                }
            }
            specs.push(spec);
        }
        Ok(specs)
    }

    fn read_pmu(&self, name: &str) -> Result<Option<Pmu>, EventError> {
        self.sysfs.pmu(name).map_err(|e| EventError::Sysfs {
            pmu: name.to_string(),
            message: e.to_string(),
        })
    }

    /// Resolves the name part of an event.
    fn resolve(&self, head: &str, event: &str, terms: Option<&str>) -> Result<Target, EventError> {
        let has_terms = terms.is_some();
        // perf's precedence: generic names first, so `cycles` is always perf_type::HARDWARE.
        if let Some(e) = generic::lookup(generic::HARDWARE, head) {
            let kind = format!("generic event {}", e.names[0]);
            if let Some(each) = self.hybrid_generic(perf_type::HARDWARE, e.config, &kind) {
                return Ok(each);
            }
            return Ok(Target::Fixed {
                attr_type: perf_type::HARDWARE,
                config: e.config,
                pmu: None,
                format_pmu: None,
                kind,
            });
        }
        if let Some(e) = generic::lookup(generic::SOFTWARE, head) {
            return Ok(Target::Fixed {
                attr_type: perf_type::SOFTWARE,
                config: e.config,
                pmu: Some("software".to_string()),
                format_pmu: None,
                kind: format!("software event {}", e.names[0]),
            });
        }
        if let Some(config) = generic::parse_cache(head) {
            let kind = format!("cache event {head}");
            if let Some(each) = self.hybrid_generic(perf_type::HW_CACHE, config, &kind) {
                return Ok(each);
            }
            return Ok(Target::Fixed {
                attr_type: perf_type::HW_CACHE,
                config,
                pmu: None,
                format_pmu: None,
                kind,
            });
        }
        if has_terms && self.sysfs.has_pmu(head) {
            return match self.read_pmu(head)? {
                Some(pmu) => Ok(Target::Pmu(pmu)),
                None => Err(self.unknown_pmu(head, event)),
            };
        }
        if has_terms {
            // `uncore_imc/event=0x4/`: each numbered instance, as perf.
            let instances = tables::pmu_instances(&self.sysfs.pmu_names(), head);
            let mut targets = Vec::with_capacity(instances.len());
            for name in instances {
                if let Some(pmu) = self.read_pmu(&name)? {
                    targets.push(Target::Pmu(pmu));
                }
            }
            if !targets.is_empty() {
                return Ok(Target::Each {
                    targets,
                    per_core_pmu: false,
                });
            }
        }
        if let Some(raw) = parse_raw(head) {
            let cpu_pmu = self.read_pmu("cpu")?;
            return Ok(Target::Fixed {
                attr_type: perf_type::RAW,
                config: raw,
                pmu: Some("cpu".to_string()),
                format_pmu: cpu_pmu,
                kind: format!("raw event {head}"),
            });
        }
        if let Some(target) = self.resolve_table_event(head, event)? {
            return Ok(target);
        }
        if has_terms {
            if head.starts_with("ibs_") {
                return Err(EventError::IbsUnavailable {
                    event: event.to_string(),
                    pmu: head.to_string(),
                    instead: self.precise_fallback(),
                });
            }
            let err = self.unknown_pmu(head, event);
            // `cycels/period=1/` (only per-event settings) is a misspelled event more likely
            // than a PMU.
            let only_special = split_terms(terms.unwrap_or(""))
                .iter()
                .all(|(k, _)| SPECIAL_TERMS.contains(k));
            if let EventError::UnknownPmu { suggestions, .. } = &err {
                if suggestions.is_empty() && only_special {
                    let names = self.known_names();
                    let close = suggest::closest(head, names.iter().map(String::as_str));
                    if !close.is_empty() {
                        return Err(EventError::UnknownEvent {
                            name: head.to_string(),
                            suggestions: close,
                        });
                    }
                }
            }
            return Err(err);
        }
        // A bare sysfs alias (`tsc` → `msr/tsc/`), when exactly one PMU has it.
        let owners: Vec<Pmu> = self
            .sysfs
            .pmus()
            .into_iter()
            .filter(|p| p.alias(head).is_some())
            .collect();
        if owners.len() == 1 {
            if let Some(pmu) = owners.into_iter().next() {
                return Ok(Target::Pmu(pmu));
            }
        }
        if head.starts_with("ibs_") {
            return Err(EventError::IbsUnavailable {
                event: event.to_string(),
                pmu: head.to_string(),
                instead: self.precise_fallback(),
            });
        }
        let names = super::openable_names(&self.sysfs, self.table());
        let mut suggestions = suggest::closest(head, names.iter().map(String::as_str));
        if suggestions.is_empty() && self.sysfs.has_pmu(head) {
            suggestions.push(format!("{head}/…/"));
        }
        let model = self.table().map(|t| t.row.model);
        let others = tables::models_with_event(head, model);
        if !others.is_empty() {
            return Err(EventError::WrongCpu {
                name: head.to_string(),
                models: others.join(", "),
                cpu: self.describe_cpu(),
                suggestions,
            });
        }
        Err(EventError::UnknownEvent {
            name: head.to_string(),
            suggestions,
        })
    }

    /// The event to sample when precise hardware (IBS) is missing, for messages.
    fn precise_fallback(&self) -> &'static str {
        if super::has_core_pmu(&self.sysfs) {
            "`cycles` or `cpu-clock`"
        } else {
            "`cpu-clock` (this machine has no hardware PMU, so no `cycles` either)"
        }
    }

    /// This CPU for messages: identity, perf's CPU id string and the table it picks.
    fn describe_cpu(&self) -> String {
        let who = self
            .cpu
            .as_ref()
            .map(|c| c.describe())
            .unwrap_or_else(|| "unknown".to_string());
        match (self.cpuid(), self.table()) {
            (Some((id, _)), Some(t)) => format!("{who}, CPU id {id}, table {}", t.row.model),
            (Some((id, _)), None) => format!("{who}, CPU id {id}, which no table matches"),
            (None, _) => who,
        }
    }

    /// A bare name from this CPU's table: the sysfs PMU that serves it, or perf's refusal
    /// when that PMU is missing. `None`: not a table event of this CPU.
    fn resolve_table_event(&self, head: &str, event: &str) -> Result<Option<Target>, EventError> {
        let Some(table) = self.table() else {
            return Ok(None);
        };
        let mut first_missing = None;
        let mut found = Vec::new();
        for e in table.events_named(head) {
            match tables::event_pmus(&self.sysfs, e.pmu) {
                Ok(pmus) if pmus.is_empty() => {
                    first_missing.get_or_insert(e);
                }
                Ok(pmus) => found.extend(pmus.into_iter().map(|p| Target::Table(e.clone(), p))),
                Err(message) => {
                    return Err(EventError::Sysfs {
                        pmu: e.pmu.to_string(),
                        message,
                    })
                }
            }
        }
        if found.len() == 1 {
            return Ok(found.pop());
        }
        if !found.is_empty() {
            // A hybrid CPU's table names the event once per core PMU (`cpu_core`,
            // `cpu_atom`); an uncore event is one entry on each numbered instance.
            let per_core_pmu = found.iter().all(
                |t| matches!(t, Target::Table(_, pmu) if pmu.name.starts_with("cpu_") && pmu.cpumask.is_none()),
            );
            return Ok(Some(Target::Each {
                targets: found,
                per_core_pmu,
            }));
        }
        let Some(e) = first_missing else {
            return Ok(None);
        };
        let pmu = tables::display_pmu(&table.row, e.pmu);
        let hint = if e.pmu == culprit_pmu_events::DEFAULT_CORE {
            "; a VM needs a virtual PMU for hardware events; software events (cpu-clock, task-clock) work here".to_string()
        } else {
            format!(
                "; perf opens it on `{pmu}` (or each `{pmu}_N` instance), which this machine lacks"
            )
        };
        Err(EventError::NoPmuForEvent {
            event: event.to_string(),
            pmu,
            model: table.row.model.to_string(),
            hint,
        })
    }

    fn unknown_pmu(&self, pmu: &str, event: &str) -> EventError {
        let available = self.sysfs.pmu_names();
        EventError::UnknownPmu {
            event: event.to_string(),
            pmu: pmu.to_string(),
            suggestions: suggest::closest(pmu, available.iter().map(String::as_str)),
            available,
        }
    }

    /// Why this machine will refuse `spec`'s precise_ip, with what to do instead (`Ok`: it
    /// may open). perf leaves this to the kernel (EINVAL/EOPNOTSUPP at open): record, stat
    /// and top call it after showing the attr (`-vv`), just before the open, so the attr is
    /// perf's while the error explains (AMD: IBS serves only cycles and ops).
    pub fn precise_refusal(&self, spec: &EventSpec) -> Result<(), EventError> {
        let p = spec.precise_ip;
        let (max, why) = self.max_precise();
        if p > 0 && self.precise_applies(spec) && p <= max && !self.ibs_can_serve(spec) {
            return Err(EventError::PreciseUnavailable {
                event: spec.name.clone(),
                requested: p,
                max: 0,
                why: "on AMD, `:p` is served by IBS, which the kernel allows only for cycles / \
                      ls_not_halted_cyc (r76) and ex_ret_ops (rC1); for exact IPs of other work \
                      sample `-e ibs_op//` (every op, with its cache/TLB/branch outcome)"
                    .to_string(),
            });
        }
        if p > 0 && self.precise_applies(spec) && p > max {
            let mut why = why;
            if self.sysfs.has_pmu("ibs_op") {
                why.push_str("; for exact IPs sample with IBS instead: `-e ibs_op//`");
            } else {
                why.push_str("; drop the `p` modifiers: culprit annotate then estimates skid instead (labelled)");
            }
            return Err(EventError::PreciseUnavailable {
                event: spec.name.clone(),
                requested: p,
                max,
                why,
            });
        }
        Ok(())
    }

    /// IBS hardware samples every privilege level; the kernel filters user/kernel only in
    /// software, with the `swfilt` term (Linux 6.14+), and rejects exclude bits otherwise.
    fn check_ibs_privilege_filter(
        &self,
        spec: &EventSpec,
        mods: &str,
        event: &str,
    ) -> Result<(), EventError> {
        let Some(name) = spec.pmu.as_deref().filter(|n| n.starts_with("ibs_")) else {
            return Ok(());
        };
        let Some(pmu) = self.read_pmu(name)? else {
            return Ok(());
        };
        let why = match pmu.format("swfilt") {
            None => format!(
                "this kernel's {name} cannot filter by privilege level (no `swfilt` term; it \
                 arrived in Linux 6.14): drop `:{mods}` and filter samples afterwards"
            ),
            Some(f) => {
                let word = match f.word {
                    ConfigWord::Config => spec.config,
                    ConfigWord::Config1 => spec.config1,
                    ConfigWord::Config2 => spec.config2,
                    ConfigWord::Config3 => 0,
                };
                let (mask, _) = f.place(1).unwrap_or((0, 0));
                if word & mask != 0 {
                    return Ok(());
                }
                format!(
                    "IBS filters user/kernel in software only: add the `swfilt` term, e.g. \
                     `{name}/swfilt/{mods}`"
                )
            }
        };
        Err(EventError::BadModifier {
            event: event.to_string(),
            modifier: mods.to_string(),
            why,
        })
    }

    /// On AMD without PEBS-like core precision (only IBS), whether the kernel's IBS
    /// forwarding accepts this event: generic cycles, or raw 0x76 / 0xC1 on the core PMU.
    /// True where the question does not arise (not AMD, no IBS, or the core PMU itself is
    /// precise).
    fn ibs_can_serve(&self, spec: &EventSpec) -> bool {
        let amd = self.cpu.as_ref().is_some_and(|c| c.is_amd());
        let core_precise = self
            .sysfs
            .pmu("cpu")
            .ok()
            .flatten()
            .and_then(|p| p.cap("max_precise").and_then(|v| v.parse::<u8>().ok()))
            .is_some_and(|n| n > 0);
        if !amd || !self.sysfs.has_pmu("ibs_op") || core_precise {
            return true;
        }
        match spec.attr_type {
            perf_type::HARDWARE => spec.config == 0,
            perf_type::RAW => spec.config == 0x76 || spec.config == 0xC1,
            _ => false,
        }
    }

    /// Whether precise_ip matters for this event (hardware ones); software and IBS events
    /// are exempt.
    fn precise_applies(&self, spec: &EventSpec) -> bool {
        match spec.attr_type {
            perf_type::HARDWARE | perf_type::HW_CACHE | perf_type::RAW => true,
            t => spec.pmu.as_deref() == Some("cpu") && t != perf_type::SOFTWARE,
        }
    }

    /// The largest precise_ip this machine accepts and why: `cpu/caps/max_precise`; 0 when
    /// there is no `cpu` PMU at all (Arm's core PMUs have no precise mode); 3 (unchecked)
    /// when the file is missing.
    pub fn max_precise(&self) -> (u8, String) {
        match self.sysfs.pmu("cpu") {
            Ok(Some(cpu)) => {
                let ibs = self.sysfs.has_pmu("ibs_op");
                match cpu.cap("max_precise").and_then(|v| v.parse::<u8>().ok()) {
                    // The AMD core PMU forwards precise cycles / retired-ops events to IBS
                    // (precise_ip 1-2) whatever max_precise says.
                    Some(n) if ibs && n < 2 => (
                        2,
                        format!("cpu/caps/max_precise is {n}, and IBS serves precise_ip 1-2"),
                    ),
                    Some(0) => (
                        0,
                        "cpu/caps/max_precise is 0 (no PEBS or IBS: common in VMs)".to_string(),
                    ),
                    Some(n) => (n.min(3), format!("cpu/caps/max_precise is {n}")),
                    None => (3, "cpu/caps/max_precise is missing".to_string()),
                }
            }
            _ => {
                let names = self.sysfs.pmu_names();
                match names.iter().find(|n| super::tables::is_arm_core_pmu(n)) {
                    Some(arm) => (0, arm_precise_note(arm, names.iter().any(|n| n.starts_with("arm_spe")))),
                    None => (
                        0,
                        "there is no hardware PMU (no `cpu` PMU in sysfs; only software events work here)"
                            .to_string(),
                    ),
                }
            }
        }
    }
}

/// Why Arm's core PMU takes no `p` modifier, and what samples precisely there instead.
fn arm_precise_note(pmu: &str, has_spe: bool) -> String {
    let spe = if has_spe {
        "this CPU's SPE (the arm_spe PMU, recorded by `perf record -e arm_spe//` and decoded by culprit: docs/spe.md) samples precisely"
    } else {
        "precise samples on Arm come from SPE, which this machine does not expose (no arm_spe PMU)"
    };
    format!("the Arm core PMU ({pmu}) has no precise mode (its samples skid); {spe}")
}

/// A term's numeric value; a bare term means 1.
fn term_value(key: &str, value: Option<&str>, event: &str) -> Result<u64, EventError> {
    match value {
        None => Ok(1),
        Some(v) => parse_number(v).ok_or_else(|| EventError::BadValue {
            event: event.to_string(),
            term: key.to_string(),
            value: v.to_string(),
        }),
    }
}

/// `rNNNN` / `r0xNNNN` (hex) → the raw config.
fn parse_raw(head: &str) -> Option<u64> {
    let hex = head.strip_prefix('r')?;
    let hex = hex.strip_prefix("0x").unwrap_or(hex);
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}
