//! Reads the tables of Parquet exports back (`culprit export --format parquet`, schema in
//! docs/fleet.md) and makes the hotspot report of them (`culprit report --from-parquet
//! DIR…`): the same rows and numbers `culprit report -i` gives over the perf.data files the
//! exports were made from, for the sort keys the tables carry.
//!
//! Each input file of an export (a `file_id`: one row of `hosts`) is one input of the
//! report, as one `-i` file is: its `events`, `frames` and `stacks` are read into memory
//! (they grow with the distinct events, code locations and stacks, not with the samples),
//! then its `samples` are streamed batch by batch and folded by what the report's keys read
//! (memory follows the distinct folded entries, as `culprit report`'s aggregation does).
//! Rows are made from the folded entries with the rules of one perf.data report (see
//! `culprit_analysis::hotspots`), then merged across inputs by
//! [`culprit_analysis::fleet::FleetMerge`], as `-i a -i b` merges files.
//!
//! What the tables carry, and so what can be reported:
//! - keys `comm`, `pid`, `tid`, `cpu` (from `samples`), `dso`, `sym`, `srcline`, `srcfile`
//!   (from the sample's frames; `srcline` and `srcfile` need the frames' source lines,
//!   present when the exported binaries had line tables), events by name;
//! - self values, and children values from `stacks.frame_ids` (each frame's row counted once
//!   per sample, as perf does; inlined frames of `--inline` exports count for their
//!   function's row);
//! - not `ip` (the tables have file offsets, not the ELF addresses `ip` shows), the memory
//!   keys (perf's memory mode weighs the recorded PERF_SAMPLE_WEIGHT, which the tables do not
//!   keep as such), `--deskid` (it disassembles the binaries) nor call graphs (`-g`): asking
//!   for them is an error that says so.
//!
//! Where the numbers can differ from `-i` on the original file: what the export left out
//! (its `-e`, `--pid`, `--comm` filters), the kernel's per-event lost counts (the tables
//! have each file's total in `hosts.lost`), and rows of unnamed code reached through a call
//! chain in several processes at different addresses of one DSO (`frames.address` keeps
//! the first address of a code location, `culprit report` keys such rows by address).

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rustc_hash::FxHashMap;

use culprit_analysis::fleet::{FleetError, FleetMerge, FleetOptions, FleetReport, InputSummary};
use culprit_analysis::hotspots::{children_window, EventFacts, EventJson, KeyPart};
use culprit_analysis::recording::RecordingMeta;
use culprit_analysis::{CallGraphMode, SortKey};
use culprit_decode::model::event_name_matches;

/// The tables of an export, each a directory of `<file_id>.parquet` files.
pub const TABLES: [&str; 5] = ["hosts", "events", "frames", "stacks", "samples"];

/// The table layout version this reader reads (`hosts.schema_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// Rows per batch read from a table.
const BATCH_ROWS: usize = 64 * 1024;

/// Why Parquet exports cannot be reported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParquetReadError {
    /// A directory given is not an export.
    #[error(
        "{dir} is not a culprit Parquet export ({why}); write one with `culprit export \
         --format parquet -i FILE -o {dir}`"
    )]
    NotAnExport {
        /// The directory as given.
        dir: String,
        /// What is missing.
        why: String,
    },
    /// The report asks for what the tables do not carry.
    #[error("--from-parquet: {0}")]
    Unsupported(String),
    /// The merged report could not be made.
    #[error(transparent)]
    Fleet(#[from] FleetError),
}

/// Why one input's tables could not be read (the input is then listed with this error,
/// and the others still count).
#[derive(Debug, thiserror::Error)]
enum TableError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parquet {
        path: String,
        source: parquet::errors::ParquetError,
    },
    #[error("{path}: {source}")]
    Arrow {
        path: String,
        source: arrow_schema::ArrowError,
    },
    #[error("{path}: {why}")]
    Layout { path: String, why: String },
}

/// An export directory and the input files it holds (their file ids as 16 hex digits,
/// from the names of `hosts/*.parquet`), by host and recorded file.
#[derive(Debug, Clone)]
pub struct ExportDir {
    /// The directory as given.
    pub dir: PathBuf,
    /// Its input files' ids.
    pub files: Vec<String>,
}

