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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::ArrayBuilder;
use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{new_null_array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use rustc_hash::{FxHashMap, FxHasher};
use serde::Serialize;

use culprit_analysis::parallelism::{has_switch_records, ParallelismTracker};
use culprit_analysis::recording::Stopped;
use culprit_analysis::stacks::{period_unit, PeriodUnit, StackError, StackOptions};
use culprit_analysis::AnalysisError;
use culprit_decode::abi::mem;
use culprit_decode::ibs::{self, IbsContext, IbsKind, IbsSample};
use culprit_decode::model::{CpuMode, DsoKind, Profile, Sample};
use culprit_decode::pebs;
use culprit_symbols::{ProfileInput, Query, ReadPlan, Symbolizer};

use crate::{EventSummary, WriteError};

/// The version of the tables' layout, in `hosts.schema_version` and docs/fleet.md.
pub const SCHEMA_VERSION: i32 = 1;

/// The tables of an export, in the order they are listed in docs/fleet.md.
pub const TABLES: [&str; 5] = ["hosts", "events", "frames", "stacks", "samples"];

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

fn field(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

/// The item field of `stacks.frame_ids` (named `element` as the Parquet format's LIST
/// layout names it).
fn frame_ids_item() -> Arc<Field> {
    Arc::new(Field::new("element", DataType::Int64, false))
}

/// The schema of the `hosts` table.
pub fn hosts_schema() -> Schema {
    use DataType::*;
    Schema::new(vec![
        field("file_id", Int64, false),
        field("schema_version", Int32, false),
        field("host", Utf8, false),
        field("file", Utf8, false),
        field("machine", Utf8, true),
        field("kernel", Utf8, true),
        field("cpu", Utf8, true),
        field("cpuid", Utf8, true),
        field("nr_cpus", Int32, true),
        field("perf_version", Utf8, true),
        field("cmdline", Utf8, true),
        field("samples", Int64, false),
        field("lost", Int64, false),
        field("first_time", Int64, true),
        field("last_time", Int64, true),
    ])
}

/// The schema of the `events` table.
pub fn events_schema() -> Schema {
    use DataType::*;
    Schema::new(vec![
        field("file_id", Int64, false),
        field("event_id", Int32, false),
        field("name", Utf8, false),
        field("unit", Utf8, false),
        field("samples", Int64, false),
        field("period", Int64, false),
    ])
}

/// The schema of the `frames` table.
pub fn frames_schema() -> Schema {
    use DataType::*;
    Schema::new(vec![
        field("file_id", Int64, false),
        field("frame_id", Int64, false),
        field("build_id", Utf8, true),
        field("dso", Utf8, false),
        field("file_offset", Int64, true),
        field("address", Int64, false),
        field("function", Utf8, true),
        field("source_file", Utf8, true),
        field("line", Int32, true),
        field("inline_depth", Int32, false),
        field("kernel", Boolean, false),
    ])
}

/// The schema of the `stacks` table.
pub fn stacks_schema() -> Schema {
    use DataType::*;
    Schema::new(vec![
        field("file_id", Int64, false),
        field("stack_id", Int64, false),
        field("frame_ids", List(frame_ids_item()), false),
    ])
}

/// The schema of the `samples` table.
pub fn samples_schema() -> Schema {
    use DataType::*;
    Schema::new(vec![
        field("file_id", Int64, false),
        field("host", Utf8, false),
        field("time", Int64, true),
        field("pid", Int32, false),
        field("tid", Int32, false),
        field("comm", Utf8, false),
        field("cpu", Int32, true),
        field("event_id", Int32, false),
        field("event", Utf8, false),
        field("period", Int64, false),
        field("stack_id", Int64, false),
        field("leaf_frame_id", Int64, false),
        field("leaf_build_id", Utf8, true),
        field("leaf_file_offset", Int64, true),
        field("leaf_dso", Utf8, false),
        field("data_addr", Int64, true),
        field("phys_addr", Int64, true),
        field("weight", Int64, true),
        field("data_src", Int64, true),
        field("dc_miss", Boolean, true),
        field("dtlb_miss", Boolean, true),
        field("branch_taken", Boolean, true),
        field("branch_mispredicted", Boolean, true),
        field("ibs_op_latency", Int64, true),
        field("ibs_dc_miss_latency", Int64, true),
        field("ibs_fetch_latency", Int64, true),
        field("parallelism", Int32, true),
    ])
}

/// The schema of table `name` (one of [`TABLES`]).
pub fn schema(name: &str) -> Option<Schema> {
    Some(match name {
        "hosts" => hosts_schema(),
        "events" => events_schema(),
        "frames" => frames_schema(),
        "stacks" => stacks_schema(),
        "samples" => samples_schema(),
        _ => return None,
    })
}

/// Columns whose values repeat (names, and the ids of stacks and frames): dictionary-encoded
/// (engines group by them fast, and they shrink). Every other column is not: the
/// writer's dictionary interns each value, which costs more than it saves on ids that
/// zstd packs anyway (`file_id`, `pid`, `event_id`, …), and nothing on times, addresses
/// and `stacks.frame_ids`.
const DICTIONARY_COLUMNS: &[&str] = &[
    "host",
    "file",
    "comm",
    "event",
    "name",
    "unit",
    "stack_id",
    "leaf_frame_id",
    "leaf_build_id",
    "leaf_dso",
    "build_id",
    "dso",
    "source_file",
    "function",
];

/// Columns of increasing values: delta-encoded (`samples.time`: about 2 bytes a sample).
const DELTA_COLUMNS: &[&str] = &["time"];

/// zstd level of the pages: 1, the fastest (level 3 saves about 10% of the bytes for 10%
/// more time, measured on a 617 K-sample recording; bytes are far below the perf.data's).
const ZSTD_LEVEL: i32 = 1;

fn writer_properties(schema: &Schema, row_group_rows: usize) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(ZSTD_LEVEL).unwrap_or_default(),
        ))
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .set_created_by(format!("culprit {}", env!("CARGO_PKG_VERSION")));
    for f in schema.fields() {
        let name = f.name().as_str();
        if DICTIONARY_COLUMNS.contains(&name) {
            b = b.set_column_dictionary_enabled(ColumnPath::from(name), true);
        }
        if DELTA_COLUMNS.contains(&name) {
            b = b.set_column_encoding(ColumnPath::from(name), Encoding::DELTA_BINARY_PACKED);
        }
    }
    b.build()
}

