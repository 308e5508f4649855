//! The parallel read behind [`crate::Reader::fold_parallel`]: the records are cut into
//! consecutive shares at FINISHED_ROUND records, and share `i`'s samples go to `sinks[i]` on its
//! own thread. Each thread first replays the process, thread and mapping records before its
//! share, so every sample is resolved exactly as a sequential read resolves it, and the
//! profiles the sinks see give the same ids (strings, DSOs) to the same things. Share `i`
//! holds exactly the samples a sequential read delivers between its two rounds, so
//! concatenating what the sinks saw in share order gives the sequential delivery order.
//!
//! Pipe-mode files, compressed files and files without FINISHED_ROUND records are read by the
//! first share alone (the others get nothing). On two shares the second one skips most of the
//! first share's records when they change no state, and the first share checks that
//! afterwards; when they did, the first share reads on to the end and the second sink's
//! samples are dropped (see `reader::JumpPlan`).

use crate::model::{Profile, Sample};
use crate::{reader, DecodeError, SplitRule};

/// A per-sample callback of a share.
type OnSample<'s> = dyn FnMut(&Profile, &Sample) + 's;

/// Work done on a reading thread (see [`crate::Reader::side_work`]).
pub(crate) type SideWork<'w> = Box<dyn FnOnce() + Send + 'w>;

/// How a parallel read runs.
#[derive(Default)]
pub(crate) struct Options<'w> {
    /// What samples leave out.
    pub skips: reader::Skips,
    /// Where two shares meet.
    pub split: SplitRule,
    /// Work to do on the thread of the second share before it reads (a thread of its own
    /// with more shares).
    pub side_work: Option<SideWork<'w>>,
}

/// Reads `data` on `sinks.len()` shares; returns the merged profile and how many sinks hold
/// samples that count: the first `n`.
pub(crate) fn read<S: FnMut(&Profile, &Sample) + Send>(
    data: &[u8],
    release: &(dyn Fn(usize) + Sync),
    opts: Options<'_>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
    sinks: &mut [S],
) -> Result<(Profile, usize), DecodeError> {
    let skips = opts.skips;
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
    let shared = SharedProgress::new(count, progress);
    let results: Vec<Result<(Profile, reader::ShareOutcome), DecodeError>> =
        std::thread::scope(|scope| {
            // Not two shares: the work gets a thread of its own.
            if let Some(work) = side_work.take() {
                scope.spawn(work);
            }
            let mut jobs = Vec::new();
            for (index, sink) in sinks.iter_mut().enumerate() {
                let share = reader::Share { index, count };
                let shared = &shared;
                jobs.push(move || {
                    let mut on_progress = |done: u64, total: u64| shared.report(index, done, total);
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
    shared.done(data.len() as u64);
    let mut parts = Vec::with_capacity(results.len());
    for r in results {
        parts.push(r?);
    }
    Ok((reader::merge_shares(parts), count))
}

/// The progress of a parallel read: each share reports the bytes of its own records it has
/// read (not its replay of the records before them); the caller sees their sum, which only
/// grows, reaching the total when the read ends.
struct SharedProgress<'a> {
    /// Per share its own bytes read, and the caller's callback.
    inner: std::sync::Mutex<(Vec<u64>, ProgressFn<'a>)>,
}

/// The caller's `(done, total)` callback.
type ProgressFn<'a> = &'a mut (dyn FnMut(u64, u64) + Send);

impl<'a> SharedProgress<'a> {
    fn new(shares: usize, progress: &'a mut (dyn FnMut(u64, u64) + Send)) -> Self {
        SharedProgress {
            inner: std::sync::Mutex::new((vec![0; shares], progress)),
        }
    }

    /// Share `share` has read `done` bytes of its own records, of `total`.
    fn report(&self, share: usize, done: u64, total: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (own, progress) = &mut *inner;
        if let Some(d) = own.get_mut(share) {
            *d = (*d).max(done);
        }
        let sum = own.iter().sum::<u64>().min(total);
        progress(sum, total);
    }

    /// The read is over.
    fn done(&self, total: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (inner.1)(total, total);
    }
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

/// [`read`] on two shares: the second part may jump over the middle of the first
/// share (see `reader::JumpPlan`), which the first part confirms when it reaches the end of
/// its share, or refutes and then reads the second share itself.
fn read_two<S: FnMut(&Profile, &Sample) + Send>(
    data: &[u8],
    release: &(dyn Fn(usize) + Sync),
    skips: reader::Skips,
    (split, side_work): (&reader::SplitPoint, Option<Box<dyn FnOnce() + Send + '_>>),
    progress: &mut (dyn FnMut(u64, u64) + Send),
    [first, second]: [&mut S; 2],
) -> Result<(Profile, usize), DecodeError> {
    type PartResult = Result<(Profile, reader::ShareOutcome), DecodeError>;
    let planned = std::sync::atomic::AtomicBool::new(false);
    let shared = SharedProgress::new(2, progress);
    let result = std::thread::scope(|scope| {
        let planned = &planned;
        let shared = &shared;
        let later = scope.spawn(move || {
            if let Some(work) = side_work {
                work();
            }
            let mut keep = |at: usize| release(at);
            let sink: &mut OnSample<'_> = second;
            reader::read_share(
                data,
                &mut |done, total| shared.report(1, done, total),
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
            &mut |done, total| shared.report(0, done, total),
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
    });
    shared.done(data.len() as u64);
    result
}
