//! Named queries: the SQL behind `--top-functions`, `--by-host` and `--diff` (docs/fleet.md
//! shows each). Values from the command line enter the SQL as quoted string literals
//! ([`sql_string`]) or checked numbers, never as SQL text.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::prelude::SessionContext;

use crate::SqlError;

/// A named query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Self period per function and event, as `culprit report --sort sym --no-children`:
    /// one row per (event, DSO, function); samples whose address has no symbol group per
    /// address (`[unknown]`, with `sym_addr`), as report does.
    TopFunctions {
        /// Only this event.
        event: Option<String>,
        /// At most this many rows per event (the hottest).
        limit: Option<usize>,
    },
    /// Samples and period per host and event, with the host's share of the event's total.
    ByHost {
        /// Only this event.
        event: Option<String>,
    },
    /// Per (event, DSO, function): its share of the event's period in side A's recordings
    /// and in side B's, and the change (B − A, in points). A side is every recording whose
    /// host name, input file or any build id (hex prefix of at least 4 digits) equals the
    /// side's text.
    Diff {
        /// Side A (the baseline).
        a: String,
        /// Side B.
        b: String,
        /// Only this event.
        event: Option<String>,
        /// At most this many rows per event (the biggest changes).
        limit: Option<usize>,
    },
}

/// `s` as an SQL string literal (`'it''s'`).
pub fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Whether `s` can be a build-id prefix (hex, at least 4 digits).
fn is_build_id_prefix(s: &str) -> bool {
    s.len() >= 4 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `WHERE`/`AND` clause selecting one event by name, or nothing.
fn event_filter(column: &str, event: &Option<String>, word: &str) -> String {
    match event {
        Some(e) => format!("\n{word} {column} = {}", sql_string(e)),
        None => String::new(),
    }
}

/// The rank filter of a per-event limit.
fn limit_filter(limit: Option<usize>) -> String {
    match limit {
        Some(n) => format!("\nWHERE rank <= {n}"),
        None => String::new(),
    }
}

impl Named {
    /// The flag that names it.
    pub fn name(&self) -> &'static str {
        match self {
            Named::TopFunctions { .. } => "top-functions",
            Named::ByHost { .. } => "by-host",
            Named::Diff { .. } => "diff",
        }
    }

    /// The event it is restricted to.
    fn event(&self) -> &Option<String> {
        match self {
            Named::TopFunctions { event, .. }
            | Named::ByHost { event }
            | Named::Diff { event, .. } => event,
        }
    }

    /// Its SQL (DataFusion's dialect; docs/fleet.md has Spark's, Trino's and DuckDB's).
    pub fn sql(&self) -> String {
        match self {
            Named::TopFunctions { event, limit } => top_functions(event, *limit),
            Named::ByHost { event } => by_host(event),
            Named::Diff { a, b, event, limit } => diff(a, b, event, *limit),
        }
    }

    /// Checks its arguments against the exports: the event exists, each `--diff` side
    /// matches a recording.
    pub(crate) async fn check(&self, ctx: &SessionContext) -> Result<(), SqlError> {
        if let Some(e) = self.event() {
            let events = strings(ctx, "SELECT DISTINCT name FROM events ORDER BY name").await?;
            if !events.contains(e) {
                return Err(SqlError::Query(format!(
                    "-e {e}: no such event in the exports (they have: {})",
                    events.join(", ")
                )));
            }
        }
        if let Named::Diff { a, b, .. } = self {
            for side in [a, b] {
                let q = format!(
                    "SELECT CAST(file_id AS VARCHAR) FROM ({}) side",
                    side_files(side)
                );
                if strings(ctx, &q).await?.is_empty() {
                    return Err(SqlError::NoMatch(side.clone()));
                }
            }
        }
        Ok(())
    }
}

