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

use culprit_decode::model::{
    CpuMode, DsoId, DsoKind, EventId, Frame, Location, Profile, Sample, StrId,
};
use culprit_symbols::{Query, Resolved, Symbolizer};

use crate::fxhash::FxHashMap;
use crate::{AnalysisError, SortKey};

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

/// The value of one key in a row.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyValue {
    /// Which key.
    pub key: SortKey,
    /// Display text: the name, the number, or `[unknown]`.
    pub text: String,
    /// Numeric value for pid, tid and cpu.
    pub number: Option<i64>,
    /// perf's privilege tag for sym (`[k]`, `[.]`).
    pub tag: Option<&'static str>,
    /// For sym without a name: the address the row groups by. For ip: the SVMA (or the
    /// file offset when there is no ELF mapping for it).
    pub addr: Option<u64>,
    /// For sym and ip: the DSO short name.
    pub dso: Option<String>,
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

/// One row of the report.
#[derive(Debug, Clone)]
pub struct Row {
    /// One value per sort key.
    pub keys: Vec<KeyValue>,
    /// Per report event: self samples.
    pub samples: Vec<u64>,
    /// Per report event: self period.
    pub period: Vec<u64>,
    /// Per report event: children (inclusive) period; equals `period` without call chains.
    pub children_period: Vec<u64>,
    /// Per report event: samples whose chain passes through the row.
    pub children_samples: Vec<u64>,
    /// Per report event: the call graph (root is the row itself); empty unless call graphs
    /// were asked for.
    pub call_graph: Vec<Option<CallNode>>,
}

/// The result of [`hotspots`].
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
    /// Rows, sorted by the first event's (children or self) period, biggest first.
    pub rows: Vec<Row>,
    /// Rows dropped by `top` or `percent_limit`.
    pub hidden_rows: usize,
}

impl Row {
    /// Self percentage of `period[i]` relative to an event total.
    pub fn percent(&self, i: usize, totals: &[EventTotals]) -> f64 {
        pct(self.period[i], totals[i].period)
    }
    /// Children percentage.
    pub fn children_percent(&self, i: usize, totals: &[EventTotals]) -> f64 {
        pct(self.children_period[i], totals[i].period)
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
}

impl Agg {
    fn key(&self) -> AggKey {
        (
            self.event,
            self.cpumode,
            self.pid,
            self.tid,
            self.cpu,
            self.comm,
            self.ip,
            self.location.dso,
            self.location.file_offset,
            self.callchain.start,
            self.callchain.end,
        )
    }
}

/// (event, cpumode, pid, tid, cpu, comm, ip, dso, file offset, chain start, chain end).
type AggKey = (
    EventId,
    CpuMode,
    i32,
    i32,
    u32,
    StrId,
    u64,
    Option<DsoId>,
    u64,
    u32,
    u32,
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

    /// Whether any sample added had a call chain.
    pub fn has_callchains(&self) -> bool {
        self.has_callchains
    }

    /// Frees the lookup tables used while adding (call when all samples are in, before
    /// [`hotspots_aggregated`]); later [`add`](Self::add) calls still work but fold less.
    pub fn finish(&mut self) {
        self.index = FxHashMap::default();
        self.frame_ids = FxHashMap::default();
        self.chains = FxHashMap::default();
        self.scratch = Vec::new();
        self.aggs.shrink_to_fit();
        self.frames.shrink_to_fit();
        self.chain_frames.shrink_to_fit();
    }

    /// Distinct entries kept so far.
    pub fn distinct(&self) -> usize {
        self.aggs.len()
    }

    /// Adds one sample; `profile` is the profile it belongs to (its call chain and strings
    /// are looked up there).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let chain = profile.callchain(s);
        if !chain.is_empty() {
            self.has_callchains = true;
        }
        let f = &self.filters;
        let keep = (f.pids.is_empty() || f.pids.contains(&s.pid))
            && (f.tids.is_empty() || f.tids.contains(&s.tid))
            && (f.comms.is_empty() || f.comms.iter().any(|c| c == profile.str(s.comm)));
        let (start, end) = if self.with_chains && keep && !chain.is_empty() {
            self.intern_chain(profile, s.pid, chain)
        } else {
            (0, 0)
        };
        let key: AggKey = (
            s.event,
            s.cpumode,
            s.pid,
            s.tid,
            s.cpu,
            s.comm,
            s.ip,
            s.location.dso,
            s.location.file_offset,
            start,
            end,
        );
        let hash = {
            // Packed into six words: the derived tuple hash feeds small integers byte by
            // byte, which cost a quarter of the whole `--sort sym` run.
            use std::hash::Hasher;
            let mut h = crate::fxhash::FxHasher::default();
            h.write_u64(u64::from(s.event) | (s.cpumode as u64) << 16 | u64::from(s.cpu) << 32);
            h.write_u64(u64::from(s.pid as u32) | u64::from(s.tid as u32) << 32);
            h.write_u64(u64::from(s.comm) | u64::from(s.location.dso.unwrap_or(NONE)) << 32);
            h.write_u64(s.ip);
            h.write_u64(s.location.file_offset);
            h.write_u64(u64::from(start) | u64::from(end) << 32);
            h.finish()
        };
        let found = self
            .index
            .get(&hash)
            .copied()
            .filter(|&i| self.aggs.get(i as usize).is_some_and(|a| a.key() == key));
        match found {
            Some(i) => {
                let a = &mut self.aggs[i as usize];
                a.samples += 1;
                a.period += s.period;
            }
            None => {
                let next = self.aggs.len() as u32;
                self.index.entry(hash).or_insert(next);
                self.aggs.push(Agg {
                    event: s.event,
                    cpumode: s.cpumode,
                    pid: s.pid,
                    tid: s.tid,
                    cpu: s.cpu,
                    comm: s.comm,
                    ip: s.ip,
                    location: s.location,
                    callchain: start..end,
                    samples: 1,
                    period: s.period,
                });
            }
        }
    }

