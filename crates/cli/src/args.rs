//! Argument groups shared by the verbs (flattened with `#[command(flatten)]`), parsed and
//! validated once.
// Verbs adopt these groups one by one (issue 18); the allow goes when all have.
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::ValueEnum;
use culprit_output::{ColorChoice, TextOptions};
use culprit_symbols::{KernelSymbols, ProfileInput, SymbolizerOptions};

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

impl ColorArg {
    /// The output crate's colour choice.
    pub fn choice(self) -> ColorChoice {
        match self {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        }
    }
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
    /// Fit text lines to N columns (0: never cut), cutting long names with '…'. Default: on
    /// a terminal its width (else $COLUMNS, else 80); into a file or a pipe, never cut.
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,
    /// Do not page text on a terminal (default pager: $CULPRIT_PAGER, else $PAGER, else
    /// `less` with LESS=FRX).
    #[arg(long)]
    pub no_pager: bool,
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

    /// Writes `report` in the chosen format, to the chosen place: the one render function of
    /// every report that implements the render contract ([`culprit_output::Render`]).
    pub fn render(&self, report: &dyn culprit_output::Render) -> anyhow::Result<()> {
        let mut out = self.writer()?;
        match self.format {
            Format::Json => report.write_json(&mut out)?,
            Format::Csv => {
                for t in report.csv_tables() {
                    culprit_output::csv::write(&mut out, &t)?;
                }
            }
            Format::Text => {
                culprit_output::text::write(&mut out, &report.document(), &self.text_options())?
            }
        }
        out.flush()?;
        Ok(())
    }

    /// Where the report goes: the `-o` file (created), the pager (text on a terminal, as
    /// perf; see `pager.rs`), or stdout, buffered.
    pub fn writer(&self) -> anyhow::Result<Box<dyn Write>> {
        if self.output.is_none()
            && !self.no_pager
            && self.format == Format::Text
            && std::io::stdout().is_terminal()
        {
            if let Some(pager) = crate::pager::Pager::start() {
                return Ok(Box::new(pager));
            }
        }
        self.unpaged_writer()
    }

    /// [`OutputArgs::writer`] without the pager: for output that streams while the user
    /// watches (top, a live trace).
    pub fn unpaged_writer(&self) -> anyhow::Result<Box<dyn Write>> {
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
        TextOptions::detect(self.color.choice(), self.width, self.is_tty())
    }
}

/// What the offender detector's `--t1`/`--t2` count (`--offenders-unit` of top and
/// `report --offenders`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OffendersUnit {
    /// Samples (each sample adds 1).
    Samples,
    /// Events (each sample adds its period).
    Events,
}

impl From<OffendersUnit> for culprit_analysis::offenders::Unit {
    fn from(u: OffendersUnit) -> Self {
        match u {
            OffendersUnit::Samples => culprit_analysis::offenders::Unit::Samples,
            OffendersUnit::Events => culprit_analysis::offenders::Unit::Events,
        }
    }
}

/// What to measure: `-p PID…`, `-a`, `-C CPUS` and `-- COMMAND…`, shared by record, stat,
/// top and trace (live), parsed and validated once.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TargetArgs {
    /// Attach to these running processes (comma-separated), until they exit or Ctrl-C.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID…]",
        conflicts_with = "all_cpus"
    )]
    pub pid: Option<String>,
    /// System-wide: every CPU, every task (with a command: until it exits; without: until
    /// Ctrl-C).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Only these CPUs (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<String>,
    /// The command to run and its arguments (put `--` before it).
    // No allow_hyphen_values: it would take attached short options (`-x,`, `-F999`) for
    // the command; after the command's first word everything is the command's anyway.
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    pub command: Vec<String>,
}

/// A parsed [`TargetArgs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetChoice {
    /// Whom to measure.
    pub target: culprit_collect::record::Target,
    /// `-C`: only these CPUs.
    pub cpus: Option<Vec<u32>>,
}

