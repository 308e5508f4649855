//! perf_event_open file descriptors and their mmap'd ring buffers.
//!
//! One ring per CPU: the first event opened on a CPU is mmap'd, every other event of that CPU
//! is redirected into it with `PERF_EVENT_IOC_SET_OUTPUT`. The reader follows the protocol of
//! `include/uapi/linux/perf_event.h`: load `data_head` with acquire ordering, copy the bytes
//! in `[data_tail, data_head)` (a record may wrap at the end of the buffer: copying the two
//! pieces back to back stitches it), then store `data_tail` with release ordering.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys as sys;

use crate::perfdata::Attr;

/// The attr bytes with the alignment the kernel's struct has.
#[repr(C, align(8))]
struct AttrBuf([u8; crate::perfdata::ATTR_SIZE]);

/// The errno of the last failed call (EINVAL if the OS gave none).
fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// An ioctl's return value as a result.
fn ioctl_result(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens one event. `pid`: task (or -1 for all tasks of `cpu`); `cpu`: CPU (or -1).
/// Returns the errno on failure.
pub fn perf_event_open(attr: &Attr, pid: i32, cpu: i32) -> Result<OwnedFd, i32> {
    perf_event_open_in_group(attr, pid, cpu, None)
}

/// [`perf_event_open`] as a member of the group led by `leader` (its `group_fd`).
pub fn perf_event_open_in_group(
    attr: &Attr,
    pid: i32,
    cpu: i32,
    leader: Option<&OwnedFd>,
) -> Result<OwnedFd, i32> {
    let group_fd = leader.map_or(-1, |f| f.as_raw_fd());
    // The attr is culprit's own encoding (the bytes the perf.data file states), not the
    // bindings' struct: the kernel reads as many bytes as its `size` field says.
    let mut buf = AttrBuf(attr.to_bytes());
    let flags = libc::c_ulong::from(sys::bindings::PERF_FLAG_FD_CLOEXEC);
    // SAFETY: buf is a valid, 8-aligned perf_event_attr of the size its `size` field states,
    // alive and writable (the kernel may write the size it expects back) for the call.
    let fd = unsafe {
        sys::perf_event_open(
            buf.0.as_mut_ptr().cast::<sys::bindings::perf_event_attr>(),
            pid,
            cpu,
            group_fd,
            flags,
        )
    };
    let result = if fd < 0 { Err(last_errno()) } else { Ok(fd) };
    crate::verbose::display_open(pid, cpu, group_fd, flags, result);
    let fd = result?;
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// [`perf_event_open_in_group`] with perf's fallback for PMUs that reject the guest/host
/// filters (`msr`, `power`, uncore: EINVAL while `exclude_guest` or `exclude_host` is set):
/// "switching off exclude_guest, exclude_host" and one retry. `attr` keeps what opened.
pub fn open_with_guest_fallback(
    attr: &mut Attr,
    pid: i32,
    cpu: i32,
    leader: Option<&OwnedFd>,
) -> Result<OwnedFd, i32> {
    use culprit_decode::abi::attr_flag;
    let guest_bits = attr_flag::EXCLUDE_GUEST | attr_flag::EXCLUDE_HOST;
    match perf_event_open_in_group(attr, pid, cpu, leader) {
        Err(libc::EINVAL) if attr.flags & guest_bits != 0 => {
            attr.flags &= !guest_bits;
            crate::verbose::display_note("switching off exclude_guest, exclude_host");
            crate::verbose::display_attr(&attr.to_bytes());
            perf_event_open_in_group(attr, pid, cpu, leader)
        }
        result => result,
    }
}

/// The kernel's sample id of an event fd.
pub fn event_id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id: u64 = 0;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer.
    ioctl_result(unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) })?;
    Ok(id)
}

/// Redirects `fd`'s records into the ring buffer of `target`.
pub fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain ioctl on two descriptors we own.
    ioctl_result(unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) })
}

/// Enables (`true`) or disables an event.
pub fn set_enabled(fd: &OwnedFd, on: bool) -> io::Result<()> {
    // SAFETY: plain ioctl on a descriptor we own.
    ioctl_result(unsafe {
        if on {
            sys::ioctls::ENABLE(fd.as_raw_fd(), 0)
        } else {
            sys::ioctls::DISABLE(fd.as_raw_fd(), 0)
        }
    })
}

