//! Incremental decoding of a pipe-mode perf.data stream (`perf record -o -`): bytes arrive in
//! chunks of any size, records are framed as soon as they are complete, queued records are
//! copied out of the chunk (so nothing but the unflushed round stays in memory), and samples
//! are handed out when perf's ordering rule makes them deliverable.

use std::io::Read;

use crate::cursor::u64_at;
use crate::header;
use crate::model::{Profile, ReadStop, Sample};
use crate::reader::{Framed, Reader, SampleSink, Skips};
use crate::DecodeError;

/// Records waiting for a FINISHED_ROUND are delivered early (in time order) beyond this many
/// bytes, so a stream that never finishes a round stays bounded.
const PENDING_CAP: usize = 64 << 20;

/// Size of a pipe-mode header: magic and a header size of 16.
use crate::abi::PIPE_HEADER_SIZE as PIPE_HEADER;

/// Decodes a pipe-mode perf.data stream fed in chunks of any size (a live recording, stdin).
///
/// Samples are delivered in perf's order: at each FINISHED_ROUND, the queued records not
/// newer than the previous round's newest timestamp; at once when the stream's events have no
/// timestamps; the rest at [`StreamDecoder::flush_all`] or [`StreamDecoder::finish`]. The
/// results equal [`crate::Reader::collect`] on the same bytes. Memory is bounded by the records of
/// the unflushed round (at most about 64 MiB: beyond that they are delivered early in time
/// order, with a warning), not by the stream's length.
///
/// ```
/// # fn demo(chunks: &[&[u8]]) -> Result<(), culprit_decode::DecodeError> {
/// let mut d = culprit_decode::StreamDecoder::new();
/// let mut n = 0u64;
/// for chunk in chunks {
///     d.push(chunk, &mut |_, _| n += 1)?;
/// }
/// let profile = d.finish(&mut |_, _| n += 1);
/// println!("{n} samples, {} events", profile.events.len());
/// # Ok(()) }
/// ```
pub struct StreamDecoder<'u> {
    /// The reader, once the 16-byte header is complete and checked.
    reader: Option<Reader<'static, 'u>>,
    /// Bytes not framed yet: the header until it is complete, then an incomplete record.
    buf: Vec<u8>,
    /// Input offset of `buf[0]` (of the next byte to frame when `buf` is empty).
    base: u64,
    /// AUX data bytes still to skip; the AUXTRACE record's offset and the record count before
    /// it, for the stop if the stream ends inside the data.
    aux_skip: u64,
    aux_at: u64,
    aux_records: u64,
    /// Where reading stopped (damage): further input is ignored.
    stop: Option<ReadStop>,
    /// The stream is not perf.data: every call fails.
    rejected: Option<(u64, String)>,
    /// Samples stay in the profile instead of going to the callback ([`crate::Reader::collect`]).
    collect: bool,
    pending_cap: usize,
    warned_cap: bool,
    /// What [`StreamDecoder::profile`] shows before the header is complete.
    empty: Profile,
    /// DWARF unwinder waiting for the reader to exist ([`StreamDecoder::set_unwinder`]).
    unwinder: Option<crate::unwind::Hook<'u>>,
    /// [`StreamDecoder::set_skip_callchains`], kept for the reader made at the header.
    skip_chains: bool,
    /// Code locations are left unresolved ([`crate::Reader::skip_locations`]).
    skip_locations: bool,
}

impl Default for StreamDecoder<'_> {
    fn default() -> Self {
        StreamDecoder::new()
    }
}

impl std::fmt::Debug for StreamDecoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamDecoder")
            .field("offset", &self.offset())
            .field("buffered", &self.buf.len())
            .field("stopped", &self.stop)
            .finish_non_exhaustive()
    }
}

