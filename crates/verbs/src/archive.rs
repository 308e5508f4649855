//! `culprit archive` as a library call (perf archive's role): packs every build-id'd object
//! the recording's samples fall in (and its separate debug file) into a tar in perf's
//! build-id cache layout (`.build-id/xx/rest/elf`, `.build-id/xx/rest/debug`), so that the
//! recording can be reported on another machine: `tar xf perf.data.tar -C DIR` there, then
//! `culprit report -i perf.data --debug-dir DIR`.

use std::path::PathBuf;

use culprit_symbols::archive::sampled_dsos;
use culprit_symbols::{ProfileInput, ReadPlan};

/// Options of `culprit archive`.
#[derive(Debug, Clone)]
pub struct ArchiveOptions {
    /// The recording and where its symbols are found (a file: not stdin).
    pub input: ProfileInput,
    /// The tar to write (default: the input's path with `.tar` appended).
    pub output: Option<PathBuf>,
}

/// What was archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// The tar written.
    pub tar: PathBuf,
    /// The recording's path.
    pub input: PathBuf,
    /// Objects packed.
    pub objects: usize,
    /// Of them, those packed with their separate debug file.
    pub debug_files: usize,
    /// Warnings of reading the recording and finding its objects (objects not found are
    /// left out).
    pub warnings: Vec<String>,
}

impl Archived {
    /// The lines to show on stderr: the warnings, then what was written and how to use it
    /// elsewhere (the last line holds two lines).
    pub fn messages(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .warnings
            .iter()
            .map(|w| format!("culprit: warning: {w}"))
            .collect();
        lines.push(format!(
            "culprit: archived {} objects ({} with debug files) into {}\n\
             culprit: elsewhere: tar xf {} -C DIR; culprit report -i {} --debug-dir DIR",
            self.objects,
            self.debug_files,
            self.tar.display(),
            self.tar.display(),
            self.input.display()
        ));
        lines
    }
}

/// Reads the recording, finds the objects its samples fall in, and writes the tar. Errors:
/// stdin as the input, an input that cannot be read, a tar that cannot be written.
pub fn run(opts: ArchiveOptions) -> anyhow::Result<Archived> {
    let input = opts.input;
    anyhow::ensure!(
        !input.is_stdin(),
        "culprit archive reads a file (-i FILE), not stdin"
    );
    let out = opts.output.unwrap_or_else(|| {
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
    let warnings = profile
        .warnings
        .iter()
        .chain(symbolizer.warnings())
        .cloned()
        .collect();
    Ok(Archived {
        tar: out,
        input: input.path().to_path_buf(),
        objects: objects.len(),
        debug_files,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_messages_say_how_to_use_the_tar() {
        let a = Archived {
            tar: PathBuf::from("p.data.tar"),
            input: PathBuf::from("p.data"),
            objects: 3,
            debug_files: 1,
            warnings: vec!["no symbols for /x".to_string()],
        };
        assert_eq!(
            a.messages(),
            [
                "culprit: warning: no symbols for /x",
                "culprit: archived 3 objects (1 with debug files) into p.data.tar\n\
                 culprit: elsewhere: tar xf p.data.tar -C DIR; culprit report -i p.data --debug-dir DIR"
            ]
        );
    }
}
