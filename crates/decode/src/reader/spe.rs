//! ARM SPE in a recording, as perf 6.1's `arm-spe.c` handles it: an AUXTRACE_INFO record of
//! type ARM_SPE turns decoding on; each AUXTRACE record's data is decoded into SPE records
//! (crate::spe) on its queue; at the end of the read the records become samples of perf's
//! synthesised events (`l1d-miss` ... `memory`), appended after the events of the file's attrs.
//!
//! perf decodes a file without PERF_SAMPLE_TIME ("timeless") queue by queue at the end of the
//! session, so its SPE samples come after every other sample, in queue order; a timed file
//! interleaves them with the other samples by time, which culprit does not: they come last,
//! the queues merged by time as perf merges them.

use super::*;
use crate::spe::{self, SpeEvent, SpeRecord};

/// `PERF_AUXTRACE_ARM_SPE`, AUXTRACE_INFO's type for SPE.
const AUXTRACE_ARM_SPE: u32 = 4;
/// `PERF_RECORD_TIME_CONV`.
pub(super) const RECORD_TIME_CONV: u32 = 79;
/// Where perf puts the kernel when it knows no kernel map (`machine__get_kernel_start`): PCs
/// from here up are kernel samples.
const DEFAULT_KERNEL_START: u64 = 1 << 63;
/// The sample fields perf 6.1 adds to the SPE attr's for the synthesised events.
const SYNTH_SAMPLE_TYPE: u64 = st::IP | st::TID | st::PERIOD | st::DATA_SRC | st::WEIGHT | st::ADDR;

/// perf's `perf_tsc_conversion` from a TIME_CONV record: SPE timestamps to perf time.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TimeConv {
    shift: u64,
    mult: u64,
    zero: u64,
    cycles: u64,
    mask: u64,
    short: bool,
}

impl TimeConv {
    /// perf's `tsc_to_perf_time`; all zero (no TIME_CONV record) gives 0, as in perf.
    fn perf_time(&self, timestamp: u64) -> u64 {
        let cycles = if self.short {
            self.cycles
                .wrapping_add(timestamp.wrapping_sub(self.cycles) & self.mask)
        } else {
            timestamp
        };
        let shift = self.shift.min(63) as u32;
        let quotient = cycles >> shift;
        let remainder = cycles & ((1u64 << shift) - 1);
        self.zero
            .wrapping_add(quotient.wrapping_mul(self.mult))
            .wrapping_add(remainder.wrapping_mul(self.mult) >> shift)
    }
}

/// The order perf's timed decoding delivers `queued` in: each queue in buffer order, the
/// queues merged by the timestamp of their next record (perf's auxtrace heap; ties by queue
/// number).
fn merged_by_time(queued: &[QueuedRecord]) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::{BTreeMap, BinaryHeap, VecDeque};
    let mut queues: BTreeMap<u32, VecDeque<usize>> = BTreeMap::new();
    for (i, q) in queued.iter().enumerate() {
        queues.entry(q.queue).or_default().push_back(i);
    }
    let next_key = |i: usize| (queued[i].record.timestamp.unwrap_or(0), queued[i].queue);
    let mut heap: BinaryHeap<Reverse<((u64, u32), u32)>> = queues
        .iter()
        .filter_map(|(&queue, records)| records.front().map(|&i| Reverse((next_key(i), queue))))
        .collect();
    let mut order = Vec::with_capacity(queued.len());
    while let Some(Reverse((_, queue))) = heap.pop() {
        let Some(records) = queues.get_mut(&queue) else {
            continue;
        };
        if let Some(i) = records.pop_front() {
            order.push(i);
        }
        if let Some(&i) = records.front() {
            heap.push(Reverse((next_key(i), queue)));
        }
    }
    order
}

/// One decoded SPE record and the AUX queue it came from.
#[derive(Debug)]
struct QueuedRecord {
    /// AUXTRACE `idx`: perf's queue number (a CPU's index, or a thread's).
    queue: u32,
    /// AUXTRACE `tid` (-1 for a per-CPU queue).
    tid: i32,
    /// AUXTRACE `cpu`.
    cpu: u32,
    record: SpeRecord,
}

/// SPE decoding state of a read.
#[derive(Debug, Default)]
pub(super) struct SpeDecoding {
    /// The SPE PMU's `perf_event_attr.type` (AUXTRACE_INFO priv[0]).
    pmu_type: u64,
    records: Vec<QueuedRecord>,
    time_conv: TimeConv,
    /// Undecodable bytes skipped in the AUX data.
    skipped_bytes: u64,
}

