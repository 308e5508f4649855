//! culprit-decode: reads perf.data files (file mode and pipe mode) into culprit's sample model,
//! and decodes raw precise-sample payloads (AMD IBS, Intel PEBS fields).
//!
//! Pure: no syscalls beyond reading the file it is given. Main types: [`model::Profile`]
//! (everything a file says, resolved to DSOs), [`model::Sample`], [`model::Dso`].
//!
//! Entry points: [`read_file`], [`read_file_with_progress`], [`read_bytes`], [`read_reader`],
//! and the streaming [`read_file_streaming`] / [`read_bytes_streaming`] /
//! [`read_reader_streaming`] (samples go to a callback instead of memory); [`StreamDecoder`]
//! decodes a pipe-mode stream pushed in chunks (live recordings). See docs/decode.md for what
//! is read and how.
//! A truncated or corrupt file is not an error: the profile holds everything read before the
//! damage and [`model::Profile::stopped`] says where and why reading stopped. An `Err` means
//! nothing usable exists (not a perf.data file, or its header or attributes are unreadable).
//!
//! ```no_run
//! let profile = culprit_decode::read_file(std::path::Path::new("perf.data")).unwrap();
//! for e in &profile.events {
//!     println!("{}: {} samples, period {}", e.name, e.samples, e.period);
//! }
//! if let Some(stop) = &profile.stopped {
//!     eprintln!("stopped at offset {}: {}", stop.offset, stop.reason);
//! }
//! ```
#![deny(missing_docs)]

pub mod abi;
mod cursor;
mod header;
pub mod ibs;
pub mod model;
mod names;
pub mod pebs;
mod reader;
mod state;
mod stream;
pub mod tracepoint;
pub mod unwind;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use model::Profile;
pub use stream::{read_reader_streaming, StreamDecoder};

/// Why a perf.data input could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading from a stream failed.
    #[error("cannot read the input stream: {0}")]
    Stream(#[from] std::io::Error),
    /// Fewer bytes than a perf.data header.
    #[error("not a perf.data file: only {0} bytes, too short for the header at offset 0")]
    TooShort(u64),
    /// The first 8 bytes are not `PERFILE2`.
    #[error("not a perf.data file: bad magic \"{}\" at offset 0 (expected \"PERFILE2\")", show_magic(.0))]
    BadMagic([u8; 8]),
    /// The header or the event attributes are unreadable.
    #[error("unreadable perf.data header at offset {offset}: {what}")]
    Header {
        /// Byte offset of the bad part.
        offset: u64,
        /// What is wrong there.
        what: String,
    },
}

/// The magic bytes as printable text (`\x..` escapes for the rest).
fn show_magic(m: &[u8; 8]) -> String {
    m.iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}

/// Reads a perf.data file (file or pipe mode, as written by `perf record` or
/// `perf record -o -`).
pub fn read_file(path: &Path) -> Result<Profile, DecodeError> {
    read_file_with_progress(path, &mut |_, _| {})
}

/// [`read_file`] that reports progress as `(bytes done, total bytes)` every few MB.
pub fn read_file_with_progress(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Profile, DecodeError> {
    with_file(path, &mut |data, release| {
        reader::read(
            data,
            progress,
            &mut |at| release(at),
            None,
            None,
            reader::Skips::default(),
        )
    })
}

/// Streaming read: calls `on_sample(profile_so_far, sample)` for each sample in delivery
/// order instead of storing it, so memory does not grow with the number of samples. Inside
/// the call, `profile.callchain(sample)`, `raw`, `read_values`, `user_regs`, `user_stack`,
/// `dso` and `str` work as usual. The returned profile has the events with their totals,
/// DSOs, strings, meta, losses and the stop point, but no samples or frames.
pub fn read_file_streaming(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
    on_sample: &mut dyn FnMut(&Profile, &model::Sample),
) -> Result<Profile, DecodeError> {
    with_file(path, &mut |data, release| {
        let mut release = |at| release(at);
        reader::read(
            data,
            progress,
            &mut release,
            Some(&mut *on_sample),
            None,
            reader::Skips::default(),
        )
    })
}

/// [`read_file_streaming`] over bytes in memory.
pub fn read_bytes_streaming(
    data: &[u8],
    on_sample: &mut dyn FnMut(&Profile, &model::Sample),
) -> Result<Profile, DecodeError> {
    reader::read(
        data,
        &mut |_, _| {},
        &mut |_| {},
        Some(on_sample),
        None,
        reader::Skips::default(),
    )
}

/// Options of [`read_file_with`] / [`read_bytes_with`].
#[derive(Default)]
pub struct ReadOptions<'u> {
    /// Unwinds the sampled user stacks of `--call-graph dwarf` recordings (events with
    /// PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER): the frames it returns become the
    /// user part of each such sample's call chain. `None`: chains are as recorded.
    pub unwinder: Option<&'u mut dyn unwind::UserStackUnwinder>,
    /// Do not decode call chains: every sample's [`model::Sample::callchain`] is empty (and
    /// nothing is unwound). For readers that never look at chains (flat reports, trace
    /// programs): resolving every frame is a large part of decoding a `-g` file.
    pub skip_callchains: bool,
    /// Do not resolve code locations: every sample's [`model::Sample::location`] (and every
    /// call chain frame's) is the one of an address in no mapping (`dso: None`,
    /// `file_offset` = the address). For readers
    /// that never name code (trace programs without `sym`, `mod`, `%a`…). Processes,
    /// threads and mappings are still followed (command names stay right).
    pub skip_locations: bool,
}

