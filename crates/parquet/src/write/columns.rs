//! The `samples` table's column builders.

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int32Builder, Int64Builder, StringBuilder,
};
use arrow_array::{new_null_array, ArrayRef, Int64Array, StringArray};
use arrow_schema::DataType;

use super::BATCH_ROWS;

/// The samples table's column builders, reused batch after batch.
pub(super) struct SampleColumns {
    pub(super) time: Int64Builder,
    pub(super) pid: Int32Builder,
    pub(super) tid: Int32Builder,
    pub(super) comm: StringBuilder,
    pub(super) cpu: Int32Builder,
    pub(super) event_id: Int32Builder,
    pub(super) event: StringBuilder,
    pub(super) period: Int64Builder,
    pub(super) stack_id: Int64Builder,
    pub(super) leaf_frame_id: Int64Builder,
    pub(super) leaf_build_id: StringBuilder,
    pub(super) leaf_file_offset: Int64Builder,
    pub(super) leaf_dso: StringBuilder,
    pub(super) data_addr: Sparse<Int64Builder>,
    pub(super) phys_addr: Sparse<Int64Builder>,
    pub(super) weight: Sparse<Int64Builder>,
    pub(super) data_src: Sparse<Int64Builder>,
    pub(super) dc_miss: Sparse<BooleanBuilder>,
    pub(super) dtlb_miss: Sparse<BooleanBuilder>,
    pub(super) branch_taken: Sparse<BooleanBuilder>,
    pub(super) branch_mispredicted: Sparse<BooleanBuilder>,
    pub(super) ibs_op_latency: Sparse<Int64Builder>,
    pub(super) ibs_dc_miss_latency: Sparse<Int64Builder>,
    pub(super) ibs_fetch_latency: Sparse<Int64Builder>,
    pub(super) parallelism: Sparse<Int32Builder>,
    pub(super) rows: usize,
}

impl SampleColumns {
    pub(super) fn new() -> SampleColumns {
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
    pub(super) fn finish(&mut self, file_id: i64, host: &str) -> Vec<ArrayRef> {
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
pub(super) struct Sparse<B> {
    pub(super) builder: B,
    pub(super) leading_nulls: usize,
    pub(super) any: bool,
    /// An all-null array kept for the batches without values (sliced to their length).
    pub(super) nulls: Option<ArrayRef>,
}

/// The builders [`Sparse`] wraps.
pub(super) trait SparseBuilder: ArrayBuilder {
    type Value;
    const TYPE: DataType;
    fn append_value_(&mut self, v: Self::Value);
    fn append_nulls_(&mut self, n: usize);
}

/// Implements [`SparseBuilder`] for Arrow builders whose `append_value` and `append_nulls`
/// are inherent methods (one per value type): `builder => value type, Arrow type`.
macro_rules! sparse_builders {
    ($($builder:ty => $value:ty, $arrow:expr;)*) => {$(
        impl SparseBuilder for $builder {
            type Value = $value;
            const TYPE: DataType = $arrow;
            fn append_value_(&mut self, v: $value) {
                self.append_value(v);
            }
            fn append_nulls_(&mut self, n: usize) {
                self.append_nulls(n);
            }
        }
    )*};
}

sparse_builders! {
    Int64Builder => i64, DataType::Int64;
    Int32Builder => i32, DataType::Int32;
    BooleanBuilder => bool, DataType::Boolean;
}

impl<B: SparseBuilder> Sparse<B> {
    pub(super) fn new(builder: B) -> Sparse<B> {
        Sparse {
            builder,
            leading_nulls: 0,
            any: false,
            nulls: None,
        }
    }

    pub(super) fn push(&mut self, v: Option<B::Value>) {
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

    pub(super) fn finish(&mut self) -> ArrayRef {
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

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
}
