//! One module per verb; each has an `XxxArgs` (clap) and `run(args) -> Result<ExitCode>`.

pub mod annotate;
pub mod demo;
pub mod ibs;
pub mod list;
pub mod record;
pub mod report;
pub mod report_branch;
pub mod report_offenders;
pub mod script;
pub mod stat;
pub mod top;
pub mod trace;

use std::path::PathBuf;

use culprit_symbols::{KernelSymbols, SymbolizerOptions};

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