/// A per-sample callback of the streaming entry points.
type OnSample<'s> = dyn FnMut(&Profile, &model::Sample) + 's;

/// [`read_file_with_progress`] (`on_sample` `None`) or [`read_file_streaming`] (`Some`) with
/// options (DWARF unwinding of user stacks).
pub fn read_file_with(
    path: &Path,
    opts: ReadOptions<'_>,
    progress: &mut dyn FnMut(u64, u64),
    mut on_sample: Option<&mut OnSample<'_>>,
) -> Result<Profile, DecodeError> {
    let mut unwinder = opts.unwinder;
    let skips = reader::Skips {
        chains: opts.skip_callchains,
        locations: opts.skip_locations,
    };
    with_file(path, &mut |data, release| {
        // Re-wrapped so the trait objects coerce to the reader's (shorter) lifetime.
        let sink: Option<&mut OnSample<'_>> = match on_sample.as_mut() {
            Some(f) => Some(f),
            None => None,
        };
        let u: Option<&mut dyn unwind::UserStackUnwinder> = match unwinder.as_mut() {
            Some(u) => Some(*u),
            None => None,
        };
        reader::read(data, progress, &mut |at| release(at), sink, u, skips)
    })
}

/// [`read_bytes`] (`on_sample` `None`) or [`read_bytes_streaming`] (`Some`) with options.
pub fn read_bytes_with(
    data: &[u8],
    opts: ReadOptions<'_>,
    on_sample: Option<&mut OnSample<'_>>,
) -> Result<Profile, DecodeError> {
    let (mut progress, mut release) = (|_: u64, _: u64| {}, |_: usize| {});
    // Re-wrapped so the trait objects coerce to the reader's (shorter) lifetime.
    #[allow(clippy::needless_match)]
    let sink: Option<&mut OnSample<'_>> = match on_sample {
        Some(f) => Some(f),
        None => None,
    };
    #[allow(clippy::needless_match)]
    let u: Option<&mut dyn unwind::UserStackUnwinder> = match opts.unwinder {
        Some(u) => Some(u),
        None => None,
    };
    reader::read(
        data,
        &mut progress,
        &mut release,
        sink,
        u,
        reader::Skips {
            chains: opts.skip_callchains,
            locations: opts.skip_locations,
        },
    )
}

/// Streaming read on several threads, for consumers that do not care about the order of
/// samples (aggregations): the records are cut into `sinks.len()` consecutive shares at
/// FINISHED_ROUND records, and share `i`'s samples go to `sinks[i]` (a per-sample callback
/// like [`read_file_streaming`]'s) on its own thread.
/// Each thread first replays the process, thread and mapping records before its share, so
/// every sample is resolved exactly as a sequential read resolves it, and the profiles that
/// the sinks see give the same ids (strings, DSOs) to the same things: ids seen by an
/// earlier share are valid in the returned profile. Share `i` holds exactly the samples a
/// sequential read delivers between its two rounds, so concatenating what the sinks saw in
/// share order gives the sequential delivery order.
///
/// Pipe-mode files, compressed files and files without FINISHED_ROUND records are read by
/// the first share alone (the others get nothing). The returned profile is what
/// [`read_file_streaming`] returns: events with their totals, DSOs, strings, meta, losses,
/// warnings and the stop point. Progress is reported by the last share, which passes over
/// the whole file.
///
/// Returns the profile and how many sinks hold samples that count: the first `n`. (On two
/// shares the second one skips most of the first share's records when they change no state,
/// and the first share checks that afterwards; when they did, the first share reads on to
/// the end and the second sink's samples must be dropped.)
pub fn read_file_parallel<S: FnMut(&Profile, &model::Sample) + Send>(
    path: &Path,
    opts: ParallelOptions<'_>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
    sinks: &mut [S],
) -> Result<(Profile, usize), DecodeError> {
    let mut used = 0;
    let mut opts = Some(opts);
    let profile = with_file(path, &mut |data, release| {
        let opts = opts.take().unwrap_or_default();
        let (p, n) = read_parallel(data, release, opts, progress, sinks)?;
        used = n;
        Ok(p)
    })?;
    Ok((profile, used))
}

