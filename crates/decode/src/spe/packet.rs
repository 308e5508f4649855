//! SPE packet decoding, one packet at a time.
//!
//! Header layout (ARM ARM D10, as perf 6.1 reads it): bits 5:4 of every header except padding,
//! end and the extended prefix give the payload size as `1 << bits` bytes. An extended header
//! (`0b001000xx`) prefixes address and counter headers and supplies two more index bits.

/// What an address packet's index says the address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    /// Index 0: the sampled instruction's virtual address (PC).
    Instruction,
    /// Index 1: the branch target.
    BranchTarget,
    /// Index 2: the data access's virtual address.
    DataVirtual,
    /// Index 3: the data access's physical address.
    DataPhysical,
    /// Index 4: the previous branch target.
    PreviousBranchTarget,
    /// Any other index (reserved by the architecture); kept so the stream stays aligned.
    Unknown(u8),
}

/// What a counter packet's index says the count measures (cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Index 0: total latency, dispatch to completion.
    Total,
    /// Index 1: issue latency, dispatch to issue.
    Issue,
    /// Index 2: translation latency of the data access.
    Translation,
    /// Any other index (reserved).
    Unknown(u8),
}

/// One decoded SPE packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// `0x00`: alignment filler.
    Padding,
    /// `0x01`: ends a record that has no timestamp.
    End,
    /// `0x71`: the record's timestamp (generic timer or CNTVCT); ends the record.
    Timestamp(u64),
    /// An address; `raw` is the whole 64-bit payload (address, NS/EL bits, tags).
    Address {
        /// Which address this is.
        kind: AddressKind,
        /// The undecoded payload; see [`normalise_address`].
        raw: u64,
    },
    /// Context ID (CONTEXTIDR_EL1 or _EL2, index 0 or 1).
    Context {
        /// Header index: 0 for EL1, 1 for EL2.
        index: u8,
        /// The context ID, usually the PID.
        id: u32,
    },
    /// Operation type: class (0 other, 1 load/store/atomic, 2 branch) and subclass byte.
    OpType {
        /// Operation class from the header index.
        class: u8,
        /// Class-specific subclass bits.
        subclass: u8,
    },
    /// Event flags (bit 0 exception, 1 retired, 2 L1D access, 3 L1D refill, 4 TLB access,
    /// 5 TLB walk, 6 not taken, 7 mispredict, 8 LLC access, 9 LLC miss, 10 remote access, ...).
    Events(u64),
    /// Data source of a load (implementation defined encoding).
    DataSource(u64),
    /// A latency counter in cycles.
    Counter {
        /// Which latency.
        kind: CounterKind,
        /// Cycles.
        value: u16,
    },
}

/// Why a packet could not be decoded at the head of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// The buffer ends inside the packet.
    Truncated,
    /// The header byte matches no packet kind perf knows.
    UnknownHeader(u8),
}

/// Payload size from header bits 5:4.
fn payload_size(header: u8) -> usize {
    1 << ((header >> 4) & 0x3)
}

