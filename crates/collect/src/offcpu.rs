//! Off-CPU time (`culprit record --off-cpu`): samples of an `offcpu-time` event, one per
//! interval a thread spent blocked, weighted by the nanoseconds it was off the CPU and
//! carrying the call chain (and, with `--call-graph dwarf`, the user registers and stack)
//! where it blocked.
//!
//! How: the recording adds a `sched:sched_switch` tracepoint with call chains and raw data
//! (it fires in the context of the task leaving the CPU: its stack is where the task
//! blocked) and sets `context_switch` on the first event, so the kernel also writes a
//! PERF_RECORD_SWITCH when a task comes back. [`OffCpu`] watches the records of each pass
//! over the ring buffers, in time order: a sched_switch sample whose `prev_state` says the
//! task blocked (not preempted: state bits other than running) opens an interval for its
//! thread; the thread's next switch-in closes it, and a sample of `offcpu-time` is appended
//! to the pass, timed at the switch-in, its period the interval's length. The samples are
//! ordinary PERF_RECORD_SAMPLEs of an extra attr in the file (perf's own event name for
//! `--off-cpu`, `offcpu-time`), so every reader — perf report, culprit's report,
//! flamegraph, export and trace — shows them with no special case, apart from on-CPU
//! samples with `--event offcpu-time` or together with them.
//!
//! Why at record time and not when reading: the file is then self-contained and perf reads
//! the off-CPU time too; the cost is one extra sample per blocked interval.

use std::collections::HashMap;

use culprit_decode::abi::{attr_flag, perf_type, record_type, sample_type};

use crate::error::RecordError;
use crate::events::{EventParser, EventSpec};
use crate::perfdata::Attr;
use crate::tracefs::{Tracefs, TracefsError};

/// The name of the synthesized event (perf's for `--off-cpu`).
pub const EVENT_NAME: &str = "offcpu-time";

/// The sample id of the synthesized event's samples. Kernel ids count up from 1 over the
/// machine's uptime; this one is never handed out.
pub const EVENT_ID: u64 = u64::MAX - 0xffc0;

/// `PERF_COUNT_SW_BPF_OUTPUT`: the software event perf's `offcpu-time` attr uses.
const SW_BPF_OUTPUT: u64 = 10;

/// `PERF_RECORD_SWITCH` and `PERF_RECORD_SWITCH_CPU_WIDE`.
const SWITCH: u32 = 14;
const SWITCH_CPU_WIDE: u32 = 15;
/// `PERF_RECORD_MISC_SWITCH_OUT`.
const MISC_SWITCH_OUT: u16 = 1 << 13;

/// `prev_state` bits that mean the task left the CPU without being runnable (S, D, T, t,
/// X, Z, P, I). A preempted task reports `TASK_REPORT_MAX` (0x100, "R+") or 0: not blocked.
const BLOCKED_STATES: u64 = 0xff;

/// The attr of the synthesized `offcpu-time` samples, given the sched_switch event's attr
/// (its call-chain, register and stack settings are copied, so readers unwind both alike)
/// and the first event's (the `sample_id` trailer must match every event's).
pub fn event_attr(switch: &Attr) -> Attr {
    let keep = sample_type::CALLCHAIN | sample_type::REGS_USER | sample_type::STACK_USER;
    Attr {
        attr_type: perf_type::SOFTWARE,
        config: SW_BPF_OUTPUT,
        sample_period_or_freq: 1,
        sample_type: sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::PERIOD
            | (switch.sample_type & keep),
        read_format: 0,
        flags: attr_flag::DISABLED
            | attr_flag::SAMPLE_ID_ALL
            | attr_flag::EXCLUDE_GUEST
            | (switch.flags & attr_flag::EXCLUDE_CALLCHAIN_USER),
        sample_regs_user: switch.sample_regs_user,
        sample_stack_user: switch.sample_stack_user,
        ..Attr::default()
    }
}

