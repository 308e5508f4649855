//! The sample model: what a perf.data file says, resolved to processes, threads and mappings.
//!
//! Address vocabulary used across culprit:
//! - **AVMA** (actual virtual memory address): the address the CPU saw (`Sample::ip`,
//!   `Frame::addr`).
//! - **file offset**: `avma - mapping.start + mapping.pgoff`, the byte offset inside the mapped
//!   file. This is what [`Location::file_offset`] holds. For the kernel, the synthesized
//!   mapping has `pgoff == start`, so the "file offset" equals the kernel address.
//! - **SVMA** (stated virtual memory address): the address as the ELF file states it (what
//!   `objdump -d` prints). Converting a file offset to an SVMA needs the ELF program headers,
//!   so it is done by `culprit-symbols`, not here.
//! - **sampled IP** vs **skid-corrected IP**: the first is what the PMU interrupt reported; the
//!   second is culprit's estimate of the instruction that caused the event (annotate --deskid).

use serde::Serialize;

/// Index of a [`Dso`] in [`Profile::dsos`].
pub type DsoId = u32;
/// Index of an [`EventInfo`] in [`Profile::events`].
pub type EventId = u16;
/// Index of a string in [`Profile::strings`].
pub type StrId = u32;

/// Where the CPU was when the sample was taken (`misc & PERF_RECORD_MISC_CPUMODE_MASK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CpuMode {
    /// Unknown cpumode (0).
    #[default]
    Unknown,
    /// Kernel (1).
    Kernel,
    /// User space (2).
    User,
    /// Hypervisor (3).
    Hypervisor,
    /// Guest kernel (4).
    GuestKernel,
    /// Guest user (5).
    GuestUser,
}

impl EventInfo {
    /// Whether `-e wanted` selects this event: the name itself, or the name without perf's
    /// modifiers (`cpu-clock` selects `cpu-clock:ppp`, `cycles:u`, `cycles:P`), or the event
    /// named in a term list (`cycles/period=1000/`, `cpu/cycles/`). The one rule of every verb.
    pub fn matches(&self, wanted: &str) -> bool {
        event_name_matches(&self.name, |n| n == wanted)
    }
}

/// [`EventInfo::matches`] with a comparison of the name's spellings (for globs): whether
/// `same` holds for `name`, for `name` without its `:modifiers` (perf's modifier letters),
/// for the event before an empty term list or one of per-event settings only (`ibs_op//`,
/// `event/period=N/`), or for the event inside a term list without `=` (`pmu/event/`;
/// `pmu/event=0x3c/` only matches whole).
pub fn event_name_matches(name: &str, same: impl Fn(&str) -> bool) -> bool {
    if same(name) {
        return true;
    }
    // perf's modifier letters (`:u`, `:ppp`, `:HG`…): a tracepoint's `system:name` is no
    // modifier.
    let bare = match name.rsplit_once(':') {
        Some((event, mods))
            if !mods.is_empty() && mods.chars().all(|c| "ukhHGpPSDIWeb".contains(c)) =>
        {
            event
        }
        _ => name,
    };
    if same(bare) {
        return true;
    }
    if let Some((head, rest)) = bare.split_once('/') {
        let inner = rest.strip_suffix('/').unwrap_or(rest);
        let settings_only = inner.is_empty()
            || inner.split(',').all(|t| {
                ["period=", "freq=", "name=", "call-graph=", "stack-size="]
                    .iter()
                    .any(|p| t.starts_with(p))
            });
        if (settings_only && same(head)) || (!inner.contains('=') && same(inner)) {
            return true;
        }
    }
    false
}

/// The events of `profile` that the `-e` names select, in the order of the names (each event
/// once); `Err` names the first name that selects nothing, with the file's events.
pub fn select_events(profile: &Profile, wanted: &[String]) -> Result<Vec<EventId>, UnknownEvent> {
    let mut ids = Vec::new();
    for w in wanted {
        let before = ids.len();
        for (i, e) in profile.events.iter().enumerate() {
            let id = i as EventId;
            if e.matches(w) && !ids.contains(&id) {
                ids.push(id);
            }
        }
        if ids.len() == before && !profile.events.iter().any(|e| e.matches(w)) {
            // Nothing new and nothing at all: a name of no event.
            return Err(UnknownEvent {
                wanted: w.clone(),
                available: profile.events.iter().map(|e| e.name.clone()).collect(),
            });
        }
    }
    Ok(ids)
}

