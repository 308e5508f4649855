//! Rows of a report: filtered, sorted, cut and named.

use super::*;

/// What a row shows, taken from its representative: the first sample and place (sampled
/// IP, call-chain frame or de-skidded location) that made the row.
pub(super) struct RowRep<'a> {
    pub(super) sample: SampleKeys,
    pub(super) loc: &'a Loc,
    /// The call-chain frame's runtime address and mode; `None` for the sampled IP.
    pub(super) frame: Option<(u64, CpuMode)>,
}

/// Rows as accumulated, in first-seen order, before filtering, sorting and naming.
pub(super) struct RowValues {
    /// Per event (column): all its samples and period.
    pub(super) totals: Vec<EventTotals>,
    /// `[(row * totals.len() + column) * nv + V_*]`.
    pub(super) values: Vec<u64>,
    pub(super) nv: usize,
    pub(super) nrows: usize,
}

/// Filters (DSO, empty rows), sorts (by the sort event's value, ties by the next events',
/// then in first-seen order), limits (`percent_limit`, `top`, by the sort event) and names
/// the rows; with [`HotspotOptions::per_event`], also one such table per event. Returns the
/// report without call graphs and the accumulated row behind each stored row.
/// `sampled_comms` lists the commands of the file's samples (asked only when the filters
/// leave no row, to say why).
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_rows<'l>(
    profile: &Profile,
    symbolizer: &Symbolizer,
    opts: &HotspotOptions,
    has_callchains: bool,
    src_strs: &[String],
    rows: RowValues,
    rep_of: &dyn Fn(u32) -> RowRep<'l>,
    sampled_comms: &dyn Fn() -> Vec<String>,
) -> Result<(Hotspots, Vec<u32>), AnalysisError> {
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
    let dso_ok = |r: u32| f.dsos.is_empty() || dso_filter_ok(rep_of(r).loc);
    let Arranged {
        order,
        shown,
        hidden_rows,
        sort_event,
        event_tables,
        no_sample_kept,
    } = arrange(&totals, &acc_values, nv, nrows, opts, &dso_ok)?;
    let unsymbolized = if keys.contains(&SortKey::Sym) {
        let unnamed_dso = |r: u32| {
            let l = rep_of(r).loc;
            (l.symbol().is_none() && dso_ok(r))
                .then(|| l.dso())
                .flatten()
        };
        unsymbolized::collect(
            profile,
            ncol,
            nv,
            &acc_values,
            nrows,
            &unnamed_dso,
            sort_event,
        )
    } else {
        Vec::new()
    };
    let event_samples = totals.iter().any(|t| t.samples > 0);
    let filtered =
        !(f.pids.is_empty() && f.tids.is_empty() && f.comms.is_empty() && f.dsos.is_empty());
    let mut no_row_comms = Vec::new();
    let filter_why = (no_sample_kept && event_samples && filtered).then(|| {
        if !f.comms.is_empty() {
            no_row_comms = sampled_comms();
        }
        filters_matched_nothing(f, &no_row_comms)
    });

    let mut texts = TextCache {
        unknown_per_address: opts.unknown_per_address,
        ..TextCache::default()
    };
    let mut columns: Vec<KeyColumn> = keys.iter().map(|&k| KeyColumn::new(k)).collect();
    for &r in &order {
        let rep = rep_of(r);
        for c in columns.iter_mut() {
            c.push(&texts.key_value(c.key, profile, symbolizer, src_strs, &rep));
        }
    }
    // With a cut (--top), keep the values of the stored rows only.
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
        sort_event,
        top: opts.top,
        percent_limit: opts.percent_limit,
        filter_why,
        no_row_comms,
        strings: texts.strings,
        columns,
        values,
        nv,
        order: order_out,
        shown,
        event_tables,
        call_graphs: Vec::new(),
        cut_call_paths: 0,
        unsymbolized,
        unknown_per_address: opts.unknown_per_address,
    };
    Ok((out, order))
}

