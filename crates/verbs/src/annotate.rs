//! `culprit annotate`: per-instruction annotated disassembly of the hottest functions (or
//! one chosen function) of a perf.data file, one column per event, with skid figures and,
//! with de-skidding, an estimate of the instruction that caused each non-precise sample
//! (`culprit_analysis::annotate`). Samples are folded into per-place counts while reading:
//! memory follows the distinct places, not the file.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use culprit_analysis::annotate::{annotate_places, SampledPlaces, SourceCache, Target, TextView};
use culprit_output::TextOptions;
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::progress::Progress;

/// How the annotation is written.
#[derive(Debug, Clone, Copy)]
pub enum AnnotateFormat {
    /// One text document per function, an empty line between them.
    Text {
        /// What the text shows besides the instructions.
        view: TextView,
        /// Colour and width.
        text: TextOptions,
    },
    /// One JSON object per function, one per line (docs/annotate.md).
    Json,
}

/// What `culprit annotate` reads, annotates and writes.
#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// The input, with where its symbols are found.
    pub input: ProfileInput,
    /// Which functions, which events, the assembly syntax and de-skidding.
    pub annotate: culprit_analysis::annotate::AnnotateOptions,
    /// Unwind the sampled user stacks of `--call-graph dwarf` recordings (the inclusive cost
    /// of calls; without it, only the kernel part of the chains counts).
    pub unwind: bool,
    /// Text or JSON.
    pub format: AnnotateFormat,
}

/// `--addr`'s value as the target it names: an address as objdump shows it (hex), or
/// `DSO+0xOFFSET` as report prints a frame without a symbol (`[unknown] DSO+0xOFFSET`
/// pasted whole is accepted too).
pub fn parse_addr(s: &str) -> Result<Target, String> {
    let t = s.trim().trim_start_matches("[unknown]").trim();
    match t.rsplit_once('+') {
        Some((dso, off)) if !dso.is_empty() => Ok(Target::DsoOffset(
            dso.to_string(),
            parse_hex(off).map_err(|e| format!("{e} (DSO+0xOFFSET)"))?,
        )),
        _ => parse_hex(t).map(Target::Addr),
    }
}

fn parse_hex(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(hex, 16).map_err(|e| format!("'{s}' is not a hex address: {e}"))
}

/// Reads `options.input`, annotates the chosen functions, writes the reading's and the
/// symbolizer's warnings to stderr (each once, with how many times it was given), then the
/// annotation to the writer `open` gives (opened only when there is one to write). Fails
/// when the target matched no sampled function, naming the ones there are. The exit status
/// is 0, or 1 after saying where and why the reading stopped (the annotation covers what
/// was read before it).
pub fn annotate<W: Write>(
    options: &AnnotateOptions,
    open: impl FnOnce() -> anyhow::Result<W>,
) -> anyhow::Result<ExitCode> {
    let input = &options.input;
    let mut places = SampledPlaces::default();
    let bar = Progress::for_input(input);
    let plan = ReadPlan {
        unwind: options.unwind,
        ..ReadPlan::default()
    };
    let profile = input.for_each(&plan, bar.callback(), |p, s| places.add(p, s))?;
    bar.finish();
    let mut symbolizer = input.symbolizer();
    let ann = annotate_places(&profile, &places, &mut symbolizer, &options.annotate)?;
    for (w, times) in count_repeats(profile.warnings.iter().chain(symbolizer.warnings())) {
        let repeats = if times > 1 {
            format!(" ({times} times)")
        } else {
            String::new()
        };
        eprintln!(
            "culprit: warning: {}{repeats}",
            culprit_output::text::escape(w)
        );
    }
    let path = input.path().display().to_string();
    if ann.functions.is_empty() {
        anyhow::bail!(ann.no_match_message(&options.annotate.target, &path));
    }
    let mut out = open()?;
    match &options.format {
        AnnotateFormat::Json => {
            for f in &ann.functions {
                culprit_output::json::write_line(&mut out, &f.to_json(options.annotate.deskid))?;
            }
        }
        AnnotateFormat::Text { view, text } => {
            let mut sources = SourceCache::default();
            for (k, f) in ann.functions.iter().enumerate() {
                if k > 0 {
                    writeln!(out)?;
                }
                let doc = f.document(profile.meta.cmdline.as_deref(), view, &mut sources);
                culprit_output::text::write(&mut out, &doc, text)?;
            }
        }
    }
    out.flush()?;
    if let Some(stop) = &profile.stopped {
        let outcome = "the annotation covers what was read before it";
        return Ok(crate::stopped::report(&path, &stop.describe(), outcome));
    }
    Ok(ExitCode::SUCCESS)
}

/// Each distinct warning once, in first-seen order, with how many times it was given: the
/// reading and the symbolizer can each report the same problem for every function annotated.
fn count_repeats<'a>(warnings: impl Iterator<Item = &'a String>) -> Vec<(&'a str, usize)> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<(&str, usize)> = Vec::new();
    for w in warnings {
        match seen.get(w.as_str()) {
            Some(&i) => out[i].1 += 1,
            None => {
                seen.insert(w, out.len());
                out.push((w, 1));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_addr_takes_objdumps_hex_and_reports_dso_offsets() {
        assert_eq!(parse_addr("0x12af"), Ok(Target::Addr(0x12af)));
        assert_eq!(parse_addr(" 12AF "), Ok(Target::Addr(0x12af)));
        assert_eq!(
            parse_addr("libfoo.so+0x1234"),
            Ok(Target::DsoOffset("libfoo.so".into(), 0x1234))
        );
        assert_eq!(
            parse_addr("[unknown] libfoo.so+0x1234"),
            Ok(Target::DsoOffset("libfoo.so".into(), 0x1234))
        );
        assert!(parse_addr("zz")
            .unwrap_err()
            .contains("'zz' is not a hex address"));
        assert!(parse_addr("libfoo.so+0xzz")
            .unwrap_err()
            .ends_with("(DSO+0xOFFSET)"));
    }

    #[test]
    fn test_count_repeats_keeps_first_seen_order() {
        let w: Vec<String> = ["a", "b", "a", "c", "a", "b"].map(String::from).to_vec();
        assert_eq!(count_repeats(w.iter()), [("a", 3), ("b", 2), ("c", 1)]);
    }
}
