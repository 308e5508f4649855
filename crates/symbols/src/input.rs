//! A perf.data input with the options of its symbols: what every reading verb opens. It reads
//! the file once through [`culprit_decode::Reader`] with the DWARF unwinder of these options
//! (its warnings end the profile's), and can load symbols while the records are read.

use std::path::{Path, PathBuf};

use culprit_decode::model::{Profile, Sample};
use culprit_decode::{Fold, ReadError, Reader};

use crate::unwind::DwarfUnwinder;
use crate::{Symbolizer, SymbolizerOptions};

/// A perf.data input (`-` is stdin) and where the symbols of what it recorded are found.
#[derive(Debug, Clone)]
pub struct ProfileInput {
    /// The file; `-` reads a stream from stdin.
    pub path: PathBuf,
    /// Where symbols (and the unwind tables of `--call-graph dwarf` files) are looked up.
    pub symbols: SymbolizerOptions,
}

/// How a verb reads its input.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadPlan {
    /// Unwind the sampled user stacks of `--call-graph dwarf` recordings (other files are
    /// untouched).
    pub unwind: bool,
    /// Decode no call chains ([`Reader::skip_callchains`]).
    pub skip_callchains: bool,
    /// Resolve no code locations ([`Reader::skip_locations`]).
    pub skip_locations: bool,
    /// [`ProfileInput::fold`]: read on every core (at most 4, or `CULPRIT_READ_THREADS`) when
    /// the input allows it; else on this thread.
    pub parallel: bool,
}

impl ProfileInput {
    /// The input at `path` (`-`: stdin) with these symbol options.
    pub fn new(path: impl Into<PathBuf>, symbols: SymbolizerOptions) -> ProfileInput {
        ProfileInput {
            path: path.into(),
            symbols,
        }
    }

    /// The path as given (`-` for stdin), for messages and headers.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the input is stdin.
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// A symbolizer with these options.
    pub fn symbolizer(&self) -> Symbolizer {
        Symbolizer::new(self.symbols.clone())
    }

    /// A reader of the input (for options this type does not set).
    pub fn reader<'a>(&self) -> Reader<'a> {
        Reader::open(&self.path)
    }

    /// Reads everything: the profile with its samples.
    pub fn read(&self, plan: &ReadPlan) -> Result<Profile, ReadError> {
        let mut unwinder = self.unwinder(plan);
        self.configure(self.reader(), plan, unwinder.as_mut())
            .collect()
    }

    /// Streams every sample to `on_sample` in delivery order (perf's time order, round by
    /// round; see [`Reader::fold`]), reporting `progress(bytes done, total)` for a file; the
    /// returned profile has no samples, and memory does not grow with the input.
    pub fn for_each(
        &self,
        plan: &ReadPlan,
        progress: impl FnMut(u64, u64) + Send,
        on_sample: impl FnMut(&Profile, &Sample),
    ) -> Result<Profile, ReadError> {
        let mut unwinder = self.unwinder(plan);
        self.configure(self.reader(), plan, unwinder.as_mut())
            .progress(progress)
            .fold(on_sample)
    }

    /// Folds every sample into `fold` (on several threads with [`ReadPlan::parallel`], see
    /// [`Reader::fold_parallel`]), reporting `progress(bytes done, total)`. With a
    /// `symbolizer`, the symbols it will need are loaded meanwhile (on the second reading
    /// thread before its share, or a thread of its own): the kernel's, and those of the ELF
    /// files the header lists as sampled.
    pub fn fold<F: Fold>(
        &self,
        plan: &ReadPlan,
        symbolizer: Option<&mut Symbolizer>,
        fold: F,
        progress: impl FnMut(u64, u64) + Send,
    ) -> Result<(Profile, F), ReadError> {
        let mut unwinder = self.unwinder(plan);
        let mut reader = self
            .configure(self.reader(), plan, unwinder.as_mut())
            .progress(progress);
        if !plan.parallel {
            reader = reader.threads(1);
        }
        if let Some(symbolizer) = symbolizer {
            // An unreadable header is reported by the read itself.
            let sampled = reader.sampled_elf_build_ids();
            reader = reader.side_work(move || {
                symbolizer.load_kernel_symbols();
                for (path, build_id) in &sampled {
                    symbolizer.preload_elf(path, Some(build_id));
                }
            });
        }
        reader.fold_parallel(fold)
    }

    fn unwinder(&self, plan: &ReadPlan) -> Option<DwarfUnwinder> {
        (plan.unwind && !plan.skip_callchains).then(|| DwarfUnwinder::new(&self.symbols))
    }

    fn configure<'a>(
        &self,
        reader: Reader<'a>,
        plan: &ReadPlan,
        unwinder: Option<&'a mut DwarfUnwinder>,
    ) -> Reader<'a> {
        let reader = reader
            .skip_callchains(plan.skip_callchains)
            .skip_locations(plan.skip_locations);
        match unwinder {
            Some(u) => reader.unwinder(u),
            None => reader,
        }
    }
}
