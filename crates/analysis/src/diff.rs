//! The difference of two profiles, computed as `perf diff` computes it: both files grouped
//! by the same sort keys ([`crate::hotspots`]), rows matched by their keys' names (DSO and
//! symbol names by default, so two builds of a program compare), per event name.
//!
//! For each event recorded in both files and each row:
//! - **Baseline** is the row's share of the baseline file's event total (period), in %;
//! - **Delta** is its share in the other file minus its baseline share, in percentage points
//!   (perf's `-c delta`): `+2.00%` means the row's share grew by two points;
//! - **Ratio** is the other file's period over the baseline's (perf's `-c ratio`), absent
//!   when the row is new.
//!
//! Rows only in the other file are **new** (perf shows them with an empty Baseline); rows only
//! in the baseline have **vanished** (perf shows an empty Delta; here their Delta is minus
//! their baseline share, so that they sort with the other changes). Rows are sorted by the
//! absolute Delta, the biggest change first (perf's default `-c delta-abs`), ties by the
//! baseline share, then by the keys. Percentages are of every sample of the event in the file
//! (perf's `--percentage absolute`).

use std::collections::HashMap;

use culprit_output::json::Round4;
use culprit_output::units::{human_count, human_ns};
use culprit_output::{Column, Document, Table, TextColumn, Values};
use serde::{Serialize, Serializer};

use culprit_decode::ReadError;
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::hotspots::{hotspots_aggregated, key_header, key_text_into, Hotspots, Row};
use crate::hotspots::{HotspotOptions, SampleAggregator};
use crate::recording::{period_is_ns, RecordingMeta, Stopped};
use crate::{pct, AnalysisError, SortKey};

/// The version of the diff JSON (`schema`), bumped on incompatible changes.
pub const SCHEMA: u32 = 1;

/// perf diff's default sort keys: `dso,sym`.
pub const DEFAULT_KEYS: [SortKey; 2] = [SortKey::Dso, SortKey::Sym];

/// One of the two profiles compared: its hotspots (grouped by the diff's keys, self values,
/// no limits) and what the report says about its file.
#[derive(Debug, Clone, Copy)]
pub struct DiffSide<'a> {
    /// The file as the user named it.
    pub file: &'a str,
    /// Its hotspots.
    pub hotspots: &'a Hotspots,
    /// Its recording's header facts.
    pub meta: &'a RecordingMeta,
    /// Whether the periods of each of its events (by index in `hotspots.events`) are
    /// nanoseconds (cpu-clock, task-clock), for the header lines.
    pub period_is_ns: &'a [bool],
    /// The perf_event_attr type and config of each of its events (by index in
    /// `hotspots.events`): events match across files by them, as perf diff matches them
    /// (`task-clock` and `task-clock/period=100000/` are one event); by name when absent.
    pub event_kinds: &'a [(u32, u64)],
    /// Where reading a damaged file stopped.
    pub stopped: Option<&'a Stopped>,
}

/// The diff of two profiles (its JSON is docs/schemas/diff.schema.json).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The baseline file.
    pub baseline: DiffFile,
    /// The file compared with it.
    pub other: DiffFile,
    /// The sort keys rows are matched by.
    pub sort: Vec<&'static str>,
    /// One entry per event recorded in both files, in the baseline's order.
    pub events: Vec<EventDiff>,
    /// Events only the baseline recorded (not compared).
    pub only_in_baseline: Vec<String>,
    /// Events only the other file recorded (not compared).
    pub only_in_other: Vec<String>,
    /// Warnings about the inputs.
    pub warnings: Vec<String>,
}

/// One compared file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffFile {
    /// The file as the user named it.
    pub file: String,
    /// Its recording's header facts.
    pub meta: RecordingMeta,
    /// Where reading a damaged file stopped, or null (the diff covers what was read).
    pub stopped: Option<Stopped>,
}

/// Totals of one event in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EventSide {
    /// All samples of the event in the file.
    pub samples: u64,
    /// Their summed period: the percentage base.
    pub period: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Whether the period is in nanoseconds (time events).
    #[serde(skip)]
    pub period_is_ns: bool,
}

/// The rows of one event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventDiff {
    /// The event's name in the baseline.
    pub name: String,
    /// Its name in the other file, when that differs (other modifiers or terms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_name: Option<String>,
    /// Its totals in the baseline.
    pub baseline: EventSide,
    /// Its totals in the other file.
    pub other: EventSide,
    /// The rows, biggest absolute Delta first.
    pub rows: Vec<DiffRow>,
}

