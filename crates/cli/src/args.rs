//! Argument groups shared by verbs (clap `#[command(flatten)]`), each with the method that
//! turns it into library options once.

use std::path::{Path, PathBuf};

use culprit_symbols::{KernelSymbols, ProfileInput, SymbolizerOptions};

/// The input of the verbs that read a perf.data file: `-i FILE` (`-` = stdin) and where the
/// symbols of what it recorded are found (perf's flags of the same names).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InputArgs {
    /// Input perf.data file (`-` reads a pipe-mode stream from stdin) [default: perf.data].
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
