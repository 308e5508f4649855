//! Event specifications: parsing perf-style event strings (`cycles:u`, `r1a0`,
//! `cpu/event=0x1a0,umask=0x1e/`, `ls_any_fills_from_sys.all`, `cycles/period=100000/`) into
//! the fields of a `perf_event_attr`.

/// How often an event samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRate {
    /// One sample every N events (`-c N`, `period=N`).
    Period(u64),
    /// About N samples per second (`-F N`, `freq=N`); the kernel adjusts the period.
    Frequency(u64),
}

/// A parsed event: everything needed to fill a `perf_event_attr`, plus its display name.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}
