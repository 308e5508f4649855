//! `Reader::fold_parallel` against the sequential streaming read: in share order, the shares'
//! samples are the sequential samples (same fields, same string and DSO ids, same chains),
//! and the merged profile is the sequential profile, for every fixture, a hand-built file
//! with fork/exec/mmap changes between rounds, and a live multi-process recording.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use culprit_decode::model::Sample;
use culprit_decode::{Fold, Profile, Reader, SplitRule};
use serde_json::Value;

use crate::common::{fixture, pmu_lock, require_perf, scratch, workload};
use crate::stream::{profile_view, sample_view};

/// Samples and profile of a sequential streaming read.
fn sequential(path: &Path) -> (Vec<Value>, Value) {
    let mut samples = Vec::new();
    let p = Reader::open(path)
        .fold(|p, s| samples.push(sample_view(p, s)))
        .expect("sequential read");
    (samples, profile_view(&p))
}

/// The samples of a parallel read, share after share, with how many each share delivered.
struct Shares<'d> {
    /// Which share this value folds (the template given to the read has none).
    index: Option<usize>,
    /// The next share's index.
    next: Arc<AtomicUsize>,
    samples: Vec<Value>,
    /// Samples of each share merged so far (the first share's included).
    sizes: Vec<usize>,
    /// Share 0 counts its samples here and sleeps a little after each (a slow sink).
    slow_first: Option<&'d AtomicUsize>,
}

impl<'d> Shares<'d> {
    fn new(slow_first: Option<&'d AtomicUsize>) -> Self {
        Shares {
            index: None,
            next: Arc::new(AtomicUsize::new(0)),
            samples: Vec::new(),
            sizes: Vec::new(),
            slow_first,
        }
    }

    /// Samples per share (one share: a sequential read).
    fn sizes(&self) -> Vec<usize> {
        let merged: usize = self.sizes.iter().sum();
        let mut sizes = vec![self.samples.len() - merged];
        sizes.extend(&self.sizes);
        sizes
    }
}

impl Fold for Shares<'_> {
    fn add(&mut self, p: &Profile, s: &Sample) {
        if let (Some(0), Some(delivered)) = (self.index, self.slow_first) {
            delivered.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        self.samples.push(sample_view(p, s));
    }

    fn split(&self) -> Self {
        Shares {
            index: Some(self.next.fetch_add(1, Ordering::Relaxed)),
            next: self.next.clone(),
            samples: Vec::new(),
            sizes: Vec::new(),
            slow_first: self.slow_first,
        }
    }

    fn merge(&mut self, later: Self, _: &Profile) {
        self.sizes.push(later.samples.len());
        self.samples.extend(later.samples);
    }
}

/// Samples (share after share) and merged profile of a read on `n` shares split in the
/// middle; also how many samples each share delivered.
fn parallel(path: &Path, n: usize) -> ((Vec<Value>, Value), Vec<usize>) {
    parallel_with(path, n, SplitRule::Fixed(0.5), None)
}

/// [`parallel`] with a split rule and side work.
fn parallel_with(
    path: &Path,
    n: usize,
    split: SplitRule,
    side_work: Option<Box<dyn FnOnce() + Send>>,
) -> ((Vec<Value>, Value), Vec<usize>) {
    let mut reader = Reader::open(path).threads(n).split(split);
    if let Some(work) = side_work {
        reader = reader.side_work(work);
    }
    let (profile, shares) = reader
        .fold_parallel(Shares::new(None))
        .expect("parallel read");
    let sizes = shares.sizes();
    ((shares.samples, profile_view(&profile)), sizes)
}

/// Reads `path` on 1 to 4 shares split in equal parts, on two shares split at several
/// fractions, and on two shares split when the second thread is ready (after side work
/// of several lengths): each time the samples and the profile are the sequential ones.
/// Returns how many samples each share delivered, read after read.
fn assert_parallel_is_sequential(name: &str, path: &Path) -> Vec<Vec<usize>> {
    let want = sequential(path);
    let mut splits = Vec::new();
    let mut check = |n: usize, how: String, (got, sizes): ((Vec<Value>, Value), Vec<usize>)| {
        assert_eq!(
            want.0.len(),
            got.0.len(),
            "{name}, {n} shares ({how}) {sizes:?}: sample count differs"
        );
        for (i, (a, b)) in want.0.iter().zip(&got.0).enumerate() {
            assert_eq!(
                a, b,
                "{name}, {n} shares ({how}) {sizes:?}: sample {i} differs"
            );
        }
        assert_eq!(want.1, got.1, "{name}, {n} shares ({how}): profile differs");
        splits.push(sizes);
    };
    for n in 1..=4 {
        check(n, "equal".into(), parallel(path, n));
    }
    for f in [0.05, 0.3, 0.7, 0.95] {
        let split = SplitRule::Fixed(f);
        check(2, format!("at {f}"), parallel_with(path, 2, split, None));
    }
    for wait_us in [0u64, 200, 2000] {
        let work: Box<dyn FnOnce() + Send> =
            Box::new(move || std::thread::sleep(std::time::Duration::from_micros(wait_us)));
        let how = format!("balanced, side work {wait_us} µs");
        check(
            2,
            how,
            parallel_with(path, 2, SplitRule::Balanced, Some(work)),
        );
    }
    check(
        2,
        "balanced".into(),
        parallel_with(path, 2, SplitRule::Balanced, None),
    );
    splits
}

