//! The output of a recording across its files: compression (`-z`), the size bounds
//! (`--max-size`, `--switch-output=SIZE`) checked between whole records, and switching to a
//! new file (`--switch-output`, `--overwrite` snapshots) that stands alone: its own header,
//! attrs, synthesized kernel and process state, features and build ids.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use culprit_decode::abi::record_type;

use super::synth::{synthesize_kernel, synthesize_process};
use super::tracker::Tracker;
use super::Writer;
use crate::modes::{self, CompressionSummary, Notice, RecordModes, RecordedFile, Retention};
use crate::perfdata::compress::Compressor;
use crate::perfdata::records::{self, SampleId};
use crate::perfdata::{Attr, BuildIdEntry, Features, FileAttr, PerfDataWriter};
use crate::procfs;

/// Raw record bytes compressed between two checks of a size bound: the most a compressed
/// file goes past its bound.
const PIECE: u64 = 64 << 10;

/// What a new file starts with besides the header: the kernel's mapping and the processes
/// of the target, from /proc (perf's `record__synthesize`).
#[derive(Debug, Clone)]
pub(super) struct StateSpec {
    /// The attr and id the synthesized records carry (the event with the side-band flags).
    pub attr: Attr,
    pub id: u64,
    /// `-a`: every process.
    pub system: bool,
    /// The processes to describe (the `-p` targets, the launched command), besides those
    /// the recording has seen so far.
    pub pids: Vec<i32>,
}

impl StateSpec {
    /// The records of the state as it is now.
    pub fn synthesize(&self, tracker: &Tracker) -> Vec<u8> {
        let mut out = Vec::new();
        synthesize_kernel(&mut out, &self.attr, self.id);
        let mut pids: Vec<i32> = if self.system {
            procfs::all_pids()
        } else {
            let mut p = self.pids.clone();
            p.extend(tracker.known_pids());
            p.retain(|&pid| procfs::process_alive(pid));
            p
        };
        pids.sort_unstable();
        pids.dedup();
        // A process that exited before the switch (its samples may still be in the rings,
        // as at the last switch, when the command has exited: a zombie without maps, or
        // gone) is described from what the stream said of it; without that, the new file's
        // samples of it had no mappings.
        let mut gone: Vec<i32> = tracker
            .known_pids()
            .into_iter()
            .filter(|pid| pids.binary_search(pid).is_err())
            .collect();
        gone.sort_unstable();
        for &pid in &pids {
            if synthesize_process(&mut out, &self.attr, self.id, pid) == 0 {
                gone.push(pid);
            }
        }
        for pid in gone {
            tracker.synthesize_from_stream(&mut out, &self.attr, self.id, pid as u32);
        }
        out
    }
}

/// How a recording's output ended.
pub(super) struct Finished {
    /// The last file's size (or the stream's).
    pub file_size: u64,
    /// Bytes of records in the last file.
    pub data_size: u64,
    /// The first write error, the closed file's size (or why it could not be closed), and
    /// whether it lacks its features.
    pub failure: Option<(io::Error, Result<u64, io::Error>, bool)>,
    /// Every file finished, in order (removed ones included).
    pub recorded: Vec<RecordedFile>,
    /// The files kept by `--switch-max-files`, oldest first (all of them without it).
    pub kept: Vec<PathBuf>,
    /// Files removed by `--switch-max-files`.
    pub removed: Vec<PathBuf>,
    /// The build ids of every file.
    pub build_ids: Vec<BuildIdEntry>,
    /// What compression did.
    pub compression: Option<CompressionSummary>,
}

