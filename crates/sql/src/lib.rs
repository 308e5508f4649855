//! SQL over culprit's Parquet exports (`culprit export --format parquet -o DIR`), with Apache
//! DataFusion embedded: the export's five tables (`hosts`, `events`, `frames`, `stacks`,
//! `samples`, docs/fleet.md) are registered over any number of export directories, a query
//! runs, and its result comes back as an owned [`SqlResult`] that renders as a culprit
//! [`Document`](culprit_output::Document) (text), a CSV table or JSON
//! (docs/schemas/sql.schema.json).
//!
//! Named queries ([`Named`]) answer what users ask most (top functions per event, period per
//! host, the per-function change between two builds or hosts); their SQL is public
//! ([`Named::sql`]) so that the same question can be asked of Spark, Trino or DuckDB.
//!
//! The crate is pure apart from reading the export's files: no terminal, no process state.

mod export;
mod named;
mod result;

use std::path::PathBuf;

pub use export::{Export, TABLES};
pub use named::{sql_string, Named};
pub use result::{Cell, ColumnKind, ResultColumn, SqlResult};

/// Version of the JSON output (`"schema"`), bumped on any incompatible change.
pub const SCHEMA: u32 = 1;

/// What to run, over what.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    /// The export directories (each holds `hosts/`, `events/`, `frames/`, `stacks/`,
    /// `samples/`); their tables are unioned.
    pub dirs: Vec<PathBuf>,
    /// The query.
    pub query: Query,
}

/// A query: SQL text or a named query.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// One SQL statement (DataFusion's dialect, close to PostgreSQL).
    Sql(String),
    /// A named query.
    Named(Named),
}

impl Query {
    /// The SQL text that runs.
    pub fn sql(&self) -> String {
        match self {
            Query::Sql(s) => s.clone(),
            Query::Named(n) => n.sql(),
        }
    }
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// No directory given.
    #[error("no export directory given (culprit sql 'SELECT …' DIR…)")]
    NoDirs,
    /// A directory does not exist.
    #[error("{}: no such directory", .0.display())]
    NoSuchDir(PathBuf),
    /// A path is not a directory.
    #[error("{}: not a directory (culprit sql reads the directories `culprit export --format parquet -o DIR` writes)", .0.display())]
    NotADir(PathBuf),
    /// A directory lacks one of the tables.
    #[error("{}: not a culprit Parquet export: it has no {table}/ directory (write one with `culprit export --format parquet -i perf.data -o DIR`){hint}", .dir.display())]
    NotAnExport {
        /// The directory.
        dir: PathBuf,
        /// The missing table.
        table: &'static str,
        /// A hint (the export's own directory when a table directory was given).
        hint: String,
    },
    /// No Parquet file of a table in any directory.
    #[error(
        "no {table} data: {dirs} hold no {table}/*.parquet file (an empty or unfinished export?)"
    )]
    EmptyTable {
        /// The table.
        table: &'static str,
        /// The directories, joined.
        dirs: String,
    },
    /// The same recording is in two directories (its rows would count twice).
    #[error("recording {file_id} is in both {} and {} (the same file exported twice?): its samples would count twice; give each recording once", .first.display(), .second.display())]
    Duplicate {
        /// The recording's file id (16 hex digits).
        file_id: String,
        /// One directory.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// Reading a directory failed.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A path DataFusion cannot take.
    #[error("{}: {why}", .path.display())]
    BadPath {
        /// The path.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The directories' tables have incompatible schemas.
    #[error("table {table}: the exports' columns do not agree ({why})")]
    Schema {
        /// The table.
        table: &'static str,
        /// DataFusion's or Arrow's message.
        why: String,
    },
    /// A `--diff` side matches no recording.
    #[error("--diff: '{0}' is no host name, input file or build id (prefix) of the exports; `culprit sql 'SELECT host, file FROM hosts' DIR…` lists them")]
    NoMatch(String),
    /// The query failed (parse, plan or execution).
    #[error("{0}")]
    Query(String),
    /// The async runtime could not start.
    #[error("cannot start the query runtime: {0}")]
    Runtime(std::io::Error),
}

impl SqlError {
    /// A DataFusion error as a query error, with a hint on unknown tables.
    fn query(e: datafusion::error::DataFusionError) -> SqlError {
        let text = e.to_string();
        let hint = if text.contains("table '") && text.contains("not found") {
            format!(" (the tables are {}: see docs/fleet.md)", TABLES.join(", "))
        } else {
            String::new()
        };
        SqlError::Query(format!("query failed: {text}{hint}"))
    }
}

/// Runs `opts.query` over the exports in `opts.dirs`.
pub fn run(opts: &SqlOptions) -> Result<SqlResult, SqlError> {
    let export = Export::open(&opts.dirs)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .build()
        .map_err(SqlError::Runtime)?;
    rt.block_on(async {
        let ctx = export.context().await?;
        if let Query::Named(n) = &opts.query {
            n.check(&ctx).await?;
        }
        let sql = opts.query.sql();
        let df = ctx.sql(&sql).await.map_err(SqlError::query)?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await.map_err(SqlError::query)?;
        Ok(SqlResult::new(
            &sql,
            match &opts.query {
                Query::Named(n) => Some(n.name()),
                Query::Sql(_) => None,
            },
            &export,
            &schema,
            &batches,
        ))
    })
}
