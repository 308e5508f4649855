//! Firefox Profiler: the processed profile JSON that <https://profiler.firefox.com> opens
//! (File → Load a profile from file), written with `fxprof-processed-profile`, the crate
//! samply writes it with.
//!
//! What the file holds, from a [`StackProfile`] with its timeline:
//! - one process per pid (named after its main thread's command) and one thread track per
//!   thread of the primary event (the first in the file's order), every sample at its time;
//! - frames named with the function names (inlined functions as frames of their own,
//!   callers first): the symbols are in the file, the profile is marked symbolicated and
//!   needs no symbol server. Kernel frames have the `Kernel` category, others `User`.
//!   Code without a symbol is `[DSO file name]`;
//! - sample weights: the sample's period (nanoseconds for clock events, events otherwise),
//!   so the call tree's shares are the period shares of `culprit report`; clock events also
//!   give each sample that CPU time as its CPU delta (the activity graph);
//! - every other event as thread tracks of its own (`COMM EVENT`, same weights) and as a
//!   per-process counter track summing its period over time.
//!
//! The samples are not held in memory ([`FirefoxSpill`]): as the file is read, each is
//! written to an unlinked temporary file, grouped per thread track (24 bytes a sample); at
//! the end the profile is built by `fxprof-processed-profile` without them (each track and
//! counter with one tagged placeholder sample), serialized, and each placeholder replaced
//! by its track's samples read back in time order. Memory follows the tracks and stacks,
//! not the samples (a track whose samples came out of time order is sorted in memory).
//!
//! Limits: the crates.io release of `fxprof-processed-profile` (0.8) writes processed format
//! version 55; the profiler upgrades it when loading. The perf clock is not wall time: the
//! profile's start is the Unix epoch plus the first sample's perf time. Weights are 32-bit:
//! a sample whose period passes 2^31 − 1 is written as several samples at the same time, at
//! most [`MAX_PIECES`]; a file with a larger period (a damaged one: 2^63 − 1) has every
//! weight divided by one factor instead, so the shares stay and the output stays bounded by
//! the samples (`culprit export` warns with the factor).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::time::Duration;

use culprit_analysis::stacks::{PeriodUnit, StackOptions, StackProfile, TimedSample, NONE};
use culprit_symbols::ProfileInput;
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CounterHandle, CpuDelta, Frame, FrameFlags, FrameHandle,
    FrameInfo, ProcessHandle, Profile, ReferenceTimestamp, SamplingInterval, StackHandle,
    ThreadHandle, Timestamp,
};
use rustc_hash::FxHashMap;

use crate::common::{frame_name, primary_event, stream_stacks};
use crate::ExportError;

/// Writes `profile` (built with its timeline) as Firefox Profiler JSON; returns the number
/// of samples written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> Result<u64, ExportError> {
    if profile.timeline.is_empty() && !profile.samples.is_empty() {
        return Err(ExportError::Unsupported(
            "the Firefox Profiler export needs every sample's time: build the stack profile with the timeline".to_string(),
        ));
    }
    let mut spill = FirefoxSpill::new()?;
    for s in &profile.timeline {
        spill.add(s)?;
    }
    spill.write(profile, out)
}

/// What [`export`] read and wrote.
pub struct Streamed {
    /// The stack profile of the samples (no timeline), for the export's summary.
    pub profile: StackProfile,
    /// Samples written (a period past 2^31 − 1 is written as several).
    pub samples: u64,
    /// The largest period read.
    pub max_period: u64,
}

