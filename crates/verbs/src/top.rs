//! `culprit top`: a live, refreshing view of the hottest functions per event (perf top),
//! with an optional panel of worst offenders. The live session is `culprit_collect::live`,
//! the table and the detectors `culprit_analysis::top`; this module drives them and shows
//! the snapshots: full screen on a terminal ([`TopOptions::full_screen`], the `tui`
//! feature), else one plain block or JSON line per refresh (`plain`).
//!
//! A full-screen view owns the terminal: the recorder's warnings are collected while it is
//! up and printed after it has left the alternate screen, followed by the last table (the
//! view would otherwise vanish with it when the watched command exits).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use culprit_analysis::offenders::Settings;
use culprit_analysis::top::{LiveTop, TopSnapshot, View};
use culprit_collect::events::{EventSpec, SampleRate};
use culprit_collect::live::{LiveEnd, LiveOptions};
use culprit_collect::target::Target;
use culprit_decode::model::Profile;
use culprit_output::TextOptions;
use culprit_symbols::{KernelSymbols, Symbolizer, SymbolizerOptions};

mod plain;
#[cfg(feature = "tui")]
mod tui;

/// What `culprit top` writes per refresh in plain mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopFormat {
    /// A text block: the status line, the tables, a blank line.
    Text,
    /// One JSON object per line (docs/schemas/top.schema.json).
    Json,
}

/// What to watch and how to show it.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// perf's `-v` level: print every perf_event_attr before it is opened, and each open.
    pub verbose: u8,
    /// The events (empty: cycles, or cpu-clock without a PMU).
    pub events: Vec<EventSpec>,
    /// The rate of the events that do not set their own.
    pub rate: SampleRate,
    /// Whom to watch.
    pub target: Target,
    /// Only these CPUs.
    pub cpus: Option<Vec<u32>>,
    /// The command line, for the live stream's header.
    pub cmdline: Vec<String>,
    /// The refresh interval in seconds (positive).
    pub delay: f64,
    /// Function rows per refresh (`None`: as many as the terminal holds full screen,
    /// [`PLAIN_ROWS`] in plain mode).
    pub rows: Option<usize>,
    /// Show culprit's own samples system-wide (hidden by default, as they are noise).
    pub include_self: bool,
    /// Full screen (with the `tui` feature; without it, plain blocks) instead of plain
    /// blocks or JSON lines.
    pub full_screen: bool,
    /// What a plain refresh writes.
    pub format: TopFormat,
    /// Colour and width of the text blocks.
    pub text: TextOptions,
    /// The offender detector's settings (`None`: no offenders panel).
    pub offenders: Option<Settings>,
    /// Stop after this many seconds.
    pub duration: Option<f64>,
}

/// How often the live loop wakes up (keys, the duration, the refresh interval).
const TICK: Duration = Duration::from_millis(100);

/// Offenders per event in a plain block and in JSON (the full-screen panel shows fewer).
const OFFENDERS_SHOWN: usize = 10;

/// Rows of a plain block without [`TopOptions::rows`].
pub const PLAIN_ROWS: usize = 20;

/// The live table and what the options ask of it.
struct Session<'a> {
    opts: &'a TopOptions,
    live: LiveTop,
    started: Instant,
}

impl Session<'_> {
    fn snapshot(&mut self, p: &Profile, sort_by: usize, offenders: usize) -> TopSnapshot {
        self.snapshot_rows(p, sort_by, offenders, self.opts.rows.unwrap_or(PLAIN_ROWS))
    }

    fn snapshot_rows(
        &mut self,
        p: &Profile,
        sort_by: usize,
        offenders: usize,
        rows: usize,
    ) -> TopSnapshot {
        let view = View {
            sort_by,
            rows,
            offenders,
        };
        self.live.snapshot(p, view, self.started.elapsed())
    }

    fn out_of_time(&self) -> bool {
        self.opts
            .duration
            .is_some_and(|d| self.started.elapsed().as_secs_f64() >= d)
    }
}

