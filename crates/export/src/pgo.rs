//! The PGO exports (`culprit export --format bolt|autofdo`): the branch data of a file
//! ([`culprit_analysis::pgo`]) for one binary, in BOLT's pre-aggregated format
//! ([`crate::bolt`]) or as an AutoFDO text sample profile ([`crate::autofdo`]).
//!
//! Both formats describe one binary. `dso` names it (short name or path); by default it is
//! the ELF file whose code the most taken branches leave or enter.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;

use culprit_analysis::pgo::{BranchSource, PgoAggregator, PgoOptions, PgoProfile, PgoStats};
use culprit_analysis::{AnalysisError, Filters};
use culprit_decode::model::{DsoId, DsoKind, Profile};
use culprit_decode::ReadError;
use culprit_symbols::{ProfileInput, ReadPlan, Symbolizer};

use crate::{Counting, EventSummary, ExportError, ExportOptions, ExportSummary};

/// The PGO formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgoFormat {
    /// BOLT's pre-aggregated profile (`perf2bolt -pa`).
    Bolt,
    /// AutoFDO / LLVM sample profile, text form.
    Autofdo,
}

impl PgoFormat {
    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PgoFormat::Bolt => "bolt",
            PgoFormat::Autofdo => "autofdo",
        }
    }
}

/// What a PGO export reads and for which binary.
#[derive(Debug, Clone)]
pub struct PgoExportOptions {
    /// The format.
    pub format: PgoFormat,
    /// Only these events (empty: all).
    pub events: Vec<String>,
    /// Only these processes, threads, commands.
    pub filters: Filters,
    /// The binary, by short name or path; `None`: the ELF file with the most taken branches.
    pub dso: Option<String>,
}

/// Why a PGO export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgoError {
    /// The input could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The samples hold no branch data (the message says what to record).
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// No binary fits (the message says why).
    #[error("{0}")]
    Unsupported(String),
}

/// What a PGO export wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PgoSummary {
    /// `bolt` or `autofdo` (the export summary says it).
    #[serde(skip)]
    pub format: String,
    /// The binary's path as recorded.
    pub dso: String,
    /// Its build-id (hex), if recorded.
    pub build_id: Option<String>,
    /// `svma` (the addresses the ELF file states, what BOLT wants) or `file_offset` (the
    /// binary could not be read: offsets in the file instead).
    pub addresses: String,
    /// `lbr`, `ibs` or `lbr+ibs`.
    pub source: String,
    /// Lines (bolt) or functions (autofdo) written (the export summary's `records`).
    #[serde(skip)]
    pub records: u64,
    /// Taken branches written (sum of counts: bolt `B` lines, autofdo call targets and
    /// head samples).
    pub branches: u64,
    /// Straight-line ranges written (sum of counts of bolt `F` lines).
    pub ranges: u64,
    /// Taken branches of the samples that neither leave nor enter the binary's code, or
    /// enter it from the kernel (interrupts), left out.
    pub other_branches: u64,
    /// Branch-stack entries read.
    pub lbr_entries: u64,
    /// IBS op samples read.
    pub ibs_ops: u64,
    /// Samples read (after filters; the export summary's `samples`).
    #[serde(skip)]
    pub samples: u64,
    /// Problems met (missing binary or debug info, …; the export summary's `warnings`).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The binary an export is for.
pub(crate) struct Target {
    pub dso: DsoId,
}

