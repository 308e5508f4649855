//! Decoding SAMPLE records: fixed fields, call chains, branch stacks, the variable tail
//! (raw data, registers, user stack), READ groups, and the side data samples keep.

use super::*;

impl<'a, 'p> Reader<'a, 'p> {
    pub(super) fn sample(&mut self, r: &Ref, misc: u16, body: &[u8]) -> Option<()> {
        // One copy of the decoder per byte order, so no field read tests the order.
        // And one for plain samples (fixed fields and a call chain only, not unwound): most
        // of them, decoded without the code for the rest.
        let plain = self
            .sample_layouts
            .get(r.attr as usize)
            .is_some_and(|l| l.plain)
            && self.unwind.is_none();
        match (self.be, plain) {
            (true, true) => self.sample_in::<true, true>(r, misc, body),
            (true, false) => self.sample_in::<true, false>(r, misc, body),
            (false, true) => self.sample_in::<false, true>(r, misc, body),
            (false, false) => self.sample_in::<false, false>(r, misc, body),
        }
    }

    /// Decodes one SAMPLE record and hands it to the sink (or stores it). The common sample
    /// (fixed fields and a call chain) stays in this function; the fields after the call
    /// chain and the side data (raw, registers, stack, read values) are decoded and stored
    /// out of line, so the hot path keeps few live values.
    /// `PLAIN`: the attr records none of READ and the fields after CALLCHAIN, and nothing is
    /// unwound.
    #[inline(never)]
    pub(super) fn sample_in<const BE: bool, const PLAIN: bool>(
        &mut self,
        r: &Ref,
        misc: u16,
        body: &[u8],
    ) -> Option<()> {
        let sl = *self.sample_layouts.get(r.attr as usize)?;
        let a = self.attrs.get(r.attr as usize)?;
        let t = a.sample_type;
        // The fixed-size fields (IDENTIFIER .. PERIOD) sit at offsets known per attr.
        let fx = FixedValues::read::<BE>(body.get(..sl.fixed_len)?, sl, a);
        let mut pos = sl.fixed_len;
        let read = if !PLAIN && t & st::READ != 0 {
            let mut slow = Cur::new(body.get(pos..)?, BE);
            let v = read_values(&mut slow, a.read_format)?;
            pos += slow.pos();
            Some(v)
        } else {
            None
        };
        let (chain, tail) = chain_and_tail::<BE, PLAIN>(a, body, pos, self.skip_chains)?;
        let regs_mask = a.sample_regs_user;
        let lbr_call_stack = a.branch_sample_type & BRANCH_CALL_STACK != 0;

        // The whole record parsed: commit it.
        let cpumode = CpuMode::from_misc(misc);
        let (comm, slot) = self.st.thread(&mut self.p, fx.pid, fx.tid);
        self.note_sample_state(r, fx.tid, read.as_deref());
        if self.part.lite {
            // Replay: the thread's comm is interned (and the read values noted) as in the
            // part that delivers this.
            return Some(());
        }
        if read.is_some() && self.read_members.is_empty() {
            // Every counter of the group stood still: perf delivers nothing.
            return Some(());
        }
        let f0 = self.p.frames.len();
        let b0 = self.p.branches.len();
        let lbr = lbr_call_stack && t & st::BRANCH_STACK != 0;
        let ip = fx.ip;
        let location =
            self.push_sample_frames::<BE>(slot, (cpumode, ip), chain, tail.as_ref(), lbr, b0);
        if let Some(tl) = tail.as_ref().filter(|_| !self.skip_chains) {
            self.unwind_user_frames::<BE>(t, tl, f0, (fx.pid, fx.tid), regs_mask);
        }
        let callchain = range32(f0, self.p.frames.len())?;
        let branches = range32(b0, self.p.branches.len())?;
        // Side data (raw payload, registers, stack, read values) is rare: stored out of line.
        let lens = SideLens::of(&self.p);
        let has_side =
            !PLAIN && (read.is_some() || tail.as_ref().is_some_and(SampleTail::has_side));
        let has_read = read.is_some();
        let ranges = self.side_ranges::<BE, PLAIN>(lens, has_side, tail.as_ref(), read)?;
        self.count_sample(r.attr, has_read, t, fx.time, fx.period);
        // Filled in place: fields this attr never records keep their empty value.
        let sample = self.scratch.get_mut(r.attr as usize)?;
        sample.event = r.attr;
        sample.time = fx.time;
        sample.pid = fx.pid;
        sample.tid = fx.tid;
        sample.cpu = fx.cpu;
        sample.period = fx.period;
        sample.ip = ip;
        sample.cpumode = cpumode;
        sample.exact_ip = misc & abi::misc::EXACT_IP != 0;
        sample.comm = comm;
        sample.location = location;
        sample.callchain = callchain;
        sample.branches = branches;
        if let Some(ranges) = ranges {
            sample.raw = ranges.raw;
            sample.read = ranges.read;
            sample.user_regs = ranges.regs;
            sample.user_stack = ranges.stack;
        }
        fill_rare_fields::<BE>(sample, t, &fx, tail.as_ref());
        if has_read {
            self.deliver_members(r.attr, (f0, b0), has_side.then_some(lens));
            return Some(());
        }
        match self.sink.as_mut() {
            Some(sink) => {
                // Streaming: the sample and its side data live only for the call.
                sink(&self.p, sample);
                self.p.frames.truncate(f0);
                self.p.branches.truncate(b0);
                if has_side {
                    lens.truncate(&mut self.p);
                }
            }
            None => self.p.samples.push(sample.clone()),
        }
        Some(())
    }