/// Checks that `dir` is an export (its five table directories, at least one input in
/// `hosts`) and lists its inputs.
pub fn open_export(dir: &Path) -> Result<ExportDir, ParquetReadError> {
    let not = |why: String| ParquetReadError::NotAnExport {
        dir: dir.display().to_string(),
        why,
    };
    if !dir.is_dir() {
        return Err(not(if dir.exists() {
            "not a directory".to_string()
        } else {
            "no such directory".to_string()
        }));
    }
    let missing: Vec<&str> = TABLES
        .iter()
        .copied()
        .filter(|t| !dir.join(t).is_dir())
        .collect();
    if !missing.is_empty() {
        return Err(not(format!("no {} table", missing.join(", "))));
    }
    let entries = std::fs::read_dir(dir.join("hosts"))
        .map_err(|e| not(format!("hosts/ cannot be listed: {e}")))?;
    let files: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let id = name.strip_suffix(".parquet")?;
            (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_string())
        })
        .collect();
    if files.is_empty() {
        return Err(not("hosts/ has no <file_id>.parquet".to_string()));
    }
    // By host, then recorded file (as exported), then id: the order the report lists them.
    let mut keyed: Vec<((String, String), String)> = files
        .into_iter()
        .map(|id| (host_and_file(dir, &id).unwrap_or_default(), id))
        .collect();
    keyed.sort();
    let files = keyed.into_iter().map(|(_, id)| id).collect();
    Ok(ExportDir {
        dir: dir.to_path_buf(),
        files,
    })
}

/// The host and recorded file of input `id` of `dir` (`None` when its hosts row cannot be
/// read: reading the input says why).
fn host_and_file(dir: &Path, id: &str) -> Option<(String, String)> {
    let path = table_path(dir, "hosts", id);
    let b = batches(&path, &["host", "file"]).ok()?.next()?.ok()?;
    let c = Cols {
        batch: &b,
        path: &path,
    };
    let host = c.strs("host").ok()?.get(0)?.to_string();
    let file = c.strs("file").ok()?.get(0)?.to_string();
    Some((host, file))
}

/// Streams the batches of `columns` of one Parquet file (every column must exist).
fn batches(
    path: &Path,
    columns: &[&str],
) -> Result<impl Iterator<Item = Result<RecordBatch, TableError>>, TableError> {
    let p = path.display().to_string();
    let file = File::open(path).map_err(|source| TableError::Io {
        path: p.clone(),
        source,
    })?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|source| TableError::Parquet {
            path: p.clone(),
            source,
        })?;
    let schema = builder.schema().clone();
    let mut roots = Vec::with_capacity(columns.len());
    for c in columns {
        match schema.index_of(c) {
            Ok(i) => roots.push(i),
            Err(_) => {
                return Err(TableError::Layout {
                    path: p,
                    why: format!("no column '{c}' (not a culprit export table?)"),
                })
            }
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|source| TableError::Parquet {
            path: p.clone(),
            source,
        })?;
    Ok(reader.map(move |b| {
        b.map_err(|source| TableError::Arrow {
            path: p.clone(),
            source,
        })
    }))
}

/// An integer column (INT32 or INT64).
enum Ints<'a> {
    I32(&'a arrow_array::Int32Array),
    I64(&'a arrow_array::Int64Array),
}

impl Ints<'_> {
    fn get(&self, i: usize) -> Option<i64> {
        match self {
            Ints::I32(a) => a.is_valid(i).then(|| i64::from(a.value(i))),
            Ints::I64(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// A string column (UTF-8, either offset width).
enum Strs<'a> {
    Small(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
}

impl Strs<'_> {
    fn get(&self, i: usize) -> Option<&str> {
        match self {
            Strs::Small(a) => a.is_valid(i).then(|| a.value(i)),
            Strs::Large(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// Typed access to the columns of one batch, with errors naming the file and column.
struct Cols<'a> {
    batch: &'a RecordBatch,
    path: &'a Path,
}

impl<'a> Cols<'a> {
    fn column(&self, name: &str) -> Result<&'a ArrayRef, TableError> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| self.wrong(name, "missing"))
    }

    fn wrong(&self, name: &str, what: &str) -> TableError {
        TableError::Layout {
            path: self.path.display().to_string(),
            why: format!("column '{name}': {what}"),
        }
    }

    fn ints(&self, name: &str) -> Result<Ints<'a>, TableError> {
        let c = self.column(name)?;
        match c.data_type() {
            DataType::Int32 => Ok(Ints::I32(c.as_primitive::<Int32Type>())),
            DataType::Int64 => Ok(Ints::I64(c.as_primitive::<Int64Type>())),
            t => Err(self.wrong(name, &format!("type {t}, expected an integer"))),
        }
    }

    fn strs(&self, name: &str) -> Result<Strs<'a>, TableError> {
        let c = self.column(name)?;
        match c.data_type() {
            DataType::Utf8 => Ok(Strs::Small(c.as_string::<i32>())),
            DataType::LargeUtf8 => Ok(Strs::Large(c.as_string::<i64>())),
            t => Err(self.wrong(name, &format!("type {t}, expected a string"))),
        }
    }

    fn bools(&self, name: &str) -> Result<&'a BooleanArray, TableError> {
        let c = self.column(name)?;
        c.as_boolean_opt()
            .ok_or_else(|| self.wrong(name, &format!("type {}, expected a boolean", c.data_type())))
    }

    /// A required value.
    fn need<T>(&self, name: &str, row: usize, v: Option<T>) -> Result<T, TableError> {
        v.ok_or_else(|| self.wrong(name, &format!("null in row {row}")))
    }
}

/// Interned strings of one input.
#[derive(Default)]
struct Strings {
    strs: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strs.len() as u32;
        self.strs.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }

    fn get(&self, i: u32) -> &str {
        self.strs.get(i as usize).map_or("", String::as_str)
    }
}

/// A row of `frames`, as the report's keys read it.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// DSO short name.
    dso: u32,
    function: Option<u32>,
    /// `basename:line` (the report's srcline), when the frame has a source line.
    srcline: Option<u32>,
    /// The source file's base name.
    srcfile: Option<u32>,
    /// 0: the function whose symbol holds the address; more: inlined.
    inline: bool,
    kernel: bool,
    /// The file offset (the address when the code has no mapping).
    offset: u64,
    /// The sampled address.
    address: u64,
}