/// Reads `input` sample by sample, spilling each ([`FirefoxSpill`]), and writes its Firefox
/// profile to `out`: nothing is kept in memory per sample (what `culprit export` does with
/// stdin, which is read once and in order anyway); `progress(done, total)` reports bytes
/// read.
pub fn export(
    input: &ProfileInput,
    opts: &StackOptions,
    out: &mut dyn Write,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<Streamed, ExportError> {
    let mut spill = FirefoxSpill::new()?;
    let stacks = stream_stacks(input, opts, progress, |(.., timed)| spill.add(timed))?;
    let max_period = spill.max_period();
    let samples = spill.write(&stacks, out)?;
    Ok(Streamed {
        profile: stacks,
        samples,
        max_period,
    })
}

/// The most samples one sample is written as (each of weight up to 2^31 − 1).
pub const MAX_PIECES: u64 = 64;

/// What every weight is divided by so that the largest period (`max_period`) needs at most
/// [`MAX_PIECES`] samples: 1 (exact weights) unless a period passes
/// `MAX_PIECES × (2^31 − 1)`.
pub fn weight_scale(max_period: u64) -> u64 {
    max_period.div_ceil(MAX_PIECES * i32::MAX as u64).max(1)
}

/// A period divided by `scale`, rounded to the nearest, and at least 1 where it is not 0.
fn scaled(period: u64, scale: u64) -> u64 {
    match scale {
        1 => period,
        k => (period / k + u64::from(period % k >= k / 2)).max(u64::from(period > 0)),
    }
}

/// The weights one sample of `period` is written as: pieces of at most 2^31 − 1 (one, of 0,
/// for a period of 0).
fn pieces(period: u64) -> impl Iterator<Item = u64> {
    let max = i32::MAX as u64;
    let n = period.div_ceil(max).max(1);
    (0..n).map(move |k| (period - k * max).min(max))
}

/// One spilled sample: its time, period and stack (24 bytes on disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spilled {
    time: u64,
    period: u64,
    stack: u32,
}

const SPILLED_BYTES: usize = 24;

impl Spilled {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.period.to_le_bytes());
        out.extend_from_slice(&self.stack.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
    }

    fn decode(b: &[u8]) -> Spilled {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        Spilled {
            time: u64_at(0),
            period: u64_at(8),
            stack: u32::from_le_bytes(b[16..20].try_into().unwrap_or([0; 4])),
        }
    }
}

/// Samples kept in memory per track before they are written as one chunk.
const CHUNK: usize = 128;

/// One track's samples: its chunks in the file, the ones not written yet, and whether they
/// came in time order.
#[derive(Debug)]
struct TrackSpill {
    thread: u32,
    event: u32,
    chunks: Vec<(u64, u32)>,
    pending: Vec<Spilled>,
    samples: u64,
    first_time: u64,
    last_time: u64,
    in_order: bool,
}

/// The samples of a Firefox export, spilled to an unlinked temporary file per thread track
/// while the input is read ([`FirefoxSpill::add`]), then written ([`FirefoxSpill::write`]).
pub struct FirefoxSpill {
    file: File,
    end: u64,
    tracks: Vec<TrackSpill>,
    index: FxHashMap<(u32, u32), u32>,
    start: Option<u64>,
    max_period: u64,
    buf: Vec<u8>,
}

impl FirefoxSpill {
    /// An empty spill, its file created (and unlinked at once) in the temporary directory.
    pub fn new() -> io::Result<Self> {
        Ok(FirefoxSpill {
            file: unlinked_temp_file()?,
            end: 0,
            tracks: Vec::new(),
            index: FxHashMap::default(),
            start: None,
            max_period: 0,
            buf: Vec::with_capacity(CHUNK * SPILLED_BYTES),
        })
    }

    /// Adds one sample as the stack model counted it.
    pub fn add(&mut self, s: &TimedSample) -> io::Result<()> {
        self.start = Some(self.start.map_or(s.time, |t| t.min(s.time)));
        self.max_period = self.max_period.max(s.period);
        let next = self.tracks.len() as u32;
        let k = *self.index.entry((s.thread, s.event)).or_insert(next);
        if k == next {
            self.tracks.push(TrackSpill {
                thread: s.thread,
                event: s.event,
                chunks: Vec::new(),
                pending: Vec::with_capacity(CHUNK),
                samples: 0,
                first_time: s.time,
                last_time: s.time,
                in_order: true,
            });
        }
        let t = &mut self.tracks[k as usize];
        t.in_order &= s.time >= t.last_time;
        t.last_time = s.time;
        t.first_time = t.first_time.min(s.time);
        t.samples += 1;
        t.pending.push(Spilled {
            time: s.time,
            period: s.period,
            stack: s.stack,
        });
        if t.pending.len() == CHUNK {
            self.flush(k as usize)?;
        }
        Ok(())
    }