/// The output while recording.
pub(super) struct Files {
    writer: Option<Writer>,
    attrs: Vec<FileAttr>,
    base_features: Features,
    /// The -o path (None for a stream).
    path: Option<PathBuf>,
    level: Option<u32>,
    chunk_limit: usize,
    compressor: Option<Compressor>,
    zbuf: Vec<u8>,
    max_size: Option<u64>,
    switch_size: Option<u64>,
    /// `--switch-output`: the last file gets a switched name too.
    timestamped: bool,
    retention: Retention,
    /// `--max-size` reached: nothing more is written.
    pub full: bool,
    /// Samples not written since the bound was reached.
    pub dropped_samples: u64,
    dropped_in_file: u64,
    raw_bytes: u64,
    compressed_bytes: u64,
    recorded: Vec<RecordedFile>,
    build_ids: Vec<BuildIdEntry>,
    /// Data size once the synthesized state is written (a file with nothing more is not
    /// switched again).
    state_end: u64,
    /// The timestamp of the last switched name.
    last_stamp: Option<u64>,
}

impl Files {
    /// The output of a recording whose first file (or stream) is `writer`.
    pub fn new(
        writer: Writer,
        attrs: Vec<FileAttr>,
        base_features: Features,
        path: Option<PathBuf>,
        modes: &RecordModes,
        chunk_limit: usize,
    ) -> io::Result<Files> {
        let compressor = match modes.compression_level {
            Some(level) => Some(Compressor::new(level, chunk_limit)?),
            None => None,
        };
        Ok(Files {
            writer: Some(writer),
            attrs,
            base_features,
            path,
            level: modes.compression_level,
            chunk_limit,
            compressor,
            zbuf: Vec::new(),
            max_size: modes.max_size,
            switch_size: match modes.switch_output {
                Some(modes::SwitchOutput::Size(s)) => Some(s),
                _ => None,
            },
            timestamped: modes.switch_output.is_some(),
            retention: Retention::new(modes.switch_max_files),
            full: false,
            dropped_samples: 0,
            dropped_in_file: 0,
            raw_bytes: 0,
            compressed_bytes: 0,
            recorded: Vec::new(),
            build_ids: Vec::new(),
            state_end: 0,
            last_stamp: None,
        })
    }

    /// The current output (until [`Files::finish`], or a failed switch).
    pub fn writer(&mut self) -> Option<&mut Writer> {
        self.writer.as_mut()
    }

    /// Bytes of records in the current file.
    pub fn data_size(&self) -> u64 {
        self.writer.as_ref().map_or(0, Writer::data_size)
    }

    /// Bytes of the current file so far (header, attrs, records).
    pub fn file_bytes(&self) -> u64 {
        match &self.writer {
            Some(Writer::File(w)) => w.data_offset() + w.data_size(),
            Some(Writer::Pipe(w)) => w.written(),
            None => 0,
        }
    }

    /// Writes the synthesized state a file starts with (never cut by a size bound).
    pub fn write_state(&mut self, state: &[u8], tracker: &mut Tracker) -> io::Result<()> {
        self.write_piece(state, tracker)?;
        self.state_end = self.data_size();
        Ok(())
    }

    /// Writes whole records as they are or compressed, and walks them with the tracker. On a
    /// write error the tracker sees what the file keeps (uncompressed: the records written
    /// whole; compressed: none of this piece).
    fn write_piece(&mut self, piece: &[u8], tracker: &mut Tracker) -> io::Result<()> {
        let Some(c) = self.compressor.as_mut() else {
            let w = self.writer.as_mut().ok_or_else(no_file)?;
            let before = w.data_size();
            return match w.write_data(piece) {
                Ok(()) => {
                    tracker.walk(piece);
                    Ok(())
                }
                Err(e) => {
                    let kept = (w.data_size() - before) as usize;
                    tracker.walk(&piece[..kept.min(piece.len())]);
                    Err(e)
                }
            };
        };
        // As perf: FINISHED_ROUND stays outside the compressed data.
        let round = piece.len() >= 8
            && piece[piece.len() - 8..piece.len() - 4] == record_type::FINISHED_ROUND.to_le_bytes()
            && records::whole_records_len(&piece[piece.len() - 8..]) == 8;
        let body = if round {
            &piece[..piece.len() - 8]
        } else {
            piece
        };
        self.zbuf.clear();
        c.compress(body, &mut self.zbuf)?;
        if round {
            self.zbuf.extend_from_slice(&piece[piece.len() - 8..]);
        }
        self.writer
            .as_mut()
            .ok_or_else(no_file)?
            .write_data(&self.zbuf)?;
        tracker.walk(piece);
        Ok(())
    }

