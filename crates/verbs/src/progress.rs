//! The progress bar of a long phase (reading a perf.data file, symbolizing): on a terminal
//! only (stderr), one bar per phase, never moving backwards, cleared when the phase ends.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use culprit_symbols::ProfileInput;

/// One phase's bar; does nothing when stderr is not a terminal.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    /// The furthest position shown (parallel readers report out of order).
    shown: Arc<AtomicU64>,
}

impl Progress {
    /// A bar for reading `input`, sized by the file (none for stdin, a FIFO or a device:
    /// their length is unknown).
    pub fn for_input(input: &ProfileInput) -> Progress {
        let size = (!input.is_stdin())
            .then(|| std::fs::metadata(input.path()).ok())
            .flatten()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        match size {
            Some(len) => Progress::new("reading", len),
            None => Progress::hidden(),
        }
    }

    /// A bar for `len` units of work (0: known from the first report), shown only on a
    /// terminal and only once its length is known (an empty bar would show 100 %).
    pub fn new(message: &'static str, len: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(len),
                indicatif::ProgressDrawTarget::hidden(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:>12} [{bar:40}] {percent:>3}% {elapsed}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(message);
            if len > 0 {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            bar
        });
        Progress {
            bar,
            shown: Arc::new(AtomicU64::new(0)),
        }
    }

    /// No bar.
    pub fn hidden() -> Progress {
        Progress {
            bar: None,
            shown: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The `(done, total)` callback of a read or a phase: moves the bar forward only.
    pub fn callback(&self) -> impl FnMut(u64, u64) + Send + 'static {
        let bar = self.bar.clone();
        let shown = Arc::clone(&self.shown);
        move |done: u64, total: u64| {
            let Some(bar) = &bar else { return };
            if bar.length().unwrap_or(0) == 0 && total > 0 {
                bar.set_length(total);
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            if shown.fetch_max(done, Ordering::Relaxed) < done {
                bar.set_position(done);
            }
        }
    }

    /// Ends the phase: the bar disappears.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