/// The rows of a report in their tables: what [`arrange`] returns.
pub(super) struct Arranged {
    /// The stored rows (accumulated row numbers): the main table's, sorted, then those
    /// only the per-event tables show.
    pub(super) order: Vec<u32>,
    /// Rows of the main table (the first of `order`).
    pub(super) shown: usize,
    /// Rows the limits hid from the main table.
    pub(super) hidden_rows: usize,
    /// The event the main table is sorted and limited by.
    pub(super) sort_event: usize,
    /// With [`HotspotOptions::per_event`] and several events: each event's table (rows as
    /// positions in `order`).
    pub(super) event_tables: Vec<EventTable>,
    /// No row had a value (before the limits).
    pub(super) no_sample_kept: bool,
}

/// Picks the rows with a value (among `nrows` accumulated rows whose `values` are
/// `[(row * totals.len() + column) * nv + V_*]`, and which `keep` accepts), sorts them (by
/// the sort event's value, ties by the next events', then in first-seen order) and limits
/// them (`percent_limit`, `top`, by the sort event); with [`HotspotOptions::per_event`],
/// also one such table per event. Shared by the report of one file and the merge of
/// several (`merge`), so that both sort and cut alike.
pub(super) fn arrange(
    totals: &[EventTotals],
    acc_values: &[u64],
    nv: usize,
    nrows: usize,
    opts: &HotspotOptions,
    keep: &dyn Fn(u32) -> bool,
) -> Result<Arranged, AnalysisError> {
    let ncol = totals.len();
    let (v_sort, v_sort_samples) = if opts.children {
        (V_CH_PERIOD, V_CH_SAMPLES)
    } else {
        (V_PERIOD, V_SAMPLES)
    };
    let val = |r: usize, c: usize, v: usize| acc_values[(r * ncol + c) * nv + v];
    // Rows without self period appear only in children mode (as in perf); rows that only
    // get de-skidded samples appear too (with raw 0).
    let has_event = |r: usize, c: usize| {
        val(r, c, v_sort) > 0
            || val(r, c, v_sort_samples) > 0
            || (opts.deskid && val(r, c, V_DS_SAMPLES) > 0)
    };
    let candidates: Vec<u32> = (0..nrows)
        .filter(|&r| keep(r as u32) && (0..ncol).any(|c| has_event(r, c)))
        .map(|r| r as u32)
        .collect();
    let sort_event = match &opts.sort_event {
        Some(name) => find_event(totals, name).ok_or_else(|| AnalysisError::UnknownEvent {
            wanted: name.clone(),
            available: totals.iter().map(|t| t.name.clone()).collect(),
        })?,
        // The first event with samples in the rows (not one the filters left empty).
        None => (0..ncol)
            .find(|&c| candidates.iter().any(|&r| has_event(r as usize, c)))
            .unwrap_or(0),
    };
    // One table: the rows of `rows` sorted by event `first` (then the next events, then
    // first-seen order), limited by `first`'s percentages. Returns it and how many rows
    // the limits hid.
    let table = |rows: Vec<u32>, first: usize| -> (Vec<u32>, usize) {
        // Sorted on packed keys (not through the values, a cache miss per comparison with
        // hundreds of thousands of rows); ties look at the other events' values.
        let sort_value = |r: usize, c: usize| (val(r, c, v_sort), val(r, c, V_PERIOD));
        let mut keyed: Vec<(std::cmp::Reverse<(u64, u64)>, u32)> = rows
            .iter()
            .map(|&r| (std::cmp::Reverse(sort_value(r as usize, first)), r))
            .collect();
        drop(rows);
        let tie = |a: u32, b: u32| {
            (1..ncol)
                .map(|k| (first + k) % ncol)
                .map(|c| sort_value(b as usize, c).cmp(&sort_value(a as usize, c)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        };
        if ncol == 1 {
            keyed.sort_unstable();
        } else {
            keyed.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| tie(a.1, b.1))
                    .then(a.1.cmp(&b.1))
            });
        }
        let mut order: Vec<u32> = keyed.iter().map(|&(_, r)| r).collect();
        drop(keyed);
        let before = order.len();
        if opts.percent_limit > 0.0 {
            let total = totals[first].period;
            order.retain(|&r| {
                let r = r as usize;
                pct(val(r, first, v_sort), total) >= opts.percent_limit
                    || (opts.deskid && pct(val(r, first, V_DS_PERIOD), total) >= opts.percent_limit)
            });
        }
        if let Some(top) = opts.top {
            order.truncate(top);
        }
        let hidden = before - order.len();
        (order, hidden)
    };
    let events_apart = opts.per_event && ncol > 1;
    let per_event: Vec<(Vec<u32>, usize)> = if events_apart {
        (0..ncol)
            .map(|c| {
                let rows = candidates
                    .iter()
                    .copied()
                    .filter(|&r| has_event(r as usize, c))
                    .collect();
                table(rows, c)
            })
            .collect()
    } else {
        Vec::new()
    };
    let no_sample_kept = candidates.is_empty();
    let (main, hidden_rows) = table(candidates, sort_event);
    // The stored rows: the main table's, then those only the per-event tables show.
    let mut order = main;
    let shown = order.len();
    let mut event_tables = Vec::with_capacity(per_event.len());
    if events_apart {
        let mut position: FxHashMap<u32, u32> = order
            .iter()
            .enumerate()
            .map(|(i, &r)| (r, i as u32))
            .collect();
        for (rows, hidden) in per_event {
            let rows = rows
                .into_iter()
                .map(|r| {
                    *position.entry(r).or_insert_with(|| {
                        order.push(r);
                        order.len() as u32 - 1
                    })
                })
                .collect();
            event_tables.push(EventTable { rows, hidden });
        }
    }
    Ok(Arranged {
        order,
        shown,
        hidden_rows,
        sort_event,
        event_tables,
        no_sample_kept,
    })
}

