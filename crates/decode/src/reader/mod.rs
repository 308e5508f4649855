//! The record reader: frames records with a bounds-checked cursor, queues them per round and
//! replays them in timestamp order (perf's ordered-events rule: at each FINISHED_ROUND,
//! deliver what is not newer than the newest timestamp of the previous round), decoding
//! samples and keeping process/mapping state. This module holds the reader's state and its
//! life (new, attrs, progress, finish); `layout` where sample fields are, `queue` framing and
//! the round queue, `records` the side records, `sample` SAMPLE decoding, `parts` the shares
//! of a parallel read.

use std::collections::HashMap;

use crate::abi::branch_sample_type::{
    CALL_STACK as BRANCH_CALL_STACK, COUNTERS as BRANCH_COUNTERS, HW_INDEX as BRANCH_HW_INDEX,
};
use crate::abi::callchain_context::{MAX as PERF_CONTEXT_MAX, USER as PERF_CONTEXT_USER};
use crate::abi::{self, read_format as rf, record_type as rt};
use crate::cursor::{c_string, u64_at, Cur};
use crate::header::{self, flag, Attr, Features};
use crate::model::{
    BranchEntry, CpuMode, Dso, DsoKind, EventInfo, Frame, Profile, ReadStop, ReadValue, Sample,
};
use crate::state::{IntMap, Map, State};
use crate::DecodeError;

mod layout;
mod parts;
mod queue;
mod records;
mod sample;
mod spe;

use layout::*;
pub(crate) use parts::*;
use queue::*;

/// `PERF_SAMPLE_*` bits, and the groups of them the reader decodes together.
pub(crate) mod st {
    pub use crate::abi::sample_type::*;
    /// The fields that become `Option`s of a [`crate::model::Sample`].
    pub const OPTIONAL: u64 = ADDR | ID | IDENTIFIER | STREAM_ID | AFTER_STACK;
    /// The fields a SAMPLE record holds after CALLCHAIN.
    pub const AFTER_CHAIN: u64 = RAW | BRANCH_STACK | REGS_USER | STACK_USER | AFTER_STACK;
    /// The fields a SAMPLE record holds after STACK_USER.
    pub const AFTER_STACK: u64 = WEIGHT
        | DATA_SRC
        | TRANSACTION
        | REGS_INTR
        | PHYS_ADDR
        | CGROUP
        | DATA_PAGE_SIZE
        | CODE_PAGE_SIZE
        | AUX
        | WEIGHT_STRUCT;
}

/// `PROT_EXEC` in MMAP2's prot.
const PROT_EXEC: u32 = 4;
/// The kernel DSO as perf names it from the build-id table (HEADER_BUILD_ID): when the
/// table's kernel image is a file (`perf record` given a vmlinux, or `perf buildid-cache`),
/// not `[kernel.kallsyms]`, the kernel DSO takes that entry's build-id, and is shown as
/// `[kernel.vmlinux]` when the file's name says vmlinux (perf's
/// machine__process_kernel_mmap_event).
fn kernel_image_from_build_ids(build_ids: &[(i32, String, Vec<u8>, CpuMode)], d: &mut Dso) {
    if d.kind != DsoKind::Kernel || d.path != "[kernel.kallsyms]" {
        return;
    }
    let image = build_ids.iter().find(|(_, p, _, mode)| {
        *mode == CpuMode::Kernel && !p.starts_with('[') && !p.contains(".ko")
    });
    let Some((_, path, id, _)) = image else {
        return;
    };
    if d.build_id.is_none() {
        d.build_id = Some(id.clone());
    }
    if path.contains("vmlinux") {
        d.short_name = "[kernel.vmlinux]".to_string();
    }
}