/// A group of a stack: a function's frame (depth 0) and the innermost of its inline
/// frames (itself when it has none).
#[derive(Debug, Clone, Copy)]
struct Group {
    frame: u32,
    innermost: u32,
}

/// One input of an export: its host row, events, frames and stacks.
struct Input {
    /// `hosts.samples`: the rows the export wrote to `samples/` for this input.
    sample_rows: i64,
    file: String,
    meta: RecordingMeta,
    /// (event_id, name, unit), in event_id order.
    events: Vec<(i64, String, String)>,
    frames: Vec<Frame>,
    frame_index: FxHashMap<i64, u32>,
    /// stack_id -> range in `groups`.
    stacks: FxHashMap<i64, (u32, u32)>,
    groups: Vec<Group>,
    has_chains: bool,
    strings: Strings,
}

fn table_path(dir: &Path, table: &str, id: &str) -> PathBuf {
    dir.join(table).join(format!("{id}.parquet"))
}

/// Reads the hosts, events, frames and stacks of input `id` of `dir`.
fn read_input(dir: &Path, id: &str) -> Result<Input, TableError> {
    let mut strings = Strings::default();
    // hosts: one row.
    let path = table_path(dir, "hosts", id);
    let mut host_row = None;
    for b in batches(
        &path,
        &[
            "schema_version",
            "host",
            "file",
            "kernel",
            "perf_version",
            "cmdline",
            "samples",
            "lost",
            "first_time",
            "last_time",
        ],
    )? {
        let b = b?;
        let c = Cols {
            batch: &b,
            path: &path,
        };
        if b.num_rows() == 0 {
            continue;
        }
        let version = c.need("schema_version", 0, c.ints("schema_version")?.get(0))?;
        if version != SCHEMA_VERSION {
            return Err(TableError::Layout {
                path: path.display().to_string(),
                why: format!(
                    "schema version {version}; this culprit reads version {SCHEMA_VERSION}"
                ),
            });
        }
        let s = |n: &str| -> Result<Option<String>, TableError> {
            Ok(c.strs(n)?.get(0).map(str::to_string))
        };
        let rows = c.ints("samples")?.get(0).unwrap_or(0);
        let first = c.ints("first_time")?.get(0);
        let last = c.ints("last_time")?.get(0);
        host_row = Some((
            rows,
            s("file")?.unwrap_or_default(),
            RecordingMeta {
                cmdline: s("cmdline")?,
                duration_ns: first
                    .zip(last)
                    .map(|(a, b)| b.saturating_sub(a).max(0) as u64),
                hostname: s("host")?,
                lost: c.ints("lost")?.get(0).unwrap_or(0).max(0) as u64,
                os_release: s("kernel")?,
                perf_version: s("perf_version")?,
            },
        ));
        break;
    }
    let Some((sample_rows, file, meta)) = host_row else {
        return Err(TableError::Layout {
            path: path.display().to_string(),
            why: "no row".to_string(),
        });
    };

    let path = table_path(dir, "events", id);
    let mut events = Vec::new();
    for b in batches(&path, &["event_id", "name", "unit"])? {
        let b = b?;
        let c = Cols {
            batch: &b,
            path: &path,
        };
        let (ids, names, units) = (c.ints("event_id")?, c.strs("name")?, c.strs("unit")?);
        for i in 0..b.num_rows() {
            events.push((
                c.need("event_id", i, ids.get(i))?,
                c.need("name", i, names.get(i))?.to_string(),
                units.get(i).unwrap_or("events").to_string(),
            ));
        }
    }
    events.sort_by_key(|e| e.0);

    let path = table_path(dir, "frames", id);
    let mut frames = Vec::new();
    let mut frame_index = FxHashMap::default();
    for b in batches(
        &path,
        &[
            "frame_id",
            "dso",
            "file_offset",
            "address",
            "function",
            "source_file",
            "line",
            "inline_depth",
            "kernel",
        ],
    )? {
        let b = b?;
        let c = Cols {
            batch: &b,
            path: &path,
        };
        let ids = c.ints("frame_id")?;
        let dso = c.strs("dso")?;
        let offset = c.ints("file_offset")?;
        let address = c.ints("address")?;
        let function = c.strs("function")?;
        let source = c.strs("source_file")?;
        let line = c.ints("line")?;
        let depth = c.ints("inline_depth")?;
        let kernel = c.bools("kernel")?;
        for i in 0..b.num_rows() {
            let id = c.need("frame_id", i, ids.get(i))?;
            let address = address.get(i).unwrap_or(0) as u64;
            // As `culprit report` (resolve_locations): the base name of the file, and its
            // line (0 when unknown).
            let file = source.get(i).map(|f| f.rsplit('/').next().unwrap_or(f));
            let srcline = file.map(|f| strings.id(&format!("{f}:{}", line.get(i).unwrap_or(0))));
            let f = Frame {
                dso: strings.id(dso.get(i).unwrap_or("[unknown]")),
                function: function.get(i).map(|n| strings.id(n)),
                srcline,
                srcfile: file.map(|f| strings.id(f)),
                inline: depth.get(i).unwrap_or(0) > 0,
                kernel: kernel.is_valid(i) && kernel.value(i),
                offset: offset.get(i).map_or(address, |o| o as u64),
                address,
            };
            frame_index.insert(id, frames.len() as u32);
            frames.push(f);
        }
    }

    let path = table_path(dir, "stacks", id);
    let mut stacks = FxHashMap::default();
    let mut groups: Vec<Group> = Vec::new();
    let mut has_chains = false;
    for b in batches(&path, &["stack_id", "frame_ids"])? {
        let b = b?;
        let c = Cols {
            batch: &b,
            path: &path,
        };
        let ids = c.ints("stack_id")?;
        let lists = c.column("frame_ids")?;
        let Some(lists) = lists.as_list_opt::<i32>() else {
            return Err(c.wrong("frame_ids", "expected a list of integers"));
        };
        for i in 0..b.num_rows() {
            let id = c.need("stack_id", i, ids.get(i))?;
            let values = lists.value(i);
            let Some(values) = values.as_primitive_opt::<Int64Type>() else {
                return Err(c.wrong("frame_ids", "expected a list of INT64"));
            };
            let start = groups.len() as u32;
            let mut innermost = None;
            for v in values.iter().flatten() {
                let Some(&f) = frame_index.get(&v) else {
                    return Err(c.wrong(
                        "frame_ids",
                        &format!("stack {id} names frame {v}, which frames/ does not have"),
                    ));
                };
                let inner = *innermost.get_or_insert(f);
                if !frames[f as usize].inline {
                    groups.push(Group {
                        frame: f,
                        innermost: inner,
                    });
                    innermost = None;
                }
            }
            let end = groups.len() as u32;
            has_chains |= end - start > 1;
            stacks.insert(id, (start, end));
        }
    }
    Ok(Input {
        sample_rows,
        file,
        meta,
        events,
        frames,
        frame_index,
        stacks,
        groups,
        has_chains,
        strings,
    })
}