/// `-e NAME` selects no event of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no event '{wanted}' in the file (events: {})", available.join(", "))]
pub struct UnknownEvent {
    /// What was asked for.
    pub wanted: String,
    /// The file's events.
    pub available: Vec<String>,
}

impl CpuMode {
    /// Decodes the low three bits of a record's `misc` field.
    pub fn from_misc(misc: u16) -> CpuMode {
        match misc & 7 {
            1 => CpuMode::Kernel,
            2 => CpuMode::User,
            3 => CpuMode::Hypervisor,
            4 => CpuMode::GuestKernel,
            5 => CpuMode::GuestUser,
            _ => CpuMode::Unknown,
        }
    }

    /// perf's one-letter tag: `[k]` kernel, `[.]` user, `[H]` hypervisor, `[g]` guest.
    pub fn perf_tag(self) -> &'static str {
        match self {
            CpuMode::Kernel => "[k]",
            CpuMode::User => "[.]",
            CpuMode::Hypervisor => "[H]",
            CpuMode::GuestKernel | CpuMode::GuestUser => "[g]",
            CpuMode::Unknown => "[?]",
        }
    }
}

/// What kind of object a [`Dso`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DsoKind {
    /// An ELF file on disk (executable or shared library).
    Elf,
    /// The kernel image (`[kernel.kallsyms]`); symbolized from kallsyms.
    Kernel,
    /// A kernel module (`[name]` or a `.ko` path).
    KernelModule,
    /// The vDSO (`[vdso]`).
    Vdso,
    /// Anonymous or special mappings (`//anon`, `[heap]`, `[stack]`, JIT code).
    Anonymous,
    /// Kernel code a `PERF_RECORD_KSYMBOL` named (a BPF program's JIT image, a trampoline):
    /// named by the record alone, as perf does (the DSO and its one symbol are that name;
    /// file offsets count from the code's first byte).
    Ksymbol,
}

/// A shared object (or the kernel): one per distinct path (and build-id) seen in the file.
#[derive(Debug, Clone, Serialize)]
pub struct Dso {
    /// Path as recorded in MMAP/MMAP2 (e.g. `/usr/lib/x86_64-linux-gnu/libc.so.6`,
    /// `[kernel.kallsyms]`, `[vdso]`).
    pub path: String,
    /// perf's short name: file name of the path, or the bracketed name.
    pub short_name: String,
    /// Build-id from the HEADER_BUILD_ID feature or an MMAP2 build-id record, if any.
    pub build_id: Option<Vec<u8>>,
    /// What this object is.
    pub kind: DsoKind,
    /// The process this DSO belongs to, for per-process objects ([`DsoKind::Anonymous`]:
    /// `//anon`, `[heap]`, JIT regions whose symbols live in `/tmp/perf-PID.map`). `None` for
    /// files, the kernel and the vDSO, which are shared by all processes.
    pub pid: Option<i32>,
}

