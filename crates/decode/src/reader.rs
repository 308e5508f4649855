//! The record reader: frames records with a bounds-checked cursor, queues them per round and
//! replays them in timestamp order (perf's ordered-events rule: at each FINISHED_ROUND,
//! deliver what is not newer than the newest timestamp of the previous round), decoding
//! samples and keeping process/mapping state.

use std::collections::HashMap;

use crate::cursor::{c_string, u64_at, Cur};
use crate::header::{self, flag, Attr, Features};
use crate::model::{
    BranchEntry, CpuMode, Dso, DsoKind, EventInfo, Frame, Profile, ReadStop, ReadValue, Sample,
};
use crate::state::{IntMap, Map, State};
use crate::DecodeError;

/// `PERF_SAMPLE_*` bits.
pub(crate) mod st {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
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

/// `PERF_FORMAT_*` bits of read_format.
mod rf {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// Record types (`PERF_RECORD_*`, and perf's user types from 64 on).
mod rt {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const FORK: u32 = 7;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const EVENT_UPDATE: u32 = 78;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const COMPRESSED2: u32 = 83;
}

/// `misc` bits.
const MISC_MMAP_DATA_OR_COMM_EXEC: u16 = 1 << 13;
const MISC_EXACT_IP_OR_MMAP_BUILD_ID: u16 = 1 << 14;
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
    if misc & MISC_MMAP_DATA_OR_COMM_EXEC != 0 {
        return false;
    }
    !matches!(prot, Some(p) if p != 0 && p & PROT_EXEC == 0)
}

/// `PERF_SAMPLE_BRANCH_HW_INDEX` / `PERF_SAMPLE_BRANCH_COUNTERS` of branch_sample_type.
const BRANCH_HW_INDEX: u64 = 1 << 17;
const BRANCH_COUNTERS: u64 = 1 << 19;
/// `PERF_SAMPLE_BRANCH_CALL_STACK`: the branch stack is the LBR call stack
/// (`--call-graph lbr`), which gives the user part of the call chain.
const BRANCH_CALL_STACK: u64 = 1 << 11;
/// `PERF_CONTEXT_USER`: the call-chain marker before the user part.
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// Call-chain context markers (`enum perf_callchain_context`), as u64.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

/// Bytes ahead of the framing point to prefetch (see [`prefetch_ahead`]).
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
/// Decompressed bytes allowed per input byte, in total (perf -z reaches ~5-30x), at least 256 MiB.
const MAX_DECOMPRESSION_RATIO: u64 = 64;

/// Precomputed record layout of one attr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Byte offset of the sample id in a SAMPLE body.
    sample_id: Option<usize>,
    /// Byte offset of the time in a SAMPLE body.
    sample_time: Option<usize>,
    /// Length of the sample_id trailer of non-sample records (0 without sample_id_all).
    trailer_len: usize,
    /// Distance from the record end of the trailer's id.
    trailer_id: Option<usize>,
    /// Distance from the record end of the trailer's time.
    trailer_time: Option<usize>,
}

impl Layout {
    fn new(a: &Attr) -> Layout {
        let t = a.sample_type;
        let has = |b: u64| t & b != 0;
        let n = |b: u64| usize::from(has(b)) * 8;
        let sample_id = if has(st::IDENTIFIER) {
            Some(0)
        } else if has(st::ID) {
            Some(n(st::IP) + n(st::TID) + n(st::TIME) + n(st::ADDR))
        } else {
            None
        };
        let sample_time = has(st::TIME).then(|| n(st::IDENTIFIER) + n(st::IP) + n(st::TID));
        let id_all = a.flags & flag::SAMPLE_ID_ALL != 0;
        let trailer_len = if id_all {
            n(st::TID) + n(st::TIME) + n(st::ID) + n(st::STREAM_ID) + n(st::CPU) + n(st::IDENTIFIER)
        } else {
            0
        };
        let trailer_id = if !id_all {
            None
        } else if has(st::IDENTIFIER) {
            Some(8)
        } else if has(st::ID) {
            Some(8 + n(st::STREAM_ID) + n(st::CPU) + n(st::IDENTIFIER))
        } else {
            None
        };
        let trailer_time = (id_all && has(st::TIME)).then(|| trailer_len - n(st::TID));
        Layout {
            sample_id,
            sample_time,
            trailer_len,
            trailer_id,
            trailer_time,
        }
    }
}

/// Offsets of the fixed-size leading fields of one attr's SAMPLE records (IDENTIFIER, IP,
/// TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD: each 8 bytes when present), so a sample reads
/// them directly instead of walking the sample_type bits.
#[derive(Debug, Clone, Copy)]
struct FixedFields {
    /// Bytes of the fixed part.
    fixed_len: usize,
    /// The attr records nothing but the fixed fields and a call chain (no READ, nothing
    /// after CALLCHAIN).
    plain: bool,
    /// The attr records PERF_SAMPLE_READ.
    read: bool,
    identifier: u8,
    ip: u8,
    tid: u8,
    time: u8,
    addr: u8,
    id: u8,
    stream_id: u8,
    cpu: u8,
    period: u8,
}

impl FixedFields {
    /// Offset of a field the attr does not record.
    const ABSENT: u8 = u8::MAX;

    fn new(a: &Attr) -> FixedFields {
        let mut off = 0u8;
        let mut next = |bit: u64| {
            if a.sample_type & bit != 0 {
                let at = off;
                off += 8;
                at
            } else {
                Self::ABSENT
            }
        };
        // Record order (perf_event.h, struct perf_event_sample).
        let identifier = next(st::IDENTIFIER);
        let ip = next(st::IP);
        let tid = next(st::TID);
        let time = next(st::TIME);
        let addr = next(st::ADDR);
        let id = next(st::ID);
        let stream_id = next(st::STREAM_ID);
        let cpu = next(st::CPU);
        let period = next(st::PERIOD);
        FixedFields {
            fixed_len: usize::from(off),
            plain: a.sample_type & (st::READ | st::AFTER_CHAIN) == 0,
            read: a.sample_type & st::READ != 0,
            identifier,
            ip,
            tid,
            time,
            addr,
            id,
            stream_id,
            cpu,
            period,
        }
    }
}

/// A u64 at `off` of `b` in the byte order `BE` (0 when out of bounds: callers check the
/// length first).
#[inline(always)]
fn le_or_be<const BE: bool>(b: &[u8], off: usize) -> u64 {
    let Some(w) = b.get(off..off.wrapping_add(8)) else {
        return 0;
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(w);
    if BE {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    }
}

/// A bounds-checked cursor like [`Cur`] with the byte order fixed at compile time (the
/// sample decoder's variable-size part).
struct FastCur<'a, const BE: bool> {
    data: &'a [u8],
    pos: usize,
}

impl<'a, const BE: bool> FastCur<'a, BE> {
    #[inline(always)]
    fn new(data: &'a [u8], pos: usize) -> Self {
        FastCur { data, pos }
    }

    #[inline(always)]
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let b = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }

    #[inline(always)]
    fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    #[inline(always)]
    fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        Some(le_or_be::<BE>(b, 0))
    }

    #[inline(always)]
    fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Some(if BE {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }
}

/// How a record's attr is found.
#[derive(Debug, Clone, Copy)]
enum IdMode {
    /// One attr: everything is attr 0.
    Single,
    /// All attrs share a layout: read the id where that layout says.
    Same(Layout),
    /// Layouts differ: each record's id is found per record type (IDENTIFIER or best effort).
    Mixed,
}

/// A queued record: where its bytes are and when it happened.
#[derive(Debug, Clone, Copy)]
struct Ref {
    time: u64,
    /// Offset of the record: in the input, or (with `IN_DECOMP`) in the decompressed buffer.
    at: u64,
    /// Input offset to report for this record (the COMPRESSED record for inner records).
    file_off: u64,
    attr: u16,
    /// The record header's type (kernel records: below 64), misc and size, kept so that
    /// delivery does not read the header again.
    ty: u8,
    misc: u16,
    size: u16,
}

/// Sorts records by time, stably (file order among equal times), as `sort_by_key` does,
/// for what a round holds: a few runs already in time order (one per CPU's ring buffer),
/// merged pairwise through `scratch` (kept by the caller: the general sort allocates a
/// buffer each time and was a twentieth of reading a file). More than a few runs: the
/// general sort.
fn sort_runs_by_time(v: &mut [Ref], scratch: &mut Vec<Ref>) {
    /// Runs merged by hand at most (a round of perf's has one per CPU, or two on a wrap).
    const MAX_RUNS: usize = 16;
    let mut bounds = [0usize; MAX_RUNS + 1];
    let mut runs = 0;
    for i in 1..v.len() {
        if v[i].time < v[i - 1].time {
            runs += 1;
            if runs == MAX_RUNS {
                v.sort_by_key(|r| r.time);
                return;
            }
            bounds[runs] = i;
        }
    }
    runs += 1;
    bounds[runs] = v.len();
    // Merge neighbours until one run is left.
    while runs > 1 {
        let mut merged = 0;
        let mut i = 0;
        while i < runs {
            let lo = bounds[i];
            if i + 1 < runs {
                let (mid, hi) = (bounds[i + 1], bounds[i + 2]);
                merge_adjacent(&mut v[lo..hi], mid - lo, scratch);
                i += 2;
            } else {
                i += 1;
            }
            bounds[merged] = lo;
            merged += 1;
        }
        bounds[merged] = v.len();
        runs = merged;
    }
}

/// Merges the two time-ordered runs `v[..mid]` and `v[mid..]` in place, stably (the first
/// run's records first among equal times).
fn merge_adjacent(v: &mut [Ref], mid: usize, scratch: &mut Vec<Ref>) {
    let Some(first_b) = v.get(mid).map(|r| r.time) else {
        return;
    };
    // Only the first run's records after the second run's first one move.
    let start = v[..mid].partition_point(|r| r.time <= first_b);
    if start == mid {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(&v[start..mid]);
    let (mut a, mut b, mut out) = (0, mid, start);
    while a < scratch.len() && b < v.len() {
        // Ties go to the first run.
        if v[b].time < scratch[a].time {
            v[out] = v[b];
            b += 1;
        } else {
            v[out] = scratch[a];
            a += 1;
        }
        out += 1;
    }
    // What is left of the second run is in place already.
    let rest = &scratch[a..];
    v[out..out + rest.len()].copy_from_slice(rest);
}

const IN_DECOMP: u64 = 1 << 63;
/// Tags a [`Ref::at`] as an offset in [`Reader::owned`] (stream mode).
const IN_OWNED: u64 = 1 << 62;

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
    /// Stream mode: a SAMPLE record at this input offset came before any HEADER_ATTR.
    NoAttrs(u64),
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
    decomp_total: u64,
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
    progress: &'p mut dyn FnMut(u64, u64),
    next_progress: u64,
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
}