/// What the report's keys read from a sample (the others are folded away).
#[derive(Debug, Clone, Copy)]
struct Kept {
    comm: bool,
    pid: bool,
    tid: bool,
    cpu: bool,
    /// The leaf frame (location keys, the DSO filter).
    leaf: bool,
    /// The whole stack (children values; srcline, whose innermost line may be an inline
    /// frame's).
    stack: bool,
}

/// Samples folded by what the report reads: (event index, comm, pid, tid, cpu, stack or
/// leaf frame) -> samples and period, in first-seen order.
type FoldKey = (u32, u32, i32, i32, i32, i64);

/// A row being accumulated for one input.
struct RowAcc {
    /// The first entry and group that made it (its texts: pid's comm, sym's tag).
    comm: u32,
    pid: i32,
    tid: i32,
    cpu: i32,
    group: Group,
    /// Whether the group was met as a call-chain frame (unnamed code is then keyed and shown
    /// by its address, as perf does), else as the sampled location (by file offset).
    caller: bool,
    /// Per event of the input: samples, period, children samples, children period.
    values: Vec<[u64; 4]>,
}

/// The keys of a row for a sample (`comm`, `pid`, `tid`, `cpu`) at group `g` (as the
/// sampled location or a caller), as words: equal words, same row.
fn key_words(
    keys: &[SortKey],
    input: &Input,
    k: &FoldKey,
    g: Group,
    caller: bool,
    out: &mut Vec<u64>,
) {
    out.clear();
    let f = &input.frames[g.frame as usize];
    let inner = &input.frames[g.innermost as usize];
    for key in keys {
        match key {
            SortKey::Comm => out.extend([u64::from(k.1), 0]),
            SortKey::Pid => out.extend([k.2 as u32 as u64, 0]),
            SortKey::Tid => out.extend([k.3 as u32 as u64, 0]),
            SortKey::Cpu => out.extend([k.4 as u32 as u64, 0]),
            SortKey::Dso => out.extend([u64::from(f.dso), 0]),
            SortKey::Sym => match f.function {
                Some(n) => out.extend([u64::from(f.dso) | 1 << 32, u64::from(n)]),
                None => out.extend([u64::from(f.dso), if caller { f.address } else { f.offset }]),
            },
            SortKey::Srcline => match inner.srcline {
                Some(s) => out.extend([u64::MAX, u64::from(s)]),
                None => out.extend([u64::from(f.dso), f.offset]),
            },
            SortKey::Srcfile => match inner.srcfile {
                Some(s) => out.extend([u64::MAX, u64::from(s)]),
                None => out.extend([u64::from(f.dso), u64::MAX]),
            },
            // Refused before reading (see `unsupported`).
            _ => out.extend([0, 0]),
        }
    }
}

