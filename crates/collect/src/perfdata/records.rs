//! Encoding of the records culprit writes itself (synthesized COMM/MMAP/MMAP2 for state that
//! existed before recording, FINISHED_ROUND) and the `sample_id` trailer they carry.
//!
//! Layouts are those of `include/uapi/linux/perf_event.h`; FINISHED_ROUND is perf's
//! user-space record type 68 (`tools/lib/perf/include/perf/event.h`).

use culprit_decode::abi::{misc, record_type, sample_type};

use super::attr::Attr;

/// The length of the whole records at the start of `bytes` (records written back to back,
/// each starting with its u16 size at offset 6): where a cut stream can end.
pub fn whole_records_len(bytes: &[u8]) -> usize {
    let mut pos = 0;
    while let Some(size) = bytes.get(pos + 6..pos + 8) {
        let size = u16::from_le_bytes([size[0], size[1]]) as usize;
        if size < 8 || pos + size > bytes.len() {
            break;
        }
        pos += size;
    }
    pos
}

/// The `sample_id` trailer values of a synthesized record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp (0 for synthesized state, as perf writes).
    pub time: u64,
    /// Sample id (also used for ID/IDENTIFIER).
    pub id: u64,
    /// CPU.
    pub cpu: u32,
}

/// Appends the `sample_id` trailer for `attr`'s sample_type: TID, TIME, ID, STREAM_ID, CPU,
/// IDENTIFIER, in that order (only the bits that are set).
pub fn push_sample_id(out: &mut Vec<u8>, attr: &Attr, sid: &SampleId) {
    let st = attr.sample_type;
    if st & sample_type::TID != 0 {
        out.extend_from_slice(&sid.pid.to_le_bytes());
        out.extend_from_slice(&sid.tid.to_le_bytes());
    }
    if st & sample_type::TIME != 0 {
        out.extend_from_slice(&sid.time.to_le_bytes());
    }
    if st & sample_type::ID != 0 {
        out.extend_from_slice(&sid.id.to_le_bytes());
    }
    if st & sample_type::STREAM_ID != 0 {
        out.extend_from_slice(&sid.id.to_le_bytes());
    }
    if st & sample_type::CPU != 0 {
        out.extend_from_slice(&sid.cpu.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    if st & sample_type::IDENTIFIER != 0 {
        out.extend_from_slice(&sid.id.to_le_bytes());
    }
}

fn push_header(out: &mut Vec<u8>, rtype: u32, misc: u16) -> usize {
    let start = out.len();
    out.extend_from_slice(&rtype.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // size, patched by finish_record
    start
}

/// NUL-terminated string padded with zeros to a multiple of 8 bytes.
pub(crate) fn push_cstr8(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    let padded = (s.len() + 1).div_ceil(8) * 8;
    out.resize(out.len() + padded - s.len(), 0);
}

fn finish_record(out: &mut [u8], start: usize) {
    let size = out.len() - start;
    // Records are at most 64 KiB (u16 size); file names are limited to PATH_MAX so this
    // cannot overflow for records we build, but clamp rather than panic.
    let size = u16::try_from(size).unwrap_or(u16::MAX);
    out[start + 6..start + 8].copy_from_slice(&size.to_le_bytes());
}

/// Appends a PERF_RECORD_COMM.
pub fn push_comm(
    out: &mut Vec<u8>,
    attr: &Attr,
    pid: u32,
    tid: u32,
    comm: &[u8],
    exec: bool,
    sid: &SampleId,
) {
    let start = push_header(
        out,
        record_type::COMM,
        if exec { misc::COMM_EXEC } else { 0 },
    );
    out.extend_from_slice(&pid.to_le_bytes());
    out.extend_from_slice(&tid.to_le_bytes());
    // The kernel's comm is at most 16 bytes including the NUL.
    push_cstr8(out, &comm[..comm.len().min(15)]);
    push_sample_id(out, attr, sid);
    finish_record(out, start);
}

/// Arguments of a synthesized MMAP/MMAP2 record.
#[derive(Debug, Clone, Copy)]
pub struct MmapArgs<'a> {
    /// Process id (`u32::MAX`, i.e. -1, for the kernel).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start` (for the kernel: the start address, as perf writes).
    pub pgoff: u64,
    /// Device major.
    pub maj: u32,
    /// Device minor.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// File name.
    pub filename: &'a [u8],
    /// `misc` cpumode ([`misc::USER`] or [`misc::KERNEL`]).
    pub misc: u16,
}

/// Appends a PERF_RECORD_MMAP (used for the kernel, as perf does).
pub fn push_mmap(out: &mut Vec<u8>, attr: &Attr, m: &MmapArgs<'_>, sid: &SampleId) {
    let start = push_header(out, record_type::MMAP, m.misc);
    out.extend_from_slice(&m.pid.to_le_bytes());
    out.extend_from_slice(&m.tid.to_le_bytes());
    out.extend_from_slice(&m.start.to_le_bytes());
    out.extend_from_slice(&m.len.to_le_bytes());
    out.extend_from_slice(&m.pgoff.to_le_bytes());
    push_cstr8(out, m.filename);
    push_sample_id(out, attr, sid);
    finish_record(out, start);
}

/// Appends a PERF_RECORD_MMAP2 (device/inode variant).
pub fn push_mmap2(out: &mut Vec<u8>, attr: &Attr, m: &MmapArgs<'_>, sid: &SampleId) {
    let start = push_header(out, record_type::MMAP2, m.misc);
    out.extend_from_slice(&m.pid.to_le_bytes());
    out.extend_from_slice(&m.tid.to_le_bytes());
    out.extend_from_slice(&m.start.to_le_bytes());
    out.extend_from_slice(&m.len.to_le_bytes());
    out.extend_from_slice(&m.pgoff.to_le_bytes());
    out.extend_from_slice(&m.maj.to_le_bytes());
    out.extend_from_slice(&m.min.to_le_bytes());
    out.extend_from_slice(&m.ino.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // ino_generation
    out.extend_from_slice(&m.prot.to_le_bytes());
    out.extend_from_slice(&m.flags.to_le_bytes());
    push_cstr8(out, m.filename);
    push_sample_id(out, attr, sid);
    finish_record(out, start);
}

/// Appends a PERF_RECORD_FINISHED_ROUND (header only).
pub fn push_finished_round(out: &mut Vec<u8>) {
    let start = push_header(out, record_type::FINISHED_ROUND, 0);
    finish_record(out, start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_push_comm_layout_with_trailer() {
        let attr = Attr {
            sample_type: sample_type::IDENTIFIER
                | sample_type::TID
                | sample_type::TIME
                | sample_type::CPU,
            ..Attr::default()
        };
        let mut out = Vec::new();
        let sid = SampleId {
            pid: 5,
            tid: 6,
            time: 7,
            id: 9,
            cpu: 1,
        };
        push_comm(&mut out, &attr, 5, 6, b"abcdefgh", true, &sid);
        // header 8 + pid/tid 8 + "abcdefgh\0" padded to 16 + trailer 32
        assert_eq!(out.len(), 64);
        assert_eq!(u16::from_le_bytes([out[6], out[7]]), 64);
        assert_eq!(u16::from_le_bytes([out[4], out[5]]), misc::COMM_EXEC);
        assert_eq!(&out[16..25], b"abcdefgh\0");
        assert_eq!(u32::from_le_bytes(out[32..36].try_into().unwrap()), 5);
        assert_eq!(u64::from_le_bytes(out[56..64].try_into().unwrap()), 9);
    }

    #[test]
    fn test_push_mmap2_is_8_aligned() {
        let attr = Attr {
            sample_type: sample_type::TID,
            ..Attr::default()
        };
        let mut out = Vec::new();
        let m = MmapArgs {
            pid: 1,
            tid: 1,
            start: 0x1000,
            len: 0x2000,
            pgoff: 0,
            maj: 8,
            min: 1,
            ino: 42,
            prot: 5,
            flags: 2,
            filename: b"/bin/x",
            misc: misc::USER,
        };
        push_mmap2(&mut out, &attr, &m, &SampleId::default());
        assert_eq!(out.len() % 8, 0);
        assert_eq!(out.len(), 8 + 64 + 8 + 8);
    }
}
