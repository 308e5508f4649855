//! Colour and width of text output: `--color auto|always|never`, `NO_COLOR`, terminal width.

use std::io::IsTerminal;

/// When text output uses colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set to a non-empty value (no-color.org).
    #[default]
    Auto,
    /// Always (also into a pipe or file).
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour output that goes to a terminal (`is_tty`) or not.
    pub fn enabled(self, is_tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// ANSI colour of the hottest rows and flagged nodes (bold red).
pub const HOT: &str = "\x1b[1;31m";
/// ANSI colour of warm rows (yellow).
pub const WARM: &str = "\x1b[33m";
/// ANSI reset, after a coloured text.
pub const RESET: &str = "\x1b[0m";

/// `text` in `color` (one of the escapes above), reset after.
pub fn paint(text: &str, color: &str) -> String {
    format!("{color}{text}{RESET}")
}

/// How text output is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextOptions {
    /// Lines are fitted to this many characters; `None`: not fitted.
    pub width: Option<usize>,
    /// Whether to use ANSI colours (highlighting of hot rows).
    pub color: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            width: Some(DEFAULT_WIDTH),
            color: false,
        }
    }
}

/// The width of text output on a terminal whose width is unknown and without `COLUMNS`.
pub const DEFAULT_WIDTH: usize = 80;

/// Narrowest width fitted to (a narrower terminal wraps).
const MIN_WIDTH: usize = 40;

impl TextOptions {
    /// Options for output to stdout: colour by `color` (and `NO_COLOR`), width `width` when
    /// given (0: unlimited); else on a terminal its width, else `$COLUMNS`, else 80; else
    /// (a file or a pipe) unlimited.
    pub fn for_stdout(color: ColorChoice, width: Option<usize>) -> TextOptions {
        let tty = std::io::stdout().is_terminal();
        TextOptions::detect(color, width, tty)
    }

    /// Options for output that is (`is_tty`) or is not a terminal.
    pub fn detect(color: ColorChoice, width: Option<usize>, is_tty: bool) -> TextOptions {
        let width = match width {
            Some(0) => None,
            Some(w) => Some(w.max(MIN_WIDTH)),
            // As perf: text into a file or a pipe is never cut (a name cut there is lost
            // to grep and to the reader of the file).
            None if !is_tty => None,
            None => {
                let w = terminal_width().or_else(columns_env);
                Some(w.unwrap_or(DEFAULT_WIDTH).max(MIN_WIDTH))
            }
        };
        TextOptions {
            width,
            color: color.enabled(is_tty),
        }
    }
}

/// `$COLUMNS`, when set to a positive number.
fn columns_env() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&w| w > 0)
}

/// The width of the terminal on stdout (or stderr), from the kernel.
pub fn terminal_width() -> Option<usize> {
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: TIOCGWINSZ writes a winsize into the struct passed; a failure (not a
        // terminal) returns -1 and leaves it zeroed.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
        if r == 0 && ws.ws_col > 0 {
            return Some(usize::from(ws.ws_col));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_color_choice() {
        assert!(ColorChoice::Always.enabled(false));
        assert!(!ColorChoice::Never.enabled(true));
        assert!(!ColorChoice::Auto.enabled(false));
    }

    #[test]
    fn test_width_choice() {
        assert_eq!(
            TextOptions::detect(ColorChoice::Never, Some(0), false).width,
            None
        );
        assert_eq!(
            TextOptions::detect(ColorChoice::Never, Some(120), false).width,
            Some(120)
        );
        assert_eq!(
            TextOptions::detect(ColorChoice::Never, Some(3), false).width,
            Some(MIN_WIDTH)
        );
        // A file or a pipe is never cut unless asked.
        assert_eq!(
            TextOptions::detect(ColorChoice::Never, None, false).width,
            None
        );
    }
}
