//! `perf record -z`: records compressed into `PERF_RECORD_COMPRESSED` (type 81) records, as
//! perf's `record__pushfn` → `zstd_compress_stream_to_records` writes them
//! (`tools/perf/util/zstd.c`):
//!
//! - one zstd stream for the whole file (`ZSTD_initCStream(level)`, never ended), so a
//!   record's payload depends on the records before it: readers keep one decompression
//!   stream per file;
//! - each COMPRESSED record is `{u32 type = 81, u16 misc = 0, u16 size}` then `size - 8`
//!   bytes of the stream, at most `PERF_SAMPLE_MAX_SIZE - 8 - 1` (65527), not padded;
//! - the stream is flushed (`ZSTD_flushStream`) after each chunk, so the records of a chunk
//!   decompress to whole records of that chunk.
//!
//! perf 6.1's reader (`perf_session__process_compressed_event`) decompresses one record into
//! a buffer of HEADER_COMPRESSED's `mmap_len` bytes (plus what the previous record left
//! over) and cannot go past it. perf compresses one ring buffer's worth at a time; culprit
//! cuts its drained records into chunks of at most [`Compressor::chunk_limit`] bytes (whole
//! records) and flushes each chunk completely before the next, so no record decompresses to
//! more than that, and writes `mmap_len` ≥ the limit.

use std::io;

use culprit_decode::abi::record_type;

/// The largest payload of one COMPRESSED record (perf's `PERF_SAMPLE_MAX_SIZE -
/// sizeof(struct perf_record_compressed) - 1`).
pub const MAX_PAYLOAD: usize = (1 << 16) - 8 - 1;

/// zstd's levels as perf accepts them (`--compression-level` 1..=22).
pub const LEVELS: std::ops::RangeInclusive<u32> = 1..=22;

/// HEADER_COMPRESSED's `comp_ver` (the only version perf writes).
pub const FORMAT_VERSION: u32 = 1;
/// HEADER_COMPRESSED's `comp_type` for zstd (`PERF_COMP_ZSTD`).
pub const TYPE_ZSTD: u32 = 1;

/// The HEADER_COMPRESSED feature section (five u32: version, type, level, ratio, mmap_len).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedHeader {
    /// zstd level.
    pub level: u32,
    /// Raw bytes / compressed bytes, rounded (perf: `ratio + 0.5`).
    pub ratio: u32,
    /// The most bytes one COMPRESSED record decompresses to, as readers size their buffer.
    pub mmap_len: u32,
}

impl CompressedHeader {
    /// The section's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(20);
        for x in [
            FORMAT_VERSION,
            TYPE_ZSTD,
            self.level,
            self.ratio,
            self.mmap_len,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }
}

/// Compresses whole records into COMPRESSED records for one file.
pub struct Compressor {
    cctx: zstd_safe::CCtx<'static>,
    level: u32,
    chunk_limit: usize,
    scratch: Vec<u8>,
    /// Record bytes given to [`Compressor::compress`] so far.
    pub raw_bytes: u64,
    /// COMPRESSED record bytes produced so far (headers included).
    pub compressed_bytes: u64,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("level", &self.level)
            .field("chunk_limit", &self.chunk_limit)
            .field("raw_bytes", &self.raw_bytes)
            .field("compressed_bytes", &self.compressed_bytes)
            .finish()
    }
}

fn zstd_error(what: &str, code: usize) -> io::Error {
    io::Error::other(format!(
        "zstd {what} failed: {}",
        zstd_safe::get_error_name(code)
    ))
}

impl Compressor {
    /// A new stream at `level` (1..=22) whose records each decompress to at most
    /// `chunk_limit` bytes (at least 64 KiB: the largest record).
    pub fn new(level: u32, chunk_limit: usize) -> io::Result<Compressor> {
        if !LEVELS.contains(&level) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("compression level {level} is not in 1..=22"),
            ));
        }
        let mut cctx = zstd_safe::CCtx::create();
        cctx.init(level as i32)
            .map_err(|c| zstd_error("initialization", c))?;
        Ok(Compressor {
            cctx,
            level,
            chunk_limit: chunk_limit.max(1 << 16),
            scratch: vec![0; MAX_PAYLOAD],
            raw_bytes: 0,
            compressed_bytes: 0,
        })
    }

    /// The zstd level.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// The most bytes one record decompresses to.
    pub fn chunk_limit(&self) -> usize {
        self.chunk_limit
    }

    /// HEADER_COMPRESSED for what was compressed so far.
    pub fn header(&self) -> CompressedHeader {
        let ratio = if self.compressed_bytes == 0 {
            0
        } else {
            (self.raw_bytes as f64 / self.compressed_bytes as f64 + 0.5) as u32
        };
        CompressedHeader {
            level: self.level,
            ratio,
            mmap_len: u32::try_from(self.chunk_limit).unwrap_or(u32::MAX),
        }
    }

    /// Appends to `out` the COMPRESSED records of `records` (whole records back to back; a
    /// torn tail is compressed as is, readers stop at it as they would uncompressed).
    pub fn compress(&mut self, records: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let mut rest = records;
        while !rest.is_empty() {
            let len = chunk_len(rest, self.chunk_limit);
            let (chunk, tail) = rest.split_at(len);
            self.compress_chunk(chunk, out)?;
            rest = tail;
        }
        self.raw_bytes += records.len() as u64;
        Ok(())
    }

    /// One chunk: compressed and flushed completely, in as many records as it takes.
    fn compress_chunk(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let mut input = zstd_safe::InBuffer::around(chunk);
        loop {
            let mut output = zstd_safe::OutBuffer::around(&mut self.scratch[..]);
            let mut pending_flush = 1;
            if input.pos() < chunk.len() {
                self.cctx
                    .compress_stream(&mut output, &mut input)
                    .map_err(|c| zstd_error("compression", c))?;
            }
            if input.pos() == chunk.len() {
                pending_flush = self
                    .cctx
                    .flush_stream(&mut output)
                    .map_err(|c| zstd_error("flush", c))?;
            }
            let n = output.pos();
            if n > 0 {
                let size = 8 + n;
                out.extend_from_slice(&record_type::COMPRESSED.to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&(size as u16).to_le_bytes());
                out.extend_from_slice(&self.scratch[..n]);
                self.compressed_bytes += size as u64;
            }
            if input.pos() == chunk.len() && pending_flush == 0 {
                return Ok(());
            }
        }
    }
}