/// One event (attr) of the file, with totals over the file's samples.
#[derive(Debug, Clone, Serialize)]
pub struct EventInfo {
    /// Name from HEADER_EVENT_DESC, or synthesized from type/config like perf does.
    pub name: String,
    /// `perf_event_attr.type`.
    pub attr_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1`.
    pub config1: u64,
    /// `perf_event_attr.config2`.
    pub config2: u64,
    /// Sample period (when `freq` is false) or frequency in Hz (when `freq` is true).
    pub period_or_freq: u64,
    /// Whether `period_or_freq` is a frequency.
    pub freq: bool,
    /// `perf_event_attr.sample_type`.
    pub sample_type: u64,
    /// `perf_event_attr.precise_ip` (0..=3).
    pub precise_ip: u8,
    /// Name of the PMU from HEADER_PMU_MAPPINGS for `attr_type`, if known (e.g. `cpu`,
    /// `ibs_op`, `software`).
    pub pmu: Option<String>,
    /// Number of samples of this event in the file.
    pub samples: u64,
    /// Sum of the samples' periods (perf's "Event count").
    pub period: u64,
    /// Samples the kernel reported lost for this event (LOST / LOST_SAMPLES records
    /// attributed by sample id; unattributed losses count on event 0).
    pub lost: u64,
    /// `perf_event_attr.read_format`.
    pub read_format: u64,
    /// `perf_event_attr` flag bits (offset 40: disabled, inherit, …, exclude_*, precise_ip…).
    pub attr_flags: u64,
    /// `perf_event_attr.sample_regs_user`: which registers [`Sample::user_regs`] holds, in
    /// bit order (x86-64: AX, BX, CX, DX, SI, DI, BP, SP, IP, FLAGS, …).
    pub sample_regs_user: u64,
    /// `perf_event_attr.sample_stack_user`: bytes of user stack requested per sample.
    pub sample_stack_user: u32,
    /// `perf_event_attr.branch_sample_type`.
    pub branch_sample_type: u64,
    /// The sample ids of this event (from the attr ids section or HEADER_ATTR records).
    pub ids: Vec<u64>,
}

/// A resolved code location: which DSO and where inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct Location {
    /// The DSO the address falls in, or `None` if no mapping covers it.
    pub dso: Option<DsoId>,
    /// File offset inside the DSO (see the module doc); equals the address for the kernel,
    /// for anonymous/JIT regions ([`DsoKind::Anonymous`], whose symbols are by address) and
    /// for unmapped addresses.
    pub file_offset: u64,
}

impl Location {
    /// An address in no mapping: no DSO, the address itself as the offset.
    pub fn unmapped(addr: u64) -> Location {
        Location {
            dso: None,
            file_offset: addr,
        }
    }
}

/// One frame of a call chain (callee first, as the kernel records it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Frame {
    /// The address (a return address for all frames but the first, as recorded).
    pub addr: u64,
    /// Whether the frame is in the kernel or in user space.
    pub cpumode: CpuMode,
    /// Where the address falls.
    pub location: Location,
}

/// One PERF_RECORD_SAMPLE, decoded and resolved. `Default` is an empty sample (every optional
/// field absent), for building samples by hand in tests and tools.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Sample {
    /// Which event this sample belongs to (index into [`Profile::events`]).
    pub event: EventId,
    /// PERF_SAMPLE_TIME in nanoseconds (0 if absent).
    pub time: u64,
    /// Process id (-1 if absent).
    pub pid: i32,
    /// Thread id (-1 if absent).
    pub tid: i32,
    /// CPU number (0 if absent).
    pub cpu: u32,
    /// The sample's period: PERF_SAMPLE_PERIOD, or the attr's fixed period.
    pub period: u64,
    /// Sampled instruction pointer (AVMA).
    pub ip: u64,
    /// Where the sample was taken.
    pub cpumode: CpuMode,
    /// `PERF_RECORD_MISC_EXACT_IP`: the IP is precise (IBS, PEBS), never to be de-skidded.
    pub exact_ip: bool,
    /// The thread's command name at the time of the sample (index into [`Profile::strings`]).
    pub comm: StrId,
    /// Where `ip` falls.
    pub location: Location,
    /// Range into [`Profile::frames`] of this sample's call chain (callee first, context
    /// markers removed, the sampled IP first when the chain has it). Empty when not recorded.
    pub callchain: std::ops::Range<u32>,
    /// PERF_SAMPLE_ADDR (data address), if recorded.
    pub addr: Option<u64>,
    /// PERF_SAMPLE_WEIGHT / WEIGHT_STRUCT (first field), if recorded.
    pub weight: Option<u64>,
    /// PERF_SAMPLE_DATA_SRC, if recorded.
    pub data_src: Option<u64>,
    /// PERF_SAMPLE_PHYS_ADDR, if recorded.
    pub phys_addr: Option<u64>,
    /// Range into [`Profile::raw`] of the PERF_SAMPLE_RAW payload (without its u32 size).
    pub raw: std::ops::Range<u32>,
    /// PERF_SAMPLE_WEIGHT_STRUCT as recorded (var1_dw in bits 0..32, var2_w in 32..48,
    /// var3_w in 48..64), if recorded; `weight` holds var1_dw.
    pub weight_struct: Option<u64>,
    /// PERF_SAMPLE_TRANSACTION, if recorded.
    pub transaction: Option<u64>,
    /// PERF_SAMPLE_DATA_PAGE_SIZE, if recorded.
    pub data_page_size: Option<u64>,
    /// PERF_SAMPLE_CODE_PAGE_SIZE, if recorded.
    pub code_page_size: Option<u64>,
    /// PERF_SAMPLE_STREAM_ID, if recorded.
    pub stream_id: Option<u64>,
    /// PERF_SAMPLE_ID (or IDENTIFIER), if recorded.
    pub id: Option<u64>,
    /// Range into [`Profile::read_values`] of PERF_SAMPLE_READ values (one per group member,
    /// or one for a single counter). Empty when not recorded.
    pub read: std::ops::Range<u32>,
    /// Range into [`Profile::regs`] of the PERF_SAMPLE_REGS_USER values (in the order of the
    /// bits of [`EventInfo::sample_regs_user`]). Empty when not recorded or abi NONE.
    pub user_regs: std::ops::Range<u32>,
    /// Range into [`Profile::stacks`] of the PERF_SAMPLE_STACK_USER bytes actually valid
    /// (`dyn_size`), starting at the user stack pointer. Empty when not recorded.
    pub user_stack: std::ops::Range<u64>,
    /// Number of PERF_SAMPLE_BRANCH_STACK entries recorded.
    pub branch_count: u32,
    /// Range into [`Profile::branches`] of this sample's PERF_SAMPLE_BRANCH_STACK entries
    /// (most recent branch first, as recorded). Empty when not recorded.
    pub branches: std::ops::Range<u32>,
    /// PERF_SAMPLE_BRANCH_HW_INDEX: the hardware index of the most recent branch (`-1` when
    /// the hardware does not tell), when the attr's branch_sample_type asks for it.
    pub branch_hw_index: Option<u64>,
    /// ARM SPE: the record a synthesised sample (`l1d-miss`, `memory`, ...) was made from,
    /// for what the perf fields above do not carry. Boxed: almost no sample has one.
    pub spe: Option<Box<SpeFields>>,
}

/// The fields of the ARM SPE record behind a synthesised sample that perf's sample fields
/// leave out (perf keeps PC, data VA/PA, total latency and its data source encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct SpeFields {
    /// Event flags of the events packet (bit 3 L1D refill, 5 TLB walk, 7 mispredicted, 9 LLC
    /// miss, 10 remote access, ...; see `spe::record::EVENT_*`).
    pub events: u64,
    /// Total latency in cycles (dispatch to completion), if recorded.
    pub total_latency: Option<u16>,
    /// Issue latency in cycles (dispatch to issue), if recorded.
    pub issue_latency: Option<u16>,
    /// Translation latency of the data access in cycles, if recorded.
    pub translation_latency: Option<u16>,
    /// Operation class (0 other, 1 load/store/atomic, 2 branch) and subclass byte.
    pub op_type: Option<(u8, u8)>,
    /// Branch target of a branch, if recorded.
    pub branch_target: Option<u64>,
    /// The data source packet (implementation defined), if recorded.
    pub data_source: Option<u64>,
    /// The context packet's ID (usually the PID), if recorded.
    pub context_id: Option<u32>,
}

impl SpeFields {
    /// The fields of `record`.
    pub fn from_record(record: &crate::spe::SpeRecord) -> SpeFields {
        SpeFields {
            events: record.events,
            total_latency: record.total_latency,
            issue_latency: record.issue_latency,
            translation_latency: record.translation_latency,
            op_type: record.op_type,
            branch_target: record.branch_target,
            data_source: record.data_source,
            context_id: record.context_id,
        }
    }

    /// Whether any event bit in `mask` is set.
    pub fn has_event(&self, mask: u64) -> bool {
        self.events & mask != 0
    }

    /// Whether the operation was a load or store (op class 1).
    pub fn is_memory(&self) -> bool {
        matches!(self.op_type, Some((1, _)))
    }
}

/// One PERF_SAMPLE_BRANCH_STACK entry (`struct perf_branch_entry`): a taken branch from
/// `from` to `to`, with both ends resolved as perf resolves them (user maps first, then the
/// kernel's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct BranchEntry {
    /// Address of the branch instruction.
    pub from: u64,
    /// Address of its target.
    pub to: u64,
    /// The flags word in the little-endian bitfield layout (see [`BranchEntry::mispred`]
    /// and the other accessors); a big-endian writer's bitfield is converted on reading.
    /// Fields a kernel did not know yet read as 0.
    pub flags: u64,
    /// Where `from` falls.
    pub from_location: Location,
    /// Mode whose maps resolved `from` ([`CpuMode::Unknown`] when none did).
    pub from_cpumode: CpuMode,
    /// Where `to` falls.
    pub to_location: Location,
    /// Mode whose maps resolved `to` ([`CpuMode::Unknown`] when none did).
    pub to_cpumode: CpuMode,
}

impl BranchEntry {
    /// `(bit offset, width)` of each flags field in the little-endian layout, as perf's
    /// `struct branch_flags` (kernel 3.4: mispred, predicted; 3.11: in_tx, abort; 4.3:
    /// cycles; 4.14: type; 6.1: spec, new_type, priv).
    pub const MISPRED: (u32, u32) = (0, 1);
    /// See [`BranchEntry::MISPRED`].
    pub const PREDICTED: (u32, u32) = (1, 1);
    /// See [`BranchEntry::MISPRED`].
    pub const IN_TX: (u32, u32) = (2, 1);
    /// See [`BranchEntry::MISPRED`].
    pub const ABORT: (u32, u32) = (3, 1);
    /// See [`BranchEntry::MISPRED`].
    pub const CYCLES: (u32, u32) = (4, 16);
    /// See [`BranchEntry::MISPRED`].
    pub const TYPE: (u32, u32) = (20, 4);
    /// See [`BranchEntry::MISPRED`].
    pub const SPEC: (u32, u32) = (24, 2);
    /// See [`BranchEntry::MISPRED`].
    pub const NEW_TYPE: (u32, u32) = (26, 4);
    /// See [`BranchEntry::MISPRED`].
    pub const PRIV: (u32, u32) = (30, 3);

    /// The flags word as the file holds it (`raw`, already in host order) converted to the
    /// little-endian bitfield layout: a big-endian compiler allocates bitfields from the
    /// most significant bit, so each field is moved from there.
    pub fn flags_from_file(raw: u64, big_endian: bool) -> u64 {
        if !big_endian {
            return raw;
        }
        let fields = [
            Self::MISPRED,
            Self::PREDICTED,
            Self::IN_TX,
            Self::ABORT,
            Self::CYCLES,
            Self::TYPE,
            Self::SPEC,
            Self::NEW_TYPE,
            Self::PRIV,
        ];
        let mut out = 0;
        for (off, width) in fields {
            let mask = (1u64 << width) - 1;
            out |= ((raw >> (64 - off - width)) & mask) << off;
        }
        out
    }

    fn field(&self, (off, width): (u32, u32)) -> u64 {
        (self.flags >> off) & ((1u64 << width) - 1)
    }
    /// The branch target was mispredicted.
    pub fn mispred(&self) -> bool {
        self.field(Self::MISPRED) != 0
    }
    /// The branch target was predicted.
    pub fn predicted(&self) -> bool {
        self.field(Self::PREDICTED) != 0
    }
    /// The branch was in a transaction (TSX).
    pub fn in_tx(&self) -> bool {
        self.field(Self::IN_TX) != 0
    }
    /// The branch was a transaction abort.
    pub fn abort(&self) -> bool {
        self.field(Self::ABORT) != 0
    }
    /// Cycles since the previous branch (0: not reported).
    pub fn cycles(&self) -> u16 {
        self.field(Self::CYCLES) as u16
    }
    /// `PERF_BR_*` branch type (0: unknown).
    pub fn branch_type(&self) -> u8 {
        self.field(Self::TYPE) as u8
    }
    /// `PERF_BR_SPEC_*` speculation outcome (0: not available).
    pub fn spec(&self) -> u8 {
        self.field(Self::SPEC) as u8
    }
    /// `PERF_BR_NEW_*` extended branch type (when `branch_type` is `PERF_BR_EXTEND_ABI`).
    pub fn new_type(&self) -> u8 {
        self.field(Self::NEW_TYPE) as u8
    }
    /// `PERF_BR_PRIV_*` privilege level of the target (0: unknown).
    pub fn privilege(&self) -> u8 {
        self.field(Self::PRIV) as u8
    }
}

/// One PERF_SAMPLE_READ value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReadValue {
    /// The counter value.
    pub value: u64,
    /// PERF_FORMAT_ID, if recorded (maps to an event via [`EventInfo::ids`]).
    pub id: Option<u64>,
    /// PERF_FORMAT_LOST, if recorded.
    pub lost: Option<u64>,
    /// PERF_FORMAT_TOTAL_TIME_ENABLED, if recorded.
    pub time_enabled: Option<u64>,
    /// PERF_FORMAT_TOTAL_TIME_RUNNING, if recorded.
    pub time_running: Option<u64>,
}

/// Where and why reading stopped early (truncated or corrupt file): also the `stopped`
/// object of every JSON report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadStop {
    /// Byte offset in the file of the record (or header part) that could not be read.
    pub offset: u64,
    /// What went wrong.
    pub reason: String,
    /// The record type there, if its header could be read.
    pub record_type: Option<u32>,
    /// Records successfully read before the stop.
    pub records_read: u64,
}

impl ReadStop {
    /// Where and why reading stopped, as every verb says it: `reading stopped at byte offset
    /// 1234 (record type 9 (SAMPLE)) after 56 records: REASON`.
    pub fn describe(&self) -> String {
        let record = match self.record_type {
            Some(t) => format!("record type {t} ({})", crate::abi::record_type_name(t)),
            None => "record header unreadable".to_string(),
        };
        format!(
            "reading stopped at byte offset {} ({record}) after {} records: {}",
            self.offset, self.records_read, self.reason
        )
    }
}