/// A skip over the middle of a replay: the second of two parts replays the records from the
/// start up to the first round ending at or after `after` (a sixteenth of the way to its
/// share), then goes on at the round record `to` shortly before its share, as if the records
/// in between changed no state (no MMAP, COMM or FORK, no sample of an unknown thread, no
/// user record but rounds). That holds in most recordings (the state is set up at the start)
/// and spares replaying most of the previous share; [`RoundLog::confirms`] checks it
/// against the part before, which read those records, and a refuted jump is read again
/// sequentially. Planned by [`Reader::plan_jump`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct JumpPlan {
    after: usize,
    /// A FINISHED_ROUND record (by its bytes; the part before confirms it is one).
    to: usize,
    /// Newest time among the records of the round before `to` (which a sequential read's
    /// flush limit at `to` includes).
    warm_max: u64,
}

/// The skip a part made (see [`JumpPlan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Jumped {
    /// Offset of the round record after which it skipped.
    pub from: usize,
    /// Offset of the round record it went on at.
    pub to: usize,
    /// Its newest time on reaching `to` (a sequential read's flush limit after `to`).
    pub max_time: u64,
}

/// What the part before a jumping one saw from the jump's earliest start on: each round
/// record (offset, newest time there, records framed through it) and the offsets of the
/// records whose delivery changed state.
#[derive(Debug, Default, Clone)]
pub(crate) struct RoundLog {
    from: usize,
    rounds: Vec<(usize, u64, u64)>,
    changes: Vec<usize>,
    /// Too many changes to keep: no jump is confirmed.
    overflow: bool,
}

/// Changes a [`RoundLog`] keeps (a recording with more changes than this in its first share
/// has too many for a jump to hold anyway).
const MAX_LOGGED_CHANGES: usize = 1 << 12;

impl RoundLog {
    /// Notes that the record at file offset `at` changed state.
    fn change(&mut self, at: u64) {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        if at < self.from {
            return;
        }
        if self.changes.len() < MAX_LOGGED_CHANGES {
            self.changes.push(at);
        } else {
            self.overflow = true;
        }
    }

    /// Whether jump `j` skipped only records that change nothing, between two real rounds,
    /// with the flush limit a sequential read has after `j.to`: then the jumping part read
    /// exactly what it would have without the jump.
    pub(crate) fn confirms(&self, j: &Jumped) -> bool {
        let round = |at: usize| self.rounds.iter().find(|r| r.0 == at);
        // The round the first part ended at must come after `to`: its flush delivers what
        // was framed before `to`, which the jumping part never saw.
        let share_end = self.rounds.last().map_or(0, |r| r.0);
        match (round(j.from), round(j.to)) {
            (Some(_), Some(&(_, max_time, _))) => {
                !self.overflow
                    && j.from < j.to
                    && j.to < share_end
                    && max_time == j.max_time
                    && !self.changes.iter().any(|&c| c > j.from && c < j.to)
            }
            _ => false,
        }
    }

    /// Records jump `j` did not frame (between its two rounds).
    pub(crate) fn skipped(&self, j: &Jumped) -> u64 {
        let count = |at: usize| self.rounds.iter().find(|r| r.0 == at).map_or(0, |r| r.2);
        count(j.to).saturating_sub(count(j.from)).saturating_sub(1)
    }
}

/// How a part of a two-part read takes part in a jump (see [`JumpPlan`]).
pub(crate) enum Jumping<'h> {
    /// Not at all (one part, or more than two).
    No,
    /// The second part: plans a jump and makes it if it can; `planned` is set when a jump
    /// is planned (then an error of this part may come from bytes the jump misread). Its
    /// share starts where `split` says.
    Jump {
        planned: &'h std::sync::atomic::AtomicBool,
        split: &'h SplitPoint,
    },
    /// The first part: logs rounds and changes; at the end of its share `at_end` is told
    /// the log and returns whether to read on to the end (the jump was refuted). Its share
    /// ends where `split` says.
    Log {
        at_end: &'h mut dyn FnMut(&RoundLog) -> bool,
        split: &'h SplitPoint,
    },
}

/// Where the two shares of a two-part read meet (see [`crate::SplitRule`]): a fixed
/// fraction of the data, or decided by the second part when it is ready to read (after
/// its side work, or late because its core woke slowly), halfway between the first part's
/// progress and the end, so that both end together. The first part publishes its progress
/// at each round until a split is decided; a compare-and-swap on one word makes the split
/// always lie ahead of the first part (the second part decides from the newest progress,
/// or retries).
#[derive(Debug)]
pub(crate) struct SplitPoint {
    rule: crate::SplitRule,
    /// The first part's progress (offset after its last round), or [`SPLIT_DECIDED`] and
    /// the split's offset, or [`SPLIT_CLOSED`].
    state: std::sync::atomic::AtomicU64,
}

/// [`SplitPoint::state`] flag: the rest is the split's target offset.
const SPLIT_DECIDED: u64 = 1 << 63;
/// [`SplitPoint::state`]: the first part read to the end; there is no second share.
const SPLIT_CLOSED: u64 = u64::MAX;

impl SplitPoint {
    pub(crate) fn new(rule: crate::SplitRule) -> Self {
        SplitPoint {
            rule,
            state: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A fixed split's target offset in the data `[start, end)`.
    fn fixed(&self, start: usize, end: usize) -> Option<usize> {
        match self.rule {
            crate::SplitRule::Balanced => None,
            crate::SplitRule::Fixed(f) => {
                let f = if f.is_finite() {
                    f.clamp(0.0, 1.0)
                } else {
                    0.5
                };
                Some(start + (end.saturating_sub(start) as f64 * f) as usize)
            }
        }
    }

    /// The first part, after a round ending at `at` (data `[start, end)`): publishes its
    /// progress, and returns the split's target once one is decided.
    fn reached(&self, at: usize, start: usize, end: usize) -> Option<usize> {
        use std::sync::atomic::Ordering;
        if let Some(t) = self.fixed(start, end) {
            return Some(t);
        }
        let at = (at as u64).min(SPLIT_DECIDED - 1);
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if cur & SPLIT_DECIDED != 0 {
                return (cur != SPLIT_CLOSED).then_some((cur & !SPLIT_DECIDED) as usize);
            }
            match self
                .state
                .compare_exchange_weak(cur, at, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return None,
                Err(now) => cur = now,
            }
        }
    }

    /// The first part read to the end with no split decided: none will be.
    fn close(&self) {
        use std::sync::atomic::Ordering;
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur & SPLIT_DECIDED == 0).then_some(SPLIT_CLOSED)
            });
    }

    /// The second part, ready to read (data `[start, end)`): the target offset its share
    /// starts at, or `None` when less than `min_left` bytes are left after the first part's
    /// progress (or it read to the end): the first part reads on alone.
    fn decide(&self, start: usize, end: usize, min_left: usize) -> Option<usize> {
        use std::sync::atomic::Ordering;
        if let Some(t) = self.fixed(start, end) {
            return Some(t);
        }
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if cur & SPLIT_DECIDED != 0 {
                return (cur != SPLIT_CLOSED).then_some((cur & !SPLIT_DECIDED) as usize);
            }
            let progress = usize::try_from(cur).unwrap_or(usize::MAX).max(start);
            let left = end.saturating_sub(progress);
            if left < min_left.max(2) {
                return None;
            }
            let target = progress + left / 2;
            match self.state.compare_exchange_weak(
                cur,
                target as u64 | SPLIT_DECIDED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(target),
                Err(now) => cur = now,
            }
        }
    }
}