    /// Notes what a sample of `r` changes in the reader's state: a thread it made known
    /// (a change for the round log), and the read values of a READ sample (its members, and
    /// the last values, also a change).
    #[inline(always)]
    fn note_sample_state(&mut self, r: &Ref, tid: i32, read: Option<&[ReadValue]>) {
        if self.st.sample_threads != self.sample_threads_seen {
            // This sample made its thread known: a change of state.
            self.sample_threads_seen = self.st.sample_threads;
            if let Some(log) = self.log.as_mut() {
                log.change(r.file_off);
            }
        }
        if let Some(vals) = read {
            // perf delivers a READ sample as one sample per value read, weighted by how much
            // the counter moved since the last sample of its id.
            self.read_members(r.attr, tid, vals);
            if let Some(log) = self.log.as_mut() {
                // The last values are state: a part that jumped over this would lack them.
                log.change(r.file_off);
            }
        }
    }

    /// Resolves the sample's `ip` (in the mappings of thread `slot`) and pushes its branch
    /// entries (from `tail`) and its call chain frames: those of `chain`, with the user part
    /// from the LBR call stack when `lbr` (`--call-graph lbr`). `b0`: where its branch
    /// entries start. Returns the location of `ip`.
    #[inline(always)]
    fn push_sample_frames<const BE: bool>(
        &mut self,
        slot: usize,
        (cpumode, ip): (CpuMode, u64),
        chain: &[u8],
        tail: Option<&SampleTail<'_>>,
        lbr: bool,
        b0: usize,
    ) -> crate::model::Location {
        let (user, location) = if self.skip_locations {
            // Resolved nowhere: what `resolve` gives an address in no mapping.
            let nowhere = crate::model::Location::unmapped(ip);
            (None, nowhere)
        } else {
            let user = self.st.slot_maps(slot);
            (user, self.st.resolve(user, cpumode, ip))
        };
        if let Some(tl) = tail.filter(|tl| !tl.branches.is_empty()) {
            push_branches::<BE>(
                &self.st,
                &mut self.p.branches,
                tl.branches,
                user,
                self.skip_locations,
            );
        }
        // `--call-graph lbr`: the user part of the chain comes from the LBR call stack (as
        // perf's resolve_lbr_callchain_sample), when the chain has a user part at all.
        let lbr_user = lbr.then(|| user_context_start::<BE>(chain)).flatten();
        if !chain.is_empty() {
            push_chain::<BE>(
                &self.st,
                &mut self.p.frames,
                chain
                    .get(..lbr_user.unwrap_or(chain.len()))
                    .unwrap_or(chain),
                user,
                self.skip_locations,
                (cpumode, ip, location),
            );
        }
        if lbr_user.is_some() {
            push_lbr_user_chain(
                &self.st,
                &mut self.p.frames,
                self.p.branches.get(b0..).unwrap_or(&[]),
                user,
                self.skip_locations,
            );
        }
        location
    }

