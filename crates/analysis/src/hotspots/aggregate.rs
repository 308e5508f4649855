//! Folding samples while they are read: identical samples counted once, call chains
//! interned, and a flat report's packed-key index.

use super::*;

/// Samples folded by everything [`hotspots`] looks at: equal (event, pid, tid, cpu, comm,
/// cpumode, ip, location, call chain) samples become one entry with their count and summed
/// period, so memory grows with distinct places and chains, not with samples.
#[derive(Clone)]
pub(super) struct Agg {
    pub(super) event: EventId,
    pub(super) cpumode: CpuMode,
    /// PERF_RECORD_MISC_EXACT_IP (de-skid never moves these).
    pub(super) exact: bool,
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) cpu: u32,
    pub(super) comm: StrId,
    pub(super) ip: u64,
    pub(super) location: Location,
    /// Range into [`SampleAggregator::chain_frames`] (empty without chains).
    pub(super) callchain: std::ops::Range<u32>,
    /// How many samples were folded here.
    pub(super) samples: u64,
    /// Their summed period.
    pub(super) period: u64,
    /// PERF_SAMPLE_DATA_SRC, kept only for memory sort keys (else 0).
    pub(super) data_src: u64,
}

/// The sample fields a row's key texts read (comm, pid, tid, cpu, and the mode of the
/// sampled IP).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct SampleKeys {
    pub(super) comm: StrId,
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) cpu: u32,
    pub(super) cpumode: CpuMode,
    /// PERF_SAMPLE_DATA_SRC (memory keys only, else 0).
    pub(super) data_src: u64,
}

