//! Children reports without call graphs (what `culprit report` shows by default for a `-g`
//! file), computed from each sample's *places* instead of interned call chains.
//!
//! While reading, every sample's sample keys and places of its sampled IP and call-chain
//! frames (a place is everything a row key and its text read from a frame) are folded into
//! one entry per distinct (keys, event, places), found by one hash of the whole path: a
//! sample costs one lookup per frame (its places) and one per sample, and memory follows
//! the distinct paths, not the samples. After reading, each place is resolved once and
//! named by its row-key words, so accumulating the rows is array indexing, once per
//! distinct path. Rows come out in the order the interned-chain path makes them (first-seen
//! order: the first sample that reaches a row, and in it, the first frame; a later equal
//! sample reaches no new row), so both paths give the same report.

use std::hash::{Hash, Hasher};

use culprit_decode::model::{CpuMode, DsoKind, EventId, Frame, Profile, Sample};
use culprit_symbols::{Query, Resolved, Symbolizer};

use super::{
    comm_names, event_columns, event_counts, finish_rows, key_words, resolve_locations,
    EventTotals, HotspotOptions, Hotspots, KeyWords, Loc, RowIndex, RowRep, RowValues, SampleKeys,
    NONE, VALUES, V_CH_PERIOD, V_CH_SAMPLES, V_PERIOD, V_SAMPLES,
};
use rustc_hash::{FxHashMap, FxHasher};

use crate::{AnalysisError, SortKey};

/// Where a row can come from, with all that its key words and texts read: the location,
/// the address an unresolved `sym` shows (the runtime address for call-chain frames, the
/// file offset for the sampled IP, as perf), the mode (the `[k]`/`[.]` tag) and the pid
/// for per-process (JIT) objects (-1 for all others, so that places dedup across processes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place {
    shown_addr: u64,
    file_offset: u64,
    /// DSO id (`NONE`: no mapping).
    dso: u32,
    pid: i32,
    cpumode: CpuMode,
}

impl Hash for Place {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // One 32-byte block (folded multiplies) instead of a multiply per field in a chain.
        [
            self.shown_addr,
            self.file_offset,
            u64::from(self.dso) | u64::from(self.pid as u32) << 32,
            self.cpumode as u64,
        ]
        .hash(h);
    }
}

/// Equal samples (same keys, event, filter outcome and places), folded: one entry per
/// distinct call path and sample keys, in first-seen order.
struct Entry {
    period: u64,
    /// Start of its places in its segment's `seq` (they end where the next entry's start).
    start: u64,
    /// Sample keys (see [`Segment::keys_map`]).
    keys: u32,
    samples: u32,
    /// The next entry whose hash is the same (`NONE`: none), see [`Segment::by_hash`].
    same_hash: u32,
    event: EventId,
    /// Passed the pid/tid/comm filters (else it only counts in the event totals).
    kept: bool,
}

/// Entries in first-seen order with their places, each distinct path stored once (memory
/// follows distinct paths and sample keys, not samples). A parallel read's later shares are
/// kept as their own segments (with their own numbering), so joining them copies nothing.
#[derive(Default)]
struct Segment {
    entries: Vec<Entry>,
    /// The places of every entry, back to back: the sampled IP, then the call chain
    /// (only for kept samples).
    seq: Vec<u32>,
    /// The first entry of each hash of (keys, event, kept, places); the others of the same
    /// hash follow [`Entry::same_hash`]. Freed by [`ChildrenSamples::finish`].
    by_hash: FxHashMap<u64, u32>,
    /// Added to the place ids in `seq`.
    place_base: u32,
    /// The entries' sample-key ids -> ids in [`ChildrenSamples::sample_keys`] (`None`:
    /// the same: a segment of samples added here).
    keys_map: Option<Vec<u32>>,
}

impl Segment {
    /// Folds the sample whose places were just pushed at `seq[start..]` into the entry of
    /// the same keys, event, filter outcome and places (dropping its copy of the places),
    /// or makes it a new entry.
    fn fold(&mut self, keys: u32, event: EventId, period: u64, kept: bool, start: usize) {
        let sample = (keys, event, kept);
        // Consecutive samples are often equal: the last entry first, without hashing.
        let last = self.entries.len().wrapping_sub(1) as u32;
        if self.add_if_same(last, sample, period, start) {
            return;
        }
        let mut h = FxHasher::default();
        (sample, self.seq.get(start..).unwrap_or(&[])).hash(&mut h);
        let hash = h.finish();
        let first = self.by_hash.get(&hash).copied().unwrap_or(NONE);
        let mut id = first;
        while let Some(e) = self.entries.get(id as usize) {
            let next = e.same_hash;
            if id != last && self.add_if_same(id, sample, period, start) {
                return;
            }
            id = next;
        }
        // New (or its twin is full): it heads its hash's list.
        self.by_hash.insert(hash, self.entries.len() as u32);
        self.entries.push(Entry {
            period,
            start: start as u64,
            keys,
            samples: 1,
            same_hash: first,
            event,
            kept,
        });
    }