    /// The factor every weight is divided by ([`weight_scale`] of the largest period).
    pub fn weight_scale(&self) -> u64 {
        weight_scale(self.max_period)
    }

    /// The largest period added.
    pub fn max_period(&self) -> u64 {
        self.max_period
    }

    fn flush(&mut self, k: usize) -> io::Result<()> {
        let t = &mut self.tracks[k];
        if t.pending.is_empty() {
            return Ok(());
        }
        self.buf.clear();
        for s in &t.pending {
            s.encode(&mut self.buf);
        }
        self.file.write_all_at(&self.buf, self.end)?;
        t.chunks.push((self.end, t.pending.len() as u32));
        self.end += self.buf.len() as u64;
        t.pending.clear();
        Ok(())
    }

    /// Track `k`'s samples, in the order they are in the file.
    fn samples(&self, k: usize) -> TrackSamples<'_> {
        TrackSamples {
            file: &self.file,
            chunks: &self.tracks[k].chunks,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Writes track `k`'s samples again, sorted by time, when they came out of order
    /// (samples of one thread from several CPUs' buffers): sorted once, in memory, so that
    /// every later pass reads them in order.
    fn sort_track(&mut self, k: usize) -> io::Result<()> {
        if self.tracks[k].in_order {
            return Ok(());
        }
        let mut all = Vec::with_capacity(self.tracks[k].samples as usize);
        let mut samples = self.samples(k);
        while let Some(s) = samples.next_sample()? {
            all.push(s);
        }
        all.sort_by_key(|s| s.time);
        let t = &mut self.tracks[k];
        t.chunks.clear();
        t.in_order = true;
        for chunk in all.chunks(CHUNK) {
            self.tracks[k].pending.extend_from_slice(chunk);
            self.flush(k)?;
        }
        Ok(())
    }

    /// Writes the profile: `profile` is the finished stack model of the samples added.
    /// Returns the number of samples written.
    pub fn write<W: Write>(mut self, profile: &StackProfile, out: W) -> Result<u64, ExportError> {
        for k in 0..self.tracks.len() {
            self.flush(k)?;
            self.sort_track(k)?;
        }
        let start = self.start.unwrap_or(0);
        let scale = self.weight_scale();
        let (fx, primary) = new_profile(profile, start);
        let mut w = Writer::new(profile, fx, start, primary);
        // Processes start at their first sample, threads at theirs.
        let mut first_of_pid: FxHashMap<i32, u64> = FxHashMap::default();
        for t in &self.tracks {
            if let Some(info) = profile.threads.get(t.thread as usize) {
                let e = first_of_pid.entry(info.pid).or_insert(t.first_time);
                *e = (*e).min(t.first_time);
            }
        }
        // The thread tracks (with their stacks) and counters, each with a placeholder
        // sample that tags it in the serialized profile.
        let mut handles: Vec<Option<ThreadHandle>> = vec![None; self.tracks.len()];
        let mut lengths = vec![0u64; self.tracks.len()];
        // Per track: each stack node's index in the track's stack table.
        let mut stack_of: Vec<FxHashMap<u32, Option<u32>>> =
            vec![FxHashMap::default(); self.tracks.len()];
        let mut counters: Vec<((i32, u32), Vec<usize>)> = Vec::new();
        let mut counter_of: FxHashMap<(i32, u32), usize> = FxHashMap::default();
        for k in 0..self.tracks.len() {
            let (thread, event, first) = {
                let t = &self.tracks[k];
                (t.thread, t.event, t.first_time)
            };
            let Some(info) = profile.threads.get(thread as usize) else {
                continue;
            };
            if let Some(&at) = first_of_pid.get(&info.pid) {
                w.process(info.pid, at);
            }
            let Some(track) = w.track(thread, event, first) else {
                continue;
            };
            handles[k] = Some(track);
            let tag = Timestamp::from_nanos_since_reference(0);
            w.fx.add_sample(track, tag, None, CpuDelta::ZERO, TAG_BASE + k as i32);
            let mut samples = self.samples(k);
            let stacks = &mut stack_of[k];
            while let Some(s) = samples.next_sample()? {
                stacks.entry(s.stack).or_insert_with(|| {
                    w.stack(track, s.stack);
                    w.stack_index(track, s.stack)
                });
                lengths[k] += pieces(scaled(s.period, scale)).count() as u64;
            }
            if event != w.primary {
                let c = *counter_of.entry((info.pid, event)).or_insert_with(|| {
                    counters.push(((info.pid, event), Vec::new()));
                    counters.len() - 1
                });
                counters[c].1.push(k);
            }
        }
        for (c, ((pid, event), _)) in counters.iter().enumerate() {
            if let Some(h) = w.counter(*pid, *event) {
                let tag = Timestamp::from_nanos_since_reference(0);
                w.fx.add_counter_sample(h, tag, f64::from(TAG_BASE) + c as f64, 1);
            }
        }
        // The profile is serialized through a writer that replaces each placeholder by its
        // samples as it passes: the JSON is never held whole.
        let mut written = 0;
        let mut splice = Splicer {
            out: io::BufWriter::with_capacity(1 << 16, out),
            pending: Vec::new(),
            threshold: 1 << 16,
            replace: |out: &mut dyn Write, placeholder: Placeholder| match placeholder {
                Placeholder::Track(k) => {
                    let (Some(Some(_)), Some(&length), Some(stacks)) =
                        (handles.get(k), lengths.get(k), stack_of.get(k))
                    else {
                        return Ok(());
                    };
                    written += self.write_track(out, &w, k, stacks, length, scale)?;
                    Ok(())
                }
                Placeholder::Counter(c) => {
                    let members = counters.get(c).map_or(&[][..], |m| &m.1[..]);
                    self.write_counter(out, members, start, scale)
                }
            },
        };
        serde_json::to_writer(&mut splice, &w.fx).map_err(io::Error::from)?;
        splice.finish()?;
        Ok(written)
    }

    /// Writes track `k`'s samples object: the columns the crate writes, from the spill
    /// (`stacks`: the stack table index of each of its stack nodes).
    fn write_track(
        &self,
        out: &mut dyn Write,
        w: &Writer<'_>,
        k: usize,
        stacks: &FxHashMap<u32, Option<u32>>,
        length: u64,
        scale: u64,
    ) -> io::Result<u64> {
        let clock = w
            .model
            .events
            .get(self.tracks[k].event as usize)
            .is_some_and(|e| e.unit == PeriodUnit::Nanoseconds);
        write!(
            out,
            "{{\"length\":{length},\"weightType\":\"samples\",\"stack\":["
        )?;
        let mut sep = Separator::default();
        let mut samples = self.samples(k);
        while let Some(s) = samples.next_sample()? {
            let stack = stacks.get(&s.stack).copied().flatten();
            for _ in pieces(scaled(s.period, scale)) {
                sep.next(out)?;
                match stack {
                    Some(i) => write!(out, "{i}")?,
                    None => out.write_all(b"null")?,
                }
            }
        }
        out.write_all(b"],\"timeDeltas\":[")?;
        let mut sep = Separator::default();
        let mut prev = 0u64;
        let mut samples = self.samples(k);
        while let Some(s) = samples.next_sample()? {
            let t = s.time.saturating_sub(w.start);
            for _ in pieces(scaled(s.period, scale)) {
                sep.next(out)?;
                serde_json::to_writer(&mut *out, &((t - prev.min(t)) as f64 / 1_000_000.0))?;
                prev = t;
            }
        }
        out.write_all(b"],\"weight\":[")?;
        let mut sep = Separator::default();
        let mut samples = self.samples(k);
        while let Some(s) = samples.next_sample()? {
            for piece in pieces(scaled(s.period, scale)) {
                sep.next(out)?;
                write!(out, "{piece}")?;
            }
        }
        out.write_all(b"],\"threadCPUDelta\":[")?;
        let mut sep = Separator::default();
        let mut samples = self.samples(k);
        while let Some(s) = samples.next_sample()? {
            for piece in pieces(scaled(s.period, scale)) {
                sep.next(out)?;
                let micros = if clock { piece / 1000 } else { 0 };
                write!(out, "{micros}")?;
            }
        }
        out.write_all(b"]}")?;
        Ok(length)
    }

    /// Writes a counter's samples object: the samples of its tracks (`members`), merged in
    /// time order.
    fn write_counter(
        &self,
        out: &mut dyn Write,
        members: &[usize],
        start: u64,
        scale: u64,
    ) -> io::Result<()> {
        let length: u64 = members.iter().map(|&k| self.tracks[k].samples).sum();
        write!(out, "{{\"length\":{length},\"count\":[")?;
        let mut sep = Separator::default();
        self.merged(members, |s| {
            sep.next(out)?;
            serde_json::to_writer(&mut *out, &(scaled(s.period, scale) as f64))?;
            Ok(())
        })?;
        out.write_all(b"],\"number\":[")?;
        let mut sep = Separator::default();
        self.merged(members, |_| {
            sep.next(out)?;
            out.write_all(b"1")
        })?;
        out.write_all(b"],\"timeDeltas\":[")?;
        let mut sep = Separator::default();
        let mut prev = 0u64;
        self.merged(members, |s| {
            sep.next(out)?;
            let t = s.time.saturating_sub(start);
            serde_json::to_writer(&mut *out, &((t - prev.min(t)) as f64 / 1_000_000.0))?;
            prev = t;
            Ok(())
        })?;
        out.write_all(b"]}")
    }

    /// Visits the samples of the tracks `members` in time order.
    fn merged(
        &self,
        members: &[usize],
        mut visit: impl FnMut(Spilled) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut heads: Vec<(TrackSamples<'_>, Option<Spilled>)> = Vec::new();
        for &k in members {
            let mut s = self.samples(k);
            let first = s.next_sample()?;
            heads.push((s, first));
        }
        loop {
            let next = heads
                .iter()
                .enumerate()
                .filter_map(|(i, (_, h))| h.map(|h| (h.time, i)))
                .min();
            let Some((_, i)) = next else {
                return Ok(());
            };
            let (samples, head) = &mut heads[i];
            if let Some(s) = head.take() {
                visit(s)?;
            }
            *head = samples.next_sample()?;
        }
    }
}

/// A track's samples being read back from the spill file, chunk by chunk.
struct TrackSamples<'a> {
    file: &'a File,
    chunks: &'a [(u64, u32)],
    next: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl TrackSamples<'_> {
    fn next_sample(&mut self) -> io::Result<Option<Spilled>> {
        if self.pos >= self.buf.len() {
            let Some(&(offset, n)) = self.chunks.get(self.next) else {
                return Ok(None);
            };
            self.next += 1;
            self.buf.resize(n as usize * SPILLED_BYTES, 0);
            self.file.read_exact_at(&mut self.buf, offset)?;
            self.pos = 0;
        }
        let s = Spilled::decode(&self.buf[self.pos..self.pos + SPILLED_BYTES]);
        self.pos += SPILLED_BYTES;
        Ok(Some(s))
    }
}

/// Writes `,` before every item but the first.
#[derive(Default)]
struct Separator(bool);

impl Separator {
    fn next(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.0 {
            out.write_all(b",")?;
        }
        self.0 = true;
        Ok(())
    }
}

/// The weights (thread tracks) and counts (counters) of the placeholder samples are
/// `TAG_BASE + index`.
const TAG_BASE: i32 = 1_000_000_000;
/// How the crate writes a thread's placeholder samples, up to its tag.
const TRACK_PLACEHOLDER: &str = "\"samples\":{\"length\":1,\"weightType\":\"samples\",\"stack\":[null],\"timeDeltas\":[0.0],\"weight\":[";
/// How the crate writes a counter's placeholder samples, up to its tag.
const COUNTER_PLACEHOLDER: &str = "\"samples\":{\"length\":1,\"count\":[";

/// A placeholder of the serialized profile.
enum Placeholder {
    Track(usize),
    Counter(usize),
}

/// A writer that passes the serialized profile to `out`, writing each placeholder samples
/// object with `replace` instead. (Strings in the JSON escape their quotes: the markers,
/// which begin with a quote, cannot be inside one.)
struct Splicer<W: Write, F: FnMut(&mut dyn Write, Placeholder) -> io::Result<()>> {
    out: W,
    /// Bytes not passed yet: they may begin a placeholder.
    pending: Vec<u8>,
    /// Pending bytes are looked at once there are this many.
    threshold: usize,
    replace: F,
}

/// The longest a placeholder object runs past its marker: its tag and the columns after it.
const PLACEHOLDER_TAIL: usize = 64;

impl<W: Write, F: FnMut(&mut dyn Write, Placeholder) -> io::Result<()>> Splicer<W, F> {
    /// Passes what cannot begin an unfinished placeholder; `end`: the input is complete.
    fn pass(&mut self, end: bool) -> io::Result<()> {
        let mut from = 0;
        loop {
            let rest = &self.pending[from..];
            let found = [
                (find(rest, TRACK_PLACEHOLDER.as_bytes()), true),
                (find(rest, COUNTER_PLACEHOLDER.as_bytes()), false),
            ]
            .into_iter()
            .filter_map(|(at, track)| at.map(|at| (at, track)))
            .min();
            let Some((at, track)) = found else {
                break;
            };
            let marker = if track {
                TRACK_PLACEHOLDER
            } else {
                COUNTER_PLACEHOLDER
            };
            let tag_at = from + at + marker.len();
            let Some(close) = self.pending[tag_at..].iter().position(|&b| b == b'}') else {
                if end {
                    break;
                }
                // Unfinished: wait for the rest.
                self.out.write_all(&self.pending[from..from + at])?;
                self.pending.drain(..from + at);
                return Ok(());
            };
            let close = tag_at + close;
            let digits: String = self.pending[tag_at..close]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .map(|&b| char::from(b))
                .collect();
            let index = digits
                .parse::<i64>()
                .ok()
                .and_then(|t| usize::try_from(t - i64::from(TAG_BASE)).ok());
            let object = from + at + "\"samples\":".len();
            self.out.write_all(&self.pending[from..object])?;
            match index {
                Some(i) if track => (self.replace)(&mut self.out, Placeholder::Track(i))?,
                Some(i) => (self.replace)(&mut self.out, Placeholder::Counter(i))?,
                None => self.out.write_all(&self.pending[object..close + 1])?,
            }
            from = close + 1;
        }
        // Keep what could begin a marker.
        let keep = if end {
            0
        } else {
            (TRACK_PLACEHOLDER.len() + PLACEHOLDER_TAIL).min(self.pending.len() - from)
        };
        let upto = self.pending.len() - keep;
        self.out.write_all(&self.pending[from..upto])?;
        self.pending.drain(..upto);
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        self.pass(true)?;
        self.out.flush()
    }
}

impl<W: Write, F: FnMut(&mut dyn Write, Placeholder) -> io::Result<()>> Write for Splicer<W, F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= self.threshold {
            self.pass(false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A temporary file, already unlinked: nothing is left behind, whatever happens.
fn unlinked_temp_file() -> io::Result<File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    for _ in 0..100 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "culprit-firefox-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create a temporary file in {}: {e}", dir.display()),
                ))
            }
        }
    }
    Err(io::Error::other("cannot name a temporary file"))
}