/// The index of the `sched:sched_switch` event in `specs`, added at the end when the user
/// did not ask for it.
pub fn switch_event(specs: &mut Vec<EventSpec>) -> Result<usize, RecordError> {
    if let Some(i) = specs
        .iter()
        .position(|s| s.attr_type == perf_type::TRACEPOINT && s.name == SWITCH_EVENT)
    {
        return Ok(i);
    }
    let spec = EventParser::system()
        .tracepoints(SWITCH_EVENT)
        .map_err(|e| {
            RecordError::Invalid(format!(
                "--off-cpu needs the {SWITCH_EVENT} tracepoint: {e}"
            ))
        })?;
    specs.extend(spec);
    Ok(specs.len() - 1)
}

/// The tracepoint `--off-cpu` records.
pub const SWITCH_EVENT: &str = "sched:sched_switch";

/// The tracepoint `--off-cpu=wakers` adds: fired by the waker, for the wakee (`pid`).
pub const WAKING_EVENT: &str = "sched:sched_waking";

/// The index of the `sched:sched_waking` event in `specs`, added at the end when the user
/// did not ask for it.
pub fn waking_event(specs: &mut Vec<EventSpec>) -> Result<usize, RecordError> {
    if let Some(i) = specs
        .iter()
        .position(|s| s.attr_type == perf_type::TRACEPOINT && s.name == WAKING_EVENT)
    {
        return Ok(i);
    }
    let spec = EventParser::system()
        .tracepoints(WAKING_EVENT)
        .map_err(|e| {
            RecordError::Invalid(format!(
                "--off-cpu=wakers needs the {WAKING_EVENT} tracepoint: {e}"
            ))
        })?;
    specs.extend(spec);
    Ok(specs.len() - 1)
}

/// The tracing data (tracepoint formats) of the tracepoint events among `specs`, for the
/// file (HEADER_TRACING_DATA) or the stream (a TRACING_DATA record); `None` without
/// tracepoints.
pub fn tracing_data(specs: &[EventSpec]) -> Result<Option<Vec<u8>>, RecordError> {
    let events: Vec<(String, String)> = specs
        .iter()
        .filter(|s| s.attr_type == perf_type::TRACEPOINT)
        .filter_map(|s| s.name.split_once(':'))
        .map(|(sys, name)| (sys.to_string(), name.to_string()))
        .collect();
    if events.is_empty() {
        return Ok(None);
    }
    let tracefs = Tracefs::system().ok_or_else(|| {
        RecordError::Invalid(
            TracefsError::NotMounted {
                event: format!("{}:{}", events[0].0, events[0].1),
            }
            .to_string(),
        )
    })?;
    tracefs
        .tracing_data(&events)
        .map(Some)
        .map_err(|e| RecordError::Invalid(e.to_string()))
}

/// Where the task blocked: its sched_switch sample's parts.
#[derive(Debug, Clone)]
struct Blocked {
    time: u64,
    pid: u32,
    ip: u64,
    misc: u16,
    /// The call chain (`nr` and the entries) and, when sampled, the user registers and
    /// stack, as the sample holds them.
    tail: Vec<u8>,
}

/// One record of a pass that matters here, with its time (for ordering the pass).
enum Seen {
    Out { tid: u32, blocked: Blocked },
    Preempted { tid: u32 },
    In { tid: u32, pid: u32, cpu: u32 },
}

/// Turns context switches into `offcpu-time` samples (module docs).
#[derive(Debug)]
pub struct OffCpu {
    /// Sample ids of the sched_switch event (one per CPU and task).
    switch_ids: Vec<u64>,
    /// The sched_switch attr's sample_type (to find the parts of its samples).
    switch_type: u64,
    /// Its user registers mask (their count sizes the register block).
    regs_mask: u64,
    /// Byte offset of `prev_state` in the raw record, and its size.
    prev_state: (usize, usize),
    /// The id trailer's layout of non-sample records: (offset of tid from the trailer's
    /// start, of time, of cpu, trailer length).
    trailer: (usize, usize, usize, usize),
    /// Blocked threads by tid.
    blocked: HashMap<u32, Blocked>,
    /// Samples written.
    pub samples: u64,
    /// Nanoseconds of off-CPU time written.
    pub total_ns: u64,
}

fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