/// Options of [`read_file_parallel`].
#[derive(Default)]
pub struct ParallelOptions<'w> {
    /// As [`ReadOptions::skip_callchains`].
    pub skip_callchains: bool,
    /// Where two shares meet.
    pub split: SplitRule,
    /// Work to do on a reading thread before it reads its share (such as loading the
    /// kernel's symbols, which the caller needs after the read): it runs on the thread of
    /// the second share, whose share is then sized to what is left, so that the work and
    /// the reading share the cores evenly (a thread of its own would take a third of the
    /// time of two cores from whichever share it lands next to).
    pub side_work: Option<Box<dyn FnOnce() + Send + 'w>>,
}

/// Where the two shares of a two-share [`read_file_parallel`] meet (more shares are equal
/// parts of the data). Either way a share ends at a FINISHED_ROUND record and the result
/// is the same; only the time differs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum SplitRule {
    /// Decided when the second thread is ready to read (after the side work, or late
    /// because its core was slow to wake): halfway between the first thread's progress and
    /// the end, so that both end together.
    #[default]
    Balanced,
    /// At this fraction of the data section (0 to 1): the same split every time.
    Fixed(f64),
}

/// Whether reading `path` may unwind user stacks (see [`ReadOptions::unwinder`]): some
/// event samples user registers and stack (`--call-graph dwarf`), or the file is in pipe
/// mode (its events are known only while reading). [`read_file_parallel`] unwinds nothing,
/// so such files are read sequentially when their call chains matter.
pub fn file_may_unwind(path: &Path) -> Result<bool, DecodeError> {
    let user_stack = reader::st::REGS_USER | reader::st::STACK_USER;
    let any_unwinds = with_file_header(path, |data, _, h| {
        let attrs = header::parse_file_attrs(data, h)?;
        Ok(attrs
            .iter()
            .any(|a| a.sample_type & user_stack == user_stack))
    })?;
    Ok(any_unwinds.unwrap_or(true))
}

/// Runs `f` over the bytes, byte order and header of the file-mode perf.data file `path`,
/// mapped (the header questions asked before a read). `None` for a pipe or FIFO, a
/// pipe-mode file, or bytes that are no perf.data file (the read itself reports that).
fn with_file_header<T>(
    path: &Path,
    f: impl FnOnce(&[u8], bool, &header::FileHeader) -> Result<T, DecodeError>,
) -> Result<Option<T>, DecodeError> {
    let io = |source| DecodeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Ok(None);
    }
    // SAFETY: as in `with_file`: a read-only private mapping of a file perf only appends to.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    let data: &[u8] = &map;
    if stream::is_pipe_header(data) {
        return Ok(None);
    }
    let Ok(be) = header::byte_order(data) else {
        return Ok(None);
    };
    let h = header::parse_file_header(data, be)?;
    f(data, be, &h).map(Some)
}

/// The user-space ELF files a file's header lists with their build-ids (HEADER_BUILD_ID:
/// perf writes the DSOs that have samples), as (path, build-id), read from the header
/// alone: a reader can start loading their symbols before the records are read. Not the
/// kernel, its modules, the vDSO or JIT maps. Empty for pipe-mode files (their build-ids
/// come as records), files without the feature and bytes that are no perf.data file.
pub fn file_elf_build_ids(path: &Path) -> Result<Vec<(String, Vec<u8>)>, DecodeError> {
    let features = with_file_header(path, |data, be, h| {
        let mut features = header::Features::default();
        let (sections, _) = header::file_feature_sections(data, h);
        for (id, sec) in sections {
            if let (header::feat::BUILD_ID, Some(b)) = (id, sec.slice(data)) {
                header::parse_feature(&mut features, id, b, be);
            }
        }
        Ok(features)
    })?;
    Ok(features
        .map_or_else(Vec::new, |f| f.build_ids)
        .into_iter()
        .filter(|(_, path, _, mode)| {
            !matches!(mode, model::CpuMode::Kernel | model::CpuMode::GuestKernel)
                && state::classify(path, false).0 == model::DsoKind::Elf
        })
        .map(|(_, path, id, _)| (path, id))
        .collect())
}