/// Reads `input`'s branch data and writes it for one binary in `opts.format`; returns the
/// profile read (for its warnings and where reading stopped) and what was written.
pub fn export_pgo(
    input: &ProfileInput,
    opts: &PgoExportOptions,
    out: &mut dyn Write,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<(Profile, PgoSummary), PgoError> {
    let mut agg = PgoAggregator::new(&PgoOptions {
        events: opts.events.clone(),
        filters: opts.filters.clone(),
    });
    let plan = ReadPlan {
        skip_callchains: true,
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, progress, |p, s| agg.add(p, s))?;
    if !opts.events.is_empty() {
        culprit_decode::model::select_events(&profile, &opts.events)
            .map_err(AnalysisError::from)?;
    }
    let pgo = agg.finish(&profile)?;
    let mut symbolizer = input.symbolizer();
    let summary = write_pgo(&profile, &pgo, &mut symbolizer, opts, out)?;
    Ok((profile, summary))
}

/// [`export_pgo`] for [`crate::export`]: options from [`ExportOptions`], the summary of
/// every export.
pub(crate) fn export_summary(
    input: &ProfileInput,
    opts: &ExportOptions,
    format: PgoFormat,
    out: &mut dyn Write,
    progress: impl FnMut(u64, u64) + Send,
) -> Result<ExportSummary, ExportError> {
    let mut out = Counting {
        inner: out,
        bytes: 0,
    };
    let pgo_opts = PgoExportOptions {
        format,
        events: opts.stacks.events.clone(),
        filters: opts.stacks.filters.clone(),
        dso: opts.dso.clone(),
    };
    let (profile, mut summary) = export_pgo(input, &pgo_opts, &mut out, progress)?;
    out.flush()?;
    let events: Vec<EventSummary> = profile
        .events
        .iter()
        .filter(|e| e.samples > 0)
        .map(|e| EventSummary {
            name: e.name.clone(),
            samples: e.samples,
            period: e.period,
        })
        .collect();
    let exported_events = profile
        .events
        .iter()
        .filter(|e| {
            e.samples > 0
                && (pgo_opts.events.is_empty() || pgo_opts.events.iter().any(|w| e.matches(w)))
        })
        .map(|e| e.name.clone())
        .collect();
    let mut warnings = profile.warnings.clone();
    warnings.append(&mut summary.warnings);
    Ok(ExportSummary {
        schema: 1,
        format: format.name().to_string(),
        input: input.path().display().to_string(),
        events,
        exported_events,
        samples: summary.samples,
        stacks: 0,
        records: summary.records,
        bytes: out.bytes,
        lost: profile.lost,
        warnings,
        stopped: profile.stopped.clone(),
        pgo: Some(summary),
        parquet: None,
    })
}

/// Writes an aggregated branch profile in `opts.format` (see [`export_pgo`]).
pub fn write_pgo(
    profile: &Profile,
    pgo: &PgoProfile,
    symbolizer: &mut Symbolizer,
    opts: &PgoExportOptions,
    out: &mut dyn Write,
) -> Result<PgoSummary, PgoError> {
    let target = pick_binary(profile, pgo, opts.dso.as_deref(), opts.format)?;
    let dso = &profile.dsos[target.dso as usize];
    let mut summary = PgoSummary {
        format: opts.format.name().to_string(),
        dso: dso.path.clone(),
        build_id: dso.build_id.as_deref().map(hex),
        source: match pgo.source {
            BranchSource::Lbr => "lbr",
            BranchSource::Ibs => "ibs",
            BranchSource::Both => "lbr+ibs",
            BranchSource::None => "none",
        }
        .to_string(),
        lbr_entries: pgo.stats.lbr_entries,
        ibs_ops: pgo.stats.ibs_ops,
        samples: pgo.stats.samples,
        ..PgoSummary::default()
    };
    match opts.format {
        PgoFormat::Bolt => {
            crate::bolt::write(profile, pgo, symbolizer, &target, out, &mut summary)?
        }
        PgoFormat::Autofdo => {
            crate::autofdo::write(profile, pgo, symbolizer, &target, out, &mut summary)?
        }
    }
    note_stats(&pgo.stats, &mut summary.warnings);
    summary
        .warnings
        .extend(symbolizer.warnings().iter().cloned());
    Ok(summary)
}

fn note_stats(s: &PgoStats, warnings: &mut Vec<String>) {
    if s.ibs_no_target > 0 {
        warnings.push(format!(
            "{} taken IBS branches had no IbsBrTarget (the CPU or kernel did not record it): \
             left out",
            s.ibs_no_target
        ));
    }
    if s.ibs_invalid > 0 {
        warnings.push(format!(
            "{} IBS op samples could not be decoded: left out",
            s.ibs_invalid
        ));
    }
}

/// The binary: the one named, else the ELF file with the most taken branches in its code.
fn pick_binary(
    profile: &Profile,
    pgo: &PgoProfile,
    wanted: Option<&str>,
    format: PgoFormat,
) -> Result<Target, PgoError> {
    let mut weight: HashMap<DsoId, u64> = HashMap::new();
    for ((from, to), b) in &pgo.branches {
        for d in [from.dso, to.dso].into_iter().flatten() {
            *weight.entry(d).or_default() += b.count;
        }
        if from.dso == to.dso {
            // Counted once per branch.
            if let Some(d) = from.dso {
                *weight.entry(d).or_default() -= b.count;
            }
        }
    }
    for (at, n) in &pgo.ops {
        if let Some(d) = at.dso {
            *weight.entry(d).or_default() += n;
        }
    }
    let usable = |kind: DsoKind| match format {
        PgoFormat::Bolt => matches!(kind, DsoKind::Elf | DsoKind::Kernel),
        PgoFormat::Autofdo => kind == DsoKind::Elf,
    };
    let named = |id: usize| {
        let d = &profile.dsos[id];
        wanted.is_none_or(|w| d.short_name == w || d.path == w)
    };
    let best = (0..profile.dsos.len())
        .filter(|&i| {
            named(i)
                && (wanted.is_some()
                    || (profile.dsos[i].kind == DsoKind::Elf
                        && weight.get(&(i as DsoId)).is_some_and(|&w| w > 0)))
        })
        .max_by_key(|&i| {
            (
                weight.get(&(i as DsoId)).copied().unwrap_or(0),
                usize::MAX - i,
            )
        });
    match best {
        Some(i) if usable(profile.dsos[i].kind) => {
            if weight.get(&(i as DsoId)).copied().unwrap_or(0) == 0 {
                return Err(PgoError::Unsupported(format!(
                    "no branch of the samples leaves or enters {}",
                    profile.dsos[i].path
                )));
            }
            Ok(Target { dso: i as DsoId })
        }
        Some(i) => Err(PgoError::Unsupported(format!(
            "{}: a {} profile describes an ELF file{}",
            profile.dsos[i].path,
            format.name(),
            if format == PgoFormat::Autofdo {
                " with debug info (the kernel and JIT code have no DWARF here)"
            } else {
                " or the kernel"
            }
        ))),
        None => {
            let mut names: Vec<(u64, &str)> = weight
                .iter()
                .filter(|(d, _)| profile.dsos[**d as usize].kind == DsoKind::Elf)
                .map(|(d, n)| (*n, profile.dsos[*d as usize].short_name.as_str()))
                .collect();
            names.sort_unstable_by(|a, b| b.cmp(a));
            let names: Vec<&str> = names.into_iter().take(10).map(|(_, n)| n).collect();
            Err(PgoError::Unsupported(match wanted {
                Some(w) => format!(
                    "no DSO '{w}' in the file (ELF files with branches: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
                None => "no taken branch of the samples is in an ELF file (kernel-only or JIT \
                         code: name the DSO with --dso, such as --dso '[kernel.kallsyms]')"
                    .to_string(),
            }))
        }
    }
}

/// Lower-case hex of bytes (build-ids).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
