//! perf's generic event names: hardware (`PERF_TYPE_HARDWARE`), software
//! (`PERF_TYPE_SOFTWARE`) and hardware-cache (`PERF_TYPE_HW_CACHE`) events, with the ids
//! from `include/uapi/linux/perf_event.h` and perf's spellings (`tools/perf/util/evsel.c`,
//! `parse-events.c`).

/// A named generic event: its spellings (canonical first) and `config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenericEvent {
    /// Accepted names; the first is the one culprit prints.
    pub names: &'static [&'static str],
    /// `perf_event_attr.config`.
    pub config: u64,
    /// One-line description.
    pub description: &'static str,
}

/// `PERF_COUNT_HW_*` events.
pub const HARDWARE: &[GenericEvent] = &[
    GenericEvent {
        names: &["cycles", "cpu-cycles"],
        config: 0,
        description: "CPU core cycles (PERF_COUNT_HW_CPU_CYCLES)",
    },
    GenericEvent {
        names: &["instructions"],
        config: 1,
        description: "retired instructions (PERF_COUNT_HW_INSTRUCTIONS)",
    },
    GenericEvent {
        names: &["cache-references"],
        config: 2,
        description: "cache accesses, usually last level (PERF_COUNT_HW_CACHE_REFERENCES)",
    },
    GenericEvent {
        names: &["cache-misses"],
        config: 3,
        description: "cache misses, usually last level (PERF_COUNT_HW_CACHE_MISSES)",
    },
    GenericEvent {
        names: &["branches", "branch-instructions"],
        config: 4,
        description: "retired branch instructions (PERF_COUNT_HW_BRANCH_INSTRUCTIONS)",
    },
    GenericEvent {
        names: &["branch-misses"],
        config: 5,
        description: "mispredicted branches (PERF_COUNT_HW_BRANCH_MISSES)",
    },
    GenericEvent {
        names: &["bus-cycles"],
        config: 6,
        description: "bus cycles (PERF_COUNT_HW_BUS_CYCLES)",
    },
    GenericEvent {
        names: &["stalled-cycles-frontend", "idle-cycles-frontend"],
        config: 7,
        description:
            "cycles the frontend delivered nothing (PERF_COUNT_HW_STALLED_CYCLES_FRONTEND)",
    },
    GenericEvent {
        names: &["stalled-cycles-backend", "idle-cycles-backend"],
        config: 8,
        description: "cycles the backend was stalled (PERF_COUNT_HW_STALLED_CYCLES_BACKEND)",
    },
    GenericEvent {
        names: &["ref-cycles"],
        config: 9,
        description: "reference cycles, not scaled by frequency (PERF_COUNT_HW_REF_CPU_CYCLES)",
    },
];

/// `PERF_COUNT_SW_*` events.
pub const SOFTWARE: &[GenericEvent] = &[
    GenericEvent {
        names: &["cpu-clock"],
        config: 0,
        description: "per-CPU high-resolution timer (PERF_COUNT_SW_CPU_CLOCK)",
    },
    GenericEvent {
        names: &["task-clock"],
        config: 1,
        description: "per-task clock (PERF_COUNT_SW_TASK_CLOCK)",
    },
    GenericEvent {
        names: &["page-faults", "faults"],
        config: 2,
        description: "page faults (PERF_COUNT_SW_PAGE_FAULTS)",
    },
    GenericEvent {
        names: &["context-switches", "cs"],
        config: 3,
        description: "context switches (PERF_COUNT_SW_CONTEXT_SWITCHES)",
    },
    GenericEvent {
        names: &["cpu-migrations", "migrations"],
        config: 4,
        description: "migrations to another CPU (PERF_COUNT_SW_CPU_MIGRATIONS)",
    },
    GenericEvent {
        names: &["minor-faults"],
        config: 5,
        description: "minor page faults (PERF_COUNT_SW_PAGE_FAULTS_MIN)",
    },
    GenericEvent {
        names: &["major-faults"],
        config: 6,
        description: "major page faults, needing I/O (PERF_COUNT_SW_PAGE_FAULTS_MAJ)",
    },
    GenericEvent {
        names: &["alignment-faults"],
        config: 7,
        description: "alignment faults (PERF_COUNT_SW_ALIGNMENT_FAULTS)",
    },
    GenericEvent {
        names: &["emulation-faults"],
        config: 8,
        description: "instruction emulation faults (PERF_COUNT_SW_EMULATION_FAULTS)",
    },
    GenericEvent {
        names: &["dummy"],
        config: 9,
        description: "counts nothing; carries side-band records (PERF_COUNT_SW_DUMMY)",
    },
    GenericEvent {
        names: &["bpf-output"],
        config: 10,
        description: "output from BPF programs (PERF_COUNT_SW_BPF_OUTPUT)",
    },
    GenericEvent {
        names: &["cgroup-switches"],
        config: 11,
        description: "cgroup switches (PERF_COUNT_SW_CGROUP_SWITCHES)",
    },
];

