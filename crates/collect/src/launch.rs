//! Launching the profiled command: fork, hold the child on a pipe until the parent has opened
//! its events (which are armed with `enable_on_exec`), then `execvp`. Also the SIGINT flag the
//! recording loop polls.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The program is not in PATH (or the path does not exist).
    #[error("command not found: '{0}'")]
    NotFound(String),
    /// The program exists but is not executable by us.
    #[error("'{0}' is not executable")]
    NotExecutable(String),
    /// An argument contains a NUL byte.
    #[error("argument contains a NUL byte: {0:?}")]
    NulInArgument(String),
    /// fork or pipe failed.
    #[error("cannot start the command: {0}")]
    Os(#[from] std::io::Error),
}

fn is_executable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid NUL-terminated path.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// Resolves a program name the way `execvp` will: names with a `/` as paths, others through
/// PATH.
pub fn resolve_program(name: &str) -> Result<PathBuf, LaunchError> {
    if name.is_empty() {
        return Err(LaunchError::NotFound(name.to_string()));
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        if !p.exists() {
            return Err(LaunchError::NotFound(name.to_string()));
        }
        if !is_executable(&p) {
            return Err(LaunchError::NotExecutable(name.to_string()));
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut found_not_exec = false;
    for dir in std::env::split_paths(&path) {
        let p = dir.join(name);
        if is_executable(&p) {
            return Ok(p);
        }
        found_not_exec |= p.is_file();
    }
    if found_not_exec {
        return Err(LaunchError::NotExecutable(name.to_string()));
    }
    Err(LaunchError::NotFound(name.to_string()))
}

/// A forked child waiting to exec its command.
#[derive(Debug)]
pub struct PendingChild {
    pid: libc::pid_t,
    gate: Option<OwnedFd>,
}

impl PendingChild {
    /// The child's pid (events are opened on it before [`PendingChild::go`]).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec its command.
    pub fn go(mut self) -> i32 {
        if let Some(fd) = self.gate.take() {
            // SAFETY: writing one byte from a valid buffer to a pipe we own.
            unsafe { libc::write(fd.as_raw_fd(), b"g".as_ptr() as *const libc::c_void, 1) };
        }
        self.pid
    }
}

impl Drop for PendingChild {
    fn drop(&mut self) {
        if self.gate.take().is_some() {
            // Dropped without go(): closing the pipe makes the child exit without exec; reap it.
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

/// Forks a child that waits until [`PendingChild::go`] and then runs `argv` (`argv[0]`
/// resolved through PATH first, so "command not found" is reported before anything starts).
pub fn spawn_held(argv: &[String]) -> Result<PendingChild, LaunchError> {
    spawn_held_with(argv, false)
}

/// [`spawn_held`]; with `stdout_to_stderr` the command's stdout is its stderr, as perf does
/// when the recording itself goes to stdout (`record -o -`): the command's output must not
/// mix into the perf.data stream.
pub fn spawn_held_with(
    argv: &[String],
    stdout_to_stderr: bool,
) -> Result<PendingChild, LaunchError> {
    let prog = argv
        .first()
        .ok_or_else(|| LaunchError::NotFound(String::new()))?;
    resolve_program(prog)?;
    // Everything the child needs is allocated before fork: after fork only async-signal-safe
    // calls are made.
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| LaunchError::NulInArgument(a.clone())))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let msg = CString::new(format!("culprit: cannot execute '{prog}'\n")).unwrap_or_default();
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: pipe2 returned two new descriptors we own.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: fork; the child only calls async-signal-safe functions (close, prctl, getppid,
    // read, execvp, write, _exit) on data prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    if pid == 0 {
        // Child.
        unsafe {
            libc::close(wr.as_raw_fd());
            // The command must not outlive a recorder killed outright (SIGKILL leaves it no
            // chance to end it): SIGTERM when culprit dies, so it can still clean up
            // (docs/record.md). If culprit died before the prctl, nothing will send it: the
            // parent is no longer culprit, so stop here.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != parent {
                libc::_exit(127);
            }
            let mut b = 0u8;
            let n = libc::read(rd.as_raw_fd(), &mut b as *mut u8 as *mut libc::c_void, 1);
            if n != 1 {
                libc::_exit(127);
            }
            if stdout_to_stderr {
                libc::dup2(2, 1);
            }
            // Rust programs ignore SIGPIPE, and an ignored signal stays ignored across exec:
            // give the command the default a shell would (`yes | head` must end `yes`).
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::execvp(ptrs[0], ptrs.as_ptr());
            libc::write(2, msg.as_ptr() as *const libc::c_void, msg.as_bytes().len());
            libc::_exit(127);
        }
    }
    drop(rd);
    Ok(PendingChild {
        pid,
        gate: Some(wr),
    })
}

/// How a waited-for child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// `exit(code)`.
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
}

impl ChildExit {
    /// The shell-style exit status: the code, or 128 + signal.
    pub fn code(self) -> i32 {
        match self {
            ChildExit::Exited(c) => c,
            ChildExit::Signaled(s) => 128 + s,
        }
    }
}

/// Non-blocking wait for a child: `None` while it runs.
pub fn try_wait(pid: i32) -> Option<ChildExit> {
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc != pid {
        return None;
    }
    if libc::WIFEXITED(status) {
        Some(ChildExit::Exited(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Some(ChildExit::Signaled(libc::WTERMSIG(status)))
    } else {
        None
    }
}

/// A pidfd for `pid` (Linux ≥ 5.3): readable once the process exits, so a poll on it blocks
/// until then instead of waking the CPU every few ms. `None` where the kernel lacks it.
pub fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just returned to us and is owned by nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Blocks until one of `fds` is readable (a pidfd: its process exited), a signal arrives
/// (the handlers have no SA_RESTART, so poll returns EINTR), or `timeout` passes.
pub fn wait_readable(fds: &[OwnedFd], timeout: std::time::Duration) {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Rounded up: waking before a `-I` tick would spin until it.
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: poll over a valid array of pollfd of the given length.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
}

static SIGINT_SEEN: AtomicBool = AtomicBool::new(false);
static SIGINT_COUNT: AtomicUsize = AtomicUsize::new(0);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_sigint(sig: libc::c_int) {
    SIGINT_SEEN.store(true, Ordering::SeqCst);
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
    SIGINT_COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Installs a SIGINT/SIGTERM handler that only counts the signal (without SA_RESTART, so
/// a blocking poll returns EINTR and the loop sees it at once).
pub fn install_sigint_handler() {
    // SAFETY: sigaction with a handler that only touches atomics (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// How many SIGINT/SIGTERM signals arrived since the handler was installed.
pub fn sigint_count() -> usize {
    SIGINT_COUNT.load(Ordering::SeqCst)
}

static SIGUSR2_COUNT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigusr2(_: libc::c_int) {
    SIGUSR2_COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Installs a SIGUSR2 handler that only counts the signal (`--switch-output=signal`,
/// `--overwrite`: perf's signal to write a file; other recordings ignore it, as perf),
/// without SA_RESTART as for SIGINT.
pub fn install_sigusr2_handler() {
    // SAFETY: sigaction with a handler that only touches an atomic (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigusr2 as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
    }
}

/// How many SIGUSR2 signals arrived since [`install_sigusr2_handler`].
pub fn sigusr2_count() -> usize {
    SIGUSR2_COUNT.load(Ordering::SeqCst)
}

/// The number of the latest SIGINT/SIGTERM counted by [`sigint_count`] (`None` before any).
pub fn last_signal() -> Option<i32> {
    Some(LAST_SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_resolve_program_path_and_missing() {
        assert!(resolve_program("sh").is_ok());
        assert!(matches!(
            resolve_program("no-such-program-xyz"),
            Err(LaunchError::NotFound(_))
        ));
        assert!(matches!(
            resolve_program("/no/such/file"),
            Err(LaunchError::NotFound(_))
        ));
        assert!(matches!(
            resolve_program("/etc/passwd"),
            Err(LaunchError::NotExecutable(_))
        ));
    }

    #[test]
    fn test_spawn_held_runs_after_go_and_reports_status() {
        let child = spawn_held(&["sh".into(), "-c".into(), "exit 7".into()]).unwrap();
        let pid = child.go();
        let t = std::time::Instant::now();
        let exit = loop {
            if let Some(e) = try_wait(pid) {
                break e;
            }
            assert!(t.elapsed().as_secs() < 10, "child did not exit");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(exit, ChildExit::Exited(7));
        assert_eq!(exit.code(), 7);
        assert_eq!(ChildExit::Signaled(9).code(), 137);
    }
}
