//! Grouping SPE packets into records, one record per sampled operation.
//!
//! As in perf's `arm_spe_read_record`: fields accumulate until a timestamp packet (which sets
//! the record's timestamp) or an end packet closes the record; padding is ignored. A byte that
//! starts no valid packet is skipped alone so decoding resynchronises on the next header, and
//! the record in progress is dropped with it (perf's decoder returns `-EBADMSG` and its next
//! record starts from zero); an op type packet of the reserved class 3 drops it too.

use super::packet::{decode_packet, normalise_address, AddressKind, CounterKind, Packet};

/// Event bit: the operation refilled (missed) the L1 data cache.
pub const EVENT_L1D_REFILL: u64 = 1 << 3;
/// Event bit: the operation accessed the L1 data cache.
pub const EVENT_L1D_ACCESS: u64 = 1 << 2;
/// Event bit: the operation walked the page tables (TLB miss).
pub const EVENT_TLB_WALK: u64 = 1 << 5;
/// Event bit: the operation accessed the TLB.
pub const EVENT_TLB_ACCESS: u64 = 1 << 4;
/// Event bit: the branch was mispredicted.
pub const EVENT_MISPREDICTED: u64 = 1 << 7;
/// Event bit: the operation accessed the last-level cache.
pub const EVENT_LLC_ACCESS: u64 = 1 << 8;
/// Event bit: the operation missed the last-level cache.
pub const EVENT_LLC_MISS: u64 = 1 << 9;
/// Event bit: the data came from a remote socket or chip.
pub const EVENT_REMOTE_ACCESS: u64 = 1 << 10;

/// One sampled operation, with addresses already normalised (see `normalise_address`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpeRecord {
    /// Offset of the record's first byte in the decoded buffer.
    pub offset: usize,
    /// The sampled instruction's address.
    pub pc: Option<u64>,
    /// Branch target, for branches.
    pub branch_target: Option<u64>,
    /// Data virtual address, for loads/stores.
    pub data_virtual: Option<u64>,
    /// Data physical address, when the PMU was allowed to record it.
    pub data_physical: Option<u64>,
    /// Total latency in cycles.
    pub total_latency: Option<u16>,
    /// Issue latency in cycles.
    pub issue_latency: Option<u16>,
    /// Translation latency in cycles.
    pub translation_latency: Option<u16>,
    /// Event flags (see the `EVENT_*` bits).
    pub events: u64,
    /// Operation class (0 other, 1 load/store/atomic, 2 branch) and subclass.
    pub op_type: Option<(u8, u8)>,
    /// Context ID, usually the PID of the sampled thread.
    pub context_id: Option<u32>,
    /// Data source (implementation defined).
    pub data_source: Option<u64>,
    /// Timestamp, when the record ended with one.
    pub timestamp: Option<u64>,
}

impl SpeRecord {
    /// Whether any event bit in `mask` is set.
    pub fn has_event(&self, mask: u64) -> bool {
        self.events & mask != 0
    }

    fn apply(&mut self, packet: Packet) {
        match packet {
            Packet::Address { kind, raw } => {
                let address = Some(normalise_address(kind, raw));
                match kind {
                    AddressKind::Instruction => self.pc = address,
                    AddressKind::BranchTarget => self.branch_target = address,
                    AddressKind::DataVirtual => self.data_virtual = address,
                    AddressKind::DataPhysical => self.data_physical = address,
                    AddressKind::PreviousBranchTarget | AddressKind::Unknown(_) => {}
                }
            }
            Packet::Counter { kind, value } => match kind {
                CounterKind::Total => self.total_latency = Some(value),
                CounterKind::Issue => self.issue_latency = Some(value),
                CounterKind::Translation => self.translation_latency = Some(value),
                CounterKind::Unknown(_) => {}
            },
            Packet::Events(bits) => self.events = bits,
            Packet::OpType { class, subclass } => self.op_type = Some((class, subclass)),
            Packet::Context { id, .. } => self.context_id = Some(id),
            Packet::DataSource(source) => self.data_source = Some(source),
            Packet::Timestamp(time) => self.timestamp = Some(time),
            Packet::Padding | Packet::End => {}
        }
    }
}

