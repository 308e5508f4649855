//! Framing and ordering: records are framed from the input (decompressed when COMPRESSED),
//! queued per round, and delivered in time order at FINISHED_ROUND (perf's ordered-events
//! rule); delivered input is released.

use super::*;

/// A queued record: where its bytes are and when it happened.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ref {
    pub(super) time: u64,
    /// Offset of the record: in the input, or (with `IN_DECOMP`) in the decompressed buffer.
    pub(super) at: u64,
    /// Input offset to report for this record (the COMPRESSED record for inner records).
    pub(super) file_off: u64,
    pub(super) attr: u16,
    /// The record header's type (kernel records: below 64), misc and size, kept so that
    /// delivery does not read the header again.
    pub(super) ty: u8,
    pub(super) misc: u16,
    pub(super) size: u16,
}

/// Sorts records by time, stably (file order among equal times), as `sort_by_key` does,
/// for what a round holds: a few runs already in time order (one per CPU's ring buffer),
/// merged pairwise through `scratch` (kept by the caller: the general sort allocates a
/// buffer each time and was a twentieth of reading a file). More than a few runs: the
/// general sort.
pub(super) fn sort_runs_by_time(v: &mut [Ref], scratch: &mut Vec<Ref>) {
    /// Runs merged by hand at most (a round of perf's has one per CPU, or two on a wrap).
    pub(super) const MAX_RUNS: usize = 16;
    let mut bounds = [0usize; MAX_RUNS + 1];
    let mut runs = 0;
    for i in 1..v.len() {
        if v[i].time < v[i - 1].time {
            runs += 1;
            if runs == MAX_RUNS {
                v.sort_by_key(|r| r.time);
                return;
            }
            bounds[runs] = i;
        }
    }
    runs += 1;
    bounds[runs] = v.len();
    // Merge neighbours until one run is left.
    while runs > 1 {
        let mut merged = 0;
        let mut i = 0;
        while i < runs {
            let lo = bounds[i];
            if i + 1 < runs {
                let (mid, hi) = (bounds[i + 1], bounds[i + 2]);
                merge_adjacent(&mut v[lo..hi], mid - lo, scratch);
                i += 2;
            } else {
                i += 1;
            }
            bounds[merged] = lo;
            merged += 1;
        }
        bounds[merged] = v.len();
        runs = merged;
    }
}

