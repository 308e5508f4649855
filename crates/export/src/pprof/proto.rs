//! The messages of pprof's `profile.proto` (package `perftools.profiles`, proto3), written by
//! hand as prost structs so that the build needs no `protoc`.
//!
//! Transcribed from the published schema, `proto/profile.proto` of github.com/google/pprof
//! (fields 1–14 of `Profile`; `Line.column` included). Every field keeps its tag and type;
//! doc comments summarize the proto's own. When the proto gains fields, add them here with
//! the same tag: prost skips unknown fields when reading, so older files stay readable.
//!
//! Conventions from the proto that the writer follows: `string_table[0]` is `""`; ids of
//! mappings, locations and functions are nonzero; `Sample.location_id[0]` is the leaf; in a
//! `Location`, `line[0]` is the innermost inlined function and the last entry its caller; the
//! serialized message is gzip-compressed on disk.

/// A profile: sample types, samples and the tables they point into.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// The meaning of each `Sample.value` entry, e.g. `[["samples","count"],["cpu","nanoseconds"]]`.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Address ranges and the binaries mapped there; `mapping[0]` is the main binary.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Program locations (addresses with their lines).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions referenced by the locations' lines.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Strings referenced by index everywhere else; entry 0 is `""`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Frames whose function name fully matches this regexp (string index) are dropped.
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Frames matching this regexp (string index) are kept even if `drop_frames` matches.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// Start of the collection, nanoseconds since the Unix epoch (informational).
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Duration of the collection in nanoseconds (informational).
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// The kind of events between sampled occurrences, e.g. `["cpu","nanoseconds"]`.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The number of events between sampled occurrences.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// String index of the type of the preferred sample value (default: the last one).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// The semantics and unit of a value: both string indices.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// Type name (string index), e.g. `cpu`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit (string index), e.g. `nanoseconds`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// Values recorded at one call stack.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per `Profile.sample_type`.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Extra context such as the thread id.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key with a string or a numeric value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index); at most one of `str` and `num` is set.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A binary mapped into an address range.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Address at which the binary is loaded.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// Limit of the address range occupied by the mapping.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// Offset in the binary that corresponds to the first mapped address.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The object loaded here (string index): a path, or e.g. `[vdso]`.
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build id (string index), e.g. the hex of `.note.gnu.build-id`.
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Locations of this mapping have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Locations of this mapping have file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Locations of this mapping have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Locations of this mapping have inline frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// An instruction address with its (possibly inlined) source lines.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping the address belongs to (0: unknown).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The instruction address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Innermost inlined function first; the last entry is the function the code is in.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Several symbols map to this address (identical code folding).
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and line in one location's inline chain.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Line number (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// Column number (0: unknown).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function: name, system (mangled) name and source file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the system knows it, e.g. mangled (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function in its file.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
