//! culprit-parquet: culprit's Parquet tables (docs/fleet.md). One table list and one schema
//! ([`schema`]), the writer of `culprit export --format parquet` ([`write`]) and the reader of
//! `culprit report --from-parquet` ([`read`]). The hotspot report of the rows read is
//! `culprit_analysis`'s; this crate reads the tables into the models it takes.
#![deny(missing_docs)]

pub mod read;
pub mod schema;
pub mod write;

use serde::Serialize;

use culprit_analysis::stacks::StackError;

pub use schema::{SCHEMA_VERSION, TABLES};

/// Why writing the tables of an input failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Reading or analysing the input failed.
    #[error(transparent)]
    Stacks(#[from] StackError),
    /// Writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing a Parquet file failed.
    #[error("writing Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Assembling the Arrow batches of a Parquet file failed.
    #[error("writing Parquet: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// One event of an input, with what was written of it.
#[derive(Debug, Clone, Serialize)]
pub struct EventSummary {
    /// The event's name.
    pub name: String,
    /// Samples written.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
}