/// Why the report cannot be made from the tables, if it cannot.
fn unsupported(opts: &FleetOptions) -> Option<String> {
    let h = &opts.hotspots;
    if let Some(k) = h.keys.iter().find(|k| k.is_memory() || **k == SortKey::Ip) {
        let why = if *k == SortKey::Ip {
            "the tables keep file offsets, not the ELF addresses `ip` shows"
        } else {
            "perf's memory mode weighs each sample's recorded PERF_SAMPLE_WEIGHT, which the \
             tables do not keep as such"
        };
        return Some(format!(
            "sort key '{}' is not in the tables ({why}); the tables give comm, pid, tid, cpu, \
             dso, sym, srcline, srcfile: use -i on the perf.data files for '{}'",
            k.name(),
            k.name()
        ));
    }
    if h.deskid {
        return Some(
            "--deskid disassembles the recorded binaries: use -i on the perf.data files"
                .to_string(),
        );
    }
    if h.call_graph != CallGraphMode::None {
        return Some(
            "call graphs (-g caller|callee) are made from perf.data files (-i); from the \
             tables, --children gives each function's inclusive share"
                .to_string(),
        );
    }
    None
}

/// The report of the inputs of the export directories `dirs` as one (each input file of
/// each export is one input, as one `-i` file). An input whose tables cannot be read is
/// listed with its error and the others still count; a directory that is not an export is
/// an error.
pub fn report(dirs: &[PathBuf], opts: &FleetOptions) -> Result<FleetReport, ParquetReadError> {
    if let Some(why) = unsupported(opts) {
        return Err(ParquetReadError::Unsupported(why));
    }
    let exports: Vec<ExportDir> = dirs
        .iter()
        .map(|d| open_export(d))
        .collect::<Result<_, _>>()?;
    let wanted = &opts.hotspots.events;
    let mut matched = vec![false; wanted.len()];
    let mut all_events: Vec<String> = Vec::new();
    let mut fleet = FleetMerge::new(opts);
    for e in &exports {
        for id in &e.files {
            let label = format!("{}/{id}", e.dir.display());
            match report_input(&e.dir, id, opts, &mut fleet, &mut matched, &mut all_events) {
                Ok(()) => {}
                Err(err) => {
                    fleet.warn(err.to_string());
                    fleet.add_input(InputSummary::failed(&label, err.to_string()));
                }
            }
        }
    }
    if let Some(n) = matched.iter().position(|m| !m) {
        if fleet.inputs().iter().any(|i| i.error.is_none()) {
            return Err(FleetError::UnknownEvent {
                wanted: wanted[n].clone(),
                available: all_events,
            }
            .into());
        }
    }
    Ok(fleet.finish(opts)?)
}