/// One Parquet file being written: named `.NAME.tmp` (hidden from the engines, which skip
/// names starting with a dot) until it is complete, then renamed.
struct TableFile {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    tmp: PathBuf,
    path: PathBuf,
}

impl TableFile {
    fn create(
        dir: &Path,
        name: &str,
        schema: SchemaRef,
        row_group_rows: usize,
    ) -> Result<TableFile, WriteError> {
        // Table directories are made as their first file is written: an input that cannot
        // be read leaves nothing behind.
        fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        let file = File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
        let props = writer_properties(&schema, row_group_rows);
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))?;
        Ok(TableFile {
            writer,
            schema,
            tmp,
            path,
        })
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), WriteError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.writer.write(&batch)?;
        Ok(())
    }

    /// Closes the file; returns its size.
    fn finish(self) -> Result<u64, WriteError> {
        self.writer.close()?;
        fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        Ok(fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0))
    }
}

fn io_error(path: &Path, e: io::Error) -> WriteError {
    WriteError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// A code location as samples see it, before symbolization (one depth-0 frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FrameKey {
    /// The DSO (`u32::MAX`: no mapping).
    dso: u32,
    file_offset: u64,
    /// The process, for per-process (anonymous/JIT) code; -1 otherwise.
    pid: i32,
    /// A caller's return address (inline frames are looked up at `address - 1`); only
    /// distinguished with `--inline`.
    return_address: bool,
    kernel: bool,
}

const NONE: u32 = u32::MAX;

/// How the precise fields of an event's samples are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precise {
    /// From the sample's fields (ADDR, PHYS_ADDR, WEIGHT, DATA_SRC: PEBS and the like).
    Fields,
    /// From the raw IBS registers.
    Ibs(IbsKind),
}

/// Per event of the file: kept or not, and its totals.
#[derive(Debug, Clone, Copy)]
struct EventSlot {
    kept: bool,
    precise: Precise,
    samples: u64,
    period: u64,
}

/// The samples table's column builders, reused batch after batch.
struct SampleColumns {
    time: Int64Builder,
    pid: Int32Builder,
    tid: Int32Builder,
    comm: StringBuilder,
    cpu: Int32Builder,
    event_id: Int32Builder,
    event: StringBuilder,
    period: Int64Builder,
    stack_id: Int64Builder,
    leaf_frame_id: Int64Builder,
    leaf_build_id: StringBuilder,
    leaf_file_offset: Int64Builder,
    leaf_dso: StringBuilder,
    data_addr: Sparse<Int64Builder>,
    phys_addr: Sparse<Int64Builder>,
    weight: Sparse<Int64Builder>,
    data_src: Sparse<Int64Builder>,
    dc_miss: Sparse<BooleanBuilder>,
    dtlb_miss: Sparse<BooleanBuilder>,
    branch_taken: Sparse<BooleanBuilder>,
    branch_mispredicted: Sparse<BooleanBuilder>,
    ibs_op_latency: Sparse<Int64Builder>,
    ibs_dc_miss_latency: Sparse<Int64Builder>,
    ibs_fetch_latency: Sparse<Int64Builder>,
    parallelism: Sparse<Int32Builder>,
    rows: usize,
}

impl SampleColumns {
    fn new() -> SampleColumns {
        let n = BATCH_ROWS;
        SampleColumns {
            time: Int64Builder::with_capacity(n),
            pid: Int32Builder::with_capacity(n),
            tid: Int32Builder::with_capacity(n),
            comm: StringBuilder::with_capacity(n, n * 16),
            cpu: Int32Builder::with_capacity(n),
            event_id: Int32Builder::with_capacity(n),
            event: StringBuilder::with_capacity(n, n * 16),
            period: Int64Builder::with_capacity(n),
            stack_id: Int64Builder::with_capacity(n),
            leaf_frame_id: Int64Builder::with_capacity(n),
            leaf_build_id: StringBuilder::with_capacity(n, n * 40),
            leaf_file_offset: Int64Builder::with_capacity(n),
            leaf_dso: StringBuilder::with_capacity(n, n * 16),
            data_addr: Sparse::new(Int64Builder::with_capacity(n)),
            phys_addr: Sparse::new(Int64Builder::with_capacity(n)),
            weight: Sparse::new(Int64Builder::with_capacity(n)),
            data_src: Sparse::new(Int64Builder::with_capacity(n)),
            dc_miss: Sparse::new(BooleanBuilder::with_capacity(n)),
            dtlb_miss: Sparse::new(BooleanBuilder::with_capacity(n)),
            branch_taken: Sparse::new(BooleanBuilder::with_capacity(n)),
            branch_mispredicted: Sparse::new(BooleanBuilder::with_capacity(n)),
            ibs_op_latency: Sparse::new(Int64Builder::with_capacity(n)),
            ibs_dc_miss_latency: Sparse::new(Int64Builder::with_capacity(n)),
            ibs_fetch_latency: Sparse::new(Int64Builder::with_capacity(n)),
            parallelism: Sparse::new(Int32Builder::with_capacity(n)),
            rows: 0,
        }
    }

