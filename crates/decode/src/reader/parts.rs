//! Reading a share of the records on one of several threads: the share bounds, the replay
//! before a share, the jump over the middle of a two-share replay and its check, where two
//! shares meet, and the merge of the shares' profiles. `read` is the one-share case.

use super::*;

/// A skip over the middle of a replay: the second of two parts replays the records from the
/// start up to the first round ending at or after `after` (a sixteenth of the way to its
/// share), then goes on at the round record `to` shortly before its share, as if the records
/// in between changed no state (no MMAP, COMM or FORK, no sample of an unknown thread, no
/// user record but rounds). That holds in most recordings (the state is set up at the start)
/// and spares replaying most of the previous share; [`RoundLog::confirms`] checks it
/// against the part before, which read those records, and a refuted jump is read again
/// sequentially. Planned by [`Reader::plan_jump`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct JumpPlan {
    pub(super) after: usize,
    /// A FINISHED_ROUND record (by its bytes; the part before confirms it is one).
    pub(super) to: usize,
    /// Newest time among the records of the round before `to` (which a sequential read's
    /// flush limit at `to` includes).
    pub(super) warm_max: u64,
}

/// The skip a part made (see [`JumpPlan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Jumped {
    /// Offset of the round record after which it skipped.
    pub from: usize,
    /// Offset of the round record it went on at.
    pub to: usize,
    /// Its newest time on reaching `to` (a sequential read's flush limit after `to`).
    pub max_time: u64,
}

/// What the part before a jumping one saw from the jump's earliest start on: each round
/// record (offset, newest time there, records framed through it) and the offsets of the
/// records whose delivery changed state.
#[derive(Debug, Default, Clone)]
pub(crate) struct RoundLog {
    pub(super) from: usize,
    pub(super) rounds: Vec<(usize, u64, u64)>,
    pub(super) changes: Vec<usize>,
    /// Too many changes to keep: no jump is confirmed.
    pub(super) overflow: bool,
}

/// Changes a [`RoundLog`] keeps (a recording with more changes than this in its first share
/// has too many for a jump to hold anyway).
pub(super) const MAX_LOGGED_CHANGES: usize = 1 << 12;

impl RoundLog {
    /// Notes that the record at file offset `at` changed state.
    pub(super) fn change(&mut self, at: u64) {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        if at < self.from {
            return;
        }
        if self.changes.len() < MAX_LOGGED_CHANGES {
            self.changes.push(at);
        } else {
            self.overflow = true;
        }
    }

    /// Whether jump `j` skipped only records that change nothing, between two real rounds,
    /// with the flush limit a sequential read has after `j.to`: then the jumping part read
    /// exactly what it would have without the jump.
    pub(crate) fn confirms(&self, j: &Jumped) -> bool {
        let round = |at: usize| self.rounds.iter().find(|r| r.0 == at);
        // The round the first part ended at must come after `to`: its flush delivers what
        // was framed before `to`, which the jumping part never saw.
        let share_end = self.rounds.last().map_or(0, |r| r.0);
        match (round(j.from), round(j.to)) {
            (Some(_), Some(&(_, max_time, _))) => {
                !self.overflow
                    && j.from < j.to
                    && j.to < share_end
                    && max_time == j.max_time
                    && !self.changes.iter().any(|&c| c > j.from && c < j.to)
            }
            _ => false,
        }
    }

    /// Records jump `j` did not frame (between its two rounds).
    pub(crate) fn skipped(&self, j: &Jumped) -> u64 {
        let count = |at: usize| self.rounds.iter().find(|r| r.0 == at).map_or(0, |r| r.2);
        count(j.to).saturating_sub(count(j.from)).saturating_sub(1)
    }
}