/// Which records a reader of a parallel read delivers. Every part frames the records from the
/// start: before its share it only *replays* them (state: comms, maps, forks, and the comm
/// interning of samples, so that string and DSO ids come out the same in every part), then
/// it decodes its share fully, and it stops at the end of its share without delivering what
/// is still queued (the next part delivers that). A share starts and ends at the first
/// FINISHED_ROUND record ending at or after a target offset, so neighbouring parts agree on
/// the boundary, and what a part delivers fully is exactly what a sequential read delivers
/// between those two rounds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartBounds {
    /// Target offset of the start of the share (`None`: from the first record).
    from: Option<usize>,
    /// Target offset of the end of the share (`None`: to the last record).
    to: Option<usize>,
    /// Still replaying state only (before the share).
    lite: bool,
    /// The share started (always true for the first part).
    started: bool,
    /// Framing stopped at the end of the share.
    ended: bool,
    /// One of several parts (its warning tail is merged by [`merge_shares`]).
    shared: bool,
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
            decomp_total: 0,
            dctx: None,
            zbuf: Vec::new(),
            owned: Vec::new(),
            stream: false,
            base: 0,
            input_len: data.len() as u64,
            features: Features::default(),
            suppressed_warnings: 0,
            progress,
            next_progress: 0,
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

    fn report_progress(&mut self, done: u64) {
        if done >= self.next_progress {
            (self.progress)(done, self.data.len() as u64);
            self.next_progress = done.saturating_add(1 << 22);
        }
    }

    /// Frames the records in `data[start..end]` of the input. Returns where and why it
    /// stopped early.
    fn frame(&mut self, start: usize, end: usize, pipe: bool) -> Option<ReadStop> {
        let data = self.data;
        match self.frame_in(data, start, end, pipe, true) {
            Framed::Stop(s) => Some(s),
            _ => None,
        }
    }

    /// Frames the records in `data[start..end]`, whose offset 0 is input offset `self.base`.
    /// Without `eof` (stream mode) an incomplete record at the end is not damage: it waits.
    fn frame_in(&mut self, data: &[u8], start: usize, end: usize, pipe: bool, eof: bool) -> Framed {
        let mut off = start;
        // Records of a mapped input are queued where they lie: runs of samples take the
        // short path below, everything else (and any damage) the general one.
        let fast = !self.stream && !self.attrs.is_empty();
        while off < end {
            self.report_progress(off as u64);
            if fast {
                off = self.frame_samples(data, off, end);
                if off >= end {
                    break;
                }
            }
            self.framing_at = off;
            let abs = self.base.saturating_add(off as u64);
            let stop = |ty: Option<u32>, reason: String, n: u64| {
                Framed::Stop(ReadStop {
                    offset: abs,
                    record_type: ty,
                    reason,
                    records_read: n,
                })
            };
            let n = self.p.meta.records;
            if eof && pipe {
                if let Some(text) = data.get(off..end).filter(|t| is_perf_message(t)) {
                    self.warn(format!(
                        "the stream ends with {} bytes of perf record's own messages ({:?}): \
                         its stderr was written into the output; ignored",
                        text.len(),
                        String::from_utf8_lossy(text).lines().next().unwrap_or("")
                    ));
                    return Framed::Done;
                }
            }
            let Some(hdr) = data.get(off..end).filter(|h| h.len() >= 8) else {
                if !eof {
                    return Framed::More(off);
                }
                return stop(
                    None,
                    format!(
                        "truncated record header: {} bytes left, 8 needed",
                        end - off
                    ),
                    n,
                );
            };
            let Some((ty, misc, size)) = record_header(hdr, self.be) else {
                return stop(None, "unreadable record header".into(), n);
            };
            let size = usize::from(size);
            if size < 8 {
                return stop(Some(ty), format!("corrupt record: size {size} < 8"), n);
            }
            let Some(body) = hdr.get(8..size) else {
                if !eof {
                    return Framed::More(off);
                }
                return stop(
                    Some(ty),
                    format!(
                        "truncated record: {size} bytes long, {} bytes left",
                        end - off
                    ),
                    n,
                );
            };
            let mut next = off + size;
            if ty >= 64 && ty != rt::FINISHED_ROUND {
                // User records (attrs, features, compressed data, AUX) are not state-free.
                if let Some(log) = self.log.as_mut() {
                    log.change(off as u64);
                }
            }
            match ty {
                rt::FINISHED_ROUND => {
                    self.finish_round();
                    let records = self.p.meta.records + 1;
                    if let Some(log) = self.log.as_mut().filter(|l| off >= l.from) {
                        log.rounds.push((off, self.max_time, records));
                    }
                    if let Some(plan) = self
                        .jump_plan
                        .filter(|p| self.part.lite && next >= p.after && p.to > off)
                    {
                        // Deliver what the prefix left queued (a sequential read delivers it
                        // in the round after this one, before anything at or after `to` is
                        // framed), then go on at `to` with the newest time seen there.
                        self.jump_plan = None;
                        self.flush(None);
                        self.replay_deferred.clear();
                        self.max_time = self.max_time.max(plan.warm_max);
                        self.jumped = Some(Jumped {
                            from: off,
                            to: plan.to,
                            max_time: self.max_time,
                        });
                        next = plan.to;
                    }
                    let at = usize::try_from(self.base)
                        .unwrap_or(usize::MAX)
                        .saturating_add(next);
                    if self.part.lite && self.part.from.is_some_and(|f| at >= f) {
                        self.part.lite = false;
                        self.requeue_deferred();
                        self.part.started = true;
                    }
                    if let Some((split, start, end)) = self.split {
                        if let Some(t) = split.reached(at, start, end) {
                            self.part.to = Some(t);
                            self.split = None;
                        }
                    }
                    if !self.part.lite && self.part.to.is_some_and(|t| at >= t) {
                        self.part.ended = true;
                        self.p.meta.records += 1;
                        self.resume_at = next;
                        return Framed::Done;
                    }
                }
                rt::COMPRESSED | rt::COMPRESSED2 if self.part.lite => {
                    // No share boundary after compressed data (its rounds are inside it):
                    // the part before reads on to the end (below), this one gives up.
                    return Framed::Done;
                }
                rt::COMPRESSED | rt::COMPRESSED2 => {
                    self.part.to = None;
                    if let Some((split, ..)) = self.split.take() {
                        split.close();
                    }
                    self.p.meta.compressed = true;
                    let payload = if ty == rt::COMPRESSED {
                        Some(body)
                    } else {
                        // COMPRESSED2: u64 data_size, then the data, then alignment padding.
                        u64_at(body, 0, self.be)
                            .and_then(|n| usize::try_from(n).ok())
                            .and_then(|n| body.get(8..8usize.checked_add(n)?))
                    };
                    let Some(payload) = payload else {
                        return stop(Some(ty), "corrupt COMPRESSED2 data size".into(), n);
                    };
                    if let Err(e) = self.decompress(payload, abs) {
                        return stop(Some(ty), e, n);
                    }
                }
                rt::AUXTRACE => {
                    // The AUX data follows the record; its size is the first body field.
                    let size = u64_at(body, 0, self.be);
                    let aux = size
                        .and_then(|a| usize::try_from(a).ok())
                        .and_then(|a| next.checked_add(a))
                        .filter(|&e| e <= end);
                    match (aux, size) {
                        (Some(e), _) => next = e,
                        // Stream mode: skip the rest of the data as it arrives.
                        (None, Some(a)) if !eof => {
                            return Framed::Skip {
                                at: abs,
                                left: a.saturating_sub((end - next) as u64),
                                records: n,
                            }
                        }
                        _ => return stop(Some(ty), "AUXTRACE data extends past the end".into(), n),
                    }
                }
                rt::HEADER_TRACING_DATA => {
                    // The tracing data follows the record: u32 size (already padded to 8
                    // bytes by perf), then the data. Kept whole until it is all there.
                    let size = Cur::new(body, self.be)
                        .u32()
                        .map(|n| n as usize)
                        .filter(|&n| n <= MAX_TRACING_DATA);
                    let data_end = size.and_then(|n| next.checked_add(n));
                    match data_end.filter(|&e| e <= end) {
                        Some(e) => {
                            let tracing = data.get(next..e).unwrap_or(&[]);
                            header::add_tracing_data(&mut self.features, tracing);
                            next = e;
                            self.build_events();
                        }
                        None if !eof && size.is_some() => return Framed::More(off),
                        None => {
                            let why = match size {
                                Some(_) => "TRACING_DATA extends past the end".into(),
                                None => format!(
                                    "TRACING_DATA record without a plausible size (at most {} \
                                     MiB)",
                                    MAX_TRACING_DATA >> 20
                                ),
                            };
                            return stop(Some(ty), why, n);
                        }
                    }
                }
                rt::AUXTRACE_INFO
                    if !self.p.warnings.iter().any(|w| w == header::AUX_NOT_DECODED) =>
                {
                    self.warn(header::AUX_NOT_DECODED.into());
                }
                rt::HEADER_ATTR => self.pipe_attr(body, abs),
                rt::HEADER_FEATURE => {
                    let mut c = Cur::new(body, self.be);
                    if let Some(id) = c.u64() {
                        let id = u32::try_from(id).unwrap_or(u32::MAX);
                        let rest = body.get(8..).unwrap_or(&[]);
                        header::parse_feature(&mut self.features, id, rest, self.be);
                    }
                }
                rt::HEADER_BUILD_ID => {
                    if let Some(e) = header::parse_build_id_body(misc, body, self.be) {
                        self.features.build_ids.push(e);
                    }
                }
                rt::EVENT_UPDATE => self.event_update(body),
                t if t < 64 => {
                    if self.attrs.is_empty() {
                        if self.stream && t == rt::SAMPLE {
                            return Framed::NoAttrs(abs);
                        }
                        if pipe {
                            self.warn(format!(
                                "record type {t} at offset {abs} before any HEADER_ATTR; ignored"
                            ));
                        }
                    } else if self.stream {
                        let at = self.owned.len() as u64 | IN_OWNED;
                        self.owned.extend_from_slice(hdr.get(..size).unwrap_or(&[]));
                        self.enqueue(ty, misc, body, at, abs);
                    } else {
                        self.enqueue(ty, misc, body, off as u64, off as u64);
                    }
                }
                _ => {}
            }
            self.p.meta.records += 1;
            off = next;
        }
        Framed::Done
    }

    /// Plans the jump of the second part of a two-part read whose share starts at the first
    /// round at or after `from` (see [`JumpPlan`]): finds the two round records nearest
    /// before `from` by their bytes (records are 8-byte aligned from the data start), past
    /// `after`, and frames the records between them for their newest time. `None` when
    /// there are no such rounds or the bytes between them do not frame as records.
    fn plan_jump(&self, start: usize, end: usize, after: usize, from: usize) -> Option<JumpPlan> {
        /// How far before its share a part looks for rounds (rounds are far shorter).
        const MAX_SCAN: usize = 8 << 20;
        let data = self.data.get(..end)?;
        let is_round = |o: usize| {
            data.get(o..)
                .and_then(|h| record_header(h, self.be))
                .is_some_and(|h| h == (rt::FINISHED_ROUND, 0, 8))
        };
        let lowest = after.max(from.saturating_sub(MAX_SCAN));
        // Rounds ending before `from`: the first part's share ends at a later one, whose
        // flush delivers everything framed before the round jumped to.
        let mut o = start + from.checked_sub(start)?.checked_sub(1)? / 8 * 8;
        let mut rounds = [0usize; 2];
        let mut found = 0;
        while found < 2 && o >= lowest + 8 {
            o -= 8;
            if is_round(o) {
                rounds[found] = o;
                found += 1;
            }
        }
        let [to, before] = rounds;
        if found < 2 || before <= after {
            return None;
        }
        let mut warm_max = 0;
        let mut at = before + 8;
        while at < to {
            let (ty, _, size) = record_header(data.get(at..)?, self.be)?;
            let next = at
                .checked_add(usize::from(size))
                .filter(|&n| n <= to && size >= 8)?;
            if ty < 64 {
                if let (_, Some(t)) = self.attr_and_time(ty, data.get(at + 8..next)?) {
                    warm_max = warm_max.max(t);
                }
            }
            at = next;
        }
        (at == to).then_some(JumpPlan {
            after,
            to,
            warm_max,
        })
    }

    /// Queues the run of whole SAMPLE records starting at `off` (a mapped input with attrs);
    /// returns the offset of the first record that is not one (or is damaged).
    #[inline(always)]
    fn frame_samples(&mut self, data: &[u8], mut off: usize, end: usize) -> usize {
        let data = data.get(..end).unwrap_or(&[]);
        let be = self.be;
        // One attr: every sample's time sits at one offset (decided once for the run).
        let single_time = match self.id_mode {
            IdMode::Single => Some(self.single_sample_time),
            _ => None,
        };
        // `max_time` lives in a register for the run (as `enqueue` keeps it).
        let (mut max_time, mut records) = (self.max_time, 0u64);
        let replay = self.part.lite;
        while let Some(rec) = data.get(off..) {
            prefetch_ahead(rec);
            let Some((ty, misc, size)) = record_header(rec, be) else {
                break;
            };
            let Some(body) = rec.get(8..usize::from(size)).filter(|_| ty == rt::SAMPLE) else {
                break;
            };
            let (attr, time) = match single_time {
                Some(at) => (0, at.and_then(|o| u64_at(body, o, be))),
                None => self.attr_and_time(ty, body),
            };
            let time = time.unwrap_or(max_time);
            max_time = max_time.max(time);
            let r = Ref {
                time,
                at: off as u64,
                file_off: off as u64,
                attr,
                ty: rt::SAMPLE as u8,
                misc,
                size,
            };
            if replay && self.replay_skips_sample(attr, body) {
                // Its time still moves the rounds' flush limits (above), as if it were queued.
                self.replay_deferred.push(r);
            } else {
                self.queue.push(r);
            }
            records += 1;
            off += usize::from(size);
        }
        self.max_time = max_time;
        self.p.meta.records += records;
        off
    }

    /// The share starts: the deferred samples still pending (newer than every flush so far)
    /// join the queue where a sequential read has them. The queue after a flush is in time
    /// order with ties in file order (offsets in the mapped file, which a replaying part
    /// reads), so ordering everything by (time, file offset) gives the order of one stable
    /// sort by time of the file-ordered records.
    fn requeue_deferred(&mut self) {
        if self.replay_deferred.is_empty() {
            return;
        }
        let head = self.head.min(self.queue.len());
        let mut merged = self.queue.split_off(head);
        merged.append(&mut self.replay_deferred);
        // The pending queue is one sorted run and the parked samples (in file order) nearly
        // one: the stable sort finds the runs and merges them.
        merged.sort_by_key(|r| (r.time, r.file_off));
        self.queue = merged;
        self.head = 0;
        self.sorted = self.queue.len();
    }

    /// Replaying state before a share, a sample only matters for the comm it may intern for
    /// an unknown thread ([`State::thread`]; everything else it does is for the share that
    /// delivers it). A sample whose thread is known when it is framed is known when it would
    /// be delivered too (threads are never forgotten), so it need not be queued at all: the
    /// part before this one decodes it. Frees a replaying part from sorting and delivering
    /// the samples of every share before its own.
    #[inline]
    fn replay_skips_sample(&self, attr: u16, body: &[u8]) -> bool {
        let Some(sl) = self.sample_layouts.get(usize::from(attr)) else {
            return false;
        };
        if sl.read {
            // Its read values are state for the samples after it (see `read_last`).
            return false;
        }
        let tid = if sl.tid == FixedFields::ABSENT {
            -1
        } else {
            let Some(v) = u64_at(body, usize::from(sl.tid), self.be) else {
                return false;
            };
            pid_tid(v, self.be).1
        };
        self.st.knows_thread(tid)
    }

    /// Queues a kernel record for time-ordered delivery.
    #[inline(always)]
    fn enqueue(&mut self, ty: u32, misc: u16, body: &[u8], at: u64, file_off: u64) {
        let (attr, time) = self.attr_and_time(ty, body);
        // Records without a timestamp keep their place after what was already seen.
        let time = time.unwrap_or(self.max_time);
        self.max_time = self.max_time.max(time);
        self.push_ref(Ref {
            time,
            at,
            file_off,
            attr,
            // Kernel records only (type < 64); size: the header's, which fits 16 bits.
            ty: ty as u8,
            misc,
            size: (body.len() + 8) as u16,
        });
    }

    #[inline]
    fn push_ref(&mut self, r: Ref) {
        self.queue.push(r);
    }

    /// perf's FINISHED_ROUND: deliver everything not newer than the previous round's newest.
    fn finish_round(&mut self) {
        let limit = self.next_flush;
        self.flush(Some(limit));
        self.next_flush = self.max_time;
    }

    /// Sorts the queue by time (stable: file order among equal times) and delivers the
    /// records not newer than `limit` (all with `None`).
    fn flush(&mut self, limit: Option<u64>) {
        if !self.replay_deferred.is_empty() {
            // The deferred samples this flush would deliver (replaying: to no effect).
            match limit {
                Some(l) => self.replay_deferred.retain(|r| r.time > l),
                None => self.replay_deferred.clear(),
            }
        }
        if self.head >= self.queue.len() {
            // Nothing queued (a replaying part parks most samples): all input before the
            // framing point is done with.
            self.release_done_input();
            return;
        }
        let mut queue = std::mem::take(&mut self.queue);
        let head = self.head.min(queue.len());
        let sorted = self.sorted.clamp(head, queue.len());
        if sorted < queue.len() {
            // Records since the last flush: sort them (per-CPU runs interleave; the stable
            // sort keeps file order among equal times), then merge them with the part of the
            // sorted pending records they overlap (usually a short tail, often nothing).
            if let Some(new) = queue.get_mut(sorted..) {
                sort_runs_by_time(new, &mut self.merge_scratch);
            }
            let first_new = queue.get(sorted).map_or(u64::MAX, |r| r.time);
            let older = queue.get(head..sorted).unwrap_or(&[]);
            let overlap = head + older.partition_point(|r| r.time <= first_new);
            if overlap < sorted {
                if let Some(tail) = queue.get_mut(overlap..) {
                    // Two runs: the older records it overlaps, then the new ones.
                    merge_adjacent(tail, sorted - overlap, &mut self.merge_scratch);
                }
            }
        }
        self.sorted = queue.len();
        let pending = queue.get(head..).unwrap_or(&[]);
        let cut = head
            + match limit {
                Some(l) => pending.partition_point(|r| r.time <= l),
                None => pending.len(),
            };
        for r in queue.get(head..cut).unwrap_or(&[]) {
            self.deliver(r);
        }
        self.head = cut;
        if self.head * 2 < queue.len() {
            self.queue = queue;
            return;
        }
        // At least half the queue is delivered: drop it, and the buffered bytes only it used
        // (amortized O(1) per record).
        queue.drain(..self.head);
        self.sorted -= self.head;
        self.head = 0;
        self.queue = queue;
        self.compact_decomp();
        self.compact_owned();
        self.release_done_input();
    }

    /// Releases the mapped input before the oldest still-queued record (or the framing
    /// point), in steps of 8 MiB. Parked replay samples do not hold input back: the few this
    /// part delivers after all (pending when its share starts) are read again from the file.
    fn release_done_input(&mut self) {
        let low = self
            .queue
            .iter()
            .filter(|r| r.at & (IN_DECOMP | IN_OWNED) == 0)
            .map(|r| r.at as usize)
            .min()
            .unwrap_or(self.framing_at)
            .min(self.framing_at);
        if low >= self.released.saturating_add(1 << 23) {
            (self.release)(low);
            self.released = low;
        }
    }

    /// Stream mode: drops copied records already delivered, rebasing the queue's offsets.
    fn compact_owned(&mut self) {
        if self.owned.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        for r in &mut self.queue {
            if r.at & IN_OWNED != 0 {
                let off = (r.at & !IN_OWNED) as usize;
                let rec = record_at(&self.owned, off, self.be).unwrap_or(&[]);
                r.at = keep.len() as u64 | IN_OWNED;
                keep.extend_from_slice(rec);
            }
        }
        self.owned = keep;
    }

    /// Drops decompressed bytes no queued record needs any more.
    fn compact_decomp(&mut self) {
        if self.decomp.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        for r in &mut self.queue {
            if r.at & IN_DECOMP != 0 {
                let off = (r.at & !IN_DECOMP) as usize;
                let rec = record_at(&self.decomp, off, self.be).unwrap_or(&[]);
                r.at = keep.len() as u64 | IN_DECOMP;
                keep.extend_from_slice(rec);
            }
        }
        let tail = self.decomp.get(self.decomp_framed..).unwrap_or(&[]);
        let framed = keep.len();
        keep.extend_from_slice(tail);
        self.decomp = keep;
        self.decomp_framed = framed;
    }

    fn decompress(&mut self, payload: &[u8], file_off: u64) -> Result<(), String> {
        let budget = self
            .input_len
            .saturating_mul(MAX_DECOMPRESSION_RATIO)
            .max(1 << 28);
        let dctx = self.dctx.get_or_insert_with(zstd_safe::DCtx::create);
        if self.zbuf.is_empty() {
            self.zbuf = vec![0; 1 << 18];
        }
        let mut input = zstd_safe::InBuffer::around(payload);
        loop {
            let mut out = zstd_safe::OutBuffer::around(&mut self.zbuf[..]);
            if let Err(code) = dctx.decompress_stream(&mut out, &mut input) {
                return Err(format!(
                    "zstd decompression failed: {}",
                    zstd_safe::get_error_name(code)
                ));
            }
            let n = out.pos();
            self.decomp_total = self.decomp_total.saturating_add(n as u64);
            if self.decomp_total > budget {
                return Err("decompressed data exceeds the size limit".into());
            }
            self.decomp
                .extend_from_slice(self.zbuf.get(..n).unwrap_or(&[]));
            if n < self.zbuf.len() && input.pos() >= payload.len() {
                break;
            }
            if n == 0 && input.pos() >= payload.len() {
                break;
            }
        }
        // Frame the complete records now available; a partial one waits for the next chunk.
        loop {
            let off = self.decomp_framed;
            let Some(rest) = self.decomp.get(off..) else {
                break;
            };
            let mut c = Cur::new(rest, self.be);
            let (Some(ty), Some(_misc), Some(size)) = (c.u32(), c.u16(), c.u16()) else {
                break;
            };
            let size = usize::from(size);
            if size < 8 {
                return Err(format!(
                    "corrupt record (size {size}) inside compressed data"
                ));
            }
            if rest.len() < size {
                break;
            }
            self.decomp_framed = off + size;
            self.p.meta.records += 1;
            if ty == rt::FINISHED_ROUND {
                self.finish_round();
                // finish_round compacts: offsets moved, but decomp_framed follows.
                continue;
            }
            if ty < 64 && !self.attrs.is_empty() {
                let body = self.decomp.get(off + 8..off + size).unwrap_or(&[]);
                // Copy out the little needed for ordering; the body stays in `decomp`.
                let (attr, time) = self.attr_and_time(ty, body);
                let time = time.unwrap_or(self.max_time);
                self.max_time = self.max_time.max(time);
                let misc = self
                    .decomp
                    .get(off..)
                    .and_then(|h| record_header(h, self.be))
                    .map_or(0, |h| h.1);
                self.push_ref(Ref {
                    time,
                    at: off as u64 | IN_DECOMP,
                    file_off,
                    attr,
                    ty: ty as u8,
                    misc,
                    size: size as u16,
                });
            }
        }
        Ok(())
    }

    fn pipe_attr(&mut self, body: &[u8], off: u64) {
        let Some((mut attr, size)) = header::parse_attr(body, self.be) else {
            self.warn(format!("unreadable HEADER_ATTR at offset {off}"));
            return;
        };
        let mut c = Cur::new(body.get(size..).unwrap_or(&[]), self.be);
        while let Some(id) = c.u64() {
            attr.ids.push(id);
        }
        self.attrs.push(attr);
        self.refresh_attrs();
        // Samples may be delivered before the stream ends: their events must exist.
        self.build_events();
    }

    /// PERF_RECORD_EVENT_UPDATE (pipe mode): type NAME (2) carries an event's name.
    fn event_update(&mut self, body: &[u8]) {
        let mut c = Cur::new(body, self.be);
        let (Some(kind), Some(id)) = (c.u64(), c.u64()) else {
            return;
        };
        if kind != 2 {
            return;
        }
        let name = c_string(body.get(16..).unwrap_or(&[]));
        if let Some(&a) = self.id_to_attr.get(&id) {
            if let Some(attr) = self.attrs.get_mut(a as usize) {
                attr.name = Some(name);
            }
        }
    }

    #[inline(always)]
    fn deliver(&mut self, r: &Ref) {
        if r.at & (IN_DECOMP | IN_OWNED) == 0 {
            // The common case: the record is in the borrowed input, its header in `r`.
            let data = self.data;
            let at = r.at as usize;
            let body = data
                .get(at.saturating_add(8)..at.saturating_add(usize::from(r.size)))
                .unwrap_or(&[]);
            self.deliver_parts(r, u32::from(r.ty), r.misc, body);
            return;
        }
        self.deliver_buffered(r);
    }

    /// [`Reader::deliver`] of a record in the decompression or stream buffer.
    #[inline(never)]
    fn deliver_buffered(&mut self, r: &Ref) {
        // Borrow the bytes from the buffer, moved out for the duration so `self` stays
        // mutable.
        let decomp = std::mem::take(&mut self.decomp);
        let owned = std::mem::take(&mut self.owned);
        let rec: &[u8] = if r.at & IN_DECOMP != 0 {
            record_at(&decomp, (r.at & !IN_DECOMP) as usize, self.be).unwrap_or(&[])
        } else if r.at & IN_OWNED != 0 {
            record_at(&owned, (r.at & !IN_OWNED) as usize, self.be).unwrap_or(&[])
        } else {
            &[]
        };
        self.deliver_record(r, rec);
        self.decomp = decomp;
        self.owned = owned;
    }

    /// Applies one queued record (`rec`: header and body).
    fn deliver_record(&mut self, r: &Ref, rec: &[u8]) {
        if let Some((ty, misc, _)) = record_header(rec, self.be) {
            let body = rec.get(8..).unwrap_or(&[]);
            self.deliver_parts(r, ty, misc, body);
        }
    }

    /// Applies one queued record of type `ty` (`body`: after the header).
    #[inline(always)]
    fn deliver_parts(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) {
        // Samples first and alone: the other records are handled out of line.
        let ok = if ty == rt::SAMPLE {
            self.sample(r, misc, body)
        } else {
            self.side_record(r, ty, misc, body)
        };
        if ok.is_none() {
            self.malformed(ty, r.file_off);
        }
    }

    #[cold]
    #[inline(never)]
    fn malformed(&mut self, ty: u32, file_off: u64) {
        self.warn(format!(
            "malformed record of type {ty} at offset {file_off}; skipped"
        ));
    }

    /// Applies a queued record other than a sample.
    #[inline(never)]
    fn side_record(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) -> Option<()> {
        if matches!(ty, rt::MMAP | rt::MMAP2 | rt::COMM | rt::FORK) {
            if let Some(log) = self.log.as_mut() {
                log.change(r.file_off);
            }
        }
        match ty {
            rt::MMAP | rt::MMAP2 => self.mmap(r, ty, misc, body),
            rt::COMM => self.comm(r, misc, body),
            rt::FORK => self.fork(body),
            rt::EXIT => Some(()),
            rt::LOST | rt::LOST_SAMPLES | rt::THROTTLE if self.part.lite => Some(()),
            rt::LOST => self.lost(body),
            rt::LOST_SAMPLES => {
                let lost = u64_at(body, 0, self.be);
                if let Some(l) = lost {
                    self.p.lost_samples = self.p.lost_samples.saturating_add(l);
                    self.add_lost(r.attr, l);
                }
                lost.map(|_| ())
            }
            rt::THROTTLE => {
                self.p.throttles += 1;
                Some(())
            }
            _ => Some(()),
        }
    }

    fn add_lost(&mut self, attr: u16, n: u64) {
        self.p.lost = self.p.lost.saturating_add(n);
        if let Some(e) = self.p.events.get_mut(attr as usize) {
            e.lost = e.lost.saturating_add(n);
        }
    }

    fn lost(&mut self, body: &[u8]) -> Option<()> {
        let id = u64_at(body, 0, self.be)?;
        let n = u64_at(body, 8, self.be)?;
        let attr = self.id_to_attr.get(&id).copied().unwrap_or(0);
        self.p.lost_events = self.p.lost_events.saturating_add(n);
        self.add_lost(attr, n);
        Some(())
    }

    /// The bytes of a non-sample record before its sample_id trailer.
    fn without_trailer<'b>(&self, attr: u16, body: &'b [u8]) -> &'b [u8] {
        let t = self.layouts.get(attr as usize).map_or(0, |l| l.trailer_len);
        body.get(..body.len().saturating_sub(t)).unwrap_or(body)
    }

    fn comm(&mut self, r: &Ref, misc: u16, body: &[u8]) -> Option<()> {
        let body = self.without_trailer(r.attr, body);
        let mut c = Cur::new(body, self.be);
        let pid = c.i32()?;
        let tid = c.i32()?;
        let name = c_string(body.get(8..)?);
        let exec = misc & MISC_MMAP_DATA_OR_COMM_EXEC != 0;
        self.st.set_comm(&mut self.p, pid, tid, &name, exec);
        Some(())
    }

    fn fork(&mut self, body: &[u8]) -> Option<()> {
        let mut c = Cur::new(body, self.be);
        let pid = c.i32()?;
        let ppid = c.i32()?;
        let tid = c.i32()?;
        let ptid = c.i32()?;
        self.st.fork(&mut self.p, pid, ppid, tid, ptid);
        Some(())
    }

    fn mmap(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) -> Option<()> {
        let body = self.without_trailer(r.attr, body);
        let mut c = Cur::new(body, self.be);
        let pid = c.i32()?;
        let _tid = c.i32()?;
        let start = c.u64()?;
        let len = c.u64()?;
        let pgoff = c.u64()?;
        let mut build_id = None;
        let mut prot = None;
        if ty == rt::MMAP2 {
            let ids = c.bytes(24)?;
            if misc & MISC_EXACT_IP_OR_MMAP_BUILD_ID != 0 {
                // build_id_size u8, 3 reserved bytes, build_id[20].
                let n = usize::from(*ids.first()?).min(20);
                build_id = ids.get(4..4 + n);
            }
            prot = Some(c.u32()?);
            let _flags = c.u32()?;
        }
        let mode = CpuMode::from_misc(misc);
        let kernel = pid == -1 || matches!(mode, CpuMode::Kernel | CpuMode::GuestKernel);
        if !holds_code(kernel, misc, prot) {
            return Some(());
        }
        let path = c_string(body.get(c.pos()..)?);
        let before = self.p.dsos.len();
        let (dso, kind) = self.st.dso(&mut self.p, &path, kernel, build_id, pid);
        if self.p.dsos.len() > before {
            // A new DSO: give it its HEADER_BUILD_ID now (streaming readers see it at once).
            if let Some(d) = self.p.dsos.get_mut(dso as usize) {
                if d.build_id.is_none() {
                    d.build_id = self
                        .features
                        .build_ids
                        .iter()
                        .find(|(_, p, ..)| *p == d.path)
                        .map(|(_, _, id, _)| id.clone());
                }
                kernel_image_from_build_ids(&self.features.build_ids, d);
            }
        }
        let identity = matches!(
            kind,
            crate::model::DsoKind::Kernel | crate::model::DsoKind::Anonymous
        );
        let mut end = start.saturating_add(len);
        if kind == crate::model::DsoKind::Kernel {
            // perf extends the kernel map to the next kernel map (modules split it).
            end = u64::MAX;
        }
        let added = self.st.add_map(
            kernel,
            pid,
            Map {
                start,
                end,
                pgoff,
                dso,
                identity,
            },
        );
        if !added {
            self.warn(format!(
                "too many mappings (limit from the file size); {path} for pid {pid} ignored"
            ));
        }
        Some(())
    }

    fn sample(&mut self, r: &Ref, misc: u16, body: &[u8]) -> Option<()> {
        // One copy of the decoder per byte order, so no field read tests the order.
        // And one for plain samples (fixed fields and a call chain only, not unwound): most
        // of them, decoded without the code for the rest.
        let plain = self
            .sample_layouts
            .get(r.attr as usize)
            .is_some_and(|l| l.plain)
            && self.unwind.is_none();
        match (self.be, plain) {
            (true, true) => self.sample_in::<true, true>(r, misc, body),
            (true, false) => self.sample_in::<true, false>(r, misc, body),
            (false, true) => self.sample_in::<false, true>(r, misc, body),
            (false, false) => self.sample_in::<false, false>(r, misc, body),
        }
    }

    /// Decodes one SAMPLE record and hands it to the sink (or stores it). The common sample
    /// (fixed fields and a call chain) stays in this function; the fields after the call
    /// chain and the side data (raw, registers, stack, read values) are decoded and stored
    /// out of line, so the hot path keeps few live values.
    /// `PLAIN`: the attr records none of READ and the fields after CALLCHAIN, and nothing is
    /// unwound.
    #[inline(never)]
    fn sample_in<const BE: bool, const PLAIN: bool>(
        &mut self,
        r: &Ref,
        misc: u16,
        body: &[u8],
    ) -> Option<()> {
        let sl = *self.sample_layouts.get(r.attr as usize)?;
        let a = self.attrs.get(r.attr as usize)?;
        let t = a.sample_type;
        // The fixed-size fields (IDENTIFIER .. PERIOD) sit at offsets known per attr.
        let head = body.get(..sl.fixed_len)?;
        let field = |off: u8| -> Option<u64> {
            if off == FixedFields::ABSENT {
                None
            } else {
                Some(le_or_be::<BE>(head, usize::from(off)))
            }
        };
        let ip = field(sl.ip).unwrap_or(0);
        let (pid, tid) = field(sl.tid).map_or((-1, -1), |v| pid_tid(v, BE));
        let time = field(sl.time).unwrap_or(0);
        let cpu = match field(sl.cpu) {
            Some(v) if BE => (v >> 32) as u32,
            Some(v) => v as u32,
            None => 0,
        };
        let period = match field(sl.period) {
            Some(p) => p,
            None if a.flags & flag::FREQ == 0 => a.period_or_freq,
            None => 1,
        };
        let mut pos = sl.fixed_len;
        let read = if !PLAIN && t & st::READ != 0 {
            let mut slow = Cur::new(body.get(pos..)?, BE);
            let v = read_values(&mut slow, a.read_format)?;
            pos += slow.pos();
            Some(v)
        } else {
            None
        };
        let mut c = FastCur::<BE>::new(body, pos);
        let mut chain: &[u8] = &[];
        if t & st::CALLCHAIN != 0 {
            let len = usize::try_from(c.u64()?).ok()?.checked_mul(8)?;
            if self.skip_chains && PLAIN {
                // Nothing after the chain to find: only check that it fits.
                if len > body.len().saturating_sub(c.pos) {
                    return None;
                }
            } else {
                let bytes = c.bytes(len)?;
                if !self.skip_chains {
                    chain = bytes;
                }
            }
        }
        let tail = if !PLAIN && t & st::AFTER_CHAIN != 0 {
            Some(sample_tail::<BE>(a, body, c.pos)?)
        } else {
            None
        };
        let regs_mask = a.sample_regs_user;
        let lbr_call_stack = a.branch_sample_type & BRANCH_CALL_STACK != 0;

        // The whole record parsed: commit it.
        let cpumode = CpuMode::from_misc(misc);
        let (comm, slot) = self.st.thread(&mut self.p, pid, tid);
        if self.st.sample_threads != self.sample_threads_seen {
            // This sample made its thread known: a change of state.
            self.sample_threads_seen = self.st.sample_threads;
            if let Some(log) = self.log.as_mut() {
                log.change(r.file_off);
            }
        }
        if let Some(vals) = read.as_deref() {
            // perf delivers a READ sample as one sample per value read, weighted by how much
            // the counter moved since the last sample of its id.
            self.read_members(r.attr, tid, vals);
            if let Some(log) = self.log.as_mut() {
                // The last values are state: a part that jumped over this would lack them.
                log.change(r.file_off);
            }
        }
        if self.part.lite {
            // Replay: the thread's comm is interned (and the read values noted) as in the
            // part that delivers this.
            return Some(());
        }
        if read.is_some() && self.read_members.is_empty() {
            // Every counter of the group stood still: perf delivers nothing.
            return Some(());
        }
        let (user, location) = if self.skip_locations {
            // Resolved nowhere: what `resolve` gives an address in no mapping.
            let nowhere = crate::model::Location::unmapped(ip);
            (None, nowhere)
        } else {
            let user = self.st.slot_maps(slot);
            (user, self.st.resolve(user, cpumode, ip))
        };
        let f0 = self.p.frames.len();
        let b0 = self.p.branches.len();
        if let Some(tl) = tail.as_ref().filter(|tl| !tl.branches.is_empty()) {
            push_branches::<BE>(
                &self.st,
                &mut self.p.branches,
                tl.branches,
                user,
                self.skip_locations,
            );
        }
        // `--call-graph lbr`: the user part of the chain comes from the LBR call stack (as
        // perf's resolve_lbr_callchain_sample), when the chain has a user part at all.
        let lbr_user = (lbr_call_stack && t & st::BRANCH_STACK != 0)
            .then(|| user_context_start::<BE>(chain))
            .flatten();
        if !chain.is_empty() {
            push_chain::<BE>(
                &self.st,
                &mut self.p.frames,
                chain
                    .get(..lbr_user.unwrap_or(chain.len()))
                    .unwrap_or(chain),
                user,
                self.skip_locations,
                (cpumode, ip, location),
            );
        }
        if lbr_user.is_some() {
            push_lbr_user_chain(
                &self.st,
                &mut self.p.frames,
                self.p.branches.get(b0..).unwrap_or(&[]),
                user,
                self.skip_locations,
            );
        }
        if let Some(tl) = tail.as_ref().filter(|_| !self.skip_chains) {
            if let Some(hook) = self.unwind.as_mut() {
                // DWARF mode: the user part of the chain is unwound from the sampled registers
                // and stack, with the mappings of this moment, after the kernel part.
                if t & st::REGS_USER != 0 && t & st::STACK_USER != 0 {
                    let id = (pid, tid);
                    let mask = regs_mask;
                    let (regs, stack) = (tl.regs, tl.stack);
                    hook.append_user_frames(&self.st, &mut self.p, f0, id, mask, regs, stack, BE);
                }
            }
        }
        let callchain = range32(f0, self.p.frames.len())?;
        let branches = range32(b0, self.p.branches.len())?;
        // Side data (raw payload, registers, stack, read values) is rare: stored out of line.
        let lens = SideLens::of(&self.p);
        let has_side =
            !PLAIN && (read.is_some() || tail.as_ref().is_some_and(SampleTail::has_side));
        // A streamed plain sample's side ranges never change: the side arrays are emptied
        // after every streamed sample, so they stay the scratch sample's empty 0..0.
        let same_ranges = PLAIN && self.sink.is_some();
        debug_assert!(!same_ranges || lens.raw + lens.regs + lens.stacks + lens.read == 0);
        let has_read = read.is_some();
        let ranges = if has_side {
            Some(self.store_side::<BE>(lens, tail.as_ref(), read)?)
        } else if same_ranges {
            None
        } else {
            Some(lens.empty()?)
        };

        if !has_read {
            if let Some(e) = self.p.events.get_mut(r.attr as usize) {
                e.samples += 1;
                e.period = e.period.saturating_add(period);
            }
        }
        if t & st::TIME != 0 {
            // Samples come (mostly) in time order: usually one compare and one store.
            let range = self.p.meta.time_range.get_or_insert((time, time));
            if time > range.1 {
                range.1 = time;
            } else if time < range.0 {
                range.0 = time;
            }
        }
        // Filled in place: fields this attr never records keep their empty value.
        let sample = self.scratch.get_mut(r.attr as usize)?;
        sample.event = r.attr;
        sample.time = time;
        sample.pid = pid;
        sample.tid = tid;
        sample.cpu = cpu;
        sample.period = period;
        sample.ip = ip;
        sample.cpumode = cpumode;
        sample.exact_ip = misc & MISC_EXACT_IP_OR_MMAP_BUILD_ID != 0;
        sample.comm = comm;
        sample.location = location;
        sample.callchain = callchain;
        sample.branches = branches;
        if let Some(ranges) = ranges {
            sample.raw = ranges.raw;
            sample.read = ranges.read;
            sample.user_regs = ranges.regs;
            sample.user_stack = ranges.stack;
        }
        if t & st::OPTIONAL != 0 {
            sample.addr = field(sl.addr);
            sample.stream_id = field(sl.stream_id);
            sample.id = field(sl.id).or(field(sl.identifier));
            let tl = tail.unwrap_or_default();
            sample.branch_count = tl.branch_count;
            sample.branch_hw_index = tl.hw_index;
            sample.weight = tl.weight;
            sample.data_src = tl.data_src;
            sample.phys_addr = tl.phys_addr;
            sample.weight_struct = tl.weight_struct;
            sample.transaction = tl.transaction;
            sample.data_page_size = tl.data_page_size;
            sample.code_page_size = tl.code_page_size;
        } else if let Some(tl) = &tail {
            sample.branch_count = tl.branch_count;
            sample.branch_hw_index = tl.hw_index;
        }
        if has_read {
            self.deliver_members(r.attr, (f0, b0), has_side.then_some(lens));
            return Some(());
        }
        match self.sink.as_mut() {
            Some(sink) => {
                // Streaming: the sample and its side data live only for the call.
                sink(&self.p, sample);
                self.p.frames.truncate(f0);
                self.p.branches.truncate(b0);
                if has_side {
                    lens.truncate(&mut self.p);
                }
            }
            None => self.p.samples.push(sample.clone()),
        }
        Some(())
    }

    /// PERF_SAMPLE_READ (perf's `deliver_sample_value`): fills `read_members` with the
    /// samples the values of a sample of `attr` become: one per value whose id names an event,
    /// with the period the counter moved since the last value of that id (per thread too for
    /// inherited counters, which the kernel reads per thread), and none for a counter that
    /// did not move. Updates the last values. A single value without an id is the sample's
    /// own event's.
    #[cold]
    #[inline(never)]
    fn read_members(&mut self, attr: u16, tid: i32, vals: &[ReadValue]) {
        self.read_members.clear();
        let Some(a) = self.attrs.get(usize::from(attr)) else {
            return;
        };
        // perf_evsel__attr_has_per_thread_sample_period (perf >= 6.12).
        let per_thread = a.flags & flag::INHERIT != 0 && a.sample_type & st::TID != 0;
        let single = a.read_format & rf::GROUP == 0;
        for v in vals {
            let (member, key) = match v.id {
                Some(id) => match self.id_to_attr.get(&id) {
                    Some(&m) => (m, id),
                    None => {
                        self.warn(format!(
                            "PERF_SAMPLE_READ value of unknown id {id}; dropped as perf does"
                        ));
                        continue;
                    }
                },
                None if single => (attr, u64::MAX),
                None => {
                    self.warn(
                        "PERF_SAMPLE_READ group value without an id (no PERF_FORMAT_ID); dropped"
                            .into(),
                    );
                    continue;
                }
            };
            let last = if per_thread {
                self.read_last_per_thread.insert((key, tid), v.value)
            } else {
                self.read_last.insert(key, v.value)
            };
            let period = v.value.wrapping_sub(last.unwrap_or(0));
            if period != 0 {
                self.read_members.push((member, period, v.id));
            }
        }
    }

    /// Hands out the samples a READ sample became ([`Reader::read_members`]): the decoded
    /// sample (in `scratch[attr]`) once per member, under the member's event with its period
    /// and id. They share the call chain, branch entries and side data (the raw read values
    /// among them); `f0`/`b0` are where its frames and branch entries start (freed once
    /// streamed).
    #[cold]
    #[inline(never)]
    fn deliver_members(&mut self, attr: u16, (f0, b0): (usize, usize), side: Option<SideLens>) {
        let members = std::mem::take(&mut self.read_members);
        let Some(sample) = self.scratch.get_mut(usize::from(attr)) else {
            self.read_members = members;
            return;
        };
        let own_id = sample.id;
        for &(event, period, id) in &members {
            if let Some(e) = self.p.events.get_mut(usize::from(event)) {
                e.samples += 1;
                e.period = e.period.saturating_add(period);
            }
            sample.event = event;
            sample.period = period;
            sample.id = id.or(own_id);
            match self.sink.as_mut() {
                Some(sink) => sink(&self.p, sample),
                None => self.p.samples.push(sample.clone()),
            }
        }
        sample.event = attr;
        sample.id = own_id;
        if self.sink.is_some() {
            // Streaming: the sample and its side data live only for the calls.
            self.p.frames.truncate(f0);
            self.p.branches.truncate(b0);
            if let Some(lens) = side {
                lens.truncate(&mut self.p);
            }
        }
        self.read_members = members;
    }

    /// Copies a sample's side data into the profile; returns its ranges there.
    #[cold]
    #[inline(never)]
    fn store_side<const BE: bool>(
        &mut self,
        lens: SideLens,
        tail: Option<&SampleTail<'_>>,
        read: Option<Vec<ReadValue>>,
    ) -> Option<SideRanges> {
        if let Some(tl) = tail {
            self.p.raw.extend_from_slice(tl.raw);
            self.p
                .regs
                .extend(tl.regs.chunks_exact(8).map(|w| le_or_be::<BE>(w, 0)));
            self.p.stacks.extend_from_slice(tl.stack);
        }
        if let Some(vals) = read {
            self.p.read_values.extend(vals);
        }
        Some(SideRanges {
            raw: range32(lens.raw, self.p.raw.len())?,
            regs: range32(lens.regs, self.p.regs.len())?,
            stack: lens.stacks as u64..self.p.stacks.len() as u64,
            read: range32(lens.read, self.p.read_values.len())?,
        })
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
        (self.progress)(self.data.len() as u64, self.data.len() as u64);
        (self.p, outcome)
    }
}

