//! What the multi-event exports (pprof, Firefox, speedscope, Chrome) share: the primary event
//! and frame names.

use std::borrow::Cow;

use culprit_analysis::stacks::{StackBuilder, StackError, StackOptions, StackProfile, TimedSample};
use culprit_analysis::AnalysisError;
use culprit_decode::model::{Profile, Sample};
use culprit_symbols::{ProfileInput, ReadPlan, Symbolizer};

use crate::ExportError;

/// The display name of function `function` of `profile`: the function's name, or for code
/// without a symbol its file's name in brackets (`[libc.so.6]`; `[unknown]` outside any
/// mapping), as folded stacks and pprof name it.
pub(crate) fn frame_name(profile: &StackProfile, function: u32) -> Cow<'_, str> {
    match profile.functions.get(function as usize) {
        Some(f) if f.unknown => match profile.mapping(f.mapping) {
            Some(m) => {
                let base = m.path.rsplit('/').next().unwrap_or(&m.path);
                Cow::Owned(format!("[{base}]"))
            }
            None => Cow::Borrowed("[unknown]"),
        },
        Some(f) => Cow::Borrowed(f.name.as_str()),
        None => Cow::Borrowed("[unknown]"),
    }
}

/// The event the multi-event exports show first (pprof's default sample type, Firefox's
/// and Chrome's thread tracks, speedscope's open profile): the first in the file's order
/// (the order of `-e` at recording), not the first sampled.
pub(crate) fn primary_event(profile: &StackProfile) -> Option<u32> {
    (0..profile.events.len() as u32).min_by_key(|&i| profile.events[i as usize].id)
}

/// One sample as [`stream_stacks`] gives it: the stack model so far, the symbolizer (for
/// names written as they come), the file read so far, the sample and where the model
/// counted it.
pub(crate) type StreamedSample<'a> = (
    &'a StackBuilder,
    &'a mut Symbolizer,
    &'a Profile,
    &'a Sample,
    &'a TimedSample,
);

/// Reads `input` once, in order (stdin's way), with its symbols loaded first: each sample
/// the stack model counts goes to `each` until it fails, and the finished stack model is
/// returned. What the timeline formats stream with: nothing kept per sample here.
pub(crate) fn stream_stacks(
    input: &ProfileInput,
    opts: &StackOptions,
    progress: impl FnMut(u64, u64) + Send,
    mut each: impl FnMut(StreamedSample<'_>) -> std::io::Result<()>,
) -> Result<StackProfile, ExportError> {
    let plan = ReadPlan {
        unwind: opts.unwind,
        ..ReadPlan::default()
    };
    let mut symbolizer = input.symbolizer();
    symbolizer.load_kernel_symbols();
    for (path, build_id) in &input.reader().sampled_elf_build_ids() {
        symbolizer.preload_elf(path, Some(build_id));
    }
    let mut builder = StackBuilder::new(&StackOptions {
        timeline: false,
        ..opts.clone()
    });
    let mut error: Option<std::io::Error> = None;
    let read = input.for_each(&plan, progress, |profile, sample| {
        if error.is_some() {
            return;
        }
        if let Some(timed) = builder.add_timed(profile, sample) {
            if let Err(e) = each((&builder, &mut symbolizer, profile, sample, &timed)) {
                error = Some(e);
            }
        }
    });
    if let Some(e) = error {
        return Err(e.into());
    }
    let profile = read.map_err(|e| ExportError::Stacks(StackError::Read(e)))?;
    let mut stacks = builder
        .finish(&profile, &mut symbolizer)
        .map_err(|e: AnalysisError| ExportError::Stacks(StackError::Analysis(e)))?;
    stacks.summary.input = input.path().display().to_string();
    Ok(stacks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;

    #[test]
    fn test_primary_event_is_the_first_in_file_order_not_the_first_sampled() {
        let mut p = testutil::profile();
        assert_eq!(primary_event(&p), Some(0));
        // page-faults sampled first: it comes first in the model, cpu-clock stays primary.
        p.events.swap(0, 1);
        assert_eq!(primary_event(&p), Some(1));
        p.events.clear();
        assert_eq!(primary_event(&p), None);
    }

    #[test]
    fn test_frame_name_of_unknown_code_is_its_file_name() {
        let p = testutil::profile();
        assert_eq!(frame_name(&p, testutil::UNKNOWN), "[libc.so.6]");
        assert_eq!(frame_name(&p, testutil::WORK), "work");
        assert_eq!(frame_name(&p, 99), "[unknown]");
    }
}
