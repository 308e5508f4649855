//! Helpers for unit tests that open perf events.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Holds the machine-wide PMU test lock (the same flock on target/pmu-test.lock that the CLI
/// integration tests take), so tests opening perf events run one at a time.
pub struct PmuLock {
    _file: File,
}

/// Takes the PMU test lock, blocking until it is free.
pub fn pmu_lock() -> PmuLock {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("pmu-test.lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("open the PMU test lock");
    // SAFETY: flock on a descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    PmuLock { _file: file }
}