/// The incremental side of the reader, used by [`crate::StreamDecoder`]: the input arrives in
/// chunks, queued records are copied out of them, and samples are collected in
/// `Profile::samples` for the caller to hand out and clear.
impl Reader<'static, 'static> {
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

/// Largest tracing data read (a stream buffers it whole): perf's is a few MiB at most (the
/// event formats, with kallsyms in old versions).
const MAX_TRACING_DATA: usize = 256 << 20;

/// Whether the rest of a pipe-mode input is text perf record printed (`[ perf record: Woken
/// up 1 times to write data ]`...): what a `perf record -o - ... > F 2>&1` leaves at the end.
fn is_perf_message(rest: &[u8]) -> bool {
    rest.starts_with(b"[ perf record:")
        && rest
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// The whole record (header included) starting at `off`, if it fits.
#[inline(always)]
fn record_at(buf: &[u8], off: usize, be: bool) -> Option<&[u8]> {
    let (_, _, size) = record_header(buf.get(off..)?, be)?;
    buf.get(off..off.checked_add(usize::from(size))?)
}

/// A record header's (type, misc, size), from the first 8 bytes of `b`.
#[inline(always)]
fn record_header(b: &[u8], be: bool) -> Option<(u32, u16, u16)> {
    let h: [u8; 8] = b.get(..8)?.try_into().ok()?;
    let w = u64::from_le_bytes(h);
    let (ty, misc, size) = (w as u32, (w >> 32) as u16, (w >> 48) as u16);
    Some(if be {
        (ty.swap_bytes(), misc.swap_bytes(), size.swap_bytes())
    } else {
        (ty, misc, size)
    })
}

/// Resolves a sample's call chain (`chain`: the record's u64 entries) onto `frames`
/// (`unresolved`: every frame's location is that of an address in no mapping).
#[inline(always)]
fn push_chain<const BE: bool>(
    st: &State,
    frames: &mut Vec<Frame>,
    chain: &[u8],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
    sampled: (CpuMode, u64, crate::model::Location),
) {
    // The sample's mode, IP and its location (the chain's first entry is usually the IP).
    let (cpumode, ip, location) = sampled;
    let f0 = frames.len();
    let mut mode = cpumode;
    for w in chain.chunks_exact(8) {
        let a = le_or_be::<BE>(w, 0);
        if a >= PERF_CONTEXT_MAX {
            mode = match a as i64 {
                -32 => CpuMode::Hypervisor,
                -128 => CpuMode::Kernel,
                -512 => CpuMode::User,
                _ => {
                    // Like perf: any other marker (guest contexts, -1 padding) makes the
                    // whole chain invalid, so it is dropped (reports must agree).
                    frames.truncate(f0);
                    break;
                }
            };
            continue;
        }
        // The chain's first entry is usually the sampled IP itself: resolved already.
        let loc = if a == ip && mode == cpumode {
            location
        } else if unresolved {
            crate::model::Location::unmapped(a)
        } else {
            st.resolve(user, mode, a)
        };
        frames.push(Frame {
            addr: a,
            cpumode: mode,
            location: loc,
        });
    }
}

/// Decodes a sample's branch-stack entries (`entries`: 24 bytes each) onto `branches`,
/// each end resolved as perf's thread__find_cpumode_addr_location does: in the process's
/// maps, else in the kernel's (`unresolved`: nowhere).
fn push_branches<const BE: bool>(
    st: &State,
    branches: &mut Vec<BranchEntry>,
    entries: &[u8],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
) {
    let find = |addr: u64| -> (crate::model::Location, CpuMode) {
        let nowhere = crate::model::Location::unmapped(addr);
        if unresolved {
            return (nowhere, CpuMode::Unknown);
        }
        for mode in [CpuMode::User, CpuMode::Kernel] {
            let loc = st.resolve(user, mode, addr);
            if loc.dso.is_some() {
                return (loc, mode);
            }
        }
        (nowhere, CpuMode::Unknown)
    };
    branches.reserve(entries.len() / 24);
    for e in entries.chunks_exact(24) {
        let (from, to) = (le_or_be::<BE>(e, 0), le_or_be::<BE>(e, 8));
        let (from_location, from_cpumode) = find(from);
        let (to_location, to_cpumode) = find(to);
        branches.push(BranchEntry {
            from,
            to,
            flags: BranchEntry::flags_from_file(le_or_be::<BE>(e, 16), BE),
            from_location,
            from_cpumode,
            to_location,
            to_cpumode,
        });
    }
}

/// Index (in entries) of the `PERF_CONTEXT_USER` marker of a call chain, if it has one.
fn user_context_start<const BE: bool>(chain: &[u8]) -> Option<usize> {
    chain
        .chunks_exact(8)
        .position(|w| le_or_be::<BE>(w, 0) == PERF_CONTEXT_USER)
        .map(|i| i * 8)
}

/// The user part of an LBR call chain (perf's lbr_callchain_add_lbr_ip, callee order): the
/// target of the most recent call (the current function), then the call sites of the
/// call stack's entries, innermost first, all resolved in user mode.
fn push_lbr_user_chain(
    st: &State,
    frames: &mut Vec<Frame>,
    stack: &[BranchEntry],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
) {
    let Some(first) = stack.first() else {
        return;
    };
    let addrs = std::iter::once(first.to).chain(stack.iter().map(|e| e.from));
    for addr in addrs {
        let location = if unresolved {
            crate::model::Location::unmapped(addr)
        } else {
            st.resolve(user, CpuMode::User, addr)
        };
        frames.push(Frame {
            addr,
            cpumode: CpuMode::User,
            location,
        });
    }
}

/// The fields of a SAMPLE record after its call chain (RAW .. AUX): rare outside precise
/// and DWARF recordings.
#[derive(Debug, Default, Clone, Copy)]
struct SampleTail<'b> {
    raw: &'b [u8],
    branch_count: u32,
    /// The branch entries' bytes (24 per entry).
    branches: &'b [u8],
    /// PERF_SAMPLE_BRANCH_HW_INDEX, when the attr records it.
    hw_index: Option<u64>,
    regs: &'b [u8],
    stack: &'b [u8],
    weight: Option<u64>,
    weight_struct: Option<u64>,
    data_src: Option<u64>,
    transaction: Option<u64>,
    phys_addr: Option<u64>,
    data_page_size: Option<u64>,
    code_page_size: Option<u64>,
}

impl SampleTail<'_> {
    fn has_side(&self) -> bool {
        !self.raw.is_empty() || !self.regs.is_empty() || !self.stack.is_empty()
    }
}

