//! Event names for attrs without a HEADER_EVENT_DESC name, spelled the way perf spells them
//! (`cycles`, `cpu-clock`, `L1-dcache-load-misses`, `r1c2`, `ibs_op/config=0x…/`, plus perf's
//! `:u`/`:k`/`:p` modifiers derived from the exclude bits and precise_ip).

use crate::abi::{attr_flag, perf_type};
use crate::header::Attr;

const HW: [&str; 10] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

const SW: [&str; 13] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
    "unknown-software",
];

const CACHE: [&str; 7] = [
    "L1-dcache",
    "L1-icache",
    "LLC",
    "dTLB",
    "iTLB",
    "branch",
    "node",
];
const CACHE_OP: [(&str, &str); 3] = [
    ("load", "loads"),
    ("store", "stores"),
    ("prefetch", "prefetches"),
];

/// perf's name for an attr, given the PMU names of HEADER_PMU_MAPPINGS.
pub(crate) fn event_name(attr: &Attr, pmus: &[(u32, String)]) -> String {
    // The extended hardware type (PMU type in config bits 32..64) is used by hybrid systems.
    let base = match attr.type_ {
        perf_type::HARDWARE => HW
            .get((attr.config & 0xff) as usize)
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("unknown-hardware:{:#x}", attr.config)),
        perf_type::SOFTWARE => SW
            .get(attr.config as usize)
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("unknown-software:{:#x}", attr.config)),
        perf_type::TRACEPOINT => format!("tracepoint:{:#x}", attr.config),
        perf_type::HW_CACHE => cache_name(attr.config),
        perf_type::RAW => format!("r{:x}", attr.config),
        // As perf's __evsel__bp_name: address, then the access letters.
        perf_type::BREAKPOINT => {
            let access: String = [(1, 'r'), (2, 'w'), (4, 'x')]
                .iter()
                .filter(|(bit, _)| attr.bp_type & bit != 0)
                .map(|(_, c)| *c)
                .collect();
            format!("mem:{:#x}:{access}", attr.config1)
        }
        t => {
            let pmu = pmus
                .iter()
                .find(|(ty, _)| *ty == t)
                .map(|(_, n)| n.as_str())
                .unwrap_or("unknown");
            let mut s = format!("{pmu}/config={:#x}", attr.config);
            if attr.config1 != 0 {
                s.push_str(&format!(",config1={:#x}", attr.config1));
            }
            if attr.config2 != 0 {
                s.push_str(&format!(",config2={:#x}", attr.config2));
            }
            s.push('/');
            s
        }
    };
    // Hybrid CPUs: the PMU type in config bits 32..64 of hardware/cache events.
    let ext = (attr.config >> 32) as u32;
    let base = if matches!(attr.type_, perf_type::HARDWARE | perf_type::HW_CACHE) && ext != 0 {
        let pmu = pmus
            .iter()
            .find(|(ty, _)| *ty == ext)
            .map(|(_, n)| n.as_str())
            .unwrap_or("unknown");
        let plain = Attr {
            config: attr.config & 0xffff_ffff,
            ..attr.clone()
        };
        let inner = event_name(&Attr { flags: 0, ..plain }, pmus);
        let inner = inner.split(':').next().unwrap_or(&inner).to_string();
        format!("{pmu}/{inner}/")
    } else {
        base
    };
    base + &modifiers(attr.flags)
}

fn cache_name(config: u64) -> String {
    let cache = CACHE.get((config & 0xff) as usize);
    let op = CACHE_OP.get(((config >> 8) & 0xff) as usize);
    let result = (config >> 16) & 0xff;
    match (cache, op, result) {
        (Some(c), Some((_, ops)), 0) => format!("{c}-{ops}"),
        (Some(c), Some((op, _)), 1) => format!("{c}-{op}-misses"),
        _ => format!("unknown-cache:{config:#x}"),
    }
}

