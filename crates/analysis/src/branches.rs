//! Branch mode (`culprit report --branch`, perf's `perf report --branch-stack`): every
//! branch-stack entry of every sample counts as one sample of period 1, grouped by keys
//! of the branch's two ends (its source and its target), as perf does:
//!
//! - the percentage base of an event is the number of branch entries of all its samples;
//! - `symbol_from`/`symbol_to` group by symbol when the address has one, else by the
//!   runtime address; the privilege tag is that of the maps that resolved the address
//!   (`[.]` user, `[k]` kernel, `[H]` none, as perf's `al_level`);
//! - `dso_from`/`dso_to` group by the DSO's short name (`[unknown]` when unmapped);
//! - `mispredict` shows `N` (predicted), `Y` (mispredicted) or `N/A`; `cycles` the cycles
//!   since the previous branch (`-` when not reported); `in_tx` `X`/`.`; `abort` `A`/`.`.

use std::collections::HashMap;

use culprit_decode::model::{BranchEntry, CpuMode, DsoId, EventId, Location, Profile, Sample};
use culprit_symbols::{Query, Symbolizer};

use crate::hotspots::{EventTotals, Filters};
use crate::AnalysisError;

mod render;

pub use render::{branch_csv_table, branch_document, branch_json, BranchJson, BRANCH_SCHEMA};

/// What branch-mode rows are grouped by (perf's branch-mode sort keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BranchKey {
    /// Command name.
    Comm,
    /// Process id.
    Pid,
    /// DSO of the branch instruction.
    DsoFrom,
    /// Function of the branch instruction.
    SymbolFrom,
    /// DSO of the branch target.
    DsoTo,
    /// Function of the branch target.
    SymbolTo,
    /// Source line of the branch instruction.
    SrclineFrom,
    /// Source line of the branch target.
    SrclineTo,
    /// Whether the branch was mispredicted (`Y`), predicted (`N`) or neither (`N/A`).
    Mispredict,
    /// Cycles since the previous branch (perf's basic-block cycles).
    Cycles,
    /// In a transaction (`X`) or not (`.`).
    InTx,
    /// A transaction abort (`A`) or not (`.`).
    Abort,
}

/// perf 6.1's default branch-mode sort order.
pub const DEFAULT_BRANCH_SORT: &str = "comm,dso_from,symbol_from,symbol_to,cycles";

impl BranchKey {
    /// The key's name on the command line and in JSON (perf's spelling).
    pub fn name(self) -> &'static str {
        match self {
            BranchKey::Comm => "comm",
            BranchKey::Pid => "pid",
            BranchKey::DsoFrom => "dso_from",
            BranchKey::SymbolFrom => "symbol_from",
            BranchKey::DsoTo => "dso_to",
            BranchKey::SymbolTo => "symbol_to",
            BranchKey::SrclineFrom => "srcline_from",
            BranchKey::SrclineTo => "srcline_to",
            BranchKey::Mispredict => "mispredict",
            BranchKey::Cycles => "cycles",
            BranchKey::InTx => "in_tx",
            BranchKey::Abort => "abort",
        }
    }

    /// perf's column header.
    pub fn header(self) -> &'static str {
        match self {
            BranchKey::Comm => "Command",
            BranchKey::Pid => "Pid:Command",
            BranchKey::DsoFrom => "Source Shared Object",
            BranchKey::SymbolFrom => "Source Symbol",
            BranchKey::DsoTo => "Target Shared Object",
            BranchKey::SymbolTo => "Target Symbol",
            BranchKey::SrclineFrom => "From Source:Line",
            BranchKey::SrclineTo => "To Source:Line",
            BranchKey::Mispredict => "Branch Mispredicted",
            BranchKey::Cycles => "Basic Block Cycles",
            BranchKey::InTx => "Branch in transaction",
            BranchKey::Abort => "Transaction abort",
        }
    }

    /// Parses a comma-separated key list (`comm,dso_from,symbol_from`); `sym_from`/`sym_to`
    /// and `from`/`to` (for `symbol_*`) work too.
    pub fn parse_list(s: &str) -> Result<Vec<BranchKey>, AnalysisError> {
        s.split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| match k {
                "comm" => Ok(BranchKey::Comm),
                "pid" => Ok(BranchKey::Pid),
                "dso_from" => Ok(BranchKey::DsoFrom),
                "symbol_from" | "sym_from" | "from" => Ok(BranchKey::SymbolFrom),
                "dso_to" => Ok(BranchKey::DsoTo),
                "symbol_to" | "sym_to" | "to" => Ok(BranchKey::SymbolTo),
                "srcline_from" => Ok(BranchKey::SrclineFrom),
                "srcline_to" => Ok(BranchKey::SrclineTo),
                "mispredict" => Ok(BranchKey::Mispredict),
                "cycles" => Ok(BranchKey::Cycles),
                "in_tx" => Ok(BranchKey::InTx),
                "abort" => Ok(BranchKey::Abort),
                other => Err(AnalysisError::UnknownSortKey(format!(
                    "{other}' in branch mode (known: comm, pid, dso_from, symbol_from, dso_to, \
                     symbol_to, srcline_from, srcline_to, mispredict, cycles, in_tx, abort"
                ))),
            })
            .collect()
    }
}