    fn intern_chain(&mut self, profile: &Profile, pid: i32, chain: &[Frame]) -> (u32, u32) {
        use std::hash::Hasher;
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        let mut h = crate::fxhash::FxHasher::default();
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

/// A resolved location, shared by every sample and frame at the same place.
#[derive(Clone, Copy)]
struct Loc {
    res: Resolved,
    dso: Option<DsoId>,
    file_offset: u64,
    srcline: u32,
    srcfile: u32,
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

/// Which event columns a sample belongs to.
fn event_columns(
    profile: &Profile,
    aggs: &[Agg],
    wanted: &[String],
) -> Result<(Vec<EventTotals>, Vec<u32>), AnalysisError> {
    let mut col_of = vec![NONE; profile.events.len()];
    let mut totals = Vec::new();
    // Like perf, events without samples (e.g. the `dummy` tracking event of `-a`) get no
    // column unless asked for by name.
    let mut counts = vec![0u64; profile.events.len()];
    for s in aggs {
        if let Some(c) = counts.get_mut(usize::from(s.event)) {
            *c += 1;
        }
    }
    let any = counts.iter().any(|&c| c > 0);
    for (i, e) in profile.events.iter().enumerate() {
        if !wanted.is_empty() && !wanted.contains(&e.name) {
            continue;
        }
        if wanted.is_empty() && any && counts[i] == 0 {
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
    let aggs = &agg.aggs[..];
    let frames = &agg.frames[..];
    let chain_of = |s: &Agg| -> &[u32] {
        agg.chain_frames
            .get(s.callchain.start as usize..s.callchain.end as usize)
            .unwrap_or(&[])
    };
    let (mut totals, col_of) = event_columns(profile, aggs, &opts.events)?;
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

    // Canonical ids: equal comm strings and equal DSO short names group together.
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
    let resolved = symbolizer.resolve_batch(profile, &queries);
    let mut src = Interner::default();
    let mut locs: Vec<Loc> = Vec::with_capacity(queries.len());
    for (q, r) in queries.iter().zip(&resolved) {
        let (mut srcline, mut srcfile) = (NONE, NONE);
        if need_src {
            let frames = symbolizer.source(profile, q.dso, q.file_offset, false);
            match frames.first() {
                Some(f) if f.file.is_some() => {
                    let file = basename(f.file.as_deref().unwrap_or(""));
                    srcline = src.id(&format!("{file}:{}", f.line.unwrap_or(0)));
                    srcfile = src.id(file);
                }
                _ => {}
            }
        }
        locs.push(Loc {
            res: *r,
            dso: q.dso,
            file_offset: q.file_offset,
            srcline,
            srcfile,
        });
    }

    // Only `locs` is needed from here on.
    drop(loc_ids);
    drop(queries);
    drop(resolved);

    // 2. Aggregate.
    let dso_key = |l: &Loc| -> u64 {
        match l.dso {
            Some(d) => u64::from(dso_name.get(d as usize).copied().unwrap_or(unknown_dso)),
            None => u64::from(unknown_dso),
        }
    };
    // Key components of a location; `raw_addr` is the runtime address (used for unresolved
    // chain frames, as perf does), `None` for the sampled IP itself.
    let build_key = |buf: &mut Vec<u64>, s: &Agg, l: &Loc, raw_addr: Option<u64>| {
        buf.clear();
        for k in keys {
            match k {
                SortKey::Comm => buf.push(u64::from(
                    comm_id.get(s.comm as usize).copied().unwrap_or(NONE),
                )),
                SortKey::Pid => buf.push(s.pid as u32 as u64),
                SortKey::Tid => buf.push(s.tid as u32 as u64),
                SortKey::Cpu => buf.push(u64::from(s.cpu)),
                SortKey::Dso => buf.push(dso_key(l)),
                SortKey::Sym => match l.res.symbol {
                    Some(id) => {
                        buf.push(1 | dso_key(l) << 1);
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
                        buf.push(dso_key(l));
                        buf.push(l.file_offset);
                    }
                }
                SortKey::Srcfile => {
                    buf.push(u64::from(l.srcfile));
                    if l.srcfile == NONE {
                        buf.push(dso_key(l));
                    }
                }
                SortKey::Ip => {
                    buf.push(dso_key(l));
                    buf.push(l.res.svma.unwrap_or(l.file_offset));
                }
            }
        }
    };

    let mut acc = Acc {
        ncol,
        ..Acc::default()
    };
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
        let r = acc.row(&buf, (n as u32, NONE)) as usize;
        acc.self_samples[r * ncol + col] += s.samples;
        acc.self_period[r * ncol + col] += s.period;
        acc.ch_samples[r * ncol + col] += s.samples;
        acc.ch_period[r * ncol + col] += s.period;
        if use_chains && opts.children {
            seen.clear();
            seen.push(r as u32);
            for &fi in chain_of(s) {
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
                let r = r as usize;
                acc.ch_samples[r * ncol + col] += s.samples;
                acc.ch_period[r * ncol + col] += s.period;
            }
        }
    }
    progress(total_work, total_work);
    let Acc {
        row_of,
        rep,
        self_samples,
        self_period,
        ch_samples,
        ch_period,
        ..
    } = acc;

    // 3. Rows: filter, sort, cut.
    let dso_filter_ok = |l: &Loc| -> bool {
        if f.dsos.is_empty() {
            return true;
        }
        let Some(d) = l.dso.and_then(|d| profile.dsos.get(d as usize)) else {
            return f.dsos.iter().any(|x| x == "[unknown]");
        };
        f.dsos.iter().any(|x| *x == d.short_name || *x == d.path)
    };
    let nrows = rep.len();
    let loc_of_rep = |(si, fi): (u32, u32)| -> (&Agg, &Loc, Option<&Frame>) {
        let s = &aggs[si as usize];
        if fi == NONE {
            (s, &locs[sample_loc[si as usize] as usize], None)
        } else {
            let fr = frames.get(fi as usize);
            (s, &locs[frame_loc[fi as usize] as usize], fr)
        }
    };
    let sort_period = |r: usize| -> (u64, u64) {
        let v = if opts.children {
            &ch_period
        } else {
            &self_period
        };
        (v[r * ncol], self_period[r * ncol])
    };
    let mut order: Vec<usize> = (0..nrows)
        .filter(|&r| {
            let (_, l, _) = loc_of_rep(rep[r]);
            if !dso_filter_ok(l) {
                return false;
            }
            // Rows without self period appear only in children mode (as in perf).
            let v = if opts.children {
                &ch_period
            } else {
                &self_period
            };
            let samples = if opts.children {
                &ch_samples
            } else {
                &self_samples
            };
            (0..ncol).any(|c| v[r * ncol + c] > 0 || samples[r * ncol + c] > 0)
        })
        .collect();
    order.sort_by(|&a, &b| sort_period(b).cmp(&sort_period(a)).then(a.cmp(&b)));
    let shown_before = order.len();
    if opts.percent_limit > 0.0 {
        order.retain(|&r| {
            (0..ncol).any(|c| {
                let v = if opts.children {
                    ch_period[r * ncol + c]
                } else {
                    self_period[r * ncol + c]
                };
                pct(v, totals[c].period) >= opts.percent_limit
            })
        });
    }
    if let Some(top) = opts.top {
        order.truncate(top);
    }
    let hidden_rows = shown_before - order.len();

    // The row index is needed again only for call graphs: free it before the rows exist
    // (peak memory with hundreds of thousands of rows).
    let row_of = if use_chains && opts.call_graph != CallGraphMode::None {
        row_of
    } else {
        FxHashMap::default()
    };
    let mut rows: Vec<Row> = order
        .iter()
        .map(|&r| {
            let (s, l, fr) = loc_of_rep(rep[r]);
            Row {
                keys: keys
                    .iter()
                    .map(|&k| key_value(k, profile, symbolizer, &src.strs, s, l, fr))
                    .collect(),
                samples: self_samples[r * ncol..(r + 1) * ncol].to_vec(),
                period: self_period[r * ncol..(r + 1) * ncol].to_vec(),
                children_period: ch_period[r * ncol..(r + 1) * ncol].to_vec(),
                children_samples: ch_samples[r * ncol..(r + 1) * ncol].to_vec(),
                // Allocated only for the rows that get graphs (memory with many rows).
                call_graph: Vec::new(),
            }
        })
        .collect();

    // 4. Call graphs for the shown rows.
    if use_chains && opts.call_graph != CallGraphMode::None && !rows.is_empty() {
        let mut shown: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, &r) in order.iter().enumerate() {
            shown.insert(r as u32, i);
        }
        let mut trees: Vec<Vec<TreeNode>> = vec![vec![TreeNode::default(); ncol]; rows.len()];
        let frame_sym = |fi: u32, fr: &Frame| -> (u64, u64) {
            let l = &locs[frame_loc[fi as usize] as usize];
            match l.res.symbol {
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
            if let Some(&r) = row_of.get(&buf[..]) {
                seen.push(r);
                if let Some(&i) = shown.get(&r) {
                    hits.push((i, usize::MAX));
                }
            }
            if opts.children {
                for (p, &fi) in chain.iter().enumerate() {
                    let Some(fr) = frames.get(fi as usize) else {
                        continue;
                    };
                    let l = &locs[frame_loc[fi as usize] as usize];
                    build_key(&mut buf, s, l, Some(fr.addr));
                    let Some(&r) = row_of.get(&buf[..]) else {
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
        for (i, row) in rows.iter_mut().enumerate() {
            for c in 0..ncol {
                let t = &trees[i][c];
                if t.samples == 0 {
                    continue;
                }
                let threshold =
                    (opts.call_graph_threshold / 100.0 * totals[c].period as f64) as u64;
                let name = row
                    .keys
                    .iter()
                    .find(|k| k.key == SortKey::Sym)
                    .map(|k| k.text.clone())
                    .unwrap_or_else(|| {
                        row.keys
                            .iter()
                            .map(|k| k.text.clone())
                            .collect::<Vec<_>>()
                            .join(" ")
                    });
                if row.call_graph.is_empty() {
                    row.call_graph = vec![None; ncol];
                }
                row.call_graph[c] = Some(t.to_node(name, threshold, &|fi| {
                    frame_name(profile, symbolizer, &locs[frame_loc[fi as usize] as usize])
                }));
            }
        }
    }
    Ok(Hotspots {
        events: totals,
        keys: keys.clone(),
        children: opts.children && has_callchains,
        has_callchains,
        rows,
        hidden_rows,
    })
}

/// Row accumulators, flat: `[row * ncol + col]`.
#[derive(Default)]
struct Acc {
    ncol: usize,
    row_of: FxHashMap<Box<[u64]>, u32>,
    /// Representative of each row: (sample index, frame index or NONE for the sampled IP).
    rep: Vec<(u32, u32)>,
    self_samples: Vec<u64>,
    self_period: Vec<u64>,
    ch_samples: Vec<u64>,
    ch_period: Vec<u64>,
}

impl Acc {
    fn row(&mut self, key: &[u64], at: (u32, u32)) -> u32 {
        if let Some(&r) = self.row_of.get(key) {
            return r;
        }
        let r = self.rep.len() as u32;
        self.row_of.insert(key.into(), r);
        self.rep.push(at);
        let n = self.ncol;
        for v in [
            &mut self.self_samples,
            &mut self.self_period,
            &mut self.ch_samples,
            &mut self.ch_period,
        ] {
            v.extend(std::iter::repeat_n(0, n));
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
    match l.res.symbol.and_then(|id| symbolizer.symbol(id)) {
        Some(s) => s.name.clone(),
        None => format!(
            "[unknown] {}+{:#x}",
            dso_short(profile, l.dso),
            l.file_offset
        ),
    }
}

fn key_value(
    key: SortKey,
    profile: &Profile,
    symbolizer: &Symbolizer,
    src: &[String],
    s: &Agg,
    l: &Loc,
    frame: Option<&Frame>,
) -> KeyValue {
    let mut v = KeyValue {
        key,
        text: String::new(),
        number: None,
        tag: None,
        addr: None,
        dso: None,
    };
    match key {
        SortKey::Comm => v.text = profile.str(s.comm).to_string(),
        SortKey::Pid => {
            v.number = Some(i64::from(s.pid));
            v.text = format!("{}:{}", s.pid, profile.str(s.comm));
        }
        SortKey::Tid => {
            v.number = Some(i64::from(s.tid));
            v.text = format!("{}:{}", s.tid, profile.str(s.comm));
        }
        SortKey::Cpu => {
            v.number = Some(i64::from(s.cpu));
            v.text = s.cpu.to_string();
        }
        SortKey::Dso => v.text = dso_short(profile, l.dso),
        SortKey::Sym => {
            let mode = frame.map(|f| f.cpumode).unwrap_or(s.cpumode);
            v.tag = Some(match mode {
                CpuMode::Kernel | CpuMode::GuestKernel => "[k]",
                CpuMode::Hypervisor => "[H]",
                _ => "[.]",
            });
            v.dso = Some(dso_short(profile, l.dso));
            match l.res.symbol.and_then(|id| symbolizer.symbol(id)) {
                Some(sym) => v.text = sym.name.clone(),
                None => {
                    v.text = "[unknown]".to_string();
                    v.addr = Some(frame.map(|f| f.addr).unwrap_or(l.file_offset));
                }
            }
        }
        SortKey::Srcline | SortKey::Srcfile => {
            let id = if key == SortKey::Srcline {
                l.srcline
            } else {
                l.srcfile
            };
            v.text = match src.get(id as usize) {
                Some(t) => t.clone(),
                None if key == SortKey::Srcline => {
                    format!("{}+{:#x}", dso_short(profile, l.dso), l.file_offset)
                }
                None => "[unknown]".to_string(),
            };
        }
        SortKey::Ip => {
            v.dso = Some(dso_short(profile, l.dso));
            let addr = l.res.svma.unwrap_or(l.file_offset);
            v.addr = Some(addr);
            v.text = format!("{addr:#x}");
        }
    }
    v
}