/// How a part of a two-part read takes part in a jump (see [`JumpPlan`]).
pub(crate) enum Jumping<'h> {
    /// Not at all (one part, or more than two).
    No,
    /// The second part: plans a jump and makes it if it can; `planned` is set when a jump
    /// is planned (then an error of this part may come from bytes the jump misread). Its
    /// share starts where `split` says.
    Jump {
        planned: &'h std::sync::atomic::AtomicBool,
        split: &'h SplitPoint,
    },
    /// The first part: logs rounds and changes; at the end of its share `at_end` is told
    /// the log and returns whether to read on to the end (the jump was refuted). Its share
    /// ends where `split` says.
    Log {
        at_end: &'h mut dyn FnMut(&RoundLog) -> bool,
        split: &'h SplitPoint,
    },
}

/// Where the two shares of a two-part read meet (see [`crate::SplitRule`]): a fixed
/// fraction of the data, or decided by the second part when it is ready to read (after
/// its side work, or late because its core woke slowly), halfway between the first part's
/// progress and the end, so that both end together. The first part publishes its progress
/// at each round until a split is decided; a compare-and-swap on one word makes the split
/// always lie ahead of the first part (the second part decides from the newest progress,
/// or retries).
#[derive(Debug)]
pub(crate) struct SplitPoint {
    pub(super) rule: crate::SplitRule,
    /// The first part's progress (offset after its last round), or [`SPLIT_DECIDED`] and
    /// the split's offset, or [`SPLIT_CLOSED`].
    pub(super) state: std::sync::atomic::AtomicU64,
}

/// [`SplitPoint::state`] flag: the rest is the split's target offset.
pub(super) const SPLIT_DECIDED: u64 = 1 << 63;
/// [`SplitPoint::state`]: the first part read to the end; there is no second share.
pub(super) const SPLIT_CLOSED: u64 = u64::MAX;

impl SplitPoint {
    pub(crate) fn new(rule: crate::SplitRule) -> Self {
        SplitPoint {
            rule,
            state: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A fixed split's target offset in the data `[start, end)`.
    pub(super) fn fixed(&self, start: usize, end: usize) -> Option<usize> {
        match self.rule {
            crate::SplitRule::Balanced => None,
            crate::SplitRule::Fixed(f) => {
                let f = if f.is_finite() {
                    f.clamp(0.0, 1.0)
                } else {
                    0.5
                };
                Some(start + (end.saturating_sub(start) as f64 * f) as usize)
            }
        }
    }

    /// The first part, after a round ending at `at` (data `[start, end)`): publishes its
    /// progress, and returns the split's target once one is decided.
    pub(super) fn reached(&self, at: usize, start: usize, end: usize) -> Option<usize> {
        use std::sync::atomic::Ordering;
        if let Some(t) = self.fixed(start, end) {
            return Some(t);
        }
        let at = (at as u64).min(SPLIT_DECIDED - 1);
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if cur & SPLIT_DECIDED != 0 {
                return (cur != SPLIT_CLOSED).then_some((cur & !SPLIT_DECIDED) as usize);
            }
            match self
                .state
                .compare_exchange_weak(cur, at, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return None,
                Err(now) => cur = now,
            }
        }
    }

    /// The first part read to the end with no split decided: none will be.
    pub(super) fn close(&self) {
        use std::sync::atomic::Ordering;
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur & SPLIT_DECIDED == 0).then_some(SPLIT_CLOSED)
            });
    }

    /// The second part, ready to read (data `[start, end)`): the target offset its share
    /// starts at, or `None` when less than `min_left` bytes are left after the first part's
    /// progress (or it read to the end): the first part reads on alone.
    pub(super) fn decide(&self, start: usize, end: usize, min_left: usize) -> Option<usize> {
        use std::sync::atomic::Ordering;
        if let Some(t) = self.fixed(start, end) {
            return Some(t);
        }
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            if cur & SPLIT_DECIDED != 0 {
                return (cur != SPLIT_CLOSED).then_some((cur & !SPLIT_DECIDED) as usize);
            }
            let progress = usize::try_from(cur).unwrap_or(usize::MAX).max(start);
            let left = end.saturating_sub(progress);
            if left < min_left.max(2) {
                return None;
            }
            let target = progress + left / 2;
            match self.state.compare_exchange_weak(
                cur,
                target as u64 | SPLIT_DECIDED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(target),
                Err(now) => cur = now,
            }
        }
    }
}

