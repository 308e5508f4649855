//! Input bytes of a regular file: mapped, with a
//! callback that drops already-processed pages from the resident set.

use std::path::Path;

use crate::model::Profile;
use crate::{header, stream, DecodeError};

/// Runs `f` over the bytes, byte order and header of the file-mode perf.data file `path`,
/// mapped (the header questions asked before a read). `None` for a pipe or FIFO, a
/// pipe-mode file, or bytes that are no perf.data file (the read itself reports that).
pub(crate) fn with_file_header<T>(
    path: &Path,
    f: impl FnOnce(&[u8], bool, &header::FileHeader) -> Result<T, DecodeError>,
) -> Result<Option<T>, DecodeError> {
    // Not opened unless regular: opening a FIFO waits for its writer.
    if !is_mappable(path)? {
        return Ok(None);
    }
    let file = std::fs::File::open(path).map_err(DecodeError::Io)?;
    // SAFETY: as in `with_file`: a read-only private mapping of a file perf only appends to.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(DecodeError::Io)?;
    with_bytes_header(&map, f)
}

/// [`with_file_header`] over bytes in memory.
pub(crate) fn with_bytes_header<T>(
    data: &[u8],
    f: impl FnOnce(&[u8], bool, &header::FileHeader) -> Result<T, DecodeError>,
) -> Result<Option<T>, DecodeError> {
    if stream::is_pipe_header(data) {
        return Ok(None);
    }
    let Ok(be) = header::byte_order(data) else {
        return Ok(None);
    };
    let h = header::parse_file_header(data, be)?;
    f(data, be, &h).map(Some)
}

/// Whether `path` is a regular file that is mapped for reading (else it is read as a
/// stream: a FIFO, a device, `/dev/stdin`). An empty regular file counts as a stream too.
pub(crate) fn is_mappable(path: &Path) -> Result<bool, DecodeError> {
    let meta = std::fs::metadata(path).map_err(DecodeError::Io)?;
    Ok(meta.is_file() && meta.len() > 0)
}

/// A reader over bytes, given a callback releasing processed input up to an offset (callable
/// from several threads at once).
type ReadFn<'a> = dyn FnMut(&[u8], &(dyn Fn(usize) + Sync)) -> Result<Profile, DecodeError> + 'a;

/// Maps the file (or reads it, for empty files and pipes) and runs `f` over its bytes with a
/// callback that releases already-processed pages.
pub(crate) fn with_file(path: &Path, f: &mut ReadFn) -> Result<Profile, DecodeError> {
    let file = std::fs::File::open(path).map_err(DecodeError::Io)?;
    with_open_file(&file, f)
}

/// [`with_file`] over a file already open.
pub(crate) fn with_open_file(file: &std::fs::File, f: &mut ReadFn) -> Result<Profile, DecodeError> {
    let meta = file.metadata().map_err(DecodeError::Io)?;
    if meta.len() == 0 || !meta.is_file() {
        // Empty files cannot be mapped; a FIFO or device is a stream (`Reader` reads those
        // with `stream::read_input` and never gets here): nothing to read.
        return f(&[], &|_| {});
    }
    // SAFETY: the mapping is read-only and private to this call. perf.data files are not
    // truncated while being read (perf only appends, then rewrites the header in place);
    // a concurrent truncation would raise SIGBUS, as with any mmap-based reader (perf too).
    let map = unsafe { memmap2::Mmap::map(file) }.map_err(DecodeError::Io)?;
    let release = |upto: usize| {
        // Drop already-processed pages from the resident set; they are file-backed, so a
        // later access (there is none) would simply re-read them.
        let upto = upto & !0xfff;
        if upto > 0 {
            // SAFETY: DONTNEED on a read-only file mapping only discards cached pages; their
            // content stays what the file holds.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, upto) };
        }
    };
    f(&map, &release)
}