#[test]
fn test_parallel_read_equals_sequential_on_fixtures() {
    for name in [
        "compressed-g.data",
        "cpu-clock-c.data",
        "cpu-clock-g.data",
        "dwarf.data",
        "exec-g.data",
        "ibs-fam19h_m11_zen4.data",
        "pipe-compressed.data",
        "pipe-g.data",
        "system-wide-g.data",
        "two-events.data",
    ] {
        assert_parallel_is_sequential(name, &fixture(name));
    }
}

#[test]
fn test_parallel_read_equals_sequential_on_synthetic_state_changes() {
    // Fork, exec, map replacement, kernel modules and per-pid JIT maps between rounds: every
    // share boundary lands between state changes and the samples that depend on them.
    let path = scratch("parallel-synth").join("synth.data");
    std::fs::write(&path, crate::synth::build()).unwrap();
    // Its rounds are at the end (a sample in one round needs an mmap of the next): the
    // shares end and start there.
    assert_parallel_is_sequential("synthetic", &path);
}

#[test]
fn test_parallel_read_equals_sequential_on_live_multiprocess_recording() {
    if !require_perf("decode::test_parallel_read_equals_sequential_on_live_multiprocess_recording")
    {
        return;
    }
    // Several processes started one after the other (fork, exec, mmap, comm all along the
    // file), with call chains, and small ring buffers (-m 2) so that there are many rounds.
    let shares = workload("shares");
    let _lock = pmu_lock();
    let path = scratch("parallel-live").join("multi.data");
    let script = format!(
        "for i in 1 2 3 4; do {} 4 > /dev/null; done",
        shares.display()
    );
    let status = crate::common::perf()
        .args([
            "record",
            "-q",
            "-m",
            "2",
            "-g",
            "-e",
            "cpu-clock",
            "-F",
            "20000",
            "-o",
        ])
        .arg(&path)
        .args(["--", "sh", "-c", &script])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run perf record");
    assert!(status.success(), "perf record failed");
    let splits = assert_parallel_is_sequential("live recording", &path);
    assert!(
        splits
            .iter()
            .any(|s| s.iter().filter(|&&n| n > 0).count() > 1),
        "no split divided the recording's samples: {splits:?}"
    );
    // Malformed samples all along the file: the first is named, the rest counted, and the
    // merged warnings are the sequential ones, in order.
    let mut data = std::fs::read(&path).unwrap();
    let at = |d: &[u8], o: usize| u64::from_le_bytes(d[o..o + 8].try_into().unwrap()) as usize;
    let (mut pos, end) = (at(&data, 40), at(&data, 40) + at(&data, 48));
    let mut n = 0;
    while pos + 8 <= end {
        let ty = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap());
        let size = u16::from_le_bytes(data[pos + 6..pos + 8].try_into().unwrap()) as usize;
        assert!(size >= 8);
        if ty == 9 {
            n += 1;
            if n % 300 == 0 {
                // Keep IP, pid/tid and time; everything after (period, chain length…) is
                // garbage: the sample cannot be parsed.
                data[pos + 32..pos + size].fill(0xff);
            }
        }
        pos += size;
    }
    let corrupt = path.with_file_name("corrupt.data");
    std::fs::write(&corrupt, &data).unwrap();
    let warnings = sequential(&corrupt).1["warnings"].clone();
    let text = warnings.to_string();
    assert_eq!(
        text.matches("malformed record of type 9").count(),
        1,
        "expected one warning naming a malformed sample: {warnings}"
    );
    assert!(
        text.contains(&format!("{} malformed samples skipped", n / 300)),
        "expected the malformed samples counted: {warnings}"
    );
    assert_parallel_is_sequential("live recording with malformed samples", &corrupt);
}

/// What a hand-built recording holds in one of its middle rounds (see [`jump_file`]).
#[derive(Clone, Copy, Debug)]
enum Middle {
    Nothing,
    /// A COMM and samples of a new thread.
    NewThread,
    /// Samples of a thread no record named (their comm is interned by the sample).
    UnknownThread,
    /// A new executable mapping, and samples in it.
    Mmap,
    /// A sample far newer than everything around it (the flush limits change).
    LateTime,
}

