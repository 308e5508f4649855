//! `culprit top`: a live, refreshing view of the hottest functions per event (perf top),
//! with an optional panel of worst offenders. The live session is `culprit_collect::live`,
//! the table and the detectors `culprit_analysis::top`; this module parses the flags and
//! shows the snapshots: full screen on a terminal, else (or with `--stdio`, `--format json`)
//! one plain block or JSON line per refresh.
//!
//! A full-screen view owns the terminal: the recorder's warnings are collected while it is
//! up and printed after it has left the alternate screen, followed by the last table (the
//! view would otherwise vanish with it when the watched command exits).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use culprit_analysis::offenders::Settings;
use culprit_analysis::top::{LiveTop, TopSnapshot, View};
use culprit_collect::events::{self, SampleRate};
use culprit_collect::live::{self, Consumer, Flow, LiveEnd, LiveOptions};
use culprit_collect::target::Target;
use culprit_decode::model::{Profile, Sample};
use culprit_output::TextOptions;
use culprit_symbols::{KernelSymbols, Symbolizer, SymbolizerOptions};

use crate::args::{Format, OffendersUnit, OutputArgs, TargetArgs};

/// Arguments of `culprit top`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Live view of the hottest functions per event (perf top), with worst offenders",
    after_help = crate::help::layout("EXAMPLES:\n  culprit top                             whole system (as -a)\n  culprit top -p 1234 --offenders\n  culprit top -e cpu-clock -- ./prog      run a command and watch it\n  culprit top --stdio -- ./prog | less    plain text, one block per refresh\n\nKeys: q quits, Tab / Right and Left change the sort column (event), o toggles the offenders panel.")
)]
pub struct TopArgs {
    /// Print every perf_event_attr before it is opened, and each open, in perf's `-vv`
    /// layout (repeat: `-vv`).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Events (comma-separated, as `record -e`); default: cycles, or cpu-clock without a PMU.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sampling frequency in Hz (default 1000).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Sampling period in events (instead of -F).
    #[arg(short = 'c', long = "count", value_name = "N", conflicts_with = "freq")]
    pub count: Option<u64>,
    /// What to watch (default: the whole system, as perf top).
    #[command(flatten)]
    pub target: TargetArgs,
    /// Refresh interval in seconds.
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECS",
        default_value_t = 1.0
    )]
    pub delay: f64,
    /// Rows shown per refresh (default: as many as the terminal holds; 20 in plain mode).
    #[arg(long = "rows", value_name = "N")]
    pub rows: Option<usize>,
    /// Show culprit's own samples too (system-wide they are hidden, as they are noise).
    #[arg(long = "include-self")]
    pub include_self: bool,
    /// Plain text (one block per refresh) even on a terminal; the default when stdout is not
    /// a terminal.
    #[arg(long = "stdio")]
    pub stdio: bool,
    /// Show a panel of confirmed worst offenders (paired-sampling detector).
    #[arg(long = "offenders")]
    pub offenders: bool,
    /// Offender detector: first counter's terminal value (implies --offenders).
    #[arg(long = "t1", value_name = "N")]
    pub t1: Option<u64>,
    /// Offender detector: second counter's terminal value (implies --offenders).
    #[arg(long = "t2", value_name = "N")]
    pub t2: Option<u64>,
    /// What --t1/--t2 count.
    #[arg(long = "offenders-unit", value_enum, default_value_t = OffendersUnit::Samples)]
    pub offenders_unit: OffendersUnit,
    /// Stop after this many seconds.
    #[arg(long = "duration", value_name = "SECS")]
    pub duration: Option<f64>,
    /// `--format text|json` (json: one object per refresh and line, schema in
    /// docs/schemas/top.schema.json; implies plain mode), `-o FILE`, `--color`, `--width`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How often the live loop wakes up (keys, the duration, the refresh interval).
const TICK: Duration = Duration::from_millis(100);

