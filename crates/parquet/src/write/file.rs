//! One Parquet file of a table, written with the export's encodings.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::WriteError;

/// Columns whose values repeat (names, and the ids of stacks and frames): dictionary-encoded
/// (engines group by them fast, and they shrink). Every other column is not: the
/// writer's dictionary interns each value, which costs more than it saves on ids that
/// zstd packs anyway (`file_id`, `pid`, `event_id`, …), and nothing on times, addresses
/// and `stacks.frame_ids`.
pub(super) const DICTIONARY_COLUMNS: &[&str] = &[
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
pub(super) const DELTA_COLUMNS: &[&str] = &["time"];

/// zstd level of the pages: 1, the fastest (level 3 saves about 10% of the bytes for 10%
/// more time, measured on a 617 K-sample recording; bytes are far below the perf.data's).
pub(super) const ZSTD_LEVEL: i32 = 1;

pub(super) fn writer_properties(schema: &Schema, row_group_rows: usize) -> WriterProperties {
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
pub(super) struct TableFile {
    pub(super) writer: ArrowWriter<File>,
    pub(super) schema: SchemaRef,
    pub(super) tmp: PathBuf,
    pub(super) path: PathBuf,
}

impl TableFile {
    pub(super) fn create(
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

    pub(super) fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), WriteError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.writer.write(&batch)?;
        Ok(())
    }

    /// Closes the file; returns its size.
    pub(super) fn finish(self) -> Result<u64, WriteError> {
        self.writer.close()?;
        fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        Ok(fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0))
    }
}

pub(super) fn io_error(path: &Path, e: io::Error) -> WriteError {
    WriteError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{frame_ids_item, schema, stacks_schema, TABLES};
    use arrow_schema::DataType;

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
}
