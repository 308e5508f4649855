//! The render contract: what every report gives the three renderers.

use std::io::{self, Write};

use crate::{Document, Table};

/// A report that renders as text, CSV and JSON. The CLI has one function that takes any
/// `Render` and the user's output flags (format, file, colour, width) and writes it.
pub trait Render {
    /// The text document (aligned tables, trees, notes).
    fn document(&self) -> Document;

    /// The CSV tables: by default the document's tables, one after the other.
    fn csv_tables(&self) -> Vec<Table> {
        self.document().tables().cloned().collect()
    }

    /// Writes the JSON report (an owned struct with its `schema`, see docs/schemas/).
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// A report whose text is a list of lines (no table to give CSV).
pub trait TextLines {
    /// The text report, line by line.
    fn text_lines(&self) -> Vec<String>;
}

/// The JSON of a [`TextLines`] report: its schema version and input, then the report's own
/// fields. Text is the report's lines; CSV has no table (verbs of such reports refuse it).
#[derive(Debug, serde::Serialize)]
pub struct LinesReport<'a, R> {
    /// The report's schema version (docs/schemas/).
    pub schema: u32,
    /// The input file.
    pub input: &'a str,
    /// The report.
    #[serde(flatten)]
    pub report: &'a R,
}

impl<R: TextLines + serde::Serialize> Render for LinesReport<'_, R> {
    fn document(&self) -> Document {
        let mut doc = Document::new();
        doc.lines(self.report.text_lines());
        doc
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        crate::json::write(out, self)
    }
}
