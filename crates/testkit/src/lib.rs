//! culprit's test kit, used by every crate's tests as a dev-dependency only (never a normal
//! one: docs/architecture.md, checked by crates/cli/tests/architecture.rs).
//!
//! It holds what the crates' tests must agree on across crates and processes:
//! - the machine-wide PMU test lock ([`pmu_lock`]), a flock on `target/pmu-test.lock` that
//!   every test opening perf events holds, in any crate and any test process;
//! - the one set of skip rules ([`require_perf`], [`require_pmu`], [`skip`]): a skipped test
//!   says `SKIPPED test: why` on stderr and appends the line to `$CULPRIT_SKIP_LOG`
//!   (scripts/test.sh counts them); a missing perf fails under `CI` (where .ci/run installs
//!   it), and a missing hardware PMU fails under `CULPRIT_REQUIRE_PMU=1` (where .ci/run
//!   found a usable one);
//! - the workload builder ([`workload`]): `make -C workloads` into `target/workloads`;
//! - fake sysfs PMU trees ([`FakeSysfs`]) for the event parser's tests in collect and cli.
//!
//! It depends on no culprit crate, so that any crate may use it: whether a hardware PMU is
//! usable is asked by the caller (collect's probe) and passed to [`require_pmu`].

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The repository root (the workspace directory).
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The machine-wide PMU test lock, held until dropped.
#[derive(Debug)]
pub struct PmuLock {
    _file: File,
}

/// Takes the machine-wide PMU test lock (an exclusive flock on `target/pmu-test.lock`),
/// blocking until it is free. Tests that open perf events hold it for their whole run: they
/// share the few hardware counters and would multiplex each other. Each call opens the file
/// anew, so the lock serializes threads of one test process as well as test processes.
pub fn pmu_lock() -> PmuLock {
    let dir = repo_root().join("target");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let path = dir.join("pmu-test.lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open the PMU test lock {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    PmuLock { _file: file }
}

/// Whether `perf` (Debian's linux-perf) runs here.
pub fn perf_installed() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| {
        Command::new("perf")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Whether the tests run under CI (`$CI` set), where every tool the tests use is installed
/// and a missing one is a failure, not a skip.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Whether `CULPRIT_REQUIRE_PMU=1`: the hardware PMU is usable here, so PMU tests may not
/// skip.
pub fn pmu_required() -> bool {
    std::env::var("CULPRIT_REQUIRE_PMU").as_deref() == Ok("1")
}

/// Call at the start of a test that runs `perf`: true when it is installed; otherwise skips
/// loudly (false), or panics under CI.
pub fn require_perf(test: &str) -> bool {
    perf_installed() || require_tool(test, "perf is not installed")
}

/// Call where a test needs a tool that is missing (`why` says which): panics under CI, whose
/// machine has it (.ci/run installs it, scripts/test.sh builds it); skips loudly elsewhere.
/// Returns false.
pub fn require_tool(test: &str, why: &str) -> bool {
    assert!(
        !under_ci(),
        "{test}: {why}, but CI provides it (.ci/run installs it, scripts/test.sh builds it)"
    );
    skip(test, why)
}

/// `present`, or else [`require_tool`] with `why`: for `if !need(test, found, "no X") {
/// return; }` guards on a tool, a file a script builds, or a Python module.
pub fn need(test: &str, present: bool, why: &str) -> bool {
    present || require_tool(test, why)
}

/// Whether `program ARGS` runs and exits 0 (a tool's `--version`, `python3 -c 'import m'`),
/// its output discarded.
pub fn runs(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Call at the start of a test that needs the hardware PMU, with whether it is usable
/// (`culprit_collect::probe::hardware_pmu_available()`): true when it is; otherwise skips
/// loudly (false), or panics under `CULPRIT_REQUIRE_PMU=1`.
pub fn require_pmu(test: &str, available: bool) -> bool {
    available || skip(test, "no usable hardware PMU on this machine")
}

/// Skips a test loudly: prints `SKIPPED test: why` and appends `test: why` to
/// `$CULPRIT_SKIP_LOG`; returns false, for `if !skip(..) { return; }` guards. A skip whose
/// reason is the PMU (`why` names it) panics instead under `CULPRIT_REQUIRE_PMU=1`.
pub fn skip(test: &str, why: &str) -> bool {
    assert!(
        !(pmu_required() && why.contains("PMU")),
        "{test}: {why}, but CULPRIT_REQUIRE_PMU=1 says it must be there"
    );
    eprintln!("SKIPPED {test}: {why}");
    if let Some(log) = std::env::var_os("CULPRIT_SKIP_LOG") {
        // O_APPEND: concurrent test processes each add whole lines.
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(file, "{test}: {why}");
        }
    }
    false
}

/// Builds `workloads/NAME.c` into `target/workloads/NAME` (`make -s -C workloads`, which is a
/// no-op when it is up to date) and returns the binary's path.
pub fn workload(name: &str) -> PathBuf {
    workload_in("", name)
}

/// [`workload`] built into the Makefile's `target/workloads/SUBDIR/` (`aarch64` holds the
/// cross-compiled ones). Threads of one process build one at a time; make's own rename keeps
/// processes apart.
pub fn workload_in(subdir: &str, name: &str) -> PathBuf {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root();
    let out = root.join("target/workloads");
    let bin = out.join(subdir).join(name);
    let status = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(root.join("workloads"))
        .arg(format!("OUT={}", out.display()))
        .arg(&bin)
        .status()
        .expect("run make for the workloads");
    assert!(status.success(), "building workload {subdir}/{name} failed");
    bin
}

/// A fake sysfs `devices` tree (the directory of PMUs, for `Sysfs::at`) in
/// `target/test-tmp`, removed on drop.
pub struct FakeSysfs {
    /// The tree's root: one directory per PMU.
    pub root: PathBuf,
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl FakeSysfs {
    /// An empty tree, its directory unique to this process and call.
    pub fn empty() -> FakeSysfs {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let root = repo_root().join("target/test-tmp").join(format!(
            "culprit-fake-sysfs-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        FakeSysfs { root }
    }

    /// Adds a PMU with a type, format files, event aliases and caps, each `(file, content)`.
    pub fn pmu(
        &self,
        name: &str,
        ty: u32,
        formats: &[(&str, &str)],
        events: &[(&str, &str)],
        caps: &[(&str, &str)],
    ) -> &Self {
        let dir = self.root.join(name);
        let write = |path: PathBuf, content: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("{content}\n")).unwrap();
        };
        write(dir.join("type"), &ty.to_string());
        for (subdir, files) in [("format", formats), ("events", events), ("caps", caps)] {
            for (file, content) in files {
                write(dir.join(subdir).join(file), content);
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pmu_lock_excludes_a_second_holder_until_dropped() {
        let held = pmu_lock();
        let path = repo_root().join("target/pmu-test.lock");
        let other = File::options().write(true).open(&path).unwrap();
        // A second open file description of the same file: flock conflicts with it.
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().expect("free once the holder dropped it");
    }

    #[test]
    fn the_repo_root_holds_the_workspace() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(repo_root().join("crates/testkit").is_dir());
    }
}
