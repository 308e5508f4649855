//! A hotspot report as a document of the output model: `#` header lines, one table per
//! event (perf's layout) or all events side by side, call graphs under rows; and the CSV
//! table.

use culprit_output::{
    Column, Document, RowTree, Table, TextColumn, Tree, TreeNode as OutNode, Values,
};

use super::*;
use crate::recording::header_lines;

/// How the events of a report with several are laid out in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One table per event, each sorted and limited by its event (perf's default).
    #[default]
    PerEvent,
    /// One table, the events' columns side by side (short names: `Self[1]`), sorted by the
    /// sort event (perf's `--group`).
    Group,
}

/// What [`document`] shows besides the report.
#[derive(Debug, Clone, Default)]
pub struct DocOptions {
    /// The input file as the user named it.
    pub file: String,
    /// How several events are laid out.
    pub layout: Layout,
}

/// The column title of a sort key in text output (perf's).
pub fn key_header(k: SortKey) -> &'static str {
    match k {
        SortKey::Comm => "Command",
        SortKey::Pid => "Pid:Command",
        SortKey::Tid => "Tid:Command",
        SortKey::Dso => "Shared Object",
        SortKey::Sym => "Symbol",
        SortKey::Srcline => "Source:Line",
        SortKey::Srcfile => "Source File",
        SortKey::Ip => "Address",
        SortKey::Cpu => "CPU",
        SortKey::Mem => "Memory access",
        SortKey::Snoop => "Snoop",
        SortKey::Tlb => "TLB access",
        SortKey::Locked => "Locked",
        SortKey::Blocked => "Blocked",
    }
}

/// The narrowest a key column gets when a line is fitted to the terminal.
fn key_min_width(k: SortKey) -> usize {
    match k {
        SortKey::Sym | SortKey::Srcline | SortKey::Srcfile => 16,
        _ => 10,
    }
}

/// The hotspot report `h` of `profile` as a text document.
pub fn document(h: &Hotspots, profile: &Profile, o: &DocOptions) -> Document {
    let mut header = header_lines(profile, &o.file, true);
    header.push(format!("Total lost samples: {}", profile.lost));
    let facts: Vec<EventFacts> = h
        .events
        .iter()
        .map(|e| EventFacts::of(profile, e.id))
        .collect();
    document_with(h, header, &facts, o.layout)
}