    /// DWARF mode: the user part of the chain is unwound from the sampled registers and
    /// stack (in `tl`), with the mappings of this moment, after the kernel part (the frames
    /// from `f0`). Nothing without an unwinder or without both REGS_USER and STACK_USER.
    #[inline(always)]
    fn unwind_user_frames<const BE: bool>(
        &mut self,
        t: u64,
        tl: &SampleTail<'_>,
        f0: usize,
        id: (i32, i32),
        mask: u64,
    ) {
        if let Some(hook) = self.unwind.as_mut() {
            if t & st::REGS_USER != 0 && t & st::STACK_USER != 0 {
                let (regs, stack) = (tl.regs, tl.stack);
                hook.append_user_frames(&self.st, &mut self.p, f0, id, mask, regs, stack, BE);
            }
        }
    }

    /// The sample's side-data ranges: its side data stored (`has_side`), or its empty
    /// ranges at `lens`; `Some(None)` when the scratch sample's ranges stay as they are (a
    /// streamed plain sample). `None`: a range past 32 bits.
    #[inline(always)]
    fn side_ranges<const BE: bool, const PLAIN: bool>(
        &mut self,
        lens: SideLens,
        has_side: bool,
        tail: Option<&SampleTail<'_>>,
        read: Option<Vec<ReadValue>>,
    ) -> Option<Option<SideRanges>> {
        // A streamed plain sample's side ranges never change: the side arrays are emptied
        // after every streamed sample, so they stay the scratch sample's empty 0..0.
        let same_ranges = PLAIN && self.sink.is_some();
        debug_assert!(!same_ranges || lens.raw + lens.regs + lens.stacks + lens.read == 0);
        Some(if has_side {
            Some(self.store_side::<BE>(lens, tail, read)?)
        } else if same_ranges {
            None
        } else {
            Some(lens.empty()?)
        })
    }

    /// Counts a sample of `attr` in its event (a READ sample's members are counted as they
    /// are delivered) and widens the profile's time range with its `time` (if it has one).
    #[inline(always)]
    fn count_sample(&mut self, attr: u16, has_read: bool, t: u64, time: u64, period: u64) {
        if !has_read {
            if let Some(e) = self.p.events.get_mut(attr as usize) {
                e.samples += 1;
                e.period = e.period.saturating_add(period);
            }
        }
        if t & st::TIME != 0 {
            // Samples come (mostly) in time order: usually one compare and one store.
            let range = self.p.meta.time_range.get_or_insert((time, time));
            if time > range.1 {
                range.1 = time;
            } else if time < range.0 {
                range.0 = time;
            }
        }
    }

