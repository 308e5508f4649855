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
