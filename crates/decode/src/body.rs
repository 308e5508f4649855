//! The fixed fields of perf record bodies (the bytes after the 8-byte record header), read
//! with the bounds-checked cursor: the layouts the reader decodes, public so that a writer
//! that watches its own stream (`culprit record`'s tracker) reads them the same way.
//!
//! Every parser returns `None` for a body too short for its fields: nothing here panics on
//! any input.

use crate::abi::sample_type;
use crate::cursor::Cur;

/// Size of the header every record starts with (type, misc, size).
pub const HEADER_SIZE: usize = 8;

/// The header every record starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// `PERF_RECORD_*` type.
    pub ty: u32,
    /// `PERF_RECORD_MISC_*` flags (CPU mode, COMM_EXEC, …).
    pub misc: u16,
    /// Size of the whole record, header included.
    pub size: u16,
}

impl Header {
    /// The header at the start of `b`.
    pub fn parse(b: &[u8], big_endian: bool) -> Option<Header> {
        let mut c = Cur::new(b, big_endian);
        Some(Header {
            ty: c.u32()?,
            misc: c.u16()?,
            size: c.u16()?,
        })
    }
}

/// `PERF_RECORD_FORK` (and `EXIT`, which has the same layout): the task and its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fork {
    /// Process of the new task.
    pub pid: i32,
    /// Parent process.
    pub ppid: i32,
    /// The new task.
    pub tid: i32,
    /// Parent task.
    pub ptid: i32,
}

impl Fork {
    /// The fields at the start of a FORK/EXIT body.
    pub fn parse(body: &[u8], big_endian: bool) -> Option<Fork> {
        let mut c = Cur::new(body, big_endian);
        Some(Fork {
            pid: c.i32()?,
            ppid: c.i32()?,
            tid: c.i32()?,
            ptid: c.i32()?,
        })
    }
}

/// `PERF_RECORD_COMM`: a task's command name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm<'a> {
    /// Process.
    pub pid: i32,
    /// Task.
    pub tid: i32,
    /// The name, up to its NUL (without the padding or the sample_id trailer).
    pub name: &'a [u8],
}

impl<'a> Comm<'a> {
    /// The fields of a COMM body.
    pub fn parse(body: &'a [u8], big_endian: bool) -> Option<Comm<'a>> {
        let mut c = Cur::new(body, big_endian);
        let pid = c.i32()?;
        let tid = c.i32()?;
        Some(Comm {
            pid,
            tid,
            name: until_nul(body.get(8..)?),
        })
    }
}

/// `PERF_RECORD_KSYMBOL`: kernel code the kernel registered (or unregistered) at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ksymbol<'a> {
    /// First address of the code.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u32,
    /// `PERF_RECORD_KSYMBOL_TYPE_*`: 1 a BPF program, 2 out-of-line code (a trampoline).
    pub ksym_type: u16,
    /// `PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER` (1) when the code went away.
    pub flags: u16,
    /// The symbol's name (`bpf_prog_<tag>_<name>`), up to its NUL.
    pub name: &'a [u8],
}

impl<'a> Ksymbol<'a> {
    /// `PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER`.
    pub const UNREGISTER: u16 = 1;

    /// The fields of a KSYMBOL body.
    pub fn parse(body: &'a [u8], big_endian: bool) -> Option<Ksymbol<'a>> {
        let mut c = Cur::new(body, big_endian);
        Some(Ksymbol {
            addr: c.u64()?,
            len: c.u32()?,
            ksym_type: c.u16()?,
            flags: c.u16()?,
            name: until_nul(body.get(16..)?),
        })
    }
}

/// `PERF_RECORD_MMAP` or `PERF_RECORD_MMAP2`: a mapping of a task's address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// Process (`-1`: the kernel).
    pub pid: i32,
    /// Task.
    pub tid: i32,
    /// First address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// MMAP2 with `PERF_RECORD_MISC_MMAP_BUILD_ID`: the build-id (at most 20 bytes).
    pub build_id: Option<&'a [u8]>,
    /// MMAP2: the `PROT_*` bits.
    pub prot: Option<u32>,
    /// MMAP2: the `MAP_*` flags.
    pub flags: Option<u32>,
    /// The file name, up to its NUL.
    pub filename: &'a [u8],
}