/// A recording of process 100 (threads 100 and 101, set up before the first round) with
/// 64 rounds of samples from two CPUs (each round two time-sorted runs that interleave),
/// and `middle` in round `at`.
fn jump_file(middle: Middle, at: usize) -> Vec<u8> {
    use crate::synth::{comm, file, mmap2, sample_a, Data, ID_A, USER};
    let mut d = Data::default();
    d.rec_id(3, 0, comm(100, 100, "main"), 100, 1, ID_A);
    d.rec_id(3, 0, comm(100, 101, "worker"), 100, 1, ID_A);
    let app = mmap2(100, 0x40_0000, 0x1_0000, 0, 5, "/usr/bin/app");
    d.rec_id(10, USER, app, 100, 2, ID_A);
    d.round();
    for round in 0..64u64 {
        let base = 1000 + round * 100;
        for cpu in 0..2u64 {
            if round as usize == at && cpu == 1 {
                match middle {
                    Middle::Nothing | Middle::UnknownThread | Middle::LateTime => {}
                    Middle::NewThread => {
                        d.rec_id(3, 0, comm(100, 102, "late"), 100, base, ID_A);
                    }
                    Middle::Mmap => {
                        let lib = mmap2(100, 0x60_0000, 0x1_0000, 0, 5, "/usr/lib/late.so");
                        d.rec_id(10, USER, lib, 100, base, ID_A);
                    }
                }
            }
            for k in 0..24u64 {
                let time = base + 2 * k + cpu;
                let tid = 100 + ((k + cpu) % 2) as i32;
                let ip = 0x40_0000 + ((round * 7 + k * 13) % 0x1000) * 4;
                d.rec(9, USER, sample_a(ip, 100, tid, time, 10 + k, &[]));
            }
            if round as usize == at && cpu == 1 {
                let (ip, tid, time) = match middle {
                    Middle::Nothing => continue,
                    Middle::NewThread => (0x40_0100, 102, base + 60),
                    Middle::UnknownThread => (0x40_0100, 103, base + 60),
                    Middle::Mmap => (0x60_0100, 100, base + 60),
                    Middle::LateTime => (0x40_0100, 100, base + 5000),
                };
                d.rec(9, USER, sample_a(ip, 100, tid, time, 7, &[]));
            }
        }
        d.round();
    }
    file(&d)
}

#[test]
fn test_two_share_read_jumps_only_over_records_that_change_nothing() {
    // The second of two shares skips most of the first share's records when they change no
    // state; the first share checks that, and reads the second share itself if they did.
    // Either way the samples and the profile are the sequential ones.
    let dir = scratch("parallel-jump");
    let cases = [
        (Middle::Nothing, 20, true),
        // Before the jump's start (a sixteenth of the way): replayed, so the jump holds.
        (Middle::NewThread, 0, true),
        (Middle::Mmap, 0, true),
        // In the skipped middle: refuted.
        (Middle::NewThread, 20, false),
        (Middle::UnknownThread, 20, false),
        (Middle::Mmap, 20, false),
        (Middle::LateTime, 29, false),
        // Late in the first share, after the rounds the jump lands on: replayed again.
        (Middle::UnknownThread, 31, true),
        (Middle::Mmap, 31, true),
    ];
    for (middle, at, holds) in cases {
        let path = dir.join(format!("{middle:?}-{at}.data"));
        std::fs::write(&path, jump_file(middle, at)).unwrap();
        let name = format!("{middle:?} in round {at}");
        assert_parallel_is_sequential(&name, &path);
        let (_, sizes) = parallel(&path, 2);
        let expect = if holds { 2 } else { 1 };
        assert_eq!(sizes.len(), expect, "{name}: shares used {sizes:?}");
        if holds {
            assert!(
                sizes.iter().all(|&n| n > 0),
                "{name}: a share is empty: {sizes:?}"
            );
        }
    }
}

#[test]
fn test_balanced_split_gives_the_second_share_half_of_what_is_left_after_side_work() {
    // The second thread first does its side work (here: waits until the first share has
    // delivered a third of the samples, which a slow sink makes take a while), then splits
    // what the first has not read yet in two.
    use std::time::{Duration, Instant};
    let path = scratch("parallel-balanced").join("even.data");
    std::fs::write(&path, jump_file(Middle::Nothing, 0)).unwrap();
    let want = sequential(&path);
    let total = want.0.len();
    let delivered = AtomicUsize::new(0);
    let (profile, shares) = {
        let delivered = &delivered;
        let work = move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while delivered.load(Ordering::Relaxed) < total / 3 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(100));
            }
        };
        Reader::open(&path)
            .threads(2)
            .side_work(work)
            .fold_parallel(Shares::new(Some(delivered)))
            .expect("parallel read")
    };
    let sizes = shares.sizes();
    assert_eq!(sizes.len(), 2, "the second share was not used: {sizes:?}");
    assert!(
        sizes[0] >= total / 3 && sizes[1] > 0 && sizes[1] < total - total / 3,
        "{total} samples split as {sizes:?}"
    );
    assert_eq!(want.0, shares.samples, "samples differ");
    assert_eq!(want.1, profile_view(&profile), "profile differs");
}

