//! The one front door of the crate: [`Reader`], a builder over an input (a file, stdin, bytes
//! or any `Read`) with its options (DWARF unwinder, progress, threads, what to skip, work to
//! do meanwhile), ended by one of three reads: [`Reader::collect`] (a profile with its
//! samples), [`Reader::fold`] (each sample to a callback, in delivery order) or
//! [`Reader::fold_parallel`] (samples folded on several threads into a [`Fold`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::{Profile, Sample};
use crate::reader::SampleSink;
use crate::unwind::UserStackUnwinder;
use crate::{file, header, model, parallel, reader, state, stream, DecodeError};

/// Why an input could not be read: which input, and what went wrong (the text of both, once).
#[derive(Debug, thiserror::Error)]
#[error("cannot read {input}: {error}")]
pub struct ReadError {
    /// The input as messages name it: the path, or `perf.data from stdin`.
    pub input: String,
    /// What went wrong.
    #[source]
    pub error: DecodeError,
}

/// An aggregation that samples can be folded into on several threads ([`Reader::fold_parallel`]):
/// each share of the records is folded into its own value, made by [`Fold::split`], and the
/// values are merged in share order, which must give what one value fed every sample in order
/// gives.
pub trait Fold: Send + Sized {
    /// Adds one sample (inside the call, `profile` resolves its ids as usual).
    fn add(&mut self, profile: &Profile, sample: &Sample);
    /// An empty value configured like this one, for another share.
    fn split(&self) -> Self;
    /// Appends `later`, the value of the next share; `profile` is the merged profile (ids
    /// seen by any share are valid in it).
    fn merge(&mut self, later: Self, profile: &Profile);
}

/// Where the perf.data comes from.
enum Source<'a> {
    /// A file (or a FIFO) by path.
    File(PathBuf),
    /// This process's standard input (`-i -`).
    Stdin,
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// Any reader (a pipe, a socket).
    Read(Box<dyn Read + 'a>),
}

/// Progress callback: `(bytes done, total bytes)`, every few MB.
type Progress<'a> = Box<dyn FnMut(u64, u64) + Send + 'a>;

/// Reads a perf.data input (file or pipe mode, as written by `perf record` or
/// `perf record -o -`). Build it on an input, set the options, then read with
/// [`Reader::collect`], [`Reader::fold`] or [`Reader::fold_parallel`].
///
/// A truncated or corrupt input is not an error: the profile holds everything read before the
/// damage and [`Profile::stopped`] says where and why reading stopped. An `Err` means nothing
/// usable exists (the input cannot be read, is not perf.data, or its header or attributes are
/// unreadable); its message names the input once and the reason once.
///
/// ```no_run
/// use culprit_decode::Reader;
/// let profile = Reader::open("perf.data").collect().unwrap();
/// println!("{} samples", profile.samples.len());
/// let mut n = 0u64;
/// let totals = Reader::open("perf.data")
///     .skip_callchains(true)
///     .fold(|_, s| n += s.period)
///     .unwrap();
/// println!("{n} over {} events", totals.events.len());
/// ```
pub struct Reader<'a> {
    source: Source<'a>,
    unwinder: Option<&'a mut dyn UserStackUnwinder>,
    progress: Option<Progress<'a>>,
    threads: Option<usize>,
    skips: reader::Skips,
    side_work: Option<Box<dyn FnOnce() + Send + 'a>>,
    split: SplitRule,
}

/// Where the two shares of a two-thread [`Reader::fold_parallel`] meet (more shares are equal
/// parts of the data). Either way a share ends at a FINISHED_ROUND record and the result is
/// the same; only the time differs.
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

