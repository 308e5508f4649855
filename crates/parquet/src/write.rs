//! The profile as Parquet tables (`culprit export --format parquet`, docs/fleet.md): one row
//! per sample, with the stacks, frames, events and host of each input file, for query
//! engines (DataFusion, Spark, Trino, DuckDB) to read across many hosts.
//!
//! Layout of an export directory (schema version [`SCHEMA_VERSION`]):
//!
//! ```text
//! DIR/hosts/<file_id>.parquet     one row per input file
//! DIR/events/<file_id>.parquet    its events with their totals
//! DIR/frames/<file_id>.parquet    its code locations, symbolized once
//! DIR/stacks/<file_id>.parquet    its call stacks as lists of frame ids
//! DIR/samples/<file_id>.parquet   one row per sample (a big input continues in
//!                                 <file_id>-1.parquet, <file_id>-2.parquet, …)
//! ```
//!
//! `file_id` (16 hex digits in the names, an INT64 in every table) scopes every other id, so
//! the directories of many hosts union cleanly.
//!
//! Samples are streamed: each is appended to Arrow builders and written in row groups of
//! [`ParquetOptions::row_group_rows`] rows, so memory follows the distinct code locations and
//! stacks, not the file's size. Code locations are interned while reading (one frame per
//! DSO and file offset, per process for JIT code) and symbolized once at the end, with the
//! same symbolizer and the same rules as `culprit report --sort sym`; stacks are interned as
//! a prefix tree (one node per (caller node, frame)) and the stack id is its leaf node.

use std::fs::{self, File};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use culprit_analysis::parallelism::ParallelismTracker;
use culprit_analysis::recording::Stopped;
use culprit_analysis::stacks::{StackError, StackOptions};
use culprit_analysis::AnalysisError;
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::schema::{samples_schema, TABLES};
use crate::{EventSummary, WriteError};

// The writer's parts: one Parquet file, the samples' columns, the precise fields of a
// sample (PEBS, IBS; where ARM SPE's go), the sample writer, the tables written after it.
mod columns;
mod file;
mod precise;
mod samples;
mod spe;
mod tables;

use columns::SampleColumns;
use file::{io_error, TableFile};
use samples::SampleWriter;
use tables::{write_events, write_frames, write_host, write_stacks};

/// Rows per row group by default (about 1 M: a row group is the unit engines read in
/// parallel, and what the writer holds in memory, encoded).
pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 20;

/// Sample rows per file by default before the samples continue in a new file.
pub const DEFAULT_FILE_ROWS: u64 = 1 << 25;

/// Rows per Arrow batch handed to the writer (the builders are reused across batches).
const BATCH_ROWS: usize = 64 * 1024;

/// What a Parquet export writes, beyond the tables themselves.
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Which samples and events, inline expansion (`--inline`: inlined functions get frames
    /// of their own, in `frames` and in the stacks), unwinding.
    pub stacks: StackOptions,
    /// The host name written in `hosts.host` and `samples.host`; `None`: the file's
    /// HEADER_HOSTNAME (else `unknown`).
    pub host: Option<String>,
    /// Rows per row group of every table.
    pub row_group_rows: usize,
    /// Sample rows per file: a bigger input continues in
    /// `<file_id>-1.parquet`, `<file_id>-2.parquet`, …
    pub file_rows: u64,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            stacks: StackOptions::default(),
            host: None,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            file_rows: DEFAULT_FILE_ROWS,
        }
    }
}

/// What was written for one input file (`culprit export --summary json`: `parquet.files`).
#[derive(Debug, Clone, Serialize)]
pub struct ParquetFileSummary {
    /// The input as given.
    pub input: String,
    /// Its file id (16 hex digits, as in the file names).
    pub file_id: String,
    /// The host name written.
    pub host: String,
    /// Sample rows written.
    pub samples: u64,
    /// Distinct stacks (rows of `stacks`).
    pub stacks: u64,
    /// Frames (rows of `frames`).
    pub frames: u64,
    /// Events of the file (rows of `events`), with the samples exported of each.
    pub events: Vec<EventSummary>,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Bytes of Parquet written for this input (all tables).
    pub bytes: u64,
    /// The files written, relative to the export directory.
    pub files: Vec<String>,
    /// Problems met.
    pub warnings: Vec<String>,
    /// Where reading stopped, for a damaged file (what was read is exported).
    pub stopped: Option<Stopped>,
}

/// The `parquet` object of an export summary.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetSummary {
    /// The export directory.
    pub dir: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: i32,
    /// One entry per input file.
    pub files: Vec<ParquetFileSummary>,
}

/// Lower-case hex of bytes.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The file id of an input: a hash of the host name, the input's absolute path, size,
/// modification time and first 4 KiB (the same file exported again gets the same id, so
/// its tables are replaced, not duplicated); for stdin, of the host, the time and this
/// process. Never negative.
fn file_id(input: &ProfileInput, host: &str) -> i64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    host.hash(&mut h);
    if input.is_stdin() {
        "-".hash(&mut h);
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            .hash(&mut h);
        std::process::id().hash(&mut h);
    } else {
        let path = input.path();
        fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .hash(&mut h);
        if let Ok(m) = fs::metadata(path) {
            m.len().hash(&mut h);
            m.modified().ok().hash(&mut h);
        }
        let mut head = vec![0u8; 4096];
        if let Ok(mut f) = File::open(path) {
            let n = io::Read::read(&mut f, &mut head).unwrap_or(0);
            head[..n].hash(&mut h);
        }
    }
    (h.finish() & i64::MAX as u64) as i64
}

