//! The page's timeline ([`Timeline`]): the recording's time cut into equal buckets, and per
//! bucket what each thread did (period and samples per event, off-CPU intervals), plus the
//! two breakdowns that let a time selection filter every view: each function's self period
//! per bucket (the hot functions table of a selection) and each call-tree node's self period
//! per bucket (the flame graph and trees of a selection).
//!
//! A selection is a run of whole buckets, `[start + i·width, start + j·width)`: the page
//! prints it as the `culprit report --time` window that gives the same numbers (inclusive
//! bounds, so the end is one nanosecond before the next bucket).

use rustc_hash::FxHashMap;
use serde::Serialize;

use culprit_analysis::stacks::StackProfile;

use super::flame::LeafOf;
use super::model::PageEvent;

/// Buckets of the finest timeline.
pub const BUCKETS: u64 = 400;
/// At most this many cells (bucket × function or node, per event) are kept: beyond, the
/// buckets are made twice as wide until they fit (the page stays small).
pub const MAX_CELLS: usize = 300_000;
/// At most this many threads get a track of their own; the rest share one.
pub const MAX_TRACKS: usize = 100;
/// At most this many off-CPU intervals are listed per track (the longest).
pub const MAX_INTERVALS: usize = 2_000;
/// perf's name of the off-CPU event (`culprit record --off-cpu`).
pub const OFFCPU_EVENT: &str = "offcpu-time";

/// The timeline and its per-bucket breakdowns.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Time of the first bucket's start (ns, the samples' clock: `culprit script`'s).
    pub start: u64,
    /// Width of a bucket (ns).
    pub width: u64,
    /// Number of buckets.
    pub buckets: usize,
    /// Per event: summed period per bucket (the percentage base of a selection).
    pub period: Vec<Vec<u64>>,
    /// Per event: samples per bucket.
    pub samples: Vec<Vec<u64>>,
    /// One track per thread, grouped by process (in order of pid, then tid).
    pub threads: Vec<Track>,
    /// Per event: each function's self period and samples per bucket.
    pub functions: Vec<Cells>,
    /// Per event: each call-tree node's self period (and samples) per bucket.
    pub nodes: Vec<Cells>,
    /// Page column of the off-CPU event, when the file has one.
    pub offcpu: Option<usize>,
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
    /// Per event: period per bucket.
    pub period: Vec<Vec<u64>>,
    /// Per event: samples per bucket.
    pub samples: Vec<Vec<u64>>,
    /// Off-CPU intervals `[start, end]` (ns), the longest [`MAX_INTERVALS`], in time order.
    pub offcpu: Vec<[u64; 2]>,
}

/// Sparse per-bucket values, sorted by bucket: entry `k` is `key[k]` in bucket `bucket[k]`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cells {
    /// Bucket of each entry.
    #[serde(rename = "b")]
    pub bucket: Vec<u32>,
    /// Function (index into the frames) or node of each entry.
    #[serde(rename = "k")]
    pub key: Vec<u32>,
    /// Period of each entry.
    #[serde(rename = "p")]
    pub period: Vec<u64>,
    /// Samples of each entry.
    #[serde(rename = "s")]
    pub samples: Vec<u64>,
}