/// One end of a branch as folded: where it falls and which maps resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct End {
    addr: u64,
    location: Location,
    mode: CpuMode,
}

/// A branch entry reduced to what the keys look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Folded {
    event: EventId,
    comm: u32,
    pid: i32,
    from: End,
    to: End,
    cycles: u16,
    /// Bits: 0 mispred, 1 predicted, 2 in_tx, 3 abort.
    flags: u8,
}

impl Folded {
    /// A total order of folded branches: by event, addresses, cycles and flags first (the
    /// rows' order for equal counts), then the other fields.
    fn order(&self) -> impl Ord {
        let end = |e: &End| (e.location.dso, e.location.file_offset, e.mode as u8);
        (
            (
                self.event,
                self.from.addr,
                self.to.addr,
                self.cycles,
                self.flags,
            ),
            (self.pid, self.comm, end(&self.from), end(&self.to)),
        )
    }
}

/// Folds the branch entries of samples as they are read (memory grows with distinct
/// branches, not with samples).
#[derive(Debug, Default)]
pub struct BranchAggregator {
    counts: HashMap<Folded, u64>,
    /// Branch entries per event (the percentage base), filtered or not.
    totals: HashMap<EventId, u64>,
    filters: Filters,
    keys: Vec<BranchKey>,
}

impl BranchAggregator {
    /// An aggregator for these keys; samples outside `filters` (pid, tid, comm) do not
    /// make rows but count in the base.
    pub fn new(keys: &[BranchKey], filters: &Filters) -> BranchAggregator {
        BranchAggregator {
            keys: keys.to_vec(),
            filters: filters.clone(),
            ..BranchAggregator::default()
        }
    }

    /// Adds a sample's branch entries.
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let entries = profile.branches(s);
        if entries.is_empty() {
            return;
        }
        *self.totals.entry(s.event).or_default() += entries.len() as u64;
        let f = &self.filters;
        if (!f.pids.is_empty() && !f.pids.contains(&s.pid))
            || (!f.tids.is_empty() && !f.tids.contains(&s.tid))
            || (!f.comms.is_empty() && !f.comms.iter().any(|c| c == profile.str(s.comm)))
        {
            return;
        }
        let has = |k: BranchKey| self.keys.contains(&k);
        let from_used = [
            BranchKey::DsoFrom,
            BranchKey::SymbolFrom,
            BranchKey::SrclineFrom,
        ]
        .into_iter()
        .any(has);
        let to_used = [BranchKey::DsoTo, BranchKey::SymbolTo, BranchKey::SrclineTo]
            .into_iter()
            .any(has);
        let (comm, pid) = (
            if has(BranchKey::Comm) || has(BranchKey::Pid) {
                s.comm
            } else {
                0
            },
            if has(BranchKey::Pid) { s.pid } else { 0 },
        );
        let nowhere = End {
            addr: 0,
            location: Location::default(),
            mode: CpuMode::Unknown,
        };
        for e in entries {
            let end = |used: bool, addr: u64, location: Location, mode: CpuMode| {
                if used {
                    End {
                        addr,
                        location,
                        mode,
                    }
                } else {
                    nowhere
                }
            };
            let mut flags = 0u8;
            if has(BranchKey::Mispredict) {
                flags |= u8::from(e.mispred()) | u8::from(e.predicted()) << 1;
            }
            if has(BranchKey::InTx) {
                flags |= u8::from(e.in_tx()) << 2;
            }
            if has(BranchKey::Abort) {
                flags |= u8::from(e.abort()) << 3;
            }
            let folded = Folded {
                event: s.event,
                comm,
                pid,
                from: end(from_used, e.from, e.from_location, e.from_cpumode),
                to: end(to_used, e.to, e.to_location, e.to_cpumode),
                cycles: if has(BranchKey::Cycles) {
                    e.cycles()
                } else {
                    0
                },
                flags,
            };
            *self.counts.entry(folded).or_default() += 1;
        }
    }
}