/// The hotspot report `h` as a text document under the `header` lines (without `# `);
/// `facts` has one entry per event of `h` (a merged report's, [`super::HotspotsMerge`]).
pub fn document_with(
    h: &Hotspots,
    header: Vec<String>,
    facts: &[EventFacts],
    layout: Layout,
) -> Document {
    let mut doc = Document::new();
    for l in header {
        doc.header(l);
    }
    let ns = |e: usize| facts.get(e).is_some_and(|f| f.period_is_ns);
    let apart = h.has_event_tables() && layout == Layout::PerEvent;
    let group = h.events.len() > 1 && !apart;
    if !apart {
        for (i, e) in h.events.iter().enumerate() {
            let label = if group {
                format!("[{}] ", i + 1)
            } else {
                String::new()
            };
            doc.header(format!("{label}{}", event_line(ns(i), e)));
        }
    }
    let keys: Vec<&str> = h.keys.iter().map(|k| k.name()).collect();
    let mut sort = format!(
        "Sort: {}; {}",
        keys.join(","),
        if h.children {
            "children = self + callees (from call chains)"
        } else {
            "self only"
        }
    );
    if group {
        if let Some(e) = h.events.get(h.sort_event) {
            sort.push_str(&format!("; rows by '{}'", e.name));
        }
    }
    doc.header(sort);
    if h.keys.iter().any(|k| k.is_memory()) {
        doc.header(
            "Memory mode (as perf --mem-mode): a sample counts its PERF_SAMPLE_WEIGHT (1 \
             without one); event count and periods are total weights",
        );
    }
    if h.deskid {
        for (i, e) in h.events.iter().enumerate() {
            let what = facts.get(i).map_or("stays where sampled", |f| f.deskid);
            doc.header(format!("Deskid '{}': {what}", e.name));
        }
    }
    if apart {
        for (i, e) in h.events.iter().enumerate() {
            let hidden = h.event_hidden_rows(i);
            if hidden > 0 {
                doc.header(format!(
                    "{hidden} rows of '{}' hidden by --top/--percent-limit",
                    e.name
                ));
            }
        }
        for (i, e) in h.events.iter().enumerate() {
            let (rows, hidden) = h.event_rows(i);
            let title = event_line(ns(i), e);
            let mut t = text_table(h, &ns, &mut rows.into_iter(), &[i], false);
            t.title = Some(title);
            t.empty = Some(empty_text(h, hidden));
            doc.table(t);
        }
    } else {
        if h.hidden_rows > 0 {
            doc.header(format!(
                "{} rows hidden by --top/--percent-limit",
                h.hidden_rows
            ));
        }
        let events: Vec<usize> = (0..h.events.len()).collect();
        let mut t = text_table(h, &ns, &mut h.rows(), &events, group);
        t.empty = Some(empty_text(h, h.hidden_rows));
        doc.table(t);
    }
    if let Some(e) = h.events.get(h.sort_event) {
        if let Some(n) = unsymbolized::note(
            &h.unsymbolized,
            h.sort_event,
            e.period,
            h.unknown_per_address,
        ) {
            doc.footer(n);
        }
    }
    if h.deskid {
        doc.footer(
            "~Deskid %: ESTIMATED (skid correction), see docs/skid.md: each non-precise sample \
             of a memory or branch event counted at its estimated culprit instruction (a data \
             breakpoint's at the access before its trap: exact); the other columns are as sampled",
        );
    }
    doc
}

/// `Event 'cpu-clock': 12 samples, event count 12000000 (12.00 ms), 0 lost`.
fn event_line(period_is_ns: bool, e: &EventTotals) -> String {
    let period = if period_is_ns {
        culprit_output::units::human_ns(e.period)
    } else {
        culprit_output::units::human_count(e.period)
    };
    format!(
        "Event '{}': {} samples, event count {} ({}), {} lost",
        e.name, e.samples, e.period, period, e.lost
    )
}

/// What de-skid does to the samples of event `id`.
pub(super) fn deskid_what(profile: &Profile, id: EventId) -> &'static str {
    use crate::skid::{self, EventClass};
    match profile.events.get(usize::from(id)) {
        Some(i) if skid::is_precise_event(i) => "precise samples, never moved",
        Some(i) => match skid::classify_event(i) {
            EventClass::Memory => "memory event: skidded samples move to the culprit access",
            EventClass::Branch => "branch event: skidded samples move to the culprit branch",
            EventClass::DataBreakpoint => {
                "data breakpoint: samples move back one instruction to the access (exact)"
            }
            EventClass::Stays => "stays where sampled",
        },
        None => "stays where sampled",
    }
}

/// What an empty table says: `(no samples)`, or why it has no row.
fn empty_text(h: &Hotspots, hidden: usize) -> String {
    match h.why_no_rows(hidden) {
        Some(why) => format!("(no rows: {why})"),
        None => "(no samples)".to_string(),
    }
}

/// Appends a key's text as the text report shows it: the tag and name of a symbol
/// (`[unknown] DSO+0xOFFSET` without one, `[unknown] 0xADDRESS` for a caller's run-time
/// address), the DSO and address of `ip`.
pub(crate) fn key_text_into(out: &mut String, row: &Row, v: &KeyValue) {
    match v.key {
        SortKey::Sym => {
            out.push_str(v.tag().unwrap_or("[.]"));
            match v.addr() {
                // A caller's run-time address: perf's raw form (an offset it is not).
                Some(a) if v.addr_is_runtime() => {
                    out.push_str(" [unknown] ");
                    culprit_output::units::push_hex(out, a);
                }
                Some(a) => {
                    out.push_str(" [unknown] ");
                    out.push_str(row.dso(v).unwrap_or("?"));
                    out.push('+');
                    culprit_output::units::push_hex(out, a);
                }
                None => {
                    out.push(' ');
                    out.push_str(row.text(v));
                    // Without a dso column, say whose unnamed code the row is.
                    if v.is_unknown_group() && !row.h.keys.contains(&SortKey::Dso) {
                        out.push(' ');
                        out.push_str(row.dso(v).unwrap_or("?"));
                    }
                }
            }
        }
        SortKey::Ip => {
            out.push_str(row.dso(v).unwrap_or("?"));
            out.push(' ');
            out.push_str(row.text(v));
        }
        _ => out.push_str(row.text(v)),
    }
}