impl Reader<'_, '_> {
    /// PERF_RECORD_AUXTRACE_INFO: u32 type, u32 reserved, then the PMU's private words (for
    /// SPE, priv[0] is the PMU type; perf 6.1 reads no more). Other AUX kinds stay undecoded.
    pub(super) fn auxtrace_info(&mut self, body: &[u8]) {
        let kind = Cur::new(body, self.be).u32();
        match (kind, u64_at(body, 8, self.be)) {
            (Some(AUXTRACE_ARM_SPE), Some(pmu_type)) => {
                if self.spe.is_none() {
                    // As perf, the conversion is the one known now (perf record writes
                    // TIME_CONV before AUXTRACE_INFO; a later one is not used).
                    self.spe = Some(SpeDecoding {
                        pmu_type,
                        time_conv: self.time_conv,
                        ..SpeDecoding::default()
                    });
                    self.build_events();
                }
            }
            _ => {
                if !self.p.warnings.iter().any(|w| w == header::AUX_NOT_DECODED) {
                    self.warn(header::AUX_NOT_DECODED.into());
                }
            }
        }
    }

    /// PERF_RECORD_TIME_CONV: time_shift, time_mult, time_zero, then (newer perf)
    /// time_cycles, time_mask, cap_user_time_zero, cap_user_time_short.
    pub(super) fn time_conv(&mut self, body: &[u8]) {
        let word = |i: usize| u64_at(body, i * 8, self.be);
        let (Some(shift), Some(mult), Some(zero)) = (word(0), word(1), word(2)) else {
            return;
        };
        let (cycles, mask) = (word(3).unwrap_or(0), word(4).unwrap_or(0));
        let short = body.get(41).is_some_and(|&b| b != 0);
        self.time_conv = TimeConv {
            shift,
            mult,
            zero,
            cycles,
            mask,
            short,
        };
    }

    /// PERF_RECORD_AUXTRACE with its data `aux`: body is u64 size, offset, reference, then
    /// u32 idx, tid, cpu. Decoded only by the share that delivers the record.
    pub(super) fn auxtrace(&mut self, body: &[u8], aux: &[u8]) {
        if self.part.lite {
            return;
        }
        let Some(spe) = self.spe.as_mut() else {
            return;
        };
        let mut c = Cur::new(body.get(24..).unwrap_or(&[]), self.be);
        let (Some(queue), Some(tid), Some(cpu)) = (c.u32(), c.u32(), c.u32()) else {
            return;
        };
        let (records, skipped) = spe::decode_records(aux);
        spe.skipped_bytes = spe.skipped_bytes.saturating_add(skipped as u64);
        spe.records
            .extend(records.into_iter().map(|record| QueuedRecord {
                queue,
                tid: tid as i32,
                cpu,
                record,
            }));
    }

    /// Stream mode: an AUXTRACE record's data runs past the chunk and is skipped, not
    /// decoded; said once.
    pub(super) fn spe_data_skipped(&mut self) {
        const WARNING: &str = "ARM SPE: AUX data that spans the chunks of a streamed input is \
            skipped, not decoded (read the file itself to decode it all)";
        if !self.p.warnings.iter().any(|w| w == WARNING) {
            self.warn(WARNING.into());
        }
    }

    /// The events perf synthesises from SPE, made from the SPE attr, after the attrs' events.
    pub(super) fn build_spe_events(&mut self) {
        let Some(spe) = &self.spe else {
            return;
        };
        let Some(base) = self
            .p
            .events
            .iter()
            .take(self.attrs.len())
            .find(|e| u64::from(e.attr_type) == spe.pmu_type)
            .cloned()
        else {
            return;
        };
        let mut sample_type = base.sample_type | SYNTH_SAMPLE_TYPE;
        if base.sample_type & st::TIME == 0 {
            sample_type &= !st::TIME;
        }
        for (k, event) in spe::ALL_EVENTS.iter().enumerate() {
            let info = EventInfo {
                name: event.perf_name().to_string(),
                sample_type,
                period_or_freq: 1,
                freq: false,
                samples: 0,
                period: 0,
                lost: 0,
                ids: Vec::new(),
                ..base.clone()
            };
            match self.p.events.get_mut(self.attrs.len() + k) {
                Some(old) => {
                    let (samples, period) = (old.samples, old.period);
                    *old = EventInfo {
                        samples,
                        period,
                        ..info
                    };
                }
                None => self.p.events.push(info),
            }
        }
    }