impl Cells {
    fn from_map(map: FxHashMap<(u32, u32), (u64, u64)>) -> Cells {
        let mut entries: Vec<_> = map.into_iter().collect();
        entries.sort_unstable_by_key(|&(k, _)| k);
        let mut c = Cells::default();
        for ((b, k), (p, s)) in entries {
            c.bucket.push(b);
            c.key.push(k);
            c.period.push(p);
            c.samples.push(s);
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

/// The timeline of `profile` (built with its timeline kept). `columns[e]` is the page column
/// of the profile's event `e`, `leaf_of` the call-tree node and leaf frame of each (thread,
/// stack). `None` when the samples have no time.
pub fn timeline(
    profile: &StackProfile,
    columns: &[Option<usize>],
    events: &[PageEvent],
    leaf_of: &LeafOf,
) -> Option<Timeline> {
    let samples = &profile.timeline;
    let first = samples.iter().map(|s| s.time).min()?;
    let last = samples.iter().map(|s| s.time).max()?;
    if first == 0 || last == first {
        return None;
    }
    let ncols = events.len();
    // Buckets cover [first, last]: the last one ends after the last sample.
    let mut width = (last - first) / BUCKETS + 1;
    let mut buckets = ((last - first) / width + 1) as usize;
    let offcpu = events.iter().position(|e| e.name == OFFCPU_EVENT);

    // Tracks: the heaviest threads (by samples) get their own.
    let mut weight = vec![0u64; profile.threads.len()];
    for s in samples {
        if let Some(w) = weight.get_mut(s.thread as usize) {
            *w += 1;
        }
    }
    let mut by_weight: Vec<usize> = (0..weight.len()).filter(|&t| weight[t] > 0).collect();
    by_weight.sort_by_key(|&t| std::cmp::Reverse(weight[t]));
    let mut own: Vec<usize> = by_weight.iter().copied().take(MAX_TRACKS).collect();
    own.sort_by_key(|&t| (profile.threads[t].pid, profile.threads[t].tid, t));
    let mut track_of = vec![usize::MAX; profile.threads.len()];
    let mut tracks: Vec<Track> = own
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            track_of[t] = i;
            let th = &profile.threads[t];
            Track {
                pid: th.pid,
                tid: th.tid,
                comm: th.comm.clone(),
                ..Track::default()
            }
        })
        .collect();
    if by_weight.len() > own.len() {
        tracks.push(Track {
            pid: -1,
            tid: -1,
            comm: format!("{} other threads", by_weight.len() - own.len()),
            ..Track::default()
        });
    }
    let other = tracks.len().saturating_sub(1);
    for t in &mut tracks {
        t.period = vec![vec![0; buckets]; ncols];
        t.samples = vec![vec![0; buckets]; ncols];
    }

    let mut period = vec![vec![0u64; buckets]; ncols];
    let mut counts = vec![vec![0u64; buckets]; ncols];
    let mut fn_cells: CellMaps = vec![FxHashMap::default(); ncols];
    let mut node_cells: CellMaps = vec![FxHashMap::default(); ncols];
    let mut intervals: Vec<Vec<[u64; 2]>> = vec![Vec::new(); tracks.len()];
    for s in samples {
        let Some(col) = columns.get(s.event as usize).copied().flatten() else {
            continue;
        };
        let b = ((s.time - first) / width) as usize;
        period[col][b] += s.period;
        counts[col][b] += 1;
        let ti = match track_of.get(s.thread as usize) {
            Some(&t) if t != usize::MAX => t,
            _ => other,
        };
        if let Some(t) = tracks.get_mut(ti) {
            t.period[col][b] += s.period;
            t.samples[col][b] += 1;
            if Some(col) == offcpu {
                intervals[ti].push([s.time.saturating_sub(s.period), s.time]);
            }
        }
        if let Some(&(node, frame)) = leaf_of.get(&(s.thread, s.stack)) {
            let f = fn_cells[col].entry((b as u32, frame)).or_default();
            f.0 += s.period;
            f.1 += 1;
            let n = node_cells[col].entry((b as u32, node)).or_default();
            n.0 += s.period;
            n.1 += 1;
        }
    }
    // Too many cells: wider buckets until they fit.
    let cells = |f: &CellMaps, n: &CellMaps| f.iter().chain(n).map(|m| m.len()).sum::<usize>();
    let mut factor = 1u32;
    while cells(&fn_cells, &node_cells) > MAX_CELLS && buckets > 1 {
        fn_cells = widen(fn_cells, 2);
        node_cells = widen(node_cells, 2);
        factor *= 2;
        width *= 2;
        buckets = buckets.div_ceil(2);
    }
    let coarse = |v: Vec<u64>| -> Vec<u64> {
        let mut out = vec![0; buckets];
        for (i, x) in v.into_iter().enumerate() {
            out[i / factor as usize] += x;
        }
        out
    };
    let coarse_all = |vv: Vec<Vec<u64>>| vv.into_iter().map(coarse).collect::<Vec<_>>();
    for (t, mut iv) in tracks.iter_mut().zip(intervals) {
        t.period = coarse_all(std::mem::take(&mut t.period));
        t.samples = coarse_all(std::mem::take(&mut t.samples));
        if iv.len() > MAX_INTERVALS {
            iv.sort_unstable_by_key(|i| std::cmp::Reverse(i[1] - i[0]));
            iv.truncate(MAX_INTERVALS);
        }
        iv.sort_unstable();
        t.offcpu = iv;
    }
    Some(Timeline {
        start: first,
        width,
        buckets,
        period: coarse_all(period),
        samples: coarse_all(counts),
        threads: tracks,
        functions: fn_cells.into_iter().map(Cells::from_map).collect(),
        nodes: node_cells.into_iter().map(Cells::from_map).collect(),
        offcpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_widen_sums_cells_of_merged_buckets() {
        let mut m: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
        m.insert((0, 7), (10, 1));
        m.insert((1, 7), (5, 2));
        m.insert((2, 7), (1, 1));
        let w = widen(vec![m], 2);
        assert_eq!(w[0].get(&(0, 7)), Some(&(15, 3)));
        assert_eq!(w[0].get(&(1, 7)), Some(&(1, 1)));
        let c = Cells::from_map(w.into_iter().next().unwrap());
        assert_eq!(c.bucket, vec![0, 1]);
        assert_eq!(c.period, vec![15, 1]);
    }
}