    /// PERF_SAMPLE_READ (perf's `deliver_sample_value`): fills `read_members` with the
    /// samples the values of a sample of `attr` become: one per value whose id names an event,
    /// with the period the counter moved since the last value of that id (per thread too for
    /// inherited counters, which the kernel reads per thread), and none for a counter that
    /// did not move. Updates the last values. A single value without an id is the sample's
    /// own event's.
    #[cold]
    #[inline(never)]
    pub(super) fn read_members(&mut self, attr: u16, tid: i32, vals: &[ReadValue]) {
        self.read_members.clear();
        let Some(a) = self.attrs.get(usize::from(attr)) else {
            return;
        };
        // perf_evsel__attr_has_per_thread_sample_period (perf >= 6.12).
        let per_thread = a.flags & flag::INHERIT != 0 && a.sample_type & st::TID != 0;
        let single = a.read_format & rf::GROUP == 0;
        for v in vals {
            let (member, key) = match v.id {
                Some(id) => match self.id_to_attr.get(&id) {
                    Some(&m) => (m, id),
                    None => {
                        self.warn(format!(
                            "PERF_SAMPLE_READ value of unknown id {id}; dropped as perf does"
                        ));
                        continue;
                    }
                },
                None if single => (attr, u64::MAX),
                None => {
                    self.warn(
                        "PERF_SAMPLE_READ group value without an id (no PERF_FORMAT_ID); dropped"
                            .into(),
                    );
                    continue;
                }
            };
            let last = if per_thread {
                self.read_last_per_thread.insert((key, tid), v.value)
            } else {
                self.read_last.insert(key, v.value)
            };
            let period = v.value.wrapping_sub(last.unwrap_or(0));
            if period != 0 {
                self.read_members.push((member, period, v.id));
            }
        }
    }

    /// Hands out the samples a READ sample became ([`Reader::read_members`]): the decoded
    /// sample (in `scratch[attr]`) once per member, under the member's event with its period
    /// and id. They share the call chain, branch entries and side data (the raw read values
    /// among them); `f0`/`b0` are where its frames and branch entries start (freed once
    /// streamed).
    #[cold]
    #[inline(never)]
    pub(super) fn deliver_members(
        &mut self,
        attr: u16,
        (f0, b0): (usize, usize),
        side: Option<SideLens>,
    ) {
        let members = std::mem::take(&mut self.read_members);
        let Some(sample) = self.scratch.get_mut(usize::from(attr)) else {
            self.read_members = members;
            return;
        };
        let own_id = sample.id;
        for &(event, period, id) in &members {
            if let Some(e) = self.p.events.get_mut(usize::from(event)) {
                e.samples += 1;
                e.period = e.period.saturating_add(period);
            }
            sample.event = event;
            sample.period = period;
            sample.id = id.or(own_id);
            match self.sink.as_mut() {
                Some(sink) => sink(&self.p, sample),
                None => self.p.samples.push(sample.clone()),
            }
        }
        sample.event = attr;
        sample.id = own_id;
        if self.sink.is_some() {
            // Streaming: the sample and its side data live only for the calls.
            self.p.frames.truncate(f0);
            self.p.branches.truncate(b0);
            if let Some(lens) = side {
                lens.truncate(&mut self.p);
            }
        }
        self.read_members = members;
    }

    /// Copies a sample's side data into the profile; returns its ranges there.
    #[cold]
    #[inline(never)]
    pub(super) fn store_side<const BE: bool>(
        &mut self,
        lens: SideLens,
        tail: Option<&SampleTail<'_>>,
        read: Option<Vec<ReadValue>>,
    ) -> Option<SideRanges> {
        if let Some(tl) = tail {
            self.p.raw.extend_from_slice(tl.raw);
            self.p
                .regs
                .extend(tl.regs.chunks_exact(8).map(|w| le_or_be::<BE>(w, 0)));
            self.p.stacks.extend_from_slice(tl.stack);
        }
        if let Some(vals) = read {
            self.p.read_values.extend(vals);
        }
        Some(SideRanges {
            raw: range32(lens.raw, self.p.raw.len())?,
            regs: range32(lens.regs, self.p.regs.len())?,
            stack: lens.stacks as u64..self.p.stacks.len() as u64,
            read: range32(lens.read, self.p.read_values.len())?,
        })
    }
}

/// A sample's fixed-size fields (IDENTIFIER .. PERIOD), read at its attr's offsets.
#[derive(Clone, Copy)]
pub(super) struct FixedValues<'b> {
    /// The fixed part of the record.
    pub(super) head: &'b [u8],
    /// Where each field sits in `head` (or that the attr does not record it).
    pub(super) sl: FixedFields,
    pub(super) ip: u64,
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) time: u64,
    pub(super) cpu: u32,
    /// The sample's period: recorded, or the attr's fixed period (1 in frequency mode).
    pub(super) period: u64,
}

