//! Frame names shared by the exports that show one name per function (Firefox, speedscope,
//! Chrome): the function's name, or for code without a symbol its file's name in brackets
//! (`[libc.so.6]`; `[unknown]` outside any mapping), as folded stacks and pprof name it.

use std::borrow::Cow;

use culprit_analysis::stacks::StackProfile;

/// The display name of function `function` of `profile`.
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
