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

use culprit_symbols::archive::sampled_dsos;
use culprit_symbols::ReadPlan;

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

pub fn run(args: ArchiveArgs) -> anyhow::Result<ExitCode> {
    let input = args.input.open();
    anyhow::ensure!(
        !input.is_stdin(),
        "culprit archive reads a file (-i FILE), not stdin"
    );
    let out = args.output.clone().unwrap_or_else(|| {
        let mut p = input.path().as_os_str().to_owned();
        p.push(".tar");
        PathBuf::from(p)
    });
    let profile = input.read(&ReadPlan::default())?;
    let mut symbolizer = input.symbolizer();
    let objects = symbolizer.archive_objects(&profile, &sampled_dsos(&profile));
    let file = std::fs::File::create(&out)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    // The files themselves, not links into the machine's tree.
    tar.follow_symlinks(true);
    let mut debug_files = 0;
    for o in &objects {
        let dir = o.cache_dir();
        tar.append_path_with_name(&o.elf, dir.join("elf"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", o.elf.display()))?;
        if let Some(d) = &o.debug {
            tar.append_path_with_name(d, dir.join("debug"))
                .map_err(|e| anyhow::anyhow!("{}: {e}", d.display()))?;
            debug_files += 1;
        }
    }
    tar.into_inner()
        .and_then(|mut w| std::io::Write::flush(&mut w))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    for w in profile.warnings.iter().chain(symbolizer.warnings()) {
        eprintln!("culprit: warning: {w}");
    }
    eprintln!(
        "culprit: archived {} objects ({debug_files} with debug files) into {}\n\
         culprit: elsewhere: tar xf {} -C DIR; culprit report -i {} --debug-dir DIR",
        objects.len(),
        out.display(),
        out.display(),
        input.path().display()
    );
    Ok(ExitCode::SUCCESS)
}