/// Whether an MMAP/MMAP2 record maps code, as perf decides: kernel maps (the kernel image,
/// modules, trampolines) always do, whatever their protection (perf 6.16 and later write
/// the kernel's MMAP2 with prot 0, `---p`); a process's map does unless it is flagged
/// `PERF_RECORD_MISC_MMAP_DATA` (what the kernel and perf's synthesis set for every
/// mapping without `VM_EXEC`) or states a protection without `PROT_EXEC` (writers that
/// list data maps without the flag). A prot of 0 states nothing and counts as code.
fn holds_code(kernel: bool, misc: u16, prot: Option<u32>) -> bool {
    if kernel {
        return true;
    }
    if misc & abi::misc::MMAP_DATA != 0 {
        return false;
    }
    !matches!(prot, Some(p) if p != 0 && p & PROT_EXEC == 0)
}

/// Bytes ahead of the framing point to prefetch (see [`prefetch_ahead`]; x86-64 only).
#[cfg(target_arch = "x86_64")]
const PREFETCH_DISTANCE: usize = 4096;

/// Asks the CPU to start loading the input `PREFETCH_DISTANCE` bytes ahead of `rest`'s
/// start. Framing touches every record header once, in order: without this, most of its
/// time is the load of each new cache line and page of the mapped file. A hint only: it
/// reads nothing and never faults.
#[inline(always)]
fn prefetch_ahead(rest: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = rest.get(PREFETCH_DISTANCE) {
        // SAFETY: `b` is a valid reference into `rest`; prefetching has no side effects.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = rest;
}

/// The (pid, tid) of a sample's TID field read as one u64 in the record's byte order `be`
/// (pid then tid, each a u32).
#[inline(always)]
fn pid_tid(v: u64, be: bool) -> (i32, i32) {
    let (lo, hi) = (v as u32 as i32, (v >> 32) as u32 as i32);
    if be {
        (hi, lo)
    } else {
        (lo, hi)
    }
}

/// Caps on what a hostile file can make us allocate.
const MAX_WARNINGS: usize = 200;
/// Decompressed bytes allowed in a row without one record that carries anything (a sample,
/// a mapping, a command…): a zstd bomb expands to filler (empty rounds, or records that do
/// not parse, which stop reading at once); a real recording, however well it compresses,
/// never goes this far without an event. Total size is not capped: a file is as long as it
/// is, and it is read as a stream in bounded memory.
const MAX_DECOMPRESSED_WITHOUT_EVENTS: u64 = 1 << 28;

/// How framing a run of bytes ended.
#[derive(Debug)]
pub(crate) enum Framed {
    /// Every record in the bytes was framed.
    Done,
    /// Damage: reading stops here.
    Stop(ReadStop),
    /// Stream mode: the record at this offset (relative to the bytes) is incomplete; it is
    /// framed again when more input arrives.
    More(usize),
    /// Stream mode: an AUXTRACE record's data runs past the bytes; skip this many more input
    /// bytes. `at` is its input offset and `records` the record count before it (for the
    /// stop if the stream ends inside the data).
    Skip {
        /// Input offset of the AUXTRACE record.
        at: u64,
        /// AUX bytes still to come.
        left: u64,
        /// Records read before it.
        records: u64,
    },
}

/// Where a streaming read sends its samples.
pub(crate) type SampleSink<'p> = &'p mut dyn FnMut(&Profile, &Sample);

pub(crate) struct Reader<'a, 'p> {
    data: &'a [u8],
    be: bool,
    attrs: Vec<Attr>,
    layouts: Vec<Layout>,
    /// Per attr: where the fixed-size SAMPLE fields are.
    sample_layouts: Vec<FixedFields>,
    /// Per attr: the sample handed to the sink, filled in place (what the attr does not
    /// record stays empty).
    scratch: Vec<Sample>,
    id_to_attr: IntMap<u64, u16>,
    id_mode: IdMode,
    /// With [`IdMode::Single`]: where the time is in a SAMPLE body.
    single_sample_time: Option<usize>,
    p: Profile,
    st: State,
    /// Queued records; `queue[..head]` are delivered already (dropped in bulk, so a round
    /// costs what it delivers, not the length of what stays queued).
    queue: Vec<Ref>,
    /// Scratch space of [`sort_runs_by_time`], kept between rounds.
    merge_scratch: Vec<Ref>,
    head: usize,
    /// `queue[head..sorted]` is in time order; records after it arrived since the last flush.
    sorted: usize,
    /// Replaying before a share: samples that would change nothing if delivered now (see
    /// [`Reader::replay_skips_sample`]), kept out of the queue in file order. A flush drops
    /// the ones it would have delivered; the rest go back into the queue when the share
    /// starts, since this part delivers them.
    replay_deferred: Vec<Ref>,
    /// perf's `next_flush`: records not newer than this are delivered at a round's end.
    next_flush: u64,
    max_time: u64,
    decomp: Vec<u8>,
    /// Bytes at the start of `decomp` already framed into records.
    decomp_framed: usize,
    /// Decompressed bytes since the last record that carries an event (see
    /// [`MAX_DECOMPRESSED_WITHOUT_EVENTS`]).
    decomp_idle: u64,
    dctx: Option<zstd_safe::DCtx<'static>>,
    zbuf: Vec<u8>,
    /// Stream mode: queued records are copied here (the chunk they came in is gone by the
    /// time they are delivered); compacted at each flush. Offsets tagged `IN_OWNED`.
    owned: Vec<u8>,
    /// Stream mode ([`crate::StreamDecoder`]): records are copied into `owned` when queued,
    /// and an incomplete record at the end of the bytes waits for more input.
    stream: bool,
    /// Input offset of the bytes being framed (0 for a whole file; chunks in stream mode).
    base: u64,
    /// Input bytes seen (the whole file, or the stream so far): bounds decompression.
    input_len: u64,
    features: Features,
    suppressed_warnings: u64,
    /// Record types already warned about as malformed: the first of each type is named
    /// (with its offset), the rest only counted (a damaged file would repeat it per record).
    malformed_types: Vec<u32>,
    progress: &'p mut dyn FnMut(u64, u64),
    next_progress: u64,
    /// Where this reader's own records start (its share's start in a parallel read):
    /// progress counts the bytes delivered from there, not the replay before it.
    progress_from: u64,
    /// Told "bytes below this offset are no longer needed" (lets a memory-mapped input drop
    /// its pages from the resident set).
    release: &'p mut dyn FnMut(usize),
    /// Streaming mode: samples go here instead of into `Profile::samples`.
    sink: Option<SampleSink<'p>>,
    released: usize,
    /// Start of the record being framed (nothing before it is needed once delivered).
    framing_at: usize,
    /// DWARF unwinding of sampled user stacks, when the caller asked for it.
    pub(crate) unwind: Option<crate::unwind::Hook<'p>>,
    /// [`crate::Reader::skip_callchains`]: samples get no call chain.
    pub(crate) skip_chains: bool,
    /// [`crate::Reader::skip_locations`]: samples' locations are left unresolved.
    pub(crate) skip_locations: bool,
    /// Parallel reads ([`read_part`]): this reader's share of the records.
    part: PartBounds,
    /// A part that may skip the middle of the replay (see [`JumpPlan`]); taken when used.
    jump_plan: Option<JumpPlan>,
    /// The skip this part made.
    jumped: Option<Jumped>,
    /// The part before a jumping one: what lets the jump be checked (see [`RoundLog`]).
    log: Option<RoundLog>,
    /// Threads [`State`] had created for samples when the last sample was delivered.
    sample_threads_seen: u64,
    /// PERF_SAMPLE_READ: the last value read per sample id (see [`Reader::read_members`]).
    /// State a replaying part rebuilds, so READ samples are never skipped in a replay.
    read_last: IntMap<u64, u64>,
    /// The same per (id, thread), for inherited counters read per thread.
    read_last_per_thread: HashMap<(u64, i32), u64>,
    /// Scratch: the (event, period, id) of the samples one READ sample becomes.
    read_members: Vec<(u16, u64, Option<u64>)>,
    /// Where framing stopped at the end of a share (the record after its last round).
    resume_at: usize,
    /// The first of two parts, until the split is decided: where it publishes its progress
    /// and learns the split, with the data's bounds.
    split: Option<(&'p SplitPoint, usize, usize)>,
    /// ARM SPE decoding, once an AUXTRACE_INFO record of type ARM_SPE was read.
    spe: Option<spe::SpeDecoding>,
    /// The last TIME_CONV record's conversion (perf's `session->time_conv`).
    time_conv: spe::TimeConv,
}

impl<'a, 'p> Reader<'a, 'p> {
    fn new(
        data: &'a [u8],
        be: bool,
        progress: &'p mut dyn FnMut(u64, u64),
        release: &'p mut dyn FnMut(usize),
        sink: Option<SampleSink<'p>>,
    ) -> Self {
        let mut p = Profile::default();
        p.meta.file_size = data.len() as u64;
        let mut st = State::default();
        // Far above any real recording (a busy -a file has ~10^5 map entries), and bounded
        // by the input so hostile fork/mmap patterns cannot exhaust memory.
        st.map_budget = (1usize << 21).max(data.len() / 16);
        Reader {
            data,
            be,
            attrs: Vec::new(),
            layouts: Vec::new(),
            sample_layouts: Vec::new(),
            scratch: Vec::new(),
            id_to_attr: IntMap::default(),
            id_mode: IdMode::Single,
            single_sample_time: None,
            p,
            st,
            queue: Vec::new(),
            merge_scratch: Vec::new(),
            replay_deferred: Vec::new(),
            head: 0,
            sorted: 0,
            next_flush: 0,
            max_time: 0,
            decomp: Vec::new(),
            decomp_framed: 0,
            decomp_idle: 0,
            dctx: None,
            zbuf: Vec::new(),
            owned: Vec::new(),
            stream: false,
            base: 0,
            input_len: data.len() as u64,
            features: Features::default(),
            suppressed_warnings: 0,
            malformed_types: Vec::new(),
            progress,
            next_progress: 0,
            progress_from: 0,
            release,
            sink,
            released: 0,
            framing_at: 0,
            unwind: None,
            skip_chains: false,
            skip_locations: false,
            part: PartBounds {
                started: true,
                ..PartBounds::default()
            },
            jump_plan: None,
            jumped: None,
            log: None,
            sample_threads_seen: 0,
            read_last: IntMap::default(),
            read_last_per_thread: HashMap::new(),
            read_members: Vec::new(),
            resume_at: 0,
            split: None,
            spe: None,
            time_conv: spe::TimeConv::default(),
        }
    }

    fn warn(&mut self, w: String) {
        if self.part.lite {
            // An earlier part delivers these records and warns about them.
            return;
        }
        if self.p.warnings.len() < MAX_WARNINGS {
            self.p.warnings.push(w);
        } else {
            self.suppressed_warnings += 1;
        }
    }

    fn set_attrs(&mut self, attrs: Vec<Attr>) {
        self.attrs = attrs;
        self.refresh_attrs();
    }

    /// Recomputes layouts, the id map and the id mode after attrs changed.
    fn refresh_attrs(&mut self) {
        self.layouts = self.attrs.iter().map(Layout::new).collect();
        self.sample_layouts = self.attrs.iter().map(FixedFields::new).collect();
        self.scratch = vec![Sample::default(); self.attrs.len()];
        self.id_to_attr.clear();
        for (i, a) in self.attrs.iter().enumerate() {
            for &id in &a.ids {
                self.id_to_attr.insert(id, i as u16);
            }
        }
        self.single_sample_time = self.layouts.first().and_then(|l| l.sample_time);
        self.id_mode = match self.layouts.split_first() {
            None => IdMode::Single,
            Some((_, [])) => IdMode::Single,
            Some((first, rest)) if rest.iter().all(|l| l == first) => IdMode::Same(*first),
            Some(_) => IdMode::Mixed,
        };
    }

    /// Which attr a kernel record belongs to, and its timestamp if it has one.
    #[inline(always)]
    fn attr_and_time(&self, ty: u32, body: &[u8]) -> (u16, Option<u64>) {
        let be = self.be;
        let sample = ty == rt::SAMPLE;
        if sample {
            if let IdMode::Single = self.id_mode {
                // The common case: one attr, the time at a fixed offset.
                let time = self.single_sample_time.and_then(|o| u64_at(body, o, be));
                return (0, time);
            }
        }
        self.attr_and_time_slow(sample, body)
    }

    #[inline(never)]
    fn attr_and_time_slow(&self, sample: bool, body: &[u8]) -> (u16, Option<u64>) {
        let be = self.be;
        let id_of = |l: &Layout| -> Option<u64> {
            if sample {
                u64_at(body, l.sample_id?, be)
            } else {
                u64_at(body, body.len().checked_sub(l.trailer_id?)?, be)
            }
        };
        let attr = match self.id_mode {
            IdMode::Single => 0,
            IdMode::Same(l) => id_of(&l)
                .and_then(|id| self.id_to_attr.get(&id).copied())
                .unwrap_or(0),
            IdMode::Mixed => {
                // IDENTIFIER sits at a fixed place whatever the layout; try each distinct
                // layout until an id is known.
                self.layouts
                    .iter()
                    .find_map(|l| id_of(l).and_then(|id| self.id_to_attr.get(&id).copied()))
                    .unwrap_or(0)
            }
        };
        let time = self.layouts.get(attr as usize).and_then(|l| {
            if sample {
                u64_at(body, l.sample_time?, be)
            } else {
                u64_at(body, body.len().checked_sub(l.trailer_time?)?, be)
            }
        });
        (attr, time)
    }

    /// Makes the header's facts (host, CPU, command line, PMUs…) visible in the profile while
    /// the records are read, for streaming readers (`Reader::fold`); the reader's own
    /// counters stay. [`Reader::finish`] completes the rest.
    pub(super) fn sync_meta(&mut self) {
        let mut meta = self.features.meta.clone();
        let own = &mut self.p.meta;
        meta.time_range = own.time_range;
        meta.pipe_mode = own.pipe_mode;
        meta.compressed |= own.compressed;
        meta.file_size = own.file_size;
        meta.records = own.records;
        // Streaming readers decode tracepoint fields as the samples arrive: the formats
        // known so far (file header, or a pipe's TRACING_DATA record) are visible now.
        meta.tracepoints = if self.features.tracepoints.is_empty() {
            std::mem::take(&mut own.tracepoints)
        } else {
            self.features.tracepoints.clone()
        };
        *own = meta;
    }

    /// Reports the bytes of its own records this reader has framed (none while replaying
    /// before its share), every 4 MiB.
    fn report_progress(&mut self, done: u64) {
        if self.part.lite {
            return;
        }
        let done = done.saturating_sub(self.progress_from);
        if done >= self.next_progress {
            (self.progress)(done, self.data.len() as u64);
            self.next_progress = done.saturating_add(1 << 22);
        }
    }

    /// Builds the event list once attrs and features are known.
    fn build_events(&mut self) {
        let pmus = self.features.meta.pmu_mappings.clone();
        let desc = std::mem::take(&mut self.features.event_desc);
        let same_count = desc.len() == self.attrs.len();
        for (i, a) in self.attrs.iter().enumerate() {
            // EVENT_DESC names match by id; by position when ids are missing.
            let by_id = desc
                .iter()
                .find(|(_, ids)| ids.iter().any(|id| a.ids.contains(id)))
                .map(|(n, _)| n.clone());
            let by_pos = same_count
                .then(|| desc.get(i).map(|(n, _)| n.clone()))
                .flatten();
            // Tracepoints are named `system:name` from the tracing data's formats.
            let by_tracepoint = || {
                (a.type_ == 2)
                    .then(|| self.features.tracepoints.iter().find(|t| t.id == a.config))
                    .flatten()
                    .map(|t| t.full_name())
            };
            let name = a
                .name
                .clone()
                .or(by_id)
                .or(by_pos)
                .or_else(by_tracepoint)
                .unwrap_or_else(|| crate::names::event_name(a, &pmus));
            let e = EventInfo {
                name,
                attr_type: a.type_,
                config: a.config,
                config1: a.config1,
                config2: a.config2,
                period_or_freq: a.period_or_freq,
                freq: a.flags & flag::FREQ != 0,
                sample_type: a.sample_type,
                precise_ip: ((a.flags >> 15) & 3) as u8,
                pmu: crate::names::pmu_name(a.type_, &pmus),
                samples: 0,
                period: 0,
                lost: 0,
                read_format: a.read_format,
                attr_flags: a.flags,
                sample_regs_user: a.sample_regs_user,
                sample_stack_user: a.sample_stack_user,
                branch_sample_type: a.branch_sample_type,
                ids: a.ids.clone(),
            };
            match self.p.events.get_mut(i) {
                // Keep counts gathered so far (pipe mode builds events late).
                Some(old) => {
                    let (s, p, l) = (old.samples, old.period, old.lost);
                    *old = EventInfo {
                        samples: s,
                        period: p,
                        lost: l,
                        ..e
                    };
                }
                None => self.p.events.push(e),
            }
        }
        self.features.event_desc = desc;
        self.build_spe_events();
    }

    /// Ends the read: delivers what is queued and completes the profile. A share of a
    /// parallel read leaves its warning tail to [`merge_shares`] (in the outcome).
    fn finish(mut self, stopped: Option<ReadStop>) -> (Profile, ShareOutcome) {
        let mut outcome = ShareOutcome {
            started: self.part.started,
            jumped: self.jumped,
            ..ShareOutcome::default()
        };
        self.flush(None);
        // Pipe mode: names and PMUs may have arrived after the first records.
        self.build_events();
        self.synthesize_spe();
        // Build-ids (HEADER_BUILD_ID) fill DSOs that MMAP2 did not give one, by path.
        let mut by_path: HashMap<&str, &Vec<u8>> = HashMap::new();
        for (_, path, id, _) in &self.features.build_ids {
            by_path.insert(path.as_str(), id);
        }
        for d in &mut self.p.dsos {
            if d.build_id.is_none() {
                if let Some(id) = by_path.get(d.path.as_str()) {
                    d.build_id = Some((*id).clone());
                }
            }
            kernel_image_from_build_ids(&self.features.build_ids, d);
        }
        let mut meta = std::mem::take(&mut self.features.meta);
        meta.time_range = self.p.meta.time_range;
        meta.pipe_mode = self.p.meta.pipe_mode;
        meta.compressed |= self.p.meta.compressed;
        meta.file_size = self.p.meta.file_size;
        meta.records = self.p.meta.records;
        meta.tracepoints = std::mem::take(&mut self.features.tracepoints);
        self.p.meta = meta;
        let fw = std::mem::take(&mut self.features.warnings);
        if !self.part.ended {
            // Header warnings once, after the records' (the last share of a parallel read).
            outcome.header_warnings = fw.len();
            self.p.warnings.extend(fw);
        }
        outcome.suppressed_warnings = self.suppressed_warnings;
        outcome.shared = self.part.shared;
        if self.suppressed_warnings > 0 && !self.part.shared {
            self.p
                .warnings
                .push(more_warnings(self.suppressed_warnings));
        }
        self.p.stopped = stopped;
        if !self.part.shared {
            (self.progress)(self.data.len() as u64, self.data.len() as u64);
        } else if !self.part.lite {
            // A share's last bytes (the read's end is reported once, by its caller).
            let own = (self.framing_at as u64).saturating_sub(self.progress_from);
            (self.progress)(own, self.data.len() as u64);
        }
        (self.p, outcome)
    }
}

/// The incremental side of the reader, used by [`crate::StreamDecoder`]: the input arrives in
/// chunks, queued records are copied out of them, and samples are collected in
/// `Profile::samples` for the caller to hand out and clear.
impl<'p> Reader<'static, 'p> {
    /// A reader for a pipe-mode stream whose 16-byte header (endianness `be`) was checked.
    pub(crate) fn new_stream(be: bool) -> Self {
        // No progress or page release for a stream; boxed zero-sized closures do not allocate.
        let progress: &'static mut dyn FnMut(u64, u64) = Box::leak(Box::new(|_: u64, _: u64| {}));
        let release: &'static mut dyn FnMut(usize) = Box::leak(Box::new(|_: usize| {}));
        let mut r = Reader::new(&[], be, progress, release, None);
        r.stream = true;
        r.p.meta.pipe_mode = true;
        r.add_input(16);
        r
    }
}

impl Reader<'_, '_> {
    /// Stream mode: `n` more input bytes arrived.
    pub(crate) fn add_input(&mut self, n: usize) {
        self.input_len = self.input_len.saturating_add(n as u64);
        self.p.meta.file_size = self.input_len;
        // As for a file: map state bounded by the input seen so far.
        self.st.map_budget =
            (1usize << 21).max(usize::try_from(self.input_len / 16).unwrap_or(usize::MAX));
    }

    /// Stream mode: frames the records in `data`, which starts at input offset `base`.
    pub(crate) fn frame_chunk(&mut self, data: &[u8], base: u64, eof: bool) -> Framed {
        self.base = base;
        self.frame_in(data, 0, data.len(), true, eof)
    }

    /// Stream mode: an AUXTRACE record whose data was skipped across chunks is complete.
    pub(crate) fn count_record(&mut self) {
        self.p.meta.records += 1;
    }

    /// Delivers every queued record in time order.
    pub(crate) fn flush_all(&mut self) {
        self.flush(None);
    }

    /// Bytes held for records that wait for their round.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.owned.len() + self.decomp.len()
    }

    /// Whether any record can carry a timestamp (else records are delivered as they come).
    pub(crate) fn has_time(&self) -> bool {
        self.attrs.iter().any(|a| a.sample_type & st::TIME != 0)
    }

    /// Whether a HEADER_ATTR was seen.
    pub(crate) fn has_attrs(&self) -> bool {
        !self.attrs.is_empty()
    }

    /// The profile so far.
    pub(crate) fn profile(&self) -> &Profile {
        &self.p
    }

    /// The profile so far, for handing out collected samples and setting the stop.
    pub(crate) fn profile_mut(&mut self) -> &mut Profile {
        &mut self.p
    }

    /// Adds a warning (capped like the reader's own).
    pub(crate) fn add_warning(&mut self, w: String) {
        self.warn(w);
    }

    /// Ends the stream: delivers the rest and fills in events, build-ids and meta.
    pub(crate) fn finish_stream(mut self, stopped: Option<ReadStop>) -> Profile {
        if self.p.events.is_empty() {
            self.build_events();
        }
        self.finish(stopped).0
    }
}