impl<'b> FixedValues<'b> {
    /// Reads the fields every sample has a value for (absent ones: their defaults) from
    /// `head`, the fixed part of a sample of attr `a` laid out as `sl`.
    #[inline(always)]
    pub(super) fn read<const BE: bool>(head: &'b [u8], sl: FixedFields, a: &Attr) -> Self {
        let field = |off: u8| fixed_field::<BE>(head, off);
        let ip = field(sl.ip).unwrap_or(0);
        let (pid, tid) = field(sl.tid).map_or((-1, -1), |v| pid_tid(v, BE));
        let time = field(sl.time).unwrap_or(0);
        let cpu = match field(sl.cpu) {
            Some(v) if BE => (v >> 32) as u32,
            Some(v) => v as u32,
            None => 0,
        };
        let period = match field(sl.period) {
            Some(p) => p,
            None if a.flags & flag::FREQ == 0 => a.period_or_freq,
            None => 1,
        };
        FixedValues {
            head,
            sl,
            ip,
            pid,
            tid,
            time,
            cpu,
            period,
        }
    }
}

/// The fixed field at offset `off` of `head`; `None` when the attr does not record it.
#[inline(always)]
pub(super) fn fixed_field<const BE: bool>(head: &[u8], off: u8) -> Option<u64> {
    if off == FixedFields::ABSENT {
        None
    } else {
        Some(le_or_be::<BE>(head, usize::from(off)))
    }
}

/// The call chain's bytes (empty: none recorded, or chains skipped) and the fields after
/// it, from `pos` of the body of a sample of attr `a`. `None`: they do not fit.
#[inline(always)]
pub(super) fn chain_and_tail<'b, const BE: bool, const PLAIN: bool>(
    a: &Attr,
    body: &'b [u8],
    pos: usize,
    skip_chains: bool,
) -> Option<(&'b [u8], Option<SampleTail<'b>>)> {
    let t = a.sample_type;
    let mut c = FastCur::<BE>::new(body, pos);
    let mut chain: &[u8] = &[];
    if t & st::CALLCHAIN != 0 {
        let len = usize::try_from(c.u64()?).ok()?.checked_mul(8)?;
        if skip_chains && PLAIN {
            // Nothing after the chain to find: only check that it fits.
            if len > body.len().saturating_sub(c.pos) {
                return None;
            }
        } else {
            let bytes = c.bytes(len)?;
            if !skip_chains {
                chain = bytes;
            }
        }
    }
    let tail = if !PLAIN && t & st::AFTER_CHAIN != 0 {
        Some(sample_tail::<BE>(a, body, c.pos)?)
    } else {
        None
    };
    Some((chain, tail))
}

/// Fills the rarer fields of `sample`: with OPTIONAL fields in its type `t`, the fixed
/// ADDR, STREAM_ID and ID (from `fx`) and those after the call chain (from `tail`, or
/// their empty values); otherwise only the branch count and index.
#[inline(always)]
pub(super) fn fill_rare_fields<const BE: bool>(
    sample: &mut Sample,
    t: u64,
    fx: &FixedValues<'_>,
    tail: Option<&SampleTail<'_>>,
) {
    if t & st::OPTIONAL != 0 {
        let field = |off: u8| fixed_field::<BE>(fx.head, off);
        sample.addr = field(fx.sl.addr);
        sample.stream_id = field(fx.sl.stream_id);
        sample.id = field(fx.sl.id).or(field(fx.sl.identifier));
        let tl = tail.copied().unwrap_or_default();
        sample.branch_count = tl.branch_count;
        sample.branch_hw_index = tl.hw_index;
        sample.weight = tl.weight;
        sample.data_src = tl.data_src;
        sample.phys_addr = tl.phys_addr;
        sample.weight_struct = tl.weight_struct;
        sample.transaction = tl.transaction;
        sample.data_page_size = tl.data_page_size;
        sample.code_page_size = tl.code_page_size;
    } else if let Some(tl) = tail {
        sample.branch_count = tl.branch_count;
        sample.branch_hw_index = tl.hw_index;
    }
}

