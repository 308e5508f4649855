//! The output file of a recording from its creation until the recording has started: the
//! previous file kept as `FILE.old`, the lock that refuses a second recorder, and the undo
//! of a failed start.

use std::fs::File;
use std::path::PathBuf;

use crate::error::RecordError;

/// The output file of a recording, from its creation until the recording has started:
/// a failure before then puts things back as they were.
pub(super) struct NewOutput {
    path: PathBuf,
    /// Where the previous file went (`FILE.old`), as perf keeps it.
    old: Option<PathBuf>,
    /// The path did not exist: the file is this recording's own.
    created: bool,
    /// The path was an empty regular file, written in place.
    was_empty: bool,
    /// The previous file (now `FILE.old`) and whatever `FILE.old` was, held locked until the
    /// recording has started: a concurrent `record -o FILE` must not move them meanwhile.
    _held: Vec<File>,
}

/// Takes an exclusive lock on the regular file at `path` if there is one (`None`: no
/// regular file there), without waiting: a lock held elsewhere is another recording of
/// the same output ([`RecordError::OutputInUse`]). The lock is taken on what the path names
/// after the lock too (else the file was moved meanwhile: it is retried).
fn lock_existing(path: &std::path::Path) -> Result<Option<File>, RecordError> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    for _ in 0..8 {
        // Only regular files: opening a FIFO would block, and a device is never moved.
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Ok(None);
        }
        let Ok(file) = File::open(path) else {
            continue;
        };
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(RecordError::OutputInUse {
                path: path.to_path_buf(),
            });
        }
        let same = match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            return Ok(Some(file));
        }
    }
    Err(RecordError::OutputInUse {
        path: path.to_path_buf(),
    })
}

impl NewOutput {
    /// Keeps an existing output file as `FILE.old`, as perf does (only a regular,
    /// non-empty file, or a link to one: never a device such as /dev/null), then creates
    /// the new file without ever truncating someone else's.
    pub(super) fn create(path: &std::path::Path) -> Result<(NewOutput, File), RecordError> {
        let not_writable = |path: &std::path::Path, source| RecordError::OutputNotWritable {
            path: path.to_path_buf(),
            source,
        };
        // Two recordings of one output: the file being written is locked by its recording
        // (and the previous one and `.old` while they move), so the second one stops here
        // instead of moving or truncating them.
        let previous = lock_existing(path)?;
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let is_data = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
        let mut out = NewOutput {
            path: path.to_path_buf(),
            old: None,
            created: false,
            was_empty: false,
            _held: Vec::new(),
        };
        if is_data || (link && std::fs::metadata(path).is_ok_and(|m| m.is_file())) {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            let old = PathBuf::from(old);
            if let Some(older) = lock_existing(&old)? {
                out._held.push(older);
            }
            std::fs::rename(path, &old).map_err(|e| not_writable(&old, e))?;
            out.old = Some(old);
        }
        // Last: `pop` lets the in-place file's lock go below.
        out._held.extend(previous);
        let opened = match std::fs::symlink_metadata(path) {
            // An empty file or a device: written in place, never removed.
            Ok(m) => {
                out.was_empty = m.is_file();
                File::create(path)
            }
            Err(_) => {
                out.created = true;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
            }
        };
        match opened {
            Ok(file) => {
                use std::os::unix::io::AsRawFd;
                // The new file is this recording's for as long as it is open: locked on the
                // writer's own descriptor (an empty file written in place was locked through
                // `previous`, another description: that lock is let go first). A device is
                // not locked.
                if !(out.created || out.was_empty) {
                    return Ok((out, file));
                }
                if out.was_empty {
                    out._held.pop();
                }
                // SAFETY: flock on the descriptor just opened.
                if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                    // Another recording took the path in between: it is theirs, untouched.
                    return Err(RecordError::OutputInUse {
                        path: path.to_path_buf(),
                    });
                }
                Ok((out, file))
            }
            Err(e) if out.created && e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Another recording created the path after this one looked: it is theirs (the
                // previous file stays at `.old`, as after any recording).
                Err(RecordError::OutputInUse {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => {
                out.created = false;
                out.abandon();
                Err(not_writable(path, e))
            }
        }
    }

    /// The recording did not start: removes the new file if this recording created it and
    /// puts the previous one back.
    pub(super) fn abandon(self) {
        if self.created
            && std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_file())
        {
            let _ = std::fs::remove_file(&self.path);
        }
        if self.was_empty {
            let _ = File::create(&self.path);
        }
        if let Some(old) = &self.old {
            let _ = std::fs::rename(old, &self.path);
        }
    }
}
