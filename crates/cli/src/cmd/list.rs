//! `culprit list`: what this machine can measure (`culprit_collect::inventory`), as aligned
//! text or JSON (docs/schemas/list.schema.json).

use std::io::Write;
use std::process::ExitCode;

use culprit_collect::inventory;

use crate::args::{Format, OutputArgs};

/// Arguments of `culprit list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Only list events, aliases and event-table entries whose name contains FILTER
    /// (case-insensitive). Capabilities are always shown.
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
    /// Output format (text or json), file and colour.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit list`.
pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    args.output.require("list", &[Format::Text, Format::Json])?;
    let listing = inventory::collect(args.filter.as_deref());
    let mut out = args.output.writer()?;
    match args.output.format {
        Format::Json => culprit_output::json::write(&mut *out, &listing)?,
        // Notes are sentences: the renderer wraps them to the width, 80 columns into a
        // file or a pipe (as perf list; nothing there is a name that a cut would lose).
        _ => {
            let mut text = args.output.text_options();
            if args.output.width.is_none() && !args.output.is_tty() {
                text.width = Some(culprit_output::style::DEFAULT_WIDTH);
            }
            culprit_output::text::write(&mut *out, &inventory::document(&listing), &text)?
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
