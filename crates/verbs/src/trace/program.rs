//! A trace program's text (`-e` or a file) and its compilation, typed with the tracepoint
//! formats of its `tracepoint:` probes: the recording's own, or this machine's (tracefs,
//! through `culprit_collect`: culprit-trace opens nothing).

use std::path::Path;

use anyhow::{bail, Context};
use culprit_collect::tracefs::Tracefs;
use culprit_decode::tracepoint::TracepointFormat;
use culprit_symbols::ProfileInput;
use culprit_trace::session;
use culprit_trace::{Options, Program};

use super::ProgramSource;

/// The largest trace program file read: far beyond any program, and small enough that
/// `-s /dev/zero` fails at once instead of filling memory.
const MAX_PROGRAM_BYTES: u64 = 16 << 20;

/// Reads a trace program file, refusing one larger than [`MAX_PROGRAM_BYTES`] (a device
/// or FIFO is read only that far).
fn read_program(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let what = || format!("cannot read {}", path.display());
    let file = std::fs::File::open(path).with_context(what)?;
    let mut bytes = Vec::new();
    file.take(MAX_PROGRAM_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    anyhow::ensure!(
        bytes.len() as u64 <= MAX_PROGRAM_BYTES,
        "{}: a trace program of more than {} MiB; not read",
        path.display(),
        MAX_PROGRAM_BYTES >> 20
    );
    // As read_to_string says it.
    String::from_utf8(bytes)
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
        .with_context(what)
}

/// The program's text and its name in messages (`<program>`, or the file's path).
pub(super) fn source(program: &ProgramSource) -> anyhow::Result<(String, String)> {
    Ok(match program {
        ProgramSource::Text(p) => (p.clone(), "<program>".to_string()),
        ProgramSource::File(f) => (read_program(f)?, f.display().to_string()),
    })
}

/// The tracepoint formats the program `source` is typed with: a recording's own when
/// `input` is a perf.data file, else this machine's (tracefs) for each tracepoint probe
/// (`session::tracepoint_formats`).
fn tracepoint_formats(source: &str, input: Option<&ProfileInput>) -> Vec<TracepointFormat> {
    // Tracefs is looked for only when a probe needs this machine's formats.
    let mut tracefs: Option<Option<Tracefs>> = None;
    let mut machine_formats = |pattern: &str| -> Vec<TracepointFormat> {
        tracefs
            .get_or_insert_with(Tracefs::system)
            .as_ref()
            .and_then(|t| t.formats(&[pattern.to_string()]).ok())
            .unwrap_or_default()
    };
    session::tracepoint_formats(source, input, &mut machine_formats)
}

/// Compiles `src` (named `name` in its errors) with the limits of `options`, typed with
/// the tracepoint formats of `input` (the recording read; `None` live).
pub(super) fn compile(
    src: &str,
    name: &str,
    mut options: Options,
    input: Option<&ProfileInput>,
) -> anyhow::Result<Program> {
    options.tracepoints = tracepoint_formats(src, input);
    match culprit_trace::compile(src, &options) {
        Ok(p) => Ok(p),
        Err(e) => bail!("{name}:{e}"),
    }
}
