//! The interned-chain report: rows accumulated from folded samples, and call graphs.

use super::*;

/// [`hotspots`] over samples already folded by a [`SampleAggregator`] (e.g. during
/// [`culprit_decode::Reader::fold`]); `profile` gives the events, strings and DSOs.
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
    let folded = Folded {
        profile,
        aggs,
        frames: &agg.frames,
        chain_frames: &agg.chain_frames,
        filters: &opts.filters,
    };
    let counts = event_counts(profile, aggs.iter().map(|s| s.event));
    let (totals, col_of) = event_columns(profile, &counts, &opts.events)?;
    let ncol = totals.len();
    let has_callchains = agg.has_callchains;
    let use_chains = (opts.children || opts.call_graph != CallGraphMode::None)
        && has_callchains
        && agg.with_chains;
    let graphs = use_chains && opts.call_graph != CallGraphMode::None;
    let total_work = aggs.len() as u64 * 2;
    let kw = KeyWords::new(profile, opts.unknown_per_address);

    // 1. Unique locations of sampled IPs (and chain frames when needed).
    let located = locate(&folded, symbolizer, opts, &kw, use_chains, &mut |n| {
        progress(n / 2, total_work)
    });

    // 2. Aggregate.
    let rowing = Rowing {
        folded: &folded,
        located: &located,
        kw: &kw,
        keys: &opts.keys,
        col_of: &col_of,
    };
    let nv = if opts.deskid { VALUES_DESKID } else { VALUES };
    let (acc, totals) = rowing.accumulate(totals, nv, use_chains && opts.children, &mut |n| {
        progress(total_work / 2 + n / 2, total_work)
    });
    progress(total_work, total_work);
    let Acc {
        index: row_index,
        rep,
        values: acc_values,
        ..
    } = acc;

    // The row index is needed again only for call graphs: free it before the rows exist
    // (peak memory with hundreds of thousands of rows).
    let row_index = if graphs {
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
            (located.sample(si), None)
        } else if fi == DESKID {
            (
                &located.locs[located.deskid_loc[si as usize] as usize],
                None,
            )
        } else {
            let fr = folded.frames.get(fi as usize);
            (located.frame(fi), fr.map(|f| (f.addr, f.cpumode)))
        };
        RowRep {
            sample: s.sample_keys(),
            loc,
            frame,
        }
    };
    let sampled_comms = || comm_names(profile, aggs.iter().map(|s| s.comm));
    let (mut out, order) = finish_rows(
        profile,
        symbolizer,
        opts,
        has_callchains,
        &located.src_strs,
        rows,
        &rep_of,
        &sampled_comms,
    )?;
    drop(rep);

    // 3. Call graphs for the shown rows.
    if graphs && !order.is_empty() {
        let tries = rowing.call_tries(opts, &row_index, &order, ncol, &mut out);
        tries.into_graphs(&mut out, opts, ncol, &|fi| {
            frame_name(profile, symbolizer, located.frame(fi))
        });
    }
    Ok(out)
}

/// The folded samples of a report, with their call chains' frames and the filters that
/// decide which of them count in rows.
struct Folded<'a> {
    profile: &'a Profile,
    aggs: &'a [Agg],
    frames: &'a [Frame],
    chain_frames: &'a [u32],
    filters: &'a Filters,
}

impl Folded<'_> {
    /// The frame indexes of `s`'s call chain.
    fn chain_of(&self, s: &Agg) -> &[u32] {
        self.chain_frames
            .get(s.callchain.start as usize..s.callchain.end as usize)
            .unwrap_or(&[])
    }

    /// Whether `s` passes the pid/tid/comm filters (else it counts in the totals only).
    fn keeps(&self, s: &Agg) -> bool {
        let f = self.filters;
        (f.pids.is_empty() || f.pids.contains(&s.pid))
            && (f.tids.is_empty() || f.tids.contains(&s.tid))
            && (f.comms.is_empty() || f.comms.iter().any(|c| c == self.profile.str(s.comm)))
    }
}

