//! `culprit sql`: SQL over Parquet exports (`culprit export --format parquet -o DIR`) with
//! Apache DataFusion: the tables hosts, events, frames, stacks and samples registered over
//! every DIR, one query (or a named one), the result as text, JSON
//! (docs/schemas/sql.schema.json) or CSV (docs/fleet.md). Built with the cargo feature `sql`.
//!
//! Exit status: 0 on success; 2 on a bad query, a missing or empty export, a wrong argument.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use culprit_sql::{Named, Query, SqlOptions};

use crate::args::{Format, OutputArgs};

/// Arguments of `culprit sql`.
#[derive(clap::Args, Debug)]
#[command(
    about = "SQL over Parquet exports (Apache DataFusion): tables hosts, events, frames, stacks, samples",
    after_help = crate::help::layout("EXAMPLES:\n  culprit export --format parquet -i perf.data -o prof/\n  culprit sql 'SELECT event, SUM(period) FROM samples GROUP BY event' prof/\n  culprit sql --top-functions -e cycles --limit 10 fleet/*/\n  culprit sql --by-host fleet/*/\n  culprit sql --diff web-1 web-2 fleet/*/            per function: share on web-2 minus on web-1\n  culprit sql --diff 3f2a9c01 77aa01de fleet/*/      ... between two build ids (hex prefixes)\n  culprit sql --top-functions --show-query          print the SQL (for Spark, Trino, DuckDB)\n  culprit sql -- \"$(culprit sql --by-host --show-query)\" fleet/*/     SQL starting with '-' goes after --\n\nThe tables and their columns: docs/fleet.md. Without a named query the first argument is the SQL.")
)]
pub struct SqlArgs {
    /// The SQL statement (unless a named query is given), then the export directories.
    #[arg(value_name = "SQL|DIR")]
    pub args: Vec<String>,
    /// Named query: self samples, period and percentage per function and event, the numbers
    /// of `culprit report --sort sym --no-children` (rank, function, dso, sym_addr for
    /// addresses without a symbol).
    #[arg(long = "top-functions", conflicts_with_all = ["by_host", "diff"])]
    pub top_functions: bool,
    /// Named query: samples, period and share of the event's total per host and event.
    #[arg(long = "by-host", conflicts_with = "diff")]
    pub by_host: bool,
    /// Named query: per function and event, its share of the period on side A and on side B
    /// and the change B - A (points). A side is every recording whose host name, input file
    /// or a build id (hex prefix, 4 digits or more) is the given text.
    #[arg(long = "diff", num_args = 2, value_names = ["A", "B"])]
    pub diff: Option<Vec<String>>,
    /// With a named query: only this event.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// With --top-functions or --diff: at most N rows per event.
    #[arg(long = "limit", value_name = "N")]
    pub limit: Option<usize>,
    /// Print the SQL that would run (a named query's, for other engines) and exit.
    #[arg(long = "show-query")]
    pub show_query: bool,
    /// --format text, json or csv, -o, --color, --width.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SqlArgs {
    /// The named query the flags ask for.
    fn named(&self) -> Option<Named> {
        let event = self.event.clone();
        if self.top_functions {
            Some(Named::TopFunctions {
                event,
                limit: self.limit,
            })
        } else if self.by_host {
            Some(Named::ByHost { event })
        } else {
            self.diff.as_ref().map(|d| Named::Diff {
                a: d[0].clone(),
                b: d[1].clone(),
                event,
                limit: self.limit,
            })
        }
    }

    /// The query and the directories.
    fn split(&self) -> anyhow::Result<(Query, Vec<PathBuf>)> {
        let named = self.named();
        if named.is_none() {
            anyhow::ensure!(
                self.event.is_none() && self.limit.is_none(),
                "-e and --limit go with a named query (--top-functions, --by-host, --diff); \
                 in SQL write WHERE event = '…' and LIMIT"
            );
        }
        if matches!(named, Some(Named::ByHost { .. })) {
            anyhow::ensure!(
                self.limit.is_none(),
                "--limit goes with --top-functions or --diff"
            );
        }
        match named {
            Some(n) => Ok((
                Query::Named(n),
                self.args.iter().map(PathBuf::from).collect(),
            )),
            None => {
                let (sql, dirs) = self.args.split_first().ok_or_else(|| {
                    anyhow::anyhow!(
                        "culprit sql needs a query and export directories: \
                         culprit sql 'SELECT …' DIR… (or a named query: --top-functions, \
                         --by-host, --diff A B)"
                    )
                })?;
                anyhow::ensure!(
                    !sql.trim().is_empty(),
                    "the query is empty: culprit sql 'SELECT …' DIR…"
                );
                Ok((
                    Query::Sql(sql.clone()),
                    dirs.iter().map(PathBuf::from).collect(),
                ))
            }
        }
    }
}

/// Runs `culprit sql`.
pub fn run(args: SqlArgs) -> anyhow::Result<ExitCode> {
    let (query, dirs) = args.split()?;
    if args.show_query {
        let mut out = args.output.writer()?;
        writeln!(out, "{}", query.sql().trim_end())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let result = culprit_sql::run(&SqlOptions { dirs, query })?;
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Text => {
            culprit_output::text::write(&mut out, &result.document(), &args.output.text_options())?
        }
        Format::Json => culprit_output::json::write(&mut out, &result)?,
        Format::Csv => culprit_output::csv::write(&mut out, &result.table())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
