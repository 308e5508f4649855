//! The output model: what a report shows, with its types, before it is text, CSV or HTML.

use std::fmt::Write as _;

use crate::units;

/// One report: header lines, sections (tables, lines) and notes.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// Header lines, shown as `# line` before the sections (without the `# `).
    pub header: Vec<String>,
    /// The body, in order.
    pub sections: Vec<Section>,
    /// Footer lines, shown as `# line` after the sections.
    pub footer: Vec<String>,
    /// Warnings, information and hints about the report (stderr in text mode).
    pub notes: Vec<Note>,
}

impl Document {
    /// An empty document.
    pub fn new() -> Document {
        Document::default()
    }

    /// Appends a header line (shown as `# line`).
    pub fn header(&mut self, line: impl Into<String>) -> &mut Self {
        self.header.push(line.into());
        self
    }

    /// Appends a footer line (shown as `# line`).
    pub fn footer(&mut self, line: impl Into<String>) -> &mut Self {
        self.footer.push(line.into());
        self
    }

    /// Appends a table section.
    pub fn table(&mut self, t: Table) -> &mut Self {
        self.sections.push(Section::Table(t));
        self
    }

    /// Appends a section of plain lines.
    pub fn lines(&mut self, lines: Vec<String>) -> &mut Self {
        self.sections.push(Section::Lines(lines));
        self
    }

    /// Appends a note.
    pub fn note(&mut self, kind: NoteKind, text: impl Into<String>) -> &mut Self {
        self.notes.push(Note {
            kind,
            text: text.into(),
        });
        self
    }

    /// The tables of the document, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().filter_map(|s| match s {
            Section::Table(t) => Some(t),
            _ => None,
        })
    }
}

/// A part of a document's body.
#[derive(Debug, Clone)]
pub enum Section {
    /// A table with typed columns.
    Table(Table),
    /// Lines shown as they are (escaped, fitted to the width).
    Lines(Vec<String>),
}

/// What a [`Note`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteKind {
    /// Something the user should know that may make the report wrong or incomplete.
    Warning,
    /// A fact about the report (what was assumed, what was left out).
    Info,
    /// A suggestion for what to do next.
    Hint,
}

/// A warning, piece of information or hint about a report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Note {
    /// What it is.
    pub kind: NoteKind,
    /// One sentence or more; no trailing newline.
    pub text: String,
}

impl Note {
    /// A warning.
    pub fn warning(text: impl Into<String>) -> Note {
        Note {
            kind: NoteKind::Warning,
            text: text.into(),
        }
    }
}

/// How a text column may be narrowed to fit the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fit {
    /// Never narrowed (numbers, short keys).
    #[default]
    Keep,
    /// Narrowed down to this many characters (the value cut with `…`) when the line is too
    /// wide; the widest such column first.
    Shrink(usize),
}

/// A column's values, one per row, typed (the renderers choose the units).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Plain integers (sample counts): `1234`.
    Count(Vec<u64>),
    /// Signed integers, shown plainly (`-1234`); `None` shows empty (SQL results' NULL).
    Int(Vec<Option<i64>>),
    /// Integers with a unit prefix (event counts): `1.23 M`.
    Human(Vec<u64>),
    /// Durations in nanoseconds: `1.234 s`, `12.30 ms`.
    Ns(Vec<u64>),
    /// Percentages (0–100): `12.34%`.
    Percent(Vec<f64>),
    /// Estimated percentages: `~12.34%`.
    Estimate(Vec<f64>),
    /// Signed differences of percentages (perf diff's Delta): `+1.23%`, `-0.00%`; NaN shows
    /// empty.
    Delta(Vec<f64>),
    /// Sizes in bytes: `4.0 KiB`.
    Bytes(Vec<u64>),
    /// Addresses: `0x401000`; `None` shows empty.
    Address(Vec<Option<u64>>),
    /// Decimal numbers with this many decimals; NaN shows empty.
    Float(Vec<f64>, u8),
    /// Text (names from files: escaped by the renderers).
    Text(Vec<String>),
    /// Text like [`Values::Text`], packed into one buffer: for columns of many rows (one
    /// allocation per column instead of one per row).
    Texts(TextColumn),
}