/// The report event named `name`: the same name, else the same name without perf's
/// modifiers (`cpu-clock` for `cpu-clock:ppp`, either way).
fn find_event(totals: &[EventTotals], name: &str) -> Option<usize> {
    let bare = |n: &str| -> String {
        match n.rsplit_once(':') {
            Some((base, m)) if !m.is_empty() && m.chars().all(|c| "ukhIGHpPSDeWb".contains(c)) => {
                base.to_string()
            }
            _ => n.to_string(),
        }
    };
    totals
        .iter()
        .position(|t| t.name == name)
        .or_else(|| totals.iter().position(|t| bare(&t.name) == bare(name)))
}

/// Why the filters left no row: `--comm nosuch matched none of the file's 3 commands: a,
/// b, c`, or the filters given.
pub(super) fn filters_matched_nothing(f: &Filters, sampled_comms: &[String]) -> String {
    let list = |v: &[String]| v.join(",");
    let nums = |v: &[i32]| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut given: Vec<String> = Vec::new();
    if !f.comms.is_empty() {
        given.push(format!("--comm {}", list(&f.comms)));
    }
    if !f.pids.is_empty() {
        given.push(format!("--pid {}", nums(&f.pids)));
    }
    if !f.tids.is_empty() {
        given.push(format!("--tid {}", nums(&f.tids)));
    }
    if !f.dsos.is_empty() {
        given.push(format!("--dso {}", list(&f.dsos)));
    }
    if given.len() > 1 {
        return format!("no sample matched {}", given.join(" "));
    }
    let what = given.join("");
    if f.comms.is_empty() {
        return format!("{what} matched no sample");
    }
    let mut comms = sampled_comms.to_vec();
    comms.sort();
    comms.dedup();
    const SHOWN: usize = 10;
    let mut names = comms
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if comms.len() > SHOWN {
        names.push_str(", …");
    }
    let n = comms.len();
    let noun = if n == 1 { "command" } else { "commands" };
    format!("{what} matched none of the file's {n} {noun}: {names}")
}

/// A row representative that is an entry's de-skidded location (see `loc_of_rep`).
pub(super) const DESKID: u32 = u32::MAX - 1;

