//! Hotspot reports of several inputs merged into one, with the numbers one report of all
//! their samples together gives: each input is read and symbolized on its own (its own
//! mappings and build ids) into a report without limits, and [`HotspotsMerge`] sums those
//! reports row by row and event by event, then sorts and cuts the sums as a single report
//! does (the same code: `arrange`).
//!
//! Rows of different inputs are one row when their keys are equal as the report shows
//! them, which is how one report groups its own samples except where an id cannot cross
//! files:
//! - `comm`, `dso`, `srcline` and the memory keys: by their text;
//! - `pid`, `tid`, `cpu`: by the number (a `pid` row is titled with the command of the first
//!   input that has it, as one report titles it with its first sample's);
//! - `sym`: by DSO short name and symbol name (two builds of a program are one row), an
//!   unnamed address by DSO and address; the `[k]`/`[.]` tag is the first input's;
//! - `ip`: by DSO and address; `srcfile`: by file name, `[unknown]` by DSO.
//!
//! Events are matched by name. Percentages are of the merged totals (the sum of every
//! input's samples of the event). Call graphs are merged node by node by function name,
//! and their threshold is applied to the merged trees.

use super::*;

/// What the text output says about one event of a report, besides its totals: whether its
/// periods are nanoseconds (time events), and what de-skid does to its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventFacts {
    /// The periods are nanoseconds (cpu-clock, task-clock).
    pub period_is_ns: bool,
    /// What `--deskid` does to its samples (see [`document`]).
    pub deskid: &'static str,
}

impl EventFacts {
    /// The facts of event `id` of `profile`.
    pub fn of(profile: &Profile, id: EventId) -> EventFacts {
        EventFacts {
            period_is_ns: crate::recording::period_is_ns(profile, id),
            deskid: document::deskid_what(profile, id),
        }
    }
}

