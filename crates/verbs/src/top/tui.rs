//! Full-screen mode of `culprit top` (ratatui): redrawn every interval; keys change the
//! sort column and the offenders panel. The recorder's warnings wait until the screen is
//! left; then the last table is printed.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use culprit_collect::live::{self, Consumer, Flow, LiveEnd, LiveOptions};
use culprit_decode::model::{Profile, Sample};
use culprit_output::TextOptions;

use super::{rows_for_height, warn_now, write_block, Session, TopFormat, OFFENDERS_SHOWN, TICK};

/// How long a key's message stays in the header.
const NOTE_TIME: Duration = Duration::from_secs(4);

/// Records with `opts` behind the full-screen view, then writes the last table (sorted as
/// it was shown) to the writer `output` opens.
pub(super) fn run(
    session: &mut Session<'_>,
    opts: LiveOptions,
    output: impl FnOnce() -> anyhow::Result<Box<dyn Write>>,
) -> anyhow::Result<LiveEnd> {
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
    write_block(&mut *output()?, &snap, TopFormat::Text, &session.opts.text)?;
    Ok(end)
}

/// The full-screen view.
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

/// Tables as text lines of at most `width` characters, without colour (the widget draws
/// them).
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

impl TuiView<'_, '_> {
    fn draw(&mut self, p: &Profile) -> anyhow::Result<()> {
        use ratatui::layout::{Constraint, Layout};
        use ratatui::widgets::{Block, Paragraph};
        let size = self.terminal.size()?;
        let off_h: u16 = if self.show_off { 12 } else { 0 };
        // The table fills the terminal unless --rows says otherwise.
        let rows = self
            .session
            .opts
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
            .is_none_or(|t| t.elapsed().as_secs_f64() >= self.session.opts.delay);
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
