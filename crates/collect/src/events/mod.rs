//! Event specifications: parsing perf-style event strings (`cycles:u`, `r1a0`,
//! `cpu/event=0x1a0,umask=0x1e/`, `ls_any_fills_from_sys.all`, `cycles/period=100000/`) into
//! the fields of a `perf_event_attr`.
//!
//! Entry points: [`parse_event_list`] (`-e a,b/x=1,y=2/,c:u`), [`parse_event`],
//! [`default_event`] and [`cpu_clock`]. They read the running system's PMUs from sysfs; an
//! [`EventParser`] built with [`EventParser::new`] parses against any sysfs tree and CPU (this
//! is how the unit tests check exact config bits without hardware).
//!
//! The syntax is documented for users in `docs/events.md`.

use serde::Serialize;

use culprit_decode::abi::perf_type;

use crate::sysfs::Sysfs;

pub mod breakpoint;
pub mod generic;
mod modifiers;
mod parse;
pub(crate) mod suggest;
pub mod tables;

pub use parse::EventParser;

/// How often an event samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleRate {
    /// One sample every N events (`-c N`, `period=N`).
    Period(u64),
    /// About N samples per second (`-F N`, `freq=N`); the kernel adjusts the period.
    Frequency(u64),
}

/// A parsed event: everything needed to fill a `perf_event_attr`, plus its display name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSpec {
    /// The name as the user wrote it (e.g. `cycles:u`, `cpu/event=0x1a0,umask=0x1e/`); this is
    /// what goes into HEADER_EVENT_DESC and what reports print.
    pub name: String,
    /// The PMU's name (`cpu`, `software`, `ibs_op`, …) when known.
    pub pmu: Option<String>,
    /// `perf_event_attr.type`.
    pub attr_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1`.
    pub config1: u64,
    /// `perf_event_attr.config2`.
    pub config2: u64,
    /// Per-event sample rate from the event string (`/period=N/`, `/freq=N/`), overriding -c/-F.
    pub rate: Option<SampleRate>,
    /// `exclude_user` (from modifiers such as `:k`).
    pub exclude_user: bool,
    /// `exclude_kernel` (from modifiers such as `:u`).
    pub exclude_kernel: bool,
    /// `exclude_hv`.
    pub exclude_hv: bool,
    /// `precise_ip` from `:p`/`:pp`/`:ppp` (0..=3).
    pub precise_ip: u8,
    /// `:P` (perf's precise_max): a recording asks for precise_ip 3 and lowers it until the
    /// kernel accepts the event; counting leaves precise_ip alone.
    pub precise_max: bool,
    /// `exclude_idle` (`:I`).
    pub exclude_idle: bool,
    /// `exclude_host` (`:G`: count in guests only).
    pub exclude_host: bool,
    /// `exclude_guest`: set for every event unless modifiers say otherwise (perf's
    /// `event_attr_init`; `:u` and `:p` set it, `:H` keeps it, `:G` and the other modifiers
    /// clear it).
    pub exclude_guest: bool,
    /// `pinned` (`:D`): always on the PMU, or in error.
    pub pinned: bool,
    /// `exclusive` (`:e`): alone on the PMU while it counts.
    pub exclusive: bool,
    /// Membership of an event group (`{a,b}`, `{a,b}:S`); `None` outside a group. A group's
    /// members follow its leader in the list.
    pub group: Option<EventGroup>,
    /// `perf_event_attr.bp_type` of a hardware breakpoint (`mem:ADDR:rw`; see
    /// [`breakpoint`]): `HW_BREAKPOINT_R`/`W`/`X` bits; 0 for every other event. Its address
    /// and length are `config1` and `config2` (bp_addr and bp_len share their places).
    pub bp_type: u32,
    /// The CPUs an uncore PMU's event is opened on (its sysfs `cpumask`), system-wide, as
    /// perf does whatever the target; `None` for every core and software event.
    pub cpumask: Option<Vec<u32>>,
    /// The only CPUs the event's PMU counts on (a hybrid core PMU's sysfs `cpus`): opens on
    /// other CPUs are skipped, as perf skips them; `None`: every CPU.
    pub cpus: Option<Vec<u32>>,
    /// What one count is worth (as written) and in which unit, from the sysfs alias's
    /// `.scale`/`.unit` (RAPL: `2.3283064365386962890625e-10`, `Joules`) or the table's
    /// ScaleUnit (`64Bytes`): `stat` shows count × scale with the unit, as perf does.
    /// `None`: plain counts. See [`EventSpec::scale`].
    pub scale_unit: Option<(String, String)>,
    /// perf's per-event `call-graph=` term, overriding `-g`/`--call-graph` for this event.
    pub call_graph: Option<EventCallGraph>,
    /// perf's `stack-size=` term: the user stack bytes a DWARF call graph copies.
    pub stack_size: Option<u32>,
    /// The sample period the event's table gives (`period=` in its pmu-events terms): perf's
    /// "weak" term, used when neither the event's own `period=`/`freq=` nor `-c` sets one.
    /// `-F` does not override it (perf 6.1 records `mem_load_retired.l3_miss -F 99` with
    /// period 100007).
    pub table_period: Option<u64>,
}

impl EventSpec {
    /// The factor of [`EventSpec::scale_unit`] (1 without one, or when unreadable).
    pub fn scale(&self) -> f64 {
        self.scale_unit
            .as_ref()
            .and_then(|(s, _)| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite())
            .unwrap_or(1.0)
    }

    /// Whether the event counts on `cpu` (see [`EventSpec::cpus`]).
    pub fn counts_on(&self, cpu: u32) -> bool {
        self.cpus.as_ref().is_none_or(|cpus| cpus.contains(&cpu))
    }

    /// The sampling rate of this event in a recording, by perf's precedence: the event's own
    /// `period=`/`freq=`, then `-c`, then its table's period, then `-F`, then `default`.
    pub fn sample_rate(&self, global: Option<SampleRate>, default: SampleRate) -> SampleRate {
        let global_period = global.filter(|r| matches!(r, SampleRate::Period(_)));
        self.rate
            .or(global_period)
            .or(self.table_period.map(SampleRate::Period))
            .or(global)
            .unwrap_or(default)
    }
}

/// A call-graph mode named by an event's `call-graph=` term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventCallGraph {
    /// `call-graph=no`: no call chains for this event.
    No,
    /// `call-graph=fp`: kernel-walked frame pointers.
    Fp,
    /// `call-graph=dwarf`: register and stack copies (size: `stack-size=`, else the
    /// `--call-graph dwarf` size, else 8192 as perf).
    Dwarf,
}

/// An event's place in an event group (`perf record -e '{a,b}'`): its events are scheduled
/// on the PMU together (opened with the leader's fd as group_fd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EventGroup {
    /// The group's first event.
    pub leader: bool,
    /// `:S` (leader sampling): only the leader samples, and each of its samples reads every
    /// member's count (PERF_SAMPLE_READ of the group); members do not sample.
    pub leader_sampling: bool,
}

impl EventSpec {
    /// An event with the given name, PMU, type and config; everything else zero / unset.
    pub fn new(name: impl Into<String>, pmu: Option<&str>, attr_type: u32, config: u64) -> Self {
        EventSpec {
            name: name.into(),
            pmu: pmu.map(str::to_string),
            attr_type,
            config,
            config1: 0,
            config2: 0,
            rate: None,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            precise_ip: 0,
            precise_max: false,
            exclude_idle: false,
            exclude_host: false,
            exclude_guest: true,
            pinned: false,
            exclusive: false,
            group: None,
            bp_type: 0,
            cpumask: None,
            cpus: None,
            scale_unit: None,
            call_graph: None,
            stack_size: None,
            table_period: None,
        }
    }
}

impl EventSpec {
    /// The bits of the attr's bitfield word the event string chose: the privilege and
    /// guest/host/idle exclusions, pinned, exclusive and precise_ip (not `:P`'s, which only
    /// a recording uses).
    pub fn modifier_flags(&self) -> u64 {
        use culprit_decode::abi::attr_flag;
        let bits = [
            (self.exclude_user, attr_flag::EXCLUDE_USER),
            (self.exclude_kernel, attr_flag::EXCLUDE_KERNEL),
            (self.exclude_hv, attr_flag::EXCLUDE_HV),
            (self.exclude_idle, attr_flag::EXCLUDE_IDLE),
            (self.exclude_host, attr_flag::EXCLUDE_HOST),
            (self.exclude_guest, attr_flag::EXCLUDE_GUEST),
            (self.pinned, attr_flag::PINNED),
            (self.exclusive, attr_flag::EXCLUSIVE),
        ];
        bits.iter()
            .filter(|(on, _)| *on)
            .fold(0, |acc, (_, bit)| acc | bit)
            | (u64::from(self.precise_ip.min(3)) << attr_flag::PRECISE_IP_SHIFT)
    }
}

/// Why an event string was rejected. Every message names the input and says what would work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// An empty event (e.g. `-e ''` or `-e a,,b`).
    #[error("empty event name in `{spec}`: write events separated by commas, e.g. `-e cycles,instructions`")]
    Empty {
        /// The whole list as given.
        spec: String,
    },
    /// Malformed syntax (missing `/`, …).
    #[error("cannot parse event `{event}`: {why}")]
    Syntax {
        /// The event text.
        event: String,
        /// What is wrong.
        why: String,
    },
    /// A name that is neither generic, cache, raw, a CPU table event nor a sysfs alias.
    #[error("unknown event `{name}`{}; `culprit list` shows what this machine supports", suggest::did_you_mean(.suggestions))]
    UnknownEvent {
        /// The unknown name.
        name: String,
        /// Up to 3 close names.
        suggestions: Vec<String>,
    },
    /// `pmu/…/` with no such PMU in sysfs.
    #[error("unknown PMU `{pmu}` in `{event}`{}; PMUs on this machine: {}", suggest::did_you_mean(.suggestions), .available.join(", "))]
    UnknownPmu {
        /// The event text.
        event: String,
        /// The PMU name.
        pmu: String,
        /// Close PMU names.
        suggestions: Vec<String>,
        /// Every PMU in sysfs.
        available: Vec<String>,
    },
    /// A term the PMU has no format file, alias or special meaning for.
    #[error("unknown term `{term}` for {pmu} in `{event}`; valid terms: {}", .known.join(", "))]
    UnknownTerm {
        /// The event text.
        event: String,
        /// The PMU (or event kind, e.g. `generic event cycles`).
        pmu: String,
        /// The term.
        term: String,
        /// What is accepted there.
        known: Vec<String>,
    },
    /// A term value that is not a number (or not a valid name).
    #[error("bad value `{value}` for `{term}` in `{event}`: expected a decimal or 0x-hex number")]
    BadValue {
        /// The event text.
        event: String,
        /// The term.
        term: String,
        /// The value as written.
        value: String,
    },
    /// A value too wide for its format field.
    #[error("value {value:#x} for `{term}` in `{event}` does not fit `{field}` (max {max:#x})")]
    ValueOutOfRange {
        /// The event text.
        event: String,
        /// The term.
        term: String,
        /// The value.
        value: u64,
        /// The largest value that fits.
        max: u64,
        /// The field's sysfs spelling, e.g. `config:8-15`.
        field: String,
    },
    /// An unknown or unsupported modifier after `:`.
    #[error("bad modifier `{modifier}` in `{event}`: {why}; supported modifiers: u (user), k (kernel), h (hypervisor), G (guest), H (host), I (exclude idle), p/pp/ppp (precise), P (max precise), D (pinned), e (exclusive), S (group leader sampling)")]
    BadModifier {
        /// The event text.
        event: String,
        /// The modifier character(s).
        modifier: String,
        /// Why it is rejected.
        why: String,
    },
    /// `:p…` asks for more precision than the machine offers.
    #[error(
        "`{event}` asks for precise_ip={requested}, but this machine supports at most {max}: {why}"
    )]
    PreciseUnavailable {
        /// The event text.
        event: String,
        /// Requested precise_ip.
        requested: u8,
        /// What is available.
        max: u8,
        /// The reason and what to do instead.
        why: String,
    },
    /// An IBS PMU was named but the machine has none.
    #[error("`{event}`: IBS is not available here (no `{pmu}` PMU under /sys/bus/event_source/devices). IBS needs an AMD CPU on bare metal or a VM that exposes it; precise attribution is not possible here — sample {instead} instead (culprit annotate then estimates skid, labelled)")]
    IbsUnavailable {
        /// The event text.
        event: String,
        /// `ibs_op` or `ibs_fetch`.
        pmu: String,
        /// What to sample instead: `` `cycles` `` where a core PMU exists, else
        /// `` `cpu-clock` `` (a VM without a PMU has no cycles either).
        instead: &'static str,
    },
    /// A named event of another CPU's table (perf's tables), not of this CPU's.
    #[error("`{name}` is not an event of this CPU: perf's tables have it for {models}, but this CPU is {cpu}; `culprit list` shows this CPU's events{}", suggest::did_you_mean(.suggestions))]
    WrongCpu {
        /// The event name.
        name: String,
        /// The models whose tables have it (`x86/amdzen4, x86/amdzen5`).
        models: String,
        /// This CPU: identity, CPU id string and the table chosen (or that none matched).
        cpu: String,
        /// Up to 3 close names of this CPU's events.
        suggestions: Vec<String>,
    },
    /// A named event of this CPU's table whose PMU is not in sysfs (perf refuses it too).
    #[error("`{event}` is a {model} event of the `{pmu}` PMU, which this machine does not have (not under /sys/bus/event_source/devices; perf refuses it as well, with \"event syntax error\"){hint}")]
    NoPmuForEvent {
        /// The event text.
        event: String,
        /// perf's PMU name for it (`cpu`, `uncore_imc`, `amd_l3`, …).
        pmu: String,
        /// The table (`x86/skylakex`).
        model: String,
        /// What to do instead.
        hint: String,
    },
    /// Valid syntax culprit does not implement.
    #[error("`{event}`: {what}")]
    Unsupported {
        /// The event text.
        event: String,
        /// What is unsupported and what to do instead.
        what: String,
    },
    /// A tracepoint (`SYSTEM:NAME`) that cannot be used.
    #[error(transparent)]
    Tracepoint {
        /// Why.
        error: crate::tracefs::TracefsError,
    },
    /// A PMU's sysfs description could not be read or parsed.
    #[error("reading PMU `{pmu}`: {message}")]
    Sysfs {
        /// The PMU.
        pmu: String,
        /// The underlying error.
        message: String,
    },
}

/// Parses a comma-separated event list (`-e a,b/x=1,y=2/,c:u`) against the running system.
pub fn parse_event_list(spec: &str) -> Result<Vec<EventSpec>, EventError> {
    EventParser::system().parse_event_list(spec)
}

/// Parses one event against the running system.
pub fn parse_event(s: &str) -> Result<EventSpec, EventError> {
    EventParser::system().parse_event(s)
}

/// [`EventParser::precise_refusal`] on the running system (only consulted for precise events).
pub fn check_precise(spec: &EventSpec) -> Result<(), EventError> {
    if spec.precise_ip == 0 {
        return Ok(());
    }
    EventParser::system().precise_refusal(spec)
}

/// The default sampling event: generic hardware `cycles`. (Callers fall back to
/// [`cpu_clock`] when it does not open.)
pub fn default_event() -> EventSpec {
    EventSpec::new("cycles", None, perf_type::HARDWARE, 0)
}

/// The software `cpu-clock` event (a high-resolution timer; works everywhere).
pub fn cpu_clock() -> EventSpec {
    EventSpec::new("cpu-clock", Some("software"), perf_type::SOFTWARE, 0)
}

/// Names a user can write, for suggestions and listings: generic, software, cache names,
/// this CPU's table events (`table`) plus `pmu/alias/` and the bare alias for every sysfs
/// alias.
pub fn known_names(sysfs: &Sysfs, table: Option<&culprit_pmu_events::CpuTable>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in generic::HARDWARE.iter().chain(generic::SOFTWARE) {
        names.extend(e.names.iter().map(|n| n.to_string()));
    }
    names.extend(generic::cache_events().into_iter().map(|(n, _)| n));
    if let Some(table) = table {
        names.extend(
            table
                .events
                .iter()
                .filter(|e| !e.deprecated)
                .map(|e| e.name.to_string()),
        );
    }
    for pmu in sysfs.pmus() {
        for a in &pmu.events {
            // Both spellings: `msr/tsc/` and the bare `tsc` (accepted when unambiguous).
            names.push(format!("{}/{}/", pmu.name, a.name));
            names.push(a.name.clone());
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The names a misspelt event may be suggested as: [`known_names`] without the hardware and
/// cache events when this machine has no core PMU (a VM without a virtual PMU): suggesting
/// `cycles` for `cyles` there only trades one error for another.
pub fn openable_names(sysfs: &Sysfs, table: Option<&culprit_pmu_events::CpuTable>) -> Vec<String> {
    let mut names = known_names(sysfs, table);
    if !has_core_pmu(sysfs) {
        let hardware: std::collections::HashSet<String> = generic::HARDWARE
            .iter()
            .flat_map(|e| e.names.iter().map(|n| n.to_string()))
            .chain(generic::cache_events().into_iter().map(|(n, _)| n))
            .collect();
        names.retain(|n| !hardware.contains(n));
    }
    names
}

/// Whether a core PMU is present: the kernel registers the CPU's own PMU as
/// PERF_TYPE_RAW (4): `cpu` on x86, `cpu_core` on hybrid Intel, `armv8_pmuv3_0` on arm64.
pub fn has_core_pmu(sysfs: &Sysfs) -> bool {
    sysfs
        .pmus()
        .iter()
        .any(|p| p.attr_type == culprit_decode::abi::perf_type::RAW)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tables;
