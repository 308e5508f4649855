//! `read_file_parallel` against the sequential streaming read: in share order, the shares'
//! samples are the sequential samples (same fields, same string and DSO ids, same chains),
//! and the merged profile is the sequential profile, for every fixture, a hand-built file
//! with fork/exec/mmap changes between rounds, and a live multi-process recording.

use std::path::Path;

use culprit_decode::model::Sample;
use culprit_decode::{read_file_parallel, read_file_streaming, Profile};
use serde_json::Value;

use crate::common::{fixture, pmu_lock, require_perf, scratch, workload};
use crate::stream::{profile_view, sample_view};

/// Samples and profile of a sequential streaming read.
fn sequential(path: &Path) -> (Vec<Value>, Value) {
    let mut samples = Vec::new();
    let p = read_file_streaming(path, &mut |_, _| {}, &mut |p, s| {
        samples.push(sample_view(p, s))
    })
    .expect("sequential read");
    (samples, profile_view(&p))
}

/// Samples (share after share) and merged profile of a read on `n` shares; also how many
/// samples each share delivered.
fn parallel(path: &Path, n: usize) -> ((Vec<Value>, Value), Vec<usize>) {
    let mut shares: Vec<Vec<Value>> = vec![Vec::new(); n];
    let profile = {
        let mut sinks: Vec<_> = shares
            .iter_mut()
            .map(|v| move |p: &Profile, s: &Sample| v.push(sample_view(p, s)))
            .collect();
        read_file_parallel(path, false, &mut |_, _| {}, &mut sinks).expect("parallel read")
    };
    let sizes = shares.iter().map(Vec::len).collect();
    let samples = shares.into_iter().flatten().collect();
    ((samples, profile_view(&profile)), sizes)
}

fn assert_parallel_is_sequential(name: &str, path: &Path) -> Vec<Vec<usize>> {
    let want = sequential(path);
    let mut splits = Vec::new();
    for n in 1..=4 {
        let (got, sizes) = parallel(path, n);
        assert_eq!(
            want.0.len(),
            got.0.len(),
            "{name}, {n} shares {sizes:?}: sample count differs"
        );
        for (i, (a, b)) in want.0.iter().zip(&got.0).enumerate() {
            assert_eq!(a, b, "{name}, {n} shares {sizes:?}: sample {i} differs");
        }
        assert_eq!(want.1, got.1, "{name}, {n} shares: profile differs");
        splits.push(sizes);
    }
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
    let status = std::process::Command::new("perf")
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
    // Malformed samples all along the file: each share warns about its own, and the merged
    // warnings are the sequential ones, in order.
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
    assert!(
        warnings.as_array().is_some_and(|w| w.len() >= 5),
        "expected warnings about malformed samples: {warnings}"
    );
    assert_parallel_is_sequential("live recording with malformed samples", &corrupt);
}
