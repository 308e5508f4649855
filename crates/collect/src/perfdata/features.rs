//! perf.data header feature sections (`tools/perf/util/header.h`, and the layouts of
//! `tools/perf/Documentation/perf.data-file-format.txt`).

use culprit_decode::abi::{feature, misc, NAME_ALIGN};

use super::attr::{Attr, ATTR_SIZE};

/// `pid` perf writes in build-id entries of the host (`HOST_KERNEL_ID`).
pub const HOST_KERNEL_ID: i32 = -1;

/// One HEADER_BUILD_ID entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// `misc` cpumode: 1 kernel, 2 user.
    pub cpumode: u16,
    /// Build id bytes (at most 20).
    pub build_id: Vec<u8>,
    /// Path as named in MMAP records (`[kernel.kallsyms]` for the kernel).
    pub filename: String,
}

/// CPU topology (HEADER_CPU_TOPOLOGY): sibling lists and per-CPU core/socket ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuTopology {
    /// Distinct `core_siblings_list` strings.
    pub core_siblings: Vec<String>,
    /// Distinct `thread_siblings_list` strings.
    pub thread_siblings: Vec<String>,
    /// Per CPU (index = cpu number): (core_id, socket_id).
    pub cpus: Vec<(u32, u32)>,
}

/// Everything in the feature sections except EVENT_DESC, which the writer derives from the
/// attrs. `None`/empty fields are left out of the file.
#[derive(Debug, Clone, Default)]
pub struct Features {
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE (`uname -r`).
    pub osrelease: Option<String>,
    /// HEADER_VERSION (the writing tool's version).
    pub version: Option<String>,
    /// HEADER_ARCH (`uname -m`).
    pub arch: Option<String>,
    /// HEADER_NRCPUS: (available, online).
    pub nrcpus: Option<(u32, u32)>,
    /// HEADER_CPUDESC (model name).
    pub cpudesc: Option<String>,
    /// HEADER_CPUID (`GenuineIntel,6,143,8` style on x86).
    pub cpuid: Option<String>,
    /// HEADER_TOTAL_MEM in kB.
    pub total_mem_kb: Option<u64>,
    /// HEADER_CMDLINE.
    pub cmdline: Vec<String>,
    /// HEADER_CPU_TOPOLOGY.
    pub cpu_topology: Option<CpuTopology>,
    /// HEADER_BUILD_ID.
    pub build_ids: Vec<BuildIdEntry>,
    /// HEADER_PMU_MAPPINGS: (type, name).
    pub pmu_mappings: Vec<(u32, String)>,
    /// HEADER_SAMPLE_TIME: (first, last) sample time.
    pub sample_time: Option<(u64, u64)>,
    /// HEADER_CPU_PMU_CAPS: the `cpu` PMU's caps (name, value).
    pub cpu_pmu_caps: Option<Vec<(String, String)>>,
    /// HEADER_PMU_CAPS: other PMUs' caps (pmu name, caps).
    pub pmu_caps: Vec<(String, Vec<(String, String)>)>,
    /// HEADER_GROUP_DESC: the event groups of more than one event.
    pub group_desc: Vec<GroupDesc>,
    /// HEADER_TRACING_DATA: the tracepoints' formats (`crate::tracefs::Tracefs::tracing_data`);
    /// in a pipe-mode stream a TRACING_DATA record after the attrs instead.
    pub tracing_data: Option<Vec<u8>>,
    /// HEADER_COMPRESSED: the data section holds COMPRESSED records (`-z`).
    pub compressed: Option<super::compress::CompressedHeader>,
}

/// One event group of HEADER_GROUP_DESC: its events are the attrs `leader..leader + members`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDesc {
    /// Index of the leader's attr.
    pub leader: u32,
    /// Events in the group, the leader included.
    pub members: u32,
}

/// `perf_header_string`: u32 length (NUL included, padded to [`NAME_ALIGN`]) then the bytes.
pub fn push_string(out: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + len - s.len(), 0);
}

/// An event of the EVENT_DESC section.
pub(crate) struct EventDesc<'a> {
    pub attr: &'a Attr,
    pub name: &'a str,
    pub ids: &'a [u64],
}

