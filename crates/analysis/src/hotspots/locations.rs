//! Where samples are: resolved locations, the report's event columns, and the words that
//! key a row.

use super::*;

/// A resolved location, shared by every sample and frame at the same place (compact:
/// a children report resolves hundreds of thousands).
#[derive(Clone, Copy)]
pub(super) struct Loc {
    /// Symbol table and index (`NONE`: no symbol).
    pub(super) sym_table: u32,
    pub(super) sym_index: u32,
    /// DSO (`NONE`: no mapping).
    pub(super) dso: u32,
    pub(super) srcline: u32,
    pub(super) srcfile: u32,
    pub(super) file_offset: u64,
    /// SVMA (`u64::MAX`: unknown).
    pub(super) svma: u64,
}

impl Loc {
    pub(super) fn new(q: &Query, r: &Resolved) -> Loc {
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
    pub(super) fn symbol(&self) -> Option<culprit_symbols::SymbolId> {
        (self.sym_table != NONE).then_some(culprit_symbols::SymbolId {
            table: self.sym_table,
            index: self.sym_index,
        })
    }
    pub(super) fn svma(&self) -> Option<u64> {
        (self.svma != u64::MAX).then_some(self.svma)
    }
    pub(super) fn dso(&self) -> Option<DsoId> {
        (self.dso != NONE).then_some(self.dso)
    }
}

pub(super) const NONE: u32 = u32::MAX;

/// Interns strings to dense ids.
#[derive(Default)]
pub(super) struct Interner {
    pub(super) ids: HashMap<String, u32>,
    pub(super) strs: Vec<String>,
}

impl Interner {
    pub(super) fn id(&mut self, s: &str) -> u32 {
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
pub(super) fn event_counts(profile: &Profile, events: impl Iterator<Item = EventId>) -> Vec<u64> {
    let mut counts = vec![0u64; profile.events.len()];
    for e in events {
        if let Some(c) = counts.get_mut(usize::from(e)) {
            *c += 1;
        }
    }
    counts
}

pub(super) fn event_columns(
    profile: &Profile,
    counts: &[u64],
    wanted: &[String],
) -> Result<(Vec<EventTotals>, Vec<u32>), AnalysisError> {
    let mut col_of = vec![NONE; profile.events.len()];
    let mut totals = Vec::new();
    // Like perf, events without samples (e.g. the `dummy` tracking event of `-a`) get no
    // column unless asked for by name.
    let any = counts.iter().any(|&c| c > 0);
    let selected = culprit_decode::model::select_events(profile, wanted)?;
    for (i, e) in profile.events.iter().enumerate() {
        if !wanted.is_empty() && !selected.contains(&(i as EventId)) {
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

pub(super) fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Canonical key words: equal comm strings and equal DSO short names group together.
pub(super) struct KeyWords {
    pub(super) comm_id: Vec<u32>,
    pub(super) dso_name: Vec<u32>,
    pub(super) unknown_dso: u32,
    /// Per DSO: per-process (JIT) object, resolved per pid.
    pub(super) dso_anon: Vec<bool>,
    /// `sym` keys unnamed addresses one by one instead of as one row per DSO.
    pub(super) unknown_per_address: bool,
}

impl KeyWords {
    pub(super) fn new(profile: &Profile, unknown_per_address: bool) -> KeyWords {
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
            unknown_per_address,
        }
    }

    pub(super) fn dso_key(&self, l: &Loc) -> u64 {
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
    pub(super) fn push(
        &self,
        buf: &mut Vec<u64>,
        k: SortKey,
        s: &SampleKeys,
        l: &Loc,
        raw_addr: Option<u64>,
    ) {
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
                None if self.unknown_per_address => {
                    buf.push(0);
                    buf.push(raw_addr.unwrap_or(l.file_offset));
                }
                // One row per DSO for all its unnamed addresses.
                None => {
                    buf.push(0);
                    buf.push(self.dso_key(l));
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
pub(super) fn mem_field(data_src: u64, shift: u32, width: u32) -> u64 {
    (data_src >> shift) & ((1u64 << width) - 1)
}

/// Resolves `queries` (symbols only when `need_symbols`, source lines only when
/// `need_src`); returns their locations and the source texts their ids name.
pub(super) fn resolve_locations(
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
