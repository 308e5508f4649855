//! Hotspots: samples grouped by a list of keys, per event, with self and children
//! (inclusive) periods, computed the way `perf report` computes them.
//!
//! Grouping rules copied from perf so that percentages agree:
//! - `comm` groups by command name, `dso` by the DSO's short name (`[unknown]` when no
//!   mapping covers the address).
//! - `sym` groups by (DSO, symbol); addresses without a symbol are grouped by address: the
//!   file offset for the sampled IP, and, in call chains, the runtime address (perf keys
//!   unresolved call-chain entries by the raw address, so these are separate rows in
//!   `--children` output, as in perf).
//! - Percentages are of the event's total period over *all* its samples (perf's default
//!   `--percentage absolute`): filters hide rows, they do not change the base.
//! - Children: each sample adds its period once to every distinct row its call chain
//!   (the sampled IP first) passes through.

use std::collections::HashMap;
use std::hash::BuildHasher;

use culprit_decode::abi::mem;
use culprit_decode::model::{
    CpuMode, DsoId, DsoKind, EventId, Frame, Location, Profile, Sample, StrId,
};
use culprit_decode::pebs::text as mem_text;
use culprit_symbols::{Query, Resolved, Symbolizer};

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::{AnalysisError, SortKey};

mod children;

/// perf's default `--max-stack` (the kernel's `perf_event_max_stack`, 127): `perf report
/// --children` walks a chain from its outermost caller (caller order) and stops after this
/// many frames, so a longer chain (a corrupt or runaway one) loses its innermost frames.
pub const PERF_MAX_STACK: usize = 127;

/// The frames of a call chain (callee first) that `perf report --children` accumulates:
/// the outermost [`PERF_MAX_STACK`].
pub fn children_window<T>(chain: &[T]) -> &[T] {
    &chain[chain.len().saturating_sub(PERF_MAX_STACK)..]
}

/// Which samples count.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Keep only these process ids (empty: all).
    pub pids: Vec<i32>,
    /// Keep only these thread ids (empty: all).
    pub tids: Vec<i32>,
    /// Keep only these command names (empty: all).
    pub comms: Vec<String>,
    /// Keep only rows of these DSOs, by short name or path (empty: all).
    pub dsos: Vec<String>,
}

/// Call-graph display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraphMode {
    /// No call graphs.
    None,
    /// Paths from the outermost caller down to the row's function.
    Caller,
    /// Paths from the row's function out to its callers, nearest caller first.
    Callee,
}

/// What to compute.
#[derive(Debug, Clone)]
pub struct HotspotOptions {
    /// Grouping keys, in order.
    pub keys: Vec<SortKey>,
    /// Only these events (by name); empty: all events of the file.
    pub events: Vec<String>,
    /// Compute children (inclusive) periods from call chains and sort by them.
    pub children: bool,
    /// Which samples and rows count.
    pub filters: Filters,
    /// Hide rows whose percentage (children when `children`, else self) is below this for
    /// every event.
    pub percent_limit: f64,
    /// Keep at most this many rows.
    pub top: Option<usize>,
    /// Call graphs for the rows.
    pub call_graph: CallGraphMode,
    /// Hide call-graph nodes below this percentage of the event's total.
    pub call_graph_threshold: f64,
    /// Also compute de-skidded self values: each non-precise sample of a memory or branch
    /// event counted again at its estimated culprit instruction (see [`crate::skid`]).
    pub deskid: bool,
}

impl Default for HotspotOptions {
    fn default() -> Self {
        HotspotOptions {
            keys: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            events: Vec::new(),
            children: false,
            filters: Filters::default(),
            percent_limit: 0.0,
            top: None,
            call_graph: CallGraphMode::None,
            call_graph_threshold: 0.5,
            deskid: false,
        }
    }
}

/// Totals of one event of the report.
#[derive(Debug, Clone)]
pub struct EventTotals {
    /// Index in the profile's events.
    pub id: EventId,
    /// Event name.
    pub name: String,
    /// All samples of the event in the file.
    pub samples: u64,
    /// Sum of all their periods (the percentage base).
    pub period: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
}

/// perf's privilege tag of a `sym` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Level {
    None,
    Kernel,
    Hypervisor,
    User,
}

/// The value of one key in a row. Compact (24 bytes): the display text and the DSO name
/// are ids into the report's string table ([`Hotspots::text`], [`Hotspots::dso`]), because
/// a children report can have hundreds of thousands of rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyValue {
    /// Which key.
    pub key: SortKey,
    level: Level,
    has_number: bool,
    has_addr: bool,
    /// Display text id: the name, the number, or `[unknown]`.
    text: u32,
    /// DSO short name id (sym and ip), or `NONE`.
    dso: u32,
    /// The number (pid, tid, cpu) or the address (sym without a name, ip).
    value: u64,
}

impl KeyValue {
    /// Numeric value for pid, tid and cpu.
    pub fn number(&self) -> Option<i64> {
        self.has_number.then_some(self.value as i64)
    }
    /// perf's privilege tag for sym (`[k]`, `[.]`, `[H]`).
    pub fn tag(&self) -> Option<&'static str> {
        match self.level {
            Level::None => None,
            Level::Kernel => Some("[k]"),
            Level::Hypervisor => Some("[H]"),
            Level::User => Some("[.]"),
        }
    }
    /// For sym without a name: the address the row groups by. For ip: the SVMA (or the
    /// file offset when there is no ELF mapping for it).
    pub fn addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.value)
    }
}

/// One call-graph node.
#[derive(Debug, Clone, PartialEq)]
pub struct CallNode {
    /// Function name (or `[unknown]` with DSO+offset).
    pub name: String,
    /// Period through this path.
    pub period: u64,
    /// Samples through this path.
    pub samples: u64,
    /// Next frames, biggest first.
    pub children: Vec<CallNode>,
}

/// Per row and event, the values kept, in this order (`VALUES` without de-skid).
const V_SAMPLES: usize = 0;
const V_PERIOD: usize = 1;
const V_CH_SAMPLES: usize = 2;
const V_CH_PERIOD: usize = 3;
const V_DS_SAMPLES: usize = 4;
const V_DS_PERIOD: usize = 5;
const VALUES: usize = 4;
const VALUES_DESKID: usize = 6;

/// One sort key's values for all rows, columnar: the text id of every row, and the DSO,
/// number/address and tag only for the keys that have them (pid, tid, cpu, sym, ip).
#[derive(Debug, Clone)]
struct KeyColumn {
    key: SortKey,
    text: Vec<u32>,
    dso: Vec<u32>,
    value: Vec<u64>,
    /// Bits 0-1: [`Level`]; bit 2: has a number; bit 3: has an address.
    flags: Vec<u8>,
}

impl KeyColumn {
    fn new(key: SortKey) -> KeyColumn {
        KeyColumn {
            key,
            text: Vec::new(),
            dso: Vec::new(),
            value: Vec::new(),
            flags: Vec::new(),
        }
    }

    fn has_extra(&self) -> bool {
        !matches!(
            self.key,
            SortKey::Comm | SortKey::Dso | SortKey::Srcline | SortKey::Srcfile
        ) && !self.key.is_memory()
    }

    fn push(&mut self, v: &KeyValue) {
        self.text.push(v.text);
        if self.has_extra() {
            self.dso.push(v.dso);
            self.value.push(v.value);
            self.flags
                .push(v.level as u8 | u8::from(v.has_number) << 2 | u8::from(v.has_addr) << 3);
        }
    }

    fn get(&self, i: usize) -> KeyValue {
        let mut v = KeyValue {
            key: self.key,
            level: Level::None,
            has_number: false,
            has_addr: false,
            text: self.text.get(i).copied().unwrap_or(NONE),
            dso: NONE,
            value: 0,
        };
        if self.has_extra() {
            let f = self.flags.get(i).copied().unwrap_or(0);
            v.level = match f & 3 {
                1 => Level::Kernel,
                2 => Level::Hypervisor,
                3 => Level::User,
                _ => Level::None,
            };
            v.has_number = f & 4 != 0;
            v.has_addr = f & 8 != 0;
            v.dso = self.dso.get(i).copied().unwrap_or(NONE);
            v.value = self.value.get(i).copied().unwrap_or(0);
        }
        v
    }
}

/// The result of [`hotspots`]: the rows, stored compactly (keys by column with a string
/// table, values in one flat array) and read through [`Row`] views.
#[derive(Debug, Clone)]
pub struct Hotspots {
    /// The events reported (columns).
    pub events: Vec<EventTotals>,
    /// The grouping keys.
    pub keys: Vec<SortKey>,
    /// Whether children periods were computed from call chains.
    pub children: bool,
    /// Whether any sample had a call chain.
    pub has_callchains: bool,
    /// Whether de-skidded values were computed ([`HotspotOptions::deskid`]).
    pub deskid: bool,
    /// Rows dropped by `top` or `percent_limit`.
    pub hidden_rows: usize,
    /// Key texts and DSO names.
    strings: Vec<String>,
    /// One column per sort key.
    columns: Vec<KeyColumn>,
    /// `events.len() * nv` values per accumulated row (`V_*` order), shown or not.
    values: Vec<u64>,
    nv: usize,
    /// The accumulated row behind each shown row.
    order: Vec<u32>,
    /// Call graphs: (row, one tree per event), only for rows that have one.
    call_graphs: Vec<(u32, Vec<Option<CallNode>>)>,
}