impl<'u> StreamDecoder<'u> {
    /// A decoder waiting for the stream's first bytes.
    pub fn new() -> StreamDecoder<'u> {
        StreamDecoder {
            reader: None,
            buf: Vec::new(),
            base: 0,
            aux_skip: 0,
            aux_at: 0,
            aux_records: 0,
            stop: None,
            rejected: None,
            collect: false,
            pending_cap: PENDING_CAP,
            warned_cap: false,
            empty: Profile::default(),
            unwinder: None,
            skip_chains: false,
            skip_locations: false,
        }
    }

    /// Unwinds the sampled user stacks of `--call-graph dwarf` streams with `unwinder` (as
    /// [`crate::Reader::unwinder`] does for files), from the next sample on. To read
    /// its warnings or statistics later, share it, e.g. through `Rc<RefCell<_>>`.
    pub fn set_unwinder(&mut self, unwinder: Box<dyn crate::unwind::UserStackUnwinder + 'u>) {
        self.set_hook(crate::unwind::Hook::owned(unwinder));
    }

    /// [`StreamDecoder::set_unwinder`] with a borrowed unwinder (a [`crate::Reader`]'s).
    fn set_hook(&mut self, hook: crate::unwind::Hook<'u>) {
        match self.reader.as_mut() {
            Some(r) => r.unwind = Some(hook),
            None => self.unwinder = Some(hook),
        }
    }

    /// Decode no call chains from the next sample on (as [`crate::Reader::skip_callchains`]
    /// does for files): for consumers that never look at them.
    pub fn set_skip_callchains(&mut self, skip: bool) {
        self.skip_chains = skip;
        if let Some(r) = self.reader.as_mut() {
            r.skip_chains = skip;
        }
    }

    /// Input bytes consumed so far (framed, skipped or waiting in the buffer).
    fn offset(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    fn reject(&mut self, offset: u64, what: String) -> DecodeError {
        self.rejected = Some((offset, what.clone()));
        self.buf = Vec::new();
        self.reader = None;
        DecodeError::Header { offset, what }
    }

    /// Feeds the next bytes. Samples that become deliverable (perf's ordering: at
    /// FINISHED_ROUND, records not newer than the previous round's newest time; at once when
    /// the stream has no timestamps) go to `on_sample` as with [`crate::Reader::fold`]:
    /// inside the call, `profile.callchain(s)`, `raw`, `dso`, `str`… work.
    ///
    /// `Err` only for a stream that is not perf.data (bad magic, not pipe mode, a sample
    /// before any HEADER_ATTR); every later call fails too. Damage later is not an error: as
    /// with the file reader, [`Profile::stopped`] is set and further input is ignored.
    pub fn push(
        &mut self,
        bytes: &[u8],
        on_sample: &mut dyn FnMut(&Profile, &Sample),
    ) -> Result<(), DecodeError> {
        if let Some((offset, what)) = &self.rejected {
            return Err(DecodeError::Header {
                offset: *offset,
                what: what.clone(),
            });
        }
        let mut input = bytes;
        if self.reader.is_none() {
            let take = (PIPE_HEADER - self.buf.len()).min(input.len());
            let (head, rest) = input.split_at(take);
            self.buf.extend_from_slice(head);
            input = rest;
            // A legacy `PERFFILE` magic needs the header size for its byte order.
            let legacy = self.buf.starts_with(header::MAGIC_V1);
            if self.buf.len() < 8 || (legacy && self.buf.len() < PIPE_HEADER) {
                return Ok(());
            }
            let be = match header::byte_order(&self.buf) {
                Ok(be) => be,
                Err(e) => {
                    self.rejected = Some((0, e.to_string()));
                    self.buf = Vec::new();
                    return Err(e);
                }
            };
            let Some(size) = u64_at(&self.buf, 8, be) else {
                return Ok(());
            };
            if size != PIPE_HEADER as u64 {
                return Err(self.reject(
                    8,
                    format!(
                        "not a pipe-mode stream: header size {size}, not 16 (a file-mode \
                         perf.data needs random access: read it from a file)"
                    ),
                ));
            }
            let mut reader = Reader::new_stream(be);
            reader.unwind = self.unwinder.take();
            reader.skip_chains = self.skip_chains;
            reader.skip_locations = self.skip_locations;
            self.reader = Some(reader);
            self.buf.clear();
            self.base = PIPE_HEADER as u64;
        }
        if let Some(r) = self.reader.as_mut() {
            // Counted even after a stop: the size is the stream's, as for a file.
            r.add_input(input.len());
        }
        if self.stop.is_some() {
            return Ok(());
        }
        self.feed(input)?;
        self.release_round();
        self.deliver(on_sample);
        Ok(())
    }

    /// Frames `input` (after what is buffered).
    fn feed(&mut self, mut input: &[u8]) -> Result<(), DecodeError> {
        let Some(r) = self.reader.as_mut() else {
            return Ok(());
        };
        if self.aux_skip > 0 {
            let n = usize::try_from(self.aux_skip)
                .unwrap_or(usize::MAX)
                .min(input.len());
            input = input.get(n..).unwrap_or(&[]);
            self.aux_skip -= n as u64;
            self.base += n as u64;
            if self.aux_skip > 0 {
                return Ok(());
            }
            r.count_record();
        }
        if input.is_empty() && self.buf.is_empty() {
            return Ok(());
        }
        // Frame straight from the caller's bytes when nothing is buffered (the common case
        // for large chunks); otherwise complete the buffered record first.
        let from_buf = !self.buf.is_empty();
        if from_buf {
            self.buf.extend_from_slice(input);
        }
        let data: &[u8] = if from_buf { &self.buf } else { input };
        let framed = r.frame_chunk(data, self.base, false);
        let len = data.len();
        match framed {
            Framed::Done => {
                self.base += len as u64;
                self.buf.clear();
            }
            Framed::More(off) => {
                self.base += off as u64;
                if from_buf {
                    self.buf.drain(..off.min(len));
                } else {
                    self.buf.extend_from_slice(input.get(off..).unwrap_or(&[]));
                }
            }
            Framed::Skip { at, left, records } => {
                self.base += len as u64;
                self.buf.clear();
                self.aux_skip = left;
                self.aux_at = at;
                self.aux_records = records;
                if left == 0 {
                    r.count_record();
                }
            }
            Framed::Stop(s) => {
                self.base += len as u64;
                self.buf = Vec::new();
                r.profile_mut().stopped = Some(s.clone());
                self.stop = Some(s);
            }
        }
        Ok(())
    }

    /// Delivers at once what need not wait: everything without timestamps, and everything
    /// when the unfinished round outgrows its cap.
    fn release_round(&mut self) {
        let Some(r) = self.reader.as_mut() else {
            return;
        };
        if !r.has_time() {
            r.flush_all();
        } else if r.pending_bytes() > self.pending_cap {
            if !self.warned_cap {
                self.warned_cap = true;
                r.add_warning(format!(
                    "more than {} MiB of records without a FINISHED_ROUND: delivered early in \
                     time order (later records may be older)",
                    self.pending_cap >> 20
                ));
            }
            r.flush_all();
        }
    }

    /// Hands the collected samples to `on_sample` and frees them with their side data.
    fn deliver(&mut self, on_sample: &mut dyn FnMut(&Profile, &Sample)) {
        if self.collect {
            return;
        }
        if let Some(r) = self.reader.as_mut() {
            hand_out(r.profile_mut(), on_sample);
        }
    }

    /// Delivers everything still queued, in time order, as at the end of the stream (for a
    /// live view when no FINISHED_ROUND came for a while). Records arriving later that are
    /// older than those delivered are still delivered, after them.
    pub fn flush_all(&mut self, on_sample: &mut dyn FnMut(&Profile, &Sample)) {
        if let Some(r) = self.reader.as_mut() {
            r.flush_all();
        }
        self.deliver(on_sample);
    }

    /// Ends the stream: delivers what is still queued and returns the profile (events with
    /// totals, DSOs, strings, meta, losses, warnings; no samples). A stream cut inside a
    /// record gets [`Profile::stopped`] as the file reader gives it; a stream that was never
    /// perf.data (or had no HEADER_ATTR) gets an empty profile whose `stopped` says why.
    pub fn finish(self, on_sample: &mut dyn FnMut(&Profile, &Sample)) -> Profile {
        self.finish_checked(on_sample).unwrap_or_else(|e| Profile {
            stopped: Some(ReadStop {
                offset: 0,
                record_type: None,
                reason: e.to_string(),
                records_read: 0,
            }),
            ..Profile::default()
        })
    }

    /// [`StreamDecoder::finish`] that fails like [`crate::Reader::collect`] for an input that is
    /// not a pipe-mode perf.data stream.
    fn finish_checked(
        mut self,
        on_sample: &mut dyn FnMut(&Profile, &Sample),
    ) -> Result<Profile, DecodeError> {
        if let Some((offset, what)) = self.rejected.take() {
            return Err(DecodeError::Header { offset, what });
        }
        let Some(mut r) = self.reader.take() else {
            return Err(DecodeError::TooShort(self.buf.len() as u64));
        };
        let mut stop = self.stop.take();
        if stop.is_none() {
            if self.aux_skip > 0 {
                stop = Some(ReadStop {
                    offset: self.aux_at,
                    record_type: Some(71),
                    reason: "AUXTRACE data extends past the end".into(),
                    records_read: self.aux_records,
                });
            } else if !self.buf.is_empty() {
                if let Framed::Stop(s) = r.frame_chunk(&self.buf, self.base, true) {
                    stop = Some(s);
                }
            }
        }
        if !r.has_attrs() {
            return Err(DecodeError::Header {
                offset: stop.as_ref().map_or(PIPE_HEADER as u64, |s| s.offset),
                what: "pipe-mode stream without any HEADER_ATTR record".into(),
            });
        }
        let mut p = r.finish_stream(stop);
        if !self.collect {
            hand_out(&mut p, on_sample);
            p.samples = Vec::new();
        }
        Ok(p)
    }

    /// The profile so far: events with their totals, DSOs, strings, meta, losses, warnings
    /// and the stop point; no samples.
    pub fn profile(&self) -> &Profile {
        self.reader.as_ref().map_or(&self.empty, |r| r.profile())
    }
}