impl OffCpu {
    /// A converter for the sched_switch event with these ids and attr, whose raw records
    /// hold `prev_state` at `prev_state` (offset, size: from the tracepoint's format);
    /// `first` is the attr whose `sample_id` trailer every non-sample record carries.
    pub fn new(
        switch_ids: Vec<u64>,
        switch: &Attr,
        prev_state: (usize, usize),
        first: &Attr,
    ) -> OffCpu {
        // The trailer: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER (those set).
        let st = first.sample_type;
        let mut at = 0;
        let mut place = |bit: u64| {
            let here = at;
            if st & bit != 0 {
                at += 8;
            }
            here
        };
        let tid = place(sample_type::TID);
        let time = place(sample_type::TIME);
        place(sample_type::ID);
        place(sample_type::STREAM_ID);
        let cpu = place(sample_type::CPU);
        place(sample_type::IDENTIFIER);
        OffCpu {
            switch_ids,
            switch_type: switch.sample_type,
            regs_mask: switch.sample_regs_user,
            prev_state,
            trailer: (tid, time, cpu, at),
            blocked: HashMap::new(),
            samples: 0,
            total_ns: 0,
        }
    }

    /// [`OffCpu::new`] with `prev_state`'s place read from this machine's sched_switch
    /// format.
    pub fn for_switch_event(
        switch_ids: Vec<u64>,
        switch: &Attr,
        first: &Attr,
    ) -> Result<OffCpu, RecordError> {
        let (sys, name) = SWITCH_EVENT
            .split_once(':')
            .unwrap_or(("sched", "sched_switch"));
        let format = Tracefs::system()
            .ok_or_else(|| {
                TracefsError::NotMounted {
                    event: SWITCH_EVENT.to_string(),
                }
                .to_string()
            })
            .and_then(|t| t.format(sys, name).map_err(|e| e.to_string()))
            .map_err(|e| RecordError::Invalid(format!("--off-cpu: {e}")))?;
        let field = format.field("prev_state").ok_or_else(|| {
            RecordError::Invalid(format!(
                "--off-cpu: the {SWITCH_EVENT} format of this kernel has no prev_state field"
            ))
        })?;
        Ok(OffCpu::new(
            switch_ids,
            switch,
            (field.offset as usize, field.size as usize),
            first,
        ))
    }

    /// A sched_switch sample: whether its task blocked, and where.
    fn switch_sample(&self, misc: u16, r: &[u8]) -> Option<Seen> {
        // IDENTIFIER, IP, TID, TIME, CPU, PERIOD, CALLCHAIN, RAW, REGS_USER, STACK_USER
        // (what `record` asks of the sched_switch event; READ and the rest are not set).
        let ip = rd_u64(r, 16)?;
        let pid = rd_u32(r, 24)?;
        let tid = rd_u32(r, 28)?;
        let time = rd_u64(r, 32)?;
        let mut pos = 56;
        let chain_start = pos;
        let nr = usize::try_from(rd_u64(r, pos)?).ok()?;
        pos = pos.checked_add(8usize.checked_add(nr.checked_mul(8)?)?)?;
        let chain_end = pos;
        let raw_size = rd_u32(r, pos)? as usize;
        let raw = r.get(pos + 4..pos + 4 + raw_size)?;
        pos += 4 + raw_size;
        let (off, size) = self.prev_state;
        let state = match size {
            8 => rd_u64(raw, off)?,
            4 => u64::from(rd_u32(raw, off)?),
            _ => return None,
        };
        if state & BLOCKED_STATES == 0 {
            return Some(Seen::Preempted { tid });
        }
        let mut tail = r.get(chain_start..chain_end)?.to_vec();
        if self.switch_type & sample_type::REGS_USER != 0 {
            let abi = rd_u64(r, pos)?;
            let n = if abi == 0 {
                8
            } else {
                8 + 8 * self.regs_mask.count_ones() as usize
            };
            tail.extend_from_slice(r.get(pos..pos + n)?);
            pos += n;
        }
        if self.switch_type & sample_type::STACK_USER != 0 {
            let size = usize::try_from(rd_u64(r, pos)?).ok()?;
            let n = if size == 0 { 8 } else { 16 + size };
            tail.extend_from_slice(r.get(pos..pos.checked_add(n)?)?);
        }
        Some(Seen::Out {
            tid,
            blocked: Blocked {
                time,
                pid,
                ip,
                misc,
                tail,
            },
        })
    }