/// Finds a generic event by any of its spellings (exact, then ASCII case-insensitive).
pub fn lookup(table: &'static [GenericEvent], name: &str) -> Option<&'static GenericEvent> {
    table.iter().find(|e| e.names.contains(&name)).or_else(|| {
        table
            .iter()
            .find(|e| e.names.iter().any(|n| n.eq_ignore_ascii_case(name)))
    })
}

/// A cache of `PERF_COUNT_HW_CACHE_*`: id, perf's canonical spelling, aliases, valid ops.
struct CacheKind {
    id: u64,
    names: &'static [&'static str],
    /// Bit set of valid ops (1 << op id), as perf's `evsel__is_cache_op_valid`.
    ops: u8,
}

const OP_READ: u8 = 1 << 0;
const OP_WRITE: u8 = 1 << 1;
const OP_PREFETCH: u8 = 1 << 2;

const CACHES: &[CacheKind] = &[
    CacheKind {
        id: 0,
        names: &["L1-dcache", "l1-d", "l1d", "L1-data"],
        ops: OP_READ | OP_WRITE | OP_PREFETCH,
    },
    CacheKind {
        id: 1,
        names: &["L1-icache", "l1-i", "l1i", "L1-instruction"],
        ops: OP_READ | OP_PREFETCH,
    },
    CacheKind {
        id: 2,
        names: &["LLC", "L2"],
        ops: OP_READ | OP_WRITE | OP_PREFETCH,
    },
    CacheKind {
        id: 3,
        names: &["dTLB", "d-tlb", "Data-TLB"],
        ops: OP_READ | OP_WRITE | OP_PREFETCH,
    },
    CacheKind {
        id: 4,
        names: &["iTLB", "i-tlb", "Instruction-TLB"],
        ops: OP_READ,
    },
    CacheKind {
        id: 5,
        names: &["branch", "branches", "bpu", "btb", "bpc"],
        ops: OP_READ,
    },
    CacheKind {
        id: 6,
        names: &["node"],
        ops: OP_READ | OP_WRITE | OP_PREFETCH,
    },
];

/// Op spellings: (id, singular, plural, aliases).
const OPS: &[(u64, &str, &str, &[&str])] = &[
    (0, "load", "loads", &["read"]),
    (1, "store", "stores", &["write"]),
    (
        2,
        "prefetch",
        "prefetches",
        &["speculative-read", "speculative-load"],
    ),
];

/// Result spellings: (id, aliases).
const RESULTS: &[(u64, &[&str])] = &[
    (0, &["refs", "Reference", "ops", "access", "accesses"]),
    (1, &["misses", "miss"]),
];

/// The `config` of a hardware-cache event: `cache | op << 8 | result << 16`.
pub fn cache_config(cache: u64, op: u64, result: u64) -> u64 {
    cache | op << 8 | result << 16
}