/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// A mmap'd perf ring buffer (metadata page + 2^n data pages).
#[derive(Debug)]
pub struct Ring {
    base: *mut u8,
    map_len: usize,
    data_off: usize,
    data_size: usize,
    fd: RawFd,
    /// Overwrite (flight-recorder) mode: mapped read-only, the kernel writes backward
    /// (`write_backward`) over the oldest data; read with [`Ring::snapshot_into`].
    overwrite: bool,
    /// Overwrite mode: `data_head` at the previous snapshot (what is before it was read).
    prev_head: u64,
}

// SAFETY: the mapping is owned by the Ring and only accessed through &mut self or atomics.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `data_pages` (a power of two) data pages of `fd`'s buffer.
    pub fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        Ring::map_mode(fd, data_pages, false)
    }

    /// Maps the buffer of an event opened with `write_backward` in overwrite mode: read-only,
    /// so the kernel never waits for the reader and keeps only the newest records.
    pub fn map_overwrite(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        Ring::map_mode(fd, data_pages, true)
    }

    fn map_mode(fd: &OwnedFd, data_pages: usize, overwrite: bool) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map_len = page * (1 + data_pages);
        // The kernel's overwrite mode is a mapping without PROT_WRITE.
        let prot = if overwrite {
            libc::PROT_READ
        } else {
            libc::PROT_READ | libc::PROT_WRITE
        };
        // SAFETY: mapping a perf fd shared is the documented way to get its ring buffer;
        // the result is checked against MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base as *mut u8;
        // SAFETY: the metadata page is mapped; data_offset/data_size are plain u64 fields
        // (kernels before 4.1 leave them 0: fall back to the classic layout).
        let (mut data_off, mut data_size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET) as *const u64) as usize,
                std::ptr::read_volatile(base.add(DATA_SIZE) as *const u64) as usize,
            )
        };
        if data_size == 0 || data_off + data_size > map_len {
            data_off = page;
            data_size = page * data_pages;
        }
        Ok(Ring {
            base,
            map_len,
            data_off,
            data_size,
            fd: fd.as_raw_fd(),
            overwrite,
            prev_head: 0,
        })
    }

    /// The bytes of data the ring holds.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Stops (`true`) or resumes the kernel's writing into the ring
    /// (`PERF_EVENT_IOC_PAUSE_OUTPUT`); records that arrive meanwhile are lost.
    pub fn pause(&self, paused: bool) -> io::Result<()> {
        // SAFETY: plain ioctl on the ring's descriptor, which the owner keeps open.
        ioctl_result(unsafe { sys::ioctls::PAUSE_OUTPUT(self.fd, u32::from(paused)) })
    }

    /// Overwrite mode: appends the records written since the previous snapshot (at most
    /// the ring's size: the newest ones, newest first, as the kernel writes backward) and
    /// returns how many bytes. Pause the ring around it ([`Ring::pause`]) so that the kernel
    /// does not overwrite what is read.
    pub fn snapshot_into(&mut self, out: &mut Vec<u8>) -> usize {
        if !self.overwrite {
            return 0;
        }
        let head = self.head_atomic().load(Ordering::Acquire);
        // Backward: data_head goes down from 0; the newest record starts at head.
        let written = self.prev_head.wrapping_sub(head);
        self.prev_head = head;
        if written == 0 {
            return 0;
        }
        let mask = self.data_size - 1;
        let start = head as usize & mask;
        let data = || {
            // SAFETY: [data_off, data_off + data_size) is inside the mapping.
            unsafe { std::slice::from_raw_parts(self.base.add(self.data_off), self.data_size) }
        };
        let buf = data();
        let byte = |i: usize| buf[(start + i) & mask];
        // Walk whole records from the newest, within what was written and what the ring
        // holds (perf's overwrite_rb_find_range): the oldest one may be half overwritten.
        let limit = (written as usize).min(self.data_size);
        let mut len = 0usize;
        while len + 8 <= limit {
            let size = u16::from_le_bytes([byte(len + 6), byte(len + 7)]) as usize;
            if size < 8 || len + size > limit {
                break;
            }
            len += size;
        }
        let first = len.min(self.data_size - start);
        out.extend_from_slice(&buf[start..start + first]);
        out.extend_from_slice(&buf[..len - first]);
        len
    }

    /// The descriptor this ring belongs to (for poll).
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    fn head_atomic(&self) -> &AtomicU64 {
        // SAFETY: data_head is an 8-aligned u64 inside the mapped metadata page, written by
        // the kernel; AtomicU64 has the same layout.
        unsafe { &*(self.base.add(DATA_HEAD) as *const AtomicU64) }
    }

    fn tail_atomic(&self) -> &AtomicU64 {
        // SAFETY: as for data_head; only we write data_tail.
        unsafe { &*(self.base.add(DATA_TAIL) as *const AtomicU64) }
    }

    /// Bytes waiting to be read.
    pub fn pending(&self) -> u64 {
        let head = self.head_atomic().load(Ordering::Acquire);
        let tail = self.tail_atomic().load(Ordering::Relaxed);
        head.wrapping_sub(tail)
    }

    /// Appends every complete record waiting in the ring to `out` and frees that space.
    /// Returns the number of bytes appended.
    pub fn drain_into(&mut self, out: &mut Vec<u8>) -> usize {
        if self.overwrite {
            // Read-only: never written by us, read by snapshots.
            return 0;
        }
        let head = self.head_atomic().load(Ordering::Acquire);
        let tail = self.tail_atomic().load(Ordering::Relaxed);
        let avail = head.wrapping_sub(tail) as usize;
        if avail == 0 {
            return 0;
        }
        // The kernel never lets head run more than data_size ahead of tail; clamp anyway so a
        // corrupt header cannot make us read outside the mapping.
        let avail = avail.min(self.data_size);
        let start = (tail as usize) & (self.data_size - 1);
        let first = avail.min(self.data_size - start);
        // SAFETY: [data_off, data_off + data_size) is inside the mapping, and both pieces stay
        // inside it by construction (start < data_size, first <= data_size - start,
        // avail - first <= start).
        unsafe {
            let data = self.base.add(self.data_off);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            if avail > first {
                out.extend_from_slice(std::slice::from_raw_parts(data, avail - first));
            }
        }
        self.tail_atomic()
            .store(tail.wrapping_add(avail as u64), Ordering::Release);
        avail
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_decode::abi::{attr_flag, sample_type};

    fn sw_attr(config: u64) -> Attr {
        Attr {
            attr_type: 1,
            config,
            sample_period_or_freq: 100_000,
            sample_type: sample_type::IDENTIFIER
                | sample_type::IP
                | sample_type::TID
                | sample_type::TIME,
            flags: attr_flag::DISABLED | attr_flag::SAMPLE_ID_ALL | attr_flag::EXCLUDE_KERNEL,
            ..Attr::default()
        }
    }

    /// task-clock on this thread, mmap'd: spinning produces sample records we can walk.
    #[test]
    fn test_ring_drain_task_clock_self() {
        let _lock = culprit_testkit::pmu_lock();
        let fd = match perf_event_open(&sw_attr(1), 0, -1) {
            Ok(fd) => fd,
            Err(e) => panic!("perf_event_open(task-clock) failed: errno {e}"),
        };
        let id = event_id(&fd).unwrap();
        assert!(id > 0);
        let mut ring = Ring::map(&fd, 8).unwrap();
        set_enabled(&fd, true).unwrap();
        // 30 ms of this thread's CPU time (not wall time: on a loaded machine the thread
        // may run for a fraction of the wall time, and task-clock counts CPU time).
        let cpu_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime with a valid timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let start = cpu_ns();
        let mut x = 0u64;
        while cpu_ns() - start < 30_000_000 {
            // Mostly user-mode work: reading the thread's CPU clock is a system call, and
            // samples landing in the kernel are excluded.
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        set_enabled(&fd, false).unwrap();
        let mut out = Vec::new();
        ring.drain_into(&mut out);
        assert_eq!(ring.pending(), 0);
        let mut samples = 0;
        let mut pos = 0;
        while pos + 8 <= out.len() {
            let ty = u32::from_le_bytes(out[pos..pos + 4].try_into().unwrap());
            let size = u16::from_le_bytes(out[pos + 6..pos + 8].try_into().unwrap()) as usize;
            assert!(size >= 8);
            if ty == 9 {
                assert_eq!(
                    u64::from_le_bytes(out[pos + 8..pos + 16].try_into().unwrap()),
                    id
                );
                samples += 1;
            }
            pos += size;
        }
        assert_eq!(pos, out.len());
        // 30 ms of task-clock at one sample per 100 us: about 300.
        assert!(samples > 50, "only {samples} samples");
    }

    /// A one-page ring drained while it fills: records wrap at the end of the buffer many
    /// times and must come out whole (every record parses, every sample carries our id).
    #[test]
    fn test_ring_drain_stitches_wrapped_records() {
        let _lock = culprit_testkit::pmu_lock();
        let mut attr = sw_attr(1);
        attr.sample_period_or_freq = 20_000; // 50 kHz of task-clock
        let fd = perf_event_open(&attr, 0, -1).expect("perf_event_open(task-clock)");
        let id = event_id(&fd).unwrap();
        let mut ring = Ring::map(&fd, 1).unwrap();
        set_enabled(&fd, true).unwrap();
        let mut out = Vec::new();
        let mut drained = 0usize;
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(200) {
            for _ in 0..2000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            drained += ring.drain_into(&mut out);
        }
        set_enabled(&fd, false).unwrap();
        drained += ring.drain_into(&mut out);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        assert!(
            drained > 4 * page,
            "only {drained} bytes: the ring never wrapped"
        );
        let (mut pos, mut samples) = (0, 0);
        while pos < out.len() {
            let ty = u32::from_le_bytes(out[pos..pos + 4].try_into().unwrap());
            let size = u16::from_le_bytes(out[pos + 6..pos + 8].try_into().unwrap()) as usize;
            assert!(
                size >= 8 && pos + size <= out.len(),
                "bad record at {pos}: type {ty} size {size}"
            );
            match ty {
                9 => {
                    assert_eq!(size, 40, "sample size");
                    assert_eq!(
                        u64::from_le_bytes(out[pos + 8..pos + 16].try_into().unwrap()),
                        id
                    );
                    samples += 1;
                }
                2 | 5 | 6 => {} // LOST, THROTTLE, UNTHROTTLE
                _ => panic!("unexpected record type {ty} at {pos}"),
            }
            pos += size;
        }
        assert_eq!(pos, out.len());
        assert!(samples > 500, "{samples} samples");
    }

    /// Overwrite mode: a one-page backward ring filled many times over keeps only its
    /// newest records; a paused snapshot returns whole records, newest first, at most a
    /// ring's worth, and the next snapshot only what came after.
    #[test]
    fn test_overwrite_ring_snapshot_keeps_the_newest_records() {
        let _lock = culprit_testkit::pmu_lock();
        let mut attr = sw_attr(1);
        attr.sample_period_or_freq = 20_000; // 50 kHz of task-clock
        attr.flags |= attr_flag::WRITE_BACKWARD;
        let fd = perf_event_open(&attr, 0, -1).expect("perf_event_open(task-clock, backward)");
        let id = event_id(&fd).unwrap();
        let mut ring = Ring::map_overwrite(&fd, 1).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            ring.drain_into(&mut out),
            0,
            "overwrite rings are not drained"
        );
        set_enabled(&fd, true).unwrap();
        let spin = |ms: u64| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < std::time::Duration::from_millis(ms) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        };
        spin(200);
        ring.pause(true).unwrap();
        let n = ring.snapshot_into(&mut out);
        ring.pause(false).unwrap();
        assert_eq!(n, out.len());
        assert!(
            n <= ring.data_size(),
            "{n} bytes from a {}-byte ring",
            ring.data_size()
        );
        let times = |buf: &[u8]| {
            let (mut pos, mut t) = (0, Vec::new());
            while pos < buf.len() {
                let ty = u32::from_le_bytes(buf[pos..pos + 4].try_into().unwrap());
                let size = u16::from_le_bytes(buf[pos + 6..pos + 8].try_into().unwrap()) as usize;
                assert!(size >= 8 && pos + size <= buf.len(), "bad record at {pos}");
                if ty == 9 {
                    assert_eq!(
                        u64::from_le_bytes(buf[pos + 8..pos + 16].try_into().unwrap()),
                        id
                    );
                    t.push(u64::from_le_bytes(
                        buf[pos + 32..pos + 40].try_into().unwrap(),
                    ));
                }
                pos += size;
            }
            t
        };
        let first = times(&out);
        // 200 ms at 50 kHz fill a page many times: it holds ~100 of these 40-byte samples.
        assert!(first.len() > 20, "{} samples", first.len());
        assert!(first.windows(2).all(|w| w[0] >= w[1]), "newest first");
        spin(50);
        set_enabled(&fd, false).unwrap();
        let mut next = Vec::new();
        ring.pause(true).unwrap();
        ring.snapshot_into(&mut next);
        ring.pause(false).unwrap();
        let second = times(&next);
        assert!(!second.is_empty());
        assert!(
            second.iter().all(|&t| t > first[0]),
            "the second snapshot repeats records of the first"
        );
    }
}