/// The first column of a query's rows, as strings.
async fn strings(ctx: &SessionContext, sql: &str) -> Result<Vec<String>, SqlError> {
    let batches = ctx
        .sql(sql)
        .await
        .map_err(SqlError::query)?
        .collect()
        .await
        .map_err(SqlError::query)?;
    let mut out = Vec::new();
    for b in batches {
        let col = datafusion::arrow::compute::cast(
            b.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .map_err(|e| SqlError::Query(e.to_string()))?;
        let col = col.as_string::<i32>();
        out.extend(
            (0..col.len())
                .filter(|&i| col.is_valid(i))
                .map(|i| col.value(i).to_string()),
        );
    }
    Ok(out)
}

/// `--top-functions`: per event, the self period of each function.
///
/// Samples are first summed per (recording, event, leaf frame) — the join then reads one
/// row per distinct code location instead of one per sample.
fn top_functions(event: &Option<String>, limit: Option<usize>) -> String {
    format!(
        "\
-- culprit sql --top-functions: self samples and period per function and event, as
-- culprit report --sort sym --no-children (an address without a symbol is its own row:
-- function '[unknown]', sym_addr its file offset, or its address outside any mapping)
WITH leaf AS (
  SELECT file_id, event_id, leaf_frame_id, COUNT(*) AS samples, SUM(period) AS period
  FROM samples
  GROUP BY file_id, event_id, leaf_frame_id
),
keyed AS (
  SELECT e.name AS event, f.function, f.dso,
         CASE WHEN f.function IS NULL THEN NULL ELSE f.dso END AS dso_key,
         CASE WHEN f.function IS NULL THEN COALESCE(f.file_offset, f.address) END AS addr,
         l.samples, l.period
  FROM leaf l
  JOIN events e ON e.file_id = l.file_id AND e.event_id = l.event_id
  JOIN frames f ON f.file_id = l.file_id AND f.frame_id = l.leaf_frame_id{filter}
),
per_function AS (
  SELECT event, function, dso_key, addr, MIN(dso) AS dso,
         SUM(samples) AS samples, SUM(period) AS period
  FROM keyed
  GROUP BY event, function, dso_key, addr
),
ranked AS (
  SELECT event,
         COALESCE(function, '[unknown]') AS function,
         dso,
         CASE WHEN addr IS NOT NULL THEN concat('0x', to_hex(addr)) END AS sym_addr,
         samples,
         period,
         ROUND(100.0 * period / SUM(period) OVER (PARTITION BY event), 4) AS percent,
         ROW_NUMBER() OVER (PARTITION BY event
                            ORDER BY period DESC, function, dso, addr) AS rank
  FROM per_function
)
SELECT event, rank, function, dso, sym_addr, samples, period, percent
FROM ranked{limit}
ORDER BY event, rank",
        filter = event_filter("e.name", event, "WHERE"),
        limit = limit_filter(limit),
    )
}

/// `--by-host`: samples and period per host and event.
fn by_host(event: &Option<String>) -> String {
    format!(
        "\
-- culprit sql --by-host: samples and period per host and event, and the host's share of
-- the event's period over all hosts
WITH per_file AS (
  SELECT file_id, event_id, COUNT(*) AS samples, SUM(period) AS period
  FROM samples
  GROUP BY file_id, event_id
),
per_host AS (
  SELECT h.host, e.name AS event, COUNT(DISTINCT p.file_id) AS recordings,
         SUM(p.samples) AS samples, SUM(p.period) AS period
  FROM per_file p
  JOIN hosts h ON h.file_id = p.file_id
  JOIN events e ON e.file_id = p.file_id AND e.event_id = p.event_id{filter}
  GROUP BY h.host, e.name
)
SELECT event, host, recordings, samples, period,
       ROUND(100.0 * period / SUM(period) OVER (PARTITION BY event), 4) AS percent
FROM per_host
ORDER BY event, period DESC, host",
        filter = event_filter("e.name", event, "WHERE"),
    )
}

/// The recordings (`file_id`) of one `--diff` side.
fn side_files(side: &str) -> String {
    let lit = sql_string(side);
    let build_id = if is_build_id_prefix(side) {
        format!(
            "\n     OR file_id IN (SELECT file_id FROM frames WHERE build_id LIKE {})",
            sql_string(&format!("{}%", side.to_ascii_lowercase()))
        )
    } else {
        String::new()
    };
    format!("SELECT file_id FROM hosts\n     WHERE host = {lit} OR file = {lit}{build_id}")
}

/// `--diff A B`: per function, its share of the event's period on each side, and B − A.
fn diff(a: &str, b: &str, event: &Option<String>, limit: Option<usize>) -> String {
    format!(
        "\
-- culprit sql --diff A B: per (event, dso, function), its share of the event's period in
-- the recordings of side A and of side B, and the change B - A in points (perf diff's
-- Delta). A side: every recording whose host, input file or a build id (prefix) is the
-- side's text. Functions without a symbol count as one '[unknown]' per DSO.
WITH side AS (
  SELECT file_id, 'A' AS side FROM ({side_a}) a
  UNION ALL
  SELECT file_id, 'B' AS side FROM ({side_b}) b
),
leaf AS (
  SELECT file_id, event_id, leaf_frame_id, SUM(period) AS period
  FROM samples
  GROUP BY file_id, event_id, leaf_frame_id
),
keyed AS (
  SELECT s.side, e.name AS event,
         COALESCE(f.function, '[unknown]') AS function,
         COALESCE(f.dso, '[unknown]') AS dso,
         l.period
  FROM leaf l
  JOIN side s ON s.file_id = l.file_id
  JOIN events e ON e.file_id = l.file_id AND e.event_id = l.event_id
  JOIN frames f ON f.file_id = l.file_id AND f.frame_id = l.leaf_frame_id{filter}
),
per_function AS (
  SELECT side, event, function, dso, SUM(period) AS period
  FROM keyed
  GROUP BY side, event, function, dso
),
shares AS (
  SELECT side, event, function, dso, period,
         100.0 * period / SUM(period) OVER (PARTITION BY side, event) AS share
  FROM per_function
),
joined AS (
  SELECT COALESCE(a.event, b.event) AS event,
         COALESCE(a.function, b.function) AS function,
         COALESCE(a.dso, b.dso) AS dso,
         COALESCE(a.period, 0) AS period_a,
         COALESCE(b.period, 0) AS period_b,
         COALESCE(a.share, 0.0) AS share_a,
         COALESCE(b.share, 0.0) AS share_b
  FROM (SELECT * FROM shares WHERE side = 'A') a
  FULL OUTER JOIN (SELECT * FROM shares WHERE side = 'B') b
    ON a.event = b.event AND a.function = b.function AND a.dso = b.dso
),
ranked AS (
  SELECT event, function, dso, period_a, period_b,
         ROUND(share_a, 4) AS share_a,
         ROUND(share_b, 4) AS share_b,
         ROUND(share_b - share_a, 4) AS delta,
         ROW_NUMBER() OVER (PARTITION BY event
                            ORDER BY ABS(share_b - share_a) DESC, function, dso) AS rank
  FROM joined
)
SELECT event, rank, function, dso, period_a, period_b, share_a, share_b, delta
FROM ranked{limit}
ORDER BY event, rank",
        side_a = side_files(a),
        side_b = side_files(b),
        filter = event_filter("e.name", event, "WHERE"),
        limit = limit_filter(limit),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_sql_string_doubles_quotes() {
        assert_eq!(sql_string("it's"), "'it''s'");
        assert_eq!(sql_string("'; DROP TABLE x; --"), "'''; DROP TABLE x; --'");
    }

    #[test]
    fn test_build_id_prefix_only_for_hex() {
        assert!(side_files("abcd01").contains("build_id LIKE 'abcd01%'"));
        assert!(side_files("ABCD").contains("build_id LIKE 'abcd%'"));
        assert!(!side_files("web-1").contains("build_id"));
        assert!(!side_files("abc").contains("build_id"));
        assert!(!side_files("ab%d").contains("build_id"));
    }

    /// The queries docs/fleet.md shows (after `<!-- sql:NAME -->`), exactly as they run.
    fn documented() -> [(&'static str, Named); 3] {
        [
            (
                "top-functions",
                Named::TopFunctions {
                    event: None,
                    limit: None,
                },
            ),
            ("by-host", Named::ByHost { event: None }),
            (
                "diff",
                Named::Diff {
                    a: "web-17".into(),
                    b: "3f2a9c01".into(),
                    event: None,
                    limit: None,
                },
            ),
        ]
    }

    #[test]
    fn test_docs_show_the_named_queries_verbatim() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fleet.md");
        let doc = std::fs::read_to_string(path).unwrap();
        for (name, q) in documented() {
            let marker = format!("<!-- sql:{name} -->\n\n```sql\n");
            let at = doc
                .find(&marker)
                .unwrap_or_else(|| panic!("docs/fleet.md has no {marker:?}"))
                + marker.len();
            let end = at + doc[at..].find("\n```\n").unwrap();
            assert_eq!(
                &doc[at..end],
                q.sql(),
                "docs/fleet.md shows another SQL for --{name}"
            );
        }
    }

    #[test]
    fn test_named_sql_carries_filters_and_limits() {
        let q = Named::TopFunctions {
            event: Some("cpu-clock".into()),
            limit: Some(10),
        }
        .sql();
        assert!(q.contains("WHERE e.name = 'cpu-clock'"), "{q}");
        assert!(q.contains("WHERE rank <= 10"), "{q}");
        let q = Named::TopFunctions {
            event: None,
            limit: None,
        }
        .sql();
        assert!(!q.contains("e.name ="), "{q}");
        assert!(!q.contains("rank <="), "{q}");
        let q = Named::Diff {
            a: "a'b".into(),
            b: "host2".into(),
            event: None,
            limit: Some(3),
        }
        .sql();
        assert!(q.contains("host = 'a''b' OR file = 'a''b'"), "{q}");
        assert!(q.contains("WHERE rank <= 3"), "{q}");
    }
}