    /// Bytes of records after the file's synthesized state: what `--switch-output=SIZE`
    /// counts (with `-a` the state of every process can be hundreds of KiB: counting it, a
    /// small SIZE would switch after every drain).
    fn records_after_state(&self) -> u64 {
        self.data_size().saturating_sub(self.state_end)
    }

    /// Room left before a size bound, and whether it is `--max-size`'s.
    fn room(&self) -> Option<(u64, bool)> {
        let max = self
            .max_size
            .map(|m| (m.saturating_sub(self.file_bytes()), true));
        let switch = self
            .switch_size
            .map(|s| (s.saturating_sub(self.records_after_state()), false));
        match (max, switch) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Writes records (whole, back to back), switching files or stopping at the size
    /// bounds between records. Records past `--max-size` are counted as dropped.
    pub fn emit(
        &mut self,
        mut rest: &[u8],
        tracker: &mut Tracker,
        state: &StateSpec,
        notice: &mut dyn FnMut(Notice),
        warn: &mut dyn FnMut(String),
    ) -> io::Result<()> {
        while !rest.is_empty() {
            if self.full {
                self.drop_records(rest);
                return Ok(());
            }
            let mut take = match self.room() {
                None => rest.len(),
                Some((room, _)) => {
                    let cap = if self.compressor.is_some() {
                        room.min(PIECE)
                    } else {
                        room
                    };
                    prefix_within(rest, cap)
                }
            };
            if take == 0 {
                let at_max = self.room().is_some_and(|(_, max)| max);
                if at_max {
                    self.reach_max(notice);
                    continue;
                }
                if self.records_after_state() > 0 {
                    self.switch(tracker, state, notice, warn)?;
                    continue;
                }
                // A record bigger than the whole --switch-output size: it goes alone.
                take = match first_record_len(rest) {
                    n if n >= 8 => n,
                    _ => rest.len(),
                };
            }
            let (piece, tail) = rest.split_at(take);
            self.write_piece(piece, tracker)?;
            rest = tail;
            if let Some(max) = self.max_size {
                if self.file_bytes() >= max {
                    self.reach_max(notice);
                    continue;
                }
            }
            if self
                .switch_size
                .is_some_and(|s| self.records_after_state() >= s)
            {
                self.switch(tracker, state, notice, warn)?;
            }
        }
        Ok(())
    }

    fn reach_max(&mut self, notice: &mut dyn FnMut(Notice)) {
        if !self.full {
            self.full = true;
            notice(Notice::SizeLimit(self.file_bytes()));
        }
    }

    /// Counts the samples of records that are not written.
    pub fn drop_records(&mut self, rest: &[u8]) {
        let mut pos = 0;
        while let Some(h) = rest.get(pos..pos + 8) {
            let size = u16::from_le_bytes([h[6], h[7]]) as usize;
            if size < 8 {
                break;
            }
            if h[..4] == record_type::SAMPLE.to_le_bytes() {
                self.dropped_samples += 1;
                self.dropped_in_file += 1;
            }
            pos += size;
        }
    }

    /// The features of the current file.
    fn features(&mut self, tracker: &Tracker) -> Features {
        let mut f = self.base_features.clone();
        f.build_ids = tracker.build_ids();
        f.sample_time = tracker.first_time.map(|t| (t, tracker.last_time));
        if let Some(c) = &self.compressor {
            let mut h = c.header();
            h.mmap_len = u32::try_from(self.chunk_limit).unwrap_or(u32::MAX);
            f.compressed = Some(h);
        }
        for b in &f.build_ids {
            if !self.build_ids.contains(b) {
                self.build_ids.push(b.clone());
            }
        }
        f
    }

    /// A LOST_SAMPLES record of the samples dropped at `--max-size`, so that the file says
    /// what it misses (perf counts them as lost).
    fn write_dropped(&mut self) -> io::Result<()> {
        if self.dropped_in_file == 0 {
            return Ok(());
        }
        let Some(first) = self.attrs.first() else {
            return Ok(());
        };
        let mut r = Vec::with_capacity(64);
        r.extend_from_slice(&record_type::LOST_SAMPLES.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&self.dropped_in_file.to_le_bytes());
        let sid = SampleId {
            pid: u32::MAX,
            tid: u32::MAX,
            time: 0,
            id: first.ids.first().copied().unwrap_or(0),
            cpu: 0,
        };
        records::push_sample_id(&mut r, &first.attr, &sid);
        let size = r.len() as u16;
        r[6..8].copy_from_slice(&size.to_le_bytes());
        self.dropped_in_file = 0;
        match self.writer.as_mut() {
            Some(w) => w.write_data(&r),
            None => Ok(()),
        }
    }

    /// Closes the current file with its features. Returns its size, or the error with the
    /// closed file's size (or why it could not be closed) and whether it lacks features.
    #[allow(clippy::type_complexity)]
    fn close_current(
        &mut self,
        tracker: &Tracker,
        failed: Option<io::Error>,
    ) -> Result<u64, (io::Error, Result<u64, io::Error>, bool)> {
        let failed = match (failed, self.write_dropped()) {
            (Some(e), _) | (None, Err(e)) => Some(e),
            (None, Ok(())) => None,
        };
        let features = self.features(tracker);
        if let Some(c) = self.compressor.as_ref() {
            self.raw_bytes += c.raw_bytes;
            self.compressed_bytes += c.compressed_bytes;
        }
        match self.writer.take() {
            Some(Writer::File(w)) => match w.close(&features) {
                Ok(closed) => {
                    let without = closed.features_error.is_some();
                    match failed.or(closed.features_error) {
                        Some(e) => Err((e, Ok(closed.size), without)),
                        None => Ok(closed.size),
                    }
                }
                Err(close_error) => {
                    let copy = io::Error::new(close_error.kind(), close_error.to_string());
                    Err((failed.unwrap_or(close_error), Err(copy), false))
                }
            },
            Some(Writer::Pipe(w)) => {
                if let Some(e) = failed {
                    return Err((e, Ok(0), false));
                }
                match w.finish(&features.build_ids) {
                    Ok((_, size)) => Ok(size),
                    Err(e) => Err((e, Ok(0), false)),
                }
            }
            None => match failed {
                Some(e) => Err((e, Ok(0), false)),
                None => Ok(0),
            },
        }
    }

    /// Gives the finished file its switched name and applies `--switch-max-files`.
    fn dump(
        &mut self,
        size: u64,
        samples: u64,
        writing: usize,
        notice: &mut dyn FnMut(Notice),
        warn: &mut dyn FnMut(String),
    ) -> io::Result<PathBuf> {
        let path = self.path.clone().ok_or_else(not_a_file)?;
        let name = modes::switched_name(&path, SystemTime::now(), &mut self.last_stamp);
        std::fs::rename(&path, &name)?;
        let file = RecordedFile {
            path: name.clone(),
            size,
            samples,
        };
        self.recorded.push(file.clone());
        notice(Notice::Dumped(file));
        let before = self.retention.removed.len();
        for e in self.retention.push(name.clone(), writing) {
            warn(format!(
                "--switch-max-files: cannot remove an old file: {e}"
            ));
        }
        for old in self.retention.removed[before..].iter().cloned() {
            notice(Notice::Removed(old));
        }
        Ok(name)
    }

    /// Finishes the current file, gives it its switched name, and starts the next one with
    /// the state as it is now.
    pub fn switch(
        &mut self,
        tracker: &mut Tracker,
        state: &StateSpec,
        notice: &mut dyn FnMut(Notice),
        warn: &mut dyn FnMut(String),
    ) -> io::Result<()> {
        let samples = tracker.file_samples;
        let size = self.close_current(tracker, None).map_err(|(e, ..)| e)?;
        self.dump(size, samples, 1, notice, warn)?;
        let path = self.path.clone().ok_or_else(not_a_file)?;
        let file = File::create(&path)?;
        self.writer = Some(Writer::File(PerfDataWriter::new(file, self.attrs.clone())?));
        if let Some(level) = self.level {
            // Each file has its own zstd stream: it is read alone.
            self.compressor = Some(Compressor::new(level, self.chunk_limit)?);
        }
        tracker.start_file();
        let synth = state.synthesize(tracker);
        self.write_state(&synth, tracker)
    }

    /// Closes the output: the last file (switched name with `--switch-output`), or the
    /// stream's build ids.
    pub fn finish(
        mut self,
        tracker: &Tracker,
        failed: Option<io::Error>,
        notice: &mut dyn FnMut(Notice),
        warn: &mut dyn FnMut(String),
    ) -> Finished {
        let data_size = self.data_size();
        let samples = tracker.file_samples;
        let closed = self.close_current(tracker, failed);
        let mut failure = None;
        let file_size = match closed {
            Ok(size) => size,
            Err((e, closed, without)) => {
                let size = closed.as_ref().map_or(0, |s| *s);
                failure = Some((e, closed, without));
                size
            }
        };
        let mut kept = Vec::new();
        if let Some(path) = self.path.clone() {
            if self.timestamped && failure.is_none() {
                if let Err(e) = self.dump(file_size, samples, 0, notice, warn) {
                    warn(format!(
                        "cannot give {} its switched name: {e}",
                        path.display()
                    ));
                    kept.push(path.clone());
                }
            } else {
                self.recorded.push(RecordedFile {
                    path: path.clone(),
                    size: file_size,
                    samples,
                });
            }
            kept.splice(0..0, self.retention.kept());
            if !self.timestamped {
                kept.push(path);
            }
        }
        Finished {
            file_size,
            data_size,
            failure,
            recorded: self.recorded,
            kept,
            removed: self.retention.removed,
            build_ids: self.build_ids,
            compression: self.level.map(|level| CompressionSummary {
                level,
                raw_bytes: self.raw_bytes,
                compressed_bytes: self.compressed_bytes,
            }),
        }
    }
}

/// No file is open: a switch failed to start the next one (the recording stops on that error).
fn not_a_file() -> io::Error {
    io::Error::other("a stream cannot be switched to a new file")
}

/// No file is open: a switch failed to start the next one (the recording stops on that error).
fn no_file() -> io::Error {
    io::Error::other("no output file is open (starting the next file failed)")
}

/// The length of the whole records at the start of `bytes` that fit in `cap` bytes.
fn prefix_within(bytes: &[u8], cap: u64) -> usize {
    let mut pos = 0usize;
    while let Some(h) = bytes.get(pos + 6..pos + 8) {
        let size = u16::from_le_bytes([h[0], h[1]]) as usize;
        if size < 8 || pos + size > bytes.len() || (pos + size) as u64 > cap {
            break;
        }
        pos += size;
    }
    pos
}

fn first_record_len(bytes: &[u8]) -> usize {
    bytes
        .get(6..8)
        .map_or(0, |h| u16::from_le_bytes([h[0], h[1]]) as usize)
        .min(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_prefix_within_stops_at_whole_records() {
        let mut b = Vec::new();
        for _ in 0..3 {
            b.extend_from_slice(&9u32.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            b.extend_from_slice(&16u16.to_le_bytes());
            b.extend_from_slice(&[0; 8]);
        }
        assert_eq!(prefix_within(&b, 0), 0);
        assert_eq!(prefix_within(&b, 15), 0);
        assert_eq!(prefix_within(&b, 16), 16);
        assert_eq!(prefix_within(&b, 40), 32);
        assert_eq!(prefix_within(&b, u64::MAX), 48);
        assert_eq!(prefix_within(&b[..40], u64::MAX), 32);
        assert_eq!(first_record_len(&b), 16);
    }
}