/// Which records a reader of a parallel read delivers. Every part frames the records from the
/// start: before its share it only *replays* them (state: comms, maps, forks, and the comm
/// interning of samples, so that string and DSO ids come out the same in every part), then
/// it decodes its share fully, and it stops at the end of its share without delivering what
/// is still queued (the next part delivers that). A share starts and ends at the first
/// FINISHED_ROUND record ending at or after a target offset, so neighbouring parts agree on
/// the boundary, and what a part delivers fully is exactly what a sequential read delivers
/// between those two rounds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartBounds {
    /// Target offset of the start of the share (`None`: from the first record).
    pub(super) from: Option<usize>,
    /// Target offset of the end of the share (`None`: to the last record).
    pub(super) to: Option<usize>,
    /// Still replaying state only (before the share).
    pub(super) lite: bool,
    /// The share started (always true for the first part).
    pub(super) started: bool,
    /// Framing stopped at the end of the share.
    pub(super) ended: bool,
    /// One of several parts (its warning tail is merged by [`merge_shares`]).
    pub(super) shared: bool,
}

impl<'a, 'p> Reader<'a, 'p> {
    /// Plans the jump of the second part of a two-part read whose share starts at the first
    /// round at or after `from` (see [`JumpPlan`]): finds the two round records nearest
    /// before `from` by their bytes (records are 8-byte aligned from the data start), past
    /// `after`, and frames the records between them for their newest time. `None` when
    /// there are no such rounds or the bytes between them do not frame as records.
    pub(super) fn plan_jump(
        &self,
        start: usize,
        end: usize,
        after: usize,
        from: usize,
    ) -> Option<JumpPlan> {
        /// How far before its share a part looks for rounds (rounds are far shorter).
        const MAX_SCAN: usize = 8 << 20;
        let data = self.data.get(..end)?;
        let is_round = |o: usize| {
            data.get(o..)
                .and_then(|h| record_header(h, self.be))
                .is_some_and(|h| h == (rt::FINISHED_ROUND, 0, 8))
        };
        let lowest = after.max(from.saturating_sub(MAX_SCAN));
        // Rounds ending before `from`: the first part's share ends at a later one, whose
        // flush delivers everything framed before the round jumped to.
        let mut o = start + from.checked_sub(start)?.checked_sub(1)? / 8 * 8;
        let mut rounds = [0usize; 2];
        let mut found = 0;
        while found < 2 && o >= lowest + 8 {
            o -= 8;
            if is_round(o) {
                rounds[found] = o;
                found += 1;
            }
        }
        let [to, before] = rounds;
        if found < 2 || before <= after {
            return None;
        }
        let mut warm_max = 0;
        let mut at = before + 8;
        while at < to {
            let (ty, _, size) = record_header(data.get(at..)?, self.be)?;
            let next = at
                .checked_add(usize::from(size))
                .filter(|&n| n <= to && size >= 8)?;
            if ty < 64 {
                if let (_, Some(t)) = self.attr_and_time(ty, data.get(at + 8..next)?) {
                    warm_max = warm_max.max(t);
                }
            }
            at = next;
        }
        (at == to).then_some(JumpPlan {
            after,
            to,
            warm_max,
        })
    }

    /// The share starts: the deferred samples still pending (newer than every flush so far)
    /// join the queue where a sequential read has them. The queue after a flush is in time
    /// order with ties in file order (offsets in the mapped file, which a replaying part
    /// reads), so ordering everything by (time, file offset) gives the order of one stable
    /// sort by time of the file-ordered records.
    pub(super) fn requeue_deferred(&mut self) {
        if self.replay_deferred.is_empty() {
            return;
        }
        let head = self.head.min(self.queue.len());
        let mut merged = self.queue.split_off(head);
        merged.append(&mut self.replay_deferred);
        // The pending queue is one sorted run and the parked samples (in file order) nearly
        // one: the stable sort finds the runs and merges them.
        merged.sort_by_key(|r| (r.time, r.file_off));
        self.queue = merged;
        self.head = 0;
        self.sorted = self.queue.len();
    }

