//! culprit-decode: reads perf.data files (file mode and pipe mode) into culprit's sample model,
//! and decodes raw precise-sample payloads (AMD IBS, Intel PEBS fields).
//!
//! Pure: no syscalls beyond reading the input it is given. Main types: [`model::Profile`]
//! (everything a file says, resolved to DSOs), [`model::Sample`], [`model::Dso`].
//!
//! One front door: [`Reader`], a builder over the input (a path, `-` for stdin, bytes, any
//! `Read`) and its options (DWARF unwinder, progress, threads, skips, side work), ended by
//! [`Reader::collect`] (the profile with its samples), [`Reader::fold`] (samples to a callback
//! in delivery order, memory bounded) or [`Reader::fold_parallel`] (a [`Fold`] on several
//! threads). Callers that own the input loop (a live recording polled with a timer) push
//! chunks into a [`StreamDecoder`] instead. See docs/decode.md for what is read and how.
//! A truncated or corrupt file is not an error: the profile holds everything read before the
//! damage and [`model::Profile::stopped`] says where and why reading stopped. An `Err` means
//! nothing usable exists (not a perf.data file, or its header or attributes are unreadable).
//!
//! ```no_run
//! let profile = culprit_decode::Reader::open("perf.data").collect().unwrap();
//! for e in &profile.events {
//!     println!("{}: {} samples, period {}", e.name, e.samples, e.period);
//! }
//! if let Some(stop) = &profile.stopped {
//!     eprintln!("stopped at offset {}: {}", stop.offset, stop.reason);
//! }
//! ```
#![deny(missing_docs)]

pub mod abi;
pub mod body;
mod cursor;
mod file;
mod header;
pub mod ibs;
mod input;
pub mod model;
mod names;
mod parallel;
pub mod pebs;
pub mod precise;
mod reader;
pub mod spe;
mod state;
mod stream;
pub mod tracepoint;
pub mod unwind;

pub use input::{default_threads, Fold, ReadError, Reader, SplitRule};
pub use model::Profile;
pub use stream::StreamDecoder;

/// What is wrong with a perf.data input (the [`ReadError`] of a read names the input).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input could not be opened or read (the OS error, as it says it).
    #[error("{0}")]
    Io(std::io::Error),
    /// Fewer bytes than a perf.data header.
    #[error("not a perf.data file: only {0} bytes, too short for the header at offset 0")]
    TooShort(u64),
    /// The first 8 bytes are not `PERFILE2`.
    #[error("not a perf.data file: bad magic \"{}\" at offset 0 (expected \"PERFILE2\")", show_magic(.0))]
    BadMagic([u8; 8]),
    /// The header or the event attributes are unreadable.
    #[error("unreadable perf.data header at offset {offset}: {what}")]
    Header {
        /// Byte offset of the bad part.
        offset: u64,
        /// What is wrong there.
        what: String,
    },
    /// Every SAMPLE record was malformed and skipped: a report of it would say "0 samples"
    /// as if the recording were empty.
    #[error("all {0} samples are malformed and were skipped; nothing to show")]
    AllSamplesMalformed(u64),
}

/// The magic bytes as printable text (`\x..` escapes for the rest).
fn show_magic(m: &[u8; 8]) -> String {
    m.iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}