impl Hotspots {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.order.len()
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
    /// Row `i` (0 is the hottest). Panics when `i >= len()`.
    pub fn row(&self, i: usize) -> Row<'_> {
        assert!(i < self.len(), "row {i} of {}", self.len());
        Row { h: self, i }
    }
    /// The rows, sorted by the first event's (children or self) period, biggest first.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = Row<'_>> + '_ {
        (0..self.len()).map(move |i| Row { h: self, i })
    }
    /// The display text of a key value: the name, the number, or `[unknown]`.
    pub fn text(&self, k: &KeyValue) -> &str {
        self.strings.get(k.text as usize).map_or("", String::as_str)
    }
    /// For sym and ip: the DSO short name.
    pub fn dso(&self, k: &KeyValue) -> Option<&str> {
        self.strings.get(k.dso as usize).map(String::as_str)
    }
}

/// One row of a [`Hotspots`] report (a view; copy it freely).
#[derive(Clone, Copy)]
pub struct Row<'a> {
    h: &'a Hotspots,
    i: usize,
}

impl<'a> Row<'a> {
    /// One value per sort key, in sort-key order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = KeyValue> + 'a {
        let i = self.i;
        self.h.columns.iter().map(move |c| c.get(i))
    }
    /// The value of sort key number `j`. Panics when `j` is not a key index.
    pub fn key(&self, j: usize) -> KeyValue {
        self.h.columns[j].get(self.i)
    }
    /// The display text of one of this row's keys.
    pub fn text(&self, k: &KeyValue) -> &'a str {
        self.h.text(k)
    }
    /// The DSO short name of one of this row's keys (sym and ip).
    pub fn dso(&self, k: &KeyValue) -> Option<&'a str> {
        self.h.dso(k)
    }
    fn value(&self, e: usize, v: usize) -> u64 {
        let ncol = self.h.events.len();
        let r = self.h.order.get(self.i).copied().unwrap_or(0) as usize;
        self.h
            .values
            .get((r * ncol + e) * self.h.nv + v)
            .copied()
            .unwrap_or(0)
    }
    /// Self samples of report event `e`.
    pub fn samples(&self, e: usize) -> u64 {
        self.value(e, V_SAMPLES)
    }
    /// Self period of event `e`.
    pub fn period(&self, e: usize) -> u64 {
        self.value(e, V_PERIOD)
    }
    /// Children (inclusive) period of event `e`; equals `period` without call chains.
    pub fn children_period(&self, e: usize) -> u64 {
        self.value(e, V_CH_PERIOD)
    }
    /// Samples of event `e` whose chain passes through the row.
    pub fn children_samples(&self, e: usize) -> u64 {
        self.value(e, V_CH_SAMPLES)
    }
    /// Self samples of event `e` after skid correction (0 without [`Hotspots::deskid`]).
    pub fn deskid_samples(&self, e: usize) -> u64 {
        if self.h.deskid {
            self.value(e, V_DS_SAMPLES)
        } else {
            0
        }
    }
    /// Self period of event `e` after skid correction (0 without [`Hotspots::deskid`]).
    pub fn deskid_period(&self, e: usize) -> u64 {
        if self.h.deskid {
            self.value(e, V_DS_PERIOD)
        } else {
            0
        }
    }
    /// Self percentage of event `e` (of the event's total period).
    pub fn percent(&self, e: usize) -> f64 {
        pct(self.period(e), self.total(e))
    }
    /// Children percentage of event `e`.
    pub fn children_percent(&self, e: usize) -> f64 {
        pct(self.children_period(e), self.total(e))
    }
    /// De-skidded self percentage of event `e`.
    pub fn deskid_percent(&self, e: usize) -> f64 {
        pct(self.deskid_period(e), self.total(e))
    }
    fn total(&self, e: usize) -> u64 {
        self.h.events.get(e).map_or(0, |t| t.period)
    }
    /// The call graph of event `e` (root is the row itself), when call graphs were asked
    /// for and the row has one.
    pub fn call_graph(&self, e: usize) -> Option<&'a CallNode> {
        let i = self
            .h
            .call_graphs
            .binary_search_by_key(&(self.i as u32), |g| g.0)
            .ok()?;
        self.h.call_graphs[i].1.get(e)?.as_ref()
    }
    /// Whether the row has a call graph for any event.
    pub fn has_call_graph(&self) -> bool {
        (0..self.h.events.len()).any(|e| self.call_graph(e).is_some())
    }
}

/// `part` as a percentage of `total` (0 when the total is 0).
pub fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// Samples folded by everything [`hotspots`] looks at: equal (event, pid, tid, cpu, comm,
/// cpumode, ip, location, call chain) samples become one entry with their count and summed
/// period, so memory grows with distinct places and chains, not with samples.
#[derive(Clone)]
struct Agg {
    event: EventId,
    cpumode: CpuMode,
    /// PERF_RECORD_MISC_EXACT_IP (de-skid never moves these).
    exact: bool,
    pid: i32,
    tid: i32,
    cpu: u32,
    comm: StrId,
    ip: u64,
    location: Location,
    /// Range into [`SampleAggregator::chain_frames`] (empty without chains).
    callchain: std::ops::Range<u32>,
    /// How many samples were folded here.
    samples: u64,
    /// Their summed period.
    period: u64,
    /// PERF_SAMPLE_DATA_SRC, kept only for memory sort keys (else 0).
    data_src: u64,
}

/// The sample fields a row's key texts read (comm, pid, tid, cpu, and the mode of the
/// sampled IP).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct SampleKeys {
    comm: StrId,
    pid: i32,
    tid: i32,
    cpu: u32,
    cpumode: CpuMode,
    /// PERF_SAMPLE_DATA_SRC (memory keys only, else 0).
    data_src: u64,
}

impl Agg {
    /// The entry of one sample `s` with call chain `callchain`.
    fn of_sample(s: &Sample, callchain: std::ops::Range<u32>) -> Agg {
        Agg {
            event: s.event,
            cpumode: s.cpumode,
            exact: s.exact_ip,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            comm: s.comm,
            ip: s.ip,
            location: s.location,
            callchain,
            samples: 1,
            period: s.period,
            data_src: 0,
        }
    }

    fn sample_keys(&self) -> SampleKeys {
        SampleKeys {
            comm: self.comm,
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            cpumode: self.cpumode,
            data_src: self.data_src,
        }
    }

    fn key(&self) -> AggKey {
        (
            self.event,
            self.cpumode,
            self.exact,
            self.pid,
            self.tid,
            self.cpu,
            self.comm,
            self.ip,
            self.location.dso,
            self.location.file_offset,
            self.callchain.start,
            (self.callchain.end, self.data_src),
        )
    }
}

/// (event, cpumode, exact, pid, tid, cpu, comm, ip, dso, file offset, chain start, chain end,
/// data_src).
type AggKey = (
    EventId,
    CpuMode,
    bool,
    i32,
    i32,
    u32,
    StrId,
    u64,
    Option<DsoId>,
    u64,
    u32,
    (u32, u64),
);

/// Folds samples as they are read (see [`culprit_decode::read_file_streaming`]) into the
/// compact form [`hotspots_aggregated`] reports from: identical samples are counted once,
/// call chains are interned, so memory scales with distinct addresses and chains.
#[derive(Default)]
pub struct SampleAggregator {
    with_chains: bool,
    has_callchains: bool,
    filters: Filters,
    aggs: Vec<Agg>,
    /// Hash of an entry's [`AggKey`] -> the entry (first one with that hash; a colliding,
    /// different key gets a new entry, which is only less compact, never wrong). Keeping
    /// the hash, not the key, matters when chains are mostly distinct (no frame pointers).
    index: FxHashMap<u64, u32>,
    /// Distinct call-chain frames.
    frames: Vec<Frame>,
    /// (addr, cpumode, dso, file offset, pid for per-process DSOs else -1) -> frame id.
    frame_ids: FxHashMap<(u64, CpuMode, Option<DsoId>, u64, i32), u32>,
    /// Interned call chains, back to back, as indices into `frames`.
    chain_frames: Vec<u32>,
    /// Chain hash -> its range in `chain_frames` (first chain with that hash; a colliding,
    /// different chain is stored again, which is only less compact, never wrong).
    chains: FxHashMap<u64, (u32, u32)>,
    /// Scratch: the frame ids of the chain being added.
    scratch: Vec<u32>,
    /// The sample fields the report reads ([`SampleAggregator::only_for`]); `None`: all.
    keep: Option<KeptFields>,
    /// The entry the last sample folded into (a hint: checked by key before use).
    last: u32,
    /// Flat reports (`keep` set): the entries' index by their packed key.
    flat: FlatIndex,
    /// Children reports without call graphs keep samples as places instead (see
    /// [`SampleAggregator::only_for`]).
    children: Option<children::ChildrenSamples>,
    /// perf's `--mem-mode` (a memory sort key): entries keep the sample's data_src and a
    /// sample weighs its PERF_SAMPLE_WEIGHT (1 when 0) instead of its period.
    mem_mode: bool,
}

/// The index of a flat report's entries (see [`SampleAggregator::only_for`]): their keys
/// packed into four words ([`FlatIndex::key`]) in an open-addressed table. Written by hand
/// because a flat report folds every sample through it: hashing the packed key once and
/// comparing four words costs a fraction of a general map's generic key and hasher.
/// While it is live, the entries' counts are here, next to their keys (one line a sample
/// touches instead of two): [`FlatIndex::sync`] copies them into the entries.
#[derive(Default)]
struct FlatIndex {
    /// The packed key and counts of each entry, in entry order.
    keys: Vec<FlatEntry>,
    /// Entry number + 1 per slot (0: empty); a power of two long, at most half full.
    slots: Vec<u32>,
}