/// [`read_file_parallel`] over bytes in memory (tests and the fuzz targets).
pub fn read_bytes_parallel<S: FnMut(&Profile, &model::Sample) + Send>(
    data: &[u8],
    opts: ParallelOptions<'_>,
    sinks: &mut [S],
) -> Result<(Profile, usize), DecodeError> {
    read_parallel(data, &|_| {}, opts, &mut |_, _| {}, sinks)
}

fn read_parallel<S: FnMut(&Profile, &model::Sample) + Send>(
    data: &[u8],
    release: &(dyn Fn(usize) + Sync),
    opts: ParallelOptions<'_>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
    sinks: &mut [S],
) -> Result<(Profile, usize), DecodeError> {
    let skips = reader::Skips {
        chains: opts.skip_callchains,
        locations: false,
    };
    let mut side_work = opts.side_work;
    if let [first, second] = sinks {
        let split = reader::SplitPoint::new(opts.split);
        return read_two(
            data,
            release,
            skips,
            (&split, side_work),
            progress,
            [first, second],
        );
    }
    let count = sinks.len().max(1);
    let results: Vec<Result<(Profile, reader::ShareOutcome), DecodeError>> =
        std::thread::scope(|scope| {
            // Not two shares: the work gets a thread of its own.
            if let Some(work) = side_work.take() {
                scope.spawn(work);
            }
            let last = sinks.len().saturating_sub(1);
            let mut progress = Some(&mut *progress);
            let mut jobs = Vec::new();
            for (index, sink) in sinks.iter_mut().enumerate() {
                let share = reader::Share { index, count };
                let mut report = (index == last).then(|| progress.take()).flatten();
                jobs.push(move || {
                    let mut on_progress = |done: u64, total: u64| {
                        if let Some(p) = report.as_mut() {
                            p(done, total);
                        }
                    };
                    // Each share drops the pages behind it; another share still reading
                    // them faults them back in from the page cache.
                    let mut keep = |at: usize| release(at);
                    let sink: &mut OnSample<'_> = sink;
                    reader::read_share(
                        data,
                        &mut on_progress,
                        &mut keep,
                        Some(sink),
                        None,
                        skips,
                        (share, reader::Jumping::No),
                    )
                });
            }
            let mut jobs = jobs.into_iter();
            let first = jobs.next();
            // Share 0 runs on this thread, the others on their own.
            let threads: Vec<_> = jobs.map(|job| scope.spawn(job)).collect();
            let mut results = Vec::with_capacity(count);
            if let Some(mut job) = first {
                results.push(job());
            }
            for t in threads {
                results.push(join_taken(&mut Some(t)));
            }
            results
        });
    let mut parts = Vec::with_capacity(results.len());
    for r in results {
        parts.push(r?);
    }
    Ok((reader::merge_shares(parts), count))
}

/// The result of the reading thread in `handle` (taken; a panic, or no thread, is an error).
fn join_taken<T>(
    handle: &mut Option<std::thread::ScopedJoinHandle<'_, Result<T, DecodeError>>>,
) -> Result<T, DecodeError> {
    let panicked = || DecodeError::Header {
        offset: 0,
        what: "a decoding thread panicked".into(),
    };
    handle.take().map_or_else(
        || Err(panicked()),
        |h| h.join().unwrap_or_else(|_| Err(panicked())),
    )
}