    /// Replaying state before a share, a sample only matters for the comm it may intern for
    /// an unknown thread ([`State::thread`]; everything else it does is for the share that
    /// delivers it). A sample whose thread is known when it is framed is known when it would
    /// be delivered too (threads are never forgotten), so it need not be queued at all: the
    /// part before this one decodes it. Frees a replaying part from sorting and delivering
    /// the samples of every share before its own.
    #[inline]
    pub(super) fn replay_skips_sample(&self, attr: u16, body: &[u8]) -> bool {
        let Some(sl) = self.sample_layouts.get(usize::from(attr)) else {
            return false;
        };
        if sl.read {
            // Its read values are state for the samples after it (see `read_last`).
            return false;
        }
        let tid = if sl.tid == FixedFields::ABSENT {
            -1
        } else {
            let Some(v) = u64_at(body, usize::from(sl.tid), self.be) else {
                return false;
            };
            pid_tid(v, self.be).1
        };
        self.st.knows_thread(tid)
    }
}

/// Reads a whole perf.data image (file or pipe mode).
pub(crate) fn read<'p>(
    data: &[u8],
    progress: &'p mut dyn FnMut(u64, u64),
    release: &'p mut dyn FnMut(usize),
    sink: Option<SampleSink<'p>>,
    unwinder: Option<&'p mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
) -> Result<Profile, DecodeError> {
    let whole = Share { index: 0, count: 1 };
    read_share(
        data,
        progress,
        release,
        sink,
        unwinder,
        skips,
        (whole, Jumping::No),
    )
    .map(|(p, _)| p)
}

/// What a reader leaves out of samples (see [`crate::Reader`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Skips {
    /// [`crate::Reader::skip_callchains`].
    pub chains: bool,
    /// [`crate::Reader::skip_locations`].
    pub locations: bool,
}

/// Part `index` of `count` of a parallel read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Share {
    pub index: usize,
    pub count: usize,
}

/// What a part of a parallel read did (see [`PartBounds`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ShareOutcome {
    /// The part reached its share (if not, it delivered nothing and its profile is not used).
    pub started: bool,
    /// The skip it made before its share (see [`JumpPlan`]).
    pub jumped: Option<Jumped>,
    /// Warnings past the cap it did not keep.
    pub suppressed_warnings: u64,
    /// The header's warnings at the end of its profile's (after the records').
    pub header_warnings: usize,
    /// One of several parts: its profile has no "more warnings" line (see [`merge_shares`]).
    pub shared: bool,
}

/// [`read`] of one share of the records (`Share { index: 0, count: 1 }`: all of them).
pub(crate) fn read_share<'p>(
    data: &[u8],
    progress: &'p mut dyn FnMut(u64, u64),
    release: &'p mut dyn FnMut(usize),
    sink: Option<SampleSink<'p>>,
    unwinder: Option<&'p mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
    (share, jumping): (Share, Jumping<'p>),
) -> Result<(Profile, ShareOutcome), DecodeError> {
    let be = header::byte_order(data)?;
    let hsize = u64_at(data, 8, be).ok_or(DecodeError::TooShort(data.len() as u64))?;
    let mut r = Reader::new(data, be, progress, release, sink);
    r.unwind = unwinder.map(crate::unwind::Hook::new);
    r.skip_chains = skips.chains;
    r.skip_locations = skips.locations;
    if hsize != 16 {
        return read_file_share(r, data, be, share, jumping);
    }
    // Pipe mode: a 16-byte header, then records (attrs and features among them). Not
    // split: the first part reads it all.
    if share.index > 0 {
        let outcome = ShareOutcome::default();
        return Ok((Profile::default(), outcome));
    }
    r.p.meta.pipe_mode = true;
    let stopped = r.frame(16, data.len(), true);
    if r.attrs.is_empty() {
        return Err(DecodeError::Header {
            offset: stopped.as_ref().map_or(16, |s| s.offset),
            what: "pipe-mode stream without any HEADER_ATTR record".into(),
        });
    }
    Ok(finish_share(r, stopped))
}