/// An entry of a [`FlatIndex`]: its key and how many samples of what summed period it
/// folded so far.
#[derive(Clone, Copy)]
struct FlatEntry {
    key: [u64; 4],
    samples: u64,
    period: u64,
}

/// Whether two packed keys are equal (word by word: the array comparison loaded the key
/// just stored as wider vectors, which stalled on store forwarding).
#[inline(always)]
fn same_key(a: &[u64; 4], b: &[u64; 4]) -> bool {
    ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0
}

/// The fields of an entry a flat report's key holds (the others are cleared by
/// [`KeptFields::apply`]).
struct FlatFields {
    event: EventId,
    cpumode: CpuMode,
    cpu: u32,
    pid: i32,
    tid: i32,
    comm: StrId,
    location: Location,
}

impl FlatIndex {
    /// An entry's key (what [`Agg::key`] holds once [`KeptFields::apply`] cleared the IP,
    /// exactness and chain) in four words, one-to-one: the DSO's presence has its own bit.
    #[inline(always)]
    fn key(a: &Agg) -> [u64; 4] {
        FlatIndex::pack(FlatFields {
            event: a.event,
            cpumode: a.cpumode,
            cpu: a.cpu,
            pid: a.pid,
            tid: a.tid,
            comm: a.comm,
            location: a.location,
        })
    }

    /// The four words of a key: both ways of making one ([`FlatIndex::key`],
    /// [`KeptFields::flat_key`]) pack through here.
    #[inline(always)]
    fn pack(f: FlatFields) -> [u64; 4] {
        [
            u64::from(f.event)
                | (f.cpumode as u64) << 16
                | u64::from(f.location.dso.is_some()) << 24
                | u64::from(f.cpu) << 32,
            u64::from(f.pid as u32) | u64::from(f.tid as u32) << 32,
            u64::from(f.comm) | u64::from(f.location.dso.unwrap_or(0)) << 32,
            f.location.file_offset,
        ]
    }