/// Every entry's sampled location (and de-skidded one), and every chain frame's, resolved
/// once each: indexes into `locs`.
struct Located {
    locs: Vec<Loc>,
    src_strs: Vec<String>,
    sample_loc: Vec<u32>,
    /// Per frame (empty without chains).
    frame_loc: Vec<u32>,
    /// Per entry, with `--deskid` (else empty).
    deskid_loc: Vec<u32>,
}

impl Located {
    fn sample(&self, entry: u32) -> &Loc {
        &self.locs[self.sample_loc[entry as usize] as usize]
    }

    fn frame(&self, frame: u32) -> &Loc {
        &self.locs[self.frame_loc[frame as usize] as usize]
    }
}

/// Interns the distinct locations of the sampled IPs (their de-skidded culprits with
/// `--deskid`, and chain frames with `use_chains`) and resolves each once. `progress` gets
/// the entries done.
fn locate(
    folded: &Folded,
    symbolizer: &mut Symbolizer,
    opts: &HotspotOptions,
    kw: &KeyWords,
    use_chains: bool,
    progress: &mut dyn FnMut(u64),
) -> Located {
    let (profile, aggs, frames) = (folded.profile, folded.aggs, folded.frames);
    let dso_anon = &kw.dso_anon;
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
            for &fi in folded.chain_of(s) {
                if let Some(f) = frames.get(fi as usize) {
                    frame_loc[fi as usize] =
                        intern_loc(query(f.location.dso, f.location.file_offset, s.pid));
                }
            }
        }
        if n % 65536 == 0 {
            progress(n as u64);
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
    let keys = &opts.keys;
    let need_symbols = keys.iter().any(|k| matches!(k, SortKey::Sym | SortKey::Ip))
        || (use_chains && opts.call_graph != CallGraphMode::None);
    let need_src = keys
        .iter()
        .any(|k| matches!(k, SortKey::Srcline | SortKey::Srcfile));
    let (locs, src_strs) = resolve_locations(
        profile,
        symbolizer,
        &queries,
        dso_anon,
        need_symbols,
        need_src,
    );
    Located {
        locs,
        src_strs,
        sample_loc,
        frame_loc,
        deskid_loc,
    }
}

/// What turns located entries into rows: their key words and event columns.
struct Rowing<'a> {
    folded: &'a Folded<'a>,
    located: &'a Located,
    kw: &'a KeyWords,
    keys: &'a [SortKey],
    col_of: &'a [u32],
}