/// Decodes the fields after the call chain, from `pos` of the sample body.
#[inline(never)]
fn sample_tail<'b, const BE: bool>(a: &Attr, body: &'b [u8], pos: usize) -> Option<SampleTail<'b>> {
    let t = a.sample_type;
    let has = |b: u64| t & b != 0;
    let mut c = FastCur::<BE>::new(body, pos);
    let mut tl = SampleTail::default();
    if has(st::RAW) {
        let n = c.u32()? as usize;
        tl.raw = c.bytes(n)?;
    }
    if has(st::BRANCH_STACK) {
        let nr = c.u64()?;
        if a.branch_sample_type & BRANCH_HW_INDEX != 0 {
            tl.hw_index = Some(c.u64()?);
        }
        let nr_us = usize::try_from(nr).ok()?;
        tl.branches = c.bytes(nr_us.checked_mul(24)?)?;
        if a.branch_sample_type & BRANCH_COUNTERS != 0 {
            c.skip(nr_us.checked_mul(8)?)?;
        }
        tl.branch_count = u32::try_from(nr).unwrap_or(u32::MAX);
    }
    if has(st::REGS_USER) {
        let abi = c.u64()?;
        if abi != 0 {
            tl.regs = c.bytes(a.sample_regs_user.count_ones() as usize * 8)?;
        }
    }
    if has(st::STACK_USER) {
        let size = usize::try_from(c.u64()?).ok()?;
        let data = c.bytes(size)?;
        tl.stack = if size != 0 {
            let dyn_size = usize::try_from(c.u64()?).unwrap_or(usize::MAX);
            data.get(..dyn_size.min(size)).unwrap_or(data)
        } else {
            data
        };
    }
    if t & st::AFTER_STACK != 0 {
        // The rarer trailing fields (precise samples): in record order.
        if has(st::WEIGHT_STRUCT) {
            let w = c.u64()?;
            (tl.weight, tl.weight_struct) = (Some(w & 0xffff_ffff), Some(w));
        } else if has(st::WEIGHT) {
            tl.weight = Some(c.u64()?);
        }
        if has(st::DATA_SRC) {
            tl.data_src = Some(c.u64()?);
        }
        if has(st::TRANSACTION) {
            tl.transaction = Some(c.u64()?);
        }
        if has(st::REGS_INTR) {
            let abi = c.u64()?;
            if abi != 0 {
                c.skip(a.sample_regs_intr.count_ones() as usize * 8)?;
            }
        }
        if has(st::PHYS_ADDR) {
            tl.phys_addr = Some(c.u64()?);
        }
        if has(st::CGROUP) {
            c.u64()?;
        }
        if has(st::DATA_PAGE_SIZE) {
            tl.data_page_size = Some(c.u64()?);
        }
        if has(st::CODE_PAGE_SIZE) {
            tl.code_page_size = Some(c.u64()?);
        }
        if has(st::AUX) {
            let n = usize::try_from(c.u64()?).ok()?;
            c.skip(n)?;
        }
    }
    Some(tl)
}