#[cfg(test)]
mod tests {
    use super::sample::read_values;
    use super::*;

    #[test]
    fn test_sort_runs_by_time_is_the_stable_sort() {
        // Runs of random lengths (1 to 40 of them: past the hand-merged limit too), with
        // many equal times across and within runs; `at` numbers the records in file order.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut scratch = Vec::new();
        for case in 0..2000 {
            let runs = 1 + next(if case % 10 == 0 { 40 } else { 6 });
            let mut v = Vec::new();
            for _ in 0..runs {
                let mut t = next(50);
                for _ in 0..next(30) {
                    t += next(3);
                    v.push(Ref {
                        time: t,
                        at: v.len() as u64,
                        file_off: 0,
                        attr: 0,
                        ty: 0,
                        misc: 0,
                        size: 0,
                    });
                }
            }
            let mut want = v.clone();
            want.sort_by_key(|r| r.time);
            sort_runs_by_time(&mut v, &mut scratch);
            let key = |v: &[Ref]| v.iter().map(|r| (r.time, r.at)).collect::<Vec<_>>();
            assert_eq!(key(&v), key(&want), "case {case}");
        }
    }

    #[test]
    fn test_layout_positions() {
        let a = Attr {
            // IP|TID|TIME|CPU|PERIOD|IDENTIFIER, sample_id_all
            sample_type: st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::IDENTIFIER,
            flags: flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let l = Layout::new(&a);
        assert_eq!(l.sample_id, Some(0));
        assert_eq!(l.sample_time, Some(24));
        // trailer: TID, TIME, CPU, IDENTIFIER
        assert_eq!(l.trailer_len, 32);
        assert_eq!(l.trailer_id, Some(8));
        assert_eq!(l.trailer_time, Some(24));
    }

    #[test]
    fn test_read_values_group_lying_count() {
        let mut b = Vec::new();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        let mut c = Cur::new(&b, false);
        assert!(read_values(&mut c, rf::GROUP).is_none());
    }
}
