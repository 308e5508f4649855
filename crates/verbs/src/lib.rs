//! culprit's verbs as a library. Each module is one verb (or a family of them): plain
//! options in (no command-line types), one call, and out comes the verb's report model for
//! the caller to render through `culprit-output`'s contract, or, for the verbs that stream
//! while a target runs (record, top, stat -I, trace), the finished session's summary after
//! writing to the writer it was given. This crate is the glue between acquisition
//! (`culprit-collect`), reading (`culprit-decode`, `culprit-symbols`), analysis and the
//! exports; the `culprit` binary (`culprit-cli`) maps flags onto these options and renders.

pub mod annotate;
pub mod archive;
pub mod demo;
pub mod diff;
pub mod export;
pub mod flamegraph;
pub mod html;
pub mod ibs;
pub mod list;
pub mod lock;
pub mod progress;
pub mod record;
pub mod report;
pub mod sched;
pub mod script;
pub mod stat;
pub mod stopped;
pub mod top;
pub mod trace;