/// The length of the first chunk of `records`: whole records up to `limit` bytes (at least
/// one record; all that is left when the rest is not whole records).
fn chunk_len(records: &[u8], limit: usize) -> usize {
    let mut pos = 0;
    while let Some(size) = records.get(pos + 6..pos + 8) {
        let size = u16::from_le_bytes([size[0], size[1]]) as usize;
        if size < 8 || pos + size > records.len() {
            return records.len();
        }
        if pos > 0 && pos + size > limit {
            break;
        }
        pos += size;
    }
    if pos == 0 {
        records.len()
    } else {
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ty: u32, body: &[u8]) -> Vec<u8> {
        let mut r = ty.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    /// Decompresses COMPRESSED records one by one with one stream, as perf does, checking
    /// that each fits `limit`.
    fn decompress_all(bytes: &[u8], limit: usize) -> Vec<u8> {
        let mut d = zstd_safe::DCtx::create();
        let mut out = Vec::new();
        let mut pos = 0;
        let mut buf = vec![0u8; limit + 1];
        while pos < bytes.len() {
            let ty = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
            let size = u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
            assert_eq!(ty, record_type::COMPRESSED);
            let mut input = zstd_safe::InBuffer::around(&bytes[pos + 8..pos + size]);
            let mut output = zstd_safe::OutBuffer::around(&mut buf[..]);
            while input.pos() < size - 8 {
                d.decompress_stream(&mut output, &mut input).unwrap();
                assert!(
                    output.pos() <= limit,
                    "a record decompresses past the limit"
                );
            }
            let n = output.pos();
            out.extend_from_slice(&buf[..n]);
            pos += size;
        }
        out
    }

    #[test]
    fn test_round_trip_with_one_stream_and_bounded_records() {
        let mut raw = Vec::new();
        for i in 0..20_000u32 {
            raw.extend(record(9, &[(i % 7) as u8; 48]));
            if i % 1000 == 0 {
                // incompressible bytes, so that some chunks need several records
                let noise: Vec<u8> = (0..4000u32)
                    .map(|k| (k.wrapping_mul(2654435761).wrapping_add(i) >> 13) as u8)
                    .collect();
                raw.extend(record(9, &noise));
            }
        }
        let mut c = Compressor::new(3, 1 << 16).unwrap();
        let mut out = Vec::new();
        // two calls: the stream goes on across them
        let half = super::super::records::whole_records_len(&raw[..raw.len() / 2]);
        c.compress(&raw[..half], &mut out).unwrap();
        c.compress(&raw[half..], &mut out).unwrap();
        assert_eq!(c.raw_bytes, raw.len() as u64);
        assert_eq!(c.compressed_bytes, out.len() as u64);
        assert!(out.len() * 4 < raw.len(), "{} vs {}", out.len(), raw.len());
        assert_eq!(decompress_all(&out, c.chunk_limit()), raw);
        let h = c.header();
        assert_eq!(h.level, 3);
        assert!(h.ratio >= 4);
        assert_eq!(h.mmap_len, 1 << 16);
        let b = h.to_bytes();
        assert_eq!(b.len(), 20);
        assert_eq!(&b[0..8], &[1, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn test_levels_and_chunks() {
        assert!(Compressor::new(0, 1 << 16).is_err());
        assert!(Compressor::new(23, 1 << 16).is_err());
        assert!(Compressor::new(22, 1 << 16).is_ok());
        let a = record(9, &[1; 24]);
        let mut two = a.clone();
        two.extend_from_slice(&a);
        assert_eq!(chunk_len(&two, 40), 32);
        assert_eq!(chunk_len(&two, 64), 64);
        assert_eq!(chunk_len(&two, 8), 32, "at least one record");
        assert_eq!(
            chunk_len(&two[..40], 64),
            40,
            "a torn tail goes with the chunk"
        );
    }
}