/// Texts packed back to back in one buffer, read by index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextColumn {
    buf: String,
    /// End of each text in `buf`.
    ends: Vec<usize>,
}

impl TextColumn {
    /// An empty column with room for `rows` texts of `bytes` bytes in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> TextColumn {
        TextColumn {
            buf: String::with_capacity(bytes),
            ends: Vec::with_capacity(rows),
        }
    }

    /// Appends a text.
    pub fn push(&mut self, s: &str) {
        self.buf.push_str(s);
        self.ends.push(self.buf.len());
    }

    /// Appends the text that `write` appends to the buffer.
    pub fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        write(&mut self.buf);
        self.ends.push(self.buf.len());
    }

    /// Text `i`, or `None`.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.buf.get(start..end)
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no texts.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The texts, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(""))
    }
}

impl<S: AsRef<str>> FromIterator<S> for TextColumn {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> TextColumn {
        let mut c = TextColumn::default();
        for s in iter {
            c.push(s.as_ref());
        }
        c
    }
}

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Count(v) | Values::Human(v) | Values::Ns(v) | Values::Bytes(v) => v.len(),
            Values::Percent(v) | Values::Estimate(v) | Values::Delta(v) | Values::Float(v, _) => {
                v.len()
            }
            Values::Address(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Text(v) => v.len(),
            Values::Texts(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the text renderer right-aligns these values (numbers).
    pub fn right_aligned(&self) -> bool {
        !matches!(self, Values::Text(_) | Values::Texts(_))
    }

    /// The percentage of row `i`, for percentage columns (highlighting).
    pub fn percent(&self, i: usize) -> Option<f64> {
        match self {
            Values::Percent(v) | Values::Estimate(v) => v.get(i).copied(),
            _ => None,
        }
    }

    /// Appends row `i` as the text report shows it (unescaped).
    pub fn text_into(&self, i: usize, out: &mut String) {
        match self {
            Values::Count(v) => {
                if let Some(x) = v.get(i) {
                    let _ = write!(out, "{x}");
                }
            }
            Values::Int(v) => {
                if let Some(Some(x)) = v.get(i) {
                    let _ = write!(out, "{x}");
                }
            }
            Values::Human(v) => {
                if let Some(&x) = v.get(i) {
                    units::human_count_into(x, out);
                }
            }
            Values::Ns(v) => {
                if let Some(&x) = v.get(i) {
                    units::human_ns_into(x, out);
                }
            }
            Values::Bytes(v) => {
                if let Some(&x) = v.get(i) {
                    units::human_bytes_into(x, out);
                }
            }
            Values::Percent(v) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "{x:.2}%");
                }
            }
            Values::Estimate(v) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "~{x:.2}%");
                }
            }
            Values::Delta(v) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "{x:+.2}%");
                }
            }
            Values::Address(v) => {
                if let Some(Some(x)) = v.get(i) {
                    let _ = write!(out, "{x:#x}");
                }
            }
            Values::Float(v, d) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "{x:.*}", usize::from(*d));
                }
            }
            Values::Text(v) => {
                if let Some(s) = v.get(i) {
                    out.push_str(s);
                }
            }
            Values::Texts(v) => {
                if let Some(s) = v.get(i) {
                    out.push_str(s);
                }
            }
        }
    }

    /// Appends row `i` as CSV shows it: unformatted numbers (percentages with 4 decimals,
    /// durations in ns, addresses in hex), text unquoted (the CSV writer quotes).
    pub fn csv_into(&self, i: usize, out: &mut String) {
        match self {
            Values::Count(v) | Values::Human(v) | Values::Ns(v) | Values::Bytes(v) => {
                if let Some(x) = v.get(i) {
                    let _ = write!(out, "{x}");
                }
            }
            Values::Int(v) => {
                if let Some(Some(x)) = v.get(i) {
                    let _ = write!(out, "{x}");
                }
            }
            Values::Percent(v) | Values::Estimate(v) | Values::Delta(v) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "{x:.4}");
                }
            }
            Values::Float(v, d) => {
                if let Some(x) = v.get(i).filter(|x| !x.is_nan()) {
                    let _ = write!(out, "{x:.*}", usize::from(*d));
                }
            }
            Values::Address(v) => {
                if let Some(Some(x)) = v.get(i) {
                    let _ = write!(out, "{x:#x}");
                }
            }
            Values::Text(v) => {
                if let Some(s) = v.get(i) {
                    out.push_str(s);
                }
            }
            Values::Texts(v) => {
                if let Some(s) = v.get(i) {
                    out.push_str(s);
                }
            }
        }
    }
}