    /// The columns of the rows appended since the last call, in schema order (`file_id`
    /// and `host` are the same in every row of a file).
    fn finish(&mut self, file_id: i64, host: &str) -> Vec<ArrayRef> {
        let rows = std::mem::take(&mut self.rows);
        vec![
            Arc::new(Int64Array::from_value(file_id, rows)),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                host, rows,
            ))),
            Arc::new(self.time.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.tid.finish()),
            Arc::new(self.comm.finish()),
            Arc::new(self.cpu.finish()),
            Arc::new(self.event_id.finish()),
            Arc::new(self.event.finish()),
            Arc::new(self.period.finish()),
            Arc::new(self.stack_id.finish()),
            Arc::new(self.leaf_frame_id.finish()),
            Arc::new(self.leaf_build_id.finish()),
            Arc::new(self.leaf_file_offset.finish()),
            Arc::new(self.leaf_dso.finish()),
            self.data_addr.finish(),
            self.phys_addr.finish(),
            self.weight.finish(),
            self.data_src.finish(),
            self.dc_miss.finish(),
            self.dtlb_miss.finish(),
            self.branch_taken.finish(),
            self.branch_mispredicted.finish(),
            self.ibs_op_latency.finish(),
            self.ibs_dc_miss_latency.finish(),
            self.ibs_fetch_latency.finish(),
            self.parallelism.finish(),
        ]
    }
}

/// A nullable column whose values are mostly absent (the precise fields of a file without
/// IBS or PEBS): nulls are counted, not appended one by one, until a value comes, and a
/// batch without values becomes one null array.
struct Sparse<B> {
    builder: B,
    leading_nulls: usize,
    any: bool,
    /// An all-null array kept for the batches without values (sliced to their length).
    nulls: Option<ArrayRef>,
}

/// The builders [`Sparse`] wraps.
trait SparseBuilder: ArrayBuilder {
    type Value;
    const TYPE: DataType;
    fn append_value_(&mut self, v: Self::Value);
    fn append_nulls_(&mut self, n: usize);
}

impl SparseBuilder for Int64Builder {
    type Value = i64;
    const TYPE: DataType = DataType::Int64;
    fn append_value_(&mut self, v: i64) {
        self.append_value(v);
    }
    fn append_nulls_(&mut self, n: usize) {
        self.append_nulls(n);
    }
}

impl SparseBuilder for Int32Builder {
    type Value = i32;
    const TYPE: DataType = DataType::Int32;
    fn append_value_(&mut self, v: i32) {
        self.append_value(v);
    }
    fn append_nulls_(&mut self, n: usize) {
        self.append_nulls(n);
    }
}

impl SparseBuilder for BooleanBuilder {
    type Value = bool;
    const TYPE: DataType = DataType::Boolean;
    fn append_value_(&mut self, v: bool) {
        self.append_value(v);
    }
    fn append_nulls_(&mut self, n: usize) {
        self.append_nulls(n);
    }
}

impl<B: SparseBuilder> Sparse<B> {
    fn new(builder: B) -> Sparse<B> {
        Sparse {
            builder,
            leading_nulls: 0,
            any: false,
            nulls: None,
        }
    }

    fn push(&mut self, v: Option<B::Value>) {
        match v {
            Some(v) => {
                if !self.any {
                    self.builder
                        .append_nulls_(std::mem::take(&mut self.leading_nulls));
                    self.any = true;
                }
                self.builder.append_value_(v);
            }
            None if self.any => self.builder.append_nulls_(1),
            None => self.leading_nulls += 1,
        }
    }

    fn finish(&mut self) -> ArrayRef {
        if std::mem::take(&mut self.any) {
            return self.builder.finish();
        }
        let n = std::mem::take(&mut self.leading_nulls);
        match &self.nulls {
            Some(a) if a.len() >= n => a.slice(0, n),
            _ => {
                let a = new_null_array(&B::TYPE, n);
                self.nulls = Some(a.clone());
                a
            }
        }
    }
}

/// The precise fields of one sample (all `None` when it has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PreciseFields {
    data_addr: Option<u64>,
    phys_addr: Option<u64>,
    weight: Option<u64>,
    data_src: Option<u64>,
    dc_miss: Option<bool>,
    dtlb_miss: Option<bool>,
    branch_taken: Option<bool>,
    branch_mispredicted: Option<bool>,
    ibs_op_latency: Option<u64>,
    ibs_dc_miss_latency: Option<u64>,
    ibs_fetch_latency: Option<u64>,
}

/// The precise fields of a PEBS-style sample (ADDR, PHYS_ADDR, WEIGHT, DATA_SRC as
/// recorded; unfilled values, 0 or `PERF_MEM_NA`, are null).
fn precise_from_fields(s: &Sample) -> PreciseFields {
    let Some(p) = pebs::from_pebs(s) else {
        return PreciseFields::default();
    };
    let src = p.data_src;
    PreciseFields {
        data_addr: p.addr,
        phys_addr: p.phys_addr,
        weight: p.latency,
        data_src: src.map(|d| d.value),
        dc_miss: src
            .filter(|d| d.level != pebs::MemLevel::Na)
            .map(|d| d.l1_miss()),
        dtlb_miss: src.and_then(|d| l1_dtlb_miss(d.value)),
        ..PreciseFields::default()
    }
}

