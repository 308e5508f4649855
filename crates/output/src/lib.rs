//! culprit's output model and its renderers: one model, many outputs.
//!
//! Every report verb builds a [`Document`] — header lines, typed [`Table`]s (counts,
//! percentages, durations, addresses, text), call [`Tree`]s and typed [`Note`]s — from the
//! owned report model its library returns, and renders it with one of:
//! - [`text::write`]: aligned columns with units, the hottest rows highlighted, fitted to the
//!   terminal width, every name from a file escaped;
//! - [`csv::write`]: one row per table row, RFC 4180 quoting, unformatted numbers;
//! - [`json::write`]: any `Serialize` report (JSON is always made by serde derives on an owned
//!   report struct that carries `schema`, documented in docs/schemas/).
//!
//! Reports implement [`Render`] (their document, CSV tables and JSON), so that the CLI has
//! one function that renders any of them. The same documents feed the HTML report and the
//! exports.

pub mod csv;
pub mod json;
pub mod model;
pub mod render;
pub mod style;
pub mod text;
pub mod units;

pub use model::{
    Column, Document, Fit, Note, NoteKind, RowTree, Section, Table, TextColumn, Tree, TreeNode,
    Values,
};
pub use render::{LinesReport, Render, TextLines};
pub use style::{ColorChoice, TextOptions};