    /// Looks at one pass over the rings (whole records, as drained) and appends an
    /// `offcpu-time` sample for every blocked interval that ended in it.
    pub fn extend(&mut self, buf: &mut Vec<u8>) {
        let mut seen: Vec<(u64, Seen)> = Vec::new();
        let mut pos = 0;
        while pos + 8 <= buf.len() {
            let ty = rd_u32(buf, pos).unwrap_or(0);
            let misc = u16::from_le_bytes([buf[pos + 4], buf[pos + 5]]);
            let size = u16::from_le_bytes([buf[pos + 6], buf[pos + 7]]) as usize;
            if size < 8 || pos + size > buf.len() {
                break;
            }
            let r = &buf[pos..pos + size];
            pos += size;
            match ty {
                record_type::SAMPLE => {
                    let Some(id) = rd_u64(r, 8) else { continue };
                    if !self.switch_ids.contains(&id) {
                        continue;
                    }
                    let time = rd_u64(r, 32).unwrap_or(0);
                    if let Some(s) = self.switch_sample(misc, r) {
                        seen.push((time, s));
                    }
                }
                SWITCH | SWITCH_CPU_WIDE if misc & MISC_SWITCH_OUT == 0 => {
                    let (tid_at, time_at, cpu_at, len) = self.trailer;
                    let Some(t) = r.len().checked_sub(len) else {
                        continue;
                    };
                    let (Some(pid), Some(tid), Some(time), Some(cpu)) = (
                        rd_u32(r, t + tid_at),
                        rd_u32(r, t + tid_at + 4),
                        rd_u64(r, t + time_at),
                        rd_u32(r, t + cpu_at),
                    ) else {
                        continue;
                    };
                    seen.push((time, Seen::In { tid, pid, cpu }));
                }
                _ => {}
            }
        }
        // The rings are drained one after another: a thread that blocked on one CPU and
        // woke on another has its records in two rings. Time order puts them right.
        seen.sort_by_key(|(t, _)| *t);
        for (time, s) in seen {
            match s {
                Seen::Out { tid, blocked } => {
                    self.blocked.insert(tid, blocked);
                }
                Seen::Preempted { tid } => {
                    self.blocked.remove(&tid);
                }
                Seen::In { tid, pid, cpu } => {
                    if let Some(b) = self.blocked.remove(&tid) {
                        if time > b.time && b.pid == pid {
                            self.push_sample(buf, tid, cpu, time, &b);
                        }
                    }
                }
            }
        }
    }