/// The host name of a file's rows: `--host`, else HEADER_HOSTNAME, else `unknown`.
fn host_name(opts: &ParquetOptions, hostname: Option<&str>) -> String {
    opts.host
        .clone()
        .or_else(|| hostname.map(str::to_string))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Exports one input file into the export directory `dir` (created if needed, with its table
/// directories), reporting
/// `progress(bytes done, total)`. A truncated input is exported up to where reading stopped
/// (`stopped` in the summary).
pub fn export_file(
    input: &ProfileInput,
    dir: &Path,
    opts: &ParquetOptions,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<ParquetFileSummary, WriteError> {
    let mut w = SampleWriter {
        opts,
        dir,
        input,
        file_id: 0,
        file_id_hex: String::new(),
        host: String::new(),
        events: Vec::new(),
        ibs_ctx: None,
        dso_names: Vec::new(),
        frame_ids: FxHashMap::default(),
        frames: Vec::new(),
        node_ids: FxHashMap::default(),
        nodes: Vec::new(),
        is_stack: Vec::new(),
        stacks: 0,
        stack_cache: FxHashMap::default(),
        stack_keys: Vec::new(),
        keys: Vec::new(),
        path: Vec::new(),
        columns: SampleColumns::new(),
        out: None,
        file_rows_written: 0,
        files_written: Vec::new(),
        bytes: 0,
        samples: 0,
        time_range: None,
        parallelism: ParallelismTracker::default(),
        switch_records: None,
        error: None,
    };
    let plan = ReadPlan {
        unwind: opts.stacks.unwind,
        ..ReadPlan::default()
    };
    let profile = input
        .for_each(&plan, progress, |p, s| w.add(p, s))
        .map_err(|e| WriteError::Stacks(StackError::Read(e)))?;
    if let Some(e) = w.error.take() {
        return Err(e);
    }
    if !opts.stacks.events.is_empty() {
        // Every event the file has is looked at (its samples may all be filtered out).
        let wanted = &opts.stacks.events;
        if !profile
            .events
            .iter()
            .any(|e| wanted.iter().any(|x| e.matches(x)))
        {
            let e = culprit_decode::model::select_events(&profile, wanted)
                .err()
                .map(AnalysisError::from)
                .unwrap_or_else(|| AnalysisError::UnknownEvent {
                    wanted: wanted.join(","),
                    available: profile.events.iter().map(|e| e.name.clone()).collect(),
                });
            return Err(WriteError::Stacks(StackError::Analysis(e)));
        }
    }
    w.identify(&profile)?;
    let id_hex = w.file_id_hex.clone();
    let host = w.host.clone();
    w.flush()?;
    // An input without samples still gets its (empty) samples file: every table has a
    // file for every input.
    if w.files_written.is_empty() {
        let name = format!("{id_hex}.parquet");
        let f = TableFile::create(
            &dir.join("samples"),
            &name,
            Arc::new(samples_schema()),
            opts.row_group_rows,
        )?;
        w.bytes += f.finish()?;
        w.files_written.push(format!("samples/{name}"));
    }
    w.close_file()?;

    let mut symbolizer = input.symbolizer();
    let mut files = std::mem::take(&mut w.files_written);
    let mut bytes = w.bytes;
    let name = format!("{id_hex}.parquet");

    let frames = write_frames(&w, &profile, &mut symbolizer, dir, &name, &mut bytes)?;
    files.push(format!("frames/{name}"));
    write_stacks(&w, frames.inline_ids.as_slice(), dir, &name, &mut bytes)?;
    files.push(format!("stacks/{name}"));
    let events = write_events(&w, &profile, dir, &name, &mut bytes)?;
    files.push(format!("events/{name}"));
    write_host(&w, &profile, input, dir, &name, &mut bytes)?;
    files.push(format!("hosts/{name}"));

    let mut warnings = profile.warnings.clone();
    warnings.extend(symbolizer.warnings().iter().cloned());
    Ok(ParquetFileSummary {
        input: input.path().display().to_string(),
        file_id: id_hex,
        host,
        samples: w.samples,
        stacks: w.stacks,
        frames: frames.rows,
        events,
        lost: profile.lost,
        bytes,
        files,
        warnings,
        stopped: profile.stopped.clone(),
    })
}

/// Removes the tables of an earlier export of the same file id (a longer one may have
/// written more samples files than this one will).
fn remove_stale(dir: &Path, id_hex: &str) -> Result<(), WriteError> {
    for t in TABLES {
        let d = dir.join(t);
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = name == format!("{id_hex}.parquet")
                || (name.starts_with(&format!("{id_hex}-")) && name.ends_with(".parquet"));
            if ours {
                fs::remove_file(e.path()).map_err(|err| io_error(&e.path(), err))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_host_name_prefers_the_flag_then_the_header() {
        let mut opts = ParquetOptions::default();
        assert_eq!(host_name(&opts, Some("vm")), "vm");
        assert_eq!(host_name(&opts, None), "unknown");
        assert_eq!(host_name(&opts, Some("")), "unknown");
        opts.host = Some("web-17".to_string());
        assert_eq!(host_name(&opts, Some("vm")), "web-17");
    }
}