/// Header facts of a perf.data file (the HEADER_* features that culprit uses).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Meta {
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE.
    pub os_release: Option<String>,
    /// HEADER_VERSION (the perf version that wrote the file).
    pub perf_version: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_NRCPUS (available).
    pub nr_cpus: Option<u32>,
    /// HEADER_CPUDESC.
    pub cpu_desc: Option<String>,
    /// HEADER_CPUID (e.g. `AuthenticAMD,26,2,1`).
    pub cpuid: Option<String>,
    /// HEADER_TOTAL_MEM in kB.
    pub total_mem_kb: Option<u64>,
    /// HEADER_CMDLINE, joined with spaces.
    pub cmdline: Option<String>,
    /// HEADER_PMU_MAPPINGS: (type, name).
    pub pmu_mappings: Vec<(u32, String)>,
    /// HEADER_PMU_CAPS: (PMU name, cap name, value), e.g. `("ibs_op", "zen4_ibs_extensions",
    /// "1")`. IBS decoding switches on these as perf does.
    pub pmu_caps: Vec<(String, String, String)>,
    /// First and last sample time (ns) as seen in the samples.
    pub time_range: Option<(u64, u64)>,
    /// Whether the file was in pipe mode.
    pub pipe_mode: bool,
    /// HEADER_NRCPUS (online).
    pub nr_cpus_online: Option<u32>,
    /// HEADER_SAMPLE_TIME: first and last sample time (ns) as perf wrote them.
    pub header_time_range: Option<(u64, u64)>,
    /// Whether records were zstd-compressed (`perf record -z`).
    pub compressed: bool,
    /// Size of the input in bytes.
    pub file_size: u64,
    /// Records read (including records inside compressed records).
    pub records: u64,
    /// Tracepoint formats from the tracing data (HEADER_TRACING_DATA in file mode, the
    /// TRACING_DATA record in pipe mode): id, `system:name`, fields of the raw record.
    #[serde(skip)]
    pub tracepoints: Vec<crate::tracepoint::TracepointFormat>,
    /// The JIT images of the BPF programs loaded when the recording started
    /// (HEADER_BPF_PROG_INFO), one entry per function: what `annotate` disassembles.
    #[serde(skip)]
    pub bpf_functions: std::sync::Arc<Vec<BpfFunction>>,
}