/// The values of one event's columns, filled row by row.
struct EventColumns {
    children: Vec<f64>,
    percent: Vec<f64>,
    deskid: Vec<f64>,
    samples: Vec<u64>,
    period: Vec<u64>,
}

/// A text table of `rows` with the columns of `events` (`labels`: short names with the
/// event's number, for side-by-side events) and the keys, call graphs under the rows.
fn text_table(
    h: &Hotspots,
    period_is_ns: &dyn Fn(usize) -> bool,
    rows: &mut dyn ExactSizeIterator<Item = Row<'_>>,
    events: &[usize],
    labels: bool,
) -> Table {
    let n = rows.len();
    let mut ev: Vec<EventColumns> = events
        .iter()
        .map(|_| EventColumns {
            children: Vec::with_capacity(if h.children { n } else { 0 }),
            percent: Vec::with_capacity(n),
            deskid: Vec::with_capacity(if h.deskid { n } else { 0 }),
            samples: Vec::with_capacity(n),
            period: Vec::with_capacity(n),
        })
        .collect();
    let mut keys: Vec<TextColumn> = h
        .keys
        .iter()
        .map(|_| TextColumn::with_capacity(n, n * 24))
        .collect();
    let mut trees: Vec<RowTree> = Vec::new();
    for (i, row) in rows.enumerate() {
        for (c, &e) in ev.iter_mut().zip(events) {
            if h.children {
                c.children.push(row.children_percent(e));
            }
            c.percent.push(row.percent(e));
            if h.deskid {
                c.deskid.push(row.deskid_percent(e));
            }
            c.samples.push(row.samples(e));
            c.period.push(row.period(e));
        }
        for (k, v) in keys.iter_mut().zip(row.keys()) {
            k.push_with(|buf| key_text_into(buf, &row, &v));
        }
        for &e in events {
            if let Some(node) = row.call_graph(e) {
                let total = h.events[e].period;
                trees.push(RowTree {
                    row: i,
                    label: (events.len() > 1).then(|| h.events[e].name.clone()),
                    tree: Tree {
                        name: node.name.clone(),
                        children: out_nodes(&node.children, total),
                    },
                });
            }
        }
    }
    let mut columns: Vec<Column> = Vec::new();
    let mut highlight = None;
    for (c, &e) in ev.into_iter().zip(events) {
        let name = &h.events[e].name;
        let label = |col: &str| {
            if labels {
                format!("{col}[{}]", e + 1)
            } else {
                col.to_string()
            }
        };
        let csv = |col: &str| format!("{name}:{col}");
        let hot = !labels || e == h.sort_event;
        if h.children {
            if hot && highlight.is_none() {
                highlight = Some(columns.len());
            }
            columns.push(Column::new(
                label("Children"),
                csv("children_percent"),
                Values::Percent(c.children),
            ));
        }
        if hot && highlight.is_none() {
            highlight = Some(columns.len());
        }
        columns.push(Column::new(
            label("Self"),
            csv("percent"),
            Values::Percent(c.percent),
        ));
        if h.deskid {
            columns.push(Column::new(
                label("Deskid %"),
                csv("deskid_percent"),
                Values::Estimate(c.deskid),
            ));
        }
        columns.push(Column::new(
            label("Samples"),
            csv("samples"),
            Values::Count(c.samples),
        ));
        let period = if period_is_ns(e) {
            Values::Ns(c.period)
        } else {
            Values::Human(c.period)
        };
        columns.push(Column::new(label("Period"), csv("period"), period));
    }
    for (&k, texts) in h.keys.iter().zip(keys) {
        columns.push(
            Column::new(key_header(k), k.name(), Values::Texts(texts)).shrink(key_min_width(k)),
        );
    }
    let mut t = Table::new(columns);
    t.highlight = highlight;
    t.trees = trees;
    t
}