/// A new Firefox profile for `profile` (its start the first sample's time), and its
/// primary event.
fn new_profile(profile: &StackProfile, start: u64) -> (Profile, u32) {
    let primary_index = primary_event(profile);
    let primary = primary_index.and_then(|e| profile.events.get(e as usize));
    let interval = match primary {
        Some(e) if e.unit == PeriodUnit::Nanoseconds && e.samples > 0 => {
            SamplingInterval::from_nanos((e.period / e.samples).max(1))
        }
        _ => SamplingInterval::from_millis(1),
    };
    let product = profile
        .summary
        .cmdline
        .clone()
        .unwrap_or_else(|| profile.summary.input.clone());
    let mut fx = Profile::new(
        &product,
        ReferenceTimestamp::from_duration_since_unix_epoch(Duration::from_nanos(start)),
        interval,
    );
    if let Some(os) = &profile.summary.os_release {
        fx.set_os_name(&format!("Linux {os}"));
    }
    fx.set_symbolicated(true);
    (fx, primary_index.unwrap_or(0))
}

/// Building state: handles of what was already added.
struct Writer<'a> {
    model: &'a StackProfile,
    /// The first sample's time: timestamps count from it.
    start: u64,
    fx: Profile,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    processes: FxHashMap<i32, ProcessHandle>,
    /// Per (model thread, event), at `thread * events + event`: the thread track.
    tracks: Vec<Option<ThreadHandle>>,
    /// Per (pid, event), for the events besides the primary one.
    counters: FxHashMap<(i32, u32), CounterHandle>,
    /// Per (track, function, kernel).
    frames: FxHashMap<(ThreadHandle, u32, bool), FrameHandle>,
    /// Per (track, stack node): its innermost frame's stack.
    stacks: FxHashMap<(ThreadHandle, u32), StackHandle>,
    /// Each stack's index in its thread's stack table: the crate numbers a thread's stacks
    /// in the order they are first interned, as `next_stack` counts them.
    stack_ids: FxHashMap<StackHandle, u32>,
    next_stack: FxHashMap<ThreadHandle, u32>,
    /// The event of the threads' main tracks.
    primary: u32,
}