/// Resolves a sample's call chain (`chain`: the record's u64 entries) onto `frames`
/// (`unresolved`: every frame's location is that of an address in no mapping).
#[inline(always)]
pub(super) fn push_chain<const BE: bool>(
    st: &State,
    frames: &mut Vec<Frame>,
    chain: &[u8],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
    sampled: (CpuMode, u64, crate::model::Location),
) {
    // The sample's mode, IP and its location (the chain's first entry is usually the IP).
    let (cpumode, ip, location) = sampled;
    let f0 = frames.len();
    let mut mode = cpumode;
    for w in chain.chunks_exact(8) {
        let a = le_or_be::<BE>(w, 0);
        if a >= PERF_CONTEXT_MAX {
            mode = match a as i64 {
                -32 => CpuMode::Hypervisor,
                -128 => CpuMode::Kernel,
                -512 => CpuMode::User,
                _ => {
                    // Like perf: any other marker (guest contexts, -1 padding) makes the
                    // whole chain invalid, so it is dropped (reports must agree).
                    frames.truncate(f0);
                    break;
                }
            };
            continue;
        }
        // The chain's first entry is usually the sampled IP itself: resolved already.
        let loc = if a == ip && mode == cpumode {
            location
        } else if unresolved {
            crate::model::Location::unmapped(a)
        } else {
            st.resolve(user, mode, a)
        };
        frames.push(Frame {
            addr: a,
            cpumode: mode,
            location: loc,
        });
    }
}

/// Decodes a sample's branch-stack entries (`entries`: 24 bytes each) onto `branches`,
/// each end resolved as perf's thread__find_cpumode_addr_location does: in the process's
/// maps, else in the kernel's (`unresolved`: nowhere).
pub(super) fn push_branches<const BE: bool>(
    st: &State,
    branches: &mut Vec<BranchEntry>,
    entries: &[u8],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
) {
    let find = |addr: u64| -> (crate::model::Location, CpuMode) {
        let nowhere = crate::model::Location::unmapped(addr);
        if unresolved {
            return (nowhere, CpuMode::Unknown);
        }
        for mode in [CpuMode::User, CpuMode::Kernel] {
            let loc = st.resolve(user, mode, addr);
            if loc.dso.is_some() {
                return (loc, mode);
            }
        }
        (nowhere, CpuMode::Unknown)
    };
    branches.reserve(entries.len() / 24);
    for e in entries.chunks_exact(24) {
        let (from, to) = (le_or_be::<BE>(e, 0), le_or_be::<BE>(e, 8));
        let (from_location, from_cpumode) = find(from);
        let (to_location, to_cpumode) = find(to);
        branches.push(BranchEntry {
            from,
            to,
            flags: BranchEntry::flags_from_file(le_or_be::<BE>(e, 16), BE),
            from_location,
            from_cpumode,
            to_location,
            to_cpumode,
        });
    }
}

/// Index (in entries) of the `PERF_CONTEXT_USER` marker of a call chain, if it has one.
pub(super) fn user_context_start<const BE: bool>(chain: &[u8]) -> Option<usize> {
    chain
        .chunks_exact(8)
        .position(|w| le_or_be::<BE>(w, 0) == PERF_CONTEXT_USER)
        .map(|i| i * 8)
}

/// The user part of an LBR call chain (perf's lbr_callchain_add_lbr_ip, callee order): the
/// target of the most recent call (the current function), then the call sites of the
/// call stack's entries, innermost first, all resolved in user mode.
pub(super) fn push_lbr_user_chain(
    st: &State,
    frames: &mut Vec<Frame>,
    stack: &[BranchEntry],
    user: Option<&crate::state::Maps>,
    unresolved: bool,
) {
    let Some(first) = stack.first() else {
        return;
    };
    let addrs = std::iter::once(first.to).chain(stack.iter().map(|e| e.from));
    for addr in addrs {
        let location = if unresolved {
            crate::model::Location::unmapped(addr)
        } else {
            st.resolve(user, CpuMode::User, addr)
        };
        frames.push(Frame {
            addr,
            cpumode: CpuMode::User,
            location,
        });
    }
}