/// Whether a row is in both files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In both.
    Both,
    /// Only in the other file (perf's empty Baseline).
    New,
    /// Only in the baseline (perf's empty Delta).
    Vanished,
}

impl Status {
    /// The name used in JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Status::Both => "both",
            Status::New => "new",
            Status::Vanished => "vanished",
        }
    }

    /// The marker text output shows: `[+]` new, `[-]` vanished, empty otherwise.
    pub fn marker(self) -> &'static str {
        match self {
            Status::Both => "",
            Status::New => "[+]",
            Status::Vanished => "[-]",
        }
    }
}

/// A row's values in one file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RowSide {
    /// Samples of the row.
    pub samples: u64,
    /// Their summed period.
    pub period: u64,
    /// The period's share of the file's event total, in %.
    pub percent: Round4,
}

/// The value of one key of a row (JSON: a number for pid, tid, cpu; text otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum KeyValueJson {
    /// pid, tid, cpu.
    Number(i64),
    /// A name, or `[unknown]`.
    Text(String),
}

/// One row: a key combination and its values in both files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRow {
    /// The row's keys by name (as in `culprit report`'s JSON: an unresolved symbol also has
    /// `dso` and `sym_addr`).
    pub keys: Keys,
    /// perf's privilege tag of the symbol (`[.]`, `[k]`), with a `sym` key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sym_level: Option<&'static str>,
    /// In both files, new or vanished.
    pub status: Status,
    /// Its values in the baseline (null when new).
    pub baseline: Option<RowSide>,
    /// Its values in the other file (null when vanished).
    pub other: Option<RowSide>,
    /// Other share minus baseline share, in percentage points.
    pub delta: Round4,
    /// Other period over baseline period (null when new).
    pub ratio: Option<f64>,
    /// Each key as the text report shows it (`[.] main`), in sort-key order.
    #[serde(skip)]
    pub texts: Vec<String>,
}

/// The keys of a row, serialized as an object in name order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Keys(pub Vec<(&'static str, KeyValueJson)>);

impl Serialize for Keys {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// What [`diff_inputs`] compares.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Match keys ([`DEFAULT_KEYS`]: perf diff's `dso,sym`); memory keys are refused.
    pub keys: Vec<SortKey>,
    /// Only these events (each must be in both files); empty: every event of both.
    pub events: Vec<String>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            keys: DEFAULT_KEYS.to_vec(),
            events: Vec::new(),
        }
    }
}

/// Why two files could not be diffed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// A file could not be read (the read error names the file).
    #[error("{source}")]
    Read {
        /// The file as given.
        file: String,
        /// Why.
        source: ReadError,
    },
    /// The options do not fit a file (an unknown event).
    #[error("{file}: {source}")]
    Analysis {
        /// The file as given.
        file: String,
        /// Why.
        source: AnalysisError,
    },
    /// A memory key: rows of memory mode weigh sample weights, not periods.
    #[error("--sort {0}: memory keys are not supported by diff (rows are compared by period)")]
    MemoryKey(&'static str),
}

/// One file read and grouped for a diff.
struct Grouped {
    hotspots: Hotspots,
    meta: RecordingMeta,
    period_is_ns: Vec<bool>,
    event_kinds: Vec<(u32, u64)>,
    stopped: Option<Stopped>,
    warnings: Vec<String>,
}