/// Little-endian payload of `size` bytes starting at `at`, or `Truncated`.
fn payload(buf: &[u8], at: usize, size: usize) -> Result<u64, PacketError> {
    let bytes = buf.get(at..at + size).ok_or(PacketError::Truncated)?;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// Decodes the packet at the start of `buf`; returns it with its length in bytes.
pub fn decode_packet(buf: &[u8]) -> Result<(Packet, usize), PacketError> {
    let first = *buf.first().ok_or(PacketError::Truncated)?;
    match first {
        0x00 => return Ok((Packet::Padding, 1)),
        0x01 => return Ok((Packet::End, 1)),
        _ => {}
    }
    // The extended prefix carries index bits 4:3 for the header that follows it.
    let (header, extension, header_len) = if first & 0xfc == 0x20 {
        let next = *buf.get(1).ok_or(PacketError::Truncated)?;
        (next, first & 0x3, 2)
    } else {
        (first, 0, 1)
    };
    let size = payload_size(header);
    let value = |at| payload(buf, at, size);
    let total = header_len + size;
    let packet = if header_len == 1 && header == 0x71 {
        Packet::Timestamp(value(1)?)
    } else if header & 0xf8 == 0xb0 {
        let index = (extension << 3) | (header & 0x7);
        let kind = match index {
            0 => AddressKind::Instruction,
            1 => AddressKind::BranchTarget,
            2 => AddressKind::DataVirtual,
            3 => AddressKind::DataPhysical,
            4 => AddressKind::PreviousBranchTarget,
            other => AddressKind::Unknown(other),
        };
        Packet::Address {
            kind,
            raw: value(header_len)?,
        }
    } else if header & 0xf8 == 0x98 {
        let index = (extension << 3) | (header & 0x7);
        let kind = match index {
            0 => CounterKind::Total,
            1 => CounterKind::Issue,
            2 => CounterKind::Translation,
            other => CounterKind::Unknown(other),
        };
        Packet::Counter {
            kind,
            value: value(header_len)? as u16,
        }
    } else if header_len == 1 && header & 0xfc == 0x64 {
        Packet::Context {
            index: header & 0x3,
            id: value(1)? as u32,
        }
    } else if header_len == 1 && header & 0xfc == 0x48 {
        Packet::OpType {
            class: header & 0x3,
            subclass: value(1)? as u8,
        }
    } else if header_len == 1 && header & 0xcf == 0x42 {
        Packet::Events(value(1)?)
    } else if header_len == 1 && header & 0xcf == 0x43 {
        Packet::DataSource(value(1)?)
    } else {
        return Err(PacketError::UnknownHeader(header));
    };
    Ok((packet, total))
}

/// The address an address packet's payload denotes, as perf's `arm_spe_calc_ip` computes it.
///
/// Instruction and branch addresses keep bits 55:0 and get a 0xff top byte when recorded at
/// EL1/EL2 in non-secure state (kernel addresses); data virtual addresses get it when byte 6's
/// top nibble is 0xf (a kernel address whose top byte held a tag); physical addresses keep 55:0.
pub fn normalise_address(kind: AddressKind, raw: u64) -> u64 {
    const ADDRESS_MASK: u64 = 0x00ff_ffff_ffff_ffff;
    let address = raw & ADDRESS_MASK;
    match kind {
        AddressKind::Instruction
        | AddressKind::BranchTarget
        | AddressKind::PreviousBranchTarget => {
            let non_secure = raw >> 63 == 1;
            let exception_level = (raw >> 61) & 0x3;
            if non_secure && (exception_level == 1 || exception_level == 2) {
                address | (0xff << 56)
            } else {
                address
            }
        }
        AddressKind::DataVirtual if (address >> 52) & 0xf == 0xf => address | (0xff << 56),
        _ => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_byte_packets() {
        assert_eq!(decode_packet(&[0x00]), Ok((Packet::Padding, 1)));
        assert_eq!(decode_packet(&[0x01]), Ok((Packet::End, 1)));
        assert_eq!(decode_packet(&[]), Err(PacketError::Truncated));
    }

    #[test]
    fn timestamp_and_address() {
        let mut buf = vec![0x71];
        buf.extend_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(
            decode_packet(&buf),
            Ok((Packet::Timestamp(0x1122_3344_5566_7788), 9))
        );
        let mut pc = vec![0xb0];
        pc.extend_from_slice(&0xc000_ffff_8000_1234u64.to_le_bytes());
        let (packet, len) = decode_packet(&pc).unwrap();
        assert_eq!(len, 9);
        assert_eq!(
            packet,
            Packet::Address {
                kind: AddressKind::Instruction,
                raw: 0xc000_ffff_8000_1234
            }
        );
        // NS=1, EL=2: a kernel PC gets the 0xff top byte back.
        assert_eq!(
            normalise_address(AddressKind::Instruction, 0xc000_ffff_8000_1234),
            0xff00_ffff_8000_1234
        );
        assert_eq!(
            normalise_address(AddressKind::DataPhysical, 0xff00_0000_8000_0000),
            0x8000_0000
        );
    }

    #[test]
    fn extended_header_extends_the_index() {
        // 0x21 prefix: index bits 4:3 = 01, so 0xb0 becomes address index 8 (reserved).
        let mut buf = vec![0x21, 0xb0];
        buf.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(
            decode_packet(&buf),
            Ok((
                Packet::Address {
                    kind: AddressKind::Unknown(8),
                    raw: 7
                },
                10
            ))
        );
    }

    #[test]
    fn counters_events_context_optype() {
        assert_eq!(
            decode_packet(&[0x99, 0x34, 0x12]),
            Ok((
                Packet::Counter {
                    kind: CounterKind::Issue,
                    value: 0x1234
                },
                3
            ))
        );
        assert_eq!(
            decode_packet(&[0x52, 0x02, 0x06]),
            Ok((Packet::Events(0x0602), 3))
        );
        assert_eq!(
            decode_packet(&[0x65, 0x2a, 0, 0, 0]),
            Ok((Packet::Context { index: 1, id: 42 }, 5))
        );
        assert_eq!(
            decode_packet(&[0x49, 0x01]),
            Ok((
                Packet::OpType {
                    class: 1,
                    subclass: 1
                },
                2
            ))
        );
        assert_eq!(decode_packet(&[0x99, 0x34]), Err(PacketError::Truncated));
        assert_eq!(
            decode_packet(&[0xff, 0, 0]),
            Err(PacketError::UnknownHeader(0xff))
        );
    }

    #[test]
    fn every_short_input_decodes_without_panic() {
        // All 1- and 2-byte inputs, and every header before a short payload: no panic, and a
        // decoded length never exceeds the input.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                for input in [&[a][..], &[a, b][..], &[a, b, 1, 2, 3][..]] {
                    if let Ok((_, len)) = decode_packet(input) {
                        assert!(len >= 1 && len <= input.len());
                    }
                }
            }
        }
    }
}