/// Calls `on_sample` for each collected sample, then drops the samples and their side data.
fn hand_out(p: &mut Profile, on_sample: &mut dyn FnMut(&Profile, &Sample)) {
    if p.samples.is_empty() {
        return;
    }
    let mut samples = std::mem::take(&mut p.samples);
    for s in &samples {
        on_sample(p, s);
    }
    samples.clear();
    // Keep the allocation for the next round (a round's worth, not the stream's).
    p.samples = samples;
    p.frames.clear();
    p.branches.clear();
    p.raw.clear();
    p.read_values.clear();
    p.regs.clear();
    p.stacks.clear();
}

/// Reads `input` until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> Result<usize, DecodeError> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(buf.get_mut(n..).unwrap_or(&mut [])) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DecodeError::Io(e)),
        }
    }
    Ok(n)
}

/// Whether a 16-byte header starts a pipe-mode stream.
pub(crate) fn is_pipe_header(head: &[u8]) -> bool {
    header::byte_order(head).is_ok_and(|be| u64_at(head, 8, be) == Some(PIPE_HEADER as u64))
}

/// Runs a pipe-mode stream from `input` through a [`StreamDecoder`] (the input is not held
/// whole); without `on_sample`, the samples stay in the profile.
fn stream_from(
    head: &[u8],
    mut input: impl Read,
    on_sample: Option<SampleSink<'_>>,
    unwinder: Option<&mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
) -> Result<Profile, DecodeError> {
    let mut d = StreamDecoder::new();
    d.collect = on_sample.is_none();
    d.skip_chains = skips.chains;
    d.skip_locations = skips.locations;
    if let Some(u) = unwinder {
        d.set_hook(crate::unwind::Hook::new(u));
    }
    let mut nothing = |_: &Profile, _: &Sample| {};
    let on_sample = match on_sample {
        Some(f) => f,
        None => &mut nothing,
    };
    d.push(head, on_sample)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => d.push(buf.get(..n).unwrap_or(&[]), on_sample)?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DecodeError::Io(e)),
        }
    }
    d.finish_checked(on_sample)
}