/// Reads `input` (no call chains) and groups its samples by `opts`' keys.
fn group(
    input: &ProfileInput,
    opts: &DiffOptions,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<Grouped, DiffError> {
    let file = input.path().display().to_string();
    let hopts = HotspotOptions {
        keys: opts.keys.clone(),
        events: opts.events.clone(),
        ..HotspotOptions::default()
    };
    let mut symbolizer = input.symbolizer();
    let mut agg = SampleAggregator::new(false, &hopts.filters);
    agg.only_for(&hopts);
    let plan = ReadPlan {
        unwind: false,
        skip_callchains: true,
        skip_locations: false,
        parallel: true,
    };
    let (profile, mut agg) = input
        .fold(&plan, Some(&mut symbolizer), agg, progress)
        .map_err(|source| DiffError::Read {
            file: file.clone(),
            source,
        })?;
    agg.finish();
    let hotspots = hotspots_aggregated(&profile, &agg, &mut symbolizer, &hopts, &mut |_, _| {})
        .map_err(|source| DiffError::Analysis {
            file: file.clone(),
            source,
        })?;
    let stopped = profile.stopped.clone();
    let warnings = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .map(|w| format!("{file}: {w}"))
        .chain(stopped.as_ref().map(|s| {
            format!(
                "{file}: reading stopped at byte offset {}: {}; the diff covers the {} records \
                 read before it",
                s.offset, s.reason, s.records_read
            )
        }))
        .collect();
    Ok(Grouped {
        period_is_ns: hotspots
            .events
            .iter()
            .map(|e| period_is_ns(&profile, e.id))
            .collect(),
        event_kinds: hotspots
            .events
            .iter()
            .filter_map(|e| profile.events.get(usize::from(e.id)))
            .map(|e| (e.attr_type, e.config))
            .collect(),
        meta: RecordingMeta::of(&profile),
        hotspots,
        stopped,
        warnings,
    })
}

/// Reads both files (streaming, without call chains), groups each by `opts.keys` and diffs
/// `other` against `baseline`. `progress[i](done, total)` reports the bytes read of file `i`.
pub fn diff_inputs(
    baseline: &ProfileInput,
    other: &ProfileInput,
    opts: &DiffOptions,
    progress: [Box<dyn FnMut(u64, u64) + Send>; 2],
) -> Result<Diff, DiffError> {
    if let Some(k) = opts.keys.iter().find(|k| k.is_memory()) {
        return Err(DiffError::MemoryKey(k.name()));
    }
    let [pa, pb] = progress;
    let a = group(baseline, opts, pa)?;
    let b = group(other, opts, pb)?;
    let (file_a, file_b) = (
        baseline.path().display().to_string(),
        other.path().display().to_string(),
    );
    let warnings = a.warnings.iter().chain(&b.warnings).cloned().collect();
    Ok(diff(a.side(&file_a), b.side(&file_b), warnings))
}

impl Grouped {
    fn side<'a>(&'a self, file: &'a str) -> DiffSide<'a> {
        DiffSide {
            file,
            hotspots: &self.hotspots,
            meta: &self.meta,
            period_is_ns: &self.period_is_ns,
            event_kinds: &self.event_kinds,
            stopped: self.stopped.as_ref(),
        }
    }
}

/// Diffs `other` against `baseline`. Both must be grouped by the same keys (the baseline's
/// are used to match rows); each is read whole, with no `--top` or percent limit.
pub fn diff(baseline: DiffSide<'_>, other: DiffSide<'_>, warnings: Vec<String>) -> Diff {
    let (a, b) = (baseline.hotspots, other.hotspots);
    let b_index: HashMap<String, usize> = b
        .rows()
        .enumerate()
        .map(|(i, row)| (identity(&row), i))
        .collect();
    let a_ids: Vec<String> = a.rows().map(|row| identity(&row)).collect();
    let a_index: HashMap<&str, usize> = a_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut events = Vec::new();
    let mut only_in_baseline = Vec::new();
    for (ea, event) in a.events.iter().enumerate() {
        let Some(eb) = matching_event(&baseline, ea, &other) else {
            only_in_baseline.push(event.name.clone());
            continue;
        };
        let side = |s: &DiffSide, e: usize| {
            let t = &s.hotspots.events[e];
            EventSide {
                samples: t.samples,
                period: t.period,
                lost: t.lost,
                period_is_ns: s.period_is_ns.get(e).copied().unwrap_or(false),
            }
        };
        let (ta, tb) = (side(&baseline, ea), side(&other, eb));
        let mut rows = Vec::new();
        for (i, row) in a.rows().enumerate() {
            if row.samples(ea) == 0 {
                continue;
            }
            let pair = b_index
                .get(&a_ids[i])
                .map(|&j| b.row(j))
                .filter(|r| r.samples(eb) > 0);
            rows.push(diff_row(&row, ea, ta, pair.as_ref().map(|r| (r, eb)), tb));
        }
        for row in b.rows() {
            if row.samples(eb) == 0 {
                continue;
            }
            let paired = a_index
                .get(identity(&row).as_str())
                .is_some_and(|&i| a.row(i).samples(ea) > 0);
            if !paired {
                rows.push(new_row(&row, eb, tb));
            }
        }
        rows.sort_by(|x, y| {
            let base = |r: &DiffRow| r.baseline.map_or(0.0, |s| s.percent.0);
            y.delta
                .0
                .abs()
                .total_cmp(&x.delta.0.abs())
                .then_with(|| base(y).total_cmp(&base(x)))
                .then_with(|| x.texts.cmp(&y.texts))
        });
        let other_name = &b.events[eb].name;
        events.push(EventDiff {
            name: event.name.clone(),
            other_name: (*other_name != event.name).then(|| other_name.clone()),
            baseline: ta,
            other: tb,
            rows,
        });
    }
    let only_in_other = (0..b.events.len())
        .filter(|&eb| matching_event(&other, eb, &baseline).is_none())
        .map(|eb| b.events[eb].name.clone())
        .collect();
    Diff {
        schema: SCHEMA,
        baseline: DiffFile {
            file: baseline.file.to_string(),
            meta: baseline.meta.clone(),
            stopped: baseline.stopped.cloned(),
        },
        other: DiffFile {
            file: other.file.to_string(),
            meta: other.meta.clone(),
            stopped: other.stopped.cloned(),
        },
        sort: a.keys.iter().map(|k| k.name()).collect(),
        events,
        only_in_baseline,
        only_in_other,
        warnings,
    }
}

/// The event of `other` that event `e` of `side` is: the same attr type and config (as
/// perf diff), the same name when the kinds are unknown.
fn matching_event(side: &DiffSide<'_>, e: usize, other: &DiffSide<'_>) -> Option<usize> {
    let events = &other.hotspots.events;
    match side.event_kinds.get(e) {
        Some(kind) => (0..events.len()).find(|&i| other.event_kinds.get(i) == Some(kind)),
        None => {
            let name = &side.hotspots.events.get(e)?.name;
            events.iter().position(|x| x.name == *name)
        }
    }
}

/// What matches a row across files: each key's name (or number), DSO and address.
fn identity(row: &Row) -> String {
    let mut id = String::new();
    for k in row.keys() {
        id.push_str(row.text(&k));
        id.push('\u{1}');
        if let Some(d) = row.dso(&k) {
            id.push_str(d);
        }
        id.push('\u{1}');
        if let Some(n) = k.number() {
            id.push_str(&n.to_string());
        }
        if let Some(a) = k.addr() {
            id.push_str(&format!("{a:x}"));
        }
        id.push('\u{2}');
    }
    id
}

/// A row's keys (JSON) and texts (text output), as `culprit report` shows them.
fn keys_of(row: &Row) -> (Keys, Option<&'static str>, Vec<String>) {
    let mut keys: Vec<(&'static str, KeyValueJson)> = Vec::new();
    let mut put = |name: &'static str, v: KeyValueJson, replace: bool| match keys
        .iter_mut()
        .find(|e| e.0 == name)
    {
        Some(e) if replace => e.1 = v,
        Some(_) => {}
        None => keys.push((name, v)),
    };
    let mut level = None;
    let mut texts = Vec::new();
    for k in row.keys() {
        let v = match k.number() {
            Some(n) => KeyValueJson::Number(n),
            None => KeyValueJson::Text(row.text(&k).to_string()),
        };
        put(k.key.name(), v, true);
        match k.key {
            SortKey::Ip => {
                if let Some(d) = row.dso(&k) {
                    put("dso", KeyValueJson::Text(d.to_string()), false);
                }
            }
            SortKey::Sym => {
                level = k.tag();
                if let Some(a) = k.addr() {
                    put("sym_addr", KeyValueJson::Text(format!("{a:#x}")), true);
                    if let Some(d) = row.dso(&k) {
                        put("dso", KeyValueJson::Text(d.to_string()), false);
                    }
                }
            }
            _ => {}
        }
        let mut text = String::new();
        key_text_into(&mut text, row, &k);
        texts.push(text);
    }
    keys.sort_by(|a, b| a.0.cmp(b.0));
    (Keys(keys), level, texts)
}

fn side_of(row: &Row, e: usize, total: EventSide) -> RowSide {
    RowSide {
        samples: row.samples(e),
        period: row.period(e),
        percent: Round4(pct(row.period(e), total.period)),
    }
}

/// A baseline row, with its pair in the other file if there is one.
fn diff_row(
    row: &Row,
    e: usize,
    total: EventSide,
    pair: Option<(&Row, usize)>,
    other_total: EventSide,
) -> DiffRow {
    let (keys, sym_level, texts) = keys_of(row);
    let base = side_of(row, e, total);
    let other = pair.map(|(r, eb)| side_of(r, eb, other_total));
    let other_period = other.map_or(0, |s| s.period);
    DiffRow {
        keys,
        sym_level,
        status: if other.is_some() {
            Status::Both
        } else {
            Status::Vanished
        },
        delta: Round4(pct(other_period, other_total.period) - pct(base.period, total.period)),
        ratio: (base.period > 0).then(|| other_period as f64 / base.period as f64),
        baseline: Some(base),
        other,
        texts,
    }
}

/// A row only the other file has.
fn new_row(row: &Row, e: usize, other_total: EventSide) -> DiffRow {
    let (keys, sym_level, texts) = keys_of(row);
    let other = side_of(row, e, other_total);
    DiffRow {
        keys,
        sym_level,
        status: Status::New,
        delta: Round4(pct(other.period, other_total.period)),
        ratio: None,
        baseline: None,
        other: Some(other),
        texts,
    }
}

/// `1751 samples, event count 437750000 (437.75 ms), 0 lost`.
fn totals_text(t: &EventSide) -> String {
    let human = if t.period_is_ns {
        human_ns(t.period)
    } else {
        human_count(t.period)
    };
    format!(
        "{} samples, event count {} ({human}), {} lost",
        t.samples, t.period, t.lost
    )
}

/// The narrowest a key column gets when a line is fitted to the terminal.
fn key_min_width(k: &str) -> usize {
    match k {
        "sym" | "srcline" | "srcfile" => 16,
        _ => 10,
    }
}

fn sort_keys(d: &Diff) -> Vec<SortKey> {
    SortKey::parse_list(&d.sort.join(",")).unwrap_or_default()
}

impl culprit_output::Render for Diff {
    fn document(&self) -> Document {
        document(self)
    }

    fn csv_tables(&self) -> Vec<Table> {
        vec![csv_table(self)]
    }

    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        culprit_output::json::write(out, self)
    }
}

/// The diff as a text document: header lines, then one table per event (Baseline, Delta,
/// Ratio, a `[+]`/`[-]` marker for new and vanished rows, the keys).
pub fn document(d: &Diff) -> Document {
    let mut doc = Document::new();
    let file_line = |what: &str, f: &DiffFile| match &f.meta.cmdline {
        Some(c) => format!("{what}: {} (command line: {c})", f.file),
        None => format!("{what}: {}", f.file),
    };
    doc.header(file_line("Baseline", &d.baseline));
    doc.header(file_line("Other", &d.other));
    doc.header(format!(
        "Sort: {}; rows by |Delta|, the biggest change first",
        d.sort.join(",")
    ));
    doc.header(
        "Baseline = share of the baseline's event total; Delta = other share - baseline share \
         (points); Ratio = other period / baseline period; [+] new (only in other), [-] \
         vanished (only in baseline)",
    );
    for name in &d.only_in_baseline {
        doc.header(format!(
            "Event '{name}' is only in the baseline: not compared"
        ));
    }
    for name in &d.only_in_other {
        doc.header(format!(
            "Event '{name}' is only in the other file: not compared"
        ));
    }
    let keys = sort_keys(d);
    for e in &d.events {
        let n = e.rows.len();
        let mut baseline = Vec::with_capacity(n);
        let mut delta = Vec::with_capacity(n);
        let mut ratio = Vec::with_capacity(n);
        let mut marker = TextColumn::with_capacity(n, n);
        let mut texts: Vec<TextColumn> = keys
            .iter()
            .map(|_| TextColumn::with_capacity(n, n * 24))
            .collect();
        for r in &e.rows {
            baseline.push(r.baseline.map_or(f64::NAN, |s| s.percent.0));
            delta.push(r.delta.0);
            ratio.push(r.ratio.unwrap_or(f64::NAN));
            marker.push(r.status.marker());
            for (col, t) in texts.iter_mut().zip(&r.texts) {
                col.push(t);
            }
        }
        let mut columns = vec![
            Column::new("Baseline", "baseline_percent", Values::Percent(baseline)),
            Column::new("Delta", "delta", Values::Delta(delta)),
            Column::new("Ratio", "ratio", Values::Float(ratio, 6)),
            Column::new("+/-", "marker", Values::Texts(marker)),
        ];
        for (k, col) in keys.iter().zip(texts) {
            columns.push(
                Column::new(key_header(*k), k.name(), Values::Texts(col))
                    .shrink(key_min_width(k.name())),
            );
        }
        let mut t = Table::new(columns);
        let label = match &e.other_name {
            Some(o) => format!("Event '{}' (other file: '{o}')", e.name),
            None => format!("Event '{}'", e.name),
        };
        t.title = Some(format!(
            "{label}: baseline {}; other {}",
            totals_text(&e.baseline),
            totals_text(&e.other)
        ));
        t.empty = Some("(no samples of the event in either file)".to_string());
        doc.table(t);
    }
    if d.events.is_empty() {
        doc.lines(vec![
            "(no event is recorded in both files: nothing to compare)".to_string(),
        ]);
    }
    doc
}

/// The diff as one CSV table: per row its event, keys (an unresolved symbol as `[unknown]
/// 0xADDR`), status, samples, period and percent in each file, delta and ratio (empty when
/// absent).
pub fn csv_table(d: &Diff) -> Table {
    let keys = sort_keys(d);
    let n: usize = d.events.iter().map(|e| e.rows.len()).sum();
    let mut event = TextColumn::with_capacity(n, n * 8);
    let mut key_cols: Vec<TextColumn> = keys
        .iter()
        .map(|_| TextColumn::with_capacity(n, n * 16))
        .collect();
    let mut status = TextColumn::with_capacity(n, n * 4);
    let (mut a_samples, mut a_period, mut a_percent) = (Vec::new(), Vec::new(), Vec::new());
    let (mut b_samples, mut b_period, mut b_percent) = (Vec::new(), Vec::new(), Vec::new());
    let (mut delta, mut ratio) = (Vec::new(), Vec::new());
    for e in &d.events {
        for r in &e.rows {
            event.push(&e.name);
            for (col, &k) in key_cols.iter_mut().zip(&keys) {
                let text = r
                    .keys
                    .0
                    .iter()
                    .find(|(name, _)| *name == k.name())
                    .map(|(_, v)| match v {
                        KeyValueJson::Number(n) => n.to_string(),
                        KeyValueJson::Text(t) => t.clone(),
                    })
                    .unwrap_or_default();
                let addr = (k == SortKey::Sym)
                    .then(|| r.keys.0.iter().find(|(name, _)| *name == "sym_addr"))
                    .flatten();
                match addr {
                    Some((_, KeyValueJson::Text(a))) => col.push(&format!("{text} {a}")),
                    _ => col.push(&text),
                }
            }
            status.push(r.status.name());
            a_samples.push(r.baseline.map_or(0, |s| s.samples));
            a_period.push(r.baseline.map_or(0, |s| s.period));
            a_percent.push(r.baseline.map_or(f64::NAN, |s| s.percent.0));
            b_samples.push(r.other.map_or(0, |s| s.samples));
            b_period.push(r.other.map_or(0, |s| s.period));
            b_percent.push(r.other.map_or(f64::NAN, |s| s.percent.0));
            delta.push(r.delta.0);
            ratio.push(r.ratio.unwrap_or(f64::NAN));
        }
    }
    let mut columns = vec![Column::new("Event", "event", Values::Texts(event))];
    for (k, col) in keys.iter().zip(key_cols) {
        columns.push(Column::new(key_header(*k), k.name(), Values::Texts(col)));
    }
    columns.extend([
        Column::new("Status", "status", Values::Texts(status)),
        Column::new(
            "Baseline samples",
            "baseline_samples",
            Values::Count(a_samples),
        ),
        Column::new(
            "Baseline period",
            "baseline_period",
            Values::Count(a_period),
        ),
        Column::new("Baseline", "baseline_percent", Values::Percent(a_percent)),
        Column::new("Samples", "samples", Values::Count(b_samples)),
        Column::new("Period", "period", Values::Count(b_period)),
        Column::new("Percent", "percent", Values::Percent(b_percent)),
        Column::new("Delta", "delta", Values::Delta(delta)),
        Column::new("Ratio", "ratio", Values::Float(ratio, 6)),
    ]);
    Table::new(columns)
}
