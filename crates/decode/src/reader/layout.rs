//! Where the fields of records are: per-attr layouts of SAMPLE bodies and their fixed-size
//! fields, a cursor over them without bounds checks per field, and how sample ids map to attrs.

use super::*;

/// Precomputed record layout of one attr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    /// Byte offset of the sample id in a SAMPLE body.
    pub(super) sample_id: Option<usize>,
    /// Byte offset of the time in a SAMPLE body.
    pub(super) sample_time: Option<usize>,
    /// Length of the sample_id trailer of non-sample records (0 without sample_id_all).
    pub(super) trailer_len: usize,
    /// Distance from the record end of the trailer's id.
    pub(super) trailer_id: Option<usize>,
    /// Distance from the record end of the trailer's time.
    pub(super) trailer_time: Option<usize>,
    /// Distance from the record end of the trailer's pid and tid (its start).
    pub(super) trailer_tid: Option<usize>,
}

impl Layout {
    pub(super) fn new(a: &Attr) -> Layout {
        let t = a.sample_type;
        let has = |b: u64| t & b != 0;
        let n = |b: u64| usize::from(has(b)) * 8;
        let sample_id = if has(st::IDENTIFIER) {
            Some(0)
        } else if has(st::ID) {
            Some(n(st::IP) + n(st::TID) + n(st::TIME) + n(st::ADDR))
        } else {
            None
        };
        let sample_time = has(st::TIME).then(|| n(st::IDENTIFIER) + n(st::IP) + n(st::TID));
        let id_all = a.flags & flag::SAMPLE_ID_ALL != 0;
        let trailer_len = if id_all {
            n(st::TID) + n(st::TIME) + n(st::ID) + n(st::STREAM_ID) + n(st::CPU) + n(st::IDENTIFIER)
        } else {
            0
        };
        let trailer_id = if !id_all {
            None
        } else if has(st::IDENTIFIER) {
            Some(8)
        } else if has(st::ID) {
            Some(8 + n(st::STREAM_ID) + n(st::CPU) + n(st::IDENTIFIER))
        } else {
            None
        };
        let trailer_time = (id_all && has(st::TIME)).then(|| trailer_len - n(st::TID));
        let trailer_tid = (id_all && has(st::TID)).then_some(trailer_len);
        Layout {
            sample_id,
            sample_time,
            trailer_len,
            trailer_id,
            trailer_time,
            trailer_tid,
        }
    }
}

/// Offsets of the fixed-size leading fields of one attr's SAMPLE records (IDENTIFIER, IP,
/// TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD: each 8 bytes when present), so a sample reads
/// them directly instead of walking the sample_type bits.
#[derive(Debug, Clone, Copy)]
pub(super) struct FixedFields {
    /// Bytes of the fixed part.
    pub(super) fixed_len: usize,
    /// The attr records nothing but the fixed fields and a call chain (no READ, nothing
    /// after CALLCHAIN).
    pub(super) plain: bool,
    /// The attr records PERF_SAMPLE_READ.
    pub(super) read: bool,
    pub(super) identifier: u8,
    pub(super) ip: u8,
    pub(super) tid: u8,
    pub(super) time: u8,
    pub(super) addr: u8,
    pub(super) id: u8,
    pub(super) stream_id: u8,
    pub(super) cpu: u8,
    pub(super) period: u8,
}

impl FixedFields {
    /// Offset of a field the attr does not record.
    pub(super) const ABSENT: u8 = u8::MAX;

    pub(super) fn new(a: &Attr) -> FixedFields {
        let mut off = 0u8;
        let mut next = |bit: u64| {
            if a.sample_type & bit != 0 {
                let at = off;
                off += 8;
                at
            } else {
                Self::ABSENT
            }
        };
        // Record order (perf_event.h, struct perf_event_sample).
        let identifier = next(st::IDENTIFIER);
        let ip = next(st::IP);
        let tid = next(st::TID);
        let time = next(st::TIME);
        let addr = next(st::ADDR);
        let id = next(st::ID);
        let stream_id = next(st::STREAM_ID);
        let cpu = next(st::CPU);
        let period = next(st::PERIOD);
        FixedFields {
            fixed_len: usize::from(off),
            plain: a.sample_type & (st::READ | st::AFTER_CHAIN) == 0,
            read: a.sample_type & st::READ != 0,
            identifier,
            ip,
            tid,
            time,
            addr,
            id,
            stream_id,
            cpu,
            period,
        }
    }
}

/// A u64 at `off` of `b` in the byte order `BE` (0 when out of bounds: callers check the
/// length first).
#[inline(always)]
pub(super) fn le_or_be<const BE: bool>(b: &[u8], off: usize) -> u64 {
    let Some(w) = b.get(off..off.wrapping_add(8)) else {
        return 0;
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(w);
    if BE {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    }
}

/// A bounds-checked cursor like [`Cur`] with the byte order fixed at compile time (the
/// sample decoder's variable-size part).
pub(super) struct FastCur<'a, const BE: bool> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
}

impl<'a, const BE: bool> FastCur<'a, BE> {
    #[inline(always)]
    pub(super) fn new(data: &'a [u8], pos: usize) -> Self {
        FastCur { data, pos }
    }

    #[inline(always)]
    pub(super) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let b = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }

    #[inline(always)]
    pub(super) fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    #[inline(always)]
    pub(super) fn u64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        Some(le_or_be::<BE>(b, 0))
    }

    #[inline(always)]
    pub(super) fn u32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Some(if BE {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }
}

/// How a record's attr is found.
#[derive(Debug, Clone, Copy)]
pub(super) enum IdMode {
    /// One attr: everything is attr 0.
    Single,
    /// All attrs share a layout: read the id where that layout says.
    Same(Layout),
    /// Layouts differ: each record's id is found per record type (IDENTIFIER or best effort).
    Mixed,
}
