//! `culprit demo` as a library call: builds the shipped example workload (examples/matmul.c,
//! embedded in the binary), records it with several events and prints the report.
//!
//! It runs `culprit record` and `culprit report` as child processes of the culprit executable
//! it is given, exactly as a user would type them, so the demo exercises the real commands.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

/// The example workload's source, shipped inside the binary so the demo works anywhere.
const MATMUL_C: &str = include_str!("../../../examples/matmul.c");

/// Options of `culprit demo`.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The culprit executable whose `record` and `report` the demo runs.
    pub exe: PathBuf,
    /// Directory for the example's binary and perf.data (default: a fresh temporary
    /// directory).
    pub dir: Option<PathBuf>,
    /// Matrix size N of the example (its run time grows as N³); at least 1.
    pub size: u32,
    /// Events to record (default: cycles,instructions,cache-misses where the hardware PMU
    /// works, else cpu-clock,page-faults).
    pub events: Option<String>,
}

/// Runs the demo: compiles the example with `$CC` (default `cc`), then shows and runs
/// `culprit record` and `culprit report` on it (their output goes to the terminal).
pub fn run(opts: DemoOptions) -> anyhow::Result<ExitCode> {
    if opts.size == 0 {
        bail!("--size 0: the matrix size N must be at least 1 (the example multiplies N×N matrices; default 512)");
    }
    let dir = match opts.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("culprit-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let source = dir.join("matmul.c");
    let binary = dir.join("matmul");
    let data = dir.join("perf.data");
    std::fs::write(&source, MATMUL_C).with_context(|| format!("writing {}", source.display()))?;

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    eprintln!(
        "culprit demo: building {} with {cc} -O1 -g",
        source.display()
    );
    let status = Command::new(&cc)
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .with_context(|| format!("running the C compiler `{cc}` (install gcc, or set CC)"))?;
    if !status.success() {
        bail!("compiling {} failed ({status})", source.display());
    }

    let events = opts.events.unwrap_or_else(|| {
        if culprit_collect::support::hardware_pmu_available() {
            "cycles,instructions,cache-misses".to_string()
        } else {
            eprintln!(
                "culprit demo: no usable hardware PMU on this machine (a VM without a virtual \
                 PMU?): recording software events instead"
            );
            "cpu-clock,page-faults".to_string()
        }
    });
    let size = opts.size.to_string();
    let data_arg = data.display().to_string();
    let binary_arg = binary.display().to_string();
    run_shown(
        &opts.exe,
        &[
            "record",
            "-e",
            &events,
            "-g",
            "-o",
            &data_arg,
            "--",
            &binary_arg,
            &size,
        ],
    )?;
    run_shown(
        &opts.exe,
        &[
            "report",
            "-i",
            &data_arg,
            "--sort",
            "comm,dso,sym",
            "--no-children",
            "--top",
            "15",
        ],
    )?;
    eprintln!(
        "\nculprit demo: the file is {}; try `culprit report -i {} --sort srcline` or `perf report -i {}`",
        data.display(),
        data.display(),
        data.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints `$ culprit ARGS` on stdout, right above the output it shows (the exact command, so
/// it can be typed again), then runs it.
fn run_shown(me: &Path, args: &[&str]) -> anyhow::Result<()> {
    use std::io::Write;
    let shown: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
    println!("$ culprit {}", shown.join(" "));
    std::io::stdout().flush()?;
    let status = Command::new(me)
        .args(args)
        .status()
        .with_context(|| format!("running culprit {}", args[0]))?;
    if !status.success() {
        bail!("culprit {} failed ({status})", args[0]);
    }
    Ok(())
}

/// `word` quoted for a POSIX shell when it holds anything but plain characters.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./,:=+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_shell_words_quoted_only_when_needed() {
        assert_eq!(shell_word("comm,dso,sym"), "comm,dso,sym");
        assert_eq!(shell_word("/tmp/a b/perf.data"), "'/tmp/a b/perf.data'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn test_size_zero_is_refused_before_any_work() {
        let e = run(DemoOptions {
            exe: PathBuf::from("/nonexistent/culprit"),
            dir: Some(PathBuf::from("/nonexistent/demo")),
            size: 0,
            events: None,
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("--size 0:"), "{e}");
    }
}