/// One function of a BPF program's JIT image (the program itself, or one of its
/// subprograms), as perf saved it in HEADER_BPF_PROG_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfFunction {
    /// The program's id.
    pub prog_id: u32,
    /// The program's name (`bpf_attr.prog_name`, at most 15 bytes).
    pub prog_name: String,
    /// The function's tag: perf's KSYMBOL name for it is `bpf_prog_<tag in hex>_<name>`.
    pub tag: [u8; 8],
    /// Kernel address of its first instruction.
    pub addr: u64,
    /// Its JIT code (empty when the recording has none: perf saves it only where it may
    /// read kernel addresses).
    pub code: Vec<u8>,
}

impl Meta {
    /// The BPF function a KSYMBOL name (`bpf_prog_<tag>_<name>`) names, if the recording
    /// saved it.
    pub fn bpf_function(&self, ksymbol: &str) -> Option<&BpfFunction> {
        self.bpf_functions.iter().find(|f| f.is_named(ksymbol))
    }
}

impl BpfFunction {
    /// Whether this is the function perf's KSYMBOL `name` (`bpf_prog_<tag>_<name>`) names.
    pub fn is_named(&self, name: &str) -> bool {
        use std::fmt::Write;
        let mut prefix = String::from("bpf_prog_");
        for b in self.tag {
            let _ = write!(prefix, "{b:02x}");
        }
        prefix.push('_');
        name.starts_with(&prefix)
    }
}

