//! `struct perf_event_attr` as bytes: one encoding used both for the `perf_event_open` call and
//! for the perf.data attrs section, so the file states exactly what the kernel was asked for.
//!
//! Offsets and bit numbers are from `include/uapi/linux/perf_event.h`.

use culprit_decode::abi::{attr_flag, sample_type, ATTR_SIZE_VER7};

/// The `perf_event_attr` size culprit writes: `PERF_ATTR_SIZE_VER7`, as perf 6.1 does.
pub const ATTR_SIZE: usize = ATTR_SIZE_VER7;

/// The fields of `perf_event_attr` culprit sets; everything else is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attr {
    /// `type` (PERF_TYPE_* or a dynamic PMU type).
    pub attr_type: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period`, or `sample_freq` when `flags` has [`attr_flag::FREQ`].
    pub sample_period_or_freq: u64,
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The bitfield word ([`flag`]).
    pub flags: u64,
    /// `wakeup_events` (or `wakeup_watermark`).
    pub wakeup_events: u32,
    /// `bp_type` (hardware breakpoints: `HW_BREAKPOINT_R`/`W`/`X`; 0 otherwise).
    pub bp_type: u32,
    /// `config1` (`bp_addr` of a breakpoint).
    pub config1: u64,
    /// `config2` (`bp_len` of a breakpoint).
    pub config2: u64,
    /// `sample_regs_user`.
    pub sample_regs_user: u64,
    /// `sample_stack_user`.
    pub sample_stack_user: u32,
}

impl Attr {
    /// The `precise_ip` field (0..=3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> attr_flag::PRECISE_IP_SHIFT) & 3) as u8
    }

    /// Sets the `precise_ip` field (0..=3; higher values are cut to 3).
    pub fn set_precise_ip(&mut self, precise_ip: u8) {
        let shift = attr_flag::PRECISE_IP_SHIFT;
        self.flags = (self.flags & !(3 << shift)) | (u64::from(precise_ip.min(3)) << shift);
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
        put32(&mut b, 52, self.bp_type);
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
            sample_type::TID,
            sample_type::TIME,
            sample_type::ID,
            sample_type::STREAM_ID,
            sample_type::CPU,
            sample_type::IDENTIFIER,
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
    use culprit_decode::abi::read_format;

    #[test]
    fn test_attr_to_bytes_layout() {
        let a = Attr {
            attr_type: 1,
            config: 0,
            sample_period_or_freq: 4000,
            sample_type: sample_type::IP | sample_type::TID | sample_type::IDENTIFIER,
            read_format: read_format::ID,
            flags: attr_flag::DISABLED | attr_flag::FREQ | (2 << attr_flag::PRECISE_IP_SHIFT),
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
