//! The binary's global allocator: the system's (glibc malloc), asking for transparent huge
//! pages on large blocks.
//!
//! Why: an export of a 1M-sample file fills ~100 MB of fresh heap (the sample timeline,
//! the Firefox Profiler's tables, the shares of a parallel read). On 4 KiB pages that is
//! ~25,000 page faults, a fifth of the export's CPU time (docs/performance.md). Where the
//! kernel gives huge pages only to memory that asks for them (transparent_hugepage
//! `madvise`, a common default), glibc asks only under `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`,
//! which a program cannot set for itself. No allocator crate is needed for one `madvise`.
//! Where THP is `always` or `never` the advice changes nothing.

use std::alloc::{GlobalAlloc, Layout, System};

/// A huge page (x86-64, aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// A base page. Where pages are larger, `madvise` refuses the unaligned range: no advice.
const PAGE: usize = 4096;

/// Blocks from this size on get the advice (smaller ones hold at most one huge page).
const ADVISED: usize = 2 * HUGE_PAGE;

/// The system allocator with `madvise(MADV_HUGEPAGE)` on large blocks.
pub struct HugePages;

/// The pages of the block at `addr` of `size` bytes: `(start, length)`, `None` for a small
/// block. The whole pages, not just the huge pages inside: glibc maps a large block on
/// pages of its own and grows it with `mremap`, which fails on a mapping that advice on a
/// part of it has split in two.
fn advised_pages(addr: usize, size: usize) -> Option<(usize, usize)> {
    if addr == 0 || size < ADVISED {
        return None;
    }
    let start = addr & !(PAGE - 1);
    let end = addr.checked_add(size)?.checked_add(PAGE - 1)? & !(PAGE - 1);
    Some((start, end - start))
}

fn advise(ptr: *mut u8, size: usize) {
    if let Some((start, len)) = advised_pages(ptr as usize, size) {
        // SAFETY: the range lies inside a block the allocator just handed out; the advice
        // changes how its pages are backed, never their contents. Failure (no THP) is
        // harmless and ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}

// SAFETY: every call is the system allocator's with the same arguments; the advice only
// follows a successful allocation.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_advised_pages_cover_large_blocks_only() {
        let h = HUGE_PAGE;
        assert_eq!(advised_pages(0, 10 * h), None);
        assert_eq!(advised_pages(h, h), None, "small blocks are left alone");
        assert_eq!(advised_pages(h, 2 * h), Some((h, 2 * h)));
        assert_eq!(advised_pages(h + 16, 2 * h), Some((h, 2 * h + PAGE)));
        assert_eq!(advised_pages(3 * PAGE + 16, 2 * h - 16), None);
        assert_eq!(
            advised_pages(3 * PAGE, 2 * h + 16),
            Some((3 * PAGE, 2 * h + PAGE))
        );
        assert_eq!(advised_pages(usize::MAX - h, 3 * h), None);
    }

    #[test]
    fn test_large_blocks_grow_and_keep_their_contents() {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..(3 * HUGE_PAGE as u64) {
            v.push(i);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        let zeroed = vec![0u8; 3 * HUGE_PAGE];
        assert!(zeroed.iter().all(|&b| b == 0));
    }
}
