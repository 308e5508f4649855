//! The page's timeline ([`Timeline`]): the recording's time cut into equal buckets, and per
//! bucket what each thread did (period and samples per event, off-CPU intervals), plus the
//! two breakdowns that let a time selection filter every view: each function's self period
//! per bucket (the hot functions table of a selection) and each call-tree node's self period
//! per bucket (the flame graph and trees of a selection).
//!
//! A selection is a run of whole buckets, `[start + i·width, start + j·width)`: the page
//! prints it as the `culprit report --time` window that gives the same numbers (inclusive
//! bounds, so the end is one nanosecond before the next bucket).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use culprit_analysis::stacks::{StackProfile, ThreadInfo, TimedSample};

use super::flame::LeafOf;
use super::model::PageEvent;

/// Buckets of the timeline (its tracks and totals).
pub const BUCKETS: u64 = 400;
/// The per-bucket breakdowns (cells) that filter the views by time are kept under this many
/// bytes of JSON: beyond, their buckets are made twice as wide (a selection then snaps to
/// them) until they fit. The page's size is bounded by this, not by the sample count.
pub const MAX_CELL_BYTES: usize = 3_000_000;
/// At most this many threads get a track of their own; the rest share one.
pub const MAX_TRACKS: usize = 100;
/// At most this many off-CPU intervals are listed per track (the longest).
pub const MAX_INTERVALS: usize = 2_000;
/// While reading, the samples are summed in fine buckets, at most this many per bucket of
/// the page: beyond, the fine buckets are made twice as wide. The page's buckets are whole
/// power-of-two runs of them (between [`BUCKETS`] / 2 and [`BUCKETS`] of them).
const FINE_PER_BUCKET: i64 = 4;
/// Per-stack sums kept while reading (the cells' source) at most this many: beyond, their
/// buckets are made twice as wide (down to one over the recording: then they are bounded by
/// the distinct stacks, as the stack model is).
const MAX_STACK_CELLS: usize = 1 << 22;
/// perf's name of the off-CPU event (`culprit record --off-cpu`).
pub const OFFCPU_EVENT: &str = "offcpu-time";

/// The timeline and its per-bucket breakdowns.
///
/// Periods are written in units of each event's [`Timeline::unit`] (the periods' greatest
/// common divisor: at a fixed period, one unit per sample) so the numbers stay short; when
/// every sample of an event has the same period ([`Timeline::fixed`]) its sample counts equal
/// its periods in units and are left out (empty lists). The page multiplies them back.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Time of the first bucket's start (ns, the samples' clock: `culprit script`'s).
    pub start: u64,
    /// Width of a bucket (ns).
    pub width: u64,
    /// Number of buckets.
    pub buckets: usize,
    /// Buckets of the timeline per bucket of the cells ([`Timeline::functions`],
    /// [`Timeline::nodes`]): a selection covers whole cell buckets.
    pub cell_factor: usize,
    /// Per event: the unit of its periods (ns or events).
    pub unit: Vec<u64>,
    /// Per event: every sample has the same period (its samples are left out).
    pub fixed: Vec<bool>,
    /// Per event: summed period per bucket (the percentage base of a selection).
    pub period: Vec<Vec<u64>>,
    /// Per event: samples per bucket (empty when `fixed`).
    pub samples: Vec<Vec<u64>>,
    /// One track per thread, grouped by process (in order of pid, then tid).
    pub threads: Vec<Track>,
    /// Per event: each function's self period and samples per cell bucket.
    pub functions: Vec<Cells>,
    /// Per event: each call-tree node's self period per cell bucket (no samples).
    pub nodes: Vec<Cells>,
    /// Page column of the off-CPU event, when the file has one.
    pub offcpu: Option<usize>,
    /// Names of the thread states of [`Timeline::states`].
    pub state_names: Vec<&'static str>,
    /// Per track (in the order of [`Timeline::threads`]): its states, from the file's
    /// `sched_switch` events; empty when it has none.
    pub states: Vec<super::states::ThreadStates>,
}