    /// Adds the sample of (keys, event, kept) `sample` and places `seq[start..]` to entry
    /// `id` if it is the same (then drops the places); whether it was.
    fn add_if_same(
        &mut self,
        id: u32,
        sample: (u32, EventId, bool),
        period: u64,
        start: usize,
    ) -> bool {
        let Some(e) = self.entries.get(id as usize) else {
            return false;
        };
        let end = self
            .entries
            .get(id as usize + 1)
            .map_or(start, |n| n.start as usize);
        let same = (e.keys, e.event, e.kept) == sample
            && e.samples < u32::MAX
            && self.seq.get(e.start as usize..end) == self.seq.get(start..);
        if same {
            let e = &mut self.entries[id as usize];
            e.samples += 1;
            e.period = e.period.saturating_add(period);
            self.seq.truncate(start);
        }
        same
    }

    /// The entries with their sample keys and places (ids in [`ChildrenSamples::places`]).
    fn entries(&self) -> impl Iterator<Item = (&Entry, u32, &[u32])> + '_ {
        let mut ends = self.entries.iter().skip(1).map(|e| e.start as usize);
        self.entries.iter().map(move |e| {
            let end = ends.next().unwrap_or(self.seq.len());
            let keys = match &self.keys_map {
                Some(m) => m.get(e.keys as usize).copied().unwrap_or(NONE),
                None => e.keys,
            };
            (e, keys, self.seq.get(e.start as usize..end).unwrap_or(&[]))
        })
    }
}

/// The samples of a children report, as places (see the module documentation).
#[derive(Default)]
pub(super) struct ChildrenSamples {
    places: Vec<Place>,
    place_ids: FxHashMap<Place, u32>,
    sample_keys: Vec<SampleKeys>,
    sample_key_ids: FxHashMap<SampleKeys, u32>,
    /// The last sample keys seen and their id (consecutive samples share them).
    last_keys: Option<(SampleKeys, u32)>,
    segments: Vec<Segment>,
}

impl ChildrenSamples {
    /// Entries kept.
    pub(super) fn len(&self) -> usize {
        self.segments.iter().map(|s| s.entries.len()).sum()
    }

    fn place(&mut self, p: Place) -> u32 {
        intern(&mut self.place_ids, &mut self.places, p)
    }

    fn keys(&mut self, k: SampleKeys) -> u32 {
        match self.last_keys {
            Some((last, id)) if last == k => id,
            _ => {
                let id = intern(&mut self.sample_key_ids, &mut self.sample_keys, k);
                self.last_keys = Some((k, id));
                id
            }
        }
    }

    /// The segment samples added here go to (the last one, unless it was absorbed).
    fn own_segment(&mut self) -> usize {
        match self.segments.last() {
            Some(s) if s.keys_map.is_none() => self.segments.len() - 1,
            _ => {
                self.segments.push(Segment::default());
                self.segments.len() - 1
            }
        }
    }

    /// Adds sample `s` with call chain `chain` (empty when not kept); `kept`: it passed
    /// the pid/tid/comm filters.
    pub(super) fn add(&mut self, profile: &Profile, s: &Sample, chain: &[Frame], kept: bool) {
        let keys = self.keys(SampleKeys {
            comm: s.comm,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            // Read only for a row without a frame; here every row has its place's mode.
            cpumode: CpuMode::Unknown,
            // Memory keys never take this path (see `SampleAggregator::only_for`).
            data_src: 0,
        });
        let seg = self.own_segment();
        let pid_of = |d: Option<u32>| match d.and_then(|d| profile.dsos.get(d as usize)) {
            Some(d) if d.kind == DsoKind::Anonymous => s.pid,
            _ => -1,
        };
        // The IP's place even for samples filtered out: its DSO is opened (and warned
        // about) as in the interned-chain path.
        let ip = self.place(Place {
            shown_addr: s.location.file_offset,
            file_offset: s.location.file_offset,
            dso: s.location.dso.unwrap_or(NONE),
            pid: pid_of(s.location.dso),
            cpumode: s.cpumode,
        });
        let start = self.segments[seg].seq.len();
        self.segments[seg].seq.push(ip);
        if kept {
            for f in chain {
                let p = self.place(Place {
                    shown_addr: f.addr,
                    file_offset: f.location.file_offset,
                    dso: f.location.dso.unwrap_or(NONE),
                    pid: pid_of(f.location.dso),
                    cpumode: f.cpumode,
                });
                self.segments[seg].seq.push(p);
            }
        }
        let seg = &mut self.segments[seg];
        seg.fold(keys, s.event, s.period, kept, start);
    }