/// Where a sample's side data sits in the profile's arrays.
struct SideRanges {
    raw: std::ops::Range<u32>,
    regs: std::ops::Range<u32>,
    stack: std::ops::Range<u64>,
    read: std::ops::Range<u32>,
}

/// The lengths of the profile's side-data arrays before a sample (its empty ranges, and
/// where streaming truncates them back to).
#[derive(Clone, Copy)]
struct SideLens {
    raw: usize,
    regs: usize,
    stacks: usize,
    read: usize,
}

impl SideLens {
    #[inline(always)]
    fn of(p: &Profile) -> SideLens {
        SideLens {
            raw: p.raw.len(),
            regs: p.regs.len(),
            stacks: p.stacks.len(),
            read: p.read_values.len(),
        }
    }

    #[inline(always)]
    fn empty(&self) -> Option<SideRanges> {
        // One test for the three 32-bit ranges.
        if self.raw | self.regs | self.read > u32::MAX as usize {
            return None;
        }
        let (raw, regs, read) = (self.raw as u32, self.regs as u32, self.read as u32);
        Some(SideRanges {
            raw: raw..raw,
            regs: regs..regs,
            stack: self.stacks as u64..self.stacks as u64,
            read: read..read,
        })
    }

    fn truncate(&self, p: &mut Profile) {
        p.raw.truncate(self.raw);
        p.regs.truncate(self.regs);
        p.stacks.truncate(self.stacks);
        p.read_values.truncate(self.read);
    }
}

