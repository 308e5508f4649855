//! The tracker: walks the records as they are written and counts per-event samples, LOST
//! and THROTTLE records and the sample time range, and follows processes' executable
//! mappings to know which objects got samples (for HEADER_BUILD_ID).

use std::collections::{HashMap, HashSet};

use culprit_decode::abi::{misc, record_type, sample_type};
use culprit_decode::body;
use culprit_decode::model::CpuMode;

use crate::perfdata::BuildIdEntry;

/// An executable mapping the sample tracker knows about.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mapping {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) name: u32,
    pub(super) pgoff: u64,
    pub(super) prot: u32,
    pub(super) flags: u32,
}

/// Walks records as they are written: counts per-event samples, LOST and THROTTLE records,
/// sample time range, and which objects got samples (for HEADER_BUILD_ID).
#[derive(Debug, Default)]
pub(super) struct Tracker {
    pub(super) id_to_event: HashMap<u64, usize>,
    pub(super) samples: Vec<u64>,
    pub(super) lost: Vec<u64>,
    pub(super) throttled: Vec<u64>,
    pub(super) lost_records: u64,
    pub(super) lost_samples: u64,
    pub(super) throttle: u64,
    pub(super) unthrottle: u64,
    pub(super) first_time: Option<u64>,
    pub(super) last_time: u64,
    pub(super) maps: HashMap<u32, Vec<Mapping>>,
    /// The last command name of each process seen in the stream: a rotated file describes
    /// a process that exited before the switch from these (its /proc entry is gone).
    pub(super) comms: HashMap<u32, Vec<u8>>,
    pub(super) names: Vec<String>,
    pub(super) name_ids: HashMap<String, u32>,
    pub(super) hit: HashSet<u32>,
    pub(super) kernel_hit: bool,
    /// `--off-cpu`: turns each pass's context switches into `offcpu-time` samples before
    /// the pass is written.
    pub(super) off_cpu: Option<crate::offcpu::OffCpu>,
    /// Samples in the current file.
    pub(super) file_samples: u64,
}

/// The leading sample fields every event of a recording has (see `attrs::build_attr`): the
/// tracker reads the event, address, task and time of each sample.
const SAMPLE_HEAD: u64 =
    sample_type::IDENTIFIER | sample_type::IP | sample_type::TID | sample_type::TIME;

impl Tracker {
    pub(super) fn new(nevents: usize) -> Tracker {
        Tracker {
            samples: vec![0; nevents],
            lost: vec![0; nevents],
            throttled: vec![0; nevents],
            ..Tracker::default()
        }
    }

    fn event_of(&self, id: u64) -> usize {
        self.id_to_event.get(&id).copied().unwrap_or(0)
    }

    fn intern(&mut self, name: &[u8]) -> u32 {
        let name = String::from_utf8_lossy(name).into_owned();
        if let Some(&i) = self.name_ids.get(&name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.clone());
        self.name_ids.insert(name, i);
        i
    }

    /// Processes a buffer of whole records.
    pub(super) fn walk(&mut self, buf: &[u8]) {
        let mut pos = 0;
        while let Some(h) = buf.get(pos..).and_then(|b| body::Header::parse(b, false)) {
            let size = usize::from(h.size);
            if size < body::HEADER_SIZE || pos + size > buf.len() {
                break; // cannot happen with kernel records; never loop forever
            }
            self.record(h.ty, h.misc, &buf[pos + body::HEADER_SIZE..pos + size]);
            pos += size;
        }
    }

    /// Counts one record (`b`: its body, after the header).
    fn record(&mut self, ty: u32, misc: u16, b: &[u8]) {
        // The sample_id trailer ends with IDENTIFIER on every non-sample record.
        let trailer_id = || {
            b.get(b.len().saturating_sub(8)..)
                .and_then(|t| body::lost_samples(t, false))
                .unwrap_or(0)
        };
        match ty {
            record_type::SAMPLE => {
                if let Some(head) = body::SampleHead::parse(b, SAMPLE_HEAD, false) {
                    self.sample(misc, head);
                }
            }
            record_type::LOST => {
                let l = body::Lost::parse(b, false).unwrap_or(body::Lost { id: 0, lost: 0 });
                let ev = self.event_of(l.id);
                self.lost[ev] += l.lost;
                self.lost_records += 1;
                self.lost_samples += l.lost;
            }
            record_type::LOST_SAMPLES => {
                let lost = body::lost_samples(b, false).unwrap_or(0);
                let ev = self.event_of(trailer_id());
                self.lost[ev] += lost;
                self.lost_records += 1;
                self.lost_samples += lost;
            }
            record_type::THROTTLE => {
                self.throttle += 1;
                let id = body::Throttle::parse(b, false).map_or(0, |t| t.id);
                let ev = self.event_of(id);
                self.throttled[ev] += 1;
            }
            record_type::UNTHROTTLE => self.unthrottle += 1,
            record_type::FORK => {
                if let Some(f) = body::Fork::parse(b, false) {
                    self.fork(f.pid as u32, f.ppid as u32);
                }
            }
            record_type::COMM => {
                if let Some(c) = body::Comm::parse(b, false) {
                    self.comm(misc, c);
                }
            }
            record_type::MMAP2 => {
                if let Some(m) = body::Mmap::parse(b, true, misc, false) {
                    self.mmap2(m);
                }
            }
            _ => {}
        }
    }