/// Call-graph nodes with their share of the event's `total`.
fn out_nodes(nodes: &[CallNode], total: u64) -> Vec<OutNode> {
    nodes
        .iter()
        .map(|c| OutNode {
            percent: pct(c.period, total),
            name: c.name.clone(),
            children: out_nodes(&c.children, total),
        })
        .collect()
}

/// The report as one CSV table (docs/report.md): the keys (an unresolved symbol as
/// `[unknown] 0xADDR`; a `dso` column for `sym` and `ip` when `dso` is not a key), then per
/// event its samples, period, percent and children percent (and de-skidded samples and
/// percent), in the main table's order.
pub fn csv_table(h: &Hotspots) -> Table {
    let n = h.len();
    let extra_dso = h
        .keys
        .iter()
        .any(|k| matches!(k, SortKey::Ip | SortKey::Sym))
        && !h.keys.contains(&SortKey::Dso);
    let mut keys: Vec<TextColumn> = h
        .keys
        .iter()
        .map(|_| TextColumn::with_capacity(n, n * 16))
        .collect();
    let mut dso = TextColumn::default();
    let ne = h.events.len();
    let mut counts: Vec<Vec<u64>> = vec![Vec::with_capacity(n); ne * 3];
    let mut shares: Vec<Vec<f64>> = vec![Vec::with_capacity(n); ne * 3];
    for row in h.rows() {
        for (col, k) in keys.iter_mut().zip(row.keys()) {
            match (k.key, k.addr()) {
                (SortKey::Sym, Some(a)) => col.push_with(|b| {
                    b.push_str("[unknown] ");
                    culprit_output::units::push_hex(b, a);
                }),
                _ => col.push(row.text(&k)),
            }
        }
        if extra_dso {
            dso.push(row.keys().find_map(|k| row.dso(&k)).unwrap_or_default());
        }
        for e in 0..ne {
            counts[e * 3].push(row.samples(e));
            counts[e * 3 + 1].push(row.period(e));
            counts[e * 3 + 2].push(row.deskid_samples(e));
            shares[e * 3].push(row.percent(e));
            shares[e * 3 + 1].push(row.children_percent(e));
            shares[e * 3 + 2].push(row.deskid_percent(e));
        }
    }
    let mut columns: Vec<Column> = h
        .keys
        .iter()
        .zip(keys)
        .map(|(&k, v)| Column::new(key_header(k), k.name(), Values::Texts(v)))
        .collect();
    if extra_dso {
        columns.push(Column::new("Shared Object", "dso", Values::Texts(dso)));
    }
    let mut counts = counts.into_iter();
    let mut shares = shares.into_iter();
    for e in &h.events {
        let mut next_count = || Values::Count(counts.next().unwrap_or_default());
        let (samples, period, deskid_samples) = (next_count(), next_count(), next_count());
        let mut next_share = || shares.next().unwrap_or_default();
        let (percent, children, deskid) = (next_share(), next_share(), next_share());
        let name = |c: &str| format!("{}:{c}", e.name);
        columns.push(Column::new("Samples", name("samples"), samples));
        columns.push(Column::new("Period", name("period"), period));
        columns.push(Column::new(
            "Self",
            name("percent"),
            Values::Percent(percent),
        ));
        columns.push(Column::new(
            "Children",
            name("children_percent"),
            Values::Percent(children),
        ));
        if h.deskid {
            columns.push(Column::new(
                "Deskid samples",
                name("deskid_samples"),
                deskid_samples,
            ));
            columns.push(Column::new(
                "Deskid %",
                name("deskid_percent"),
                Values::Estimate(deskid),
            ));
        }
    }
    Table::new(columns)
}