fn range32(a: usize, b: usize) -> Option<std::ops::Range<u32>> {
    Some(u32::try_from(a).ok()?..u32::try_from(b).ok()?)
}

/// PERF_SAMPLE_READ: one value (or a group) as laid out by read_format.
fn read_values(c: &mut Cur, f: u64) -> Option<Vec<ReadValue>> {
    let opt = |c: &mut Cur, bit: u64| -> Option<Option<u64>> {
        if f & bit != 0 {
            Some(Some(c.u64()?))
        } else {
            Some(None)
        }
    };
    if f & rf::GROUP != 0 {
        let nr = usize::try_from(c.u64()?).ok()?;
        let enabled = opt(c, rf::TOTAL_TIME_ENABLED)?;
        let running = opt(c, rf::TOTAL_TIME_RUNNING)?;
        // Each entry is at least 8 bytes: a lying count fails before allocating much.
        if nr > c.remaining() / 8 {
            return None;
        }
        let mut v = Vec::with_capacity(nr);
        for _ in 0..nr {
            let value = c.u64()?;
            let id = opt(c, rf::ID)?;
            let lost = opt(c, rf::LOST)?;
            v.push(ReadValue {
                value,
                id,
                lost,
                time_enabled: enabled,
                time_running: running,
            });
        }
        Some(v)
    } else {
        let value = c.u64()?;
        let time_enabled = opt(c, rf::TOTAL_TIME_ENABLED)?;
        let time_running = opt(c, rf::TOTAL_TIME_RUNNING)?;
        let id = opt(c, rf::ID)?;
        let lost = opt(c, rf::LOST)?;
        Some(vec![ReadValue {
            value,
            id,
            lost,
            time_enabled,
            time_running,
        }])
    }
}

