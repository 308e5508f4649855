//! Plain mode of `culprit top`: one text block or JSON line per refresh while the target
//! runs, and a last one at the end.

use std::io::Write;
use std::time::Instant;

use culprit_collect::live::{self, Consumer, Flow, LiveEnd, LiveOptions};
use culprit_decode::model::{Profile, Sample};

use super::{warn_now, write_block, Session, OFFENDERS_SHOWN, TICK};

/// Records with `opts`, writing a block to `out` every refresh interval and a last one
/// with everything recorded.
pub(super) fn run(
    session: &mut Session<'_>,
    opts: LiveOptions,
    out: Box<dyn Write>,
) -> anyhow::Result<LiveEnd> {
    let mut v = PlainView {
        out,
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

/// The plain view: the session, and where its blocks go.
struct PlainView<'s, 'a> {
    out: Box<dyn Write>,
    session: &'s mut Session<'a>,
    /// The last block.
    last: Instant,
    /// Why writing failed (other than a closed pipe).
    failed: Option<std::io::Error>,
}

impl PlainView<'_, '_> {
    fn block(&mut self, p: &Profile) -> std::io::Result<()> {
        let snap = self.session.snapshot(p, 0, OFFENDERS_SHOWN);
        let opts = self.session.opts;
        write_block(&mut *self.out, &snap, opts.format, &opts.text)
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
        if self.last.elapsed().as_secs_f64() >= self.session.opts.delay {
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