    /// Appends the samples of `later` (which came after this one's) as its own segments:
    /// its places are appended (not merged: a place seen by both only resolves twice) and
    /// its sample keys renumbered. The report is the same as from adding its samples here.
    pub(super) fn absorb(&mut self, later: ChildrenSamples) {
        let base = self.places.len() as u32;
        self.places.extend_from_slice(&later.places);
        let keys_map: Vec<u32> = later.sample_keys.iter().map(|&k| self.keys(k)).collect();
        for seg in later.segments {
            let map = match &seg.keys_map {
                None => keys_map.clone(),
                Some(m) => m
                    .iter()
                    .map(|&k| keys_map.get(k as usize).copied().unwrap_or(NONE))
                    .collect(),
            };
            self.segments.push(Segment {
                place_base: seg.place_base + base,
                keys_map: Some(map),
                ..seg
            });
        }
    }

    /// Frees the lookup tables (all samples are in).
    pub(super) fn finish(&mut self) {
        self.place_ids = FxHashMap::default();
        self.sample_key_ids = FxHashMap::default();
        for s in &mut self.segments {
            s.by_hash = FxHashMap::default();
            s.entries.shrink_to_fit();
            s.seq.shrink_to_fit();
        }
    }
}

/// The id of `v` in `list` (its index), appending it when new.
fn intern<T: Copy + Eq + std::hash::Hash>(
    ids: &mut FxHashMap<T, u32>,
    list: &mut Vec<T>,
    v: T,
) -> u32 {
    let next = list.len() as u32;
    let id = *ids.entry(v).or_insert(next);
    if id == next {
        list.push(v);
    }
    id
}

/// Whether key `k` is read from the sample (else from the place).
fn is_sample_key(k: SortKey) -> bool {
    matches!(
        k,
        SortKey::Comm | SortKey::Pid | SortKey::Tid | SortKey::Cpu
    )
}

/// Rows by (sample part, place part) of their key: a dense table per sample part when
/// that fits, else a map.
struct RowTable {
    parts: usize,
    dense: Option<Vec<Vec<u32>>>,
    sparse: FxHashMap<u64, u32>,
}

impl RowTable {
    /// Dense tables up to this many cells (16 MB).
    const DENSE_CELLS: usize = 1 << 22;

    fn new(sample_parts: usize, place_parts: usize) -> RowTable {
        let dense = sample_parts
            .checked_mul(place_parts)
            .is_some_and(|n| n <= Self::DENSE_CELLS)
            .then(|| vec![Vec::new(); sample_parts]);
        RowTable {
            parts: place_parts,
            dense,
            sparse: FxHashMap::default(),
        }
    }

    /// The row of (`sp`, `pp`), or `next` (which the caller then creates).
    #[inline]
    fn get_or_insert(&mut self, sp: u32, pp: u32, next: u32) -> u32 {
        match &mut self.dense {
            Some(tables) => {
                let Some(t) = tables.get_mut(sp as usize) else {
                    return next;
                };
                if t.is_empty() {
                    *t = vec![NONE; self.parts];
                }
                match t.get_mut(pp as usize) {
                    Some(r) if *r == NONE => {
                        *r = next;
                        next
                    }
                    Some(r) => *r,
                    None => next,
                }
            }
            None => *self
                .sparse
                .entry(u64::from(sp) << 32 | u64::from(pp))
                .or_insert(next),
        }
    }
}

/// Interns each item's key words (made by `words`) to dense part ids; returns the ids
/// and how many distinct parts there are.
fn parts<T>(
    items: impl Iterator<Item = T>,
    width: usize,
    mut words: impl FnMut(&mut Vec<u64>, &T),
) -> (Vec<u32>, usize) {
    let mut index = RowIndex::new(width);
    let mut buf = Vec::with_capacity(width);
    let mut n = 0u32;
    let ids = items
        .map(|it| {
            buf.clear();
            words(&mut buf, &it);
            let id = index.get_or_insert(&buf, n);
            if id == n {
                n += 1;
            }
            id
        })
        .collect();
    (ids, n as usize)
}

