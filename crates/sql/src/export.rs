//! The export directories: checks that each is a culprit Parquet export, and registers its
//! tables with DataFusion (one listing table per table over every directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::SqlError;

/// The tables of an export, each a directory of Parquet files (docs/fleet.md): the writer's
/// list.
pub use culprit_parquet::TABLES;

/// Export directories, checked.
#[derive(Debug, Clone)]
pub struct Export {
    /// The directories as given.
    pub dirs: Vec<PathBuf>,
    /// Their canonical paths.
    canonical: Vec<PathBuf>,
    /// Number of recordings (files of `hosts/`: one per exported perf.data).
    pub recordings: usize,
    /// Per table, per directory: whether it holds at least one Parquet file.
    has_files: BTreeMap<&'static str, Vec<bool>>,
}

/// The `.parquet` files of `dir` (not recursive), sorted.
fn parquet_files(dir: &Path) -> Result<Vec<PathBuf>, SqlError> {
    let io = |source| SqlError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "parquet") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// What to suggest when `dir` is not an export: its parent when `dir` is a table directory.
fn not_export_hint(dir: &Path) -> String {
    let is_table = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| TABLES.contains(&n));
    match dir.canonicalize().ok().as_deref().and_then(Path::parent) {
        Some(parent) if is_table && TABLES.iter().all(|t| parent.join(t).is_dir()) => {
            format!("; {} is the export", parent.display())
        }
        _ => String::new(),
    }
}

impl Export {
    /// Checks `dirs`: each exists and has the five table directories; every table has a
    /// Parquet file somewhere; no recording is in two directories.
    pub fn open(dirs: &[PathBuf]) -> Result<Export, SqlError> {
        if dirs.is_empty() {
            return Err(SqlError::NoDirs);
        }
        let mut canonical = Vec::with_capacity(dirs.len());
        let mut has_files: BTreeMap<&'static str, Vec<bool>> = BTreeMap::new();
        // Recording id (hosts/<file_id>.parquet) -> the directory it was first seen in.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, dir) in dirs.iter().enumerate() {
            let meta = match std::fs::metadata(dir) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(SqlError::NoSuchDir(dir.clone()))
                }
                Err(source) => {
                    return Err(SqlError::Io {
                        path: dir.clone(),
                        source,
                    })
                }
            };
            if !meta.is_dir() {
                return Err(SqlError::NotADir(dir.clone()));
            }
            for table in TABLES {
                let t = dir.join(table);
                if !t.is_dir() {
                    return Err(SqlError::NotAnExport {
                        dir: dir.clone(),
                        table,
                        hint: not_export_hint(dir),
                    });
                }
                let files = parquet_files(&t)?;
                if table == "hosts" {
                    for f in &files {
                        let id = f
                            .file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        if let Some(&first) = seen.get(&id) {
                            return Err(SqlError::Duplicate {
                                file_id: id,
                                first: dirs[first].clone(),
                                second: dir.clone(),
                            });
                        }
                        seen.insert(id, i);
                    }
                }
                has_files.entry(table).or_default().push(!files.is_empty());
            }
            canonical.push(dir.canonicalize().map_err(|source| SqlError::Io {
                path: dir.clone(),
                source,
            })?);
        }
        for table in TABLES {
            if !has_files[table].iter().any(|&b| b) {
                let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                return Err(SqlError::EmptyTable {
                    table,
                    dirs: names.join(", "),
                });
            }
        }
        Ok(Export {
            dirs: dirs.to_vec(),
            canonical,
            recordings: seen.len(),
            has_files,
        })
    }

    /// The URL of `table` in directory `i` (a directory URL: no glob expansion of the path).
    fn url(&self, i: usize, table: &str) -> Result<ListingTableUrl, SqlError> {
        let path = self.canonical[i].join(table);
        let bad = |why: String| SqlError::BadPath {
            path: path.clone(),
            why,
        };
        let url = url::Url::from_directory_path(&path)
            .map_err(|()| bad("not an absolute path".into()))?;
        ListingTableUrl::try_new(url, None).map_err(|e| bad(e.to_string()))
    }

    /// A DataFusion session with the five tables registered over every directory. Each
    /// table's schema is the union of the directories' (a column some exports lack reads as
    /// NULL there: exports of different schema versions query together).
    pub(crate) async fn context(&self) -> Result<SessionContext, SqlError> {
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let state = ctx.state();
        for table in TABLES {
            let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet");
            let mut urls = Vec::with_capacity(self.canonical.len());
            let mut schemas = Vec::new();
            for (i, &has) in self.has_files[table].iter().enumerate() {
                let url = self.url(i, table)?;
                if has {
                    let schema =
                        options
                            .infer_schema(&state, &url)
                            .await
                            .map_err(|e| SqlError::Schema {
                                table,
                                why: e.to_string(),
                            })?;
                    schemas.push(Arc::unwrap_or_clone(schema));
                }
                urls.push(url);
            }
            let schema = Schema::try_merge(schemas).map_err(|e| SqlError::Schema {
                table,
                why: e.to_string(),
            })?;
            let config = ListingTableConfig::new_with_multi_paths(urls)
                .with_listing_options(options)
                .with_schema(Arc::new(schema));
            let provider = ListingTable::try_new(config).map_err(SqlError::query)?;
            ctx.register_table(table, Arc::new(provider))
                .map_err(SqlError::query)?;
        }
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-sql-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn test_open_rejects_missing_non_dir_and_non_export() {
        let d = scratch("reject");
        let err = Export::open(&[d.join("nosuch")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: no such directory", d.join("nosuch").display())
        );
        std::fs::write(d.join("file"), b"x").unwrap();
        let err = Export::open(&[d.join("file")]).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        let err = Export::open(std::slice::from_ref(&d)).unwrap_err();
        assert!(
            err.to_string()
                .contains("not a culprit Parquet export: it has no hosts/ directory"),
            "{err}"
        );
        assert!(matches!(Export::open(&[]), Err(SqlError::NoDirs)));
    }

    #[test]
    fn test_open_rejects_empty_export_and_hints_at_the_parent() {
        let d = scratch("empty");
        for t in TABLES {
            std::fs::create_dir_all(d.join(t)).unwrap();
        }
        let err = Export::open(std::slice::from_ref(&d)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "no hosts data: {} hold no hosts/*.parquet file (an empty or unfinished export?)",
                d.display()
            )
        );
        let err = Export::open(&[d.join("samples")]).unwrap_err();
        assert!(
            err.to_string().ends_with(&format!(
                "; {} is the export",
                d.canonicalize().unwrap().display()
            )),
            "{err}"
        );
    }

    #[test]
    fn test_open_rejects_a_recording_in_two_dirs() {
        let a = scratch("dup-a");
        let b = scratch("dup-b");
        for d in [&a, &b] {
            for t in TABLES {
                std::fs::create_dir_all(d.join(t)).unwrap();
                std::fs::write(d.join(t).join("00000000000000ab.parquet"), b"").unwrap();
            }
        }
        let err = Export::open(&[a.clone(), b.clone()]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("recording 00000000000000ab is in both"),
            "{err}"
        );
        let ok = Export::open(&[a]).unwrap();
        assert_eq!(ok.recordings, 1);
    }
}