    /// Turns the decoded SPE records into samples (perf's `arm_spe_sample`), at the read's end.
    pub(super) fn synthesize_spe(&mut self) {
        let Some(mut spe) = self.spe.take() else {
            return;
        };
        let first_event = self.attrs.len();
        let Some(sample_type) = self.p.events.get(first_event).map(|e| e.sample_type) else {
            return;
        };
        if spe.skipped_bytes > 0 {
            self.warn(format!(
                "ARM SPE: {} undecodable AUX bytes skipped (records in progress dropped)",
                spe.skipped_bytes
            ));
        }
        let timed = sample_type & st::TIME != 0;
        let mapping = spe::DataSourceMapping::from_cpuid(self.features.meta.cpuid.as_deref());
        let queued = std::mem::take(&mut spe.records);
        let order = if timed {
            merged_by_time(&queued)
        } else {
            // Timeless: queue after queue, each in buffer order.
            let mut order: Vec<usize> = (0..queued.len()).collect();
            order.sort_by_key(|&i| queued[i].queue);
            order
        };
        for &i in &order {
            let q = &queued[i];
            // A record closed by an END packet has timestamp 0 (perf converts that too).
            let time = if timed {
                spe.time_conv.perf_time(q.record.timestamp.unwrap_or(0))
            } else {
                0
            };
            for event in spe::synthesized_events(&q.record) {
                let sample = self.spe_sample(q, event, (sample_type, mapping), time);
                self.deliver_spe_sample(sample);
            }
        }
        self.spe = Some(spe);
    }

    /// One synthesised sample of `event` from `q`'s record.
    fn spe_sample(
        &mut self,
        q: &QueuedRecord,
        event: SpeEvent,
        (sample_type, mapping): (u64, spe::DataSourceMapping),
        time: u64,
    ) -> Sample {
        let record = &q.record;
        // The queue's thread, as perf 6.1 does in a timeless file: a per-CPU queue's samples
        // have tid -1 even when a context packet names the process (checked with perf 6.1).
        let tid = q.tid;
        let pid = self.p.thread_pids.get(&tid).map_or(-1, |r| r.pid);
        let (comm, slot) = self.st.thread(&mut self.p, pid, tid);
        let ip = record.pc.unwrap_or(0);
        let cpumode = if ip >= DEFAULT_KERNEL_START {
            CpuMode::Kernel
        } else {
            CpuMode::User
        };
        let location = if self.skip_locations {
            crate::model::Location::unmapped(ip)
        } else {
            self.st.resolve(self.st.slot_maps(slot), cpumode, ip)
        };
        let has = |bit: u64| sample_type & bit != 0;
        let event_index = spe::ALL_EVENTS
            .iter()
            .position(|&e| e == event)
            .unwrap_or(0);
        Sample {
            event: u16::try_from(self.attrs.len() + event_index).unwrap_or(u16::MAX),
            time,
            pid,
            tid,
            cpu: q.cpu,
            period: 1,
            ip,
            cpumode,
            // SPE names the sampled instruction itself: nothing to de-skid.
            exact_ip: true,
            comm,
            location,
            addr: has(st::ADDR).then(|| spe::sample_address(event, record).unwrap_or(0)),
            weight: has(st::WEIGHT).then(|| u64::from(record.total_latency.unwrap_or(0))),
            data_src: has(st::DATA_SRC).then(|| spe::data_source(record, mapping)),
            phys_addr: has(st::PHYS_ADDR).then(|| record.data_physical.unwrap_or(0)),
            spe: Some(Box::new(crate::model::SpeFields::from_record(record))),
            ..Sample::default()
        }
    }

    /// Counts `sample` on its event and hands it to the sink or the profile.
    fn deliver_spe_sample(&mut self, sample: Sample) {
        if let Some(e) = self.p.events.get_mut(usize::from(sample.event)) {
            e.samples += 1;
            e.period = e.period.saturating_add(sample.period);
        }
        match self.sink.as_mut() {
            Some(sink) => sink(&self.p, &sample),
            None => self.p.samples.push(sample),
        }
    }
}