/// What a [`TaskSwitch`] record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SwitchKind {
    /// The task entered a CPU (PERF_RECORD_SWITCH without SWITCH_OUT).
    In,
    /// The task left a CPU (SWITCH_OUT), blocked or preempted.
    Out {
        /// It left runnable (SWITCH_OUT_PREEMPT).
        preempted: bool,
    },
    /// The task exited (PERF_RECORD_EXIT): it leaves its CPU with no switch record.
    Exit,
}

/// A context switch or exit of a recorded task (`record --latency`, `context_switch` in the
/// attr), in processing order with the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TaskSwitch {
    /// Time in ns (0 when the record has none).
    pub time: u64,
    /// Process id (-1 when the record has none).
    pub pid: i32,
    /// Thread id (-1 when the record has none).
    pub tid: i32,
    /// What happened.
    pub kind: SwitchKind,
}

/// A whole perf.data file in memory: events, samples, DSOs, and what went wrong reading it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Profile {
    /// Header facts.
    pub meta: Meta,
    /// One entry per attr, in file order.
    pub events: Vec<EventInfo>,
    /// Samples in processing order: timestamp order, as perf's ordered-events queue delivers
    /// them (file order among equal timestamps and for records without timestamps).
    pub samples: Vec<Sample>,
    /// All call-chain frames, referenced by [`Sample::callchain`].
    pub frames: Vec<Frame>,
    /// All raw payloads, referenced by [`Sample::raw`].
    pub raw: Vec<u8>,
    /// All branch-stack entries, referenced by [`Sample::branches`].
    pub branches: Vec<BranchEntry>,
    /// All PERF_SAMPLE_READ values, referenced by [`Sample::read`].
    pub read_values: Vec<ReadValue>,
    /// All user registers, referenced by [`Sample::user_regs`].
    pub regs: Vec<u64>,
    /// All user stack bytes, referenced by [`Sample::user_stack`].
    pub stacks: Vec<u8>,
    /// Interned strings (comm names), referenced by [`StrId`].
    pub strings: Vec<String>,
    /// DSOs referenced by [`Location::dso`].
    pub dsos: Vec<Dso>,
    /// Total lost samples (LOST + LOST_SAMPLES records).
    pub lost: u64,
    /// Samples the kernel reported dropped in PERF_RECORD_LOST_SAMPLES records (what perf
    /// report prints as "Total Lost Samples").
    pub lost_samples: u64,
    /// Events lost to a full ring buffer, from PERF_RECORD_LOST records (perf's "lost N
    /// chunks" warning). `lost` is the sum of both.
    pub lost_events: u64,
    /// THROTTLE records seen.
    pub throttles: u64,
    /// Non-fatal problems (unknown record types, unmatched sample ids, …).
    pub warnings: Vec<String>,
    /// SAMPLE records that could not be parsed and were skipped (not in any total).
    pub malformed_samples: u64,
    /// Set when the file is truncated or corrupt: what was read and where it stopped.
    pub stopped: Option<ReadStop>,
    /// Context switches (PERF_RECORD_SWITCH, SWITCH_CPU_WIDE) and exits of recorded tasks,
    /// in processing order; empty unless the file has switch records.
    #[serde(skip)]
    pub switches: Vec<TaskSwitch>,
    /// The newest comm of each thread named by a COMM or FORK record (perf's thread table
    /// at the end of the file), for reports about threads that may have no sample.
    #[serde(skip)]
    pub thread_comms: std::collections::HashMap<i32, StrId>,
    /// The process of each thread a COMM or FORK record named (tid -> pid), from the
    /// first such record, with that record's time.
    #[serde(skip)]
    pub thread_pids: std::collections::HashMap<i32, RecordedPid>,
}

