//! Reads the tables of Parquet exports back (`culprit export --format parquet`, schema in
//! docs/fleet.md) for `culprit report --from-parquet DIR…`: each input file of an export
//! (a `file_id`: one row of `hosts`) is read into [`culprit_analysis::tables`]' models (its
//! events, frames and stacks whole, then its samples streamed batch by batch), and that
//! module makes the hotspot report of them.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rustc_hash::FxHashMap;

use culprit_analysis::fleet::{FleetError, FleetOptions, FleetReport};
use culprit_analysis::recording::RecordingMeta;
use culprit_analysis::tables::{
    Frame, Group, InputPlace, RowError, SampleRow, Strings, TableEvent, TablesInput, TablesReport,
};

use crate::schema::{SCHEMA_VERSION, TABLES};

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

fn table_path(dir: &Path, table: &str, id: &str) -> PathBuf {
    dir.join(table).join(format!("{id}.parquet"))
}

/// Reads the hosts, events, frames and stacks of input `id` of `dir`.
fn read_input(dir: &Path, id: &str) -> Result<TablesInput, TableError> {
    let mut strings = Strings::default();
    let (sample_rows, file, meta) = read_host(dir, id)?;
    let events = read_events(dir, id)?;
    let (frames, frame_index) = read_frames(dir, id, &mut strings)?;
    let (stacks, groups, has_chains) = read_stacks(dir, id, &frames, &frame_index)?;
    Ok(TablesInput {
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

/// The `hosts` row of input `id`: its sample rows, recorded file and recording facts.
fn read_host(dir: &Path, id: &str) -> Result<(i64, String, RecordingMeta), TableError> {
    let path = table_path(dir, "hosts", id);
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
        if version != i64::from(SCHEMA_VERSION) {
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
        return Ok((
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
    }
    Err(TableError::Layout {
        path: path.display().to_string(),
        why: "no row".to_string(),
    })
}

/// The `events` of input `id`, in event_id order.
fn read_events(dir: &Path, id: &str) -> Result<Vec<TableEvent>, TableError> {
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
            events.push(TableEvent {
                id: c.need("event_id", i, ids.get(i))?,
                name: c.need("name", i, names.get(i))?.to_string(),
                unit: units.get(i).unwrap_or("events").to_string(),
            });
        }
    }
    events.sort_by_key(|e| e.id);
    Ok(events)
}

/// The `frames` of input `id`, and their index by frame_id.
fn read_frames(
    dir: &Path,
    id: &str,
    strings: &mut Strings,
) -> Result<(Vec<Frame>, FxHashMap<i64, u32>), TableError> {
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
    Ok((frames, frame_index))
}

/// The `stacks` of input `id`: stack_id -> range of its groups, the groups, and whether any
/// stack is a call chain.
type StackGroups = (FxHashMap<i64, (u32, u32)>, Vec<Group>, bool);

/// Reads the `stacks` of input `id` into groups (a function's frame and its innermost
/// inline frame), checking that every frame named is in `frames/`.
fn read_stacks(
    dir: &Path,
    id: &str,
    frames: &[Frame],
    frame_index: &FxHashMap<i64, u32>,
) -> Result<StackGroups, TableError> {
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
    Ok((stacks, groups, has_chains))
}

/// The report of the inputs of the export directories `dirs` as one (each input file of
/// each export is one input, as one `-i` file; made by [`TablesReport`]). An input whose
/// tables cannot be read is listed with its error and the others still count; a directory
/// that is not an export is an error.
pub fn report(dirs: &[PathBuf], opts: &FleetOptions) -> Result<FleetReport, ParquetReadError> {
    let mut report = TablesReport::new(opts).map_err(ParquetReadError::Unsupported)?;
    let exports: Vec<ExportDir> = dirs
        .iter()
        .map(|d| open_export(d))
        .collect::<Result<_, _>>()?;
    for e in &exports {
        for id in &e.files {
            if let Err(err) = report_input(&e.dir, id, opts, &mut report) {
                let label = format!("{}/{id}", e.dir.display());
                report.add_failed(&label, err.to_string());
            }
        }
    }
    Ok(report.finish()?)
}

/// Reads input `id` of export `dir` and adds its rows to `report`.
fn report_input(
    dir: &Path,
    id: &str,
    opts: &FleetOptions,
    report: &mut TablesReport<'_>,
) -> Result<(), TableError> {
    let input = read_input(dir, id)?;
    let place = InputPlace {
        label: format!("{} ({}/{id})", input.file, dir.display()),
        id: id.to_string(),
        samples_dir: dir.join("samples").display().to_string(),
        samples_file: table_path(dir, "samples", id).display().to_string(),
    };
    let mut fold = report.fold(input);
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
                let row = SampleRow {
                    row: i,
                    pid: pid.get(i),
                    tid: tid.get(i),
                    comm: comm.get(i),
                    cpu: cpu.get(i),
                    event_id: event.get(i),
                    period: period.get(i),
                    stack_id: stack.get(i),
                    leaf_frame_id: leaf.get(i),
                };
                fold.add(&row, opts)
                    .map_err(|e: RowError| c.wrong(e.column, &e.what))?;
            }
        }
    }
    report
        .add_input(fold, &place)
        .map_err(|e| TableError::Layout {
            path: e.path,
            why: e.why,
        })
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