/// One key of a row made outside a perf.data report (from Parquet tables), as the report
/// would show it ([`HotspotsMerge::add_row`]).
#[derive(Debug, Clone, Copy)]
pub enum KeyPart<'a> {
    /// `comm`, `dso`, `srcline` and the memory keys: the text.
    Text(&'a str),
    /// `pid`, `tid`, `cpu`: the number and its text (`pid:comm`).
    Number(i64, &'a str),
    /// `sym`: the function (`None`: unnamed, grouped by `addr`) in DSO `dso` (its short
    /// name), kernel code or not (the `[k]`/`[.]` tag).
    Sym {
        /// The function's name.
        name: Option<&'a str>,
        /// The DSO's short name.
        dso: &'a str,
        /// Kernel code.
        kernel: bool,
        /// The address an unnamed one groups by.
        addr: u64,
    },
    /// `srcfile`: the source file's name, or `None` (`[unknown]`, one row per DSO).
    Srcfile {
        /// The file name.
        file: Option<&'a str>,
        /// The DSO's short name.
        dso: &'a str,
    },
}

/// A call-graph tree being merged: children by name, in first-seen order.
#[derive(Debug, Default)]
struct MergeNode {
    name: String,
    samples: u64,
    period: u64,
    children: Vec<MergeNode>,
    by_name: FxHashMap<String, usize>,
}

impl MergeNode {
    fn add(&mut self, n: &CallNode) {
        self.samples += n.samples;
        self.period += n.period;
        for c in &n.children {
            let i = match self.by_name.get(&c.name) {
                Some(&i) => i,
                None => {
                    self.children.push(MergeNode {
                        name: c.name.clone(),
                        ..MergeNode::default()
                    });
                    self.by_name.insert(c.name.clone(), self.children.len() - 1);
                    self.children.len() - 1
                }
            };
            self.children[i].add(c);
        }
    }

    /// The tree without the nodes below `threshold` (and never a node of period 0), biggest
    /// first (ties in first-seen order), as [`super::build`]'s trees are cut.
    fn into_call_node(self, threshold: u64) -> CallNode {
        let mut kids: Vec<MergeNode> = self
            .children
            .into_iter()
            .filter(|c| c.period >= threshold.max(1))
            .collect();
        kids.sort_by_key(|k| std::cmp::Reverse(k.period));
        CallNode {
            name: self.name,
            period: self.period,
            samples: self.samples,
            children: kids
                .into_iter()
                .map(|k| k.into_call_node(threshold))
                .collect(),
        }
    }
}

/// Sums hotspot reports of several inputs ([`HotspotsMerge::add`], one report per input,
/// made with [`HotspotsMerge::part_options`]) into one report ([`HotspotsMerge::finish`]).
/// Memory: the distinct rows of all inputs (and their call graphs when asked for), not
/// the inputs' samples.
pub struct HotspotsMerge {
    keys: Vec<SortKey>,
    nv: usize,
    /// Events by name, in first-seen order (`id` is the position).
    events: Vec<EventTotals>,
    facts: Vec<EventFacts>,
    strings: Vec<String>,
    string_ids: FxHashMap<String, u32>,
    index: RowIndex,
    /// `keys.len()` values per row, their texts and DSOs as ids into `strings`.
    row_keys: Vec<KeyValue>,
    /// Per event: `nv` values per row (shorter when the event came after the rows).
    values: Vec<Vec<u64>>,
    nrows: usize,
    has_callchains: bool,
    cut_call_paths: u64,
    /// (row, event) -> its call graph.
    graphs: FxHashMap<(u32, u32), MergeNode>,
    /// The commands of inputs whose `--comm` filter left no row.
    no_row_comms: Vec<String>,
    /// The inputs' DSOs without symbols, per merged event column.
    unsymbolized: Vec<UnsymbolizedDso>,
    /// Rows made by [`add_row`](Self::add_row) key unnamed addresses one by one.
    unknown_per_address: bool,
    scratch: Vec<u64>,
}

impl HotspotsMerge {
    /// A merge of reports grouped by `keys`, with de-skidded values when `deskid`.
    pub fn new(keys: &[SortKey], deskid: bool) -> HotspotsMerge {
        HotspotsMerge {
            keys: keys.to_vec(),
            nv: if deskid { VALUES_DESKID } else { VALUES },
            events: Vec::new(),
            facts: Vec::new(),
            strings: Vec::new(),
            string_ids: FxHashMap::default(),
            index: RowIndex::new(2 * keys.len()),
            row_keys: Vec::new(),
            values: Vec::new(),
            nrows: 0,
            has_callchains: false,
            cut_call_paths: 0,
            graphs: FxHashMap::default(),
            no_row_comms: Vec::new(),
            unsymbolized: Vec::new(),
            unknown_per_address: false,
            scratch: Vec::new(),
        }
    }

    /// Rows made by [`add_row`](Self::add_row) keep one `[unknown]` row per address (see
    /// [`HotspotOptions::unknown_per_address`]) instead of one per DSO.
    pub fn set_unknown_per_address(&mut self, per_address: bool) {
        self.unknown_per_address = per_address;
    }

    /// The options each input's report is made with, for a merged report of `opts`: every
    /// row (no `top`, no percent limit, one table), every call-graph node (threshold 0),
    /// whatever event sorts (the merged report picks its sort event).
    pub fn part_options(opts: &HotspotOptions) -> HotspotOptions {
        HotspotOptions {
            percent_limit: 0.0,
            top: None,
            call_graph_threshold: 0.0,
            sort_event: None,
            per_event: false,
            ..opts.clone()
        }
    }

    /// Distinct rows so far.
    pub fn rows(&self) -> usize {
        self.nrows
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), i);
        i
    }

    /// The merged column of an event named `name` (made on first sight with `facts`).
    fn event(&mut self, name: &str, facts: EventFacts) -> usize {
        if let Some(c) = self.events.iter().position(|e| e.name == name) {
            return c;
        }
        self.events.push(EventTotals {
            id: self.events.len() as EventId,
            name: name.to_string(),
            samples: 0,
            period: 0,
            lost: 0,
        });
        self.facts.push(facts);
        self.values.push(Vec::new());
        self.events.len() - 1
    }

    /// Adds the events and rows of one input's report `part` (made with
    /// [`part_options`](Self::part_options) and the same keys); `facts` has one entry per
    /// event of `part`.
    pub fn add(&mut self, part: &Hotspots, facts: &[EventFacts]) {
        let cols: Vec<usize> = part
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let f = facts.get(i).copied().unwrap_or(EventFacts {
                    period_is_ns: false,
                    deskid: "stays where sampled",
                });
                let c = self.event(&e.name, f);
                let t = &mut self.events[c];
                t.samples += e.samples;
                t.period += e.period;
                t.lost += e.lost;
                c
            })
            .collect();
        self.has_callchains |= part.has_callchains;
        self.cut_call_paths += part.cut_call_paths;
        self.no_row_comms.extend(part.no_row_comms.iter().cloned());
        unsymbolized::merge_into(&mut self.unsymbolized, &part.unsymbolized, &cols);
        let nv = self.nv;
        let pnv = part.nv;
        let mut kvs: Vec<KeyValue> = Vec::with_capacity(self.keys.len());
        for row in part.rows() {
            kvs.clear();
            for k in row.keys() {
                let text = self.intern(row.text(&k));
                let dso = match row.dso(&k) {
                    Some(d) => self.intern(d),
                    None => NONE,
                };
                kvs.push(KeyValue { text, dso, ..k });
            }
            let r = self.row_of(&kvs);
            for (pe, &c) in cols.iter().enumerate() {
                let v = self.row_values(r, c);
                for (j, slot) in v.iter_mut().enumerate().take(pnv.min(nv)) {
                    *slot += row.value(pe, j);
                }
                if let Some(g) = row.call_graph(pe) {
                    self.graphs
                        .entry((r, c as u32))
                        .or_insert_with(|| MergeNode {
                            name: g.name.clone(),
                            ..MergeNode::default()
                        })
                        .add(g);
                }
            }
        }
    }

    /// The merged row of keys `kvs` (texts and DSOs as ids into `strings`), made on first
    /// sight.
    fn row_of(&mut self, kvs: &[KeyValue]) -> u32 {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        for k in kvs {
            let (a, b) = match k.key {
                SortKey::Pid | SortKey::Tid | SortKey::Cpu => (k.value, 0),
                SortKey::Sym if k.has_addr => (u64::from(k.dso), k.value),
                SortKey::Sym => (u64::from(k.dso) | 1 << 32, u64::from(k.text)),
                SortKey::Ip => (u64::from(k.dso), k.value),
                SortKey::Srcfile => (u64::from(k.text), u64::from(k.dso)),
                _ => (u64::from(k.text), 0),
            };
            buf.push(a);
            buf.push(b);
        }
        let next = self.nrows as u32;
        let r = self.index.get_or_insert(&buf, next);
        if r == next {
            self.row_keys.extend_from_slice(kvs);
            self.nrows += 1;
        }
        self.scratch = buf;
        r
    }

    /// The `nv` values of row `r` for merged event `c`.
    fn row_values(&mut self, r: u32, c: usize) -> &mut [u64] {
        let nv = self.nv;
        let nrows = self.nrows;
        let v = &mut self.values[c];
        let at = r as usize * nv;
        if v.len() < at + nv {
            v.resize(nrows * nv, 0);
        }
        &mut v[at..at + nv]
    }

    /// Adds `samples` samples of summed `period` (and `lost` lost samples) to the totals of
    /// the event named `name` (made on first sight with `facts`); returns its merged
    /// column, for [`add_row`](Self::add_row). For rows made from outside a perf.data
    /// report (Parquet tables).
    pub fn add_event(
        &mut self,
        name: &str,
        facts: EventFacts,
        samples: u64,
        period: u64,
        lost: u64,
    ) -> usize {
        let c = self.event(name, facts);
        let t = &mut self.events[c];
        t.samples += samples;
        t.period += period;
        t.lost += lost;
        c
    }

    /// Adds to the row of `keys` (one per sort key, in order) the values of event column
    /// `event` ([`add_event`](Self::add_event)): self samples and period, children samples
    /// and period (equal to self without call chains). For rows made from outside a
    /// perf.data report.
    pub fn add_row(&mut self, keys: &[KeyPart<'_>], event: usize, values: [u64; 4]) {
        let mut kvs: Vec<KeyValue> = Vec::with_capacity(keys.len());
        for (i, part) in keys.iter().enumerate().take(self.keys.len()) {
            let mut v = KeyValue::blank(self.keys[i]);
            match *part {
                KeyPart::Text(t) => v.text = self.intern(t),
                KeyPart::Number(n, t) => {
                    v.has_number = true;
                    v.value = n as u64;
                    v.text = self.intern(t);
                }
                KeyPart::Sym {
                    name,
                    dso,
                    kernel,
                    addr,
                } => {
                    v.level = if kernel { Level::Kernel } else { Level::User };
                    v.dso = self.intern(dso);
                    match name {
                        Some(n) => v.text = self.intern(n),
                        None if !self.unknown_per_address => {
                            v.text = self.intern("[unknown]");
                            v.unknown_group = true;
                        }
                        None => {
                            v.text = self.intern("[unknown]");
                            v.has_addr = true;
                            v.value = addr;
                        }
                    }
                }
                KeyPart::Srcfile { file, dso } => match file {
                    Some(f) => v.text = self.intern(f),
                    None => {
                        v.text = self.intern("[unknown]");
                        v.dso = self.intern(dso);
                    }
                },
            }
            kvs.push(v);
        }
        let r = self.row_of(&kvs);
        if event >= self.values.len() {
            return;
        }
        let nv = self.nv;
        for (slot, x) in self.row_values(r, event).iter_mut().zip(values).take(nv) {
            *slot += x;
        }
    }

    /// Records that an input had call chains (rows added with [`add_row`](Self::add_row)).
    pub fn set_has_callchains(&mut self) {
        self.has_callchains = true;
    }

    /// Whether any input so far had call chains.
    pub fn has_callchains(&self) -> bool {
        self.has_callchains
    }

    /// The merged report, sorted, cut and with call graphs as `opts` asks (its keys and
    /// de-skid must be those of [`new`](Self::new); `opts.children`: sort by children
    /// values), and the facts of its events. Events without samples are left out unless
    /// `opts.events` names events (as one report leaves them out).
    pub fn finish(
        self,
        opts: &HotspotOptions,
    ) -> Result<(Hotspots, Vec<EventFacts>), AnalysisError> {
        let HotspotsMerge {
            keys,
            nv,
            events,
            facts,
            strings,
            row_keys,
            mut values,
            nrows,
            has_callchains,
            cut_call_paths,
            mut graphs,
            mut no_row_comms,
            unsymbolized: merged_unsymbolized,
            ..
        } = self;
        let any = events.iter().any(|e| e.samples > 0);
        let kept: Vec<usize> = (0..events.len())
            .filter(|&c| !opts.events.is_empty() || !any || events[c].samples > 0)
            .collect();
        let ncol = kept.len();
        let mut totals: Vec<EventTotals> = Vec::with_capacity(ncol);
        let mut out_facts = Vec::with_capacity(ncol);
        for (n, &c) in kept.iter().enumerate() {
            let mut t = events[c].clone();
            t.id = n as EventId;
            totals.push(t);
            out_facts.push(facts[c]);
        }
        for v in &mut values {
            v.resize(nrows * nv, 0);
        }
        let mut packed: Vec<u64> = Vec::with_capacity(nrows * ncol * nv);
        for r in 0..nrows {
            for &c in &kept {
                packed.extend_from_slice(&values[c][r * nv..(r + 1) * nv]);
            }
        }
        drop(values);
        let Arranged {
            order,
            shown,
            hidden_rows,
            sort_event,
            event_tables,
            no_sample_kept,
        } = arrange(&totals, &packed, nv, nrows, opts, &|_| true)?;
        let f = &opts.filters;
        let filtered =
            !(f.pids.is_empty() && f.tids.is_empty() && f.comms.is_empty() && f.dsos.is_empty());
        let filter_why =
            (no_sample_kept && totals.iter().any(|t| t.samples > 0) && filtered).then(|| {
                no_row_comms.sort();
                no_row_comms.dedup();
                filters_matched_nothing(f, &no_row_comms)
            });
        let nk = keys.len();
        let mut columns: Vec<KeyColumn> = keys.iter().map(|&k| KeyColumn::new(k)).collect();
        for &r in &order {
            for (j, c) in columns.iter_mut().enumerate() {
                if let Some(kv) = row_keys.get(r as usize * nk + j) {
                    c.push(kv);
                }
            }
        }
        let mut call_graphs = Vec::new();
        if opts.call_graph != CallGraphMode::None {
            for (i, &r) in order.iter().enumerate() {
                let mut trees: Vec<Option<CallNode>> = vec![None; ncol];
                for (n, &c) in kept.iter().enumerate() {
                    if let Some(t) = graphs.remove(&(r, c as u32)) {
                        let threshold =
                            (opts.call_graph_threshold / 100.0 * totals[n].period as f64) as u64;
                        trees[n] = Some(t.into_call_node(threshold));
                    }
                }
                if trees.iter().any(Option::is_some) {
                    call_graphs.push((i as u32, trees));
                }
            }
        }
        drop(graphs);
        // The DSOs without symbols, in the kept columns.
        let mut unsymbolized: Vec<UnsymbolizedDso> = merged_unsymbolized
            .into_iter()
            .map(|u| {
                let at = |v: &[u64], c: usize| v.get(c).copied().unwrap_or(0);
                UnsymbolizedDso {
                    samples: kept.iter().map(|&c| at(&u.samples, c)).collect(),
                    period: kept.iter().map(|&c| at(&u.period, c)).collect(),
                    ..u
                }
            })
            .collect();
        unsymbolized::sort(&mut unsymbolized, sort_event);
        let (values, order_out) = if order.len() * 2 < nrows {
            let mut v = Vec::with_capacity(order.len() * ncol * nv);
            for &r in &order {
                let r = r as usize;
                v.extend_from_slice(&packed[r * ncol * nv..(r + 1) * ncol * nv]);
            }
            (v, (0..order.len() as u32).collect())
        } else {
            (packed, order)
        };
        let out = Hotspots {
            events: totals,
            keys,
            children: opts.children && has_callchains,
            has_callchains,
            deskid: nv == VALUES_DESKID,
            hidden_rows,
            sort_event,
            top: opts.top,
            percent_limit: opts.percent_limit,
            cut_call_paths,
            filter_why,
            no_row_comms: Vec::new(),
            strings,
            columns,
            values,
            nv,
            order: order_out,
            shown,
            event_tables,
            call_graphs,
            unsymbolized,
            unknown_per_address: opts.unknown_per_address,
        };
        Ok((out, out_facts))
    }
}