#[test]
fn test_parallel_read_equals_sequential_on_fuzz_findings() {
    // Mutated recordings on which a parallel read once differed: a jump onto the round
    // that ends the first share (whose flush the jumping part needed), and more malformed
    // records than the warning cap (each part capped its own).
    let dir = fixture("parallel-regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("parallel-regressions fixtures") {
        let path = e.unwrap().path();
        n += 1;
        // A finding whose every sample is malformed is refused by any read (nothing to
        // compare).
        if let Err(e) = Reader::open(&path).fold(|_, _| {}) {
            assert!(
                matches!(e.error, culprit_decode::DecodeError::AllSamplesMalformed(_)),
                "{}: {e}",
                path.display()
            );
            continue;
        }
        assert_parallel_is_sequential(&path.display().to_string(), &path);
    }
    assert!(n >= 3, "fixtures missing in {}", dir.display());
}

#[test]
fn test_parallel_read_equals_sequential_on_read_group_samples() {
    // Leader samples (PERF_SAMPLE_READ groups) all along the file: each share's periods are
    // deltas from the values of samples in earlier shares, which its replay must note.
    use crate::synth::{read_group_file, ID_A, ID_B};
    let mut samples = Vec::new();
    let (mut a, mut b) = (0u64, 0u64);
    for i in 0..6000u64 {
        b += 1000 + i % 7;
        // Some samples where the member did not move (no sample for it).
        a += i % 3;
        samples.push((100 + i, vec![(b, ID_B), (a, ID_A)]));
    }
    let path = scratch("parallel-read-group").join("read-group.data");
    std::fs::write(&path, read_group_file(&samples, 40)).unwrap();
    let splits = assert_parallel_is_sequential("read groups", &path);
    assert!(
        splits
            .iter()
            .any(|s| s.iter().filter(|&&n| n > 0).count() > 1),
        "no split divided the samples: {splits:?}"
    );
    let (got, _) = sequential(&path);
    // 6000 leader samples; the member moved in two of three.
    assert_eq!(got.len(), 6000 + 4000);
}

/// Counts samples (a [`Fold`] for reads whose samples are not compared).
struct Count(u64);

impl Fold for Count {
    fn add(&mut self, _: &Profile, _: &Sample) {
        self.0 += 1;
    }
    fn split(&self) -> Self {
        Count(0)
    }
    fn merge(&mut self, later: Self, _: &Profile) {
        self.0 += later.0;
    }
}

#[test]
fn test_parallel_progress_only_grows_and_ends_at_the_total() {
    // Before: only the last share reported, from its replay of the whole file (the bar
    // restarted) or from its share's start (2 % then 50 %), and a share that read nothing
    // reported 100 % at once.
    let samples: Vec<(u64, Vec<(u64, u64)>)> = (0..200_000u64)
        .map(|i| (10 + i, vec![(i + 1, crate::synth::ID_B)]))
        .collect();
    let data = crate::synth::read_group_file(&samples, 500);
    let len = data.len() as u64;
    assert!(
        len > 16 << 20,
        "{len} bytes: too small to report progress between ends"
    );
    for threads in [1, 2, 3] {
        for split in [SplitRule::Fixed(0.5), SplitRule::Balanced] {
            let reports = std::sync::Mutex::new(Vec::new());
            let (_, count) = Reader::from_bytes(&data)
                .threads(threads)
                .split(split)
                .progress(|done, total| reports.lock().unwrap().push((done, total)))
                .fold_parallel(Count(0))
                .unwrap();
            assert!(count.0 > 0);
            let reports = reports.into_inner().unwrap();
            let what = format!("{threads} threads, {split:?}: {reports:?}");
            assert!(reports.iter().all(|&(d, t)| t == len && d <= t), "{what}");
            assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0), "{what}");
            // No leap over a share: reports come every 4 MiB of each share's own records.
            let steps = reports.windows(2).map(|w| w[1].0 - w[0].0);
            assert!(steps.max().unwrap_or(0) <= len / 4, "{what}");
            assert_eq!(reports.last(), Some(&(len, len)), "{what}");
            assert!(reports[0].0 < len / 2, "{what}");
            assert!(
                reports.iter().filter(|&&(d, _)| d > 0 && d < len).count() >= 2,
                "{what}"
            );
        }
    }
}