/// One thread's track (or, with `tid` -1, every thread beyond [`MAX_TRACKS`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Track {
    /// Process id.
    pub pid: i32,
    /// Thread id (-1: the other threads).
    pub tid: i32,
    /// Command name.
    pub comm: String,
    /// Per event: period per bucket (in the event's units).
    pub period: Vec<Vec<u64>>,
    /// Per event: samples per bucket (empty when the event's periods are fixed).
    pub samples: Vec<Vec<u64>>,
    /// Off-CPU intervals `[start, end, node]` (ns, ns, the call-tree node of the blocked
    /// stack, 0 when it has none), the longest [`MAX_INTERVALS`], in time order.
    pub offcpu: Vec<[u64; 3]>,
    /// Per off-CPU interval, in a file with wake-ups (`culprit record --off-cpu=wakers`):
    /// the thread that woke it (`comm tid`, its last `sched_waking` inside the interval, as
    /// `culprit sched wakers` pairs them), empty when none was recorded. Empty without
    /// wake-ups.
    pub offcpu_waker: Vec<String>,
    /// Per off-CPU interval, with [`Track::offcpu_waker`]: the call-tree node of the waker's
    /// stack at the wake-up, 0 when none was recorded.
    pub offcpu_waker_stack: Vec<u32>,
}

/// Sparse per-bucket values, sorted by bucket: bucket `i`'s entries follow bucket `i - 1`'s.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cells {
    /// Number of entries of each cell bucket.
    #[serde(rename = "n")]
    pub per_bucket: Vec<u32>,
    /// Function (index into the frames) or node of each entry.
    #[serde(rename = "k")]
    pub key: Vec<u32>,
    /// Period of each entry (in the event's units).
    #[serde(rename = "p")]
    pub period: Vec<u64>,
    /// Samples of each entry (empty when left out).
    #[serde(rename = "s")]
    pub samples: Vec<u64>,
}

impl Cells {
    fn from_map(map: FxHashMap<(u32, u32), (u64, u64)>, buckets: usize, samples: bool) -> Cells {
        let mut entries: Vec<_> = map.into_iter().collect();
        entries.sort_unstable_by_key(|&(k, _)| k);
        let mut c = Cells {
            per_bucket: vec![0; buckets],
            ..Cells::default()
        };
        for ((b, k), (p, s)) in entries {
            if let Some(n) = c.per_bucket.get_mut(b as usize) {
                *n += 1;
            }
            c.key.push(k);
            c.period.push(p);
            if samples {
                c.samples.push(s);
            }
        }
        c
    }
}

/// Cells being summed: per event, (bucket, key) → (period, samples).
type CellMaps = Vec<FxHashMap<(u32, u32), (u64, u64)>>;

/// Folds the cells of `maps` into buckets `factor` times wider.
fn widen(maps: CellMaps, factor: u32) -> CellMaps {
    maps.into_iter()
        .map(|m| {
            let mut out: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
            for ((b, k), (p, s)) in m {
                let e = out.entry((b / factor, k)).or_default();
                e.0 += p;
                e.1 += s;
            }
            out
        })
        .collect()
}