/// Offenders per event in a plain block and in JSON (the full-screen panel shows fewer).
const OFFENDERS_SHOWN: usize = 10;

/// The live table and what the flags ask of it.
struct Session<'a> {
    args: &'a TopArgs,
    live: LiveTop,
    started: Instant,
}

/// Rows of a plain block without `--rows`.
const PLAIN_ROWS: usize = 20;

impl Session<'_> {
    fn snapshot(&mut self, p: &Profile, sort_by: usize, offenders: usize) -> TopSnapshot {
        self.snapshot_rows(p, sort_by, offenders, self.args.rows.unwrap_or(PLAIN_ROWS))
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
        self.args
            .duration
            .is_some_and(|d| self.started.elapsed().as_secs_f64() >= d)
    }
}

/// The live options of the flags.
fn live_options(args: &TopArgs) -> anyhow::Result<LiveOptions> {
    let mut specs = Vec::new();
    for list in &args.events {
        specs.extend(events::parse_event_list(list)?);
    }
    let rate =
        crate::args::sample_rate(args.count, args.freq)?.unwrap_or(SampleRate::Frequency(1000));
    let choice = args.target.choice("top", true)?;
    Ok(LiveOptions {
        events: specs,
        rate: Some(rate),
        target: choice.target,
        cpus: choice.cpus,
        mmap_pages: culprit_collect::record::DEFAULT_MMAP_PAGES,
        cmdline: std::env::args().collect(),
        tool_version: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    })
}

/// Runs `culprit top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    culprit_collect::verbose::set_level(args.verbose);
    args.output.require("top", &[Format::Text, Format::Json])?;
    if !(args.delay > 0.0 && args.delay.is_finite()) {
        bail!("-d: the delay must be a positive number of seconds");
    }
    let settings = (args.offenders || args.t1.is_some() || args.t2.is_some()).then_some(Settings {
        t1: args.t1,
        t2: args.t2,
        unit: args.offenders_unit.into(),
    });
    let opts = live_options(&args)?;
    // The live view names this machine's kernel.
    let sym = Symbolizer::new(SymbolizerOptions {
        kernel_symbols: KernelSymbols::Running,
        ..SymbolizerOptions::default()
    });
    // System-wide, the same function runs in many processes: rows per process, and
    // culprit's own sampling and drawing are hidden unless asked for.
    let system_wide = matches!(opts.target, Target::System(_));
    let own = (system_wide && !args.include_self).then(|| std::process::id() as i32);
    let mut session = Session {
        args: &args,
        live: LiveTop::new(sym, settings)?
            .by_process(system_wide)
            .hiding(own),
        started: Instant::now(),
    };
    let plain = args.stdio || args.output.format == Format::Json || !args.output.is_tty();
    let end = if plain {
        run_plain(&mut session, opts)?
    } else {
        run_tui(&mut session, opts)?
    };
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

fn warn_now(w: String) {
    eprintln!("culprit: warning: {w}");
}

/// Writes one refresh: a text block (the status line, the tables, a blank line) or a JSON
/// line.
fn write_block(
    out: &mut dyn Write,
    snap: &TopSnapshot,
    format: Format,
    text: &TextOptions,
) -> std::io::Result<()> {
    if format == Format::Json {
        culprit_output::json::write_line(out, snap)?;
    } else {
        writeln!(out, "{}", snap.status_line())?;
        culprit_output::text::write(out, &snap.document(), text)?;
        writeln!(out)?;
    }
    out.flush()
}

/// Plain mode: one block per interval while the target runs, and a last one at the end.
fn run_plain(session: &mut Session<'_>, opts: LiveOptions) -> anyhow::Result<LiveEnd> {
    let args = session.args;
    let mut v = PlainView {
        out: args.output.unpaged_writer()?,
        text: args.output.text_options(),
        session,
        last: Instant::now(),
        failed: None,
    };
    let end = live::run(opts, TICK, Box::new(warn_now), &mut v);
    if let Some(e) = v.failed.take() {
        return Err(e.into());
    }
    let end = end?;
    // The final block: everything recorded, after the target ended.
    if !end.stopped_by_consumer || v.session.out_of_time() {
        v.block(&end.profile)?;
    }
    Ok(end)
}