    /// Appends one `offcpu-time` sample (layout of [`event_attr`]).
    fn push_sample(&mut self, buf: &mut Vec<u8>, tid: u32, cpu: u32, time: u64, b: &Blocked) {
        let period = time - b.time;
        let size = 8 + 48 + b.tail.len();
        let Ok(size16) = u16::try_from(size) else {
            return; // cannot happen: the tail came from a record of at most 64 KiB
        };
        buf.extend_from_slice(&record_type::SAMPLE.to_le_bytes());
        buf.extend_from_slice(&b.misc.to_le_bytes());
        buf.extend_from_slice(&size16.to_le_bytes());
        buf.extend_from_slice(&EVENT_ID.to_le_bytes());
        buf.extend_from_slice(&b.ip.to_le_bytes());
        buf.extend_from_slice(&b.pid.to_le_bytes());
        buf.extend_from_slice(&tid.to_le_bytes());
        buf.extend_from_slice(&time.to_le_bytes());
        buf.extend_from_slice(&cpu.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&period.to_le_bytes());
        buf.extend_from_slice(&b.tail);
        self.samples += 1;
        self.total_ns += period;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Attr = Attr {
        attr_type: 1,
        config: 0,
        sample_period_or_freq: 1,
        sample_type: sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::PERIOD,
        read_format: 0,
        flags: 0,
        wakeup_events: 0,
        bp_type: 0,
        config1: 0,
        config2: 0,
        sample_regs_user: 0,
        sample_stack_user: 0,
    };

    fn switch_attr() -> Attr {
        Attr {
            attr_type: perf_type::TRACEPOINT,
            sample_type: FIRST.sample_type | sample_type::CALLCHAIN | sample_type::RAW,
            ..FIRST
        }
    }

    /// A sched_switch sample of `tid` at `time` with `state` at raw offset 32 and a
    /// two-frame chain.
    fn out(tid: u32, time: u64, state: u64, cpu: u32) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&7u64.to_le_bytes()); // id
        body.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes()); // ip
        body.extend_from_slice(&tid.to_le_bytes()); // pid
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        body.extend_from_slice(&cpu.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&1u64.to_le_bytes()); // period
        body.extend_from_slice(&2u64.to_le_bytes());
        body.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        body.extend_from_slice(&0x40_1000u64.to_le_bytes());
        let mut raw = vec![0u8; 68];
        raw[32..40].copy_from_slice(&state.to_le_bytes());
        body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        body.extend_from_slice(&raw);
        let mut r = 9u32.to_le_bytes().to_vec();
        r.extend_from_slice(&1u16.to_le_bytes());
        r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        r.extend_from_slice(&body);
        r
    }

    /// A PERF_RECORD_SWITCH (in) of `tid` with FIRST's trailer.
    fn switch_in(tid: u32, time: u64, cpu: u32) -> Vec<u8> {
        let mut r = SWITCH.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&40u16.to_le_bytes());
        r.extend_from_slice(&tid.to_le_bytes());
        r.extend_from_slice(&tid.to_le_bytes());
        r.extend_from_slice(&time.to_le_bytes());
        r.extend_from_slice(&cpu.to_le_bytes());
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&7u64.to_le_bytes());
        r
    }

    #[test]
    fn test_blocked_intervals_become_weighted_samples_across_rings_and_passes() {
        let mut o = OffCpu::new(vec![7], &switch_attr(), (32, 8), &FIRST);
        // Pass 1: ring 0 holds the switch-in of thread 5 (on CPU 0), ring 1 its switch-out
        // before it (on CPU 1): ordered by time, one sample of 2,000 ns. Thread 6 blocks.
        let mut buf = [
            switch_in(5, 3000, 0),
            out(5, 1000, 1, 1),
            out(6, 2500, 2, 1),
        ]
        .concat();
        let before = buf.len();
        o.extend(&mut buf);
        assert_eq!(o.samples, 1);
        let s = &buf[before..];
        assert_eq!(rd_u64(s, 8), Some(EVENT_ID));
        assert_eq!(rd_u32(s, 28), Some(5));
        assert_eq!(rd_u64(s, 32), Some(3000), "timed at the switch-in");
        assert_eq!(rd_u32(s, 40), Some(0), "on the CPU it came back to");
        assert_eq!(rd_u64(s, 48), Some(2000), "period: the ns off CPU");
        assert_eq!(rd_u64(s, 56), Some(2), "the call chain where it blocked");
        assert_eq!(rd_u64(s, 72), Some(0x40_1000));
        assert_eq!(s.len(), u16::from_le_bytes([s[6], s[7]]) as usize);
        // Pass 2: thread 6 comes back; thread 7 was preempted (R+), not blocked.
        let mut buf = [
            out(7, 4000, 0x100, 0),
            switch_in(7, 4100, 0),
            switch_in(6, 9000, 1),
        ]
        .concat();
        o.extend(&mut buf);
        assert_eq!(o.samples, 2);
        assert_eq!(o.total_ns, 2000 + 6500);
    }

    #[test]
    fn test_damaged_records_are_skipped_without_panicking() {
        let mut o = OffCpu::new(vec![7], &switch_attr(), (32, 8), &FIRST);
        let whole = [out(5, 1000, 1, 1), switch_in(5, 3000, 0)].concat();
        for cut in 0..whole.len() {
            let mut b = whole[..cut].to_vec();
            o.extend(&mut b);
        }
        // A lying call-chain length.
        let mut bad = out(5, 1000, 1, 1);
        bad[56..64].copy_from_slice(&u64::MAX.to_le_bytes());
        bad.extend(switch_in(5, 3000, 0));
        o.extend(&mut bad);
    }
}
