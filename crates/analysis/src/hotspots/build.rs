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

    let kw = KeyWords::new(profile, opts.unknown_per_address);
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
    let sampled_comms = || comm_names(profile, aggs.iter().map(|s| s.comm));
    let (mut out, order) = finish_rows(
        profile,
        symbolizer,
        opts,
        has_callchains,
        &src_strs,
        rows,
        &rep_of,
        &sampled_comms,
    )?;
    drop(rep);

    // 4. Call graphs for the shown rows.
    if use_chains && opts.call_graph != CallGraphMode::None && !order.is_empty() {
        let mut shown: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, &r) in order.iter().enumerate() {
            shown.insert(r, i);
        }
        // The root of each shown row's trie per event column (created on first use).
        let mut tries = CallTries::default();
        let mut roots: Vec<u32> = vec![NO_NODE; order.len() * ncol];
        let mut path: Vec<(u64, u64, u32)> = Vec::new();
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
            let mut cut = false;
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
                let root = &mut roots[i * ncol + col as usize];
                if *root == NO_NODE {
                    *root = tries.root();
                }
                tries.add(*root, &path, s.period, s.samples);
            }
            out.cut_call_paths += u64::from(cut);
        }
        for (i, row_roots) in roots.chunks(ncol.max(1)).enumerate() {
            let used = |r: u32| r != NO_NODE && tries.samples(r) > 0;
            if !row_roots.iter().any(|&r| used(r)) {
                continue;
            }
            let row = Row { h: &out, i };
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
                graphs[c] = Some(tries.to_node(r, name.clone(), threshold, &|fi| {
                    frame_name(profile, symbolizer, &locs[frame_loc[fi as usize] as usize])
                }));
            }
            out.call_graphs.push((i as u32, graphs));
        }
    }
    Ok(out)
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