/// The end of a share read to its end (or stopped): the events named if nothing named
/// them yet, and the part's profile.
fn finish_share(mut r: Reader<'_, '_>, stopped: Option<ReadStop>) -> (Profile, ShareOutcome) {
    if r.p.events.is_empty() {
        r.build_events();
    }
    r.finish(stopped)
}

/// [`read_share`] of a perf.data file (not pipe mode): the header, attrs and feature
/// sections, then the share's records of the data section, and why reading stopped (the
/// data's damage first, then a truncated feature section).
fn read_file_share<'a, 'p>(
    mut r: Reader<'a, 'p>,
    data: &'a [u8],
    be: bool,
    share: Share,
    jumping: Jumping<'p>,
) -> Result<(Profile, ShareOutcome), DecodeError> {
    let h = header::parse_file_header(data, be)?;
    let attrs = header::parse_file_attrs(data, &h)?;
    r.set_attrs(attrs);
    let feature_stop = read_feature_sections(&mut r, data, be, &h);
    r.build_events();
    r.sync_meta();
    let (start, end) = data_bounds(data, &h)?;
    let at_end = match split_share(&mut r, share, jumping, start, end) {
        ShareStart::Read { at_end } => at_end,
        ShareStart::Nothing => return Ok(r.finish(None)),
    };
    let data_stop = frame_share(&mut r, start, end, at_end);
    if r.part.ended || !r.part.started {
        // The share ended at a round (what follows is the next part's), or never began
        // (this part's profile is dropped).
        r.queue.clear();
        r.head = 0;
        r.sorted = 0;
        return Ok(r.finish(data_stop));
    }
    let records = r.p.meta.records;
    let stopped = file_stop(data_stop, feature_stop, &h, data.len() as u64, records);
    Ok(finish_share(r, stopped))
}

/// Parses the file's feature sections into the reader's features; returns where the file
/// is cut off among them (the section table, or the first section outside the file), if it
/// is. Sections outside the file are warned about.
fn read_feature_sections(
    r: &mut Reader<'_, '_>,
    data: &[u8],
    be: bool,
    h: &header::FileHeader,
) -> Option<ReadStop> {
    // With a zero data size perf never finished: no feature table was written.
    let (sections, table_complete) = if h.data.size == 0 {
        (Vec::new(), true)
    } else {
        header::file_feature_sections(data, h)
    };
    let table_at = h.data.offset.saturating_add(h.data.size);
    let mut feature_stop = (!table_complete).then(|| ReadStop {
        offset: table_at,
        record_type: None,
        reason: "file truncated in the feature section table".into(),
        records_read: 0,
    });
    for (id, sec) in sections {
        match sec.slice(data) {
            Some(b) => header::parse_feature(&mut r.features, id, b, be),
            None => {
                r.features.warnings.push(format!(
                    "feature section {id} ({} bytes at offset {}) lies outside the file",
                    sec.size, sec.offset
                ));
                feature_stop.get_or_insert(ReadStop {
                    offset: sec.offset.min(data.len() as u64),
                    record_type: None,
                    reason: format!("file truncated in feature section {id}"),
                    records_read: 0,
                });
            }
        }
    }
    feature_stop
}

/// Where the records of the data section start and end in `data` (the end of the file
/// when perf did not finish, or when the file is shorter than the header says). An error
/// when the section starts past the end of the file.
fn data_bounds(data: &[u8], h: &header::FileHeader) -> Result<(usize, usize), DecodeError> {
    let start = usize::try_from(h.data.offset).unwrap_or(usize::MAX);
    let declared_end = h.data.offset.saturating_add(h.data.size);
    if start > data.len() {
        return Err(DecodeError::Header {
            offset: 40,
            what: format!(
                "data section starts at offset {start}, beyond the end of the {}-byte file",
                data.len()
            ),
        });
    }

    let end = if h.data.size == 0 {
        data.len()
    } else {
        usize::try_from(declared_end)
            .unwrap_or(usize::MAX)
            .min(data.len())
    };
    Ok((start, end))
}

