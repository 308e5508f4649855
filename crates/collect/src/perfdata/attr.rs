//! `struct perf_event_attr` as bytes: one encoding used both for the `perf_event_open` call and
//! for the perf.data attrs section, so the file states exactly what the kernel was asked for.
//!
//! Offsets and bit numbers are from `include/uapi/linux/perf_event.h`.

/// `PERF_ATTR_SIZE_VER7`: the size perf 6.1 writes (up to and including `sig_data`).
pub const ATTR_SIZE: usize = 128;

/// `perf_event_attr.sample_type` bits (`enum perf_event_sample_format`).
pub mod sample {
    /// PERF_SAMPLE_IP.
    pub const IP: u64 = 1 << 0;
    /// PERF_SAMPLE_TID.
    pub const TID: u64 = 1 << 1;
    /// PERF_SAMPLE_TIME.
    pub const TIME: u64 = 1 << 2;
    /// PERF_SAMPLE_ADDR.
    pub const ADDR: u64 = 1 << 3;
    /// PERF_SAMPLE_READ.
    pub const READ: u64 = 1 << 4;
    /// PERF_SAMPLE_CALLCHAIN.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// PERF_SAMPLE_ID.
    pub const ID: u64 = 1 << 6;
    /// PERF_SAMPLE_CPU.
    pub const CPU: u64 = 1 << 7;
    /// PERF_SAMPLE_PERIOD.
    pub const PERIOD: u64 = 1 << 8;
    /// PERF_SAMPLE_STREAM_ID.
    pub const STREAM_ID: u64 = 1 << 9;
    /// PERF_SAMPLE_RAW.
    pub const RAW: u64 = 1 << 10;
    /// PERF_SAMPLE_BRANCH_STACK.
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// PERF_SAMPLE_REGS_USER.
    pub const REGS_USER: u64 = 1 << 12;
    /// PERF_SAMPLE_STACK_USER.
    pub const STACK_USER: u64 = 1 << 13;
    /// PERF_SAMPLE_IDENTIFIER.
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// `perf_event_attr` flag bits (the bitfield word at offset 40).
pub mod flag {
    /// Start disabled.
    pub const DISABLED: u64 = 1 << 0;
    /// Children inherit the event.
    pub const INHERIT: u64 = 1 << 1;
    /// Don't count user space.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// Don't count the kernel.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// Don't count the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// Emit MMAP records for executable mappings.
    pub const MMAP: u64 = 1 << 8;
    /// Emit COMM records.
    pub const COMM: u64 = 1 << 9;
    /// `sample_period` is a frequency.
    pub const FREQ: u64 = 1 << 10;
    /// Enable at the next exec.
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// Emit FORK/EXIT records.
    pub const TASK: u64 = 1 << 13;
    /// Shift of the two-bit precise_ip field.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    /// Emit MMAP records for data (non-executable) mappings too.
    pub const MMAP_DATA: u64 = 1 << 17;
    /// Append the sample id to non-sample records.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// Don't count in guests.
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    /// No user frames in the kernel callchain (dwarf unwinding does them).
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    /// Emit MMAP2 instead of MMAP.
    pub const MMAP2: u64 = 1 << 23;
    /// Flag COMM records caused by exec.
    pub const COMM_EXEC: u64 = 1 << 24;
    /// MMAP2 records carry build ids.
    pub const BUILD_ID: u64 = 1 << 34;
}

/// `read_format` bit PERF_FORMAT_ID.
pub const FORMAT_ID: u64 = 1 << 2;
/// `read_format` bit PERF_FORMAT_GROUP: a read returns every member of the group.
pub const FORMAT_GROUP: u64 = 1 << 3;

/// The fields of `perf_event_attr` culprit sets; everything else is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attr {
    /// `type` (PERF_TYPE_* or a dynamic PMU type).
    pub attr_type: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period`, or `sample_freq` when `flags` has [`flag::FREQ`].
    pub sample_period_or_freq: u64,
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The bitfield word ([`flag`]).
    pub flags: u64,
    /// `wakeup_events` (or `wakeup_watermark`).
    pub wakeup_events: u32,
    /// `config1`.
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
    /// `sample_regs_user`.
    pub sample_regs_user: u64,
    /// `sample_stack_user`.
    pub sample_stack_user: u32,
}

impl Attr {
    /// The `precise_ip` field (0..=3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> flag::PRECISE_IP_SHIFT) & 3) as u8
    }

    /// Encodes the attr as the kernel's little-endian 128-byte struct.
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE] {
        let mut b = [0u8; ATTR_SIZE];
        put32(&mut b, 0, self.attr_type);
        put32(&mut b, 4, ATTR_SIZE as u32);
        put64(&mut b, 8, self.config);
        put64(&mut b, 16, self.sample_period_or_freq);
        put64(&mut b, 24, self.sample_type);
        put64(&mut b, 32, self.read_format);
        put64(&mut b, 40, self.flags);
        put32(&mut b, 48, self.wakeup_events);
        put64(&mut b, 56, self.config1);
        put64(&mut b, 64, self.config2);
        put64(&mut b, 80, self.sample_regs_user);
        put32(&mut b, 88, self.sample_stack_user);
        b
    }

    /// Length in bytes of the `sample_id` trailer that `sample_id_all` appends to non-sample
    /// records for this sample_type.
    pub fn id_trailer_len(&self) -> usize {
        let st = self.sample_type;
        [
            sample::TID,
            sample::TIME,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&bit| st & bit != 0)
        .count()
            * 8
    }
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_attr_to_bytes_layout() {
        let a = Attr {
            attr_type: 1,
            config: 0,
            sample_period_or_freq: 4000,
            sample_type: sample::IP | sample::TID | sample::IDENTIFIER,
            read_format: FORMAT_ID,
            flags: flag::DISABLED | flag::FREQ | (2 << flag::PRECISE_IP_SHIFT),
            sample_regs_user: 0xff0fff,
            sample_stack_user: 8192,
            ..Attr::default()
        };
        let b = a.to_bytes();
        assert_eq!(&b[0..4], &1u32.to_le_bytes());
        assert_eq!(&b[4..8], &128u32.to_le_bytes());
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 4000);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 0x10003);
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 4);
        assert_eq!(
            u64::from_le_bytes(b[40..48].try_into().unwrap()),
            0x1 | 0x400 | 0x10000
        );
        assert_eq!(u64::from_le_bytes(b[80..88].try_into().unwrap()), 0xff0fff);
        assert_eq!(u32::from_le_bytes(b[88..92].try_into().unwrap()), 8192);
        assert_eq!(a.precise_ip(), 2);
        assert_eq!(a.id_trailer_len(), 16);
    }
}