/// Whether a `perf_mem_data_src` says the access missed the first-level DTLB: a TLB miss,
/// or a hit in the L2 TLB alone; `None` when the TLB outcome is not available or names no
/// single level (Intel's "L1 or L2 hit").
fn l1_dtlb_miss(data_src: u64) -> Option<bool> {
    let tlb = (data_src >> mem::TLB_SHIFT) & 0x7f;
    let (l1, l2) = (tlb & mem::TLB_L1 != 0, tlb & mem::TLB_L2 != 0);
    if tlb & mem::TLB_MISS != 0 {
        return Some(true);
    }
    match (tlb & mem::TLB_HIT != 0, l1, l2) {
        (true, true, false) => Some(false),
        (true, false, true) => Some(true),
        _ => None,
    }
}

/// The precise fields of an IBS sample, from its raw registers (decoded as `culprit
/// script` and `culprit ibs` decode them); all null when the payload is not a valid sample.
fn precise_from_ibs(kind: IbsKind, raw: &[u8], ctx: &IbsContext, ip: u64) -> PreciseFields {
    match ibs::decode(kind, raw, ctx) {
        Ok(IbsSample::Op(op)) => {
            let p = pebs::from_ibs_op(&op, ctx, ip);
            let mem_op = op.data3.filter(|d| d.ld_op || d.st_op);
            let branch = op.data.filter(|d| d.brn_ret);
            PreciseFields {
                data_addr: p.addr,
                phys_addr: p.phys_addr,
                weight: p.latency,
                data_src: p.data_src.map(|d| d.value),
                dc_miss: mem_op.map(|d| d.dc_miss),
                dtlb_miss: mem_op.map(|d| d.dc_l1_tlb_miss),
                branch_taken: branch.map(|d| d.brn_taken),
                branch_mispredicted: branch.map(|d| d.brn_misp),
                ibs_op_latency: op.data.map(|d| u64::from(d.tag_to_ret)),
                ibs_dc_miss_latency: op
                    .data3
                    .filter(|d| d.ld_op && d.dc_miss)
                    .map(|d| u64::from(d.dc_miss_lat)),
                ibs_fetch_latency: None,
            }
        }
        Ok(IbsSample::Fetch(f)) => PreciseFields {
            ibs_fetch_latency: Some(u64::from(f.ctl.lat)),
            ..PreciseFields::default()
        },
        Err(_) => PreciseFields::default(),
    }
}

/// Reads samples into the samples table and interns their frames and stacks.
struct SampleWriter<'a> {
    opts: &'a ParquetOptions,
    dir: &'a Path,
    input: &'a ProfileInput,
    /// Set at the first sample (the file's header has been read by then) or at the end.
    file_id: i64,
    file_id_hex: String,
    host: String,
    events: Vec<Option<EventSlot>>,
    ibs_ctx: Option<IbsContext>,
    /// Per DSO id: its build id in hex and its short name, computed once.
    dso_names: Vec<Option<(Option<String>, String)>>,
    frame_ids: FxHashMap<FrameKey, u32>,
    /// The interned frames and the first address each was seen at.
    frames: Vec<(FrameKey, u64)>,
    node_ids: FxHashMap<(u32, u32), u32>,
    /// The stack prefix tree: (caller node, frame), leaf-most last.
    nodes: Vec<(u32, u32)>,
    /// Whether a node is some sample's stack (a row of `stacks`).
    is_stack: Vec<bool>,
    stacks: u64,
    /// Stacks by the hash of their frame keys: (leaf node, leaf frame, range in
    /// `stack_keys`).
    stack_cache: FxHashMap<u64, (u32, u32, u32, u32)>,
    stack_keys: Vec<FrameKey>,
    /// Scratch: the current sample's frame keys and addresses, leaf first.
    keys: Vec<(FrameKey, u64)>,
    path: Vec<u32>,
    columns: SampleColumns,
    out: Option<TableFile>,
    /// Rows in the current samples file.
    file_rows_written: u64,
    files_written: Vec<String>,
    bytes: u64,
    samples: u64,
    time_range: Option<(u64, u64)>,
    /// perf 6.15's parallelism at each sample, for recordings with switch records.
    parallelism: ParallelismTracker,
    error: Option<WriteError>,
}

impl<'a> SampleWriter<'a> {
    fn event(&mut self, profile: &Profile, id: u16) -> Option<&mut EventSlot> {
        let i = usize::from(id);
        if self.events.len() <= i {
            self.events.resize(i + 1, None);
        }
        if self.events[i].is_none() {
            let info = profile.events.get(i)?;
            let wanted = &self.opts.stacks.events;
            let kept = wanted.is_empty() || wanted.iter().any(|w| info.matches(w));
            let precise = match info.pmu.as_deref().and_then(IbsKind::from_pmu) {
                Some(k) => Precise::Ibs(k),
                None => Precise::Fields,
            };
            self.events[i] = Some(EventSlot {
                kept,
                precise,
                samples: 0,
                period: 0,
            });
        }
        self.events[i].as_mut()
    }

    fn frame(&mut self, key: FrameKey, addr: u64) -> u32 {
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push((key, addr));
        self.frame_ids.insert(key, id);
        id
    }