/// Words of the row key per sort key (fixed, so keys are stored back to back).
pub(super) fn key_words(k: SortKey) -> usize {
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
pub(super) struct RowIndex {
    pub(super) words: usize,
    pub(super) keys: Vec<u64>,
    pub(super) by_hash: FxHashMap<u64, u32>,
    pub(super) collided: FxHashMap<Box<[u64]>, u32>,
}

impl RowIndex {
    pub(super) fn new(words: usize) -> RowIndex {
        RowIndex {
            words,
            keys: Vec::new(),
            by_hash: FxHashMap::default(),
            collided: FxHashMap::default(),
        }
    }

    pub(super) fn hash(key: &[u64]) -> u64 {
        FxBuildHasher.hash_one(key)
    }

    pub(super) fn key(&self, r: u32) -> &[u64] {
        let a = r as usize * self.words;
        self.keys.get(a..a + self.words).unwrap_or(&[])
    }

    pub(super) fn get(&self, key: &[u64]) -> Option<u32> {
        let &r = self.by_hash.get(&Self::hash(key))?;
        if self.key(r) == key {
            Some(r)
        } else {
            self.collided.get(key).copied()
        }
    }

    /// The row of `key`, or `next` (which the caller then creates) when it has none.
    pub(super) fn get_or_insert(&mut self, key: &[u64], next: u32) -> u32 {
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
pub(super) struct Acc {
    /// Values per row (`ncol * nv`).
    pub(super) nv: usize,
    pub(super) index: RowIndex,
    /// Representative of each row: (entry index, frame index, NONE for the sampled IP or
    /// DESKID for its de-skidded location).
    pub(super) rep: Vec<(u32, u32)>,
    pub(super) values: Vec<u64>,
}

impl Acc {
    pub(super) fn row(&mut self, key: &[u64], at: (u32, u32)) -> u32 {
        let next = self.rep.len() as u32;
        let r = self.index.get_or_insert(key, next);
        if r == next {
            self.rep.push(at);
            self.values.extend(std::iter::repeat_n(0, self.nv));
        }
        r
    }
}

/// Key texts of the output rows, interned: each distinct text is stored once, and texts
/// that come from an id (comm, DSO, symbol, source line) are looked up by that id.
#[derive(Default)]
pub(super) struct TextCache {
    pub(super) strings: Vec<String>,
    /// Fx-hashed: a children report interns a text (often `[unknown]`) for each of
    /// hundreds of thousands of rows.
    pub(super) ids: FxHashMap<String, u32>,
    pub(super) comm: FxHashMap<StrId, u32>,
    pub(super) dso: FxHashMap<Option<DsoId>, u32>,
    pub(super) sym: FxHashMap<culprit_symbols::SymbolId, u32>,
    pub(super) src: FxHashMap<(u32, bool), u32>,
    /// Unnamed `sym` values are addresses ([`HotspotOptions::unknown_per_address`]), not
    /// the one `[unknown]` row of their DSO.
    pub(super) unknown_per_address: bool,
}

impl TextCache {
    pub(super) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.ids.insert(s.to_string(), i);
        self.strings.push(s.to_string());
        i
    }

    pub(super) fn comm(&mut self, profile: &Profile, c: StrId) -> u32 {
        if let Some(&i) = self.comm.get(&c) {
            return i;
        }
        let i = self.intern(profile.str(c));
        self.comm.insert(c, i);
        i
    }

    pub(super) fn dso(&mut self, profile: &Profile, d: Option<DsoId>) -> u32 {
        if let Some(&i) = self.dso.get(&d) {
            return i;
        }
        let i = self.intern(&dso_short(profile, d));
        self.dso.insert(d, i);
        i
    }

    pub(super) fn key_value(
        &mut self,
        key: SortKey,
        profile: &Profile,
        symbolizer: &Symbolizer,
        src: &[String],
        rep: &RowRep<'_>,
    ) -> KeyValue {
        let (s, l, frame) = (&rep.sample, rep.loc, rep.frame);
        let mut v = KeyValue::blank(key);
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
                    None if !self.unknown_per_address => {
                        v.text = self.intern("[unknown]");
                        v.unknown_group = true;
                    }
                    None => {
                        v.text = self.intern("[unknown]");
                        v.has_addr = true;
                        // A chain entry's address is the run-time one (the sampled IP's
                        // entry of a children report carries its file offset), as is the
                        // kernel's and anonymous code's.
                        v.runtime_addr = frame.is_some_and(|f| f.0 != l.file_offset)
                            || !has_file_offsets(profile, l.dso());
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
                    None => {
                        // Keyed by DSO (see `KeyWords::push`): kept for merging reports.
                        v.dso = self.dso(profile, l.dso());
                        self.intern("[unknown]")
                    }
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

/// The distinct names of these command ids.
pub(super) fn comm_names(profile: &Profile, ids: impl Iterator<Item = StrId>) -> Vec<String> {
    let ids: std::collections::BTreeSet<StrId> = ids.collect();
    ids.into_iter()
        .map(|c| profile.str(c).to_string())
        .collect()
}
