//! A bounds-checked cursor over untrusted bytes: every read returns `Option`, nothing indexes
//! the input directly, so a short or lying record can never panic the reader.

/// Reads little- or big-endian integers from a byte slice, advancing a position.
#[derive(Clone, Copy)]
pub(crate) struct Cur<'a> {
    data: &'a [u8],
    pos: usize,
    big_endian: bool,
}

impl<'a> Cur<'a> {
    pub(crate) fn new(data: &'a [u8], big_endian: bool) -> Self {
        Cur {
            data,
            pos: 0,
            big_endian,
        }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Current position from the start of the slice.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let b = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        let a = self.array::<2>()?;
        Some(if self.big_endian {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        })
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let a = self.array::<4>()?;
        Some(if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }

    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        let a = self.array::<8>()?;
        Some(if self.big_endian {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    }

    /// A `perf_header_string`: u32 length (including NUL padding), then the bytes.
    pub(crate) fn header_string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let b = self.bytes(len)?;
        Some(c_string(b))
    }
}

/// The bytes up to the first NUL, as (lossy) UTF-8.
pub(crate) fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or(b)).into_owned()
}

/// Reads one u64 at `off` of `data` (endianness as given); `None` when out of bounds.
pub(crate) fn u64_at(data: &[u8], off: usize, big_endian: bool) -> Option<u64> {
    let end = off.checked_add(8)?;
    let a: [u8; 8] = data.get(off..end)?.try_into().ok()?;
    Some(if big_endian {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    })
}

/// Reads one u32 at `off` of `b` (endianness as given); `None` when out of bounds.
pub(crate) fn u32_at(b: &[u8], off: usize, big_endian: bool) -> Option<u32> {
    let w: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_cur_short_input_is_none() {
        let mut c = Cur::new(&[1, 2, 3], false);
        assert_eq!(c.u16(), Some(0x0201));
        assert_eq!(c.u16(), None);
        assert_eq!(c.bytes(1), Some(&[3u8][..]));
        assert_eq!(c.bytes(1), None);
        assert_eq!(c.bytes(usize::MAX), None);
    }

    #[test]
    fn test_cur_big_endian() {
        let mut c = Cur::new(&[0, 0, 0, 1], true);
        assert_eq!(c.u32(), Some(1));
    }

    #[test]
    fn test_header_string_lying_length() {
        let mut c = Cur::new(&[0xff, 0xff, 0xff, 0x7f, b'a'], false);
        assert_eq!(c.header_string(), None);
        let mut c = Cur::new(&[4, 0, 0, 0, b'a', b'b', 0, 0], false);
        assert_eq!(c.header_string().as_deref(), Some("ab"));
    }
}