/// What a first part tells its round log at the end of its share (see [`Jumping::Log`]).
type AtEnd<'h> = &'h mut dyn FnMut(&RoundLog) -> bool;

/// How a part's share of the records begins (see [`split_share`]).
enum ShareStart<'h> {
    /// Read the share; the first part of a two-part read tells `at_end` its round log at
    /// the end of it.
    Read { at_end: Option<AtEnd<'h>> },
    /// Nothing to read: the second part of a two-part read with too little left (the
    /// first part reads on alone).
    Nothing,
}

/// Sets the bounds of the reader's share of the data section `start..end` (one of
/// `share.count` equal shares), and its part in a jump: the second part decides where its
/// share starts and plans a jump, the first logs its rounds up to a split.
fn split_share<'p>(
    r: &mut Reader<'_, 'p>,
    share: Share,
    jumping: Jumping<'p>,
    start: usize,
    end: usize,
) -> ShareStart<'p> {
    let mut at_end = None;
    if share.count > 1 {
        let at = |i: usize| start + (end.saturating_sub(start) / share.count).saturating_mul(i);
        r.part = PartBounds {
            from: (share.index > 0).then(|| at(share.index)),
            to: (share.index + 1 < share.count).then(|| at(share.index + 1)),
            lite: share.index > 0,
            started: share.index == 0,
            ended: false,
            shared: true,
        };
        // A jump's earliest start: a sixteenth of the way to the second share.
        let after = start + at(1).saturating_sub(start) / 16;
        match jumping {
            Jumping::Jump { planned, split } if share.index == 1 => {
                // Too little left to be worth replaying the start and planning a jump
                // (an eighth of the data): the first part reads on alone.
                let min_left = end.saturating_sub(start) / 8;
                let Some(from) = split.decide(start, end, min_left) else {
                    return ShareStart::Nothing;
                };
                r.part.from = Some(from);
                r.jump_plan = r.plan_jump(start, end, after, from);
                planned.store(r.jump_plan.is_some(), std::sync::atomic::Ordering::Release);
            }
            Jumping::Log { at_end: f, split } if share.index == 0 => {
                r.part.to = None;
                r.split = Some((split, start, end));
                r.log = Some(RoundLog {
                    from: after,
                    ..RoundLog::default()
                });
                at_end = Some(f);
            }
            _ => {}
        }
    }
    ShareStart::Read { at_end }
}

/// Frames the share's records of `start..end`; the first part of a two-part read whose
/// `at_end` refutes the second part's jump reads on to the end. Returns where and why
/// framing stopped early.
fn frame_share(
    r: &mut Reader<'_, '_>,
    start: usize,
    end: usize,
    at_end: Option<AtEnd<'_>>,
) -> Option<ReadStop> {
    let mut data_stop = r.frame(start, end, false);
    if let Some((split, ..)) = r.split.take() {
        // Read to the end (or stopped) before any split: a late second part has nothing.
        split.close();
    }
    if r.part.ended {
        if let (Some(f), Some(log)) = (at_end, r.log.take()) {
            if f(&log) {
                // The next part's jump was refuted: read its share too.
                r.part.ended = false;
                r.part.to = None;
                data_stop = r.frame(r.resume_at, end, false);
            }
        }
    }
    data_stop
}