impl<'a> Mmap<'a> {
    /// The fields of an MMAP (`mmap2` false) or MMAP2 body; `misc` says whether MMAP2
    /// carries a build-id instead of device and inode numbers.
    pub fn parse(body: &'a [u8], mmap2: bool, misc: u16, big_endian: bool) -> Option<Mmap<'a>> {
        let mut c = Cur::new(body, big_endian);
        let pid = c.i32()?;
        let tid = c.i32()?;
        let start = c.u64()?;
        let len = c.u64()?;
        let pgoff = c.u64()?;
        let (mut build_id, mut prot, mut flags) = (None, None, None);
        if mmap2 {
            let ids = c.bytes(24)?;
            if misc & crate::abi::misc::MMAP_BUILD_ID != 0 {
                // build_id_size u8, 3 reserved bytes, build_id[20].
                let n = usize::from(*ids.first()?).min(20);
                build_id = ids.get(4..4 + n);
            }
            prot = Some(c.u32()?);
            flags = Some(c.u32()?);
        }
        Some(Mmap {
            pid,
            tid,
            start,
            len,
            pgoff,
            build_id,
            prot,
            flags,
            filename: until_nul(body.get(c.pos()..)?),
        })
    }
}

/// `PERF_RECORD_LOST`: records the kernel dropped for a full ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The event id.
    pub id: u64,
    /// How many records were lost.
    pub lost: u64,
}

impl Lost {
    /// The fields of a LOST body.
    pub fn parse(body: &[u8], big_endian: bool) -> Option<Lost> {
        let mut c = Cur::new(body, big_endian);
        Some(Lost {
            id: c.u64()?,
            lost: c.u64()?,
        })
    }
}

/// `PERF_RECORD_LOST_SAMPLES`: how many samples were lost (the event is in the sample_id
/// trailer).
pub fn lost_samples(body: &[u8], big_endian: bool) -> Option<u64> {
    Cur::new(body, big_endian).u64()
}

/// `PERF_RECORD_THROTTLE` / `UNTHROTTLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    /// When.
    pub time: u64,
    /// The event id.
    pub id: u64,
    /// The event's stream id.
    pub stream_id: u64,
}

impl Throttle {
    /// The fields of a THROTTLE/UNTHROTTLE body.
    pub fn parse(body: &[u8], big_endian: bool) -> Option<Throttle> {
        let mut c = Cur::new(body, big_endian);
        Some(Throttle {
            time: c.u64()?,
            id: c.u64()?,
            stream_id: c.u64()?,
        })
    }
}

/// The leading fields of a `PERF_RECORD_SAMPLE`, in the kernel's order: those of
/// IDENTIFIER, IP, TID and TIME that the event's `sample_type` has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleHead {
    /// `PERF_SAMPLE_IDENTIFIER`: the event id.
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: task.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
}

impl SampleHead {
    /// The leading fields of a SAMPLE body of an event with `sample_type`.
    pub fn parse(body: &[u8], sample_type: u64, big_endian: bool) -> Option<SampleHead> {
        let mut c = Cur::new(body, big_endian);
        let has = |bit: u64| sample_type & bit != 0;
        let mut head = SampleHead::default();
        if has(sample_type::IDENTIFIER) {
            head.identifier = Some(c.u64()?);
        }
        if has(sample_type::IP) {
            head.ip = Some(c.u64()?);
        }
        if has(sample_type::TID) {
            head.pid = Some(c.u32()?);
            head.tid = Some(c.u32()?);
        }
        if has(sample_type::TIME) {
            head.time = Some(c.u64()?);
        }
        Some(head)
    }
}

/// The bytes before the first NUL (all of them without one).
pub fn until_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    b.get(..end).unwrap_or(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_mmap2_fields_and_short_bodies() {
        let mut b = Vec::new();
        b.extend_from_slice(&7i32.to_le_bytes());
        b.extend_from_slice(&8i32.to_le_bytes());
        for v in [0x1000u64, 0x2000, 0x300] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[0; 24]);
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(b"/bin/ls\0\0\0\0\0\0\0\0\0");
        let m = Mmap::parse(&b, true, 0, false).unwrap();
        assert_eq!(
            (m.pid, m.tid, m.start, m.len, m.pgoff),
            (7, 8, 0x1000, 0x2000, 0x300)
        );
        assert_eq!((m.prot, m.flags, m.build_id), (Some(5), Some(2), None));
        assert_eq!(m.filename, b"/bin/ls");
        for n in 0..64 {
            assert!(Mmap::parse(&b[..n], true, 0, false).is_none());
        }
    }

    #[test]
    fn test_sample_head_follows_sample_type() {
        let mut b = Vec::new();
        for v in [11u64, 0x4000] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&99u64.to_le_bytes());
        let all = sample_type::IDENTIFIER | sample_type::IP | sample_type::TID | sample_type::TIME;
        let h = SampleHead::parse(&b, all, false).unwrap();
        assert_eq!(
            (h.identifier, h.ip, h.pid, h.tid, h.time),
            (Some(11), Some(0x4000), Some(3), Some(4), Some(99))
        );
        let h = SampleHead::parse(&b, sample_type::IP, false).unwrap();
        assert_eq!((h.identifier, h.ip), (None, Some(11)));
        assert!(SampleHead::parse(&b[..20], all, false).is_none());
    }
}