/// The fields of a SAMPLE record after its call chain (RAW .. AUX): rare outside precise
/// and DWARF recordings.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct SampleTail<'b> {
    pub(super) raw: &'b [u8],
    pub(super) branch_count: u32,
    /// The branch entries' bytes (24 per entry).
    pub(super) branches: &'b [u8],
    /// PERF_SAMPLE_BRANCH_HW_INDEX, when the attr records it.
    pub(super) hw_index: Option<u64>,
    pub(super) regs: &'b [u8],
    pub(super) stack: &'b [u8],
    pub(super) weight: Option<u64>,
    pub(super) weight_struct: Option<u64>,
    pub(super) data_src: Option<u64>,
    pub(super) transaction: Option<u64>,
    pub(super) phys_addr: Option<u64>,
    pub(super) data_page_size: Option<u64>,
    pub(super) code_page_size: Option<u64>,
}

impl SampleTail<'_> {
    pub(super) fn has_side(&self) -> bool {
        !self.raw.is_empty() || !self.regs.is_empty() || !self.stack.is_empty()
    }
}

/// Decodes the fields after the call chain, from `pos` of the sample body.
#[inline(never)]
pub(super) fn sample_tail<'b, const BE: bool>(
    a: &Attr,
    body: &'b [u8],
    pos: usize,
) -> Option<SampleTail<'b>> {
    let t = a.sample_type;
    let has = |b: u64| t & b != 0;
    let mut c = FastCur::<BE>::new(body, pos);
    let mut tl = SampleTail::default();
    if has(st::RAW) {
        let n = c.u32()? as usize;
        tl.raw = c.bytes(n)?;
    }
    if has(st::BRANCH_STACK) {
        let nr = c.u64()?;
        if a.branch_sample_type & BRANCH_HW_INDEX != 0 {
            tl.hw_index = Some(c.u64()?);
        }
        let nr_us = usize::try_from(nr).ok()?;
        tl.branches = c.bytes(nr_us.checked_mul(24)?)?;
        if a.branch_sample_type & BRANCH_COUNTERS != 0 {
            c.skip(nr_us.checked_mul(8)?)?;
        }
        tl.branch_count = u32::try_from(nr).unwrap_or(u32::MAX);
    }
    if has(st::REGS_USER) {
        let abi = c.u64()?;
        if abi != 0 {
            tl.regs = c.bytes(a.sample_regs_user.count_ones() as usize * 8)?;
        }
    }
    if has(st::STACK_USER) {
        let size = usize::try_from(c.u64()?).ok()?;
        let data = c.bytes(size)?;
        tl.stack = if size != 0 {
            let dyn_size = usize::try_from(c.u64()?).unwrap_or(usize::MAX);
            data.get(..dyn_size.min(size)).unwrap_or(data)
        } else {
            data
        };
    }
    if t & st::AFTER_STACK != 0 {
        // The rarer trailing fields (precise samples): in record order.
        if has(st::WEIGHT_STRUCT) {
            let w = c.u64()?;
            (tl.weight, tl.weight_struct) = (Some(w & 0xffff_ffff), Some(w));
        } else if has(st::WEIGHT) {
            tl.weight = Some(c.u64()?);
        }
        if has(st::DATA_SRC) {
            tl.data_src = Some(c.u64()?);
        }
        if has(st::TRANSACTION) {
            tl.transaction = Some(c.u64()?);
        }
        if has(st::REGS_INTR) {
            let abi = c.u64()?;
            if abi != 0 {
                c.skip(a.sample_regs_intr.count_ones() as usize * 8)?;
            }
        }
        if has(st::PHYS_ADDR) {
            tl.phys_addr = Some(c.u64()?);
        }
        if has(st::CGROUP) {
            c.u64()?;
        }
        if has(st::DATA_PAGE_SIZE) {
            tl.data_page_size = Some(c.u64()?);
        }
        if has(st::CODE_PAGE_SIZE) {
            tl.code_page_size = Some(c.u64()?);
        }
        if has(st::AUX) {
            let n = usize::try_from(c.u64()?).ok()?;
            c.skip(n)?;
        }
    }
    Some(tl)
}