    /// The stack (leaf node) and leaf frame of a sample's frames (`keys`, leaf first, with
    /// the address each was seen at). A stack seen before is found by the hash of its keys
    /// (one lookup); a new one interns its frames and walks the prefix tree.
    fn stack(&mut self, keys: &[(FrameKey, u64)]) -> (u32, u32) {
        let mut h = FxHasher::default();
        for (k, _) in keys {
            k.hash(&mut h);
        }
        let h = h.finish();
        if let Some(&(node, leaf, start, len)) = self.stack_cache.get(&h) {
            let known = &self.stack_keys[start as usize..(start + len) as usize];
            if known.len() == keys.len() && known.iter().zip(keys).all(|(a, (b, _))| a == b) {
                return (node, leaf);
            }
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        for &(key, addr) in keys {
            path.push(self.frame(key, addr));
        }
        let mut node = NONE;
        for &frame in path.iter().rev() {
            node = match self.node_ids.get(&(node, frame)) {
                Some(&n) => n,
                None => {
                    let n = self.nodes.len() as u32;
                    self.nodes.push((node, frame));
                    self.is_stack.push(false);
                    self.node_ids.insert((node, frame), n);
                    n
                }
            };
        }
        let leaf = path[0];
        self.path = path;
        if !self.is_stack[node as usize] {
            self.is_stack[node as usize] = true;
            self.stacks += 1;
        }
        // Cached unless another stack has the same hash (that one keeps the slot).
        if let std::collections::hash_map::Entry::Vacant(e) = self.stack_cache.entry(h) {
            let start = self.stack_keys.len() as u32;
            self.stack_keys.extend(keys.iter().map(|(k, _)| *k));
            e.insert((node, leaf, start, keys.len() as u32));
        }
        (node, leaf)
    }

    /// The build id and short name of DSO `dso`, computed once per DSO into `cache`.
    fn dso_names<'c>(
        cache: &'c mut Vec<Option<(Option<String>, String)>>,
        profile: &Profile,
        dso: u32,
    ) -> (Option<&'c str>, &'c str) {
        let i = dso as usize;
        if dso == NONE {
            return (None, "[unknown]");
        }
        if cache.len() <= i {
            cache.resize(i + 1, None);
        }
        let slot = &mut cache[i];
        if slot.is_none() {
            *slot = Some(match profile.dsos.get(i) {
                Some(d) => (d.build_id.as_deref().map(hex), d.short_name.clone()),
                None => (None, "[unknown]".to_string()),
            });
        }
        match slot {
            Some((b, n)) => (b.as_deref(), n.as_str()),
            None => (None, "[unknown]"),
        }
    }

    /// Fixes the host name and file id from the file's header (read before any sample, in
    /// pipe mode too: perf sends its header features first).
    fn identify(&mut self, profile: &Profile) -> Result<(), WriteError> {
        if !self.file_id_hex.is_empty() {
            return Ok(());
        }
        self.host = host_name(self.opts, profile.meta.hostname.as_deref());
        self.file_id = file_id(self.input, &self.host);
        self.file_id_hex = format!("{:016x}", self.file_id);
        remove_stale(self.dir, &self.file_id_hex)
    }

    fn add(&mut self, profile: &Profile, s: &Sample) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.identify(profile) {
            self.error = Some(e);
            return;
        }
        let Some(slot) = self.event(profile, s.event) else {
            return;
        };
        if !slot.kept {
            return;
        }
        let precise_kind = slot.precise;
        let f = &self.opts.stacks.filters;
        if (!f.pids.is_empty() && !f.pids.contains(&s.pid))
            || (!f.tids.is_empty() && !f.tids.contains(&s.tid))
            || (!f.comms.is_empty() && !f.comms.iter().any(|c| c == profile.str(s.comm)))
        {
            return;
        }
        if let Some(slot) = self
            .events
            .get_mut(usize::from(s.event))
            .and_then(Option::as_mut)
        {
            slot.samples += 1;
            slot.period += s.period;
        }
        let info = &profile.events[usize::from(s.event)];
        let has_time = info.sample_type & culprit_decode::abi::sample_type::TIME != 0;
        let has_cpu = info.sample_type & culprit_decode::abi::sample_type::CPU != 0;
        if has_time {
            self.time_range = Some(match self.time_range {
                Some((a, b)) => (a.min(s.time), b.max(s.time)),
                None => (s.time, s.time),
            });
        }

        // The stack: the sampled IP's frame, then the callers.
        let inline = self.opts.stacks.inline;
        let anon = |dso: Option<u32>| {
            dso.and_then(|d| profile.dsos.get(d as usize))
                .is_some_and(|d| d.kind == DsoKind::Anonymous)
        };
        let kernel_mode = |m: CpuMode| matches!(m, CpuMode::Kernel | CpuMode::GuestKernel);
        let key_of = |loc: culprit_decode::model::Location, mode: CpuMode, ret: bool| FrameKey {
            dso: loc.dso.unwrap_or(NONE),
            file_offset: loc.file_offset,
            pid: if anon(loc.dso) { s.pid } else { -1 },
            return_address: ret && inline,
            kernel: kernel_mode(mode),
        };
        let leaf_key = key_of(s.location, s.cpumode, false);
        let mut keys = std::mem::take(&mut self.keys);
        keys.clear();
        keys.push((leaf_key, s.ip));
        for (i, fr) in profile.callchain(s).iter().enumerate() {
            let key = key_of(fr.location, fr.cpumode, i > 0);
            if i == 0 && key == leaf_key {
                continue;
            }
            keys.push((key, fr.addr));
        }
        let (node, leaf) = self.stack(&keys);
        self.keys = keys;

        let precise = match precise_kind {
            Precise::Fields => precise_from_fields(s),
            Precise::Ibs(kind) => {
                let ctx = *self.ibs_ctx.get_or_insert_with(|| {
                    IbsContext::from_meta(&profile.meta).unwrap_or(IbsContext {
                        family: 0x17,
                        model: 0,
                        zen4_pmu_cap: false,
                    })
                });
                precise_from_ibs(kind, profile.raw(s), &ctx, s.ip)
            }
        };