/// Reads a perf.data stream (stdin for `-i -`, a FIFO, a device) for [`crate::Reader`]. The
/// magic is checked on the first bytes, before anything else is read: a stream that is no
/// perf.data fails at once. Pipe mode (`perf record -o -`) is decoded incrementally, in
/// memory bounded by the unflushed round; a file-mode perf.data needs random access (its
/// header points at the attributes and features after the data), so it is read whole first.
pub(crate) fn read_input(
    mut input: impl Read,
    on_sample: Option<SampleSink<'_>>,
    unwinder: Option<&mut dyn crate::unwind::UserStackUnwinder>,
    skips: Skips,
) -> Result<Profile, DecodeError> {
    let mut head = [0u8; PIPE_HEADER];
    let n = read_full(&mut input, &mut head)?;
    let head = head.get(..n).unwrap_or(&[]);
    if is_pipe_header(head) {
        return stream_from(head, input, on_sample, unwinder, skips);
    }
    // Not perf.data (or too short to be): say so without reading on.
    header::byte_order(head)?;
    let (mut on_sample, mut unwinder) = (on_sample, unwinder);
    let mut read = |data: &[u8], release: &(dyn Fn(usize) + Sync)| {
        crate::reader::read(
            data,
            &mut |_, _| {},
            &mut |at| release(at),
            crate::input::reborrow_sink(&mut on_sample),
            crate::input::reborrow_unwinder(&mut unwinder),
            skips,
        )
    };
    // A file-mode perf.data needs random access (its header points at what follows the
    // data): it is spooled to an unlinked temporary file and mapped, so that memory stays
    // bounded as for a file (pages are released as they are read). Where no temporary file
    // can be written (a full or read-only temporary directory), it is held in memory.
    match spool(head, &mut input)? {
        Spooled::File(file) => crate::file::with_open_file(&file, &mut read),
        Spooled::Memory(data) => read(&data, &|_| {}),
    }
}