/// Where a sample's side data sits in the profile's arrays.
pub(super) struct SideRanges {
    pub(super) raw: std::ops::Range<u32>,
    pub(super) regs: std::ops::Range<u32>,
    pub(super) stack: std::ops::Range<u64>,
    pub(super) read: std::ops::Range<u32>,
}

/// The lengths of the profile's side-data arrays before a sample (its empty ranges, and
/// where streaming truncates them back to).
#[derive(Clone, Copy)]
pub(super) struct SideLens {
    pub(super) raw: usize,
    pub(super) regs: usize,
    pub(super) stacks: usize,
    pub(super) read: usize,
}

impl SideLens {
    #[inline(always)]
    pub(super) fn of(p: &Profile) -> SideLens {
        SideLens {
            raw: p.raw.len(),
            regs: p.regs.len(),
            stacks: p.stacks.len(),
            read: p.read_values.len(),
        }
    }

    #[inline(always)]
    pub(super) fn empty(&self) -> Option<SideRanges> {
        // One test for the three 32-bit ranges.
        if self.raw | self.regs | self.read > u32::MAX as usize {
            return None;
        }
        let (raw, regs, read) = (self.raw as u32, self.regs as u32, self.read as u32);
        Some(SideRanges {
            raw: raw..raw,
            regs: regs..regs,
            stack: self.stacks as u64..self.stacks as u64,
            read: read..read,
        })
    }

    pub(super) fn truncate(&self, p: &mut Profile) {
        p.raw.truncate(self.raw);
        p.regs.truncate(self.regs);
        p.stacks.truncate(self.stacks);
        p.read_values.truncate(self.read);
    }
}

pub(super) fn range32(a: usize, b: usize) -> Option<std::ops::Range<u32>> {
    Some(u32::try_from(a).ok()?..u32::try_from(b).ok()?)
}

/// PERF_SAMPLE_READ: one value (or a group) as laid out by read_format.
pub(super) fn read_values(c: &mut Cur, f: u64) -> Option<Vec<ReadValue>> {
    let opt = |c: &mut Cur, bit: u64| -> Option<Option<u64>> {
        if f & bit != 0 {
            Some(Some(c.u64()?))
        } else {
            Some(None)
        }
    };
    if f & rf::GROUP != 0 {
        let nr = usize::try_from(c.u64()?).ok()?;
        let enabled = opt(c, rf::TOTAL_TIME_ENABLED)?;
        let running = opt(c, rf::TOTAL_TIME_RUNNING)?;
        // Each entry is at least 8 bytes: a lying count fails before allocating much.
        if nr > c.remaining() / 8 {
            return None;
        }
        let mut v = Vec::with_capacity(nr);
        for _ in 0..nr {
            let value = c.u64()?;
            let id = opt(c, rf::ID)?;
            let lost = opt(c, rf::LOST)?;
            v.push(ReadValue {
                value,
                id,
                lost,
                time_enabled: enabled,
                time_running: running,
            });
        }
        Some(v)
    } else {
        let value = c.u64()?;
        let time_enabled = opt(c, rf::TOTAL_TIME_ENABLED)?;
        let time_running = opt(c, rf::TOTAL_TIME_RUNNING)?;
        let id = opt(c, rf::ID)?;
        let lost = opt(c, rf::LOST)?;
        Some(vec![ReadValue {
            value,
            id,
            lost,
            time_enabled,
            time_running,
        }])
    }
}