impl<'a> Writer<'a> {
    fn new(model: &'a StackProfile, mut fx: Profile, start: u64, primary: u32) -> Self {
        Writer {
            model,
            start,
            user: fx.add_category("User", CategoryColor::Yellow).into(),
            kernel: fx.add_category("Kernel", CategoryColor::Orange).into(),
            fx,
            processes: FxHashMap::default(),
            tracks: vec![None; model.threads.len() * model.events.len()],
            counters: FxHashMap::default(),
            frames: FxHashMap::default(),
            stacks: FxHashMap::default(),
            stack_ids: FxHashMap::default(),
            next_stack: FxHashMap::default(),
            primary,
        }
    }

    /// The index of the stack of `node` on `track` in the track's stack table (once
    /// interned by [`Writer::stack`]).
    fn stack_index(&self, track: ThreadHandle, node: u32) -> Option<u32> {
        let handle = self.stacks.get(&(track, node))?;
        self.stack_ids.get(handle).copied()
    }

    fn timestamp(&self, time: u64) -> Timestamp {
        Timestamp::from_nanos_since_reference(time.saturating_sub(self.start))
    }

    fn process(&mut self, pid: i32, time: u64) -> ProcessHandle {
        if let Some(&p) = self.processes.get(&pid) {
            return p;
        }
        let threads = &self.model.threads;
        let name = threads
            .iter()
            .find(|t| t.pid == pid && t.tid == pid)
            .or_else(|| threads.iter().find(|t| t.pid == pid))
            .map_or("", |t| t.comm.as_str());
        let at = self.timestamp(time);
        let p = self.fx.add_process(name, pid as u32, at);
        self.processes.insert(pid, p);
        p
    }