/// Decimal digits of `x`.
fn digits(x: u64) -> usize {
    x.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Bytes of JSON the cells take (a key, a period and, unless `fixed`, samples per entry; the
/// function cells keep samples, the node cells do not).
fn cell_bytes(functions: &CellMaps, nodes: &CellMaps, fixed: &[bool]) -> usize {
    let of = |maps: &CellMaps, with_samples: bool| -> usize {
        maps.iter()
            .zip(fixed)
            .map(|(m, &fixed)| {
                m.iter()
                    .map(|(&(_, k), &(p, s))| {
                        let samples = if with_samples && !fixed {
                            digits(s) + 1
                        } else {
                            0
                        };
                        digits(u64::from(k)) + digits(p) + 2 + samples
                    })
                    .sum::<usize>()
            })
            .sum()
    };
    of(functions, true) + of(nodes, false)
}

/// Greatest common divisor.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A sample's thread and stack, as the stack model counts them.
pub type ThreadStack = (u32, u32);

/// One off-CPU interval: its length, start, the sample's stack and its waker's thread and
/// stack (ordered by length, for keeping the longest).
type Interval = (u64, u64, u32, Option<ThreadStack>);

/// What a sample is to the timeline besides its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineRole {
    /// A sample like any other.
    Plain,
    /// A scheduler sample whose stack the thread states show: a `sched_switch` (`true`) or
    /// a wake-up.
    Sched(bool),
    /// An `offcpu-time` sample (its period is the interval before its time), with the
    /// thread and stack of the wake-up that ended it, when recorded.
    OffCpu(Option<ThreadStack>),
}

impl TimelineRole {
    /// The role of an event's samples by its name (an off-CPU sample without its waker).
    pub fn of_event(name: &str) -> TimelineRole {
        if name == OFFCPU_EVENT {
            return TimelineRole::OffCpu(None);
        }
        super::states::sched_kind(name).map_or(TimelineRole::Plain, TimelineRole::Sched)
    }
}

/// Summed period and samples per (bucket, thread, event).
type ThreadCells = FxHashMap<(i64, u32, u32), (u64, u64)>;
/// Summed period and samples per (bucket, command, event, stack): a call-tree node depends
/// on the thread only through its command (the tree's root frame).
type StackCells = FxHashMap<(i32, u32, u32, u32), (u64, u64)>;

/// The timeline being summed while the file is read ([`TimelineFold::add`]): per fine
/// bucket, thread and event, and per coarser bucket, thread, event and stack, the period and
/// samples, so its memory follows the buckets and the stacks, not the samples (an endless
/// stream stays bounded). The fine buckets start `1 ns` wide and double whenever they would
/// pass [`FINE_PER_BUCKET`] × [`BUCKETS`]; the stack buckets are `2^stack_shift` fine ones,
/// and double when they pass [`MAX_STACK_CELLS`]. Every edge is `origin + k·width`, so a
/// wider bucket is always a whole run of narrower ones.
#[derive(Debug, Default)]
pub struct TimelineFold {
    /// The first sample's time: fine bucket 0 starts there.
    origin: Option<u64>,
    width: u64,
    /// Fine buckets seen (those of samples before `origin` are negative).
    lo: i64,
    hi: i64,
    first: u64,
    last: u64,
    /// A sample had no time: no timeline.
    untimed: bool,
    threads: ThreadCells,
    stacks: StackCells,
    /// Stack buckets are `2^stack_shift` fine buckets.
    stack_shift: u32,
    /// [`MAX_STACK_CELLS`] (smaller in tests).
    max_stack_cells: usize,
    /// Each thread's command, as an index into `comms`.
    comm_of: Vec<u32>,
    comms: FxHashMap<String, u32>,
    /// Per event of the stack model: the gcd of its periods, its first period, and
    /// whether every period equals it.
    periods: Vec<(u64, Option<u64>, bool)>,
    /// Samples per thread.
    thread_samples: Vec<u64>,
    /// Per thread: its longest off-CPU intervals (a min-heap of at most
    /// [`MAX_INTERVALS`]).
    offcpu: Vec<BinaryHeap<Reverse<Interval>>>,
    /// Whether an off-CPU interval had a waker.
    wakers: bool,
    /// The scheduler samples, when kept: (time, thread, stack, is a `sched_switch`).
    sched: Option<Vec<(u64, u32, u32, bool)>>,
}

impl TimelineFold {
    /// An empty fold; `keep_sched` keeps each scheduler sample (for the thread states).
    pub fn new(keep_sched: bool) -> Self {
        TimelineFold {
            width: 1,
            max_stack_cells: MAX_STACK_CELLS,
            sched: keep_sched.then(Vec::new),
            ..TimelineFold::default()
        }
    }

    /// Adds one sample as the stack model counted it; `comm`: its thread's command.
    pub fn add(&mut self, s: &TimedSample, comm: &str, role: TimelineRole) {
        if s.time == 0 {
            self.untimed = true;
            return;
        }
        let origin = match self.origin {
            Some(origin) => origin,
            None => {
                (self.first, self.last) = (s.time, s.time);
                *self.origin.insert(s.time)
            }
        };
        self.first = self.first.min(s.time);
        self.last = self.last.max(s.time);
        let mut fine = self.fine(origin, s.time);
        self.lo = self.lo.min(fine);
        self.hi = self.hi.max(fine);
        while self.hi - self.lo >= FINE_PER_BUCKET * BUCKETS as i64 {
            self.widen();
            fine = fine.div_euclid(2);
        }
        let c = self.threads.entry((fine, s.thread, s.event)).or_default();
        c.0 += s.period;
        c.1 += 1;
        let t = s.thread as usize;
        if self.comm_of.len() <= t {
            let next = self.comms.len() as u32;
            let id = *self.comms.entry(comm.to_string()).or_insert(next);
            self.comm_of.resize(t + 1, id);
        }
        // Within i32: the first sample's fine bucket is 0, and the fine buckets seen span
        // less than FINE_PER_BUCKET × BUCKETS.
        let coarse = (fine >> self.stack_shift) as i32;
        let c = self
            .stacks
            .entry((coarse, self.comm_of[t], s.event, s.stack))
            .or_default();
        c.0 += s.period;
        c.1 += 1;
        if self.stacks.len() > self.max_stack_cells
            && (self.hi >> self.stack_shift) > (self.lo >> self.stack_shift)
        {
            self.stack_shift += 1;
            self.stacks = halve(std::mem::take(&mut self.stacks), |(b, t, e, st)| {
                (b >> 1, t, e, st)
            });
        }
        let e = s.event as usize;
        if self.periods.len() <= e {
            self.periods.resize(e + 1, (0, None, true));
        }
        let p = &mut self.periods[e];
        p.0 = gcd(p.0, s.period);
        match p.1 {
            None => p.1 = Some(s.period),
            Some(first) if first != s.period => p.2 = false,
            Some(_) => {}
        }
        if self.thread_samples.len() <= t {
            self.thread_samples.resize(t + 1, 0);
            self.offcpu.resize_with(t + 1, BinaryHeap::new);
        }
        self.thread_samples[t] += 1;
        match role {
            TimelineRole::OffCpu(waker) => {
                self.wakers |= waker.is_some();
                let heap = &mut self.offcpu[t];
                let begin = s.time.saturating_sub(s.period);
                heap.push(Reverse((s.period, begin, s.stack, waker)));
                if heap.len() > MAX_INTERVALS {
                    heap.pop();
                }
            }
            TimelineRole::Sched(switch) => {
                if let Some(list) = self.sched.as_mut() {
                    list.push((s.time, s.thread, s.stack, switch));
                }
            }
            TimelineRole::Plain => {}
        }
    }

    fn fine(&self, origin: u64, time: u64) -> i64 {
        let off = i128::from(time) - i128::from(origin);
        off.div_euclid(i128::from(self.width)) as i64
    }

    /// Fine buckets twice as wide (the stack buckets keep their width, unless they were
    /// as fine).
    fn widen(&mut self) {
        self.width *= 2;
        self.lo >>= 1;
        self.hi >>= 1;
        self.threads = halve(std::mem::take(&mut self.threads), |(b, t, e)| {
            (b >> 1, t, e)
        });
        if self.stack_shift > 0 {
            self.stack_shift -= 1;
        } else {
            self.stacks = halve(std::mem::take(&mut self.stacks), |(b, t, e, st)| {
                (b >> 1, t, e, st)
            });
        }
    }

    /// The scheduler samples kept: (time, thread, stack, is a `sched_switch`).
    pub fn sched_samples(&self) -> &[(u64, u32, u32, bool)] {
        self.sched.as_deref().unwrap_or(&[])
    }
}

/// `cells` re-keyed by `key` (buckets twice as wide), the sums of merged keys added.
fn halve<K: std::hash::Hash + Eq + Copy>(
    cells: FxHashMap<K, (u64, u64)>,
    key: impl Fn(K) -> K,
) -> FxHashMap<K, (u64, u64)> {
    let mut wide = FxHashMap::default();
    for (k, (p, n)) in cells {
        let c: &mut (u64, u64) = wide.entry(key(k)).or_default();
        c.0 += p;
        c.1 += n;
    }
    wide
}

/// The tracks of the heaviest threads of `threads` (by samples), in order of pid then tid,
/// plus one for the rest when there are more than [`MAX_TRACKS`]; and each thread's track.
fn tracks(threads: &[ThreadInfo], weight: &[u64]) -> (Vec<Track>, Vec<usize>) {
    let weight = |t: usize| weight.get(t).copied().unwrap_or(0);
    let mut by_weight: Vec<usize> = (0..threads.len()).filter(|&t| weight(t) > 0).collect();
    by_weight.sort_by_key(|&t| std::cmp::Reverse(weight(t)));
    let mut own: Vec<usize> = by_weight.iter().copied().take(MAX_TRACKS).collect();
    own.sort_by_key(|&t| (threads[t].pid, threads[t].tid, t));
    let mut tracks: Vec<Track> = own
        .iter()
        .map(|&t| {
            let th = &threads[t];
            Track {
                pid: th.pid,
                tid: th.tid,
                comm: th.comm.clone(),
                ..Track::default()
            }
        })
        .collect();
    let other = tracks.len();
    if by_weight.len() > own.len() {
        tracks.push(Track {
            pid: -1,
            tid: -1,
            comm: format!("{} other threads", by_weight.len() - own.len()),
            ..Track::default()
        });
    }
    let mut track_of = vec![other; threads.len()];
    for (i, &t) in own.iter().enumerate() {
        track_of[t] = i;
    }
    (tracks, track_of)
}

/// An off-CPU interval of a track: `[start, end, node]`, its waker (`comm tid`, or empty)
/// and the call-tree node of the waker's stack (or 0).
type OffCpuInterval = ([u64; 3], String, u32);

/// Per page column: the unit of its periods (their gcd, at least 1) and whether every
/// sample's period is that one unit.
fn units(fold: &TimelineFold, columns: &[Option<usize>], ncols: usize) -> (Vec<u64>, Vec<bool>) {
    let mut unit = vec![0u64; ncols];
    let mut first: Vec<Option<u64>> = vec![None; ncols];
    let mut fixed = vec![true; ncols];
    for (e, &(g, p, all_equal)) in fold.periods.iter().enumerate() {
        let (Some(col), Some(p)) = (columns.get(e).copied().flatten(), p) else {
            continue;
        };
        unit[col] = gcd(unit[col], g);
        fixed[col] &= all_equal;
        match first[col] {
            None => first[col] = Some(p),
            Some(q) if q != p => fixed[col] = false,
            Some(_) => {}
        }
    }
    for (u, f) in unit.iter_mut().zip(&mut fixed) {
        if *u == 0 {
            *u = 1;
            *f = false;
        }
    }
    (unit, fixed)
}

/// The timeline of `profile` from the samples `fold` summed while it was read. `columns[e]`
/// is the page column of the profile's event `e`, `leaf_of` the call-tree node and leaf
/// frame of each (thread, stack). `None` when the samples have no time.
pub fn timeline(
    fold: &TimelineFold,
    profile: &StackProfile,
    columns: &[Option<usize>],
    events: &[PageEvent],
    leaf_of: &LeafOf,
) -> Option<Timeline> {
    timeline_within(
        fold,
        &profile.threads,
        columns,
        events,
        leaf_of,
        MAX_CELL_BYTES,
    )
}

/// How a timeline's time is cut: fine buckets grouped `per` to a bucket (a power of two),
/// aligned so that each stack bucket (2^stack_shift fine ones) falls in one run of whole
/// buckets (a cell bucket of `factor` buckets).
struct Grid {
    /// The first fine bucket of the first bucket.
    lo: i64,
    per: u64,
    /// Fine buckets in a cell bucket.
    cell_span: i64,
    buckets: usize,
    factor: usize,
    cell_buckets: usize,
}

impl Grid {
    fn new(fold: &TimelineFold) -> Grid {
        let mut per = ((fold.hi - fold.lo + 1) as u64)
            .div_ceil(BUCKETS)
            .next_power_of_two();
        let (lo, cell_span) = loop {
            let span = per.max(1 << fold.stack_shift) as i64;
            let lo = fold.lo.div_euclid(span) * span;
            if ((fold.hi - lo + 1) as u64).div_ceil(per) <= BUCKETS {
                break (lo, span);
            }
            per *= 2;
        };
        let buckets = ((fold.hi - lo + 1) as u64).div_ceil(per) as usize;
        let factor = (cell_span as u64 / per) as usize;
        Grid {
            lo,
            per,
            cell_span,
            buckets,
            factor,
            cell_buckets: buckets.div_ceil(factor),
        }
    }

    /// The bucket of fine bucket `fine`.
    fn bucket_of(&self, fine: i64) -> usize {
        ((fine - self.lo) as u64 / self.per) as usize
    }
}

/// [`timeline`] with its cells kept under `max_cell_bytes`.
fn timeline_within(
    fold: &TimelineFold,
    threads: &[ThreadInfo],
    columns: &[Option<usize>],
    events: &[PageEvent],
    leaf_of: &LeafOf,
    max_cell_bytes: usize,
) -> Option<Timeline> {
    let origin = fold.origin?;
    if fold.untimed || fold.last == fold.first {
        return None;
    }
    let ncols = events.len();
    let grid = Grid::new(fold);
    let buckets = grid.buckets;
    let width = fold.width * grid.per;
    let start = (i128::from(origin) + i128::from(grid.lo) * i128::from(fold.width)).max(0) as u64;
    let offcpu = events.iter().position(|e| e.name == OFFCPU_EVENT);
    let (unit, fixed) = units(fold, columns, ncols);
    let (mut tracks, track_of) = tracks(threads, &fold.thread_samples);
    for t in &mut tracks {
        t.period = vec![vec![0; buckets]; ncols];
        t.samples = vec![vec![0; buckets]; ncols];
    }

    let mut period = vec![vec![0u64; buckets]; ncols];
    let mut counts = vec![vec![0u64; buckets]; ncols];
    for (&(fine, thread, event), &(p, n)) in &fold.threads {
        let Some(col) = columns.get(event as usize).copied().flatten() else {
            continue;
        };
        let b = grid.bucket_of(fine);
        let units = p / unit[col];
        period[col][b] += units;
        counts[col][b] += n;
        let ti = track_of.get(thread as usize).copied().unwrap_or(usize::MAX);
        if let Some(t) = tracks.get_mut(ti) {
            t.period[col][b] += units;
            t.samples[col][b] += n;
        }
    }
    let (mut fn_cells, mut node_cells) = stack_cells(fold, columns, leaf_of, &unit, &grid);
    let intervals = if offcpu.is_some() {
        offcpu_intervals(fold, threads, &track_of, leaf_of, tracks.len())
    } else {
        vec![Vec::new(); tracks.len()]
    };
    // Too many bytes of cells: wider cell buckets until they fit.
    let (mut factor, mut cell_buckets) = (grid.factor, grid.cell_buckets);
    while cell_bytes(&fn_cells, &node_cells, &fixed) > max_cell_bytes && cell_buckets > 1 {
        fn_cells = widen(fn_cells, 2);
        node_cells = widen(node_cells, 2);
        factor *= 2;
        cell_buckets = cell_buckets.div_ceil(2);
    }
    // Samples equal periods in units where the period is fixed: left out.
    let keep = |vv: Vec<Vec<u64>>| -> Vec<Vec<u64>> {
        vv.into_iter()
            .zip(&fixed)
            .map(|(v, &fixed)| if fixed { Vec::new() } else { v })
            .collect()
    };
    for (t, mut iv) in tracks.iter_mut().zip(intervals) {
        t.samples = keep(std::mem::take(&mut t.samples));
        if iv.len() > MAX_INTERVALS {
            iv.sort_unstable_by_key(|i| std::cmp::Reverse(i.0[1] - i.0[0]));
            iv.truncate(MAX_INTERVALS);
        }
        iv.sort_unstable();
        if fold.wakers {
            t.offcpu_waker = iv.iter().map(|i| i.1.clone()).collect();
            t.offcpu_waker_stack = iv.iter().map(|i| i.2).collect();
        }
        t.offcpu = iv.into_iter().map(|i| i.0).collect();
    }
    let functions = fn_cells
        .into_iter()
        .zip(&fixed)
        .map(|(m, &fixed)| Cells::from_map(m, cell_buckets, !fixed))
        .collect();
    let nodes = node_cells
        .into_iter()
        .map(|m| Cells::from_map(m, cell_buckets, false))
        .collect();
    Some(Timeline {
        start,
        width,
        buckets,
        cell_factor: factor,
        unit,
        fixed: fixed.clone(),
        period,
        samples: keep(counts),
        threads: tracks,
        functions,
        nodes,
        offcpu,
        state_names: Vec::new(),
        states: Vec::new(),
    })
}

/// The (cell bucket, leaf frame) and (cell bucket, call-tree node) cells of every event
/// column: the stacks' periods (in `unit`s) and samples. A (command, stack) takes the node
/// and leaf frame of any thread of that command.
fn stack_cells(
    fold: &TimelineFold,
    columns: &[Option<usize>],
    leaf_of: &LeafOf,
    unit: &[u64],
    grid: &Grid,
) -> (CellMaps, CellMaps) {
    let ncols = unit.len();
    let mut leaf_by_comm: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
    for (&(thread, stack), &leaf) in leaf_of {
        if let Some(&comm) = fold.comm_of.get(thread as usize) {
            leaf_by_comm.insert((comm, stack), leaf);
        }
    }
    let mut fn_cells: CellMaps = vec![FxHashMap::default(); ncols];
    let mut node_cells: CellMaps = vec![FxHashMap::default(); ncols];
    for (&(coarse, comm, event, stack), &(p, n)) in &fold.stacks {
        let Some(col) = columns.get(event as usize).copied().flatten() else {
            continue;
        };
        let Some(&(node, frame)) = leaf_by_comm.get(&(comm, stack)) else {
            continue;
        };
        let cb = ((i64::from(coarse) << fold.stack_shift) - grid.lo) as u64 / grid.cell_span as u64;
        let units = p / unit[col];
        let f = fn_cells[col].entry((cb as u32, frame)).or_default();
        f.0 += units;
        f.1 += n;
        let c = node_cells[col].entry((cb as u32, node)).or_default();
        c.0 += units;
        c.1 += n;
    }
    (fn_cells, node_cells)
}

/// The off-CPU intervals of each of `ntracks` tracks (its threads' longest), with their
/// wakers' names and call-tree nodes.
fn offcpu_intervals(
    fold: &TimelineFold,
    threads: &[ThreadInfo],
    track_of: &[usize],
    leaf_of: &LeafOf,
    ntracks: usize,
) -> Vec<Vec<OffCpuInterval>> {
    let node_of = |thread: u32, stack: u32| leaf_of.get(&(thread, stack)).map_or(0, |l| l.0);
    let mut intervals: Vec<Vec<OffCpuInterval>> = vec![Vec::new(); ntracks];
    for (thread, heap) in fold.offcpu.iter().enumerate() {
        let Some(iv) = track_of.get(thread).and_then(|&ti| intervals.get_mut(ti)) else {
            continue;
        };
        for Reverse((len, begin, stack, waker)) in heap.iter() {
            let node = u64::from(node_of(thread as u32, *stack));
            let (name, waker_node) = match waker.and_then(|w| Some((w, threads.get(w.0 as usize)?)))
            {
                Some(((wt, ws), th)) => (format!("{} {}", th.comm, th.tid), node_of(wt, ws)),
                None => (String::new(), 0),
            };
            iv.push(([*begin, begin + len, node], name, waker_node));
        }
    }
    intervals
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::stacks::PeriodUnit;

    /// The samples of two threads over 1 s (`n` of them), each on its own leaf `stack`,
    /// with period 1000 (or 1000 and 3000 alternating when not `fixed`).
    fn samples(n: u32, fixed: bool) -> Vec<TimedSample> {
        (0..n)
            .map(|i| TimedSample {
                time: 1_000_000_000 + u64::from(i) * (1_000_000_000 / u64::from(n)),
                thread: i % 2,
                event: 0,
                stack: i % 500,
                period: if fixed || i % 2 == 0 { 1000 } else { 3000 },
                cpu: 0,
            })
            .collect()
    }

    /// The fold of [`samples`], its threads, leaves and event.
    fn profile(n: u32, fixed: bool) -> (TimelineFold, Vec<ThreadInfo>, LeafOf, Vec<PageEvent>) {
        let threads = [10, 11]
            .map(|tid| ThreadInfo {
                pid: 10,
                tid,
                comm: "w".into(),
            })
            .to_vec();
        let mut fold = TimelineFold::new(false);
        let mut leaf_of = LeafOf::default();
        let list = samples(n, fixed);
        for s in &list {
            fold.add(s, "w", TimelineRole::Plain);
            leaf_of.insert((s.thread, s.stack), (s.stack + 1, s.stack));
        }
        let period = list.iter().map(|s| s.period).sum();
        let events = vec![PageEvent {
            name: "cpu-clock".into(),
            unit: PeriodUnit::Nanoseconds,
            samples: u64::from(n),
            period,
        }];
        (fold, threads, leaf_of, events)
    }

    #[test]
    fn test_timeline_fold_buckets_nest_and_keep_every_sample_in_its_bucket() {
        // Samples over 1 s, 0.3 s, and a few ns: 250 to 400 buckets that cover them all,
        // each sample in the bucket its time falls in.
        for (n, span) in [(20_000u64, 1_000_000_000u64), (997, 300_000_000), (7, 6)] {
            let mut fold = TimelineFold::new(false);
            let threads = vec![ThreadInfo::default()];
            let times: Vec<u64> = (0..n)
                .map(|i| 5_000_000_000 + (i * 7919) % n * span / n)
                .collect();
            let mut leaf_of = LeafOf::default();
            leaf_of.insert((0, 0), (1, 0));
            for (i, &time) in times.iter().enumerate() {
                let s = TimedSample {
                    time,
                    period: i as u64 + 1,
                    ..TimedSample::default()
                };
                fold.add(&s, "w", TimelineRole::Plain);
            }
            let events = vec![PageEvent {
                name: "cpu-clock".into(),
                unit: PeriodUnit::Nanoseconds,
                samples: n,
                period: n * (n + 1) / 2,
            }];
            let t = timeline_within(&fold, &threads, &[Some(0)], &events, &leaf_of, usize::MAX)
                .unwrap();
            let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
            assert!(t.start <= first && last < t.start + t.width * t.buckets as u64);
            assert!(t.buckets as u64 <= BUCKETS, "{}", t.buckets);
            if span > 1000 {
                assert!(t.buckets as u64 > BUCKETS / 2, "{}", t.buckets);
            }
            let mut want = vec![0u64; t.buckets];
            for (i, &time) in times.iter().enumerate() {
                want[((time - t.start) / t.width) as usize] += i as u64 + 1;
            }
            assert_eq!(t.period[0], want, "n {n}");
        }
    }

    #[test]
    fn test_timeline_cells_fit_their_budget_and_keep_every_period() {
        for fixed in [true, false] {
            let (fold, threads, leaf_of, events) = profile(20_000, fixed);
            let within =
                |max| timeline_within(&fold, &threads, &[Some(0)], &events, &leaf_of, max).unwrap();
            let wide = within(usize::MAX);
            assert_eq!(wide.cell_factor, 1);
            let t = within(20_000);
            // Cells in wider buckets, the tracks still at the timeline's resolution.
            assert!(t.cell_factor > 1, "{}", t.cell_factor);
            assert_eq!(t.buckets, wide.buckets);
            let json = serde_json::to_string(&(&t.functions, &t.nodes)).unwrap();
            assert!(json.len() < 20_000 + 200, "{}", json.len());
            assert_eq!(t.unit, vec![1000]);
            assert_eq!(t.fixed, vec![fixed]);
            for cells in [&t.functions[0], &t.nodes[0]] {
                assert_eq!(cells.per_bucket.len(), t.buckets.div_ceil(t.cell_factor));
                assert_eq!(
                    cells.per_bucket.iter().sum::<u32>() as usize,
                    cells.key.len()
                );
                assert_eq!(
                    cells.period.iter().sum::<u64>() * t.unit[0],
                    events[0].period
                );
            }
            assert_eq!(t.period[0].iter().sum::<u64>() * 1000, events[0].period);
            // Samples are written only where they differ from the periods in units.
            assert_eq!(t.samples[0].is_empty(), fixed);
            assert_eq!(t.functions[0].samples.is_empty(), fixed);
            if !fixed {
                assert_eq!(t.functions[0].samples.iter().sum::<u64>(), 20_000);
            }
            assert!(t.nodes[0].samples.is_empty());
        }
    }

    #[test]
    fn test_stack_cells_past_their_budget_are_wider_and_still_nest_in_buckets() {
        let (_, threads, leaf_of, events) = profile(20_000, false);
        let mut fold = TimelineFold::new(false);
        fold.max_stack_cells = 3_000;
        for s in &samples(20_000, false) {
            fold.add(s, "w", TimelineRole::Plain);
        }
        assert!(
            fold.stack_shift > 0,
            "the budget made the stack buckets wider"
        );
        assert!(fold.stacks.len() <= 3_000 + 1);
        let t =
            timeline_within(&fold, &threads, &[Some(0)], &events, &leaf_of, usize::MAX).unwrap();
        assert!(t.cell_factor > 1, "{}", t.cell_factor);
        // Each cell bucket holds exactly the period of its run of timeline buckets.
        let cells = &t.functions[0];
        let mut k = 0;
        for (cb, &n) in cells.per_bucket.iter().enumerate() {
            let sum: u64 = cells.period[k..k + n as usize].iter().sum();
            k += n as usize;
            let from = cb * t.cell_factor;
            let to = (from + t.cell_factor).min(t.buckets);
            assert_eq!(
                sum,
                t.period[0][from..to].iter().sum::<u64>(),
                "cell bucket {cb}"
            );
        }
        assert_eq!(
            t.period[0].iter().sum::<u64>() * t.unit[0],
            events[0].period
        );
    }

    #[test]
    fn test_widen_sums_cells_of_merged_buckets() {
        let mut m: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
        m.insert((0, 7), (10, 1));
        m.insert((1, 7), (5, 2));
        m.insert((2, 7), (1, 1));
        let w = widen(vec![m], 2);
        assert_eq!(w[0].get(&(0, 7)), Some(&(15, 3)));
        assert_eq!(w[0].get(&(1, 7)), Some(&(1, 1)));
        let c = Cells::from_map(w.into_iter().next().unwrap(), 2, true);
        assert_eq!(c.per_bucket, vec![1, 1]);
        assert_eq!(c.period, vec![15, 1]);
        assert_eq!(c.samples, vec![3, 1]);
    }

    #[test]
    fn test_cell_bytes_count_json_digits_and_units() {
        let mut m: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
        m.insert((0, 12), (3, 3));
        // "12,3," (5 bytes) for a node; a function adds its samples unless fixed: "3,".
        assert_eq!(cell_bytes(&vec![], &vec![m.clone()], &[false]), 5);
        assert_eq!(cell_bytes(&vec![m.clone()], &vec![], &[false]), 7);
        assert_eq!(cell_bytes(&vec![m], &vec![], &[true]), 5);
        assert_eq!(gcd(150_000, 50_000), 50_000);
        assert_eq!(digits(0), 1);
        assert_eq!(digits(10), 2);
    }
}