/// The process a COMM or FORK record gave a thread, and when (the record's time; 0 where
/// records carry no time): a reader that replays the file in time order, as perf does,
/// knows the thread's pid from then on only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedPid {
    /// The process id.
    pub pid: i32,
    /// The time of the first COMM or FORK record of the thread.
    pub since: u64,
}

impl Profile {
    /// The string behind a [`StrId`].
    pub fn str(&self, id: StrId) -> &str {
        self.strings
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    /// The call chain of a sample.
    pub fn callchain(&self, sample: &Sample) -> &[Frame] {
        self.frames
            .get(sample.callchain.start as usize..sample.callchain.end as usize)
            .unwrap_or(&[])
    }

    /// The branch-stack entries of a sample, most recent first (empty if none).
    pub fn branches(&self, sample: &Sample) -> &[BranchEntry] {
        self.branches
            .get(sample.branches.start as usize..sample.branches.end as usize)
            .unwrap_or(&[])
    }

    /// The tracepoint format of an event (`attr.type` PERF_TYPE_TRACEPOINT whose id the
    /// tracing data describes); `None` for other events.
    pub fn tracepoint_format(
        &self,
        event: EventId,
    ) -> Option<&crate::tracepoint::TracepointFormat> {
        let e = self.events.get(event as usize)?;
        if e.attr_type != crate::abi::perf_type::TRACEPOINT {
            return None;
        }
        self.meta.tracepoints.iter().find(|t| t.id == e.config)
    }

    /// The raw payload of a sample (empty if none).
    pub fn raw(&self, sample: &Sample) -> &[u8] {
        self.raw
            .get(sample.raw.start as usize..sample.raw.end as usize)
            .unwrap_or(&[])
    }

    /// The PERF_SAMPLE_READ values of a sample (empty if none).
    pub fn read_values(&self, sample: &Sample) -> &[ReadValue] {
        self.read_values
            .get(sample.read.start as usize..sample.read.end as usize)
            .unwrap_or(&[])
    }

    /// The user registers of a sample (empty if none).
    pub fn user_regs(&self, sample: &Sample) -> &[u64] {
        self.regs
            .get(sample.user_regs.start as usize..sample.user_regs.end as usize)
            .unwrap_or(&[])
    }

    /// The user stack bytes of a sample (empty if none).
    pub fn user_stack(&self, sample: &Sample) -> &[u8] {
        let (Ok(start), Ok(end)) = (
            usize::try_from(sample.user_stack.start),
            usize::try_from(sample.user_stack.end),
        ) else {
            return &[];
        };
        self.stacks.get(start..end).unwrap_or(&[])
    }

    /// The DSO of a location, if any.
    pub fn dso(&self, location: &Location) -> Option<&Dso> {
        location.dso.and_then(|d| self.dsos.get(d as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::{event_name_matches, BranchEntry};

    #[test]
    fn test_branch_flags_of_a_big_endian_writer_move_from_the_top_bits() {
        // A big-endian bitfield starts at bit 63: mispred, predicted, in_tx, abort, then
        // cycles:16 in bits 44..60 and type:4 in bits 40..44.
        let raw = 1u64 << 63 | 1 << 61 | 1234 << 44 | 5 << 40;
        let e = BranchEntry {
            flags: BranchEntry::flags_from_file(raw, true),
            ..BranchEntry::default()
        };
        assert!(e.mispred() && !e.predicted() && e.in_tx() && !e.abort());
        assert_eq!((e.cycles(), e.branch_type()), (1234, 5));
        // Little-endian: as read.
        let le = 1u64 << 1 | 77 << 4 | 3 << 24 | 2 << 30;
        let e = BranchEntry {
            flags: BranchEntry::flags_from_file(le, false),
            ..BranchEntry::default()
        };
        assert!(!e.mispred() && e.predicted());
        assert_eq!((e.cycles(), e.spec(), e.privilege()), (77, 3, 2));
    }

    #[test]
    fn test_event_name_matches_without_modifiers_or_term_lists() {
        let is = |wanted: &str, name: &str| event_name_matches(name, |n| n == wanted);
        for (wanted, name) in [
            ("cpu-clock", "cpu-clock"),
            ("cpu-clock", "cpu-clock:ppp"),
            ("cpu-clock:ppp", "cpu-clock:ppp"),
            ("cycles", "cycles:u"),
            ("cycles", "cycles:P"),
            ("cycles", "cpu/cycles/"),
            ("task-clock", "task-clock/period=100000/"),
            ("ibs_op", "ibs_op//"),
            ("sched:sched_switch", "sched:sched_switch"),
        ] {
            assert!(is(wanted, name), "{wanted} should select {name}");
        }
        for (wanted, name) in [
            ("cpu-clock", "cpu-clock-x"),
            ("cycles", "instructions:u"),
            ("cpu-clock:u", "cpu-clock:ppp"),
            ("cpu", "cpu/event=0x3c/"),
            ("sched", "sched:sched_switch"),
        ] {
            assert!(!is(wanted, name), "{wanted} should not select {name}");
        }
    }
}