impl<'a> Reader<'a> {
    /// Reads the file at `path`; `-` reads standard input (as `-i -` does).
    pub fn open(path: impl AsRef<Path>) -> Reader<'a> {
        let path = path.as_ref();
        if path.as_os_str() == "-" {
            return Reader::stdin();
        }
        Reader::new(Source::File(path.to_path_buf()))
    }

    /// Reads standard input: its magic is checked on the first bytes; a pipe-mode stream is
    /// decoded as it arrives; a file-mode perf.data needs random access, so it is read whole
    /// first.
    pub fn stdin() -> Reader<'a> {
        Reader::new(Source::Stdin)
    }

    fn new(source: Source<'a>) -> Reader<'a> {
        Reader {
            source,
            unwinder: None,
            progress: None,
            threads: None,
            skips: reader::Skips::default(),
            side_work: None,
            split: SplitRule::default(),
        }
    }

    /// Reads a perf.data image in memory.
    pub fn from_bytes(data: &'a [u8]) -> Reader<'a> {
        Reader::new(Source::Bytes(data))
    }

    /// Reads a perf.data stream from `input` (as [`Reader::stdin`] reads stdin).
    pub fn from_read(input: impl Read + 'a) -> Reader<'a> {
        Reader::new(Source::Read(Box::new(input)))
    }

    /// Unwinds the sampled user stacks of `--call-graph dwarf` recordings (events with
    /// PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER): the frames it returns become the
    /// user part of each such sample's call chain, and its warnings
    /// ([`UserStackUnwinder::take_warnings`]) end the profile's. Without one, chains are as
    /// recorded. [`Reader::fold_parallel`] reads a file that needs unwinding on one thread.
    pub fn unwinder(mut self, unwinder: &'a mut dyn UserStackUnwinder) -> Self {
        self.unwinder = Some(unwinder);
        self
    }

    /// Reports progress as `(bytes done, total bytes)` every few MB (files only).
    pub fn progress(mut self, progress: impl FnMut(u64, u64) + Send + 'a) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Threads of [`Reader::fold_parallel`] (default: [`default_threads`]); 1 reads
    /// sequentially.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// Where the two shares of a two-thread [`Reader::fold_parallel`] meet (default
    /// [`SplitRule::Balanced`]).
    pub fn split(mut self, split: SplitRule) -> Self {
        self.split = split;
        self
    }

    /// Do not decode call chains: every sample's [`Sample::callchain`] is empty (and nothing
    /// is unwound). For readers that never look at chains (flat reports, trace programs):
    /// resolving every frame is a large part of decoding a `-g` file.
    pub fn skip_callchains(mut self, skip: bool) -> Self {
        self.skips.chains = skip;
        self
    }

    /// Do not resolve code locations: every sample's [`Sample::location`] (and every call
    /// chain frame's) is the one of an address in no mapping (`dso: None`, `file_offset` =
    /// the address). For readers that never name code (trace programs without `sym`, `mod`,
    /// `%a`…). Processes, threads and mappings are still followed (command names stay right).
    pub fn skip_locations(mut self, skip: bool) -> Self {
        self.skips.locations = skip;
        self
    }

    /// Work to do while the input is read (such as loading symbols the caller needs after
    /// the read); it is finished when the read returns. A two-thread
    /// [`Reader::fold_parallel`] runs it on the thread of the second share, whose share is then
    /// sized to what is left, so that the work and the reading share the cores evenly; other
    /// reads give it a thread of its own.
    pub fn side_work(mut self, work: impl FnOnce() + Send + 'a) -> Self {
        self.side_work = Some(Box::new(work));
        self
    }

    /// The input as messages name it: the path, `perf.data from stdin`, or `perf.data in
    /// memory`.
    pub fn name(&self) -> String {
        match &self.source {
            Source::File(p) => p.display().to_string(),
            Source::Stdin => "perf.data from stdin".into(),
            Source::Bytes(_) => "perf.data in memory".into(),
            Source::Read(_) => "perf.data stream".into(),
        }
    }

    /// Whether reading may unwind user stacks: some event samples user registers and stack
    /// (`--call-graph dwarf`), or the input's events are known only while reading (a pipe,
    /// stdin, a pipe-mode file, an unreadable header).
    pub fn may_unwind(&self) -> bool {
        let user_stack = reader::st::REGS_USER | reader::st::STACK_USER;
        let check = |data: &[u8], _: bool, h: &header::FileHeader| {
            let attrs = header::parse_file_attrs(data, h)?;
            Ok(attrs
                .iter()
                .any(|a| a.sample_type & user_stack == user_stack))
        };
        match &self.source {
            Source::File(p) => file::with_file_header(p, check).ok().flatten(),
            Source::Bytes(b) => file::with_bytes_header(b, check).ok().flatten(),
            Source::Stdin | Source::Read(_) => None,
        }
        .unwrap_or(true)
    }

    /// The user-space ELF files the header lists with their build-ids (HEADER_BUILD_ID: perf
    /// writes the DSOs that have samples), as (path, build-id), read from the header alone: a
    /// reader can start loading their symbols before the records are read. Not the kernel,
    /// its modules, the vDSO or JIT maps. Empty for streams, pipe-mode files, files without
    /// the feature and inputs that are no perf.data file (the read reports those).
    pub fn sampled_elf_build_ids(&self) -> Vec<(String, Vec<u8>)> {
        let features = |data: &[u8], be: bool, h: &header::FileHeader| {
            let mut features = header::Features::default();
            let (sections, _) = header::file_feature_sections(data, h);
            for (id, sec) in sections {
                if let (header::feat::BUILD_ID, Some(b)) = (id, sec.slice(data)) {
                    header::parse_feature(&mut features, id, b, be);
                }
            }
            Ok(features)
        };
        let features = match &self.source {
            Source::File(p) => file::with_file_header(p, features).ok().flatten(),
            Source::Bytes(b) => file::with_bytes_header(b, features).ok().flatten(),
            Source::Stdin | Source::Read(_) => None,
        };
        features
            .map_or_else(Vec::new, |f| f.build_ids)
            .into_iter()
            .filter(|(_, path, _, mode)| {
                !matches!(mode, model::CpuMode::Kernel | model::CpuMode::GuestKernel)
                    && state::classify(path, false).0 == model::DsoKind::Elf
            })
            .map(|(_, path, id, _)| (path, id))
            .collect()
    }

    /// The tracepoint formats of the header's tracing data (HEADER_TRACING_DATA), read from
    /// the header alone, so that a reader can check names against them before the records
    /// are read. `None` for streams and pipe-mode files (their formats arrive in a
    /// TRACING_DATA record while reading) and inputs that are no perf.data file; empty for
    /// files without tracepoints.
    pub fn tracepoint_formats(&self) -> Option<Vec<crate::tracepoint::TracepointFormat>> {
        let formats = |data: &[u8], be: bool, h: &header::FileHeader| {
            let mut features = header::Features::default();
            let (sections, _) = header::file_feature_sections(data, h);
            for (id, sec) in sections {
                if let (header::feat::TRACING_DATA, Some(b)) = (id, sec.slice(data)) {
                    header::parse_feature(&mut features, id, b, be);
                }
            }
            Ok(features.tracepoints)
        };
        match &self.source {
            Source::File(p) => file::with_file_header(p, formats).ok().flatten(),
            Source::Bytes(b) => file::with_bytes_header(b, formats).ok().flatten(),
            Source::Stdin | Source::Read(_) => None,
        }
    }

    /// Reads everything: the profile with its samples.
    pub fn collect(self) -> Result<Profile, ReadError> {
        self.read(None)
    }

    /// Streaming read: calls `on_sample(profile_so_far, sample)` for each sample in delivery
    /// order instead of storing it, so memory does not grow with the number of samples.
    /// Inside the call, `profile.callchain(sample)`, `raw`, `read_values`, `user_regs`,
    /// `user_stack`, `dso` and `str` work as usual. The returned profile has the events with
    /// their totals, DSOs, strings, meta, losses and the stop point, but no samples or frames.
    pub fn fold(self, mut on_sample: impl FnMut(&Profile, &Sample)) -> Result<Profile, ReadError> {
        self.read(Some(&mut on_sample))
    }

    /// Folds the samples into `fold` on several threads when the input allows it (a regular
    /// file in file mode with FINISHED_ROUND records, more than one thread, and no user stack
    /// to unwind), else in order on this thread: the records are cut into consecutive shares,
    /// each folded into its own [`Fold::split`] on its own thread, then merged in share order.
    /// Each thread first replays the process, thread and mapping records before its share, so
    /// every sample is resolved exactly as a sequential read resolves it; the result is what
    /// [`Reader::fold`] with [`Fold::add`] gives. Progress is reported by the thread that
    /// passes over the whole file.
    pub fn fold_parallel<F: Fold>(mut self, mut fold: F) -> Result<(Profile, F), ReadError> {
        let threads = self.threads.unwrap_or_else(default_threads);
        let parallel = threads > 1
            && match &self.source {
                Source::File(path) => file::is_mappable(path).unwrap_or(false),
                Source::Bytes(_) => true,
                Source::Stdin | Source::Read(_) => false,
            }
            && !(self.unwinder.is_some() && self.may_unwind());
        if !parallel {
            let profile = self.read(Some(&mut |p: &Profile, s: &Sample| fold.add(p, s)))?;
            return Ok((profile, fold));
        }
        let name = self.name();
        let fail = |error| ReadError {
            input: name.clone(),
            error,
        };
        let mut folds: Vec<F> = (0..threads).map(|_| fold.split()).collect();
        let options = parallel::Options {
            skips: self.skips,
            split: self.split,
            side_work: self.side_work.take(),
        };
        let mut progress = self.progress.take();
        let mut on_progress = |done: u64, total: u64| {
            if let Some(p) = progress.as_mut() {
                p(done, total);
            }
        };
        let (profile, used) = {
            let mut sinks: Vec<_> = folds
                .iter_mut()
                .map(|f| move |p: &Profile, s: &Sample| f.add(p, s))
                .collect();
            match &self.source {
                Source::File(path) => {
                    let mut options = Some(options);
                    let mut used = 0;
                    let profile = file::with_file(path, &mut |data, release| {
                        let opts = options.take().unwrap_or_default();
                        let (p, n) =
                            parallel::read(data, release, opts, &mut on_progress, &mut sinks)?;
                        used = n;
                        Ok(p)
                    })
                    .map_err(fail)?;
                    (profile, used)
                }
                Source::Bytes(data) => {
                    parallel::read(data, &|_| {}, options, &mut on_progress, &mut sinks)
                        .map_err(fail)?
                }
                Source::Stdin | Source::Read(_) => unreachable!("checked above"),
            }
        };
        // Only the first `used` shares' samples count (see `parallel::read`).
        let mut folds = folds.into_iter().take(used);
        if let Some(first) = folds.next() {
            fold = first;
        }
        for later in folds {
            fold.merge(later, &profile);
        }
        let profile = check_samples(profile).map_err(fail)?;
        Ok((profile, fold))
    }

    /// The sequential read: samples to `sink`, or kept in the profile; side work on a thread
    /// of its own meanwhile.
    fn read(mut self, sink: Option<SampleSink<'_>>) -> Result<Profile, ReadError> {
        let name = self.name();
        let side_work = self.side_work.take();
        let result = std::thread::scope(|scope| {
            if let Some(work) = side_work {
                scope.spawn(work);
            }
            self.read_here(sink)
        });
        result
            .and_then(check_samples)
            .map_err(|error| ReadError { input: name, error })
    }

    fn read_here(self, mut sink: Option<SampleSink<'_>>) -> Result<Profile, DecodeError> {
        let Reader {
            source,
            mut unwinder,
            mut progress,
            skips,
            ..
        } = self;
        let mut on_progress = |done: u64, total: u64| {
            if let Some(p) = progress.as_mut() {
                p(done, total);
            }
        };
        let mut profile = match source {
            // A FIFO or a device (`-i /dev/stdin`, `-i /dev/zero`) is a stream: its magic is
            // checked first and it is read as it arrives, never mapped or read whole first.
            Source::File(path) if !file::is_mappable(&path)? => {
                let waiting = WaitNotice::start(&path);
                let input = std::fs::File::open(&path).map_err(DecodeError::Io)?;
                stream::read_input(
                    FirstData {
                        inner: input,
                        notice: Some(waiting),
                    },
                    reborrow_sink(&mut sink),
                    reborrow_unwinder(&mut unwinder),
                    skips,
                )?
            }
            Source::File(path) => file::with_file(&path, &mut |data, release| {
                reader::read(
                    data,
                    &mut on_progress,
                    &mut |at| release(at),
                    reborrow_sink(&mut sink),
                    reborrow_unwinder(&mut unwinder),
                    skips,
                )
            })?,
            Source::Bytes(data) => reader::read(
                data,
                &mut on_progress,
                &mut |_| {},
                reborrow_sink(&mut sink),
                reborrow_unwinder(&mut unwinder),
                skips,
            )?,
            Source::Stdin => stream::read_input(
                std::io::stdin().lock(),
                reborrow_sink(&mut sink),
                reborrow_unwinder(&mut unwinder),
                skips,
            )?,
            Source::Read(input) => stream::read_input(
                input,
                reborrow_sink(&mut sink),
                reborrow_unwinder(&mut unwinder),
                skips,
            )?,
        };
        if let Some(u) = unwinder {
            profile.warnings.extend(u.take_warnings());
        }
        Ok(profile)
    }
}

/// How long a FIFO may stay silent before culprit says it is waiting for it.
const FIFO_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Says on a terminal's stderr, once, that culprit is still waiting for data on a FIFO (or
/// a device) when nothing came within [`FIFO_GRACE`]: perf gives up at once, culprit keeps
/// waiting, and a silent wait looks like a hang. Dropped (data came, or the read ended):
/// nothing is said.
struct WaitNotice {
    /// Dropped with the notice: tells the waiting thread to say nothing.
    _sender: Option<std::sync::mpsc::Sender<()>>,
}

impl WaitNotice {
    fn start(path: &Path) -> WaitNotice {
        use std::io::IsTerminal;
        let is_fifo = std::fs::metadata(path).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_fifo()
        });
        if !is_fifo || !std::io::stderr().is_terminal() {
            return WaitNotice { _sender: None };
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let shown = path.display().to_string();
        // A thread of its own: the reading thread is blocked in open() or read(). Detached;
        // it ends at the grace period or as soon as the notice is dropped.
        let spawned = std::thread::Builder::new()
            .name("fifo-wait".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(FIFO_GRACE)
                {
                    eprintln!(
                        "culprit: waiting for data on the FIFO {}: nothing written yet \
                         (Ctrl-C to stop)",
                        shown.escape_debug()
                    );
                }
            });
        WaitNotice {
            _sender: spawned.ok().map(|_| tx),
        }
    }
}

/// A stream that drops its [`WaitNotice`] at the first read that returns.
struct FirstData<R> {
    inner: R,
    notice: Option<WaitNotice>,
}

impl<R: Read> Read for FirstData<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf);
        self.notice = None;
        n
    }
}