/// Encodes the feature sections present, as (bit, bytes) in increasing bit order.
pub(crate) fn encode(f: &Features, events: &[EventDesc<'_>]) -> Vec<(u32, Vec<u8>)> {
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    let string = |s: &str| {
        let mut v = Vec::new();
        push_string(&mut v, s);
        v
    };
    if let Some(t) = &f.tracing_data {
        out.push((feature::TRACING_DATA, t.clone()));
    }
    if !f.build_ids.is_empty() {
        let mut v = Vec::new();
        for e in &f.build_ids {
            let name_len = (e.filename.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
            let size = 8 + 4 + 24 + name_len;
            v.extend_from_slice(&0u32.to_le_bytes()); // type: unused
            v.extend_from_slice(&(e.cpumode | misc::BUILD_ID_SIZE).to_le_bytes());
            v.extend_from_slice(&(size as u16).to_le_bytes());
            v.extend_from_slice(&HOST_KERNEL_ID.to_le_bytes());
            let n = e.build_id.len().min(20);
            let mut id = [0u8; 24];
            id[..n].copy_from_slice(&e.build_id[..n]);
            id[20] = n as u8;
            v.extend_from_slice(&id);
            v.extend_from_slice(e.filename.as_bytes());
            v.resize(v.len() + name_len - e.filename.len(), 0);
        }
        out.push((feature::BUILD_ID, v));
    }
    for (b, s) in [
        (feature::HOSTNAME, &f.hostname),
        (feature::OSRELEASE, &f.osrelease),
        (feature::VERSION, &f.version),
        (feature::ARCH, &f.arch),
    ] {
        if let Some(s) = s {
            out.push((b, string(s)));
        }
    }
    if let Some((avail, online)) = f.nrcpus {
        let mut v = avail.to_le_bytes().to_vec();
        v.extend_from_slice(&online.to_le_bytes());
        out.push((feature::NRCPUS, v));
    }
    if let Some(s) = &f.cpudesc {
        out.push((feature::CPUDESC, string(s)));
    }
    if let Some(s) = &f.cpuid {
        out.push((feature::CPUID, string(s)));
    }
    if let Some(m) = f.total_mem_kb {
        out.push((feature::TOTAL_MEM, m.to_le_bytes().to_vec()));
    }
    if !f.cmdline.is_empty() {
        let mut v = (f.cmdline.len() as u32).to_le_bytes().to_vec();
        for a in &f.cmdline {
            push_string(&mut v, a);
        }
        out.push((feature::CMDLINE, v));
    }
    {
        let mut v = (events.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(&(ATTR_SIZE as u32).to_le_bytes());
        for e in events {
            v.extend_from_slice(&e.attr.to_bytes());
            v.extend_from_slice(&(e.ids.len() as u32).to_le_bytes());
            push_string(&mut v, e.name);
            for id in e.ids {
                v.extend_from_slice(&id.to_le_bytes());
            }
        }
        out.push((feature::EVENT_DESC, v));
    }
    if let Some(t) = &f.cpu_topology {
        let mut v = (t.core_siblings.len() as u32).to_le_bytes().to_vec();
        for s in &t.core_siblings {
            push_string(&mut v, s);
        }
        v.extend_from_slice(&(t.thread_siblings.len() as u32).to_le_bytes());
        for s in &t.thread_siblings {
            push_string(&mut v, s);
        }
        for (core, socket) in &t.cpus {
            v.extend_from_slice(&core.to_le_bytes());
            v.extend_from_slice(&socket.to_le_bytes());
        }
        out.push((feature::CPU_TOPOLOGY, v));
    }
    if !f.pmu_mappings.is_empty() {
        let mut v = (f.pmu_mappings.len() as u32).to_le_bytes().to_vec();
        for (t, name) in &f.pmu_mappings {
            v.extend_from_slice(&t.to_le_bytes());
            push_string(&mut v, name);
        }
        out.push((feature::PMU_MAPPINGS, v));
    }
    if !f.group_desc.is_empty() {
        let mut v = (f.group_desc.len() as u32).to_le_bytes().to_vec();
        for g in &f.group_desc {
            // perf writes the group's name, or this for a group without one.
            push_string(&mut v, "{anon_group}");
            v.extend_from_slice(&g.leader.to_le_bytes());
            v.extend_from_slice(&g.members.to_le_bytes());
        }
        out.push((feature::GROUP_DESC, v));
    }
    if let Some((first, last)) = f.sample_time {
        let mut v = first.to_le_bytes().to_vec();
        v.extend_from_slice(&last.to_le_bytes());
        out.push((feature::SAMPLE_TIME, v));
    }
    if let Some(c) = &f.compressed {
        out.push((feature::COMPRESSED, c.to_bytes()));
    }
    if let Some(caps) = &f.cpu_pmu_caps {
        let mut v = (caps.len() as u32).to_le_bytes().to_vec();
        for (k, val) in caps {
            push_string(&mut v, k);
            push_string(&mut v, val);
        }
        out.push((feature::CPU_PMU_CAPS, v));
    }
    {
        // perf 6.1 always writes PMU_CAPS (an empty one when no PMU has caps).
        let mut v = (f.pmu_caps.len() as u32).to_le_bytes().to_vec();
        for (pmu, caps) in &f.pmu_caps {
            v.extend_from_slice(&(caps.len() as u32).to_le_bytes());
            for (k, val) in caps {
                push_string(&mut v, k);
                push_string(&mut v, val);
            }
            push_string(&mut v, pmu);
        }
        out.push((feature::PMU_CAPS, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_push_string_pads_to_64() {
        let mut v = Vec::new();
        push_string(&mut v, "vm");
        assert_eq!(v.len(), 4 + 64);
        assert_eq!(&v[0..4], &64u32.to_le_bytes());
        assert_eq!(&v[4..7], b"vm\0");
        let mut v = Vec::new();
        push_string(&mut v, &"x".repeat(64));
        assert_eq!(v.len(), 4 + 128);
    }

    #[test]
    fn test_build_id_entry_layout_matches_perf() {
        let f = Features {
            build_ids: vec![BuildIdEntry {
                cpumode: 2,
                build_id: (1..=20).collect(),
                filename: "/bin/x".into(),
            }],
            ..Features::default()
        };
        let secs = encode(&f, &[]);
        let (b, v) = &secs[0];
        assert_eq!(*b, feature::BUILD_ID);
        assert_eq!(v.len(), 100);
        assert_eq!(&v[4..6], &0x8002u16.to_le_bytes());
        assert_eq!(&v[6..8], &100u16.to_le_bytes());
        assert_eq!(&v[8..12], &(-1i32).to_le_bytes());
        assert_eq!(v[12], 1);
        assert_eq!(v[12 + 20], 20);
        assert_eq!(&v[36..43], b"/bin/x\0");
    }
}
