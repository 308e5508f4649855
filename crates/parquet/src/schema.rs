//! The tables of an export and their columns (docs/fleet.md): one list for the writer, the
//! reader and culprit-sql.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

/// The version of the tables' layout, in `hosts.schema_version` and docs/fleet.md.
pub const SCHEMA_VERSION: i32 = 1;

/// The tables of an export, in the order they are listed in docs/fleet.md.
pub const TABLES: [&str; 5] = ["hosts", "events", "frames", "stacks", "samples"];

fn field(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

/// The item field of `stacks.frame_ids` (named `element` as the Parquet format's LIST
/// layout names it).
pub(crate) fn frame_ids_item() -> Arc<Field> {
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
