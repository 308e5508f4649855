//! `culprit archive`: perf archive's role. Packs every build-id'd object the recording's
//! samples fall in (and its separate debug file) into a tar in perf's build-id cache layout
//! (`.build-id/xx/rest/elf`, `.build-id/xx/rest/debug`), so that the recording can be
//! reported on another machine: `tar xf perf.data.tar -C DIR` there, then
//! `culprit report -i perf.data --debug-dir DIR`.
//!
//! Exit status: 0 on success (objects that could not be found are warned about and left
//! out); 2 when the input cannot be read or the tar cannot be written.

use std::path::PathBuf;
use std::process::ExitCode;

use culprit_verbs::archive::{self, ArchiveOptions};

use crate::args::InputArgs;

#[derive(clap::Args, Debug)]
#[command(
    about = "Pack the objects a recording's samples need, by build-id, to report it elsewhere",
    after_help = crate::help::layout("EXAMPLES:\n  culprit archive -i perf.data                 writes perf.data.tar\n  tar xf perf.data.tar -C ~/culprit-cache      (on the other machine)\n  culprit report -i perf.data --debug-dir ~/culprit-cache\n\nThe tar holds each sampled ELF object with a build-id, and its separate debug file when one\nis found, in perf's build-id cache layout (.build-id/xx/rest/{elf,debug}): perf reads it\ntoo (unpacked as ~/.debug, or with perf's --buildid-dir).")
)]
pub struct ArchiveArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// The tar to write (default: the input's path with `.tar` appended).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `culprit archive`.
pub fn run(args: ArchiveArgs) -> anyhow::Result<ExitCode> {
    let archived = archive::run(ArchiveOptions {
        input: args.input.open(),
        output: args.output,
    })?;
    for line in archived.messages() {
        eprintln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