    /// A sample: counted for its event, its time range, and the object it hit.
    fn sample(&mut self, misc: u16, head: body::SampleHead) {
        let (Some(id), Some(ip), Some(pid), Some(time)) =
            (head.identifier, head.ip, head.pid, head.time)
        else {
            return;
        };
        let ev = self.event_of(id);
        self.samples[ev] += 1;
        self.file_samples += 1;
        self.first_time = Some(self.first_time.map_or(time, |t| t.min(time)));
        self.last_time = self.last_time.max(time);
        match CpuMode::from_misc(misc) {
            CpuMode::Kernel => self.kernel_hit = true,
            CpuMode::User => {
                if let Some(m) = self
                    .maps
                    .get(&pid)
                    .and_then(|v| v.iter().rev().find(|m| m.start <= ip && ip < m.end))
                {
                    self.hit.insert(m.name);
                }
            }
            _ => {}
        }
    }

    /// A new process inherits its parent's mappings and name.
    fn fork(&mut self, pid: u32, ppid: u32) {
        if pid != ppid {
            let inherited = self.maps.get(&ppid).cloned().unwrap_or_default();
            self.maps.insert(pid, inherited);
            if let Some(comm) = self.comms.get(&ppid).cloned() {
                self.comms.insert(pid, comm);
            }
        }
    }

    /// A task's name; an exec drops the process's old mappings.
    fn comm(&mut self, misc: u16, c: body::Comm<'_>) {
        let (pid, tid) = (c.pid as u32, c.tid as u32);
        if misc & misc::COMM_EXEC != 0 {
            // exec replaced the process image: its old mappings are gone.
            self.maps.remove(&pid);
        }
        if pid == tid {
            self.comms.insert(pid, c.name.to_vec());
        }
    }

    /// An executable mapping replaces what it overlaps in its process.
    fn mmap2(&mut self, m: body::Mmap<'_>) {
        let pid = m.pid as u32;
        let (Some(prot), Some(flags)) = (m.prot, m.flags) else {
            return;
        };
        if prot & libc::PROT_EXEC as u32 == 0 || pid == u32::MAX {
            return;
        }
        let name = self.intern(m.filename);
        let list = self.maps.entry(pid).or_default();
        // A new mapping replaces what it overlaps.
        let end = m.start.saturating_add(m.len);
        list.retain(|x| x.end <= m.start || x.start >= end);
        list.push(Mapping {
            start: m.start,
            end,
            name,
            pgoff: m.pgoff,
            prot,
            flags,
        });
    }

    /// A new file starts: its build ids, sample times and samples are counted afresh
    /// (the mappings carry over).
    pub(super) fn start_file(&mut self) {
        self.hit.clear();
        self.kernel_hit = false;
        self.first_time = None;
        self.last_time = 0;
        self.file_samples = 0;
    }

    /// The processes seen so far (with mappings, or forked).
    pub(super) fn known_pids(&self) -> Vec<i32> {
        self.maps
            .keys()
            .filter(|&&p| p != u32::MAX && p != 0)
            .map(|&p| p as i32)
            .collect()
    }

    /// Build-id entries of every object that got samples.
    pub(super) fn build_ids(&self) -> Vec<BuildIdEntry> {
        let mut out = Vec::new();
        if self.kernel_hit {
            if let Some(id) = crate::buildid::kernel_build_id() {
                out.push(BuildIdEntry {
                    cpumode: misc::KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".into(),
                });
            }
        }
        let mut hit: Vec<u32> = self.hit.iter().copied().collect();
        hit.sort_unstable();
        for i in hit {
            let name = &self.names[i as usize];
            let id = if name == "[vdso]" {
                crate::buildid::vdso_build_id()
            } else if name.starts_with('/') && !name.ends_with(" (deleted)") {
                crate::buildid::file_build_id(name)
            } else {
                None
            };
            if let Some(id) = id {
                out.push(BuildIdEntry {
                    cpumode: misc::USER,
                    build_id: id,
                    filename: name.clone(),
                });
            }
        }
        out
    }
}