        let (build_id, dso_name) = Self::dso_names(&mut self.dso_names, profile, leaf_key.dso);
        let c = &mut self.columns;
        c.time.append_option(has_time.then_some(s.time as i64));
        c.pid.append_value(s.pid);
        c.tid.append_value(s.tid);
        c.comm.append_value(profile.str(s.comm));
        c.cpu.append_option(has_cpu.then_some(s.cpu as i32));
        c.event_id.append_value(i32::from(s.event));
        c.event.append_value(&info.name);
        c.period.append_value(s.period as i64);
        c.stack_id.append_value(i64::from(node));
        c.leaf_frame_id.append_value(i64::from(leaf));
        c.leaf_build_id.append_option(build_id);
        c.leaf_file_offset
            .append_option((leaf_key.dso != NONE).then_some(leaf_key.file_offset as i64));
        c.leaf_dso.append_value(dso_name);
        let i64s = |v: Option<u64>| v.map(|x| x as i64);
        c.data_addr.push(i64s(precise.data_addr));
        c.phys_addr.push(i64s(precise.phys_addr));
        c.weight.push(i64s(precise.weight));
        c.data_src.push(i64s(precise.data_src));
        c.dc_miss.push(precise.dc_miss);
        c.dtlb_miss.push(precise.dtlb_miss);
        c.branch_taken.push(precise.branch_taken);
        c.branch_mispredicted.push(precise.branch_mispredicted);
        c.ibs_op_latency.push(i64s(precise.ibs_op_latency));
        c.ibs_dc_miss_latency
            .push(i64s(precise.ibs_dc_miss_latency));
        c.ibs_fetch_latency.push(i64s(precise.ibs_fetch_latency));
        // Every sample moves the tracker (switches apply in time order); the column is set
        // only where the recording has switch records (`record --latency`).
        let parallelism = self.parallelism.at(profile, s.time);
        c.parallelism
            .push(has_switch_records(profile).then_some(parallelism as i32));
        c.rows += 1;
        self.samples += 1;
        // Batches end where a samples file ends, so that files hold exactly
        // `file_rows` rows.
        let batch = BATCH_ROWS.min(self.opts.row_group_rows.max(1));
        if c.rows >= batch || self.file_rows_written + c.rows as u64 >= self.opts.file_rows {
            if let Err(e) = self.flush() {
                self.error = Some(e);
            }
        }
    }

    /// Writes the rows appended so far, opening (or rolling over to) a samples file.
    fn flush(&mut self) -> Result<(), WriteError> {
        let rows = self.columns.rows as u64;
        if rows == 0 {
            return Ok(());
        }
        if self.file_rows_written >= self.opts.file_rows.max(1) {
            self.close_file()?;
        }
        if self.out.is_none() {
            let n = self.files_written.len();
            let name = if n == 0 {
                format!("{}.parquet", self.file_id_hex)
            } else {
                format!("{}-{n}.parquet", self.file_id_hex)
            };
            self.out = Some(TableFile::create(
                &self.dir.join("samples"),
                &name,
                Arc::new(samples_schema()),
                self.opts.row_group_rows,
            )?);
            self.files_written.push(format!("samples/{name}"));
            self.file_rows_written = 0;
        }
        let columns = self.columns.finish(self.file_id, &self.host);
        if let Some(out) = &mut self.out {
            out.write(columns)?;
        }
        self.file_rows_written += rows;
        Ok(())
    }

    fn close_file(&mut self) -> Result<(), WriteError> {
        if let Some(out) = self.out.take() {
            self.bytes += out.finish()?;
        }
        Ok(())
    }
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
        stopped: Stopped::of(&profile),
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

/// What writing the frames gave: the rows written, and per depth-0 frame the ids of the
/// frames inlined into it, innermost first (empty for most), for the stacks.
struct FramesWritten {
    rows: u64,
    inline_ids: Vec<Vec<i64>>,
}

/// One row of `frames`.
struct FrameRow<'a> {
    frame_id: i64,
    build_id: Option<&'a str>,
    dso: &'a str,
    file_offset: Option<i64>,
    address: i64,
    function: Option<&'a str>,
    source_file: Option<&'a str>,
    line: Option<u32>,
    inline_depth: i32,
    kernel: bool,
}

/// The frames table's column builders.
#[derive(Default)]
struct FrameColumns {
    frame_id: Int64Builder,
    build_id: StringBuilder,
    dso: StringBuilder,
    file_offset: Int64Builder,
    address: Int64Builder,
    function: StringBuilder,
    source_file: StringBuilder,
    line: Int32Builder,
    inline_depth: Int32Builder,
    kernel: BooleanBuilder,
    rows: usize,
}

impl FrameColumns {
    fn append(&mut self, r: FrameRow<'_>) {
        self.frame_id.append_value(r.frame_id);
        self.build_id.append_option(r.build_id);
        self.dso.append_value(r.dso);
        self.file_offset.append_option(r.file_offset);
        self.address.append_value(r.address);
        self.function.append_option(r.function);
        self.source_file.append_option(r.source_file);
        self.line.append_option(r.line.map(|l| l as i32));
        self.inline_depth.append_value(r.inline_depth);
        self.kernel.append_value(r.kernel);
        self.rows += 1;
    }

    /// The columns of the rows appended since the last call, in schema order.
    fn finish(&mut self, file_id: i64) -> Vec<ArrayRef> {
        let rows = std::mem::take(&mut self.rows);
        vec![
            Arc::new(Int64Array::from_value(file_id, rows)),
            Arc::new(self.frame_id.finish()),
            Arc::new(self.build_id.finish()),
            Arc::new(self.dso.finish()),
            Arc::new(self.file_offset.finish()),
            Arc::new(self.address.finish()),
            Arc::new(self.function.finish()),
            Arc::new(self.source_file.finish()),
            Arc::new(self.line.finish()),
            Arc::new(self.inline_depth.finish()),
            Arc::new(self.kernel.finish()),
        ]
    }
}

