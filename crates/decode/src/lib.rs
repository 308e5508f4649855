//! culprit-decode: reads perf.data files (file mode and pipe mode) into culprit's sample model,
//! and decodes raw precise-sample payloads (AMD IBS, Intel PEBS fields).
//!
//! Pure: no syscalls beyond reading the file it is given. Main types: [`model::Profile`]
//! (everything a file says, resolved to DSOs), [`model::Sample`], [`model::Dso`].
#![deny(missing_docs)]

pub mod model;