impl Agg {
    /// The entry of one sample `s` with call chain `callchain`.
    pub(super) fn of_sample(s: &Sample, callchain: std::ops::Range<u32>) -> Agg {
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

    pub(super) fn sample_keys(&self) -> SampleKeys {
        SampleKeys {
            comm: self.comm,
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            cpumode: self.cpumode,
            data_src: self.data_src,
        }
    }

    pub(super) fn key(&self) -> AggKey {
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
pub(super) type AggKey = (
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

/// Folds samples as they are read (see [`culprit_decode::Reader::fold`]) into the
/// compact form [`hotspots_aggregated`] reports from: identical samples are counted once,
/// call chains are interned, so memory scales with distinct addresses and chains.
#[derive(Default)]
pub struct SampleAggregator {
    pub(super) with_chains: bool,
    pub(super) has_callchains: bool,
    pub(super) filters: Filters,
    pub(super) aggs: Vec<Agg>,
    /// Hash of an entry's [`AggKey`] -> the entry (first one with that hash; a colliding,
    /// different key gets a new entry, which is only less compact, never wrong). Keeping
    /// the hash, not the key, matters when chains are mostly distinct (no frame pointers).
    pub(super) index: FxHashMap<u64, u32>,
    /// Distinct call-chain frames.
    pub(super) frames: Vec<Frame>,
    /// (addr, cpumode, dso, file offset, pid for per-process DSOs else -1) -> frame id.
    pub(super) frame_ids: FxHashMap<(u64, CpuMode, Option<DsoId>, u64, i32), u32>,
    /// Interned call chains, back to back, as indices into `frames`.
    pub(super) chain_frames: Vec<u32>,
    /// Chain hash -> its range in `chain_frames` (first chain with that hash; a colliding,
    /// different chain is stored again, which is only less compact, never wrong).
    pub(super) chains: FxHashMap<u64, (u32, u32)>,
    /// Scratch: the frame ids of the chain being added.
    pub(super) scratch: Vec<u32>,
    /// The sample fields the report reads ([`SampleAggregator::only_for`]); `None`: all.
    pub(super) keep: Option<KeptFields>,
    /// The entry the last sample folded into (a hint: checked by key before use).
    pub(super) last: u32,
    /// Flat reports (`keep` set): the entries' index by their packed key.
    pub(super) flat: FlatIndex,
    /// Children reports without call graphs keep samples as places instead (see
    /// [`SampleAggregator::only_for`]).
    pub(super) children: Option<children::ChildrenSamples>,
    /// perf's `--mem-mode` (a memory sort key): entries keep the sample's data_src and a
    /// sample weighs its PERF_SAMPLE_WEIGHT (1 when 0) instead of its period.
    pub(super) mem_mode: bool,
}

/// The index of a flat report's entries (see [`SampleAggregator::only_for`]): their keys
/// packed into four words ([`FlatIndex::key`]) in an open-addressed table. Written by hand
/// because a flat report folds every sample through it: hashing the packed key once and
/// comparing four words costs a fraction of a general map's generic key and hasher.
/// While it is live, the entries' counts are here, next to their keys (one line a sample
/// touches instead of two): [`FlatIndex::sync`] copies them into the entries.
#[derive(Default)]
pub(super) struct FlatIndex {
    /// The packed key and counts of each entry, in entry order.
    pub(super) keys: Vec<FlatEntry>,
    /// Entry number + 1 per slot (0: empty); a power of two long, at most half full.
    pub(super) slots: Vec<u32>,
}

/// An entry of a [`FlatIndex`]: its key and how many samples of what summed period it
/// folded so far.
#[derive(Clone, Copy)]
pub(super) struct FlatEntry {
    pub(super) key: [u64; 4],
    pub(super) samples: u64,
    pub(super) period: u64,
}

/// Whether two packed keys are equal (word by word: the array comparison loaded the key
/// just stored as wider vectors, which stalled on store forwarding).
#[inline(always)]
pub(super) fn same_key(a: &[u64; 4], b: &[u64; 4]) -> bool {
    ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0
}

/// The fields of an entry a flat report's key holds (the others are cleared by
/// [`KeptFields::apply`]).
pub(super) struct FlatFields {
    pub(super) event: EventId,
    pub(super) cpumode: CpuMode,
    pub(super) cpu: u32,
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) comm: StrId,
    pub(super) location: Location,
}

impl FlatIndex {
    /// An entry's key (what [`Agg::key`] holds once [`KeptFields::apply`] cleared the IP,
    /// exactness and chain) in four words, one-to-one: the DSO's presence has its own bit.
    #[inline(always)]
    pub(super) fn key(a: &Agg) -> [u64; 4] {
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
    pub(super) fn pack(f: FlatFields) -> [u64; 4] {
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
    pub(super) fn find(&self, k: &[u64; 4]) -> Result<u32, usize> {
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
    pub(super) fn reindex(&mut self, aggs: &[Agg]) {
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
    pub(super) fn live(&self, aggs: &[Agg]) -> bool {
        !self.keys.is_empty() && self.keys.len() == aggs.len()
    }

    /// Copies the counts into `aggs` (the entries it indexes).
    pub(super) fn sync(&self, aggs: &mut [Agg]) {
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
    pub(super) fn insert(&mut self, k: [u64; 4], samples: u64, period: u64, slot: usize) {
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
    pub(super) fn rehash(&mut self) {
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
pub(super) struct KeptFields {
    pub(super) comm: bool,
    pub(super) pid: bool,
    pub(super) tid: bool,
    pub(super) cpu: bool,
    /// Location and cpumode (dso, sym, srcline, srcfile, ip keys and the dso filter).
    pub(super) location: bool,
}

impl KeptFields {
    /// What the report of `keys` reads: their row keys, key texts and filters (see
    /// `build_key`, `keep_sample`, `dso_filter_ok` and `TextCache::key_value`).
    pub(super) fn for_keys(keys: &[SortKey], filters: &Filters) -> KeptFields {
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
    pub(super) fn flat_key(&self, s: &Sample) -> [u64; 4] {
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

    pub(super) fn apply(&self, a: &mut Agg) {
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
    /// (the next share of [`culprit_decode::Reader::fold_parallel`]), whose profile's ids are
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
        // Each of its frames and chains is interned here once (the first entry that has
        // it; a frame's id stands for one pid where its object is per-process), not once
        // per entry: on files of mostly distinct chains, re-interning every entry's chain
        // frame by frame cost as much as reading the share.
        let mut frame_map: Vec<u32> = vec![u32::MAX; later.frames.len()];
        let mut chain_map: FxHashMap<u32, (u32, u32)> = FxHashMap::default();
        let mut ids: Vec<u32> = Vec::new();
        for mut e in later.aggs {
            let (start, end) = if e.callchain.is_empty() {
                (0, 0)
            } else if let Some(&same) = chain_map.get(&e.callchain.start) {
                same
            } else {
                ids.clear();
                let theirs = later
                    .chain_frames
                    .get(e.callchain.start as usize..e.callchain.end as usize)
                    .unwrap_or(&[]);
                for &i in theirs {
                    let (Some(mapped), Some(fr)) =
                        (frame_map.get_mut(i as usize), later.frames.get(i as usize))
                    else {
                        continue;
                    };
                    if *mapped == u32::MAX {
                        *mapped = self.intern_frame(profile, e.pid, fr);
                    }
                    ids.push(*mapped);
                }
                let interned = self.intern_ids(&ids);
                chain_map.insert(e.callchain.start, interned);
                interned
            };
            e.callchain = start..end;
            self.fold(e);
        }
    }

    /// Adds `e`'s samples to the entry with its key, or appends it.
    #[inline]
    pub(super) fn fold(&mut self, e: Agg) {
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
    pub(super) fn add_flat(&mut self, keep: KeptFields, s: &Sample) {
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
    pub(super) fn fold_flat(
        &mut self,
        key: [u64; 4],
        samples: u64,
        period: u64,
        make: impl FnOnce() -> Agg,
    ) {
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

    pub(super) fn intern_chain(
        &mut self,
        profile: &Profile,
        pid: i32,
        chain: &[Frame],
    ) -> (u32, u32) {
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        ids.extend(chain.iter().map(|fr| self.intern_frame(profile, pid, fr)));
        let interned = self.intern_ids(&ids);
        self.scratch = ids;
        interned
    }

    /// The id of frame `fr` of a chain of process `pid`, added when new.
    #[inline]
    fn intern_frame(&mut self, profile: &Profile, pid: i32, fr: &Frame) -> u32 {
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
        id
    }

    /// The range of `chain_frames` holding the frame ids `ids`, added when new.
    fn intern_ids(&mut self, ids: &[u32]) -> (u32, u32) {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        h.write_usize(ids.len());
        for &id in ids {
            h.write_u32(id);
        }
        let hash = h.finish();
        if let Some(&(a, b)) = self.chains.get(&hash) {
            if self.chain_frames.get(a as usize..b as usize) == Some(ids) {
                return (a, b);
            }
        }
        let a = self.chain_frames.len() as u32;
        self.chain_frames.extend_from_slice(ids);
        let b = self.chain_frames.len() as u32;
        self.chains.entry(hash).or_insert((a, b));
        (a, b)
    }
}

impl culprit_decode::Fold for SampleAggregator {
    fn add(&mut self, profile: &Profile, sample: &Sample) {
        SampleAggregator::add(self, profile, sample);
    }

    fn split(&self) -> Self {
        self.empty_like()
    }

    fn merge(&mut self, later: Self, profile: &Profile) {
        self.absorb(later, profile);
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