/// A table column: a header, a CSV name and typed values.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Header in text output (`Self`, `cycles Self`, `Symbol`).
    pub name: String,
    /// Header in CSV output (`cycles:percent`, `sym`).
    pub csv_name: String,
    /// One value per row.
    pub values: Values,
    /// Whether text output may narrow it.
    pub fit: Fit,
    /// Whether the column shows in text output (CSV shows every column).
    pub in_text: bool,
    /// Whether the column shows in CSV output.
    pub in_csv: bool,
}

impl Column {
    /// A column shown in text and CSV, never narrowed.
    pub fn new(name: impl Into<String>, csv_name: impl Into<String>, values: Values) -> Column {
        Column {
            name: name.into(),
            csv_name: csv_name.into(),
            values,
            fit: Fit::Keep,
            in_text: true,
            in_csv: true,
        }
    }

    /// This column, narrowed to at least `min` characters when a line is too wide.
    pub fn shrink(mut self, min: usize) -> Column {
        self.fit = Fit::Shrink(min);
        self
    }

    /// This column, shown in CSV only.
    pub fn csv_only(mut self) -> Column {
        self.in_text = false;
        self
    }

    /// This column, shown in text only.
    pub fn text_only(mut self) -> Column {
        self.in_csv = false;
        self
    }
}

/// A call tree shown under a table row (perf's `-g` graph).
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// The root's text (the row's function).
    pub name: String,
    /// Its callers (caller graph) or callees.
    pub children: Vec<TreeNode>,
}

/// A node of a [`Tree`].
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// Share of the event's total.
    pub percent: f64,
    /// Function text.
    pub name: String,
    /// Next level.
    pub children: Vec<TreeNode>,
}

/// A tree attached to a row of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct RowTree {
    /// Row index.
    pub row: usize,
    /// A label line before the tree (the event name when a table has several).
    pub label: Option<String>,
    /// The tree.
    pub tree: Tree,
}

/// A table with typed columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// A title line before the table (shown as `# title`).
    pub title: Option<String>,
    /// The columns, all with the same number of values.
    pub columns: Vec<Column>,
    /// How many leading columns (the keys) each panel repeats when the table is too wide for
    /// the text width even with its text columns narrowed: the other columns continue in
    /// further panels below instead of being cut off. 0: lines are cut.
    pub repeat: usize,
    /// Trees under rows, in row order.
    pub trees: Vec<RowTree>,
    /// The percentage column whose value highlights a row on a colour terminal (red ≥ 10 %,
    /// yellow ≥ 1 %): the bottlenecks.
    pub highlight: Option<usize>,
    /// What text output says when the table has no rows (`(no samples: …)`).
    pub empty: Option<String>,
    /// Lines shown before rows (perf annotate's source lines) as (row, line), in row
    /// order; text output indents them to the start of column [`Table::lines_at`].
    pub lines_before: Vec<(usize, String)>,
    /// The column (index in `columns`) where [`Table::lines_before`] start in text output.
    pub lines_at: usize,
}

impl Table {
    /// A table with these columns.
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            ..Table::default()
        }
    }

    /// Number of rows (the length of the first column).
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    /// The column with this CSV name.
    pub fn column(&self, csv_name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.csv_name == csv_name)
    }
}