/// Parses a cache event name such as `L1-dcache-load-misses`, `dTLB-loads`, `LLC-prefetches`
/// or perf's aliases (`l1d-read-miss`); returns its config.
pub fn parse_cache(name: &str) -> Option<u64> {
    for cache in CACHES {
        for cname in cache.names {
            let Some(rest) = strip_prefix_ci(name, cname).and_then(|r| r.strip_prefix('-')) else {
                continue;
            };
            for &(op_id, singular, plural, aliases) in OPS {
                if cache.ops & (1 << op_id) == 0 {
                    continue;
                }
                for op in std::iter::once(&singular)
                    .chain(std::iter::once(&plural))
                    .chain(aliases.iter())
                {
                    let Some(after) = strip_prefix_ci(rest, op) else {
                        continue;
                    };
                    if after.is_empty() {
                        return Some(cache_config(cache.id, op_id, 0));
                    }
                    let Some(result) = after.strip_prefix('-') else {
                        continue;
                    };
                    for &(res_id, spellings) in RESULTS {
                        if spellings.iter().any(|s| s.eq_ignore_ascii_case(result)) {
                            return Some(cache_config(cache.id, op_id, res_id));
                        }
                    }
                }
            }
        }
    }
    None
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Every valid cache event in perf's canonical spelling with its config, e.g.
/// (`L1-dcache-loads`, 0x0), (`L1-dcache-load-misses`, 0x10000).
pub fn cache_events() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for cache in CACHES {
        for &(op_id, singular, plural, _) in OPS {
            if cache.ops & (1 << op_id) == 0 {
                continue;
            }
            out.push((
                format!("{}-{plural}", cache.names[0]),
                cache_config(cache.id, op_id, 0),
            ));
            out.push((
                format!("{}-{singular}-misses", cache.names[0]),
                cache_config(cache.id, op_id, 1),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_lookup_every_spelling() {
        assert_eq!(lookup(HARDWARE, "cycles").unwrap().config, 0);
        assert_eq!(lookup(HARDWARE, "cpu-cycles").unwrap().config, 0);
        assert_eq!(lookup(HARDWARE, "branch-instructions").unwrap().config, 4);
        assert_eq!(lookup(HARDWARE, "idle-cycles-frontend").unwrap().config, 7);
        assert_eq!(lookup(HARDWARE, "ref-cycles").unwrap().config, 9);
        assert_eq!(lookup(SOFTWARE, "cs").unwrap().config, 3);
        assert_eq!(lookup(SOFTWARE, "faults").unwrap().config, 2);
        assert_eq!(lookup(SOFTWARE, "migrations").unwrap().config, 4);
        assert_eq!(lookup(SOFTWARE, "dummy").unwrap().config, 9);
        assert_eq!(lookup(SOFTWARE, "CPU-Clock").unwrap().config, 0);
        assert!(lookup(SOFTWARE, "cycles").is_none());
    }

    #[test]
    fn test_parse_cache_spellings() {
        assert_eq!(parse_cache("L1-dcache-loads"), Some(0));
        assert_eq!(parse_cache("L1-dcache-load-misses"), Some(0x10000));
        assert_eq!(parse_cache("L1-dcache-stores"), Some(0x100));
        assert_eq!(parse_cache("L1-dcache-store-misses"), Some(0x10100));
        assert_eq!(parse_cache("L1-dcache-prefetches"), Some(0x200));
        assert_eq!(parse_cache("L1-dcache-prefetch-misses"), Some(0x10200));
        assert_eq!(parse_cache("L1-icache-load-misses"), Some(0x10001));
        assert_eq!(parse_cache("LLC-loads"), Some(0x2));
        assert_eq!(parse_cache("LLC-store-misses"), Some(0x10102));
        assert_eq!(parse_cache("dTLB-load-misses"), Some(0x10003));
        assert_eq!(parse_cache("iTLB-loads"), Some(0x4));
        assert_eq!(parse_cache("branch-loads"), Some(0x5));
        assert_eq!(parse_cache("branch-load-misses"), Some(0x10005));
        assert_eq!(parse_cache("node-loads"), Some(0x6));
        assert_eq!(parse_cache("node-store-misses"), Some(0x10106));
        assert_eq!(parse_cache("l1d-read-miss"), Some(0x10000));
        assert_eq!(parse_cache("L1-dcache-load-refs"), Some(0));
        // perf rejects ops a cache does not have.
        assert_eq!(parse_cache("L1-icache-stores"), None);
        assert_eq!(parse_cache("iTLB-prefetches"), None);
        assert_eq!(parse_cache("L1-dcache-loadz"), None);
        assert_eq!(parse_cache("L1-dcache"), None);
    }

    #[test]
    fn test_cache_events_all_reparse() {
        let all = cache_events();
        assert_eq!(all.len(), 2 * (3 + 2 + 3 + 3 + 1 + 1 + 3));
        for (name, config) in all {
            assert_eq!(parse_cache(&name), Some(config), "{name}");
        }
    }
}