/// The live recorder's options.
fn live_options(opts: &TopOptions) -> LiveOptions {
    LiveOptions {
        events: opts.events.clone(),
        rate: Some(opts.rate),
        target: opts.target.clone(),
        cpus: opts.cpus.clone(),
        mmap_pages: culprit_collect::record::DEFAULT_MMAP_PAGES,
        cmdline: opts.cmdline.clone(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    }
}

/// Runs `culprit top` until the target ends, the duration is over or the user quits
/// (full screen), writing the refreshes (plain) or the last table (full screen) to the
/// writer `output` opens, and the warnings and the end-of-run summary to stderr. The exit
/// status is the launched command's, unless the view stopped it.
pub fn run(
    opts: TopOptions,
    output: impl FnOnce() -> anyhow::Result<Box<dyn Write>>,
) -> anyhow::Result<ExitCode> {
    culprit_collect::verbose::set_level(opts.verbose);
    let live_opts = live_options(&opts);
    // The live view names this machine's kernel.
    let sym = Symbolizer::new(SymbolizerOptions {
        kernel_symbols: KernelSymbols::Running,
        ..SymbolizerOptions::default()
    });
    // System-wide, the same function runs in many processes: rows per process, and
    // culprit's own sampling and drawing are hidden unless asked for.
    let system_wide = matches!(opts.target, Target::System(_));
    let own = (system_wide && !opts.include_self).then(|| std::process::id() as i32);
    let mut session = Session {
        opts: &opts,
        live: LiveTop::new(sym, opts.offenders)?
            .by_process(system_wide)
            .hiding(own),
        started: Instant::now(),
    };
    let end = if opts.full_screen {
        run_full_screen(&mut session, live_opts, output)?
    } else {
        plain::run(&mut session, live_opts, output()?)?
    };
    finish(&session, &end)
}

/// The end of a run: the warnings, the summary line, and the exit status.
fn finish(session: &Session<'_>, end: &LiveEnd) -> anyhow::Result<ExitCode> {
    for w in session.live.warnings() {
        eprintln!("culprit: warning: {w}");
    }
    let summary = &end.summary;
    let recorded: u64 = summary.events.iter().map(|e| e.samples).sum();
    eprintln!(
        "culprit top: {recorded} samples recorded, {} shown{}",
        session.live.samples(),
        if end.stopped_by_consumer {
            " (those still in flight when the view stopped are not)"
        } else {
            ""
        }
    );
    if recorded == 0 {
        eprintln!("culprit: warning: no samples were taken");
    }
    if summary.lost_samples > 0 {
        eprintln!(
            "culprit: warning: the kernel lost {} samples (the view could not keep up, or the \
             rate is too high for the ring buffer)",
            summary.lost_samples
        );
    }
    // Quitting (q, --duration) ends the target: its exit status is then ours to ignore.
    Ok(match summary.exit {
        Some(e) if e.code() != 0 && !end.stopped_by_consumer => {
            ExitCode::from(e.code().clamp(1, 255) as u8)
        }
        _ => ExitCode::SUCCESS,
    })
}

#[cfg(feature = "tui")]
fn run_full_screen(
    session: &mut Session<'_>,
    live_opts: LiveOptions,
    output: impl FnOnce() -> anyhow::Result<Box<dyn Write>>,
) -> anyhow::Result<LiveEnd> {
    tui::run(session, live_opts, output)
}

/// Without the terminal UI, a full screen is plain blocks.
#[cfg(not(feature = "tui"))]
fn run_full_screen(
    session: &mut Session<'_>,
    live_opts: LiveOptions,
    output: impl FnOnce() -> anyhow::Result<Box<dyn Write>>,
) -> anyhow::Result<LiveEnd> {
    plain::run(session, live_opts, output()?)
}

/// Prints one of the recorder's warnings now.
fn warn_now(w: String) {
    eprintln!("culprit: warning: {w}");
}

/// Writes one refresh: a text block (the status line, the tables, a blank line) or a JSON
/// line.
fn write_block(
    out: &mut dyn Write,
    snap: &TopSnapshot,
    format: TopFormat,
    text: &TextOptions,
) -> std::io::Result<()> {
    if format == TopFormat::Json {
        culprit_output::json::write_line(out, snap)?;
    } else {
        writeln!(out, "{}", snap.status_line())?;
        culprit_output::text::write(out, &snap.document(), text)?;
        writeln!(out)?;
    }
    out.flush()
}

/// Function rows that fit a terminal of `height` lines: the header line, the table's
/// border (2) and column header (1), and the offenders panel when shown.
#[cfg_attr(not(feature = "tui"), allow(dead_code))]
fn rows_for_height(height: u16, offenders_panel: u16) -> usize {
    usize::from(height.saturating_sub(1 + 3 + offenders_panel)).max(1)
}

#[cfg(test)]
mod tests_rows {
    use super::*;

    #[test]
    fn test_rows_fill_the_terminal_height() {
        assert_eq!(rows_for_height(50, 0), 46);
        assert_eq!(rows_for_height(50, 12), 34);
        assert_eq!(rows_for_height(3, 12), 1);
    }
}