/// The value of one key in a branch-mode row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BranchKeyValue {
    /// Which key.
    pub key: BranchKey,
    /// Display text: a name, a number, `[unknown]`, `Y`/`N`/`N/A`, `-`.
    pub text: String,
    /// symbol_*: perf's privilege tag of the address (`[.]`, `[k]`, `[H]`).
    pub tag: Option<&'static str>,
    /// symbol_*/srcline_* without a name: the DSO short name.
    pub dso: Option<String>,
    /// symbol_*/srcline_* without a name: the address in the DSO (file offset; the
    /// address itself for the kernel and unmapped addresses), as perf displays it.
    pub addr: Option<u64>,
    /// pid: the number.
    pub number: Option<i64>,
}

/// One branch-mode row: the key values and, per report event, the branch entries counted.
#[derive(Debug, Clone)]
pub struct BranchRow {
    /// One value per key, in key order.
    pub keys: Vec<BranchKeyValue>,
    /// Branch entries per report event (each one is a sample of period 1).
    pub samples: Vec<u64>,
}

impl BranchRow {
    /// Percentage of event `e`'s branch entries.
    pub fn percent(&self, e: usize, totals: &[EventTotals]) -> f64 {
        crate::pct(
            self.samples.get(e).copied().unwrap_or(0),
            totals.get(e).map_or(0, |t| t.period),
        )
    }
}

/// The result of [`branch_report`].
#[derive(Debug, Clone)]
pub struct BranchReport {
    /// The events reported; `samples` and `period` are their numbers of branch entries.
    pub events: Vec<EventTotals>,
    /// The grouping keys.
    pub keys: Vec<BranchKey>,
    /// Rows, most branch entries (of the sort event, then the next events) first.
    pub rows: Vec<BranchRow>,
    /// Rows dropped by `top` or `percent_limit`.
    pub hidden_rows: usize,
    /// The event the rows are sorted and limited by (index in `events`).
    pub sort_event: usize,
    /// [`BranchOptions::top`].
    pub top: Option<usize>,
    /// [`BranchOptions::percent_limit`].
    pub percent_limit: f64,
    /// With [`BranchOptions::per_event`] and several events: each event's own table.
    pub event_tables: Vec<BranchTable>,
}

/// One event's table: its rows, sorted and limited by it.
#[derive(Debug, Clone)]
pub struct BranchTable {
    /// The rows with entries of the event, most first.
    pub rows: Vec<BranchRow>,
    /// Rows its limits hid.
    pub hidden_rows: usize,
}

/// What [`branch_report`] shows.
#[derive(Debug, Clone, Default)]
pub struct BranchOptions {
    /// Only these events (by name); empty: every event with branch entries.
    pub events: Vec<String>,
    /// Hide rows below this percentage of the sort event.
    pub percent_limit: f64,
    /// Keep at most this many rows.
    pub top: Option<usize>,
    /// The event that sorts the rows (ties by the next events), and which `percent_limit`
    /// and `top` apply to; `None`: the first event with entries in the rows.
    pub sort_event: Option<String>,
    /// Also make one table per event, each sorted and limited by its event.
    pub per_event: bool,
}