struct PlainView<'s, 'a> {
    out: Box<dyn Write>,
    text: TextOptions,
    session: &'s mut Session<'a>,
    last: Instant,
    failed: Option<std::io::Error>,
}

impl PlainView<'_, '_> {
    fn block(&mut self, p: &Profile) -> std::io::Result<()> {
        let snap = self.session.snapshot(p, 0, OFFENDERS_SHOWN);
        let format = self.session.args.output.format;
        write_block(&mut *self.out, &snap, format, &self.text)
    }
}

impl Consumer for PlainView<'_, '_> {
    fn sample(&mut self, p: &Profile, s: &Sample) -> Flow {
        self.session.live.add(p, s);
        Flow::Continue
    }

    fn tick(&mut self, p: &Profile, _now: u64) -> Flow {
        if self.session.out_of_time() {
            return Flow::Stop;
        }
        if self.last.elapsed().as_secs_f64() >= self.session.args.delay {
            self.last = Instant::now();
            if let Err(e) = self.block(p) {
                // stdout closed (e.g. `| head`): stop quietly, report other errors.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    self.failed = Some(e);
                }
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
}

/// Full screen: redrawn every interval; keys change the sort column and the panel. The
/// recorder's warnings wait until the screen is left; then the last table is printed.
#[cfg(feature = "tui")]
fn run_tui(session: &mut Session<'_>, opts: LiveOptions) -> anyhow::Result<LiveEnd> {
    use anyhow::Context;
    use std::sync::{Arc, Mutex};
    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let collect = warnings.clone();
    let warn = Box::new(move |w: String| {
        if let Ok(mut v) = collect.lock() {
            v.push(w);
        }
    });
    let terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let show_off = session.live.has_offenders();
    let mut v = TuiView {
        session,
        terminal,
        by: 0,
        show_off,
        last: None,
        failed: None,
        note: None,
    };
    let end = live::run(opts, TICK, warn, &mut v);
    ratatui::restore();
    let TuiView {
        session,
        failed,
        by,
        ..
    } = v;
    for w in warnings.lock().map(|v| v.clone()).unwrap_or_default() {
        warn_now(w);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let end = end?;
    // The last table stays on the terminal (sorted as it was shown).
    let snap = session.snapshot(&end.profile, by, OFFENDERS_SHOWN);
    let text = session.args.output.text_options();
    let stdout = std::io::stdout();
    write_block(&mut stdout.lock(), &snap, Format::Text, &text)?;
    Ok(end)
}

#[cfg(not(feature = "tui"))]
fn run_tui(session: &mut Session<'_>, opts: LiveOptions) -> anyhow::Result<LiveEnd> {
    run_plain(session, opts)
}

#[cfg(feature = "tui")]
struct TuiView<'s, 'a> {
    session: &'s mut Session<'a>,
    terminal: ratatui::DefaultTerminal,
    /// The sort column (event).
    by: usize,
    show_off: bool,
    /// The last redraw.
    last: Option<Instant>,
    failed: Option<anyhow::Error>,
    /// A message for the header (a key that does nothing says why), and since when.
    note: Option<(String, Instant)>,
}

/// How long a key's message stays in the header.
#[cfg(feature = "tui")]
const NOTE_TIME: Duration = Duration::from_secs(4);

/// Function rows that fit a terminal of `height` lines: the header line, the table's
/// border (2) and column header (1), and the offenders panel when shown.
#[cfg_attr(not(feature = "tui"), allow(dead_code))]
fn rows_for_height(height: u16, offenders_panel: u16) -> usize {
    usize::from(height.saturating_sub(1 + 3 + offenders_panel)).max(1)
}

/// Tables as text lines of at most `width` characters, without colour (the widget draws
/// them).
#[cfg(feature = "tui")]
fn tables_text(tables: &[culprit_output::Table], width: usize) -> String {
    let o = TextOptions {
        width: Some(width.max(20)),
        color: false,
    };
    let mut out = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        // Writing to memory cannot fail.
        let _ = culprit_output::text::write_table(&mut out, t, &o);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(feature = "tui")]
impl TuiView<'_, '_> {
    fn draw(&mut self, p: &Profile) -> anyhow::Result<()> {
        use ratatui::layout::{Constraint, Layout};
        use ratatui::widgets::{Block, Paragraph};
        let size = self.terminal.size()?;
        let off_h: u16 = if self.show_off { 12 } else { 0 };
        // The table fills the terminal unless --rows says otherwise.
        let rows = self
            .session
            .args
            .rows
            .unwrap_or_else(|| rows_for_height(size.height, off_h));
        let snap = self.session.snapshot_rows(p, self.by, 8, rows);
        self.by = snap.sort_by;
        self.note = self.note.take().filter(|(_, t)| t.elapsed() < NOTE_TIME);
        let keys = match &self.note {
            Some((n, _)) => n.clone(),
            None => "[q quit, Tab/←/→ sort column, o offenders]".to_string(),
        };
        let header = format!("{}   {keys}", snap.status_line());
        let width = usize::from(size.width.saturating_sub(2));
        let table = tables_text(&[snap.functions_table()], width);
        let show_off = self.show_off;
        let offs = if show_off {
            tables_text(&snap.offender_tables(), width)
        } else {
            String::new()
        };
        self.terminal.draw(|f| {
            let parts = Layout::vertical([
                Constraint::Length(1),
                Constraint::Min(3),
                Constraint::Length(off_h),
            ])
            .split(f.area());
            f.render_widget(Paragraph::new(header.as_str()), parts[0]);
            f.render_widget(
                Paragraph::new(table.as_str()).block(Block::bordered().title("Functions")),
                parts[1],
            );
            if show_off {
                f.render_widget(
                    Paragraph::new(offs.as_str()).block(Block::bordered().title("Worst offenders")),
                    parts[2],
                );
            }
        })?;
        Ok(())
    }

    /// Handles the keys typed since the last tick; false on q/Esc/Ctrl-C.
    fn keys(&mut self) -> anyhow::Result<bool> {
        use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
        let nev = self.session.live.events();
        while event::poll(Duration::ZERO)? {
            let Event::Key(k) = event::read()? else {
                continue;
            };
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                // Raw mode turns Ctrl-C into a key.
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(false)
                }
                KeyCode::Tab | KeyCode::Right => self.by = (self.by + 1) % nev,
                KeyCode::Left | KeyCode::BackTab => self.by = (self.by + nev - 1) % nev,
                KeyCode::Char('o') if self.session.live.has_offenders() => {
                    self.show_off = !self.show_off
                }
                KeyCode::Char('o') => {
                    self.note = Some((
                        "o: no offenders panel: start top with --offenders (or --t1/--t2)"
                            .to_string(),
                        Instant::now(),
                    ));
                }
                _ => continue,
            }
            // Show a changed sort or panel at once.
            self.last = None;
        }
        Ok(true)
    }
}

#[cfg(feature = "tui")]
impl Consumer for TuiView<'_, '_> {
    fn sample(&mut self, p: &Profile, s: &Sample) -> Flow {
        self.session.live.add(p, s);
        Flow::Continue
    }

    fn tick(&mut self, p: &Profile, _now: u64) -> Flow {
        let go = match self.keys() {
            Ok(go) => go,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        };
        if !go || self.session.out_of_time() {
            return Flow::Stop;
        }
        let due = self
            .last
            .is_none_or(|t| t.elapsed().as_secs_f64() >= self.session.args.delay);
        if due {
            self.last = Some(Instant::now());
            if let Err(e) = self.draw(p) {
                self.failed = Some(e);
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
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