/// Refuses a profile whose every sample was malformed (an error, not "0 samples"), and
/// counts the skipped ones in one warning when only some were.
fn check_samples(mut profile: Profile) -> Result<Profile, DecodeError> {
    let malformed = profile.malformed_samples;
    if malformed == 0 {
        return Ok(profile);
    }
    let valid: u64 = profile.events.iter().map(|e| e.samples).sum();
    if valid == 0 {
        return Err(DecodeError::AllSamplesMalformed(malformed));
    }
    profile.warnings.push(format!(
        "{malformed} malformed sample{} skipped ({valid} read)",
        if malformed == 1 { "" } else { "s" }
    ));
    Ok(profile)
}

/// The sample callback, re-borrowed so that its trait object coerces to a read's (shorter)
/// lifetime.
pub(crate) fn reborrow_sink<'s>(sink: &'s mut Option<SampleSink<'_>>) -> Option<SampleSink<'s>> {
    match sink {
        Some(f) => Some(&mut **f),
        None => None,
    }
}

/// The unwinder, re-borrowed as [`reborrow_sink`].
pub(crate) fn reborrow_unwinder<'s>(
    unwinder: &'s mut Option<&mut dyn UserStackUnwinder>,
) -> Option<&'s mut dyn UserStackUnwinder> {
    match unwinder {
        Some(u) => Some(&mut **u),
        None => None,
    }
}

/// Threads of [`Reader::fold_parallel`] by default: one per core, at most 4, or
/// `CULPRIT_READ_THREADS` (1 reads sequentially).
pub fn default_threads() -> usize {
    std::env::var("CULPRIT_READ_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
        .clamp(1, 64)
}