/// Symbol identity of a branch end: the symbol, else the runtime address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum SymKey {
    Named(culprit_symbols::SymbolId, Option<DsoId>),
    Addr(u64),
}

/// Grouping identity of a key's value (what perf compares), beside its display value.
#[derive(PartialEq, Eq, Hash)]
enum Ident {
    Text(String),
    Sym(SymKey),
    Num(u64),
}

/// The report events, those asked for, else those with branch entries, in file order, with
/// their totals.
fn report_events(
    profile: &Profile,
    agg: &BranchAggregator,
    opts: &BranchOptions,
) -> Result<(Vec<EventId>, Vec<EventTotals>), AnalysisError> {
    let mut ids: Vec<EventId> = culprit_decode::model::select_events(profile, &opts.events)?;
    if opts.events.is_empty() {
        ids = (0..profile.events.len() as EventId)
            .filter(|i| agg.totals.contains_key(i))
            .collect();
    }
    let events: Vec<EventTotals> = ids
        .iter()
        .map(|&id| {
            let n = agg.totals.get(&id).copied().unwrap_or(0);
            EventTotals {
                id,
                name: profile
                    .events
                    .get(usize::from(id))
                    .map_or_else(String::new, |e| e.name.clone()),
                samples: n,
                period: n,
                lost: profile.events.get(usize::from(id)).map_or(0, |e| e.lost),
            }
        })
        .collect();
    Ok((ids, events))
}

/// The symbols and source lines of every distinct branch end, resolved once (only those
/// the keys show), and what the keys read from a folded branch.
struct BranchNaming<'a> {
    profile: &'a Profile,
    symbolizer: &'a Symbolizer,
    symbols: HashMap<Query, Option<culprit_symbols::SymbolId>>,
    srclines: HashMap<Query, Option<String>>,
}

impl<'a> BranchNaming<'a> {
    /// Resolves the ends of `agg`'s branches that `keys` name by symbol or source line.
    fn new(
        profile: &'a Profile,
        agg: &BranchAggregator,
        symbolizer: &'a mut Symbolizer,
        keys: &[BranchKey],
    ) -> Self {
        let wants_sym = keys
            .iter()
            .any(|k| matches!(k, BranchKey::SymbolFrom | BranchKey::SymbolTo));
        let wants_src = keys
            .iter()
            .any(|k| matches!(k, BranchKey::SrclineFrom | BranchKey::SrclineTo));
        let mut queries: Vec<Query> = Vec::new();
        if wants_sym || wants_src {
            for f in agg.counts.keys() {
                queries.push(Query::of(f.from.location, f.pid));
                queries.push(Query::of(f.to.location, f.pid));
            }
            queries.sort_unstable();
            queries.dedup();
        }
        let mut symbols: HashMap<Query, Option<culprit_symbols::SymbolId>> = HashMap::new();
        if wants_sym {
            let resolved = symbolizer.resolve_batch(profile, &queries);
            symbols = queries
                .iter()
                .zip(resolved)
                .map(|(q, r)| (*q, r.symbol))
                .collect();
        }
        let mut srclines: HashMap<Query, Option<String>> = HashMap::new();
        if wants_src {
            for q in &queries {
                let line = symbolizer
                    .source_line(profile, q.dso, q.file_offset)
                    .and_then(|f| Some(format!("{}:{}", f.file?, f.line.unwrap_or(0))));
                srclines.insert(*q, line);
            }
        }
        BranchNaming {
            profile,
            symbolizer,
            symbols,
            srclines,
        }
    }

    fn dso_name(&self, d: Option<DsoId>) -> String {
        d.and_then(|d| self.profile.dsos.get(d as usize))
            .map_or_else(|| "[unknown]".to_string(), |d| d.short_name.clone())
    }

