//! `--format parquet`: the tables are written by [`culprit_parquet`] (docs/fleet.md); this
//! module turns what was written into the export's summary.

use std::path::Path;

use culprit_symbols::ProfileInput;

pub use culprit_parquet::write::{
    ParquetFileSummary, ParquetOptions, ParquetSummary, DEFAULT_FILE_ROWS, DEFAULT_ROW_GROUP_ROWS,
};
pub use culprit_parquet::SCHEMA_VERSION;

use crate::{EventSummary, ExportError, ExportSummary};

/// Writes the tables of `input` into `dir` (see [`culprit_parquet::write::export_file`]).
pub fn export_file(
    input: &ProfileInput,
    dir: &Path,
    opts: &ParquetOptions,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<ParquetFileSummary, ExportError> {
    Ok(culprit_parquet::write::export_file(
        input, dir, opts, progress,
    )?)
}

/// The export summary of a Parquet export of `files` into `dir`: totals over the inputs,
/// the per-file details under `parquet`.
pub fn summary(dir: &Path, files: Vec<ParquetFileSummary>) -> ExportSummary {
    let mut events: Vec<EventSummary> = Vec::new();
    for f in &files {
        for e in &f.events {
            match events.iter_mut().find(|x| x.name == e.name) {
                Some(x) => {
                    x.samples += e.samples;
                    x.period += e.period;
                }
                None => events.push(EventSummary {
                    name: e.name.clone(),
                    samples: e.samples,
                    period: e.period,
                }),
            }
        }
    }
    let many = files.len() > 1;
    let warnings = files
        .iter()
        .flat_map(|f| {
            f.warnings.iter().map(move |w| {
                if many {
                    format!("{}: {w}", f.input)
                } else {
                    w.clone()
                }
            })
        })
        .collect();
    ExportSummary {
        schema: 1,
        format: "parquet".to_string(),
        input: files
            .iter()
            .map(|f| f.input.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        exported_events: events.iter().map(|e| e.name.clone()).collect(),
        events,
        samples: files.iter().map(|f| f.samples).sum(),
        stacks: files.iter().map(|f| f.stacks).sum(),
        records: files.iter().map(|f| f.samples).sum(),
        bytes: files.iter().map(|f| f.bytes).sum(),
        lost: files.iter().map(|f| f.lost).sum(),
        warnings,
        stopped: files.iter().find_map(|f| f.stopped.clone()),
        pgo: None,
        parquet: Some(ParquetSummary {
            dir: dir.display().to_string(),
            schema_version: SCHEMA_VERSION,
            files,
        }),
    }
}