/// Decodes an AUX buffer of SPE data into records, with the number of bytes skipped as
/// undecodable. A trailing record without its end or timestamp packet is dropped, as perf
/// drops it (the hardware always closes records; a cut one comes from a wrapped buffer).
pub fn decode_records(buf: &[u8]) -> (Vec<SpeRecord>, usize) {
    let mut records = Vec::new();
    let mut skipped = 0;
    let mut at = 0;
    let mut current: Option<SpeRecord> = None;
    while at < buf.len() {
        match decode_packet(&buf[at..]) {
            Ok((Packet::Padding, len)) => at += len,
            Ok((Packet::OpType { class: 3, .. }, len)) => {
                current = None;
                at += len;
            }
            Ok((packet, len)) => {
                let record = current.get_or_insert_with(|| SpeRecord {
                    offset: at,
                    ..SpeRecord::default()
                });
                record.apply(packet);
                at += len;
                if matches!(packet, Packet::End | Packet::Timestamp(_)) {
                    records.extend(current.take());
                }
            }
            Err(_) => {
                current = None;
                skipped += 1;
                at += 1;
            }
        }
    }
    (records, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(header: u8, value: u64) -> Vec<u8> {
        let mut bytes = vec![header];
        bytes.extend_from_slice(&value.to_le_bytes());
        bytes
    }

    /// A load record as Neoverse cores write it: PC, latencies, events, op type, data VA/PA,
    /// context, timestamp.
    fn load_record(pc: u64, data: u64, timestamp: u64) -> Vec<u8> {
        let mut bytes = address(0xb0, pc | (1 << 63));
        bytes.extend([0x99, 5, 0]); // issue latency 5
        bytes.extend([0x98, 40, 0]); // total latency 40
        bytes.extend([0x52, 0x3c, 0x02]); // L1D access+refill, TLB access+walk, LLC miss
        bytes.extend([0x49, 0x00]); // load
        bytes.extend(address(0xb2, data));
        bytes.extend([0x9a, 7, 0]); // translation latency 7
        bytes.extend(address(0xb3, 0x8_8000_0040));
        bytes.extend([0x65, 0x39, 0x05, 0, 0]); // context 1337
        bytes.extend(address(0x71, timestamp));
        bytes
    }

    #[test]
    fn two_records_and_padding() {
        let mut buf = load_record(0x40_1000, 0xffff_0000_1000, 100);
        buf.extend([0x00, 0x00]);
        buf.extend(load_record(0x40_1004, 0xffff_0000_2000, 200));
        let (records, skipped) = decode_records(&buf);
        assert_eq!(skipped, 0);
        assert_eq!(records.len(), 2);
        let first = &records[0];
        assert_eq!(first.pc, Some(0x40_1000));
        assert_eq!(first.data_virtual, Some(0xffff_0000_1000));
        assert_eq!(first.data_physical, Some(0x8_8000_0040));
        assert_eq!(first.total_latency, Some(40));
        assert_eq!(first.issue_latency, Some(5));
        assert_eq!(first.translation_latency, Some(7));
        assert!(first.has_event(EVENT_L1D_REFILL));
        assert!(first.has_event(EVENT_TLB_WALK));
        assert!(first.has_event(EVENT_LLC_MISS));
        assert!(!first.has_event(EVENT_LLC_ACCESS | EVENT_REMOTE_ACCESS));
        assert_eq!(first.op_type, Some((1, 0)));
        assert_eq!(first.context_id, Some(1337));
        assert_eq!(first.timestamp, Some(100));
        assert_eq!(records[1].offset, buf.len() / 2 + 1);
        assert_eq!(records[1].timestamp, Some(200));
    }

    #[test]
    fn end_packet_closes_a_record_and_garbage_is_skipped() {
        let mut buf = vec![0xff]; // no such header
        buf.extend([0x4a, 0x01, 0x52, 0x80, 0x00, 0x01]); // branch, mispredicted, end
        buf.extend([0x98, 3]); // cut record: dropped
        let (records, skipped) = decode_records(&buf);
        assert_eq!(records.len(), 1);
        assert!(records[0].has_event(EVENT_MISPREDICTED));
        assert_eq!(records[0].op_type, Some((2, 1)));
        assert_eq!(records[0].timestamp, None);
        // 0xff, then the cut counter packet's two bytes as one truncated header then 0x03.
        assert!(skipped >= 2, "skipped {skipped}");
    }

    #[test]
    fn a_bad_byte_drops_the_record_in_progress() {
        let mut buf = address(0xb0, 0x1000);
        buf.push(0xff);
        buf.extend(address(0xb0, 0x2000));
        buf.push(0x01);
        let (records, skipped) = decode_records(&buf);
        assert_eq!(skipped, 1);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].pc, Some(0x2000));
    }

    #[test]
    fn pseudo_random_streams_never_panic() {
        // xorshift stream: a cheap, deterministic stand-in for a fuzzer over whole buffers.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2_000 {
            let len = (state % 300) as usize;
            let mut buf = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                buf.push(state as u8);
            }
            let (records, skipped) = decode_records(&buf);
            assert!(skipped <= buf.len());
            assert!(records.iter().all(|r| r.offset < buf.len()));
        }
    }
}