/// Symbolizes the interned locations (one sorted batch, as `culprit report` does) and
/// writes `frames`: per location its depth-0 frame (id = the location's index), then with
/// `--inline` the functions inlined there.
fn write_frames(
    w: &SampleWriter<'_>,
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    dir: &Path,
    name: &str,
    bytes: &mut u64,
) -> Result<FramesWritten, WriteError> {
    let inline = w.opts.stacks.inline;
    let queries: Vec<Query> = w
        .frames
        .iter()
        .map(|(k, _)| Query {
            dso: (k.dso != NONE).then_some(k.dso),
            file_offset: k.file_offset,
            pid: k.pid,
        })
        .collect();
    let resolved = symbolizer.resolve_batch(profile, &queries);
    let schema = Arc::new(frames_schema());
    let mut out = TableFile::create(&dir.join("frames"), name, schema, w.opts.row_group_rows)?;
    let mut cols = FrameColumns::default();
    let mut rows = 0u64;
    let mut next_id = w.frames.len() as i64;
    let mut inline_ids = vec![Vec::new(); w.frames.len()];
    let mut names: Vec<Option<(Option<String>, String)>> = Vec::new();
    for (i, ((key, addr), r)) in w.frames.iter().zip(&resolved).enumerate() {
        let d = (key.dso != NONE).then_some(key.dso);
        let dso_info = d.and_then(|d| profile.dsos.get(d as usize));
        let kernel = key.kernel
            || dso_info.is_some_and(|x| matches!(x.kind, DsoKind::Kernel | DsoKind::KernelModule));
        let (build_id, dso) = SampleWriter::dso_names(&mut names, profile, key.dso);
        let symbol = r
            .symbol
            .and_then(|id| symbolizer.symbol(id))
            .map(|s| s.name.to_string());
        // Source lines (and with --inline, the inlined functions) of code with a symbol:
        // innermost first, the symbol's own function last.
        let source = match (&symbol, inline) {
            (None, _) => Vec::new(),
            (Some(_), true) => symbolizer.source(profile, d, key.file_offset, key.return_address),
            (Some(_), false) => symbolizer
                .source_line(profile, d, key.file_offset)
                .into_iter()
                .collect(),
        };
        let row = |frame_id, function, source_file, line, inline_depth| FrameRow {
            frame_id,
            build_id,
            dso,
            file_offset: d.map(|_| key.file_offset as i64),
            address: *addr as i64,
            function,
            source_file,
            line,
            inline_depth,
            kernel,
        };
        let outer = source.last();
        cols.append(row(
            i as i64,
            symbol.as_deref(),
            outer.and_then(|f| f.file.as_deref()),
            outer.and_then(|f| f.line),
            0,
        ));
        rows += 1;
        // The inlined functions, outer to inner (depth 1, 2, …).
        let inner = &source[..source.len().saturating_sub(1)];
        for (depth, sf) in inner.iter().rev().enumerate() {
            cols.append(row(
                next_id,
                sf.function.as_deref(),
                sf.file.as_deref(),
                sf.line,
                depth as i32 + 1,
            ));
            inline_ids[i].push(next_id);
            next_id += 1;
            rows += 1;
        }
        // Stacks list frames innermost first.
        inline_ids[i].reverse();
        if cols.rows >= BATCH_ROWS {
            out.write(cols.finish(w.file_id))?;
        }
    }
    if cols.rows > 0 || rows == 0 {
        out.write(cols.finish(w.file_id))?;
    }
    *bytes += out.finish()?;
    Ok(FramesWritten { rows, inline_ids })
}

fn write_stacks(
    w: &SampleWriter<'_>,
    inline_ids: &[Vec<i64>],
    dir: &Path,
    name: &str,
    bytes: &mut u64,
) -> Result<(), WriteError> {
    let schema = Arc::new(stacks_schema());
    let mut out = TableFile::create(&dir.join("stacks"), name, schema, w.opts.row_group_rows)?;
    let mut file_id = Int64Builder::new();
    let mut stack_id = Int64Builder::new();
    let mut frame_ids = ListBuilder::new(Int64Builder::new()).with_field(frame_ids_item());
    let mut pending = 0usize;
    let mut any = false;
    for (n, &is_stack) in w.is_stack.iter().enumerate() {
        if !is_stack {
            continue;
        }
        file_id.append_value(w.file_id);
        stack_id.append_value(n as i64);
        let mut node = n as u32;
        while let Some(&(parent, frame)) = w.nodes.get(node as usize) {
            let values = frame_ids.values();
            if let Some(inl) = inline_ids.get(frame as usize) {
                for &id in inl {
                    values.append_value(id);
                }
            }
            values.append_value(i64::from(frame));
            node = parent;
        }
        frame_ids.append(true);
        pending += 1;
        any = true;
        if pending >= BATCH_ROWS {
            pending = 0;
            out.write(vec![
                Arc::new(file_id.finish()),
                Arc::new(stack_id.finish()),
                Arc::new(frame_ids.finish()),
            ])?;
        }
    }
    if pending > 0 || !any {
        out.write(vec![
            Arc::new(file_id.finish()),
            Arc::new(stack_id.finish()),
            Arc::new(frame_ids.finish()),
        ])?;
    }
    *bytes += out.finish()?;
    Ok(())
}

/// The unit of an event's period, as written in `events.unit`.
fn unit_name(u: PeriodUnit) -> &'static str {
    match u {
        PeriodUnit::Nanoseconds => "ns",
        PeriodUnit::Events => "events",
    }
}