/// The report of [`super::hotspots_aggregated`] for samples kept as places.
pub(super) fn report(
    cs: &ChildrenSamples,
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &HotspotOptions,
    has_callchains: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Hotspots, AnalysisError> {
    let counts = event_counts(
        profile,
        cs.segments.iter().flat_map(|s| &s.entries).map(|e| e.event),
    );
    let (totals, col_of) = event_columns(profile, &counts, &opts.events)?;
    let keys = &opts.keys;
    let kw = KeyWords::new(profile, opts.unknown_per_address);
    let queries: Vec<Query> = cs
        .places
        .iter()
        .map(|p| Query {
            dso: (p.dso != NONE).then_some(p.dso),
            file_offset: p.file_offset,
            pid: p.pid,
        })
        .collect();
    let need_symbols = keys.iter().any(|k| matches!(k, SortKey::Sym | SortKey::Ip));
    let need_src = keys
        .iter()
        .any(|k| matches!(k, SortKey::Srcline | SortKey::Srcfile));
    let (locs, src_strs) = resolve_locations(
        profile,
        symbolizer,
        &queries,
        &kw.dso_anon,
        need_symbols,
        need_src,
    );
    drop(queries);
    let parts = KeyParts::new(cs, &locs, &kw, keys);
    let (rows, rep) = accumulate(cs, &parts, totals, &col_of, opts.children, progress);
    let rep_of = |r: u32| -> RowRep<'_> {
        let (keys, place) = rep[r as usize];
        let p = &cs.places[place as usize];
        RowRep {
            sample: cs.sample_keys[keys as usize],
            loc: &locs[place as usize],
            frame: Some((p.shown_addr, p.cpumode)),
        }
    };
    let sampled_comms = || comm_names(profile, cs.sample_keys.iter().map(|k| k.comm));
    let (out, _) = finish_rows(
        profile,
        symbolizer,
        opts,
        has_callchains,
        &src_strs,
        rows,
        &rep_of,
        &sampled_comms,
    )?;
    Ok(out)
}

/// Row keys split in two: the words read from the sample and those read from the place (a
/// row is a pair of part ids, whatever the order of the keys). Each distinct part has an
/// id: per sample keys and per place, with how many there are.
struct KeyParts {
    sample_part: Vec<u32>,
    sample_parts: usize,
    place_part: Vec<u32>,
    place_parts: usize,
}

impl KeyParts {
    fn new(cs: &ChildrenSamples, locs: &[Loc], kw: &KeyWords, keys: &[SortKey]) -> KeyParts {
        let (sample_keys, place_keys): (Vec<SortKey>, Vec<SortKey>) =
            keys.iter().partition(|&&k| is_sample_key(k));
        let width = |ks: &[SortKey]| ks.iter().map(|&k| key_words(k)).sum::<usize>();
        let unused = SampleKeys {
            comm: 0,
            pid: 0,
            tid: 0,
            cpu: 0,
            cpumode: CpuMode::Unknown,
            data_src: 0,
        };
        let (place_part, place_parts) = parts(
            cs.places.iter().zip(locs),
            width(&place_keys),
            |buf, (p, l)| {
                for &k in &place_keys {
                    kw.push(buf, k, &unused, l, Some(p.shown_addr));
                }
            },
        );
        let no_loc = Loc::new(
            &Query {
                dso: None,
                file_offset: 0,
                pid: -1,
            },
            &Resolved::default(),
        );
        let (sample_part, sample_parts) =
            parts(cs.sample_keys.iter(), width(&sample_keys), |buf, s| {
                for &k in &sample_keys {
                    kw.push(buf, k, s, &no_loc, None);
                }
            });
        KeyParts {
            sample_part,
            sample_parts,
            place_part,
            place_parts,
        }
    }
}

