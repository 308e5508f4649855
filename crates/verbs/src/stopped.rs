//! The one message for an input whose reading stopped early (a truncated or corrupt file):
//! every verb still reports what was read before the damage, says where and why reading
//! stopped, and exits 1.

use std::process::ExitCode;

use culprit_output::text::escape;

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