/// Merges the two time-ordered runs `v[..mid]` and `v[mid..]` in place, stably (the first
/// run's records first among equal times).
pub(super) fn merge_adjacent(v: &mut [Ref], mid: usize, scratch: &mut Vec<Ref>) {
    let Some(first_b) = v.get(mid).map(|r| r.time) else {
        return;
    };
    // Only the first run's records after the second run's first one move.
    let start = v[..mid].partition_point(|r| r.time <= first_b);
    if start == mid {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(&v[start..mid]);
    let (mut a, mut b, mut out) = (0, mid, start);
    while a < scratch.len() && b < v.len() {
        // Ties go to the first run.
        if v[b].time < scratch[a].time {
            v[out] = v[b];
            b += 1;
        } else {
            v[out] = scratch[a];
            a += 1;
        }
        out += 1;
    }
    // What is left of the second run is in place already.
    let rest = &scratch[a..];
    v[out..out + rest.len()].copy_from_slice(rest);
}

pub(super) const IN_DECOMP: u64 = 1 << 63;
/// Tags a [`Ref::at`] as an offset in [`Reader::owned`] (stream mode).
pub(super) const IN_OWNED: u64 = 1 << 62;

/// Largest tracing data read (a stream buffers it whole): perf's is a few MiB at most (the
/// event formats, with kallsyms in old versions).
pub(super) const MAX_TRACING_DATA: usize = 256 << 20;

/// Whether the rest of a pipe-mode input is text perf record printed (`[ perf record: Woken
/// up 1 times to write data ]`...): what a `perf record -o - ... > F 2>&1` leaves at the end.
pub(super) fn is_perf_message(rest: &[u8]) -> bool {
    rest.starts_with(b"[ perf record:")
        && rest
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// The whole record (header included) starting at `off`, if it fits.
#[inline(always)]
pub(super) fn record_at(buf: &[u8], off: usize, be: bool) -> Option<&[u8]> {
    let (_, _, size) = record_header(buf.get(off..)?, be)?;
    buf.get(off..off.checked_add(usize::from(size))?)
}

/// A record header's (type, misc, size), from the first 8 bytes of `b`.
#[inline(always)]
pub(super) fn record_header(b: &[u8], be: bool) -> Option<(u32, u16, u16)> {
    let h: [u8; 8] = b.get(..8)?.try_into().ok()?;
    let w = u64::from_le_bytes(h);
    let (ty, misc, size) = (w as u32, (w >> 32) as u16, (w >> 48) as u16);
    Some(if be {
        (ty.swap_bytes(), misc.swap_bytes(), size.swap_bytes())
    } else {
        (ty, misc, size)
    })
}

/// The record being framed on the general path: where it is, and what a stop there says.
#[derive(Debug, Clone, Copy)]
pub(super) struct RecordAt {
    /// Offset of the record in the bytes framed.
    pub(super) off: usize,
    /// End of the bytes framed.
    pub(super) end: usize,
    /// Input offset of the record.
    pub(super) abs: u64,
    /// Records read before this one.
    pub(super) records: u64,
    /// The bytes end the input (not stream mode waiting for more).
    pub(super) eof: bool,
}

impl RecordAt {
    /// Reading stops at this record (damage) for `reason`.
    pub(super) fn stop(&self, record_type: Option<u32>, reason: String) -> Framed {
        Framed::Stop(ReadStop {
            offset: self.abs,
            record_type,
            reason,
            records_read: self.records,
        })
    }
}

/// A record whose header was read and whose bytes are all there.
#[derive(Debug, Clone, Copy)]
pub(super) struct FramedRecord<'d> {
    /// The bytes from the record's header to the end of the bytes framed.
    pub(super) hdr: &'d [u8],
    pub(super) ty: u32,
    pub(super) misc: u16,
    /// The header's size (at least 8).
    pub(super) size: usize,
    /// The record after its header.
    pub(super) body: &'d [u8],
}

impl<'a, 'p> Reader<'a, 'p> {
    /// Frames the records in `data[start..end]` of the input. Returns where and why it
    /// stopped early.
    pub(super) fn frame(&mut self, start: usize, end: usize, pipe: bool) -> Option<ReadStop> {
        let data = self.data;
        match self.frame_in(data, start, end, pipe, true) {
            Framed::Stop(s) => Some(s),
            _ => None,
        }
    }

    /// Frames the records in `data[start..end]`, whose offset 0 is input offset `self.base`.
    /// Without `eof` (stream mode) an incomplete record at the end is not damage: it waits.
    pub(super) fn frame_in(
        &mut self,
        data: &[u8],
        start: usize,
        end: usize,
        pipe: bool,
        eof: bool,
    ) -> Framed {
        let mut off = start;
        // Records of a mapped input are queued where they lie: runs of samples take the
        // short path below, everything else (and any damage) the general one.
        let fast = !self.stream && !self.attrs.is_empty();
        while off < end {
            self.report_progress(off as u64);
            if fast {
                off = self.frame_samples(data, off, end);
                if off >= end {
                    break;
                }
            }
            self.framing_at = off;
            let at = RecordAt {
                off,
                end,
                abs: self.base.saturating_add(off as u64),
                records: self.p.meta.records,
                eof,
            };
            match self.frame_record(data, at, pipe) {
                Ok(next) => off = next,
                Err(framed) => return framed,
            }
        }
        Framed::Done
    }

    /// Frames the one record at `at.off` on the general path: checks its header, handles it
    /// by type and counts it. Returns the offset of the next record, or (`Err`) how framing
    /// ends here.
    #[inline(always)]
    fn frame_record(&mut self, data: &[u8], at: RecordAt, pipe: bool) -> Result<usize, Framed> {
        let (off, end, abs) = (at.off, at.end, at.abs);
        if at.eof && pipe {
            if let Some(text) = data.get(off..end).filter(|t| is_perf_message(t)) {
                self.warn(format!(
                    "the stream ends with {} bytes of perf record's own messages ({:?}): \
                     its stderr was written into the output; ignored",
                    text.len(),
                    String::from_utf8_lossy(text).lines().next().unwrap_or("")
                ));
                return Err(Framed::Done);
            }
        }
        let rec = self.split_record(data, at)?;
        let (ty, body) = (rec.ty, rec.body);
        let mut next = off + rec.size;
        if ty >= 64 && ty != rt::FINISHED_ROUND {
            // User records (attrs, features, compressed data, AUX) are not state-free.
            if let Some(log) = self.log.as_mut() {
                log.change(off as u64);
            }
        }
        match ty {
            rt::FINISHED_ROUND => next = self.frame_finished_round(off, next)?,
            rt::COMPRESSED | rt::COMPRESSED2 if self.part.lite => {
                // No share boundary after compressed data (its rounds are inside it):
                // the part before reads on to the end (below), this one gives up.
                return Err(Framed::Done);
            }
            rt::COMPRESSED | rt::COMPRESSED2 => self.frame_compressed(ty, body, at)?,
            rt::AUXTRACE => next = self.frame_auxtrace(data, body, next, at)?,
            rt::HEADER_TRACING_DATA => next = self.frame_tracing_data(data, body, next, at)?,
            rt::AUXTRACE_INFO => self.auxtrace_info(body),
            spe::RECORD_TIME_CONV => self.time_conv(body),
            rt::HEADER_ATTR => self.pipe_attr(body, abs),
            rt::HEADER_FEATURE => self.frame_feature(body),
            rt::HEADER_BUILD_ID => {
                if let Some(e) = header::parse_build_id_body(rec.misc, body, self.be) {
                    self.features.build_ids.push(e);
                }
            }
            rt::EVENT_UPDATE => self.event_update(body),
            t if t < 64 => self.frame_kernel_record(&rec, at, pipe),
            _ => {}
        }
        self.p.meta.records += 1;
        Ok(next)
    }

    /// The header and body of the record at `at.off`, or how framing ends there: damage, or
    /// (stream mode) a record not all there yet.
    #[inline(always)]
    fn split_record<'d>(&self, data: &'d [u8], at: RecordAt) -> Result<FramedRecord<'d>, Framed> {
        let (off, end) = (at.off, at.end);
        let Some(hdr) = data.get(off..end).filter(|h| h.len() >= 8) else {
            if !at.eof {
                return Err(Framed::More(off));
            }
            return Err(at.stop(
                None,
                format!(
                    "truncated record header: {} bytes left, 8 needed",
                    end - off
                ),
            ));
        };
        let Some((ty, misc, size)) = record_header(hdr, self.be) else {
            return Err(at.stop(None, "unreadable record header".into()));
        };
        let size = usize::from(size);
        if size < 8 {
            return Err(at.stop(Some(ty), format!("corrupt record: size {size} < 8")));
        }
        let Some(body) = hdr.get(8..size) else {
            if !at.eof {
                return Err(Framed::More(off));
            }
            return Err(at.stop(
                Some(ty),
                format!(
                    "truncated record: {size} bytes long, {} bytes left",
                    end - off
                ),
            ));
        };
        Ok(FramedRecord {
            hdr,
            ty,
            misc,
            size,
            body,
        })
    }

    /// FINISHED_ROUND at `off`: delivers the round, makes a planned jump, and moves the
    /// share's bounds (start of the share, the split, its end). Returns where framing goes
    /// on (`next`, or the jump's target), or `Err(Framed::Done)` at the end of the share.
    #[inline(always)]
    fn frame_finished_round(&mut self, off: usize, mut next: usize) -> Result<usize, Framed> {
        self.finish_round();
        let records = self.p.meta.records + 1;
        if let Some(log) = self.log.as_mut().filter(|l| off >= l.from) {
            log.rounds.push((off, self.max_time, records));
        }
        if let Some(plan) = self
            .jump_plan
            .filter(|p| self.part.lite && next >= p.after && p.to > off)
        {
            // Deliver what the prefix left queued (a sequential read delivers it
            // in the round after this one, before anything at or after `to` is
            // framed), then go on at `to` with the newest time seen there.
            self.jump_plan = None;
            self.flush(None);
            self.replay_deferred.clear();
            self.max_time = self.max_time.max(plan.warm_max);
            self.jumped = Some(Jumped {
                from: off,
                to: plan.to,
                max_time: self.max_time,
            });
            next = plan.to;
        }
        let at = usize::try_from(self.base)
            .unwrap_or(usize::MAX)
            .saturating_add(next);
        if self.part.lite && self.part.from.is_some_and(|f| at >= f) {
            self.part.lite = false;
            self.requeue_deferred();
            self.part.started = true;
            self.progress_from = at as u64;
            self.next_progress = 0;
        }
        if let Some((split, start, end)) = self.split {
            if let Some(t) = split.reached(at, start, end) {
                self.part.to = Some(t);
                self.split = None;
            }
        }
        if !self.part.lite && self.part.to.is_some_and(|t| at >= t) {
            self.part.ended = true;
            self.p.meta.records += 1;
            self.resume_at = next;
            return Err(Framed::Done);
        }
        Ok(next)
    }

    /// COMPRESSED or COMPRESSED2 (`ty`) in a part that reads its share: ends share
    /// boundaries, then decompresses the payload and frames the records in it.
    fn frame_compressed(&mut self, ty: u32, body: &[u8], at: RecordAt) -> Result<(), Framed> {
        self.part.to = None;
        if let Some((split, ..)) = self.split.take() {
            split.close();
        }
        self.p.meta.compressed = true;
        let payload = if ty == rt::COMPRESSED {
            Some(body)
        } else {
            // COMPRESSED2: u64 data_size, then the data, then alignment padding.
            u64_at(body, 0, self.be)
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| body.get(8..8usize.checked_add(n)?))
        };
        let Some(payload) = payload else {
            return Err(at.stop(Some(ty), "corrupt COMPRESSED2 data size".into()));
        };
        if let Err(e) = self.decompress(payload, at.abs) {
            return Err(at.stop(Some(ty), e));
        }
        Ok(())
    }

    /// AUXTRACE: the AUX data follows the record (at `next`); its size is the first body
    /// field. Returns the offset after the data, or (stream mode) a skip of the data still
    /// to come.
    fn frame_auxtrace(
        &mut self,
        data: &[u8],
        body: &[u8],
        next: usize,
        at: RecordAt,
    ) -> Result<usize, Framed> {
        let end = at.end;
        let size = u64_at(body, 0, self.be);
        let aux = size
            .and_then(|a| usize::try_from(a).ok())
            .and_then(|a| next.checked_add(a))
            .filter(|&e| e <= end);
        match (aux, size) {
            (Some(e), _) => {
                if self.spe.is_some() {
                    self.auxtrace(body, data.get(next..e).unwrap_or(&[]));
                }
                Ok(e)
            }
            // Stream mode: skip the rest of the data as it arrives.
            (None, Some(a)) if !at.eof => {
                if self.spe.is_some() {
                    self.spe_data_skipped();
                }
                Err(Framed::Skip {
                    at: at.abs,
                    left: a.saturating_sub((end - next) as u64),
                    records: at.records,
                })
            }
            _ => Err(at.stop(
                Some(rt::AUXTRACE),
                "AUXTRACE data extends past the end".into(),
            )),
        }
    }

    /// HEADER_TRACING_DATA: the tracing data follows the record (at `next`): u32 size
    /// (already padded to 8 bytes by perf), then the data. Kept whole until it is all there.
    /// Returns the offset after the data.
    fn frame_tracing_data(
        &mut self,
        data: &[u8],
        body: &[u8],
        next: usize,
        at: RecordAt,
    ) -> Result<usize, Framed> {
        let size = Cur::new(body, self.be)
            .u32()
            .map(|n| n as usize)
            .filter(|&n| n <= MAX_TRACING_DATA);
        let data_end = size.and_then(|n| next.checked_add(n));
        match data_end.filter(|&e| e <= at.end) {
            Some(e) => {
                let tracing = data.get(next..e).unwrap_or(&[]);
                header::add_tracing_data(&mut self.features, tracing);
                self.build_events();
                self.sync_meta();
                Ok(e)
            }
            None if !at.eof && size.is_some() => Err(Framed::More(at.off)),
            None => {
                let why = match size {
                    Some(_) => "TRACING_DATA extends past the end".into(),
                    None => format!(
                        "TRACING_DATA record without a plausible size (at most {} MiB)",
                        MAX_TRACING_DATA >> 20
                    ),
                };
                Err(at.stop(Some(rt::HEADER_TRACING_DATA), why))
            }
        }
    }

    /// HEADER_FEATURE (pipe mode): a u64 feature id, then the feature's section.
    fn frame_feature(&mut self, body: &[u8]) {
        let mut c = Cur::new(body, self.be);
        if let Some(id) = c.u64() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            let rest = body.get(8..).unwrap_or(&[]);
            header::parse_feature(&mut self.features, id, rest, self.be);
            self.sync_meta();
            // Event names and PMUs of a stream are final from here on: samples
            // delivered before the stream ends (streaming readers) see them.
            if matches!(id, abi::feature::EVENT_DESC | abi::feature::PMU_MAPPINGS) {
                self.build_events();
            }
        }
    }

    /// A kernel record (type below 64) on the general path: queued (a stream's copied into
    /// `owned` first), or skipped before any attr.
    #[inline(always)]
    fn frame_kernel_record(&mut self, rec: &FramedRecord, at: RecordAt, pipe: bool) {
        let (ty, misc, body) = (rec.ty, rec.misc, rec.body);
        if self.attrs.is_empty() {
            // As perf, and the same from a file or a stream: skipped.
            if pipe {
                self.warn(format!(
                    "record type {ty} at offset {} before any HEADER_ATTR; ignored",
                    at.abs
                ));
            }
        } else if self.stream {
            let owned_at = self.owned.len() as u64 | IN_OWNED;
            self.owned
                .extend_from_slice(rec.hdr.get(..rec.size).unwrap_or(&[]));
            self.enqueue(ty, misc, body, owned_at, at.abs);
        } else {
            self.enqueue(ty, misc, body, at.off as u64, at.off as u64);
        }
    }

    /// Queues the run of whole SAMPLE records starting at `off` (a mapped input with attrs);
    /// returns the offset of the first record that is not one (or is damaged).
    #[inline(always)]
    pub(super) fn frame_samples(&mut self, data: &[u8], mut off: usize, end: usize) -> usize {
        let data = data.get(..end).unwrap_or(&[]);
        let be = self.be;
        // One attr: every sample's time sits at one offset (decided once for the run).
        let single_time = match self.id_mode {
            IdMode::Single => Some(self.single_sample_time),
            _ => None,
        };
        // `max_time` lives in a register for the run (as `enqueue` keeps it).
        let (mut max_time, mut records) = (self.max_time, 0u64);
        let replay = self.part.lite;
        while let Some(rec) = data.get(off..) {
            prefetch_ahead(rec);
            let Some((ty, misc, size)) = record_header(rec, be) else {
                break;
            };
            let Some(body) = rec.get(8..usize::from(size)).filter(|_| ty == rt::SAMPLE) else {
                break;
            };
            let (attr, time) = match single_time {
                Some(at) => (0, at.and_then(|o| u64_at(body, o, be))),
                None => self.attr_and_time(ty, body),
            };
            let time = time.unwrap_or(max_time);
            max_time = max_time.max(time);
            let r = Ref {
                time,
                at: off as u64,
                file_off: off as u64,
                attr,
                ty: rt::SAMPLE as u8,
                misc,
                size,
            };
            if replay && self.replay_skips_sample(attr, body) {
                // Its time still moves the rounds' flush limits (above), as if it were queued.
                self.replay_deferred.push(r);
            } else {
                self.queue.push(r);
            }
            records += 1;
            off += usize::from(size);
        }
        self.max_time = max_time;
        self.p.meta.records += records;
        off
    }

    /// Queues a kernel record for time-ordered delivery.
    #[inline(always)]
    pub(super) fn enqueue(&mut self, ty: u32, misc: u16, body: &[u8], at: u64, file_off: u64) {
        let (attr, time) = self.attr_and_time(ty, body);
        // Records without a timestamp keep their place after what was already seen.
        let time = time.unwrap_or(self.max_time);
        self.max_time = self.max_time.max(time);
        self.push_ref(Ref {
            time,
            at,
            file_off,
            attr,
            // Kernel records only (type < 64); size: the header's, which fits 16 bits.
            ty: ty as u8,
            misc,
            size: (body.len() + 8) as u16,
        });
    }

    #[inline]
    pub(super) fn push_ref(&mut self, r: Ref) {
        self.queue.push(r);
    }

    /// perf's FINISHED_ROUND: deliver everything not newer than the previous round's newest.
    pub(super) fn finish_round(&mut self) {
        let limit = self.next_flush;
        self.flush(Some(limit));
        self.next_flush = self.max_time;
    }

    /// Sorts the queue by time (stable: file order among equal times) and delivers the
    /// records not newer than `limit` (all with `None`).
    pub(super) fn flush(&mut self, limit: Option<u64>) {
        if !self.replay_deferred.is_empty() {
            // The deferred samples this flush would deliver (replaying: to no effect).
            match limit {
                Some(l) => self.replay_deferred.retain(|r| r.time > l),
                None => self.replay_deferred.clear(),
            }
        }
        if self.head >= self.queue.len() {
            // Nothing queued (a replaying part parks most samples): all input before the
            // framing point is done with.
            self.release_done_input();
            return;
        }
        let mut queue = std::mem::take(&mut self.queue);
        let head = self.head.min(queue.len());
        let sorted = self.sorted.clamp(head, queue.len());
        if sorted < queue.len() {
            // Records since the last flush: sort them (per-CPU runs interleave; the stable
            // sort keeps file order among equal times), then merge them with the part of the
            // sorted pending records they overlap (usually a short tail, often nothing).
            if let Some(new) = queue.get_mut(sorted..) {
                sort_runs_by_time(new, &mut self.merge_scratch);
            }
            let first_new = queue.get(sorted).map_or(u64::MAX, |r| r.time);
            let older = queue.get(head..sorted).unwrap_or(&[]);
            let overlap = head + older.partition_point(|r| r.time <= first_new);
            if overlap < sorted {
                if let Some(tail) = queue.get_mut(overlap..) {
                    // Two runs: the older records it overlaps, then the new ones.
                    merge_adjacent(tail, sorted - overlap, &mut self.merge_scratch);
                }
            }
        }
        self.sorted = queue.len();
        let pending = queue.get(head..).unwrap_or(&[]);
        let cut = head
            + match limit {
                Some(l) => pending.partition_point(|r| r.time <= l),
                None => pending.len(),
            };
        for r in queue.get(head..cut).unwrap_or(&[]) {
            self.deliver(r);
        }
        self.head = cut;
        if self.head * 2 < queue.len() {
            self.queue = queue;
            return;
        }
        // At least half the queue is delivered: drop it, and the buffered bytes only it used
        // (amortized O(1) per record).
        queue.drain(..self.head);
        self.sorted -= self.head;
        self.head = 0;
        self.queue = queue;
        self.compact_decomp();
        self.compact_owned();
        self.release_done_input();
    }

    /// Releases the mapped input before the oldest still-queued record (or the framing
    /// point), in steps of 8 MiB. Parked replay samples do not hold input back: the few this
    /// part delivers after all (pending when its share starts) are read again from the file.
    pub(super) fn release_done_input(&mut self) {
        let low = self
            .queue
            .iter()
            .filter(|r| r.at & (IN_DECOMP | IN_OWNED) == 0)
            .map(|r| r.at as usize)
            .min()
            .unwrap_or(self.framing_at)
            .min(self.framing_at);
        if low >= self.released.saturating_add(1 << 23) {
            (self.release)(low);
            self.released = low;
        }
    }

    /// Stream mode: drops copied records already delivered, rebasing the queue's offsets.
    pub(super) fn compact_owned(&mut self) {
        if self.owned.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        for r in &mut self.queue {
            if r.at & IN_OWNED != 0 {
                let off = (r.at & !IN_OWNED) as usize;
                let rec = record_at(&self.owned, off, self.be).unwrap_or(&[]);
                r.at = keep.len() as u64 | IN_OWNED;
                keep.extend_from_slice(rec);
            }
        }
        self.owned = keep;
    }

    /// Drops decompressed bytes no queued record needs any more.
    pub(super) fn compact_decomp(&mut self) {
        if self.decomp.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        for r in &mut self.queue {
            if r.at & IN_DECOMP != 0 {
                let off = (r.at & !IN_DECOMP) as usize;
                let rec = record_at(&self.decomp, off, self.be).unwrap_or(&[]);
                r.at = keep.len() as u64 | IN_DECOMP;
                keep.extend_from_slice(rec);
            }
        }
        let tail = self.decomp.get(self.decomp_framed..).unwrap_or(&[]);
        let framed = keep.len();
        keep.extend_from_slice(tail);
        self.decomp = keep;
        self.decomp_framed = framed;
    }

    pub(super) fn decompress(&mut self, payload: &[u8], file_off: u64) -> Result<(), String> {
        // The context is moved out while records are framed (framing needs `self`).
        let mut dctx = self.dctx.take().unwrap_or_else(zstd_safe::DCtx::create);
        let r = self.decompress_with(&mut dctx, payload, file_off);
        self.dctx = Some(dctx);
        r
    }

    fn decompress_with(
        &mut self,
        dctx: &mut zstd_safe::DCtx<'static>,
        payload: &[u8],
        file_off: u64,
    ) -> Result<(), String> {
        if self.zbuf.is_empty() {
            self.zbuf = vec![0; 1 << 18];
        }
        let mut input = zstd_safe::InBuffer::around(payload);
        loop {
            let mut out = zstd_safe::OutBuffer::around(&mut self.zbuf[..]);
            if let Err(code) = dctx.decompress_stream(&mut out, &mut input) {
                return Err(format!(
                    "zstd decompression failed: {}",
                    zstd_safe::get_error_name(code)
                ));
            }
            let n = out.pos();
            self.decomp_idle = self.decomp_idle.saturating_add(n as u64);
            if self.decomp_idle > MAX_DECOMPRESSED_WITHOUT_EVENTS {
                return Err(format!(
                    "compressed data expands to more than {} MiB without a single event (a \
                     zstd bomb?)",
                    MAX_DECOMPRESSED_WITHOUT_EVENTS >> 20
                ));
            }
            self.decomp
                .extend_from_slice(self.zbuf.get(..n).unwrap_or(&[]));
            // Frame as we go: a chunk's events count before the next chunk expands, and
            // rounds compact what was delivered.
            self.frame_decompressed(file_off)?;
            if n < self.zbuf.len() && input.pos() >= payload.len() {
                break;
            }
            if n == 0 && input.pos() >= payload.len() {
                break;
            }
        }
        Ok(())
    }

    /// Frames the complete records now in `decomp`; a partial one waits for the next chunk.
    fn frame_decompressed(&mut self, file_off: u64) -> Result<(), String> {
        loop {
            let off = self.decomp_framed;
            let Some(rest) = self.decomp.get(off..) else {
                break;
            };
            let mut c = Cur::new(rest, self.be);
            let (Some(ty), Some(_misc), Some(size)) = (c.u32(), c.u16(), c.u16()) else {
                break;
            };
            let size = usize::from(size);
            if size < 8 {
                return Err(format!(
                    "corrupt record (size {size}) inside compressed data"
                ));
            }
            if rest.len() < size {
                break;
            }
            self.decomp_framed = off + size;
            self.p.meta.records += 1;
            if ty != rt::FINISHED_ROUND {
                self.decomp_idle = 0;
            }
            if ty == rt::FINISHED_ROUND {
                self.finish_round();
                // finish_round compacts: offsets moved, but decomp_framed follows.
                continue;
            }
            if ty < 64 && !self.attrs.is_empty() {
                let body = self.decomp.get(off + 8..off + size).unwrap_or(&[]);
                // Copy out the little needed for ordering; the body stays in `decomp`.
                let (attr, time) = self.attr_and_time(ty, body);
                let time = time.unwrap_or(self.max_time);
                self.max_time = self.max_time.max(time);
                let misc = self
                    .decomp
                    .get(off..)
                    .and_then(|h| record_header(h, self.be))
                    .map_or(0, |h| h.1);
                self.push_ref(Ref {
                    time,
                    at: off as u64 | IN_DECOMP,
                    file_off,
                    attr,
                    ty: ty as u8,
                    misc,
                    size: size as u16,
                });
            }
        }
        Ok(())
    }
}