impl TargetArgs {
    /// The target. Without `-p`, `-a` or a command: system-wide when `default_system`
    /// (perf top), else an error naming `verb`'s usage.
    pub fn choice(&self, verb: &str, default_system: bool) -> anyhow::Result<TargetChoice> {
        use culprit_collect::record::Target;
        let command = || (!self.command.is_empty()).then(|| self.command.clone());
        let target = if let Some(p) = &self.pid {
            if !self.command.is_empty() {
                anyhow::bail!(
                    "-p attaches to running processes: give no command (got `{}`)",
                    self.command.join(" ")
                );
            }
            Target::Pids(parse_pids(p)?)
        } else if self.all_cpus || (default_system && self.command.is_empty()) {
            Target::System(command())
        } else if let Some(c) = command() {
            Target::Command(c)
        } else {
            anyhow::bail!(
                "nothing to {verb}: give a command (`culprit {verb} -- ./prog`), -p PID or -a"
            );
        };
        let cpus = match &self.cpu {
            Some(s) => Some(
                culprit_collect::procfs::parse_cpu_list(s)
                    .with_context(|| format!("-C: `{s}` is not a CPU list (e.g. 0-3,8)"))?,
            ),
            None => None,
        };
        Ok(TargetChoice { target, cpus })
    }

    /// Whether any target flag or a command was given.
    pub fn is_given(&self) -> bool {
        self.pid.is_some() || self.all_cpus || self.cpu.is_some() || !self.command.is_empty()
    }
}

/// `-p 12,34`: positive process ids.
fn parse_pids(s: &str) -> anyhow::Result<Vec<i32>> {
    let v = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|&n| n > 0)
                .with_context(|| format!("-p: `{p}` is not a process id"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!v.is_empty(), "-p: no process id given");
    Ok(v)
}

/// The input of the verbs that read a perf.data file: `-i FILE` (`-` = stdin) and where the
/// symbols of what it recorded are found (perf's flags of the same names).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InputArgs {
    /// Input perf.data file (`-` reads a pipe-mode stream from stdin); default perf.data
    /// (trace: without it, trace live).
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The recorded kernel's symbols (`--kallsyms FILE`, `--vmlinux FILE`).
    #[command(flatten)]
    pub kernel: KernelSymbolArgs,
    /// Look every recorded file up under DIR first (DIR/usr/lib/libc.so.6 for
    /// /usr/lib/libc.so.6), then where it was recorded: the files of another machine.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache (copies of recorded files by build-id) is DIR instead of
    /// ~/.debug.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dir: Option<PathBuf>,
    /// Never ask the debuginfod servers of $DEBUGINFOD_URLS for the debug files of
    /// recorded files without symbols (asked by default when it is set; cached in
    /// $DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client).
    #[arg(long = "no-debuginfod")]
    pub no_debuginfod: bool,
}

impl InputArgs {
    /// The input file as given (`perf.data` by default, `-` for stdin).
    pub fn path(&self) -> &Path {
        self.input.as_deref().unwrap_or(Path::new("perf.data"))
    }

    /// Symbolizer options for these flags.
    pub fn symbolizer_options(&self) -> SymbolizerOptions {
        let mut opts = self.kernel.options();
        opts.symfs = self.symfs.clone();
        if self.no_debuginfod {
            opts.debuginfod = None;
        }
        // JIT dumps copied along with the recording (`-` reads stdin: no directory).
        if self.path() != Path::new("-") {
            let dir = self.path().parent().unwrap_or(Path::new(""));
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            opts.jitdump_dirs.push(dir.to_path_buf());
        }
        if let Some(dir) = &self.debug_dir {
            opts.buildid_cache = Some(dir.clone());
        }
        opts
    }

    /// The input to read, with its symbol options.
    pub fn open(&self) -> ProfileInput {
        ProfileInput::new(self.path(), self.symbolizer_options())
    }
}

/// The inputs of the verbs that read several perf.data files at once (`-i a.data -i b.data`,
/// e.g. `export --format parquet`): the flags of [`InputArgs`] with `-i` repeatable.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MultiInputArgs {
    /// Input perf.data file (`-` reads a pipe-mode stream from stdin); default perf.data.
    /// Repeat for several files (formats and verbs that take several say so).
    #[arg(short = 'i', long = "input", value_name = "FILE", action = clap::ArgAction::Append)]
    pub inputs: Vec<PathBuf>,
    /// The recorded kernel's symbols (`--kallsyms FILE`, `--vmlinux FILE`).
    #[command(flatten)]
    pub kernel: KernelSymbolArgs,
    /// Look every recorded file up under DIR first (DIR/usr/lib/libc.so.6 for
    /// /usr/lib/libc.so.6), then where it was recorded: the files of another machine.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache (copies of recorded files by build-id) is DIR instead of
    /// ~/.debug.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dir: Option<PathBuf>,
    /// Never ask the debuginfod servers of $DEBUGINFOD_URLS for the debug files of
    /// recorded files without symbols (asked by default when it is set; cached in
    /// $DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client).
    #[arg(long = "no-debuginfod")]
    pub no_debuginfod: bool,
}

