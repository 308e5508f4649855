//! Record synthesis: the COMM and MMAP/MMAP2 records that describe what existed before the
//! recording started (the kernel's text, running processes from /proc) or before a file
//! switch (processes known only from the stream).

use culprit_decode::abi::{attr_flag, misc};

use super::tracker::Tracker;
use crate::perfdata::records::{self, MmapArgs, SampleId};
use crate::perfdata::Attr;
use crate::procfs;

/// The kernel's text mapping, as perf synthesizes it: MMAP, pid -1, `[kernel.kallsyms]_text`,
/// pgoff = start.
pub(super) fn synthesize_kernel(out: &mut Vec<u8>, attr: &Attr, id: u64) {
    let Some((start, end)) = procfs::kernel_text_range() else {
        return;
    };
    let m = MmapArgs {
        pid: u32::MAX,
        tid: 0,
        start,
        len: end - start,
        pgoff: start,
        maj: 0,
        min: 0,
        ino: 0,
        prot: 0,
        flags: 0,
        filename: b"[kernel.kallsyms]_text",
        misc: misc::KERNEL,
    };
    records::push_mmap(
        out,
        attr,
        &m,
        &SampleId {
            pid: u32::MAX,
            tid: 0,
            time: 0,
            id,
            cpu: 0,
        },
    );
}

/// COMM for every thread and MMAP2 for every executable mapping (every mapping with
/// `mmap_data`) of a running process.
///
/// Returns the number of mappings written (none for a process that is gone or a zombie).
pub(super) fn synthesize_process(out: &mut Vec<u8>, attr: &Attr, id: u64, pid: i32) -> usize {
    // With mmap_data (dwarf call graphs) the data mappings matter too, as for perf.
    let data = attr.flags & attr_flag::MMAP_DATA != 0;
    let tids = procfs::threads(pid);
    if tids.is_empty() {
        return 0;
    }
    let p = pid as u32;
    for &tid in &tids {
        if let Some(name) = procfs::comm(pid, tid) {
            let sid = SampleId {
                pid: p,
                tid: tid as u32,
                time: 0,
                id,
                cpu: 0,
            };
            records::push_comm(out, attr, p, tid as u32, name.as_bytes(), false, &sid);
        }
    }
    let sid = SampleId {
        pid: p,
        tid: p,
        time: 0,
        id,
        cpu: 0,
    };
    let mut written = 0;
    for m in procfs::maps(pid).iter().filter(|m| data || m.is_exec()) {
        written += 1;
        let name = if m.path.is_empty() {
            "//anon"
        } else {
            m.path.as_str()
        };
        let args = MmapArgs {
            pid: p,
            tid: p,
            start: m.start,
            len: m.end - m.start,
            pgoff: m.pgoff,
            maj: m.maj,
            min: m.min,
            ino: m.ino,
            prot: m.prot,
            flags: m.flags,
            filename: name.as_bytes(),
            misc: misc::USER,
        };
        records::push_mmap2(out, attr, &args, &sid);
    }
    written
}

impl Tracker {
    /// COMM and MMAP2 records of process `pid` as the stream described it (its executable
    /// mappings): the state of a process that exited before a file switch.
    pub(super) fn synthesize_from_stream(&self, out: &mut Vec<u8>, attr: &Attr, id: u64, pid: u32) {
        // Only processes the stream mapped code for (not kernel threads).
        if self.maps.get(&pid).is_none_or(|m| m.is_empty()) {
            return;
        }
        let sid = SampleId {
            pid,
            tid: pid,
            time: 0,
            id,
            cpu: 0,
        };
        if let Some(name) = self.comms.get(&pid) {
            records::push_comm(out, attr, pid, pid, name, false, &sid);
        }
        for m in self.maps.get(&pid).into_iter().flatten() {
            let args = MmapArgs {
                pid,
                tid: pid,
                start: m.start,
                len: m.end - m.start,
                pgoff: m.pgoff,
                maj: 0,
                min: 0,
                ino: 0,
                prot: m.prot,
                flags: m.flags,
                filename: self.names[m.name as usize].as_bytes(),
                misc: misc::USER,
            };
            records::push_mmap2(out, attr, &args, &sid);
        }
    }
}
