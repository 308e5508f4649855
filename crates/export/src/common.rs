//! What the multi-event exports (pprof, Firefox, speedscope, Chrome) share: the primary event
//! and frame names.

use std::borrow::Cow;

use culprit_analysis::stacks::StackProfile;

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
