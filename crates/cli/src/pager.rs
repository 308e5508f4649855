//! The pager: on a terminal, long text goes through `$CULPRIT_PAGER`, else `$PAGER`, else
//! `less` (with `LESS=FRX` unless set: quit when it fits one screen, keep colours, leave the
//! screen as it was), as perf does. `--no-pager`, a pager of `cat` or an empty one, output
//! to a file or a pipe, and JSON/CSV meant for programs write straight to stdout.

use std::io::{self, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

/// A running pager, fed through its stdin; waited for when dropped, so the program ends
/// after the user quits it.
pub struct Pager {
    child: Child,
    stdin: Option<io::BufWriter<ChildStdin>>,
}

/// The pager command from the environment: `CULPRIT_PAGER`, then `PAGER`, else `less`;
/// `None` when it is set to nothing or `cat`.
pub fn command_from_env(culprit_pager: Option<String>, pager: Option<String>) -> Option<String> {
    let chosen = culprit_pager
        .or(pager)
        .unwrap_or_else(|| "less".to_string());
    let chosen = chosen.trim();
    (!chosen.is_empty() && chosen != "cat").then(|| chosen.to_string())
}

impl Pager {
    /// Starts the pager for a terminal, or `None` when there is none to start (unset to
    /// nothing, `cat`, or not installed: then stdout is used as is).
    pub fn start() -> Option<Pager> {
        let cmd = command_from_env(
            std::env::var("CULPRIT_PAGER").ok(),
            std::env::var("PAGER").ok(),
        )?;
        let mut command = Command::new("sh");
        command.arg("-c").arg(&cmd).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            command.env("LESS", "FRX");
        }
        if std::env::var_os("LV").is_none() {
            command.env("LV", "-c");
        }
        let mut child = command.spawn().ok()?;
        let stdin = child.stdin.take().map(io::BufWriter::new);
        Some(Pager { child, stdin })
    }
}

impl Write for Pager {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.stdin {
            Some(s) => s.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.stdin {
            Some(s) => s.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        // Closing stdin tells the pager the text is complete; then wait for the user.
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_pager_command_precedence_and_off_switches() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(command_from_env(None, None).as_deref(), Some("less"));
        assert_eq!(command_from_env(None, s("more")).as_deref(), Some("more"));
        assert_eq!(
            command_from_env(s("most"), s("more")).as_deref(),
            Some("most")
        );
        assert_eq!(command_from_env(s(""), s("more")), None);
        assert_eq!(command_from_env(None, s("cat")), None);
        assert_eq!(command_from_env(None, s("  ")), None);
    }
}