impl MultiInputArgs {
    /// The input paths as given (`perf.data` when none is).
    pub fn paths(&self) -> Vec<PathBuf> {
        if self.inputs.is_empty() {
            vec![PathBuf::from("perf.data")]
        } else {
            self.inputs.clone()
        }
    }

    /// The [`InputArgs`] of input `path` with these symbol flags.
    pub fn single(&self, path: &Path) -> InputArgs {
        InputArgs {
            input: Some(path.to_path_buf()),
            kernel: self.kernel.clone(),
            symfs: self.symfs.clone(),
            debug_dir: self.debug_dir.clone(),
            no_debuginfod: self.no_debuginfod,
        }
    }

    /// The inputs to read, with their symbol options, in the order given.
    pub fn open(&self) -> Vec<ProfileInput> {
        self.paths().iter().map(|p| self.single(p).open()).collect()
    }
}

/// `--kallsyms FILE` and `--vmlinux FILE` of the verbs that read a perf.data file (perf's
/// flags of the same names): the recorded kernel's symbols, when this machine's kernel is
/// not the recorded one.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KernelSymbolArgs {
    /// Name kernel addresses with this kallsyms file (a copy of the recorded kernel's
    /// /proc/kallsyms). Without it or --vmlinux, kernel addresses are named only when the
    /// file shows it was recorded on this machine's kernel (same build-id; without a
    /// recorded build-id, same release) or perf's cache (~/.debug) has the recorded kernel's
    /// kallsyms; else they stay unnamed, with a warning saying why.
    #[arg(long = "kallsyms", value_name = "FILE", conflicts_with = "vmlinux")]
    pub kallsyms: Option<PathBuf>,
    /// Name kernel addresses with the symbols of this kernel ELF image (the recorded
    /// kernel's vmlinux, with its symbol table), at the addresses it was linked at.
    #[arg(long = "vmlinux", value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
}

impl KernelSymbolArgs {
    /// Symbolizer options for reading a recorded file with these flags.
    pub fn options(&self) -> SymbolizerOptions {
        let kernel_symbols = match (&self.kallsyms, &self.vmlinux) {
            (Some(k), _) => KernelSymbols::Kallsyms(k.clone()),
            (None, Some(v)) => KernelSymbols::Vmlinux(v.clone()),
            (None, None) => KernelSymbols::Recorded,
        };
        SymbolizerOptions {
            kernel_symbols,
            ..SymbolizerOptions::default()
        }
    }
}

/// The sampling rate of `-c PERIOD` or `-F HZ` (`None`: neither, the verb's default).
pub fn sample_rate(
    count: Option<u64>,
    freq: Option<u64>,
) -> anyhow::Result<Option<culprit_collect::events::SampleRate>> {
    use culprit_collect::events::SampleRate;
    Ok(match (count, freq) {
        (Some(0), _) => anyhow::bail!("-c: the period must be > 0"),
        (_, Some(0)) => anyhow::bail!("-F: the frequency must be > 0"),
        (Some(c), _) => Some(SampleRate::Period(c)),
        (None, Some(f)) => Some(SampleRate::Frequency(f)),
        (None, None) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use culprit_collect::record::Target;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        target: TargetArgs,
    }

    fn choice(args: &[&str], default_system: bool) -> anyhow::Result<TargetChoice> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        t.target.choice("record", default_system)
    }

    #[test]
    fn test_target_choice() {
        assert_eq!(
            choice(&["--", "ls", "-l"], false).unwrap().target,
            Target::Command(vec!["ls".into(), "-l".into()])
        );
        assert_eq!(
            choice(&["-p", "12,34"], false).unwrap().target,
            Target::Pids(vec![12, 34])
        );
        assert_eq!(choice(&["-a"], false).unwrap().target, Target::System(None));
        assert_eq!(choice(&[], true).unwrap().target, Target::System(None));
        assert!(choice(&[], false)
            .unwrap_err()
            .to_string()
            .contains("nothing to record"));
        assert!(choice(&["-p", "x"], false).is_err());
        assert!(choice(&["-p", "1", "--", "ls"], false).is_err());
        // Attached short values are options, not the command; the command's own flags
        // are its own.
        assert!(choice(&["-C0", "--", "ls"], false).unwrap().cpus == Some(vec![0]));
        assert_eq!(
            choice(&["sleep", "-a", "1"], false).unwrap().target,
            Target::Command(vec!["sleep".into(), "-a".into(), "1".into()])
        );
        assert_eq!(
            choice(&["-a", "-C", "0-1"], false).unwrap().cpus,
            Some(vec![0, 1])
        );
    }
}