impl Rowing<'_> {
    /// The row key of entry `s` at location `l` into `buf` (`raw_addr`: a chain frame's
    /// run-time address).
    fn key(&self, buf: &mut Vec<u64>, s: &Agg, l: &Loc, raw_addr: Option<u64>) {
        buf.clear();
        let sk = s.sample_keys();
        for &k in self.keys {
            self.kw.push(buf, k, &sk, l, raw_addr);
        }
    }

    /// The event column of `s` (`None`: an event the report does not show).
    fn column(&self, s: &Agg) -> Option<usize> {
        self.col_of
            .get(usize::from(s.event))
            .filter(|&&c| c != NONE)
            .map(|&c| c as usize)
    }

    /// The rows: every entry's values added to the row of its key (and of its de-skidded
    /// location; with `children`, to the rows its chain frames reach, once per row), and
    /// the event totals. `progress` gets the entries done.
    fn accumulate(
        &self,
        mut totals: Vec<EventTotals>,
        nv: usize,
        children: bool,
        progress: &mut dyn FnMut(u64),
    ) -> (Acc, Vec<EventTotals>) {
        let (folded, located) = (self.folded, self.located);
        let ncol = totals.len();
        let mut acc = Acc {
            nv: ncol * nv,
            index: RowIndex::new(self.keys.iter().map(|&k| key_words(k)).sum()),
            rep: Vec::new(),
            values: Vec::new(),
        };
        let at = |r: u32, col: usize, v: usize| (r as usize * ncol + col) * nv + v;
        let mut buf: Vec<u64> = Vec::with_capacity(self.keys.len() * 3);
        let mut seen: Vec<u32> = Vec::with_capacity(128);
        for (n, s) in folded.aggs.iter().enumerate() {
            if n % 65536 == 0 {
                progress(n as u64);
            }
            let Some(col) = self.column(s) else {
                continue;
            };
            totals[col].samples += s.samples;
            totals[col].period += s.period;
            if !folded.keeps(s) {
                continue;
            }
            let sample_loc = located.sample_loc[n];
            self.key(&mut buf, s, &located.locs[sample_loc as usize], None);
            let r = acc.row(&buf, (n as u32, NONE));
            acc.values[at(r, col, V_SAMPLES)] += s.samples;
            acc.values[at(r, col, V_PERIOD)] += s.period;
            acc.values[at(r, col, V_CH_SAMPLES)] += s.samples;
            acc.values[at(r, col, V_CH_PERIOD)] += s.period;
            if let Some(&d) = located.deskid_loc.get(n) {
                let r = if d == sample_loc {
                    r
                } else {
                    self.key(&mut buf, s, &located.locs[d as usize], None);
                    acc.row(&buf, (n as u32, DESKID))
                };
                acc.values[at(r, col, V_DS_SAMPLES)] += s.samples;
                acc.values[at(r, col, V_DS_PERIOD)] += s.period;
            }
            if children {
                seen.clear();
                seen.push(r);
                for &fi in children_window(folded.chain_of(s)) {
                    let Some(fr) = folded.frames.get(fi as usize) else {
                        continue;
                    };
                    self.key(&mut buf, s, located.frame(fi), Some(fr.addr));
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
        (acc, totals)
    }

    /// The shown rows entry `n` reaches, each with where in its chain it is first met
    /// (`usize::MAX`: the sampled IP), into `scratch.hits`.
    fn shown_hits(
        &self,
        n: usize,
        children: bool,
        row_index: &RowIndex,
        shown: &FxHashMap<u32, usize>,
        scratch: &mut HitScratch,
    ) {
        let (folded, located) = (self.folded, self.located);
        let s = &folded.aggs[n];
        let chain = folded.chain_of(s);
        let HitScratch { buf, seen, hits } = scratch;
        seen.clear();
        hits.clear();
        self.key(buf, s, &located.locs[located.sample_loc[n] as usize], None);
        if let Some(r) = row_index.get(buf) {
            seen.push(r);
            if let Some(&i) = shown.get(&r) {
                hits.push((i, usize::MAX));
            }
        }
        if !children {
            return;
        }
        let skipped = chain.len() - children_window(chain).len();
        for (p, &fi) in chain.iter().enumerate().skip(skipped) {
            let Some(fr) = folded.frames.get(fi as usize) else {
                continue;
            };
            self.key(buf, s, located.frame(fi), Some(fr.addr));
            let Some(r) = row_index.get(buf) else {
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

    /// The call-graph tries of the shown rows (`order`), per event column: every kept
    /// entry's callers (or callees, caller order) below each shown row it reaches. Counts
    /// the paths cut at perf's `--max-stack` into `out`.
    fn call_tries(
        &self,
        opts: &HotspotOptions,
        row_index: &RowIndex,
        order: &[u32],
        ncol: usize,
        out: &mut Hotspots,
    ) -> RowTries {
        let (folded, located) = (self.folded, self.located);
        let frames = folded.frames;
        let shown: FxHashMap<u32, usize> = order.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        // The root of each shown row's trie per event column (created on first use).
        let mut tries = CallTries::default();
        let mut roots: Vec<u32> = vec![NO_NODE; order.len() * ncol];
        let mut path: Vec<(u64, u64, u32)> = Vec::new();
        let mut scratch = HitScratch::default();
        let frame_sym = |fi: u32, fr: &Frame| -> (u64, u64) {
            let l = located.frame(fi);
            match l.symbol() {
                Some(id) => (
                    1 | self.kw.dso_key(l) << 1,
                    u64::from(id.table) << 32 | u64::from(id.index),
                ),
                None => (self.kw.dso_key(l) << 1, fr.addr),
            }
        };
        for (n, s) in folded.aggs.iter().enumerate() {
            let Some(col) = self.column(s) else {
                continue;
            };
            if !folded.keeps(s) {
                continue;
            }
            let chain: &[u32] = folded.chain_of(s);
            self.shown_hits(n, opts.children, row_index, &shown, &mut scratch);
            // Callers of a row: the frames after its position (skip the sampled IP's own
            // frame, which the kernel puts first).
            let ip_first = chain
                .first()
                .and_then(|&fi| frames.get(fi as usize))
                .is_some_and(|fr| fr.addr == s.ip);
            let mut cut = false;
            for &(i, p) in &scratch.hits {
                let start = if p == usize::MAX {
                    usize::from(ip_first)
                } else {
                    p + 1
                };
                path.clear();
                path.extend(chain[start.min(chain.len())..].iter().filter_map(|&fi| {
                    frames.get(fi as usize).map(|fr| {
                        let (a, b) = frame_sym(fi, fr);
                        (a, b, fi)
                    })
                }));
                if opts.call_graph == CallGraphMode::Caller {
                    path.reverse();
                }
                // perf's --max-stack: a tree (and its JSON) deeper than a real stack only
                // comes from a corrupt or runaway chain; from the outermost caller (caller
                // order) or the nearest one (callee order).
                if path.len() > PERF_MAX_STACK {
                    path.truncate(PERF_MAX_STACK);
                    cut = true;
                }
                let root = &mut roots[i * ncol + col];
                if *root == NO_NODE {
                    *root = tries.root();
                }
                tries.add(*root, &path, s.period, s.samples);
            }
            out.cut_call_paths += u64::from(cut);
        }
        RowTries { tries, roots }
    }
}

/// [`Rowing::shown_hits`]'s buffers, reused from entry to entry.
#[derive(Default)]
struct HitScratch {
    buf: Vec<u64>,
    seen: Vec<u32>,
    hits: Vec<(usize, usize)>,
}

/// The call-graph tries of the shown rows: the root of row `i`'s trie for event column `c`
/// at `roots[i * ncol + c]` (`NO_NODE`: none).
struct RowTries {
    tries: CallTries,
    roots: Vec<u32>,
}

impl RowTries {
    /// The call graphs of every shown row with samples in its tries, into `out`
    /// (frames named by `name_of`; branches under `--call-graph`'s threshold left out).
    fn into_graphs(
        self,
        out: &mut Hotspots,
        opts: &HotspotOptions,
        ncol: usize,
        name_of: &dyn Fn(u32) -> String,
    ) {
        let tries = &self.tries;
        for (i, row_roots) in self.roots.chunks(ncol.max(1)).enumerate() {
            let used = |r: u32| r != NO_NODE && tries.samples(r) > 0;
            if !row_roots.iter().any(|&r| used(r)) {
                continue;
            }
            let row = Row { h: out, i };
            let name = match row.keys().find(|k| k.key == SortKey::Sym) {
                Some(k) => row.text(&k).to_string(),
                None => row
                    .keys()
                    .map(|k| row.text(&k))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            let mut graphs: Vec<Option<CallNode>> = vec![None; ncol];
            for (c, &r) in row_roots.iter().enumerate() {
                if !used(r) {
                    continue;
                }
                let threshold =
                    (opts.call_graph_threshold / 100.0 * out.events[c].period as f64) as u64;
                graphs[c] = Some(tries.to_node(r, name.clone(), threshold, name_of));
            }
            out.call_graphs.push((i as u32, graphs));
        }
    }
}

/// No node (an empty link of [`CallTries`]).
const NO_NODE: u32 = u32::MAX;

/// One node of [`CallTries`]: its counts, the frame that names it, and its links (children
/// as a list: first child, next sibling).
#[derive(Clone, Copy)]
struct TrieNode {
    samples: u64,
    period: u64,
    /// Representative frame index (for the name).
    frame: u32,
    first_child: u32,
    next_sibling: u32,
}

/// The call-graph tries of every shown row and event under construction, in one arena:
/// a node's child is found by (parent, frame key) in one map, instead of a map per node
/// (which allocated and rehashed millions of small tables on large `-g` reports).
#[derive(Default)]
pub(super) struct CallTries {
    nodes: Vec<TrieNode>,
    child: FxHashMap<(u32, u64, u64), u32>,
}

impl CallTries {
    fn push(&mut self, frame: u32, next_sibling: u32) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(TrieNode {
            samples: 0,
            period: 0,
            frame,
            first_child: NO_NODE,
            next_sibling,
        });
        id
    }

    /// A new, empty root.
    pub(super) fn root(&mut self) -> u32 {
        self.push(0, NO_NODE)
    }

    /// Samples counted at node `id`.
    pub(super) fn samples(&self, id: u32) -> u64 {
        self.nodes[id as usize].samples
    }

    /// Adds `samples` samples of `period` along `path` (frame keys and frame index) below
    /// root `root`.
    pub(super) fn add(&mut self, root: u32, path: &[(u64, u64, u32)], period: u64, samples: u64) {
        let mut node = root;
        self.bump(node, period, samples);
        for &(a, b, fi) in path {
            node = match self.child.get(&(node, a, b)) {
                Some(&id) => id,
                None => {
                    let first = self.nodes[node as usize].first_child;
                    let id = self.push(fi, first);
                    self.nodes[node as usize].first_child = id;
                    self.child.insert((node, a, b), id);
                    id
                }
            };
            self.bump(node, period, samples);
        }
    }

    fn bump(&mut self, id: u32, period: u64, samples: u64) {
        let n = &mut self.nodes[id as usize];
        n.samples += samples;
        n.period += period;
    }

    /// The tree below node `id` (named `name`), children by period, those under
    /// `threshold` left out.
    pub(super) fn to_node(
        &self,
        id: u32,
        name: String,
        threshold: u64,
        name_of: &dyn Fn(u32) -> String,
    ) -> CallNode {
        let n = &self.nodes[id as usize];
        let mut kids: Vec<u32> = Vec::new();
        let mut k = n.first_child;
        while k != NO_NODE {
            let kid = &self.nodes[k as usize];
            if kid.period >= threshold.max(1) {
                kids.push(k);
            }
            k = kid.next_sibling;
        }
        let node = |k: &u32| &self.nodes[*k as usize];
        kids.sort_by(|a, b| {
            (node(b).period.cmp(&node(a).period)).then(node(a).frame.cmp(&node(b).frame))
        });
        CallNode {
            name,
            period: n.period,
            samples: n.samples,
            children: kids
                .into_iter()
                .map(|k| self.to_node(k, name_of(node(&k).frame), threshold, name_of))
                .collect(),
        }
    }
}

pub(super) fn dso_short(profile: &Profile, dso: Option<DsoId>) -> String {
    dso.and_then(|d| profile.dsos.get(d as usize))
        .map(|d| d.short_name.clone())
        .unwrap_or_else(|| "[unknown]".to_string())
}

/// A call-graph frame's name: its symbol, else `[unknown] DSO+0xOFFSET` when the offset is
/// a file offset (the form `annotate --addr` takes), else (no mapping, anonymous/JIT code,
/// the kernel: the offset is the run-time address) perf's raw `[unknown] 0xADDRESS`.
pub(super) fn frame_name(profile: &Profile, symbolizer: &Symbolizer, l: &Loc) -> String {
    if let Some(s) = l.symbol().and_then(|id| symbolizer.symbol(id)) {
        return s.name.to_string();
    }
    match l.dso().and_then(|d| profile.dsos.get(d as usize)) {
        Some(d) if has_file_offsets(profile, l.dso()) => {
            format!("[unknown] {}+{:#x}", d.short_name, l.file_offset)
        }
        _ => format!("[unknown] {:#x}", l.file_offset),
    }
}

/// Whether locations in `dso` hold real file offsets: not for no mapping, the kernel and
/// anonymous/JIT code, whose "offset" is the run-time address (docs of `Location`).
pub(super) fn has_file_offsets(profile: &Profile, dso: Option<DsoId>) -> bool {
    dso.and_then(|d| profile.dsos.get(d as usize))
        .is_some_and(|d| {
            matches!(
                d.kind,
                culprit_decode::model::DsoKind::Elf
                    | culprit_decode::model::DsoKind::KernelModule
                    | culprit_decode::model::DsoKind::Vdso
            )
        })
}
