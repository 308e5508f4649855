//! The sample writer: samples into the `samples` table, their frames and stacks interned.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use culprit_analysis::parallelism::{has_switch_records, ParallelismTracker};
use culprit_decode::ibs::{IbsContext, IbsKind};
use culprit_decode::model::{CpuMode, Profile, Sample};
use culprit_symbols::ProfileInput;

use super::columns::SampleColumns;
use super::file::TableFile;
use super::precise::{precise_from_fields, precise_from_ibs, Precise};
use super::{file_id, hex, host_name, remove_stale, ParquetOptions, BATCH_ROWS};
use crate::schema::samples_schema;
use crate::WriteError;

/// A code location as samples see it, before symbolization (one depth-0 frame): a caller's
/// return address is only told apart with `--inline`.
pub(super) use culprit_analysis::stacks::CodeKey as FrameKey;

pub(super) use culprit_analysis::stacks::NONE;

/// Per event of the file: kept or not, and its totals.
#[derive(Debug, Clone, Copy)]
pub(super) struct EventSlot {
    pub(super) kept: bool,
    pub(super) precise: Precise,
    pub(super) samples: u64,
    pub(super) period: u64,
}

/// Reads samples into the samples table and interns their frames and stacks.
pub(super) struct SampleWriter<'a> {
    pub(super) opts: &'a ParquetOptions,
    pub(super) dir: &'a Path,
    pub(super) input: &'a ProfileInput,
    /// Set at the first sample (the file's header has been read by then) or at the end.
    pub(super) file_id: i64,
    pub(super) file_id_hex: String,
    pub(super) host: String,
    pub(super) events: Vec<Option<EventSlot>>,
    pub(super) ibs_ctx: Option<IbsContext>,
    /// Per DSO id: its build id in hex and its short name, computed once.
    pub(super) dso_names: Vec<Option<(Option<String>, String)>>,
    pub(super) frame_ids: FxHashMap<FrameKey, u32>,
    /// The interned frames and the first address each was seen at.
    pub(super) frames: Vec<(FrameKey, u64)>,
    pub(super) node_ids: FxHashMap<(u32, u32), u32>,
    /// The stack prefix tree: (caller node, frame), leaf-most last.
    pub(super) nodes: Vec<(u32, u32)>,
    /// Whether a node is some sample's stack (a row of `stacks`).
    pub(super) is_stack: Vec<bool>,
    pub(super) stacks: u64,
    /// Stacks by the hash of their frame keys: (leaf node, leaf frame, range in
    /// `stack_keys`).
    pub(super) stack_cache: FxHashMap<u64, (u32, u32, u32, u32)>,
    pub(super) stack_keys: Vec<FrameKey>,
    /// Scratch: the current sample's frame keys and addresses, leaf first.
    pub(super) keys: Vec<(FrameKey, u64)>,
    pub(super) path: Vec<u32>,
    pub(super) columns: SampleColumns,
    pub(super) out: Option<TableFile>,
    /// Rows in the current samples file.
    pub(super) file_rows_written: u64,
    pub(super) files_written: Vec<String>,
    pub(super) bytes: u64,
    pub(super) samples: u64,
    pub(super) time_range: Option<(u64, u64)>,
    /// perf 6.15's parallelism at each sample, for recordings with switch records.
    pub(super) parallelism: ParallelismTracker,
    /// Whether the recording has switch records (the `parallelism` column is set), decided
    /// at the first sample.
    pub(super) switch_records: Option<bool>,
    pub(super) error: Option<WriteError>,
}

impl<'a> SampleWriter<'a> {
    pub(super) fn event(&mut self, profile: &Profile, id: u16) -> Option<&mut EventSlot> {
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

    pub(super) fn frame(&mut self, key: FrameKey, addr: u64) -> u32 {
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
    pub(super) fn stack(&mut self, keys: &[(FrameKey, u64)]) -> (u32, u32) {
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
    pub(super) fn dso_names<'c>(
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
    pub(super) fn identify(&mut self, profile: &Profile) -> Result<(), WriteError> {
        if !self.file_id_hex.is_empty() {
            return Ok(());
        }
        self.host = host_name(self.opts, profile.meta.hostname.as_deref());
        self.file_id = file_id(self.input, &self.host);
        self.file_id_hex = format!("{:016x}", self.file_id);
        remove_stale(self.dir, &self.file_id_hex)
    }

    pub(super) fn add(&mut self, profile: &Profile, s: &Sample) {
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
        // Decided once per file, at its first sample (the header and its attrs are read by
        // then): scanning the events at every sample cost a pass over them per row.
        let switch_records = *self
            .switch_records
            .get_or_insert_with(|| has_switch_records(profile));
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
        let key_of = |loc: culprit_decode::model::Location, mode: CpuMode, ret: bool| {
            FrameKey::of(profile, loc, mode, s.pid, ret && inline)
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
            Precise::Fields => match s.spe.as_deref() {
                Some(spe_fields) => super::spe::complete(s, spe_fields, precise_from_fields(s)),
                None => precise_from_fields(s),
            },
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
            .push(switch_records.then_some(parallelism as i32));
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
    pub(super) fn flush(&mut self) -> Result<(), WriteError> {
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

    pub(super) fn close_file(&mut self) -> Result<(), WriteError> {
        if let Some(out) = self.out.take() {
            self.bytes += out.finish()?;
        }
        Ok(())
    }
}