    /// Key `k` of branch `f`: its grouping identity and its display value.
    fn key_value(&self, k: BranchKey, f: &Folded) -> (Ident, BranchKeyValue) {
        let plain = |text: String| BranchKeyValue {
            key: k,
            text,
            tag: None,
            dso: None,
            addr: None,
            number: None,
        };
        let end = match k {
            BranchKey::DsoFrom | BranchKey::SymbolFrom | BranchKey::SrclineFrom => f.from,
            _ => f.to,
        };
        match k {
            BranchKey::Comm => {
                let t = self.profile.str(f.comm).to_string();
                (Ident::Text(t.clone()), plain(t))
            }
            BranchKey::Pid => {
                let mut v = plain(format!("{}:{}", f.pid, self.profile.str(f.comm)));
                v.number = Some(i64::from(f.pid));
                (Ident::Num(f.pid as u64), v)
            }
            BranchKey::DsoFrom | BranchKey::DsoTo => {
                let t = self.dso_name(end.location.dso);
                (Ident::Text(t.clone()), plain(t))
            }
            BranchKey::SymbolFrom | BranchKey::SymbolTo => {
                let q = Query::of(end.location, f.pid);
                let sym =
                    self.symbols.get(&q).copied().flatten().and_then(|id| {
                        self.symbolizer.symbol(id).map(|s| (id, s.name.to_string()))
                    });
                let mut v = plain(String::new());
                v.tag = Some(match end.mode {
                    CpuMode::User | CpuMode::GuestUser => "[.]",
                    CpuMode::Kernel | CpuMode::GuestKernel => "[k]",
                    _ => "[H]",
                });
                match sym {
                    Some((id, name)) => {
                        v.text = name;
                        (Ident::Sym(SymKey::Named(id, end.location.dso)), v)
                    }
                    None => {
                        v.text = "[unknown]".to_string();
                        v.dso = Some(self.dso_name(end.location.dso));
                        v.addr = Some(end.location.file_offset);
                        (Ident::Sym(SymKey::Addr(end.addr)), v)
                    }
                }
            }
            BranchKey::SrclineFrom | BranchKey::SrclineTo => {
                let q = Query::of(end.location, f.pid);
                match self.srclines.get(&q).cloned().flatten() {
                    Some(line) => (Ident::Text(line.clone()), plain(line)),
                    None => {
                        let mut v = plain("[unknown]".to_string());
                        v.dso = Some(self.dso_name(end.location.dso));
                        v.addr = Some(end.location.file_offset);
                        (Ident::Sym(SymKey::Addr(end.addr)), v)
                    }
                }
            }
            BranchKey::Mispredict => {
                let t = if f.flags & 2 != 0 {
                    "N"
                } else if f.flags & 1 != 0 {
                    "Y"
                } else {
                    "N/A"
                };
                (Ident::Num(u64::from(f.flags & 3)), plain(t.to_string()))
            }
            BranchKey::Cycles => {
                let t = if f.cycles == 0 {
                    "-".to_string()
                } else {
                    f.cycles.to_string()
                };
                (Ident::Num(u64::from(f.cycles)), plain(t))
            }
            BranchKey::InTx => {
                let t = if f.flags & 4 != 0 { "X" } else { "." };
                (Ident::Num(u64::from(f.flags & 4)), plain(t.to_string()))
            }
            BranchKey::Abort => {
                let t = if f.flags & 8 != 0 { "A" } else { "." };
                (Ident::Num(u64::from(f.flags & 8)), plain(t.to_string()))
            }
        }
    }
}

/// The rows: branches with equal key identities grouped, their entries counted per event
/// (`ids`' order), in a stable order (by the folded key's addresses for equal counts).
fn group_rows(
    agg: &BranchAggregator,
    naming: &BranchNaming,
    keys: &[BranchKey],
    ids: &[EventId],
) -> Vec<BranchRow> {
    let column: HashMap<EventId, usize> = ids.iter().enumerate().map(|(i, &e)| (e, i)).collect();
    let mut rows: Vec<BranchRow> = Vec::new();
    let mut index: HashMap<Vec<Ident>, usize> = HashMap::new();
    let mut folded: Vec<(&Folded, &u64)> = agg.counts.iter().collect();
    // The map's order is random: sort by every field, so that equal counts keep one order
    // from run to run.
    folded.sort_unstable_by_key(|(f, _)| f.order());
    for (f, &n) in folded {
        let Some(&col) = column.get(&f.event) else {
            continue;
        };
        let (ident, values): (Vec<Ident>, Vec<BranchKeyValue>) =
            keys.iter().map(|&k| naming.key_value(k, f)).unzip();
        let r = *index.entry(ident).or_insert_with(|| {
            rows.push(BranchRow {
                keys: values,
                samples: vec![0; ids.len()],
            });
            rows.len() - 1
        });
        if let Some(c) = rows.get_mut(r).and_then(|row| row.samples.get_mut(col)) {
            *c += n;
        }
    }
    rows
}

