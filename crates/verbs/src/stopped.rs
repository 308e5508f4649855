//! The one message for an input whose reading stopped early (a truncated or corrupt file):
//! every verb still reports what was read before the damage, says where and why reading
//! stopped, and exits 1.

use std::process::ExitCode;

use culprit_decode::model::Profile;
use culprit_output::text::escape;
use culprit_symbols::ProfileInput;

/// Prints `culprit: error: PATH: reading stopped at byte offset … after N records: REASON;
/// OUTCOME` on stderr (`description` is the stop's `describe()`; the path and description
/// are escaped) and gives the exit status 1.
pub fn report(path: &str, description: &str, outcome: &str) -> ExitCode {
    eprintln!(
        "culprit: error: {}: {}; {outcome}",
        escape(path),
        escape(description)
    );
    ExitCode::from(1)
}

/// A report of one input, with how its reading ended: what `ibs`, `sched` and `lock`
/// return, rendered through `culprit_output::Render`, then [`ReadReport::exit_status`].
#[derive(Debug, Clone)]
pub struct ReadReport<R> {
    /// The report.
    pub report: R,
    /// The input as named (`-` for stdin).
    pub input: String,
    /// Why reading stopped early (a truncated or corrupt file), when it did.
    pub stopped: Option<String>,
}

impl<R> ReadReport<R> {
    /// `report` of `input`, read into `profile`.
    pub fn new(report: R, input: &ProfileInput, profile: &Profile) -> ReadReport<R> {
        ReadReport {
            report,
            input: input.path().display().to_string(),
            stopped: profile.stopped.as_ref().map(|s| s.describe()),
        }
    }

    /// The exit status once the report is written: 0, or 1 after saying where and why the
    /// reading stopped (the report covers what was read before it).
    pub fn exit_status(&self) -> ExitCode {
        match &self.stopped {
            Some(why) => report(
                &self.input,
                why,
                "the report covers what was read before it",
            ),
            None => ExitCode::SUCCESS,
        }
    }
}

/// `impl culprit_output::Render for $t` by rendering `$view`, a value made from `self`
/// (`render_via!(T, |r| r.view())`): the document, the CSV tables and the JSON are the
/// view's.
macro_rules! render_via {
    ($t:ty, |$s:ident| $view:expr) => {
        impl culprit_output::Render for $t {
            fn document(&self) -> culprit_output::Document {
                let $s = self;
                $view.document()
            }

            fn csv_tables(&self) -> Vec<culprit_output::Table> {
                let $s = self;
                $view.csv_tables()
            }

            fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
                let $s = self;
                $view.write_json(out)
            }
        }
    };
}
pub(crate) use render_via;