/// Where a file-mode stream was put to be read with random access.
enum Spooled {
    File(std::fs::File),
    Memory(Vec<u8>),
}

/// Copies `head` and the rest of `input` to an unlinked file in the temporary directory
/// (nothing is left behind, even if culprit dies); in memory when that cannot be done,
/// keeping what was spooled already.
fn spool(head: &[u8], input: &mut impl Read) -> Result<Spooled, DecodeError> {
    use std::io::{Seek, Write};
    static SPOOLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SPOOLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(".culprit-stdin-{}-{n}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path);
    let mut data = head.to_vec();
    let Ok(mut file) = file else {
        input.read_to_end(&mut data).map_err(DecodeError::Io)?;
        return Ok(Spooled::Memory(data));
    };
    let _ = std::fs::remove_file(&path);
    if file.write_all(head).is_err() {
        input.read_to_end(&mut data).map_err(DecodeError::Io)?;
        return Ok(Spooled::Memory(data));
    }
    let mut written = head.len();
    let mut buf = vec![0u8; 1 << 20];
    let pending = loop {
        match input.read(&mut buf) {
            Ok(0) => return Ok(Spooled::File(file)),
            Ok(k) => {
                let chunk = buf.get(..k).unwrap_or(&[]);
                if file.write_all(chunk).is_err() {
                    break chunk.to_vec();
                }
                written += k;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DecodeError::Io(e)),
        }
    };
    // The disk filled: what was spooled comes back into memory (without the chunk that
    // failed, which follows whole), then the rest of the input.
    data.clear();
    file.rewind().map_err(DecodeError::Io)?;
    (&mut file)
        .take(written as u64)
        .read_to_end(&mut data)
        .map_err(DecodeError::Io)?;
    data.extend_from_slice(&pending);
    input.read_to_end(&mut data).map_err(DecodeError::Io)?;
    Ok(Spooled::Memory(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_file_mode_stream_is_spooled_and_reads_like_the_file() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/cpu-clock-g.data");
        let bytes = std::fs::read(&path).unwrap();
        let ips = |input: &[u8]| {
            let mut ips = Vec::new();
            let mut sink = |_: &Profile, s: &Sample| ips.push(s.ip);
            let p = read_input(input, Some(&mut sink), None, Skips::default()).unwrap();
            (p.events.len(), ips)
        };
        let (events, streamed) = ips(&bytes);
        let mut direct = Vec::new();
        let mut sink = |_: &Profile, s: &Sample| direct.push(s.ip);
        crate::reader::read(
            &bytes,
            &mut |_, _| {},
            &mut |_| {},
            Some(&mut sink),
            None,
            Skips::default(),
        )
        .unwrap();
        assert!(events > 0 && !streamed.is_empty());
        assert_eq!(streamed, direct);
        // The spool file was unlinked at once: nothing is left in the temporary directory.
        let prefix = format!(".culprit-stdin-{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn test_bad_magic_is_err_at_once() {
        let mut d = StreamDecoder::new();
        assert!(d.push(b"PERF", &mut |_, _| {}).is_ok());
        let e = d.push(b"XXXX", &mut |_, _| {}).unwrap_err();
        assert!(matches!(e, DecodeError::BadMagic(_)), "{e}");
        // Rejected for good.
        assert!(d.push(b"", &mut |_, _| {}).is_err());
    }

    #[test]
    fn test_file_mode_header_is_err() {
        let mut h = b"PERFILE2".to_vec();
        h.extend_from_slice(&104u64.to_le_bytes());
        let mut d = StreamDecoder::new();
        let e = d.push(&h, &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("not a pipe-mode stream"), "{e}");
    }

    /// A pipe-mode stream: one cpu-clock attr (id 7) with `sample_type`, then user samples
    /// (IP, TID, [TIME,] PERIOD) at the given times, no FINISHED_ROUND.
    fn synthetic(sample_type: u64, times: &[u64]) -> Vec<u8> {
        const TIME: u64 = 1 << 2;
        let rec = |out: &mut Vec<u8>, ty: u32, body: &[u8]| {
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&2u16.to_le_bytes());
            out.extend_from_slice(&(body.len() as u16 + 8).to_le_bytes());
            out.extend_from_slice(body);
        };
        let mut out = b"PERFILE2".to_vec();
        out.extend_from_slice(&16u64.to_le_bytes());
        let mut attr = vec![0u8; 128];
        attr[0..4].copy_from_slice(&1u32.to_le_bytes());
        attr[4..8].copy_from_slice(&128u32.to_le_bytes());
        attr[16..24].copy_from_slice(&1000u64.to_le_bytes());
        attr[24..32].copy_from_slice(&sample_type.to_le_bytes());
        attr.extend_from_slice(&7u64.to_le_bytes());
        rec(&mut out, 64, &attr);
        for (i, &t) in times.iter().enumerate() {
            let mut b = (0x1000 + i as u64).to_le_bytes().to_vec();
            b.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0]);
            if sample_type & TIME != 0 {
                b.extend_from_slice(&t.to_le_bytes());
            }
            b.extend_from_slice(&1000u64.to_le_bytes());
            rec(&mut out, 9, &b);
        }
        out
    }

    const IP_TID_PERIOD: u64 = 1 | 2 | (1 << 8);

    #[test]
    fn test_no_timestamps_delivers_at_once() {
        let data = synthetic(IP_TID_PERIOD, &[0; 50]);
        let mut d = StreamDecoder::new();
        let mut ips = Vec::new();
        d.push(&data, &mut |_, s| ips.push(s.ip)).unwrap();
        assert_eq!(ips.len(), 50, "all delivered inside push");
        let want: Vec<u64> = (0..50).map(|i| 0x1000 + i).collect();
        assert_eq!(ips, want, "in stream order");
        let p = d.finish(&mut |_, _| panic!("nothing left"));
        assert_eq!(p.events.first().map(|e| e.samples), Some(50));
        assert!(p.stopped.is_none());
    }

    #[test]
    fn test_timestamps_wait_for_a_round() {
        let times: Vec<u64> = (0..50).rev().map(|t| 100 + t).collect();
        let data = synthetic(IP_TID_PERIOD | 4, &times);
        let mut d = StreamDecoder::new();
        let mut n = 0;
        d.push(&data, &mut |_, _| n += 1).unwrap();
        assert_eq!(n, 0, "no FINISHED_ROUND: nothing deliverable yet");
        let mut got = Vec::new();
        d.flush_all(&mut |_, s| got.push(s.time));
        assert_eq!(got.len(), 50);
        assert!(got.windows(2).all(|w| w[0] <= w[1]), "time order");
        d.finish(&mut |_, _| panic!("flushed already"));
    }

    #[test]
    fn test_unfinished_round_is_bounded_with_one_warning() {
        let times: Vec<u64> = (0..400).map(|t| 1000 + (t * 7919) % 400).collect();
        let data = synthetic(IP_TID_PERIOD | 4, &times);
        let mut d = StreamDecoder::new();
        d.pending_cap = 512;
        let mut during = 0;
        for chunk in data.chunks(100) {
            d.push(chunk, &mut |_, _| during += 1).unwrap();
            assert!(
                d.reader.as_ref().unwrap().pending_bytes() <= 512,
                "pending stays under the cap"
            );
        }
        assert!(during > 300, "delivered early: {during}");
        let mut after = 0;
        let p = d.finish(&mut |_, _| after += 1);
        assert_eq!(during + after, 400);
        let warned = p
            .warnings
            .iter()
            .filter(|w| w.contains("without a FINISHED_ROUND"))
            .count();
        assert_eq!(warned, 1, "{:?}", p.warnings);
    }

    /// [`synthetic`] whose attr is tracepoint 316 (sched_switch in the tracing data), with a
    /// TRACING_DATA record (16 bytes, then the data padded to 8 bytes) after the attr.
    fn with_tracing_data(times: &[u64]) -> Vec<u8> {
        let mut out = synthetic(IP_TID_PERIOD, times);
        out[24..28].copy_from_slice(&2u32.to_le_bytes());
        out[32..40].copy_from_slice(&316u64.to_le_bytes());
        let mut data = crate::tracepoint::tests::tracing_data(
            &[
                crate::tracepoint::tests::SCHED,
                crate::tracepoint::tests::PROBES,
            ],
            false,
        );
        data.resize(data.len().next_multiple_of(8), 0);
        let mut rec = 66u32.to_le_bytes().to_vec();
        rec.extend_from_slice(&[0, 0, 16, 0]);
        rec.extend_from_slice(&(data.len() as u32).to_le_bytes());
        rec.extend_from_slice(&[0; 4]);
        rec.extend_from_slice(&data);
        let attr_end = 16 + 8 + 128 + 8;
        out.splice(attr_end..attr_end, rec);
        out
    }

    #[test]
    fn test_tracing_data_record_is_skipped_and_names_the_tracepoint() {
        let data = with_tracing_data(&[0; 5]);
        let whole = crate::Reader::from_bytes(&data).collect().unwrap();
        assert!(whole.stopped.is_none(), "{:?}", whole.stopped);
        assert_eq!(whole.events[0].name, "sched:sched_switch");
        assert_eq!(whole.events[0].samples, 5);
        let names: Vec<String> = whole
            .meta
            .tracepoints
            .iter()
            .map(|t| t.full_name())
            .collect();
        assert_eq!(names, ["sched:sched_switch", "probe_x:main"]);
        assert_eq!(whole.meta.tracepoints[0].fields.len(), 3);
        // In chunks smaller than the tracing data: it waits until it is whole.
        for chunk in [1, 7, 100] {
            let mut d = StreamDecoder::new();
            let mut n = 0;
            for c in data.chunks(chunk) {
                d.push(c, &mut |_, _| n += 1).unwrap();
            }
            let p = d.finish(&mut |_, _| n += 1);
            assert!(p.stopped.is_none(), "chunk {chunk}: {:?}", p.stopped);
            assert_eq!((p.events[0].name.as_str(), n), ("sched:sched_switch", 5));
        }
        // Cut inside the tracing data: a stop at the record, not a misread.
        let cut = &data[..16 + 144 + 40];
        let p = crate::Reader::from_bytes(cut).collect().unwrap();
        let s = p.stopped.expect("stop");
        assert_eq!((s.offset, s.record_type), (160, Some(66)));
        // A lying size: a stop, not a stream buffered without bound.
        let mut huge = data.clone();
        huge[168..172].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut d = StreamDecoder::new();
        d.push(&huge, &mut |_, _| {}).unwrap();
        let s = d.profile().stopped.clone().expect("stop at once");
        assert!(s.reason.contains("plausible size"), "{}", s.reason);
        // Damaged tracing data: a warning, the event keeps its numeric name.
        let mut bad = data.clone();
        bad[160 + 16] = b'X';
        let p = crate::Reader::from_bytes(&bad).collect().unwrap();
        assert!(p.stopped.is_none());
        assert!(p.events[0].name.starts_with("tracepoint:0x13c"));
        assert!(
            p.warnings.iter().any(|w| w.contains("magic")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn test_perf_messages_at_the_end_are_a_warning() {
        let mut data = synthetic(IP_TID_PERIOD, &[0; 3]);
        let clean = data.len();
        data.extend_from_slice(
            b"[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured ]\n",
        );
        for p in [
            crate::Reader::from_bytes(&data).collect().unwrap(),
            crate::Reader::from_read(&data[..]).collect().unwrap(),
        ] {
            assert!(p.stopped.is_none(), "{:?}", p.stopped);
            assert_eq!(p.samples.len(), 3);
            assert!(p.warnings.iter().any(|w| w.contains("own messages")));
        }
        // Other trailing bytes stay damage.
        data.truncate(clean);
        data.extend_from_slice(b"[ perf recorx\0\0\0\0");
        assert!(crate::Reader::from_bytes(&data)
            .collect()
            .unwrap()
            .stopped
            .is_some());
    }

    #[test]
    fn test_legacy_magic_pipe_both_byte_orders() {
        let mut data = synthetic(IP_TID_PERIOD, &[0; 4]);
        data[..8].copy_from_slice(b"PERFFILE");
        let p = crate::Reader::from_bytes(&data).collect().unwrap();
        assert_eq!(p.samples.len(), 4);
        let mut d = StreamDecoder::new();
        let mut n = 0;
        for c in data.chunks(3) {
            d.push(c, &mut |_, _| n += 1).unwrap();
        }
        d.finish(&mut |_, _| n += 1);
        assert_eq!(n, 4);
        assert!(!header::byte_order(&data).unwrap());
        data[8..16].copy_from_slice(&16u64.to_be_bytes());
        assert!(header::byte_order(&data).unwrap());
    }

    #[test]
    fn test_short_stream_finishes_with_stop() {
        let mut d = StreamDecoder::new();
        d.push(b"PERFILE2", &mut |_, _| {}).unwrap();
        let p = d.finish(&mut |_, _| {});
        let s = p.stopped.expect("a stop");
        assert!(s.reason.contains("too short"), "{}", s.reason);
    }
}