/// perf's modifier suffix: `:k`/`:u`/`:h` listing the *included* contexts when any is
/// excluded, `p`s for precise_ip, and `H`/`G` when the host/guest exclusion is not the default.
fn modifiers(flags: u64) -> String {
    let bit = |b: u64| flags & b != 0;
    let (excl_user, excl_kernel, excl_hv) = (
        bit(attr_flag::EXCLUDE_USER),
        bit(attr_flag::EXCLUDE_KERNEL),
        bit(attr_flag::EXCLUDE_HV),
    );
    let precise = ((flags >> attr_flag::PRECISE_IP_SHIFT) & 3) as usize;
    let (excl_host, excl_guest) = (bit(attr_flag::EXCLUDE_HOST), bit(attr_flag::EXCLUDE_GUEST));
    let mut m = String::new();
    let mut guest_default = false;
    if excl_kernel || excl_user || excl_hv {
        if !excl_kernel {
            m.push('k');
        }
        if !excl_user {
            m.push('u');
        }
        if !excl_hv {
            m.push('h');
        }
        guest_default = true;
    }
    if precise > 0 {
        m.push_str(&"ppp"[..precise.min(3)]);
        guest_default = true;
    }
    if excl_host || excl_guest == guest_default {
        if !excl_host {
            m.push('H');
        }
        if !excl_guest {
            m.push('G');
        }
    }
    if m.is_empty() {
        m
    } else {
        format!(":{m}")
    }
}

/// The PMU name of an attr type: HEADER_PMU_MAPPINGS first, then the fixed kernel types.
pub(crate) fn pmu_name(type_: u32, pmus: &[(u32, String)]) -> Option<String> {
    if let Some((_, n)) = pmus.iter().find(|(t, _)| *t == type_) {
        return Some(n.clone());
    }
    match type_ {
        perf_type::HARDWARE | perf_type::HW_CACHE => Some("cpu".into()),
        perf_type::SOFTWARE => Some("software".into()),
        perf_type::TRACEPOINT => Some("tracepoint".into()),
        perf_type::BREAKPOINT => Some("breakpoint".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(type_: u32, config: u64, flags: u64) -> Attr {
        Attr {
            type_,
            config,
            flags,
            ..Attr::default()
        }
    }

    // exclude_guest is perf's default for plain events: no modifier then.
    const EXCL_GUEST: u64 = 1 << 20;

    #[test]
    fn test_event_name_like_perf() {
        let no = [];
        assert_eq!(event_name(&attr(0, 0, EXCL_GUEST), &no), "cycles");
        assert_eq!(event_name(&attr(1, 0, EXCL_GUEST), &no), "cpu-clock");
        assert_eq!(event_name(&attr(1, 9, 0), &no), "dummy:HG");
        assert_eq!(event_name(&attr(4, 0x1c2, EXCL_GUEST), &no), "r1c2");
        // perf record -e mem:0x404048 names it mem:0x404048:rw (perf evlist).
        let bp = Attr {
            bp_type: 3,
            config1: 0x404048,
            config2: 4,
            ..attr(5, 0, EXCL_GUEST)
        };
        assert_eq!(event_name(&bp, &no), "mem:0x404048:rw");
        // cycles:u = exclude_kernel + exclude_hv; with a modifier, exclude_guest is the
        // default and not excluding the guest is what gets spelled.
        assert_eq!(
            event_name(&attr(0, 0, (1 << 5) | (1 << 6)), &no),
            "cycles:u"
        );
        assert_eq!(
            event_name(&attr(0, 0, (1 << 5) | (1 << 6) | EXCL_GUEST), &no),
            "cycles:uH"
        );
        // cycles:pp
        assert_eq!(event_name(&attr(0, 0, 2 << 15), &no), "cycles:pp");
        assert_eq!(
            event_name(&attr(3, 0x10000, EXCL_GUEST), &no),
            "L1-dcache-load-misses"
        );
        assert_eq!(event_name(&attr(3, 0x2, EXCL_GUEST), &no), "LLC-loads");
        let hybrid = [(8u32, "cpu_core".to_string())];
        assert_eq!(
            event_name(&attr(0, (8 << 32) | 1, EXCL_GUEST), &hybrid),
            "cpu_core/instructions/"
        );
        let pmus = [(11u32, "ibs_op".to_string())];
        assert_eq!(
            event_name(&attr(11, 0x80000, EXCL_GUEST), &pmus),
            "ibs_op/config=0x80000/"
        );
    }
}
