//! A branch-mode report as a text document, a CSV table and JSON
//! (docs/schemas/report-branch.schema.json).

use std::collections::BTreeMap;

use culprit_decode::model::Profile;
use culprit_output::json::Round4;
use culprit_output::{Column, Document, Table, Values};
use serde::Serialize;

use super::{BranchKey, BranchKeyValue, BranchReport, BranchRow};
use crate::hotspots::{DocOptions, EventJson, Layout};
use crate::recording::{header_lines, RecordingMeta, Stopped};

/// The version of the branch-mode JSON (`schema`).
pub const BRANCH_SCHEMA: u32 = 1;

/// A key's text as the text report shows it: symbols with their tag, unresolved addresses
/// as `[unknown] DSO+0xOFFSET` (like the hotspot report).
fn key_text(v: &BranchKeyValue) -> String {
    let base = match (v.addr, &v.dso) {
        (Some(a), Some(d)) => format!("[unknown] {d}+{a:#x}"),
        _ => v.text.clone(),
    };
    match v.tag {
        Some(t) => format!("{t} {base}"),
        None => base,
    }
}

/// The branch report `r` of `profile` as a text document: one table per event (or, with
/// [`Layout::Group`] or one event, one table with the events side by side).
pub fn branch_document(r: &BranchReport, profile: &Profile, o: &DocOptions) -> Document {
    let mut doc = Document::new();
    for l in header_lines(profile, &o.file, false) {
        doc.header(l);
    }
    doc.header(format!("Total lost samples: {}", profile.lost));
    let apart = !r.event_tables.is_empty() && o.layout == Layout::PerEvent;
    let group = r.events.len() > 1 && !apart;
    let event_line = |i: usize| {
        let e = &r.events[i];
        format!(
            "Event '{}': {} branch entries (each counts as one sample)",
            e.name, e.samples
        )
    };
    if !apart {
        for i in 0..r.events.len() {
            let label = if group {
                format!("[{}] ", i + 1)
            } else {
                String::new()
            };
            doc.header(format!("{label}{}", event_line(i)));
        }
    }
    let names: Vec<&str> = r.keys.iter().map(|k| k.name()).collect();
    let mut sort = format!("Sort: {}; branch mode", names.join(","));
    if group {
        if let Some(e) = r.events.get(r.sort_event) {
            sort.push_str(&format!("; rows by '{}'", e.name));
        }
    }
    doc.header(sort);
    if apart {
        for (t, e) in r.event_tables.iter().zip(&r.events) {
            if t.hidden_rows > 0 {
                doc.header(format!(
                    "{} rows of '{}' hidden by --top/--percent-limit",
                    t.hidden_rows, e.name
                ));
            }
        }
        for (i, t) in r.event_tables.iter().enumerate() {
            let title = event_line(i);
            let mut table = text_table(r, &t.rows, &[i], false);
            table.title = Some(title);
            table.empty = Some(empty_text(r, t.hidden_rows));
            doc.table(table);
        }
    } else {
        if r.hidden_rows > 0 {
            doc.header(format!(
                "{} rows hidden by --top/--percent-limit",
                r.hidden_rows
            ));
        }
        let events: Vec<usize> = (0..r.events.len()).collect();
        let mut table = text_table(r, &r.rows, &events, group);
        table.empty = Some(empty_text(r, r.hidden_rows));
        doc.table(table);
    }
    doc
}

/// What an empty table says.
fn empty_text(r: &BranchReport, hidden: usize) -> String {
    if r.top == Some(0) {
        "(no rows: --top 0)".to_string()
    } else if hidden > 0 {
        format!(
            "(no rows: none of {hidden} rows reaches --percent-limit {})",
            r.percent_limit
        )
    } else {
        "(no branch entries)".to_string()
    }
}

/// The narrowest a key column gets when a line is fitted to the terminal.
fn key_min_width(k: BranchKey) -> usize {
    match k {
        BranchKey::SymbolFrom
        | BranchKey::SymbolTo
        | BranchKey::SrclineFrom
        | BranchKey::SrclineTo => 16,
        _ => 10,
    }
}

/// A text table of `rows` with the columns of `events` (`labels`: short names with the
/// event's number) and the keys.
fn text_table(r: &BranchReport, rows: &[BranchRow], events: &[usize], labels: bool) -> Table {
    let mut columns = Vec::new();
    let mut highlight = None;
    for &e in events {
        let label = |col: &str| {
            if labels {
                format!("{col}[{}]", e + 1)
            } else {
                col.to_string()
            }
        };
        let name = &r.events[e].name;
        if highlight.is_none() && (!labels || e == r.sort_event) {
            highlight = Some(columns.len());
        }
        columns.push(Column::new(
            label("Overhead"),
            format!("{name}:percent"),
            Values::Percent(rows.iter().map(|row| row.percent(e, &r.events)).collect()),
        ));
        columns.push(Column::new(
            label("Samples"),
            format!("{name}:samples"),
            Values::Count(
                rows.iter()
                    .map(|row| row.samples.get(e).copied().unwrap_or(0))
                    .collect(),
            ),
        ));
    }
    for (j, k) in r.keys.iter().enumerate() {
        let texts = rows
            .iter()
            .map(|row| row.keys.get(j).map(key_text).unwrap_or_default())
            .collect();
        columns
            .push(Column::new(k.header(), k.name(), Values::Text(texts)).shrink(key_min_width(*k)));
    }
    let mut t = Table::new(columns);
    t.highlight = highlight;
    t
}

/// Whether a key has a `_level` column in CSV (the symbol keys' privilege tag).
fn has_level(k: BranchKey) -> bool {
    matches!(k, BranchKey::SymbolFrom | BranchKey::SymbolTo)
}