/// `rows` biggest first by event `first`, then the next events (ties keep the stable
/// order), limited by `first`'s percentages and `--top`; with how many the limits hid.
fn ranked(
    mut rows: Vec<BranchRow>,
    first: usize,
    events: &[EventTotals],
    opts: &BranchOptions,
) -> (Vec<BranchRow>, usize) {
    let ncol = events.len();
    let value = |r: &BranchRow, k: usize| r.samples.get((first + k) % ncol).copied();
    rows.sort_by(|a, b| {
        (0..ncol)
            .map(|k| value(b, k).cmp(&value(a, k)))
            .fold(std::cmp::Ordering::Equal, std::cmp::Ordering::then)
    });
    let before = rows.len();
    if opts.percent_limit > 0.0 {
        rows.retain(|r| r.percent(first, events) >= opts.percent_limit);
    }
    if let Some(top) = opts.top {
        rows.truncate(top);
    }
    let hidden = before - rows.len();
    (rows, hidden)
}

/// Builds the branch-mode rows from an aggregator fed every sample of `profile`'s file.
pub fn branch_report(
    profile: &Profile,
    agg: &BranchAggregator,
    symbolizer: &mut Symbolizer,
    opts: &BranchOptions,
) -> Result<BranchReport, AnalysisError> {
    let (ids, events) = report_events(profile, agg, opts)?;
    let keys = agg.keys.clone();
    let naming = BranchNaming::new(profile, agg, symbolizer, &keys);
    let rows = group_rows(agg, &naming, &keys, &ids);
    let ncol = events.len();
    let sort_event = match &opts.sort_event {
        Some(name) => events.iter().position(|e| &e.name == name).ok_or_else(|| {
            AnalysisError::UnknownEvent {
                wanted: name.clone(),
                available: events.iter().map(|e| e.name.clone()).collect(),
            }
        })?,
        None => (0..ncol)
            .find(|&e| {
                rows.iter()
                    .any(|r| r.samples.get(e).is_some_and(|&n| n > 0))
            })
            .unwrap_or(0),
    };
    let event_tables = if opts.per_event && ncol > 1 {
        (0..ncol)
            .map(|e| {
                let mine = rows
                    .iter()
                    .filter(|r| r.samples.get(e).is_some_and(|&n| n > 0))
                    .cloned()
                    .collect();
                let (rows, hidden_rows) = ranked(mine, e, &events, opts);
                BranchTable { rows, hidden_rows }
            })
            .collect()
    } else {
        Vec::new()
    };
    let (rows, hidden_rows) = ranked(rows, sort_event, &events, opts);
    Ok(BranchReport {
        events,
        keys,
        hidden_rows,
        rows,
        sort_event,
        top: opts.top,
        percent_limit: opts.percent_limit,
        event_tables,
    })
}

/// The branch entries of a sample as perf's `brstack` field prints them, for tests and
/// tools: `0xFROM/0xTO/M|P|-/X|-/A|-/CYCLES` per entry.
pub fn brstack_text(entries: &[BranchEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let m = if e.mispred() {
            'M'
        } else if e.predicted() {
            'P'
        } else {
            '-'
        };
        out.push_str(&format!(
            "{:#x}/{:#x}/{m}/{}/{}/{} ",
            e.from,
            e.to,
            if e.in_tx() { 'X' } else { '-' },
            if e.abort() { 'A' } else { '-' },
            e.cycles()
        ));
    }
    out
}
