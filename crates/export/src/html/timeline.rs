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

/// The tracks of the heaviest threads of `profile` (by samples), in order of pid then tid,
/// plus one for the rest when there are more than [`MAX_TRACKS`]; and each thread's track.
fn tracks(profile: &StackProfile) -> (Vec<Track>, Vec<usize>) {
    let mut weight = vec![0u64; profile.threads.len()];
    for s in &profile.timeline {
        if let Some(w) = weight.get_mut(s.thread as usize) {
            *w += 1;
        }
    }
    let mut by_weight: Vec<usize> = (0..weight.len()).filter(|&t| weight[t] > 0).collect();
    by_weight.sort_by_key(|&t| std::cmp::Reverse(weight[t]));
    let mut own: Vec<usize> = by_weight.iter().copied().take(MAX_TRACKS).collect();
    own.sort_by_key(|&t| (profile.threads[t].pid, profile.threads[t].tid, t));
    let mut tracks: Vec<Track> = own
        .iter()
        .map(|&t| {
            let th = &profile.threads[t];
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
    let mut track_of = vec![other; profile.threads.len()];
    for (i, &t) in own.iter().enumerate() {
        track_of[t] = i;
    }
    (tracks, track_of)
}

/// Per page column: the unit of its periods (their gcd, at least 1) and whether every
/// sample's period is that one unit.
fn units(profile: &StackProfile, columns: &[Option<usize>], ncols: usize) -> (Vec<u64>, Vec<bool>) {
    let mut unit = vec![0u64; ncols];
    let mut first: Vec<Option<u64>> = vec![None; ncols];
    let mut fixed = vec![true; ncols];
    for s in &profile.timeline {
        let Some(col) = columns.get(s.event as usize).copied().flatten() else {
            continue;
        };
        unit[col] = gcd(unit[col], s.period);
        match first[col] {
            None => first[col] = Some(s.period),
            Some(p) if p != s.period => fixed[col] = false,
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

/// The timeline of `profile` (built with its timeline kept). `columns[e]` is the page column
/// of the profile's event `e`, `leaf_of` the call-tree node and leaf frame of each (thread,
/// stack). `None` when the samples have no time.
pub fn timeline(
    profile: &StackProfile,
    columns: &[Option<usize>],
    events: &[PageEvent],
    leaf_of: &LeafOf,
) -> Option<Timeline> {
    timeline_within(profile, columns, events, leaf_of, MAX_CELL_BYTES)
}

/// [`timeline`] with its cells kept under `max_cell_bytes`.
fn timeline_within(
    profile: &StackProfile,
    columns: &[Option<usize>],
    events: &[PageEvent],
    leaf_of: &LeafOf,
    max_cell_bytes: usize,
) -> Option<Timeline> {
    let samples = &profile.timeline;
    let first = samples.iter().map(|s| s.time).min()?;
    let last = samples.iter().map(|s| s.time).max()?;
    if first == 0 || last == first {
        return None;
    }
    let ncols = events.len();
    // Buckets cover [first, last]: the last one ends after the last sample.
    let width = (last - first) / BUCKETS + 1;
    let buckets = ((last - first) / width + 1) as usize;
    let offcpu = events.iter().position(|e| e.name == OFFCPU_EVENT);
    let (unit, fixed) = units(profile, columns, ncols);
    let (mut tracks, track_of) = tracks(profile);
    for t in &mut tracks {
        t.period = vec![vec![0; buckets]; ncols];
        t.samples = vec![vec![0; buckets]; ncols];
    }

    let mut period = vec![vec![0u64; buckets]; ncols];
    let mut counts = vec![vec![0u64; buckets]; ncols];
    let mut fn_cells: CellMaps = vec![FxHashMap::default(); ncols];
    let mut node_cells: CellMaps = vec![FxHashMap::default(); ncols];
    let mut intervals: Vec<Vec<[u64; 3]>> = vec![Vec::new(); tracks.len()];
    for s in samples {
        let Some(col) = columns.get(s.event as usize).copied().flatten() else {
            continue;
        };
        let b = ((s.time - first) / width) as usize;
        let units = s.period / unit[col];
        period[col][b] += units;
        counts[col][b] += 1;
        let ti = track_of
            .get(s.thread as usize)
            .copied()
            .unwrap_or(usize::MAX);
        let leaf = leaf_of.get(&(s.thread, s.stack)).copied();
        if let Some(t) = tracks.get_mut(ti) {
            t.period[col][b] += units;
            t.samples[col][b] += 1;
            if Some(col) == offcpu {
                let node = leaf.map_or(0, |(node, _)| u64::from(node));
                intervals[ti].push([s.time.saturating_sub(s.period), s.time, node]);
            }
        }
        if let Some((node, frame)) = leaf {
            let f = fn_cells[col].entry((b as u32, frame)).or_default();
            f.0 += units;
            f.1 += 1;
            let n = node_cells[col].entry((b as u32, node)).or_default();
            n.0 += units;
            n.1 += 1;
        }
    }
    // Too many bytes of cells: wider cell buckets until they fit.
    let mut factor = 1usize;
    let mut cell_buckets = buckets;
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
            iv.sort_unstable_by_key(|i| std::cmp::Reverse(i[1] - i[0]));
            iv.truncate(MAX_INTERVALS);
        }
        iv.sort_unstable();
        t.offcpu = iv;
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
        start: first,
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

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_analysis::stacks::{PeriodUnit, ThreadInfo, TimedSample};

    /// A profile of `n` samples of two threads over 1 s, each on its own leaf `stack`, with
    /// period 1000 (or 1000 and 3000 alternating when not `fixed`).
    fn profile(n: u32, fixed: bool) -> (StackProfile, LeafOf, Vec<PageEvent>) {
        let mut p = StackProfile::default();
        for tid in [10, 11] {
            p.threads.push(ThreadInfo {
                pid: 10,
                tid,
                comm: "w".into(),
            });
        }
        let mut leaf_of = LeafOf::default();
        for i in 0..n {
            let (thread, stack) = (i % 2, i % 500);
            p.timeline.push(TimedSample {
                time: 1_000_000_000 + u64::from(i) * (1_000_000_000 / u64::from(n)),
                thread,
                event: 0,
                stack,
                period: if fixed || i % 2 == 0 { 1000 } else { 3000 },
                cpu: 0,
            });
            leaf_of.insert((thread, stack), (stack + 1, stack));
        }
        let period = p.timeline.iter().map(|s| s.period).sum();
        let events = vec![PageEvent {
            name: "cpu-clock".into(),
            unit: PeriodUnit::Nanoseconds,
            samples: u64::from(n),
            period,
        }];
        (p, leaf_of, events)
    }

    #[test]
    fn test_timeline_cells_fit_their_budget_and_keep_every_period() {
        for fixed in [true, false] {
            let (p, leaf_of, events) = profile(20_000, fixed);
            let wide = timeline_within(&p, &[Some(0)], &events, &leaf_of, usize::MAX).unwrap();
            assert_eq!(wide.cell_factor, 1);
            let t = timeline_within(&p, &[Some(0)], &events, &leaf_of, 20_000).unwrap();
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