/// Reads input `id` of export `dir` and adds its rows to `fleet`.
fn report_input(
    dir: &Path,
    id: &str,
    opts: &FleetOptions,
    fleet: &mut FleetMerge,
    matched: &mut [bool],
    all_events: &mut Vec<String>,
) -> Result<(), TableError> {
    let input = read_input(dir, id)?;
    let h = &opts.hotspots;
    let keys = &h.keys;
    let has = |k: SortKey| keys.contains(&k);
    let children = opts.children != Some(false) && input.has_chains;
    let location = keys.iter().any(|k| {
        matches!(
            k,
            SortKey::Dso | SortKey::Sym | SortKey::Srcline | SortKey::Srcfile
        )
    }) || !h.filters.dsos.is_empty();
    let kept = Kept {
        comm: has(SortKey::Comm) || has(SortKey::Pid) || has(SortKey::Tid),
        pid: has(SortKey::Pid),
        tid: has(SortKey::Tid),
        cpu: has(SortKey::Cpu),
        leaf: location,
        stack: children || has(SortKey::Srcline) || has(SortKey::Srcfile),
    };
    for (_, name, _) in &input.events {
        if !all_events.contains(name) {
            all_events.push(name.clone());
        }
    }
    // The events asked for that this input has (all when none is asked for).
    let selected: Vec<bool> = input
        .events
        .iter()
        .map(|(_, name, _)| wanted_matches(&h.events, name, matched))
        .collect();
    let event_pos: FxHashMap<i64, u32> = input
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.0, i as u32))
        .collect();

    // Stream the samples: totals of every sample, the kept ones folded.
    let mut input = input;
    let mut totals = vec![(0u64, 0u64); input.events.len()];
    let mut fold: FxHashMap<FoldKey, u32> = FxHashMap::default();
    let mut entries: Vec<(FoldKey, u64, u64)> = Vec::new();
    let f = &h.filters;
    for path in sample_files(dir, id)? {
        for b in batches(
            &path,
            &[
                "pid",
                "tid",
                "comm",
                "cpu",
                "event_id",
                "period",
                "stack_id",
                "leaf_frame_id",
            ],
        )? {
            let b = b?;
            let c = Cols {
                batch: &b,
                path: &path,
            };
            let (pid, tid, comm, cpu) = (
                c.ints("pid")?,
                c.ints("tid")?,
                c.strs("comm")?,
                c.ints("cpu")?,
            );
            let (event, period) = (c.ints("event_id")?, c.ints("period")?);
            let (stack, leaf) = (c.ints("stack_id")?, c.ints("leaf_frame_id")?);
            for i in 0..b.num_rows() {
                let ev = c.need("event_id", i, event.get(i))?;
                let Some(&e) = event_pos.get(&ev) else {
                    return Err(c.wrong(
                        "event_id",
                        &format!("row {i}: event {ev}, which events/ does not have"),
                    ));
                };
                let p = period.get(i).unwrap_or(0);
                if p < 0 {
                    return Err(c.wrong("period", &format!("row {i}: negative period {p}")));
                }
                let p = p as u64;
                // Totals stay within the tables' own Int64: a sum past it would wrap.
                let total = &mut totals[e as usize];
                total.0 += 1;
                total.1 = total
                    .1
                    .checked_add(p)
                    .filter(|&t| t <= i64::MAX as u64)
                    .ok_or_else(|| {
                        c.wrong(
                            "period",
                            &format!(
                                "row {i}: the periods of event {ev} add up past 2^63-1 \
                                 (period {p})"
                            ),
                        )
                    })?;
                if !selected[e as usize] {
                    continue;
                }
                let (spid, stid) = (
                    c.need("pid", i, pid.get(i))? as i32,
                    c.need("tid", i, tid.get(i))? as i32,
                );
                let scomm = comm.get(i).unwrap_or("");
                let keep = (f.pids.is_empty() || f.pids.contains(&spid))
                    && (f.tids.is_empty() || f.tids.contains(&stid))
                    && (f.comms.is_empty() || f.comms.iter().any(|x| x == scomm));
                if !keep {
                    continue;
                }
                let place = if kept.stack {
                    c.need("stack_id", i, stack.get(i))?
                } else if kept.leaf {
                    c.need("leaf_frame_id", i, leaf.get(i))?
                } else {
                    0
                };
                let key: FoldKey = (
                    e,
                    if kept.comm {
                        input.strings.id(scomm)
                    } else {
                        0
                    },
                    if kept.pid { spid } else { 0 },
                    if kept.tid { stid } else { 0 },
                    // A sample without a CPU is on CPU 0, as `culprit report` shows it.
                    if kept.cpu {
                        cpu.get(i).unwrap_or(0) as i32
                    } else {
                        0
                    },
                    place,
                );
                match fold.get(&key) {
                    Some(&n) => {
                        let en = &mut entries[n as usize];
                        en.1 += 1;
                        en.2 += p;
                    }
                    None => {
                        fold.insert(key, entries.len() as u32);
                        entries.push((key, 1, p));
                    }
                }
            }
        }
    }
    drop(fold);
    let input = input;
    // Every row once: a samples file copied twice (or lost) would change every count.
    let rows: u64 = totals.iter().map(|t| t.0).sum();
    if i64::try_from(rows).ok() != Some(input.sample_rows) {
        return Err(TableError::Layout {
            path: dir.join("samples").display().to_string(),
            why: format!(
                "{rows} sample rows for input {id}, where hosts.samples says {} (a samples \
                 file duplicated or missing?)",
                input.sample_rows
            ),
        });
    }

    // The input's event columns: those asked for, or those with samples (all when none has).
    let any = totals.iter().any(|t| t.0 > 0);
    let columns: Vec<usize> = (0..input.events.len())
        .filter(|&e| selected[e] && (!h.events.is_empty() || !any || totals[e].0 > 0))
        .collect();
    let mut summary = InputSummary {
        file: format!("{} ({}/{id})", input.file, dir.display()),
        meta: Some(input.meta.clone()),
        events: Vec::new(),
        stopped: None,
        error: None,
    };
    if !h.events.is_empty() && columns.is_empty() {
        fleet.warn(format!(
            "{}: none of the events asked for (-e {}); its events: {}",
            summary.file,
            h.events.join(","),
            input
                .events
                .iter()
                .map(|e| e.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        fleet.add_input(summary);
        return Ok(());
    }
    let merge = fleet.rows();
    let mut col_of = vec![usize::MAX; input.events.len()];
    for &e in &columns {
        let (_, name, unit) = &input.events[e];
        let facts = EventFacts {
            period_is_ns: unit == "ns",
            deskid: "stays where sampled",
        };
        col_of[e] = merge.add_event(name, facts, totals[e].0, totals[e].1, 0);
        summary.events.push(EventJson {
            name: name.clone(),
            samples: totals[e].0,
            period: totals[e].1,
            lost: 0,
        });
    }
    if children {
        merge.set_has_callchains();
    }

    // Rows, as one perf.data report makes them.
    let ncol = input.events.len();
    let mut table = Rows::default();
    let mut words: Vec<u64> = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for (k, samples, period) in &entries {
        let e = k.0 as usize;
        if col_of[e] == usize::MAX {
            continue;
        }
        let (leaf, chain) = places(&input, kept, k, dir, id)?;
        let r = table.row(keys, &input, k, leaf, false, ncol, &mut words);
        let v = &mut table.rows[r as usize].values[e];
        v[0] += samples;
        v[1] += period;
        v[2] += samples;
        v[3] += period;
        if children {
            // The call chain is the sampled location and its callers, as the kernel gives
            // it (the export keeps the sampled location once); perf counts its outermost
            // frames only (--max-stack).
            seen.clear();
            seen.push(r);
            for &g in children_window(chain) {
                let r = table.row(keys, &input, k, g, true, ncol, &mut words);
                if seen.contains(&r) {
                    continue;
                }
                seen.push(r);
                let v = &mut table.rows[r as usize].values[e];
                v[2] += samples;
                v[3] += period;
            }
        }
    }
    let rows = table.rows;

    // The DSO filter keeps the rows whose first place is in one of the DSOs (by short name:
    // the tables have no paths).
    let dso_ok = |r: &RowAcc| {
        h.filters.dsos.is_empty() || {
            let name = if r.group.frame != NO_FRAME {
                input.strings.get(input.frames[r.group.frame as usize].dso)
            } else {
                "[unknown]"
            };
            h.filters.dsos.iter().any(|d| d == name)
        }
    };
    let mut texts: Vec<String> = Vec::with_capacity(keys.len());
    for r in &rows {
        if !dso_ok(r) {
            continue;
        }
        texts.clear();
        for key in keys.iter() {
            texts.push(match key {
                SortKey::Pid => format!("{}:{}", r.pid, input.strings.get(r.comm)),
                SortKey::Tid => format!("{}:{}", r.tid, input.strings.get(r.comm)),
                SortKey::Cpu => r.cpu.to_string(),
                SortKey::Srcline if r.group.frame != NO_FRAME => {
                    let f = &input.frames[r.group.frame as usize];
                    match input.frames[r.group.innermost as usize].srcline {
                        Some(s) => input.strings.get(s).to_string(),
                        None => format!("{}+{:#x}", input.strings.get(f.dso), f.offset),
                    }
                }
                _ => String::new(),
            });
        }
        let mut parts: Vec<KeyPart<'_>> = Vec::with_capacity(keys.len());
        for (j, key) in keys.iter().enumerate() {
            let fr = (r.group.frame != NO_FRAME).then(|| &input.frames[r.group.frame as usize]);
            let inner =
                (r.group.frame != NO_FRAME).then(|| &input.frames[r.group.innermost as usize]);
            let dso = fr.map_or("[unknown]", |f| input.strings.get(f.dso));
            parts.push(match key {
                SortKey::Comm => KeyPart::Text(input.strings.get(r.comm)),
                SortKey::Pid => KeyPart::Number(i64::from(r.pid), &texts[j]),
                SortKey::Tid => KeyPart::Number(i64::from(r.tid), &texts[j]),
                SortKey::Cpu => KeyPart::Number(i64::from(r.cpu), &texts[j]),
                SortKey::Dso => KeyPart::Text(dso),
                SortKey::Sym => KeyPart::Sym {
                    name: fr.and_then(|f| f.function).map(|n| input.strings.get(n)),
                    dso,
                    kernel: fr.is_some_and(|f| f.kernel),
                    addr: fr.map_or(0, |f| if r.caller { f.address } else { f.offset }),
                },
                SortKey::Srcline => {
                    KeyPart::Text(if fr.is_some() { &texts[j] } else { "[unknown]" })
                }
                SortKey::Srcfile => KeyPart::Srcfile {
                    file: inner.and_then(|f| f.srcfile).map(|s| input.strings.get(s)),
                    dso,
                },
                _ => KeyPart::Text(""),
            });
        }
        for (e, v) in r.values.iter().enumerate() {
            if col_of[e] != usize::MAX && v.iter().any(|&x| x > 0) {
                merge.add_row(&parts, col_of[e], *v);
            }
        }
    }
    fleet.add_input(summary);
    Ok(())
}

/// A group that is no frame: rows of reports without a location key.
const NO_FRAME: u32 = u32::MAX;

/// The sampled location of folded entry `k` and its call chain (the sampled location
/// first, then its callers; empty when the stack is not kept).
fn places<'a>(
    input: &'a Input,
    kept: Kept,
    k: &FoldKey,
    dir: &Path,
    id: &str,
) -> Result<(Group, &'a [Group]), TableError> {
    let no_group = Group {
        frame: NO_FRAME,
        innermost: NO_FRAME,
    };
    let missing = |what: String| TableError::Layout {
        path: table_path(dir, "samples", id).display().to_string(),
        why: what,
    };
    if kept.stack {
        let &(a, b) = input
            .stacks
            .get(&k.5)
            .ok_or_else(|| missing(format!("stack {} is not in stacks/", k.5)))?;
        let g = input.groups.get(a as usize..b as usize).unwrap_or(&[]);
        Ok((g.first().copied().unwrap_or(no_group), g))
    } else if kept.leaf {
        let &f = input
            .frame_index
            .get(&k.5)
            .ok_or_else(|| missing(format!("leaf frame {} is not in frames/", k.5)))?;
        Ok((
            Group {
                frame: f,
                innermost: f,
            },
            &[],
        ))
    } else {
        Ok((no_group, &[]))
    }
}

/// The rows of one input, by their key words, in first-seen order.
#[derive(Default)]
struct Rows {
    rows: Vec<RowAcc>,
    index: FxHashMap<Vec<u64>, u32>,
}

impl Rows {
    /// The row of entry `k` at group `g` (as its sampled location, or a `caller`), made on
    /// first sight with `ncol` events.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        keys: &[SortKey],
        input: &Input,
        k: &FoldKey,
        g: Group,
        caller: bool,
        ncol: usize,
        words: &mut Vec<u64>,
    ) -> u32 {
        if g.frame != NO_FRAME {
            key_words(keys, input, k, g, caller, words);
        } else {
            // No location key: the sample's keys only.
            words.clear();
            for key in keys {
                words.push(match key {
                    SortKey::Comm => u64::from(k.1),
                    SortKey::Pid => k.2 as u32 as u64,
                    SortKey::Tid => k.3 as u32 as u64,
                    SortKey::Cpu => k.4 as u32 as u64,
                    _ => u64::MAX,
                });
            }
        }
        if let Some(&r) = self.index.get(words.as_slice()) {
            return r;
        }
        let r = self.rows.len() as u32;
        self.index.insert(words.clone(), r);
        self.rows.push(RowAcc {
            comm: k.1,
            pid: k.2,
            tid: k.3,
            cpu: k.4,
            group: g,
            caller,
            values: vec![[0; 4]; ncol],
        });
        r
    }
}

/// Whether event `name` is selected by the `-e` names `wanted` (all when none), marking
/// the names that select it.
fn wanted_matches(wanted: &[String], name: &str, matched: &mut [bool]) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let mut any = false;
    for (w, m) in wanted.iter().zip(matched.iter_mut()) {
        if event_name_matches(name, |n| n == w) {
            *m = true;
            any = true;
        }
    }
    any
}

/// The samples files of input `id`, in order (`<id>.parquet`, `<id>-1.parquet`, …).
fn sample_files(dir: &Path, id: &str) -> Result<Vec<PathBuf>, TableError> {
    let d = dir.join("samples");
    let first = d.join(format!("{id}.parquet"));
    if !first.is_file() {
        return Err(TableError::Layout {
            path: first.display().to_string(),
            why: "missing".to_string(),
        });
    }
    let mut files = vec![first];
    for n in 1.. {
        let p = d.join(format!("{id}-{n}.parquet"));
        if !p.is_file() {
            break;
        }
        files.push(p);
    }
    Ok(files)
}
