//! The per-input tables written after the samples: frames, stacks, events, hosts.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, Int64Array};

use culprit_analysis::stacks::{period_unit, PeriodUnit};
use culprit_decode::model::{DsoKind, Profile};
use culprit_symbols::{ProfileInput, Query, Symbolizer};

use super::file::TableFile;
use super::samples::{SampleWriter, NONE};
use super::BATCH_ROWS;
use crate::schema::{
    events_schema, frame_ids_item, frames_schema, hosts_schema, stacks_schema, SCHEMA_VERSION,
};
use crate::{EventSummary, WriteError};

/// What writing the frames gave: the rows written, and per depth-0 frame the ids of the
/// frames inlined into it, innermost first (empty for most), for the stacks.
pub(super) struct FramesWritten {
    pub(super) rows: u64,
    pub(super) inline_ids: Vec<Vec<i64>>,
}

/// One row of `frames`.
pub(super) struct FrameRow<'a> {
    pub(super) frame_id: i64,
    pub(super) build_id: Option<&'a str>,
    pub(super) dso: &'a str,
    pub(super) file_offset: Option<i64>,
    pub(super) address: i64,
    pub(super) function: Option<&'a str>,
    pub(super) source_file: Option<&'a str>,
    pub(super) line: Option<u32>,
    pub(super) inline_depth: i32,
    pub(super) kernel: bool,
}

/// The frames table's column builders.
#[derive(Default)]
pub(super) struct FrameColumns {
    pub(super) frame_id: Int64Builder,
    pub(super) build_id: StringBuilder,
    pub(super) dso: StringBuilder,
    pub(super) file_offset: Int64Builder,
    pub(super) address: Int64Builder,
    pub(super) function: StringBuilder,
    pub(super) source_file: StringBuilder,
    pub(super) line: Int32Builder,
    pub(super) inline_depth: Int32Builder,
    pub(super) kernel: BooleanBuilder,
    pub(super) rows: usize,
}

impl FrameColumns {
    pub(super) fn append(&mut self, r: FrameRow<'_>) {
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
    pub(super) fn finish(&mut self, file_id: i64) -> Vec<ArrayRef> {
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
pub(super) fn write_frames(
    w: &SampleWriter<'_>,
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    dir: &Path,
    name: &str,
    bytes: &mut u64,
) -> Result<FramesWritten, WriteError> {
    let inline = w.opts.stacks.inline;
    let queries: Vec<Query> = w.frames.iter().map(|(k, _)| k.query()).collect();
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
            || dso_info.is_some_and(|x| {
                matches!(
                    x.kind,
                    DsoKind::Kernel | DsoKind::KernelModule | DsoKind::Ksymbol
                )
            });
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

pub(super) fn write_stacks(
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
pub(super) fn unit_name(u: PeriodUnit) -> &'static str {
    match u {
        PeriodUnit::Nanoseconds => "ns",
        PeriodUnit::Events => "events",
    }
}

pub(super) fn write_events(
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

pub(super) fn write_host(
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