/// [`read_parallel`] on two shares: the second part may jump over the middle of the first
/// share (see `reader::JumpPlan`), which the first part confirms when it reaches the end of
/// its share, or refutes and then reads the second share itself.
fn read_two<S: FnMut(&Profile, &model::Sample) + Send>(
    data: &[u8],
    release: &(dyn Fn(usize) + Sync),
    skips: reader::Skips,
    (split, side_work): (&reader::SplitPoint, Option<Box<dyn FnOnce() + Send + '_>>),
    progress: &mut (dyn FnMut(u64, u64) + Send),
    [first, second]: [&mut S; 2],
) -> Result<(Profile, usize), DecodeError> {
    type PartResult = Result<(Profile, reader::ShareOutcome), DecodeError>;
    let planned = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let planned = &planned;
        let later = scope.spawn(move || {
            if let Some(work) = side_work {
                work();
            }
            let mut keep = |at: usize| release(at);
            let sink: &mut OnSample<'_> = second;
            reader::read_share(
                data,
                progress,
                &mut keep,
                Some(sink),
                None,
                skips,
                (
                    reader::Share { index: 1, count: 2 },
                    reader::Jumping::Jump { planned, split },
                ),
            )
        });
        let mut later = Some(later);
        // The second part's result, and the records its jump skipped (None: refuted).
        let mut checked: Option<(PartResult, Option<u64>)> = None;
        let mut at_end = |log: &reader::RoundLog| -> bool {
            let r = join_taken(&mut later);
            let skipped = match &r {
                Ok((_, o)) => match o.jumped {
                    Some(j) => log.confirms(&j).then(|| log.skipped(&j)),
                    None => Some(0),
                },
                // Its error may come from bytes a jump misread.
                Err(_) if planned.load(std::sync::atomic::Ordering::Acquire) => None,
                Err(_) => Some(0),
            };
            let refuted = skipped.is_none();
            checked = Some((r, skipped));
            refuted
        };
        let mut keep = |at: usize| release(at);
        let sink: &mut OnSample<'_> = first;
        let head = reader::read_share(
            data,
            &mut |_, _| {},
            &mut keep,
            Some(sink),
            None,
            skips,
            (
                reader::Share { index: 0, count: 2 },
                reader::Jumping::Log {
                    at_end: &mut at_end,
                    split,
                },
            ),
        );
        let (tail, skipped) = match checked.take() {
            Some(c) => c,
            None => {
                // The first part never reached the end of its share (compressed data, damage,
                // no round after it): a jump could have skipped what stopped it.
                let r = join_taken(&mut later);
                let skipped = (!planned.load(std::sync::atomic::Ordering::Acquire)).then_some(0);
                (r, skipped)
            }
        };
        let head = head?;
        let Some(skipped) = skipped else {
            // Refuted: the first part read everything.
            return Ok((reader::merge_shares(vec![head]), 1));
        };
        let (mut p, outcome) = tail?;
        p.meta.records += skipped;
        if let Some(stop) = p.stopped.as_mut() {
            stop.records_read += skipped;
        }
        Ok((reader::merge_shares(vec![head, (p, outcome)]), 2))
    })
}

/// A reader over bytes, given a callback releasing processed input up to an offset (callable
/// from several threads at once).
type ReadFn<'a> = dyn FnMut(&[u8], &(dyn Fn(usize) + Sync)) -> Result<Profile, DecodeError> + 'a;

/// Maps the file (or reads it, for empty files and pipes) and runs `f` over its bytes with a
/// callback that releases already-processed pages.
fn with_file(path: &Path, f: &mut ReadFn) -> Result<Profile, DecodeError> {
    let io = |source| DecodeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.len() == 0 || !meta.is_file() {
        // Empty files and pipes/FIFOs cannot be mapped: read them whole.
        let mut data = Vec::new();
        file.read_to_end(&mut data)?;
        return f(&data, &|_| {});
    }
    // SAFETY: the mapping is read-only and private to this call. perf.data files are not
    // truncated while being read (perf only appends, then rewrites the header in place);
    // a concurrent truncation would raise SIGBUS, as with any mmap-based reader (perf too).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    let release = |upto: usize| {
        // Drop already-processed pages from the resident set; they are file-backed, so a
        // later access (there is none) would simply re-read them.
        let upto = upto & !0xfff;
        if upto > 0 {
            // SAFETY: DONTNEED on a read-only file mapping only discards cached pages; their
            // content stays what the file holds.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, upto) };
        }
    };
    f(&map, &release)
}

/// Reads a perf.data image from memory (used by tests and the fuzz target).
pub fn read_bytes(data: &[u8]) -> Result<Profile, DecodeError> {
    reader::read(
        data,
        &mut |_, _| {},
        &mut |_| {},
        None,
        None,
        reader::Skips::default(),
    )
}

/// Reads a perf.data stream (e.g. stdin for `-i -`) to its end. Pipe mode is decoded while it
/// arrives ([`StreamDecoder`]; the input is not held whole); file mode needs random access,
/// so it is read whole first.
pub fn read_reader(input: impl Read) -> Result<Profile, DecodeError> {
    stream::read_reader_collect(input)
}
