//! Argument groups shared by the verbs (flattened with `#[command(flatten)]`), parsed and
//! validated once.
// Verbs adopt these groups one by one (issue 18); the allow goes when all have.
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use culprit_output::{ColorChoice, TextOptions};

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Text,
    /// JSON (schema in docs/schemas/; carries `schema`).
    Json,
    /// CSV (one row per table row).
    Csv,
}

impl Format {
    /// The flag value (`text`, `json`, `csv`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorArg {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `--format`, `-o/--output`, `--color` and `--width` of the report verbs.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format: text, json or csv (not every verb has csv).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Colour the hottest rows of text output: auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Fit text lines to N columns (0: never cut). Default: the terminal's width, else
    /// $COLUMNS, else 80; long names are cut with '…' (JSON and CSV keep them whole).
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,
}

impl OutputArgs {
    /// Refuses a format the verb does not have, saying which it has.
    pub fn require(&self, verb: &str, formats: &[Format]) -> anyhow::Result<()> {
        if formats.contains(&self.format) {
            return Ok(());
        }
        let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
        anyhow::bail!(
            "{verb} has no --format {} (it writes {})",
            self.format.name(),
            names.join(", ")
        )
    }

    /// Where the report goes: the `-o` file (created) or stdout, buffered.
    pub fn writer(&self) -> anyhow::Result<Box<dyn Write>> {
        Ok(match &self.output {
            Some(p) => Box::new(BufWriter::new(
                File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
            )),
            None => Box::new(BufWriter::new(std::io::stdout())),
        })
    }

    /// Whether the report goes to a terminal.
    pub fn is_tty(&self) -> bool {
        self.output.is_none() && std::io::stdout().is_terminal()
    }

    /// Colour and width of text output.
    pub fn text_options(&self) -> TextOptions {
        let color = match self.color {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        };
        TextOptions::detect(color, self.width, self.is_tty())
    }
}