/// Why reading a file whose share was read stopped: the data's damage (`data_stop`), else
/// a data section perf did not finish or the file cuts off, else a truncated feature
/// section (`feature_stop`). `len`: the file's length, `records`: the records read.
fn file_stop(
    data_stop: Option<ReadStop>,
    feature_stop: Option<ReadStop>,
    h: &header::FileHeader,
    len: u64,
    records: u64,
) -> Option<ReadStop> {
    let declared_end = h.data.offset.saturating_add(h.data.size);
    let data_stop = data_stop
        .or_else(|| {
            // perf writes the data size when it finishes; 0 means it was killed: whatever
            // records are there were read, but the file is incomplete.
            (h.data.size == 0).then(|| ReadStop {
                offset: len,
                record_type: None,
                reason: "the header's data size is 0: perf record did not finish (killed?); \
                         records were read up to the end of the file"
                    .into(),
                records_read: records,
            })
        })
        .or_else(|| {
            (h.data.size != 0 && declared_end > len).then(|| ReadStop {
                offset: len,
                record_type: None,
                reason: format!(
                    "file truncated: the data section should end at offset {declared_end}"
                ),
                records_read: records,
            })
        });
    // Data complete but the header facts after it cut off: still a truncated file.
    data_stop.or(feature_stop.map(|s| ReadStop {
        records_read: records,
        ..s
    }))
}

/// The line that ends a profile's warnings when `n` more were not kept.
pub(super) fn more_warnings(n: u64) -> String {
    format!("{n} more warnings not shown")
}

/// Combines the profiles of the parts of a parallel read into what a sequential read gives:
/// the state (DSOs, strings, meta, stop) of the last part that reached its share, which
/// replayed everything before it, with the counters every part delivered summed.
pub(crate) fn merge_shares(parts: Vec<(Profile, ShareOutcome)>) -> Profile {
    let mut used: Vec<(Profile, ShareOutcome)> =
        parts.into_iter().take_while(|(_, o)| o.started).collect();
    if let [(_, o)] = used.as_slice() {
        if !o.shared {
            // A read in one part: its profile is complete.
            return used.pop().map(|(p, _)| p).unwrap_or_default();
        }
    }
    // The records' warnings of every part in order, capped as one reader caps them; then
    // the header's (the last part's) and the count of those not kept.
    let mut warnings = Vec::new();
    let mut suppressed = 0u64;
    let mut malformed_named: Vec<u32> = Vec::new();
    let mut header = Vec::new();
    let last = used.len().saturating_sub(1);
    let mut used = used.into_iter().enumerate().map(|(i, (mut p, o))| {
        let records = p.warnings.len().saturating_sub(o.header_warnings);
        let tail = p.warnings.split_off(records);
        if i == last {
            header = tail;
        }
        for w in p.warnings.drain(..) {
            // Each share names the first malformed record of a type; the read names one.
            if let Some(ty) = super::records::malformed_type(&w) {
                if malformed_named.contains(&ty) {
                    continue;
                }
                malformed_named.push(ty);
            }
            if warnings.len() < MAX_WARNINGS {
                warnings.push(w);
            } else {
                suppressed += 1;
            }
        }
        suppressed += o.suppressed_warnings;
        p
    });
    let Some(first) = used.next() else {
        return Profile::default();
    };
    let mut merged = first;
    for p in used.by_ref() {
        let earlier = std::mem::replace(&mut merged, p);
        for (e, old) in merged.events.iter_mut().zip(&earlier.events) {
            e.samples += old.samples;
            e.period = e.period.saturating_add(old.period);
            e.lost = e.lost.saturating_add(old.lost);
        }
        merged.lost = merged.lost.saturating_add(earlier.lost);
        merged.lost_samples = merged.lost_samples.saturating_add(earlier.lost_samples);
        merged.lost_events = merged.lost_events.saturating_add(earlier.lost_events);
        merged.throttles = merged.throttles.saturating_add(earlier.throttles);
        merged.malformed_samples = merged
            .malformed_samples
            .saturating_add(earlier.malformed_samples);
        merged.meta.time_range = match (earlier.meta.time_range, merged.meta.time_range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (a, b) => a.or(b),
        };
    }
    drop(used);
    warnings.append(&mut header);
    if suppressed > 0 {
        warnings.push(more_warnings(suppressed));
    }
    merged.warnings = warnings;
    merged
}