fn write_events(
    w: &SampleWriter<'_>,
    profile: &Profile,
    dir: &Path,
    name: &str,
    bytes: &mut u64,
) -> Result<Vec<EventSummary>, WriteError> {
    let schema = Arc::new(events_schema());
    let mut out = TableFile::create(&dir.join("events"), name, schema, w.opts.row_group_rows)?;
    let mut file_id = Int64Builder::new();
    let mut event_id = Int32Builder::new();
    let mut ename = StringBuilder::new();
    let mut unit = StringBuilder::new();
    let mut samples = Int64Builder::new();
    let mut period = Int64Builder::new();
    let mut summary = Vec::new();
    for (i, e) in profile.events.iter().enumerate() {
        let (n, p) = w
            .events
            .get(i)
            .copied()
            .flatten()
            .map_or((0, 0), |s| (s.samples, s.period));
        file_id.append_value(w.file_id);
        event_id.append_value(i as i32);
        ename.append_value(&e.name);
        unit.append_value(unit_name(period_unit(e)));
        samples.append_value(n as i64);
        period.append_value(p as i64);
        if n > 0 {
            summary.push(EventSummary {
                name: e.name.clone(),
                samples: n,
                period: p,
            });
        }
    }
    out.write(vec![
        Arc::new(file_id.finish()),
        Arc::new(event_id.finish()),
        Arc::new(ename.finish()),
        Arc::new(unit.finish()),
        Arc::new(samples.finish()),
        Arc::new(period.finish()),
    ])?;
    *bytes += out.finish()?;
    Ok(summary)
}

fn write_host(
    w: &SampleWriter<'_>,
    profile: &Profile,
    input: &ProfileInput,
    dir: &Path,
    name: &str,
    bytes: &mut u64,
) -> Result<(), WriteError> {
    let m = &profile.meta;
    let schema = Arc::new(hosts_schema());
    let mut out = TableFile::create(&dir.join("hosts"), name, schema, w.opts.row_group_rows)?;
    let s = |v: Option<&str>| -> ArrayRef {
        let mut b = StringBuilder::new();
        b.append_option(v);
        Arc::new(b.finish())
    };
    let i64v = |v: Option<i64>| -> ArrayRef {
        let mut b = Int64Builder::new();
        b.append_option(v);
        Arc::new(b.finish())
    };
    let i32v = |v: Option<i32>| -> ArrayRef {
        let mut b = Int32Builder::new();
        b.append_option(v);
        Arc::new(b.finish())
    };
    let (first, last) = w
        .time_range
        .map_or((None, None), |(a, b)| (Some(a as i64), Some(b as i64)));
    out.write(vec![
        i64v(Some(w.file_id)),
        i32v(Some(SCHEMA_VERSION)),
        s(Some(&w.host)),
        s(Some(&input.path().display().to_string())),
        s(m.arch.as_deref()),
        s(m.os_release.as_deref()),
        s(m.cpu_desc.as_deref()),
        s(m.cpuid.as_deref()),
        i32v(m.nr_cpus.map(|n| n as i32)),
        s(m.perf_version.as_deref()),
        s(m.cmdline.as_deref()),
        i64v(Some(w.samples as i64)),
        i64v(Some(profile.lost as i64)),
        i64v(first),
        i64v(last),
    ])?;
    *bytes += out.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn tlb(bits: u64) -> u64 {
        bits << mem::TLB_SHIFT
    }

    #[test]
    fn test_l1_dtlb_miss_of_each_data_src_tlb_outcome() {
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_MISS | mem::TLB_L2)), Some(true));
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L1)), Some(false));
        // A hit in the L2 TLB missed the L1 DTLB (IBS: DcL1TlbMiss without DcL2TlbMiss).
        assert_eq!(l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L2)), Some(true));
        // Intel's "L1 or L2 hit" does not say which.
        assert_eq!(
            l1_dtlb_miss(tlb(mem::TLB_HIT | mem::TLB_L1 | mem::TLB_L2)),
            None
        );
        assert_eq!(l1_dtlb_miss(tlb(1)), None, "TLB N/A");
        assert_eq!(l1_dtlb_miss(0), None);
    }

    #[test]
    fn test_sparse_column_is_one_null_array_until_a_value_comes() {
        let mut c = Sparse::new(Int64Builder::new());
        for _ in 0..5 {
            c.push(None);
        }
        let a = c.finish();
        assert_eq!((a.len(), a.null_count()), (5, 5));
        // Shorter batches reuse the null array.
        c.push(None);
        assert_eq!(c.finish().null_count(), 1);
        // Nulls before the first value are kept in place.
        c.push(None);
        c.push(None);
        c.push(Some(7));
        c.push(None);
        let a = c.finish();
        let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
        let got: Vec<Option<i64>> = a.iter().collect();
        assert_eq!(got, [None, None, Some(7), None]);
        // And the next batch starts empty.
        c.push(Some(1));
        assert_eq!(c.finish().len(), 1);
    }

    #[test]
    fn test_every_table_has_a_schema_and_frame_ids_are_a_list_of_int64() {
        for t in TABLES {
            let s = schema(t).unwrap();
            assert_eq!(s.field(0).name(), "file_id", "{t}");
        }
        assert!(schema("nope").is_none());
        let stacks = stacks_schema();
        let f = stacks.field_with_name("frame_ids").unwrap();
        assert_eq!(f.data_type(), &DataType::List(frame_ids_item()));
        // No dictionary on the stacks' frame lists.
        assert!(!DICTIONARY_COLUMNS.contains(&"frame_ids"));
    }

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