/// Reads a whole perf.data image (file or pipe mode).
pub(crate) fn read<'p>(
    data: &[u8],
    progress: &'p mut dyn FnMut(u64, u64),
    release: &'p mut dyn FnMut(usize),
    sink: Option<SampleSink<'p>>,
    unwinder: Option<&'p mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
) -> Result<Profile, DecodeError> {
    let whole = Share { index: 0, count: 1 };
    read_share(
        data,
        progress,
        release,
        sink,
        unwinder,
        skips,
        (whole, Jumping::No),
    )
    .map(|(p, _)| p)
}

/// What a reader leaves out of samples (see [`crate::Reader`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Skips {
    /// [`crate::Reader::skip_callchains`].
    pub chains: bool,
    /// [`crate::Reader::skip_locations`].
    pub locations: bool,
}

/// Part `index` of `count` of a parallel read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Share {
    pub index: usize,
    pub count: usize,
}

/// What a part of a parallel read did (see [`PartBounds`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ShareOutcome {
    /// The part reached its share (if not, it delivered nothing and its profile is not used).
    pub started: bool,
    /// The skip it made before its share (see [`JumpPlan`]).
    pub jumped: Option<Jumped>,
    /// Warnings past the cap it did not keep.
    pub suppressed_warnings: u64,
    /// The header's warnings at the end of its profile's (after the records').
    pub header_warnings: usize,
    /// One of several parts: its profile has no "more warnings" line (see [`merge_shares`]).
    pub shared: bool,
}

/// [`read`] of one share of the records (`Share { index: 0, count: 1 }`: all of them).
pub(crate) fn read_share<'p>(
    data: &[u8],
    progress: &'p mut dyn FnMut(u64, u64),
    release: &'p mut dyn FnMut(usize),
    sink: Option<SampleSink<'p>>,
    unwinder: Option<&'p mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
    (share, jumping): (Share, Jumping<'p>),
) -> Result<(Profile, ShareOutcome), DecodeError> {
    let be = header::byte_order(data)?;
    let hsize = u64_at(data, 8, be).ok_or(DecodeError::TooShort(data.len() as u64))?;
    let mut r = Reader::new(data, be, progress, release, sink);
    r.unwind = unwinder.map(crate::unwind::Hook::new);
    r.skip_chains = skips.chains;
    r.skip_locations = skips.locations;
    let stopped;
    if hsize == 16 {
        // Pipe mode: a 16-byte header, then records (attrs and features among them). Not
        // split: the first part reads it all.
        if share.index > 0 {
            let outcome = ShareOutcome::default();
            return Ok((Profile::default(), outcome));
        }
        r.p.meta.pipe_mode = true;
        stopped = r.frame(16, data.len(), true);
        if r.attrs.is_empty() {
            return Err(DecodeError::Header {
                offset: stopped.as_ref().map_or(16, |s| s.offset),
                what: "pipe-mode stream without any HEADER_ATTR record".into(),
            });
        }
    } else {
        let h = header::parse_file_header(data, be)?;
        let attrs = header::parse_file_attrs(data, &h)?;
        r.set_attrs(attrs);
        // With a zero data size perf never finished: no feature table was written.
        let (sections, table_complete) = if h.data.size == 0 {
            (Vec::new(), true)
        } else {
            header::file_feature_sections(data, &h)
        };
        let table_at = h.data.offset.saturating_add(h.data.size);
        let mut feature_stop = (!table_complete).then(|| ReadStop {
            offset: table_at,
            record_type: None,
            reason: "file truncated in the feature section table".into(),
            records_read: 0,
        });
        for (id, sec) in sections {
            match sec.slice(data) {
                Some(b) => header::parse_feature(&mut r.features, id, b, be),
                None => {
                    r.features.warnings.push(format!(
                        "feature section {id} ({} bytes at offset {}) lies outside the file",
                        sec.size, sec.offset
                    ));
                    feature_stop.get_or_insert(ReadStop {
                        offset: sec.offset.min(data.len() as u64),
                        record_type: None,
                        reason: format!("file truncated in feature section {id}"),
                        records_read: 0,
                    });
                }
            }
        }
        r.build_events();
        let start = usize::try_from(h.data.offset).unwrap_or(usize::MAX);
        let declared_end = h.data.offset.saturating_add(h.data.size);
        if start > data.len() {
            return Err(DecodeError::Header {
                offset: 40,
                what: format!(
                    "data section starts at offset {start}, beyond the end of the {}-byte file",
                    data.len()
                ),
            });
        }

        let end = if h.data.size == 0 {
            data.len()
        } else {
            usize::try_from(declared_end)
                .unwrap_or(usize::MAX)
                .min(data.len())
        };
        let mut at_end = None;
        if share.count > 1 {
            let at = |i: usize| start + (end.saturating_sub(start) / share.count).saturating_mul(i);
            r.part = PartBounds {
                from: (share.index > 0).then(|| at(share.index)),
                to: (share.index + 1 < share.count).then(|| at(share.index + 1)),
                lite: share.index > 0,
                started: share.index == 0,
                ended: false,
                shared: true,
            };
            // A jump's earliest start: a sixteenth of the way to the second share.
            let after = start + at(1).saturating_sub(start) / 16;
            match jumping {
                Jumping::Jump { planned, split } if share.index == 1 => {
                    // Too little left to be worth replaying the start and planning a jump
                    // (an eighth of the data): the first part reads on alone.
                    let min_left = end.saturating_sub(start) / 8;
                    let Some(from) = split.decide(start, end, min_left) else {
                        return Ok(r.finish(None));
                    };
                    r.part.from = Some(from);
                    r.jump_plan = r.plan_jump(start, end, after, from);
                    planned.store(r.jump_plan.is_some(), std::sync::atomic::Ordering::Release);
                }
                Jumping::Log { at_end: f, split } if share.index == 0 => {
                    r.part.to = None;
                    r.split = Some((split, start, end));
                    r.log = Some(RoundLog {
                        from: after,
                        ..RoundLog::default()
                    });
                    at_end = Some(f);
                }
                _ => {}
            }
        }
        let mut data_stop = r.frame(start, end, false);
        if let Some((split, ..)) = r.split.take() {
            // Read to the end (or stopped) before any split: a late second part has nothing.
            split.close();
        }
        if r.part.ended {
            if let (Some(f), Some(log)) = (at_end, r.log.take()) {
                if f(&log) {
                    // The next part's jump was refuted: read its share too.
                    r.part.ended = false;
                    r.part.to = None;
                    data_stop = r.frame(r.resume_at, end, false);
                }
            }
        }
        if r.part.ended || !r.part.started {
            // The share ended at a round (what follows is the next part's), or never began
            // (this part's profile is dropped).
            r.queue.clear();
            r.head = 0;
            r.sorted = 0;
            return Ok(r.finish(data_stop));
        }
        let data_stop = data_stop
            .or_else(|| {
                // perf writes the data size when it finishes; 0 means it was killed: whatever
                // records are there were read, but the file is incomplete.
                (h.data.size == 0).then(|| ReadStop {
                    offset: data.len() as u64,
                    record_type: None,
                    reason: "the header's data size is 0: perf record did not finish (killed?); \
                         records were read up to the end of the file"
                        .into(),
                    records_read: r.p.meta.records,
                })
            })
            .or_else(|| {
                (h.data.size != 0 && declared_end > data.len() as u64).then(|| ReadStop {
                    offset: data.len() as u64,
                    record_type: None,
                    reason: format!(
                        "file truncated: the data section should end at offset {declared_end}"
                    ),
                    records_read: r.p.meta.records,
                })
            });
        // Data complete but the header facts after it cut off: still a truncated file.
        let records = r.p.meta.records;
        stopped = data_stop.or(feature_stop.map(|s| ReadStop {
            records_read: records,
            ..s
        }));
    }
    if r.p.events.is_empty() {
        r.build_events();
    }
    Ok(r.finish(stopped))
}

/// The line that ends a profile's warnings when `n` more were not kept.
fn more_warnings(n: u64) -> String {
    format!("{n} more warnings not shown")
}

/// Combines the profiles of the parts of a parallel read into what a sequential read gives:
/// the state (DSOs, strings, meta, stop) of the last part that reached its share, which
/// replayed everything before it, with the counters every part delivered summed.
pub(crate) fn merge_shares(parts: Vec<(Profile, ShareOutcome)>) -> Profile {
    let mut used: Vec<(Profile, ShareOutcome)> =
        parts.into_iter().take_while(|(_, o)| o.started).collect();
    if let [(_, o)] = used.as_slice() {
        if !o.shared {
            // A read in one part: its profile is complete.
            return used.pop().map(|(p, _)| p).unwrap_or_default();
        }
    }
    // The records' warnings of every part in order, capped as one reader caps them; then
    // the header's (the last part's) and the count of those not kept.
    let mut warnings = Vec::new();
    let mut suppressed = 0u64;
    let mut header = Vec::new();
    let last = used.len().saturating_sub(1);
    let mut used = used.into_iter().enumerate().map(|(i, (mut p, o))| {
        let records = p.warnings.len().saturating_sub(o.header_warnings);
        let tail = p.warnings.split_off(records);
        if i == last {
            header = tail;
        }
        for w in p.warnings.drain(..) {
            if warnings.len() < MAX_WARNINGS {
                warnings.push(w);
            } else {
                suppressed += 1;
            }
        }
        suppressed += o.suppressed_warnings;
        p
    });
    let Some(first) = used.next() else {
        return Profile::default();
    };
    let mut merged = first;
    for p in used.by_ref() {
        let earlier = std::mem::replace(&mut merged, p);
        for (e, old) in merged.events.iter_mut().zip(&earlier.events) {
            e.samples += old.samples;
            e.period = e.period.saturating_add(old.period);
            e.lost = e.lost.saturating_add(old.lost);
        }
        merged.lost = merged.lost.saturating_add(earlier.lost);
        merged.lost_samples = merged.lost_samples.saturating_add(earlier.lost_samples);
        merged.lost_events = merged.lost_events.saturating_add(earlier.lost_events);
        merged.throttles = merged.throttles.saturating_add(earlier.throttles);
        merged.meta.time_range = match (earlier.meta.time_range, merged.meta.time_range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (a, b) => a.or(b),
        };
    }
    drop(used);
    warnings.append(&mut header);
    if suppressed > 0 {
        warnings.push(more_warnings(suppressed));
    }
    merged.warnings = warnings;
    merged
}

#[cfg(test)]
mod tests {
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