    fn track(&mut self, thread: u32, event: u32, time: u64) -> Option<ThreadHandle> {
        let slot = thread as usize * self.model.events.len() + event as usize;
        if let Some(&Some(t)) = self.tracks.get(slot) {
            return Some(t);
        }
        if event as usize >= self.model.events.len() {
            return None;
        }
        let info = self.model.threads.get(thread as usize)?;
        let process = self.process(info.pid, time);
        let at = self.timestamp(time);
        let first_event = event == self.primary;
        let is_main = first_event && info.tid == info.pid;
        let t = self.fx.add_thread(process, info.tid as u32, at, is_main);
        let name = if first_event {
            info.comm.clone()
        } else {
            let event = self
                .model
                .events
                .get(event as usize)
                .map_or("", |e| &e.name);
            format!("{} {event}", info.comm)
        };
        self.fx.set_thread_name(t, &name);
        if first_event {
            self.fx.add_initial_visible_thread(t);
        }
        if let Some(s) = self.tracks.get_mut(slot) {
            *s = Some(t);
        }
        Some(t)
    }

    fn frame(&mut self, track: ThreadHandle, function: u32, kernel: bool) -> FrameHandle {
        if let Some(&f) = self.frames.get(&(track, function, kernel)) {
            return f;
        }
        let name = frame_name(self.model, function);
        let label = self.fx.intern_string(&name);
        let info = FrameInfo {
            frame: Frame::Label(label),
            category_pair: if kernel { self.kernel } else { self.user },
            flags: FrameFlags::empty(),
        };
        let f = self.fx.intern_frame(track, info);
        self.frames.insert((track, function, kernel), f);
        f
    }