/// The rows' values (and the event totals): every distinct path's samples added to the row
/// of its sampled IP, and with `children` to the rows its chain reaches, once per row.
/// Returns them with each row's representative (sample keys, place).
fn accumulate(
    cs: &ChildrenSamples,
    parts: &KeyParts,
    mut totals: Vec<EventTotals>,
    col_of: &[u32],
    children: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> (RowValues, Vec<(u32, u32)>) {
    let ncol = totals.len();
    let nv = VALUES;
    let mut table = RowTable::new(parts.sample_parts, parts.place_parts);
    // Representative of each row: (sample keys, place).
    let mut rep: Vec<(u32, u32)> = Vec::new();
    let mut values: Vec<u64> = Vec::new();
    let mut row = |keys: u32, place: u32, rep: &mut Vec<(u32, u32)>, values: &mut Vec<u64>| {
        let sp = parts.sample_part.get(keys as usize).copied().unwrap_or(0);
        let pp = parts.place_part.get(place as usize).copied().unwrap_or(0);
        let next = rep.len() as u32;
        let r = table.get_or_insert(sp, pp, next);
        if r == next {
            rep.push((keys, place));
            values.extend(std::iter::repeat_n(0, ncol * nv));
        }
        r as usize
    };
    let at = |r: usize, col: usize, v: usize| (r * ncol + col) * nv + v;
    let mut seen: Vec<usize> = Vec::with_capacity(128);
    let total = cs.len() as u64;
    let mut n = 0u64;
    for seg in &cs.segments {
        let base = seg.place_base;
        for (e, keys, places) in seg.entries() {
            if n.is_multiple_of(65536) {
                progress(n, total);
            }
            n += 1;
            let Some(&col) = col_of.get(usize::from(e.event)) else {
                continue;
            };
            if col == NONE {
                continue;
            }
            let col = col as usize;
            let samples = u64::from(e.samples);
            totals[col].samples += samples;
            totals[col].period += e.period;
            if !e.kept {
                continue;
            }
            let Some((&ip, chain)) = places.split_first() else {
                continue;
            };
            let r = row(keys, ip + base, &mut rep, &mut values);
            values[at(r, col, V_SAMPLES)] += samples;
            values[at(r, col, V_PERIOD)] += e.period;
            values[at(r, col, V_CH_SAMPLES)] += samples;
            values[at(r, col, V_CH_PERIOD)] += e.period;
            if children {
                seen.clear();
                seen.push(r);
                for &p in super::children_window(chain) {
                    let r = row(keys, p + base, &mut rep, &mut values);
                    if seen.contains(&r) {
                        continue;
                    }
                    seen.push(r);
                    values[at(r, col, V_CH_SAMPLES)] += samples;
                    values[at(r, col, V_CH_PERIOD)] += e.period;
                }
            }
        }
    }
    progress(total, total);
    drop(table);
    let nrows = rep.len();
    let rows = RowValues {
        totals,
        values,
        nv,
        nrows,
    };
    (rows, rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `places` as one sample's and folds it; returns the segment's entry count.
    fn add(seg: &mut Segment, keys: u32, kept: bool, places: &[u32]) -> usize {
        let start = seg.seq.len();
        seg.seq.extend_from_slice(places);
        seg.fold(keys, 0, 10, kept, start);
        seg.entries.len()
    }

    #[test]
    fn equal_samples_fold_into_one_entry_wherever_they_come() {
        let mut seg = Segment::default();
        for _ in 0..3 {
            add(&mut seg, 0, true, &[1, 2, 3]);
            add(&mut seg, 0, true, &[4, 2]);
            add(&mut seg, 0, true, &[4, 2]);
        }
        // Memory follows the distinct paths: each stored once.
        assert_eq!(seg.seq, [1, 2, 3, 4, 2]);
        let counts: Vec<(u32, u64)> = seg.entries.iter().map(|e| (e.samples, e.period)).collect();
        assert_eq!(counts, [(3, 30), (6, 60)]);
    }

    #[test]
    fn samples_differing_in_keys_filter_or_path_stay_apart() {
        let mut seg = Segment::default();
        assert_eq!(add(&mut seg, 0, true, &[1, 2]), 1);
        assert_eq!(add(&mut seg, 1, true, &[1, 2]), 2);
        assert_eq!(add(&mut seg, 0, false, &[1, 2]), 3);
        assert_eq!(add(&mut seg, 0, true, &[1]), 4);
        assert_eq!(add(&mut seg, 0, true, &[1, 2, 5]), 5);
        // A prefix of a stored path is its own path; the first one folds again.
        assert_eq!(add(&mut seg, 0, true, &[1, 2]), 5);
        assert_eq!(seg.entries[0].samples, 2);
        let ends: Vec<u64> = seg.entries.iter().map(|e| e.start).collect();
        assert_eq!(ends, [0, 2, 4, 6, 7]);
    }
}
