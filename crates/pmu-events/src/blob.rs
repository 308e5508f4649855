//! The tables' storage: zstd frames, each decompressed once on first use.
//!
//! Format (written by `gen/pmu_events_gen.py`): [`crate::generated::TABLES_ZST`] is a
//! series of zstd frames. The first ([`crate::generated::HEADER_ZST_LEN`] bytes) holds the
//! mapfile rows and the index of the others, one line each, fields separated by tabs:
//!
//! ```text
//! culprit-pmu-events 2
//! R arch cpuid version model type         a mapfile.csv row (model = "x86/skylakex")
//! C model compressed_len len              the next frame: that model's table
//! ```
//!
//! Each model's frame is self-contained, so that a run decompresses only its own CPU's:
//!
//! ```text
//! P <n>                      then n lines: the model's string pool (line i is string i; 0 is "")
//! E name topic pmu terms desc long_desc unit compat counter flags    (pool ids, then flags)
//! M name group expr threshold desc long_desc unit pmu compat default_group flags
//! G group description
//! ```
//!
//! Strings escape `\`, newline, tab and CR as `\\`, `\n`, `\t`, `\r`. Event flags: `d`
//! deprecated, `k` per-package, `pN` the JSON's PEBS value. Metric flags: three digits,
//! aggregation mode, event grouping (perf's enums) and MetricgroupNoGroup.

use std::borrow::Cow;

/// A parse or decompression failure of the embedded tables (a build defect, never input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobError(pub String);

impl std::fmt::Display for BlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "culprit's embedded pmu-events tables are damaged: {}",
            self.0
        )
    }
}

impl std::error::Error for BlobError {}

/// The first line of the header frame.
pub(crate) const FORMAT_LINE: &str = "culprit-pmu-events 2";

/// Decompresses one frame of the embedded tables, `len` bytes long uncompressed.
pub(crate) fn decompress_frame(frame: &[u8], len: usize) -> Result<String, BlobError> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    zstd_safe::decompress(&mut out, frame)
        .map_err(|code| BlobError(zstd_safe::get_error_name(code).to_string()))?;
    if out.len() != len {
        return Err(BlobError(format!(
            "a frame gave {} bytes where the index says {len}",
            out.len()
        )));
    }
    String::from_utf8(out).map_err(|e| BlobError(e.to_string()))
}

/// Undoes the generator's escaping.
pub(crate) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

/// Parses a pool index field.
pub(crate) fn index(field: Option<&str>, line: &str) -> Result<usize, BlobError> {
    field
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| BlobError(format!("bad field in line `{line}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_restores_the_generators_escapes() {
        assert_eq!(unescape("plain"), "plain");
        assert_eq!(unescape(r"a\nb\tc\\d\re"), "a\nb\tc\\d\re");
        assert_eq!(unescape(r"cpu@X\\,cmask\\=1@"), r"cpu@X\,cmask\=1@");
    }
}