    /// The stack of a node on a track, its callers interned first.
    fn stack(&mut self, track: ThreadHandle, node: u32) -> Option<StackHandle> {
        // The nodes from `node` up to the first one already interned (or the root).
        let mut path = Vec::new();
        let mut n = node;
        let mut parent = None;
        while n != NONE {
            if let Some(&s) = self.stacks.get(&(track, n)) {
                parent = Some(s);
                break;
            }
            let Some(sn) = self.model.nodes.get(n as usize) else {
                break;
            };
            path.push(n);
            // Parents come before children in the tree: anything else would loop.
            if sn.parent != NONE && sn.parent >= n {
                break;
            }
            n = sn.parent;
        }
        for &n in path.iter().rev() {
            let loc = self.model.nodes[n as usize].location;
            if let Some(loc) = self.model.locations.get(loc as usize) {
                // Frames are innermost first; the stack grows from the caller.
                for fr in loc.frames.iter().rev() {
                    let frame = self.frame(track, fr.function, loc.kernel);
                    let stack = self.fx.intern_stack(track, parent, frame);
                    if !self.stack_ids.contains_key(&stack) {
                        let next = self.next_stack.entry(track).or_insert(0);
                        self.stack_ids.insert(stack, *next);
                        *next += 1;
                    }
                    parent = Some(stack);
                }
            }
            if let Some(s) = parent {
                self.stacks.insert((track, n), s);
            }
        }
        parent
    }

    /// The counter of `event` in process `pid` (created at its first use).
    fn counter(&mut self, pid: i32, event: u32) -> Option<CounterHandle> {
        if let Some(&c) = self.counters.get(&(pid, event)) {
            return Some(c);
        }
        let &process = self.processes.get(&pid)?;
        let name = self
            .model
            .events
            .get(event as usize)
            .map_or("", |e| &e.name);
        let c = self.fx.add_counter(
            process,
            name,
            "perf event",
            &format!("{name}: period per sample"),
        );
        self.counters.insert((pid, event), c);
        Some(c)
    }
}

#[cfg(test)]
mod tests;
