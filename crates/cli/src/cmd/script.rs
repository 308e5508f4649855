//! `culprit script`: one line (text) or one JSON object per line (json) per sample, with its
//! call chain (perf script's layout), the decoded IBS registers (perf 6.1's labels and field
//! names) and precise memory fields; `-F` chooses the fields as `perf script -F` does.
//!
//! The JSON schema is documented in docs/script.md. Exit status: 0 on success; 1 when the
//! input is truncated or corrupt (what was read is still printed); 2 when nothing could be
//! read or an argument is wrong.

use std::process::ExitCode;

use culprit_analysis::listing::fields::FieldList;
use culprit_verbs::script::{ScriptFormat, ScriptOptions};

use crate::args::{Format, InputArgs, OutputArgs};

/// Arguments of `culprit script`.
#[derive(clap::Args, Debug)]
#[command(
    about = "One line (or JSON object) per sample, with call chains and decoded IBS/PEBS fields",
    after_help = crate::help::layout("EXAMPLES:\n  culprit script -i perf.data\n  culprit script -i perf.data -F comm,tid,time,event,ip,sym,dso\n  culprit script -i perf.data -F +addr,-dso\n  culprit script -i ibs.data --format json | jq 'select(.ibs.ibs_op_data3.DcMiss == 1)'\n\nWith call chains (record -g), each sample is followed by one line per frame and an empty\nline, as perf script prints them. -F takes perf script's field names (docs/script.md).\n\nIBS samples are decoded as perf 6.1 does (`perf report -D`): same labels, same fields, same\nconditions. Samples perf rejects (En or Val clear) carry \"ibs_error\" instead.")
)]
pub struct ScriptArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// `--format text|json` (JSON Lines: one object per sample; docs/script.md), `-o`,
    /// `--width` (text is cut only on a terminal or with --width N, never in a pipe, as
    /// perf script).
    #[command(flatten)]
    pub output: OutputArgs,
    /// perf script's field list, with its names: `comm,tid,time,event,ip,sym,dso,period,addr,…`
    /// prints those fields in perf's layout; `+field`/`-field` add to or remove from perf's
    /// default. Text only.
    #[arg(
        short = 'F',
        long = "fields",
        value_name = "FIELDS",
        allow_hyphen_values = true
    )]
    pub fields: Option<String>,
}

/// Runs `culprit script`.
pub fn run(args: ScriptArgs) -> anyhow::Result<ExitCode> {
    args.output
        .require("script", &[Format::Text, Format::Json])?;
    let fields = match &args.fields {
        Some(_) if args.output.format == Format::Json => {
            anyhow::bail!(
                "-F/--fields chooses text fields; --format json always has every field (docs/script.md)"
            )
        }
        Some(f) => Some(FieldList::parse(f).map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    let format = match args.output.format {
        Format::Json => ScriptFormat::Json,
        _ => ScriptFormat::Text {
            fields,
            // One line per sample, like perf script: cut to the width on a terminal or with
            // an explicit --width N; a pipe or file gets whole lines (scripts parse them).
            width: match args.output.width {
                Some(0) => None,
                Some(_) => args.output.text_options().width,
                None if args.output.is_tty() => args.output.text_options().width,
                None => None,
            },
        },
    };
    let input = args.input.open();
    let mut out = args.output.writer()?;
    culprit_verbs::script::script(&ScriptOptions { input, format }, &mut out)
}