    /// The entry with key `k`, or `None`.
    #[inline(always)]
    fn find(&self, k: &[u64; 4]) -> Result<u32, usize> {
        let mask = self.slots.len().wrapping_sub(1);
        let mut i = (FxBuildHasher.hash_one(k) as usize) & mask;
        loop {
            match self.slots.get(i) {
                Some(&0) | None => return Err(i),
                Some(&e) => {
                    if self
                        .keys
                        .get(e as usize - 1)
                        .is_some_and(|o| same_key(&o.key, k))
                    {
                        return Ok(e - 1);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Indexes `aggs` afresh (after [`SampleAggregator::finish`] freed the index).
    #[cold]
    fn reindex(&mut self, aggs: &[Agg]) {
        self.keys = aggs
            .iter()
            .map(|a| FlatEntry {
                key: FlatIndex::key(a),
                samples: a.samples,
                period: a.period,
            })
            .collect();
        self.rehash();
    }

    /// Whether the index holds the counts of `aggs` (see [`FlatIndex::sync`]).
    fn live(&self, aggs: &[Agg]) -> bool {
        !self.keys.is_empty() && self.keys.len() == aggs.len()
    }

    /// Copies the counts into `aggs` (the entries it indexes).
    fn sync(&self, aggs: &mut [Agg]) {
        if self.live(aggs) {
            for (a, e) in aggs.iter_mut().zip(&self.keys) {
                a.samples = e.samples;
                a.period = e.period;
            }
        }
    }

    /// Records entry `e` (the next one) with key `k` and its first counts, whose free slot
    /// `find` returned.
    #[inline]
    fn insert(&mut self, k: [u64; 4], samples: u64, period: u64, slot: usize) {
        self.keys.push(FlatEntry {
            key: k,
            samples,
            period,
        });
        let e = self.keys.len() as u32;
        let roomy = self.keys.len() * 2 <= self.slots.len();
        match self.slots.get_mut(slot) {
            Some(s) if roomy => *s = e,
            _ => self.rehash(),
        }
    }

    /// Doubles the table (at least 1024 slots) and indexes every key again.
    #[cold]
    fn rehash(&mut self) {
        let len = (self.keys.len() * 4).next_power_of_two().max(1024);
        self.slots = vec![0; len];
        let mask = len - 1;
        for (e, k) in self.keys.iter().enumerate() {
            let mut i = (FxBuildHasher.hash_one(k.key) as usize) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = e as u32 + 1;
        }
    }
}

/// The fields of a sample that a flat report reads: the others are folded away, so that
/// `--sort comm` folds a million samples into a handful of entries instead of one per
/// (pid, tid, cpu, address), which made the fold a cache miss per sample.
#[derive(Clone, Copy, Debug)]
struct KeptFields {
    comm: bool,
    pid: bool,
    tid: bool,
    cpu: bool,
    /// Location and cpumode (dso, sym, srcline, srcfile, ip keys and the dso filter).
    location: bool,
}

impl KeptFields {
    /// What the report of `keys` reads: their row keys, key texts and filters (see
    /// `build_key`, `keep_sample`, `dso_filter_ok` and `TextCache::key_value`).
    fn for_keys(keys: &[SortKey], filters: &Filters) -> KeptFields {
        let has = |k: SortKey| keys.contains(&k);
        let location = keys.iter().any(|k| {
            matches!(
                k,
                SortKey::Dso | SortKey::Sym | SortKey::Srcline | SortKey::Srcfile | SortKey::Ip
            )
        }) || !filters.dsos.is_empty();
        KeptFields {
            // pid and tid rows are titled `pid:comm` with the comm of their first sample.
            comm: has(SortKey::Comm)
                || has(SortKey::Pid)
                || has(SortKey::Tid)
                || !filters.comms.is_empty(),
            // Per-process (JIT) objects resolve per pid.
            pid: has(SortKey::Pid) || !filters.pids.is_empty() || location,
            tid: has(SortKey::Tid) || !filters.tids.is_empty(),
            cpu: has(SortKey::Cpu),
            location,
        }
    }

    /// [`FlatIndex::key`] of the entry `s` folds into (its [`apply`](Self::apply)ed
    /// fields), read straight from the sample: building the entry first and packing it
    /// stalled on reading back what was just stored.
    #[inline(always)]
    fn flat_key(&self, s: &Sample) -> [u64; 4] {
        let pick = |keep: bool, v| if keep { v } else { 0 };
        FlatIndex::pack(FlatFields {
            event: s.event,
            cpumode: if self.location {
                s.cpumode
            } else {
                CpuMode::Unknown
            },
            cpu: pick(self.cpu, s.cpu),
            pid: pick(self.pid, s.pid as u32) as i32,
            tid: pick(self.tid, s.tid as u32) as i32,
            comm: pick(self.comm, s.comm),
            location: if self.location {
                s.location
            } else {
                Location {
                    dso: None,
                    file_offset: 0,
                }
            },
        })
    }

    fn apply(&self, a: &mut Agg) {
        if !self.comm {
            a.comm = 0;
        }
        if !self.pid {
            a.pid = 0;
        }
        if !self.tid {
            a.tid = 0;
        }
        if !self.cpu {
            a.cpu = 0;
        }
        if !self.location {
            a.location = Location {
                dso: None,
                file_offset: 0,
            };
            a.cpumode = CpuMode::Unknown;
        }
        // Read only by call graphs and de-skid, which keep every field.
        a.ip = 0;
        a.exact = false;
    }
}

impl SampleAggregator {
    /// `with_chains`: keep call chains (needed for children and call graphs). `filters`:
    /// samples that the pid/tid/comm filters reject still count in the event totals (the
    /// percentage base) but their chains are not kept.
    pub fn new(with_chains: bool, filters: &Filters) -> Self {
        SampleAggregator {
            with_chains,
            filters: filters.clone(),
            ..SampleAggregator::default()
        }
    }

    /// Keeps only what a report of `opts` reads from each sample (its sort keys and
    /// filters), so that samples differing elsewhere fold into one entry: the report is the
    /// same, from far fewer entries. Only for flat reports (no chains kept, no de-skid);
    /// otherwise every field is kept. Reports that keep chains but draw no call graph
    /// (children reports) keep each sample's places instead of interned chains: a lookup
    /// per frame instead of per frame, chain and sample (see the `children` module). Call
    /// before adding samples. Reports with memory sort keys need it: it makes entries keep
    /// each sample's data_src and weigh samples by their weight (perf's memory mode).
    pub fn only_for(&mut self, opts: &HotspotOptions) {
        if opts.keys.iter().any(|k| k.is_memory()) {
            // Memory keys read data_src, which the packed flat keys and the places do not
            // hold: every field is kept.
            self.mem_mode = true;
            return;
        }
        if opts.deskid || opts.call_graph != CallGraphMode::None {
            return;
        }
        if self.with_chains {
            self.children = Some(children::ChildrenSamples::default());
        } else {
            self.keep = Some(KeptFields::for_keys(&opts.keys, &opts.filters));
        }
    }

    /// A new, empty aggregator with the same settings (chains kept or not, filters, kept
    /// fields): one per share of a parallel read, folded together with
    /// [`absorb`](Self::absorb).
    pub fn empty_like(&self) -> SampleAggregator {
        let mut a = SampleAggregator::new(self.with_chains, &self.filters);
        a.keep = self.keep;
        a.mem_mode = self.mem_mode;
        if self.children.is_some() {
            a.children = Some(children::ChildrenSamples::default());
        }
        a
    }

    /// Whether samples are kept as places (a children report without call graphs, see
    /// [`only_for`](Self::only_for)): then shares of a parallel read
    /// [`absorb`](Self::absorb) cheaply, by renumbering places instead of re-interning chains.
    pub fn keeps_places(&self) -> bool {
        self.children.is_some()
    }

    /// Whether any sample added had a call chain.
    pub fn has_callchains(&self) -> bool {
        self.has_callchains
    }

    /// Frees the lookup tables used while adding (call when all samples are in, before
    /// [`hotspots_aggregated`]); later [`add`](Self::add) calls still work but fold less.
    pub fn finish(&mut self) {
        if let Some(c) = &mut self.children {
            c.finish();
        }
        self.index = FxHashMap::default();
        self.flat.sync(&mut self.aggs);
        self.flat = FlatIndex::default();
        self.frame_ids = FxHashMap::default();
        self.chains = FxHashMap::default();
        self.scratch = Vec::new();
        self.aggs.shrink_to_fit();
        self.frames.shrink_to_fit();
        self.chain_frames.shrink_to_fit();
    }

    /// Distinct entries kept so far.
    pub fn distinct(&self) -> usize {
        self.children.as_ref().map_or(self.aggs.len(), |c| c.len())
    }

    /// Adds one sample; `profile` is the profile it belongs to (its call chain and strings
    /// are looked up there).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let chain = profile.callchain(s);
        if !chain.is_empty() {
            self.has_callchains = true;
        }
        if let Some(k) = self.keep {
            // Flat: no chains kept (the filters only decide that, so they are not evaluated
            // here: the rows apply them), one fold per sample.
            self.add_flat(k, s);
            return;
        }
        let f = &self.filters;
        let keep = (f.pids.is_empty() || f.pids.contains(&s.pid))
            && (f.tids.is_empty() || f.tids.contains(&s.tid))
            && (f.comms.is_empty() || f.comms.iter().any(|c| c == profile.str(s.comm)));
        if let Some(c) = &mut self.children {
            c.add(profile, s, if keep { chain } else { &[] }, keep);
            return;
        }
        let (start, end) = if self.with_chains && keep && !chain.is_empty() {
            self.intern_chain(profile, s.pid, chain)
        } else {
            (0, 0)
        };
        let mut e = Agg::of_sample(s, start..end);
        if self.mem_mode {
            // As perf's memory mode: the cost of a sample is its weight, 1 without one.
            e.data_src = s.data_src.unwrap_or(0);
            e.period = s.weight.filter(|&w| w != 0).unwrap_or(1);
        }
        self.fold(e);
    }

    /// Folds the entries of `later` in: an aggregator of samples that came after this one's
    /// (the next share of [`culprit_decode::read_file_parallel`]), whose profile's ids are
    /// valid in `profile`. The result is what one aggregator fed all the samples in that
    /// order holds: same entries in the same order, same frame and chain numbering, so the
    /// report (whose ties keep first-seen order) is the same.
    pub fn absorb(&mut self, mut later: SampleAggregator, profile: &Profile) {
        // Only its entries, frames and chains are read: free its lookup tables first.
        later.finish();
        self.has_callchains |= later.has_callchains;
        if let Some(c) = later.children.take() {
            self.children.get_or_insert_with(Default::default).absorb(c);
        }
        let mut chain: Vec<Frame> = Vec::new();
        for mut e in later.aggs {
            let (start, end) = if e.callchain.is_empty() {
                (0, 0)
            } else {
                chain.clear();
                let ids = later
                    .chain_frames
                    .get(e.callchain.start as usize..e.callchain.end as usize)
                    .unwrap_or(&[]);
                chain.extend(ids.iter().filter_map(|&i| later.frames.get(i as usize)));
                self.intern_chain(profile, e.pid, &chain)
            };
            e.callchain = start..end;
            self.fold(e);
        }
    }

    /// Adds `e`'s samples to the entry with its key, or appends it.
    #[inline]
    fn fold(&mut self, e: Agg) {
        if self.keep.is_some() {
            let (key, samples, period) = (FlatIndex::key(&e), e.samples, e.period);
            self.fold_flat(key, samples, period, || e);
            return;
        }
        let key = e.key();
        // Consecutive samples often fold into one entry (always, for `--sort comm`): check
        // the last one before hashing. (A different entry with the same key, made by a hash
        // collision, may take the samples: same key, same row, same report.)
        if let Some(a) = self.aggs.get_mut(self.last as usize) {
            if a.key() == key {
                a.samples += e.samples;
                a.period += e.period;
                return;
            }
        }
        let hash = {
            // Packed into six words, hashed as one 48-byte block (independent folded
            // multiplies: a multiply per word in a chain was a third of a flat report's fold).
            let w = [
                u64::from(e.event)
                    | (e.cpumode as u64) << 16
                    | u64::from(e.exact) << 24
                    | u64::from(e.cpu) << 32,
                u64::from(e.pid as u32) | u64::from(e.tid as u32) << 32,
                u64::from(e.comm) | u64::from(e.location.dso.unwrap_or(NONE)) << 32,
                e.ip ^ e.data_src.rotate_left(29),
                e.location.file_offset,
                u64::from(e.callchain.start) | u64::from(e.callchain.end) << 32,
            ];
            FxBuildHasher.hash_one(w)
        };
        let found = self
            .index
            .get(&hash)
            .copied()
            .filter(|&i| self.aggs.get(i as usize).is_some_and(|a| a.key() == key));
        match found {
            Some(i) => {
                let a = &mut self.aggs[i as usize];
                a.samples += e.samples;
                a.period += e.period;
                self.last = i;
            }
            None => {
                let next = self.aggs.len() as u32;
                self.index.entry(hash).or_insert(next);
                self.aggs.push(e);
                self.last = next;
            }
        }
    }

    /// [`add`](Self::add) for flat reports: `s` folds into the entry of its packed key.
    #[inline]
    fn add_flat(&mut self, keep: KeptFields, s: &Sample) {
        let key = keep.flat_key(s);
        self.fold_flat(key, 1, s.period, || {
            let mut a = Agg::of_sample(s, 0..0);
            keep.apply(&mut a);
            debug_assert!(FlatIndex::key(&a) == key);
            a
        });
    }

    /// [`fold`](Self::fold) for flat reports, through the packed-key index: `samples`
    /// samples of summed `period` join the entry of `key`, or the new entry `make` returns.
    #[inline(always)]
    fn fold_flat(&mut self, key: [u64; 4], samples: u64, period: u64, make: impl FnOnce() -> Agg) {
        let last = self.last as usize;
        if let Some(e) = self.flat.keys.get_mut(last) {
            if same_key(&e.key, &key) {
                e.samples += samples;
                e.period += period;
                return;
            }
        }
        if self.flat.keys.len() != self.aggs.len() {
            self.flat.reindex(&self.aggs);
        }
        match self.flat.find(&key) {
            Ok(i) => {
                if let Some(e) = self.flat.keys.get_mut(i as usize) {
                    e.samples += samples;
                    e.period += period;
                }
                self.last = i;
            }
            Err(slot) => {
                self.last = self.aggs.len() as u32;
                self.flat.insert(key, samples, period, slot);
                // Its counts stay in the index until `finish`.
                self.aggs.push(make());
            }
        }
    }

    fn intern_chain(&mut self, profile: &Profile, pid: i32, chain: &[Frame]) -> (u32, u32) {
        use std::hash::Hasher;
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        let mut h = rustc_hash::FxHasher::default();
        h.write_usize(chain.len());
        for fr in chain {
            let key = (
                fr.addr,
                fr.cpumode,
                fr.location.dso,
                fr.location.file_offset,
                // Per-process (JIT) objects resolve per pid, like the sampled IP.
                match fr.location.dso.and_then(|d| profile.dsos.get(d as usize)) {
                    Some(d) if d.kind == DsoKind::Anonymous => pid,
                    _ => -1,
                },
            );
            let next = self.frames.len() as u32;
            let id = *self.frame_ids.entry(key).or_insert(next);
            if id == next {
                self.frames.push(*fr);
            }
            h.write_u32(id);
            ids.push(id);
        }
        let hash = h.finish();
        if let Some(&(a, b)) = self.chains.get(&hash) {
            if self.chain_frames.get(a as usize..b as usize) == Some(&ids[..]) {
                self.scratch = ids;
                return (a, b);
            }
        }
        let a = self.chain_frames.len() as u32;
        self.chain_frames.extend_from_slice(&ids);
        self.scratch = ids;
        let b = self.chain_frames.len() as u32;
        self.chains.entry(hash).or_insert((a, b));
        (a, b)
    }
}

/// A resolved location, shared by every sample and frame at the same place (compact:
/// a children report resolves hundreds of thousands).
#[derive(Clone, Copy)]
struct Loc {
    /// Symbol table and index (`NONE`: no symbol).
    sym_table: u32,
    sym_index: u32,
    /// DSO (`NONE`: no mapping).
    dso: u32,
    srcline: u32,
    srcfile: u32,
    file_offset: u64,
    /// SVMA (`u64::MAX`: unknown).
    svma: u64,
}

impl Loc {
    fn new(q: &Query, r: &Resolved) -> Loc {
        let (sym_table, sym_index) = r.symbol.map_or((NONE, NONE), |s| (s.table, s.index));
        Loc {
            sym_table,
            sym_index,
            dso: q.dso.unwrap_or(NONE),
            srcline: NONE,
            srcfile: NONE,
            file_offset: q.file_offset,
            svma: r.svma.unwrap_or(u64::MAX),
        }
    }
    fn symbol(&self) -> Option<culprit_symbols::SymbolId> {
        (self.sym_table != NONE).then_some(culprit_symbols::SymbolId {
            table: self.sym_table,
            index: self.sym_index,
        })
    }
    fn svma(&self) -> Option<u64> {
        (self.svma != u64::MAX).then_some(self.svma)
    }
    fn dso(&self) -> Option<DsoId> {
        (self.dso != NONE).then_some(self.dso)
    }
}

const NONE: u32 = u32::MAX;

/// Interns strings to dense ids.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    strs: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strs.len() as u32;
        self.ids.insert(s.to_string(), i);
        self.strs.push(s.to_string());
        i
    }
}

/// The report's columns: the events asked for, or all events with samples (`counts`: any
/// number that is 0 exactly for events without samples). Returns their totals (to fill)
/// and each profile event's column (`NONE`: not shown).
/// Entries per profile event (`events`: the event of each entry), for [`event_columns`].
fn event_counts(profile: &Profile, events: impl Iterator<Item = EventId>) -> Vec<u64> {
    let mut counts = vec![0u64; profile.events.len()];
    for e in events {
        if let Some(c) = counts.get_mut(usize::from(e)) {
            *c += 1;
        }
    }
    counts
}

fn event_columns(
    profile: &Profile,
    counts: &[u64],
    wanted: &[String],
) -> Result<(Vec<EventTotals>, Vec<u32>), AnalysisError> {
    let mut col_of = vec![NONE; profile.events.len()];
    let mut totals = Vec::new();
    // Like perf, events without samples (e.g. the `dummy` tracking event of `-a`) get no
    // column unless asked for by name.
    let any = counts.iter().any(|&c| c > 0);
    for (i, e) in profile.events.iter().enumerate() {
        if !wanted.is_empty() && !wanted.contains(&e.name) {
            continue;
        }
        if wanted.is_empty() && any && counts.get(i).copied().unwrap_or(0) == 0 {
            continue;
        }
        col_of[i] = totals.len() as u32;
        totals.push(EventTotals {
            id: i as EventId,
            name: e.name.clone(),
            samples: 0,
            period: 0,
            lost: e.lost,
        });
    }
    if totals.is_empty() {
        let available = profile.events.iter().map(|e| e.name.clone()).collect();
        return Err(AnalysisError::UnknownEvent {
            wanted: wanted.join(","),
            available,
        });
    }
    Ok((totals, col_of))
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Computes hotspots. `progress(done, total)` is called now and then while resolving
/// locations and aggregating samples.
///
/// Works on an in-memory profile (its `samples`); [`hotspots_aggregated`] is the same over
/// samples aggregated while streaming.
pub fn hotspots(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &HotspotOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Hotspots, AnalysisError> {
    let mut agg = SampleAggregator::new(
        opts.children || opts.call_graph != CallGraphMode::None,
        &opts.filters,
    );
    agg.only_for(opts);
    for s in &profile.samples {
        agg.add(profile, s);
    }
    agg.finish();
    hotspots_aggregated(profile, &agg, symbolizer, opts, progress)
}

/// [`hotspots`] over samples already folded by a [`SampleAggregator`] (e.g. during
/// [`culprit_decode::read_file_streaming`]); `profile` gives the events, strings and DSOs.
/// The result is the same as [`hotspots`] on the full profile.
pub fn hotspots_aggregated(
    profile: &Profile,
    agg: &SampleAggregator,
    symbolizer: &mut Symbolizer,
    opts: &HotspotOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Hotspots, AnalysisError> {
    if let Some(c) = &agg.children {
        return children::report(c, profile, symbolizer, opts, agg.has_callchains, progress);
    }
    // Without `finish`, a flat index still holds the counts: read them from a copy.
    let synced;
    let aggs = if agg.flat.live(&agg.aggs) {
        let mut copy = agg.aggs.clone();
        agg.flat.sync(&mut copy);
        synced = copy;
        &synced[..]
    } else {
        &agg.aggs[..]
    };
    let frames = &agg.frames[..];
    let chain_of = |s: &Agg| -> &[u32] {
        agg.chain_frames
            .get(s.callchain.start as usize..s.callchain.end as usize)
            .unwrap_or(&[])
    };
    let counts = event_counts(profile, aggs.iter().map(|s| s.event));
    let (mut totals, col_of) = event_columns(profile, &counts, &opts.events)?;
    let ncol = totals.len();
    let keys = &opts.keys;
    let need_src = keys
        .iter()
        .any(|k| matches!(k, SortKey::Srcline | SortKey::Srcfile));
    let has_callchains = agg.has_callchains;
    let use_chains = (opts.children || opts.call_graph != CallGraphMode::None)
        && has_callchains
        && agg.with_chains;
    let total_work = aggs.len() as u64 * 2;

    let kw = KeyWords::new(profile);
    let dso_anon = &kw.dso_anon;

    // 1. Unique locations of sampled IPs (and chain frames when needed).
    let mut loc_ids: FxHashMap<Query, u32> = FxHashMap::default();
    let mut queries: Vec<Query> = Vec::new();
    let mut intern_loc = |q: Query| -> u32 {
        *loc_ids.entry(q).or_insert_with(|| {
            queries.push(q);
            (queries.len() - 1) as u32
        })
    };
    let query = |dso: Option<DsoId>, off: u64, pid: i32| Query {
        dso,
        file_offset: off,
        // The pid matters only for per-process (JIT) objects; leave it out elsewhere so
        // that locations dedup across processes.
        pid: match dso {
            Some(d) if dso_anon.get(d as usize).copied().unwrap_or(false) => pid,
            _ => -1,
        },
    };
    let mut sample_loc: Vec<u32> = Vec::with_capacity(aggs.len());
    let mut frame_loc: Vec<u32> = Vec::new();
    if use_chains {
        frame_loc = vec![NONE; frames.len()];
    }
    for (n, s) in aggs.iter().enumerate() {
        sample_loc.push(intern_loc(query(
            s.location.dso,
            s.location.file_offset,
            s.pid,
        )));
        if use_chains {
            for &fi in chain_of(s) {
                if let Some(f) = frames.get(fi as usize) {
                    frame_loc[fi as usize] =
                        intern_loc(query(f.location.dso, f.location.file_offset, s.pid));
                }
            }
        }
        if n % 65536 == 0 {
            progress(n as u64 / 2, total_work);
        }
    }
    // De-skid: the estimated culprit of every entry (itself when it does not move), one
    // disassembly per function.
    let mut deskid_loc: Vec<u32> = Vec::new();
    if opts.deskid {
        let items: Vec<(EventId, Location, bool)> = aggs
            .iter()
            .map(|s| (s.event, s.location, s.exact))
            .collect();
        let moved = crate::annotate::deskid_targets(profile, symbolizer, &items);
        drop(items);
        deskid_loc = aggs
            .iter()
            .zip(&moved)
            .enumerate()
            .map(|(n, (s, l))| {
                if *l == s.location {
                    sample_loc[n]
                } else {
                    intern_loc(query(l.dso, l.file_offset, s.pid))
                }
            })
            .collect();
    }
    // The interning map is done; free it before the locations exist (peak memory).
    drop(loc_ids);
    // Symbols (and SVMAs) are needed only by the sym and ip keys and by call graphs: the
    // other keys never load a symbol table (no kallsyms read for `--sort comm`/`srcline`).
    let need_symbols = keys.iter().any(|k| matches!(k, SortKey::Sym | SortKey::Ip))
        || (use_chains && opts.call_graph != CallGraphMode::None);
    let (locs, src_strs) = resolve_locations(
        profile,
        symbolizer,
        &queries,
        dso_anon,
        need_symbols,
        need_src,
    );
    // Only `locs` is needed from here on.
    drop(queries);

    // 2. Aggregate.
    let dso_key = |l: &Loc| kw.dso_key(l);
    let build_key = |buf: &mut Vec<u64>, s: &Agg, l: &Loc, raw_addr: Option<u64>| {
        buf.clear();
        let sk = s.sample_keys();
        for &k in keys {
            kw.push(buf, k, &sk, l, raw_addr);
        }
    };

    let nv = if opts.deskid { VALUES_DESKID } else { VALUES };
    let mut acc = Acc {
        nv: ncol * nv,
        index: RowIndex::new(keys.iter().map(|&k| key_words(k)).sum()),
        rep: Vec::new(),
        values: Vec::new(),
    };
    let at = |r: u32, col: usize, v: usize| (r as usize * ncol + col) * nv + v;
    let f = &opts.filters;
    let keep_sample = |s: &Agg| -> bool {
        (f.pids.is_empty() || f.pids.contains(&s.pid))
            && (f.tids.is_empty() || f.tids.contains(&s.tid))
            && (f.comms.is_empty() || f.comms.iter().any(|c| c == profile.str(s.comm)))
    };
    let mut buf: Vec<u64> = Vec::with_capacity(keys.len() * 3);
    let mut seen: Vec<u32> = Vec::with_capacity(128);
    for (n, s) in aggs.iter().enumerate() {
        if n % 65536 == 0 {
            progress(total_work / 2 + n as u64 / 2, total_work);
        }
        let Some(&col) = col_of.get(usize::from(s.event)) else {
            continue;
        };
        if col == NONE {
            continue;
        }
        let col = col as usize;
        totals[col].samples += s.samples;
        totals[col].period += s.period;
        if !keep_sample(s) {
            continue;
        }
        let l = &locs[sample_loc[n] as usize];
        build_key(&mut buf, s, l, None);
        let r = acc.row(&buf, (n as u32, NONE));
        acc.values[at(r, col, V_SAMPLES)] += s.samples;
        acc.values[at(r, col, V_PERIOD)] += s.period;
        acc.values[at(r, col, V_CH_SAMPLES)] += s.samples;
        acc.values[at(r, col, V_CH_PERIOD)] += s.period;
        if let Some(&d) = deskid_loc.get(n) {
            let r = if d == sample_loc[n] {
                r
            } else {
                build_key(&mut buf, s, &locs[d as usize], None);
                acc.row(&buf, (n as u32, DESKID))
            };
            acc.values[at(r, col, V_DS_SAMPLES)] += s.samples;
            acc.values[at(r, col, V_DS_PERIOD)] += s.period;
        }
        if use_chains && opts.children {
            seen.clear();
            seen.push(r);
            for &fi in children_window(chain_of(s)) {
                let Some(fr) = frames.get(fi as usize) else {
                    continue;
                };
                let l = &locs[frame_loc[fi as usize] as usize];
                build_key(&mut buf, s, l, Some(fr.addr));
                let r = acc.row(&buf, (n as u32, fi));
                if seen.contains(&r) {
                    continue;
                }
                seen.push(r);
                acc.values[at(r, col, V_CH_SAMPLES)] += s.samples;
                acc.values[at(r, col, V_CH_PERIOD)] += s.period;
            }
        }
    }
    progress(total_work, total_work);
    let Acc {
        index: row_index,
        rep,
        values: acc_values,
        ..
    } = acc;

    // The row index is needed again only for call graphs: free it before the rows exist
    // (peak memory with hundreds of thousands of rows).
    let row_index = if use_chains && opts.call_graph != CallGraphMode::None {
        row_index
    } else {
        drop(row_index);
        RowIndex::new(0)
    };
    let rows = RowValues {
        totals,
        values: acc_values,
        nv,
        nrows: rep.len(),
    };
    let rep_of = |r: u32| -> RowRep<'_> {
        let (si, fi) = rep[r as usize];
        let s = &aggs[si as usize];
        let (loc, frame) = if fi == NONE {
            (&locs[sample_loc[si as usize] as usize], None)
        } else if fi == DESKID {
            (&locs[deskid_loc[si as usize] as usize], None)
        } else {
            let fr = frames.get(fi as usize);
            (
                &locs[frame_loc[fi as usize] as usize],
                fr.map(|f| (f.addr, f.cpumode)),
            )
        };
        RowRep {
            sample: s.sample_keys(),
            loc,
            frame,
        }
    };
    let (mut out, order) = finish_rows(
        profile,
        symbolizer,
        opts,
        has_callchains,
        &src_strs,
        rows,
        &rep_of,
    );
    drop(rep);

    // 4. Call graphs for the shown rows.
    if use_chains && opts.call_graph != CallGraphMode::None && !order.is_empty() {
        let mut shown: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, &r) in order.iter().enumerate() {
            shown.insert(r, i);
        }
        let mut trees: Vec<Vec<TreeNode>> = vec![vec![TreeNode::default(); ncol]; order.len()];
        let frame_sym = |fi: u32, fr: &Frame| -> (u64, u64) {
            let l = &locs[frame_loc[fi as usize] as usize];
            match l.symbol() {
                Some(id) => (
                    1 | dso_key(l) << 1,
                    u64::from(id.table) << 32 | u64::from(id.index),
                ),
                None => (dso_key(l) << 1, fr.addr),
            }
        };
        for (n, s) in aggs.iter().enumerate() {
            let Some(&col) = col_of.get(usize::from(s.event)) else {
                continue;
            };
            if col == NONE || !keep_sample(s) {
                continue;
            }
            let chain: &[u32] = chain_of(s);
            let l = &locs[sample_loc[n] as usize];
            build_key(&mut buf, s, l, None);
            seen.clear();
            // Position in the chain where each shown row is first met (usize::MAX: sampled IP).
            let mut hits: Vec<(usize, usize)> = Vec::new();
            if let Some(r) = row_index.get(&buf) {
                seen.push(r);
                if let Some(&i) = shown.get(&r) {
                    hits.push((i, usize::MAX));
                }
            }
            if opts.children {
                let skipped = chain.len() - children_window(chain).len();
                for (p, &fi) in chain.iter().enumerate().skip(skipped) {
                    let Some(fr) = frames.get(fi as usize) else {
                        continue;
                    };
                    let l = &locs[frame_loc[fi as usize] as usize];
                    build_key(&mut buf, s, l, Some(fr.addr));
                    let Some(r) = row_index.get(&buf) else {
                        continue;
                    };
                    if seen.contains(&r) {
                        continue;
                    }
                    seen.push(r);
                    if let Some(&i) = shown.get(&r) {
                        hits.push((i, p));
                    }
                }
            }
            for (i, p) in hits {
                // Callers of the row: the frames after its position (skip the sampled IP's
                // own frame, which the kernel puts first).
                let ip_first = chain
                    .first()
                    .and_then(|&fi| frames.get(fi as usize))
                    .is_some_and(|fr| fr.addr == s.ip);
                let start = if p == usize::MAX {
                    usize::from(ip_first)
                } else {
                    p + 1
                };
                let mut path: Vec<(u64, u64, u32)> = chain[start.min(chain.len())..]
                    .iter()
                    .filter_map(|&fi| {
                        frames.get(fi as usize).map(|fr| {
                            let (a, b) = frame_sym(fi, fr);
                            (a, b, fi)
                        })
                    })
                    .collect();
                if opts.call_graph == CallGraphMode::Caller {
                    path.reverse();
                }
                trees[i][col as usize].add(&path, s.period, s.samples);
            }
        }
        for (i, row_trees) in trees.iter().enumerate() {
            if row_trees.iter().all(|t| t.samples == 0) {
                continue;
            }
            let row = out.row(i);
            let name = match row.keys().find(|k| k.key == SortKey::Sym) {
                Some(k) => row.text(&k).to_string(),
                None => row
                    .keys()
                    .map(|k| row.text(&k))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            let mut graphs: Vec<Option<CallNode>> = vec![None; ncol];
            for (c, t) in row_trees.iter().enumerate() {
                if t.samples == 0 {
                    continue;
                }
                let threshold =
                    (opts.call_graph_threshold / 100.0 * out.events[c].period as f64) as u64;
                graphs[c] = Some(t.to_node(name.clone(), threshold, &|fi| {
                    frame_name(profile, symbolizer, &locs[frame_loc[fi as usize] as usize])
                }));
            }
            out.call_graphs.push((i as u32, graphs));
        }
    }
    Ok(out)
}

/// Canonical key words: equal comm strings and equal DSO short names group together.
struct KeyWords {
    comm_id: Vec<u32>,
    dso_name: Vec<u32>,
    unknown_dso: u32,
    /// Per DSO: per-process (JIT) object, resolved per pid.
    dso_anon: Vec<bool>,
}

impl KeyWords {
    fn new(profile: &Profile) -> KeyWords {
        let mut names = Interner::default();
        let comm_id: Vec<u32> = profile.strings.iter().map(|s| names.id(s)).collect();
        let unknown_dso = names.id("[unknown]");
        let dso_name: Vec<u32> = profile
            .dsos
            .iter()
            .map(|d| names.id(&d.short_name))
            .collect();
        let dso_anon: Vec<bool> = profile
            .dsos
            .iter()
            .map(|d| d.kind == DsoKind::Anonymous)
            .collect();
        KeyWords {
            comm_id,
            dso_name,
            unknown_dso,
            dso_anon,
        }
    }

    fn dso_key(&self, l: &Loc) -> u64 {
        match l.dso() {
            Some(d) => u64::from(
                self.dso_name
                    .get(d as usize)
                    .copied()
                    .unwrap_or(self.unknown_dso),
            ),
            None => u64::from(self.unknown_dso),
        }
    }

    /// Pushes the words of key `k` (a fixed number, see `key_words`) of a row at `l` for a
    /// sample with keys `s`. `raw_addr` is the runtime address (unresolved call-chain
    /// frames are keyed by it, as perf does), `None` for the sampled IP itself.
    fn push(&self, buf: &mut Vec<u64>, k: SortKey, s: &SampleKeys, l: &Loc, raw_addr: Option<u64>) {
        match k {
            SortKey::Comm => buf.push(u64::from(
                self.comm_id.get(s.comm as usize).copied().unwrap_or(NONE),
            )),
            SortKey::Pid => buf.push(s.pid as u32 as u64),
            SortKey::Tid => buf.push(s.tid as u32 as u64),
            SortKey::Cpu => buf.push(u64::from(s.cpu)),
            SortKey::Dso => buf.push(self.dso_key(l)),
            SortKey::Sym => match l.symbol() {
                Some(id) => {
                    buf.push(1 | self.dso_key(l) << 1);
                    buf.push(u64::from(id.table) << 32 | u64::from(id.index));
                }
                None => {
                    buf.push(0);
                    buf.push(raw_addr.unwrap_or(l.file_offset));
                }
            },
            SortKey::Srcline => {
                buf.push(u64::from(l.srcline));
                if l.srcline == NONE {
                    buf.push(self.dso_key(l));
                    buf.push(l.file_offset);
                } else {
                    buf.extend([0, 0]);
                }
            }
            SortKey::Srcfile => {
                buf.push(u64::from(l.srcfile));
                buf.push(if l.srcfile == NONE {
                    self.dso_key(l)
                } else {
                    0
                });
            }
            SortKey::Ip => {
                buf.push(self.dso_key(l));
                buf.push(l.svma().unwrap_or(l.file_offset));
            }
            // perf compares one field of data_src per key (sort__lvl_cmp & co.): rows with
            // the same field are one row, titled by its first sample.
            SortKey::Mem => buf.push(mem_field(s.data_src, mem::LVL_SHIFT, 14)),
            SortKey::Snoop => buf.push(mem_field(s.data_src, mem::SNOOP_SHIFT, 5)),
            SortKey::Tlb => buf.push(mem_field(s.data_src, mem::TLB_SHIFT, 7)),
            SortKey::Locked => buf.push(mem_field(s.data_src, mem::LOCK_SHIFT, 2)),
            SortKey::Blocked => buf.push(mem_field(s.data_src, mem::BLK_SHIFT, 3)),
        }
    }
}

/// A bit field of a `perf_mem_data_src` value.
fn mem_field(data_src: u64, shift: u32, width: u32) -> u64 {
    (data_src >> shift) & ((1u64 << width) - 1)
}

/// Resolves `queries` (symbols only when `need_symbols`, source lines only when
/// `need_src`); returns their locations and the source texts their ids name.
fn resolve_locations(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    queries: &[Query],
    dso_anon: &[bool],
    need_symbols: bool,
    need_src: bool,
) -> (Vec<Loc>, Vec<String>) {
    // DSOs are opened (and warned about) in DSO order, as one sorted batch would.
    let dsos: std::collections::BTreeSet<DsoId> = if need_symbols {
        queries.iter().filter_map(|q| q.dso).collect()
    } else {
        Default::default()
    };
    for d in dsos {
        if !dso_anon.get(d as usize).copied().unwrap_or(true) {
            symbolizer.resolve(
                profile,
                Query {
                    dso: Some(d),
                    file_offset: 0,
                    pid: -1,
                },
            );
        }
    }
    let mut locs: Vec<Loc> = Vec::with_capacity(queries.len());
    // In chunks: the answers of one chunk at a time, not of all queries.
    for chunk in queries.chunks(1 << 16) {
        if !need_symbols {
            locs.extend(chunk.iter().map(|q| Loc::new(q, &Resolved::default())));
            continue;
        }
        let resolved = symbolizer.resolve_batch(profile, chunk);
        locs.extend(chunk.iter().zip(&resolved).map(|(q, r)| Loc::new(q, r)));
    }
    let mut src = Interner::default();
    if need_src {
        for (q, l) in queries.iter().zip(locs.iter_mut()) {
            // The line tables alone give the innermost position (the first frame of
            // `source`), without parsing every unit's functions.
            match symbolizer.source_line(profile, q.dso, q.file_offset) {
                Some(f) if f.file.is_some() => {
                    let file = basename(f.file.as_deref().unwrap_or(""));
                    l.srcline = src.id(&format!("{file}:{}", f.line.unwrap_or(0)));
                    l.srcfile = src.id(file);
                }
                _ => {}
            }
        }
    }
    (locs, src.strs)
}

/// What a row shows, taken from its representative: the first sample and place (sampled
/// IP, call-chain frame or de-skidded location) that made the row.
struct RowRep<'a> {
    sample: SampleKeys,
    loc: &'a Loc,
    /// The call-chain frame's runtime address and mode; `None` for the sampled IP.
    frame: Option<(u64, CpuMode)>,
}

/// Rows as accumulated, in first-seen order, before filtering, sorting and naming.
struct RowValues {
    /// Per event (column): all its samples and period.
    totals: Vec<EventTotals>,
    /// `[(row * totals.len() + column) * nv + V_*]`.
    values: Vec<u64>,
    nv: usize,
    nrows: usize,
}

/// Filters (DSO, empty rows, percent limit), sorts (sort value, ties in first-seen order),
/// cuts (`top`) and names the rows. Returns the report without call graphs and the
/// accumulated row behind each shown row.
#[allow(clippy::too_many_arguments)]
fn finish_rows<'l>(
    profile: &Profile,
    symbolizer: &Symbolizer,
    opts: &HotspotOptions,
    has_callchains: bool,
    src_strs: &[String],
    rows: RowValues,
    rep_of: &dyn Fn(u32) -> RowRep<'l>,
) -> (Hotspots, Vec<u32>) {
    let RowValues {
        totals,
        values: acc_values,
        nv,
        nrows,
    } = rows;
    let ncol = totals.len();
    let keys = &opts.keys;
    let f = &opts.filters;
    // Only called with a DSO filter (the others keep every row).
    let dso_filter_ok = |l: &Loc| -> bool {
        let Some(d) = l.dso().and_then(|d| profile.dsos.get(d as usize)) else {
            return f.dsos.iter().any(|x| x == "[unknown]");
        };
        f.dsos.iter().any(|x| *x == d.short_name || *x == d.path)
    };
    let (v_sort, v_sort_samples) = if opts.children {
        (V_CH_PERIOD, V_CH_SAMPLES)
    } else {
        (V_PERIOD, V_SAMPLES)
    };
    let val = |r: usize, c: usize, v: usize| acc_values[(r * ncol + c) * nv + v];
    let sort_period = |r: usize| -> (u64, u64) { (val(r, 0, v_sort), val(r, 0, V_PERIOD)) };
    let mut order: Vec<u32> = (0..nrows)
        .filter(|&r| {
            if !f.dsos.is_empty() && !dso_filter_ok(rep_of(r as u32).loc) {
                return false;
            }
            // Rows without self period appear only in children mode (as in perf); rows
            // that only get de-skidded samples appear too (with raw 0).
            (0..ncol).any(|c| {
                val(r, c, v_sort) > 0
                    || val(r, c, v_sort_samples) > 0
                    || (opts.deskid && val(r, c, V_DS_SAMPLES) > 0)
            })
        })
        .map(|r| r as u32)
        .collect();
    // Biggest first, ties in first-seen order: sorted on packed keys (not through the
    // values, a cache miss per comparison with hundreds of thousands of rows).
    let mut keyed: Vec<(std::cmp::Reverse<(u64, u64)>, u32)> = order
        .iter()
        .map(|&r| (std::cmp::Reverse(sort_period(r as usize)), r))
        .collect();
    keyed.sort_unstable();
    order.clear();
    order.extend(keyed.iter().map(|&(_, r)| r));
    drop(keyed);
    let shown_before = order.len();
    if opts.percent_limit > 0.0 {
        order.retain(|&r| {
            (0..ncol).any(|c| {
                let r = r as usize;
                pct(val(r, c, v_sort), totals[c].period) >= opts.percent_limit
                    || (opts.deskid
                        && pct(val(r, c, V_DS_PERIOD), totals[c].period) >= opts.percent_limit)
            })
        });
    }
    if let Some(top) = opts.top {
        order.truncate(top);
    }
    let hidden_rows = shown_before - order.len();

    let mut texts = TextCache::default();
    let mut columns: Vec<KeyColumn> = keys.iter().map(|&k| KeyColumn::new(k)).collect();
    for &r in &order {
        let rep = rep_of(r);
        for c in columns.iter_mut() {
            c.push(&texts.key_value(c.key, profile, symbolizer, src_strs, &rep));
        }
    }
    // With a cut (--top), keep the values of the shown rows only.
    let (values, order_out) = if order.len() * 2 < nrows {
        let mut v = Vec::with_capacity(order.len() * ncol * nv);
        for &r in &order {
            let r = r as usize;
            v.extend_from_slice(&acc_values[r * ncol * nv..(r + 1) * ncol * nv]);
        }
        drop(acc_values);
        (v, (0..order.len() as u32).collect())
    } else {
        (acc_values, order.clone())
    };
    let out = Hotspots {
        events: totals,
        keys: keys.clone(),
        children: opts.children && has_callchains,
        has_callchains,
        deskid: opts.deskid,
        hidden_rows,
        strings: texts.strings,
        columns,
        values,
        nv,
        order: order_out,
        call_graphs: Vec::new(),
    };
    (out, order)
}

/// A row representative that is an entry's de-skidded location (see `loc_of_rep`).
const DESKID: u32 = u32::MAX - 1;

/// Words of the row key per sort key (fixed, so keys are stored back to back).
fn key_words(k: SortKey) -> usize {
    match k {
        SortKey::Comm | SortKey::Pid | SortKey::Tid | SortKey::Cpu | SortKey::Dso => 1,
        SortKey::Mem | SortKey::Snoop | SortKey::Tlb | SortKey::Locked | SortKey::Blocked => 1,
        SortKey::Sym | SortKey::Srcfile | SortKey::Ip => 2,
        SortKey::Srcline => 3,
    }
}

/// Row keys -> row numbers, compact: the keys back to back in one array and a map from
/// the key's hash to the first row with that hash; keys whose hash is taken by another key
/// (rare) go to an exact map.
struct RowIndex {
    words: usize,
    keys: Vec<u64>,
    by_hash: FxHashMap<u64, u32>,
    collided: FxHashMap<Box<[u64]>, u32>,
}

impl RowIndex {
    fn new(words: usize) -> RowIndex {
        RowIndex {
            words,
            keys: Vec::new(),
            by_hash: FxHashMap::default(),
            collided: FxHashMap::default(),
        }
    }

    fn hash(key: &[u64]) -> u64 {
        FxBuildHasher.hash_one(key)
    }

    fn key(&self, r: u32) -> &[u64] {
        let a = r as usize * self.words;
        self.keys.get(a..a + self.words).unwrap_or(&[])
    }

    fn get(&self, key: &[u64]) -> Option<u32> {
        let &r = self.by_hash.get(&Self::hash(key))?;
        if self.key(r) == key {
            Some(r)
        } else {
            self.collided.get(key).copied()
        }
    }

    /// The row of `key`, or `next` (which the caller then creates) when it has none.
    fn get_or_insert(&mut self, key: &[u64], next: u32) -> u32 {
        let h = Self::hash(key);
        match self.by_hash.get(&h) {
            None => {
                self.by_hash.insert(h, next);
            }
            Some(&r) if self.key(r) == key => return r,
            Some(_) => {
                if let Some(&r) = self.collided.get(key) {
                    return r;
                }
                self.collided.insert(key.into(), next);
            }
        }
        self.keys.extend_from_slice(key);
        next
    }
}

/// Row accumulators, flat: `[(row * ncol + col) * nv + V_*]`.
struct Acc {
    /// Values per row (`ncol * nv`).
    nv: usize,
    index: RowIndex,
    /// Representative of each row: (entry index, frame index, NONE for the sampled IP or
    /// DESKID for its de-skidded location).
    rep: Vec<(u32, u32)>,
    values: Vec<u64>,
}

impl Acc {
    fn row(&mut self, key: &[u64], at: (u32, u32)) -> u32 {
        let next = self.rep.len() as u32;
        let r = self.index.get_or_insert(key, next);
        if r == next {
            self.rep.push(at);
            self.values.extend(std::iter::repeat_n(0, self.nv));
        }
        r
    }
}

/// A call-graph trie under construction.
#[derive(Default, Clone)]
struct TreeNode {
    samples: u64,
    period: u64,
    /// Representative frame index (for the name).
    frame: u32,
    children: FxHashMap<(u64, u64), TreeNode>,
}

impl TreeNode {
    fn add(&mut self, path: &[(u64, u64, u32)], period: u64, samples: u64) {
        self.samples += samples;
        self.period += period;
        let mut node = self;
        for &(a, b, fi) in path {
            node = node.children.entry((a, b)).or_insert_with(|| TreeNode {
                frame: fi,
                ..TreeNode::default()
            });
            node.samples += samples;
            node.period += period;
        }
    }

    fn to_node(&self, name: String, threshold: u64, name_of: &dyn Fn(u32) -> String) -> CallNode {
        let mut kids: Vec<&TreeNode> = self
            .children
            .values()
            .filter(|c| c.period >= threshold.max(1))
            .collect();
        kids.sort_by(|a, b| b.period.cmp(&a.period).then(a.frame.cmp(&b.frame)));
        CallNode {
            name,
            period: self.period,
            samples: self.samples,
            children: kids
                .into_iter()
                .map(|k| k.to_node(name_of(k.frame), threshold, name_of))
                .collect(),
        }
    }
}

fn dso_short(profile: &Profile, dso: Option<DsoId>) -> String {
    dso.and_then(|d| profile.dsos.get(d as usize))
        .map(|d| d.short_name.clone())
        .unwrap_or_else(|| "[unknown]".to_string())
}

fn frame_name(profile: &Profile, symbolizer: &Symbolizer, l: &Loc) -> String {
    match l.symbol().and_then(|id| symbolizer.symbol(id)) {
        Some(s) => s.name.to_string(),
        None => format!(
            "[unknown] {}+{:#x}",
            dso_short(profile, l.dso()),
            l.file_offset
        ),
    }
}

/// Key texts of the output rows, interned: each distinct text is stored once, and texts
/// that come from an id (comm, DSO, symbol, source line) are looked up by that id.
#[derive(Default)]
struct TextCache {
    strings: Vec<String>,
    /// Fx-hashed: a children report interns a text (often `[unknown]`) for each of
    /// hundreds of thousands of rows.
    ids: FxHashMap<String, u32>,
    comm: FxHashMap<StrId, u32>,
    dso: FxHashMap<Option<DsoId>, u32>,
    sym: FxHashMap<culprit_symbols::SymbolId, u32>,
    src: FxHashMap<(u32, bool), u32>,
}

impl TextCache {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.ids.insert(s.to_string(), i);
        self.strings.push(s.to_string());
        i
    }

    fn comm(&mut self, profile: &Profile, c: StrId) -> u32 {
        if let Some(&i) = self.comm.get(&c) {
            return i;
        }
        let i = self.intern(profile.str(c));
        self.comm.insert(c, i);
        i
    }

    fn dso(&mut self, profile: &Profile, d: Option<DsoId>) -> u32 {
        if let Some(&i) = self.dso.get(&d) {
            return i;
        }
        let i = self.intern(&dso_short(profile, d));
        self.dso.insert(d, i);
        i
    }

    fn key_value(
        &mut self,
        key: SortKey,
        profile: &Profile,
        symbolizer: &Symbolizer,
        src: &[String],
        rep: &RowRep<'_>,
    ) -> KeyValue {
        let (s, l, frame) = (&rep.sample, rep.loc, rep.frame);
        let mut v = KeyValue {
            key,
            level: Level::None,
            has_number: false,
            has_addr: false,
            text: NONE,
            dso: NONE,
            value: 0,
        };
        let number = |v: &mut KeyValue, n: i64| {
            v.has_number = true;
            v.value = n as u64;
        };
        match key {
            SortKey::Comm => v.text = self.comm(profile, s.comm),
            SortKey::Pid => {
                number(&mut v, i64::from(s.pid));
                v.text = self.intern(&format!("{}:{}", s.pid, profile.str(s.comm)));
            }
            SortKey::Tid => {
                number(&mut v, i64::from(s.tid));
                v.text = self.intern(&format!("{}:{}", s.tid, profile.str(s.comm)));
            }
            SortKey::Cpu => {
                number(&mut v, i64::from(s.cpu));
                v.text = self.intern(&s.cpu.to_string());
            }
            SortKey::Dso => v.text = self.dso(profile, l.dso()),
            SortKey::Sym => {
                let mode = frame.map_or(s.cpumode, |f| f.1);
                v.level = match mode {
                    CpuMode::Kernel | CpuMode::GuestKernel => Level::Kernel,
                    CpuMode::Hypervisor => Level::Hypervisor,
                    _ => Level::User,
                };
                v.dso = self.dso(profile, l.dso());
                let known = l
                    .symbol()
                    .and_then(|id| symbolizer.symbol(id).map(|sym| (id, sym)));
                match known {
                    Some((id, sym)) => {
                        v.text = match self.sym.get(&id) {
                            Some(&t) => t,
                            None => {
                                let t = self.intern(sym.name);
                                self.sym.insert(id, t);
                                t
                            }
                        };
                    }
                    None => {
                        v.text = self.intern("[unknown]");
                        v.has_addr = true;
                        v.value = frame.map_or(l.file_offset, |f| f.0);
                    }
                }
            }
            SortKey::Srcline | SortKey::Srcfile => {
                let line = key == SortKey::Srcline;
                let id = if line { l.srcline } else { l.srcfile };
                v.text = match src.get(id as usize) {
                    Some(t) => match self.src.get(&(id, line)) {
                        Some(&i) => i,
                        None => {
                            let i = self.intern(t);
                            self.src.insert((id, line), i);
                            i
                        }
                    },
                    None if line => self.intern(&format!(
                        "{}+{:#x}",
                        dso_short(profile, l.dso()),
                        l.file_offset
                    )),
                    None => self.intern("[unknown]"),
                };
            }
            SortKey::Ip => {
                v.dso = self.dso(profile, l.dso());
                let addr = l.svma().unwrap_or(l.file_offset);
                v.has_addr = true;
                v.value = addr;
                v.text = self.intern(&format!("{addr:#x}"));
            }
            SortKey::Mem => v.text = self.intern(&mem_text::lvl(s.data_src)),
            SortKey::Snoop => v.text = self.intern(&mem_text::snoop(s.data_src)),
            SortKey::Tlb => v.text = self.intern(&mem_text::tlb(s.data_src)),
            SortKey::Locked => v.text = self.intern(mem_text::locked(s.data_src)),
            SortKey::Blocked => v.text = self.intern(mem_text::blocked(s.data_src)),
        }
        v
    }
}

#[cfg(test)]
mod flat_index_tests {
    use super::*;

    #[test]
    fn test_flat_index_finds_each_key_among_near_equal_ones() {
        // Keys differing in one word only, enough to share probe runs and to rehash.
        let keys: Vec<[u64; 4]> = (0..5000u64)
            .map(|i| {
                let mut k = [7, 9, 11, 13];
                k[(i % 4) as usize] ^= i + 1;
                k
            })
            .collect();
        let mut index = FlatIndex::default();
        for (n, k) in keys.iter().enumerate() {
            match index.find(k) {
                Ok(e) => panic!("key {n} found as entry {e} before it was added"),
                Err(slot) => index.insert(*k, 1, n as u64, slot),
            }
        }
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(index.find(k), Ok(n as u32), "key {n}");
            // Its counts came along through the rehashes.
            assert_eq!(index.keys[n].period, n as u64, "key {n}");
        }
        assert_eq!(index.find(&[1, 2, 3, 4]).ok(), None);
    }
}