/// Whether a key has an `_addr` column in CSV (unresolved addresses).
fn has_addr(k: BranchKey) -> bool {
    matches!(
        k,
        BranchKey::SymbolFrom | BranchKey::SymbolTo | BranchKey::SrclineFrom | BranchKey::SrclineTo
    )
}

/// The branch report as one CSV table: per key its text (and `_level`, `_addr`), then per
/// event its entries and percentage.
pub fn branch_csv_table(r: &BranchReport) -> Table {
    let mut columns = Vec::new();
    for (j, &k) in r.keys.iter().enumerate() {
        let key = |f: &dyn Fn(&BranchKeyValue) -> String| -> Values {
            Values::Text(
                r.rows
                    .iter()
                    .map(|row| row.keys.get(j).map(f).unwrap_or_default())
                    .collect(),
            )
        };
        columns.push(Column::new(k.header(), k.name(), key(&|v| v.text.clone())));
        if has_level(k) {
            columns.push(Column::new(
                "Level",
                format!("{}_level", k.name()),
                key(&|v| v.tag.unwrap_or("").to_string()),
            ));
        }
        if has_addr(k) {
            columns.push(Column::new(
                "Address",
                format!("{}_addr", k.name()),
                key(&|v| v.addr.map(|a| format!("{a:#x}")).unwrap_or_default()),
            ));
        }
    }
    for (e, ev) in r.events.iter().enumerate() {
        columns.push(Column::new(
            "Samples",
            format!("{}:samples", ev.name),
            Values::Count(
                r.rows
                    .iter()
                    .map(|row| row.samples.get(e).copied().unwrap_or(0))
                    .collect(),
            ),
        ));
        columns.push(Column::new(
            "Overhead",
            format!("{}:percent", ev.name),
            Values::Percent(r.rows.iter().map(|row| row.percent(e, &r.events)).collect()),
        ));
    }
    Table::new(columns)
}

/// The JSON of a branch-mode report.
#[derive(Serialize)]
pub struct BranchJson {
    /// [`BRANCH_SCHEMA`].
    pub schema: u32,
    /// Always false (branch mode has no children).
    pub children: bool,
    /// The events reported; their samples and period are their branch entries.
    pub events: Vec<EventJson>,
    /// The input file.
    pub file: String,
    /// Rows dropped by `--top` or `--percent-limit`.
    pub hidden_rows: usize,
    /// The recording's header facts.
    pub meta: RecordingMeta,
    /// Always `branch`.
    pub mode: &'static str,
    /// The rows, sorted by `sort_event`.
    pub rows: Vec<BranchRowJson>,
    /// The sort keys.
    pub sort: Vec<&'static str>,
    /// The event the rows are sorted and limited by.
    pub sort_event: String,
    /// Where reading a damaged file stopped, or null.
    pub stopped: Option<Stopped>,
    /// Warnings about the report.
    pub warnings: Vec<String>,
}

/// A value of a row's `keys` object.
#[derive(Serialize)]
#[serde(untagged)]
pub enum BranchKeyJson {
    /// pid.
    Number(i64),
    /// Everything else.
    Text(String),
}

/// A branch-mode row.
#[derive(Serialize)]
pub struct BranchRowJson {
    /// The keys' values, with `KEY_level`, `KEY_addr` and `KEY_dso` where they apply.
    pub keys: BTreeMap<String, BranchKeyJson>,
    /// Percentage of each event's entries.
    pub percent: BTreeMap<String, Round4>,
    /// Entries per event (each has period 1).
    pub period: BTreeMap<String, u64>,
    /// Entries per event.
    pub samples: BTreeMap<String, u64>,
}

/// The JSON of branch report `r` of `file`, read into `profile`, with `warnings`.
pub fn branch_json(
    r: &BranchReport,
    profile: &Profile,
    file: &str,
    warnings: Vec<String>,
) -> BranchJson {
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let mut keys = BTreeMap::new();
            for v in &row.keys {
                let name = v.key.name();
                keys.insert(
                    name.to_string(),
                    match v.number {
                        Some(n) => BranchKeyJson::Number(n),
                        None => BranchKeyJson::Text(v.text.clone()),
                    },
                );
                if let Some(t) = v.tag {
                    keys.insert(format!("{name}_level"), BranchKeyJson::Text(t.to_string()));
                }
                if let Some(a) = v.addr {
                    keys.insert(
                        format!("{name}_addr"),
                        BranchKeyJson::Text(format!("{a:#x}")),
                    );
                }
                if let Some(d) = &v.dso {
                    keys.insert(format!("{name}_dso"), BranchKeyJson::Text(d.clone()));
                }
            }
            let per_event = |f: &dyn Fn(usize) -> u64| -> BTreeMap<String, u64> {
                r.events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.name.clone(), f(i)))
                    .collect()
            };
            let entries = |i: usize| row.samples.get(i).copied().unwrap_or(0);
            BranchRowJson {
                keys,
                percent: r
                    .events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.name.clone(), Round4(row.percent(i, &r.events))))
                    .collect(),
                period: per_event(&entries),
                samples: per_event(&entries),
            }
        })
        .collect();
    BranchJson {
        schema: BRANCH_SCHEMA,
        children: false,
        events: r
            .events
            .iter()
            .map(|e| EventJson {
                name: e.name.clone(),
                samples: e.samples,
                period: e.period,
                lost: e.lost,
            })
            .collect(),
        file: file.to_string(),
        hidden_rows: r.hidden_rows,
        meta: RecordingMeta::of(profile),
        mode: "branch",
        rows,
        sort: r.keys.iter().map(|k| k.name()).collect(),
        sort_event: r
            .events
            .get(r.sort_event)
            .map(|e| e.name.clone())
            .unwrap_or_default(),
        stopped: profile.stopped.clone(),
        warnings,
    }
}
