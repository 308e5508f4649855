//! A small hand-made [`StackProfile`] for the writers' unit tests: two processes, three
//! threads, a clock event and a counting event, an inlined function, a kernel frame and an
//! address without a symbol.

use culprit_analysis::stacks::{
    Function, LineFrame, Location, Mapping, MappingKind, PeriodUnit, ProfileSummary, StackEvent,
    StackNode, StackProfile, StackSample, ThreadInfo, TimedSample, NONE,
};

/// Function indices of [`profile`].
pub const MAIN: u32 = 0;
pub const WORK: u32 = 1;
pub const HELPER: u32 = 2;
pub const MEMCPY: u32 = 3;
pub const UNKNOWN: u32 = 4;
pub const SYSCALL: u32 = 5;

fn function(name: &str, mapping: u32, file: Option<&str>) -> Function {
    Function {
        name: name.to_string(),
        mapping,
        file: file.map(str::to_string),
        unknown: name == "[unknown]",
    }
}

fn location(
    mapping: u32,
    address: u64,
    file_offset: u64,
    frames: &[(u32, Option<u32>)],
) -> Location {
    Location {
        mapping,
        address,
        file_offset,
        svma: None,
        return_address: false,
        kernel: mapping == 2,
        frames: frames
            .iter()
            .map(|&(function, line)| LineFrame { function, line })
            .collect(),
    }
}

/// The test profile. Its stacks (root first):
/// - node 0: `main`
/// - node 1: `main` → `work` (with `helper` inlined into it)
/// - node 2: `main` → `memcpy`
/// - node 3: `main` → `work`/`helper` → `do_syscall` (kernel)
/// - node 4: an address of libc without a symbol
///
/// The timeline lists every sample, 1 ms apart, in a fixed interleaving.
pub fn profile() -> StackProfile {
    let mut p = StackProfile {
        summary: ProfileSummary {
            input: "test.data".to_string(),
            hostname: Some("host".to_string()),
            cmdline: Some("perf record -g ./prog".to_string()),
            time_range: Some((1_000_000, 30_000_000)),
            ..ProfileSummary::default()
        },
        ..StackProfile::default()
    };
    p.events = vec![
        StackEvent {
            name: "cpu-clock".to_string(),
            id: 0,
            unit: PeriodUnit::Nanoseconds,
            samples: 0,
            period: 0,
        },
        StackEvent {
            name: "page-faults".to_string(),
            id: 1,
            unit: PeriodUnit::Events,
            samples: 0,
            period: 0,
        },
    ];
    p.threads = vec![
        ThreadInfo {
            pid: 100,
            tid: 100,
            comm: "prog".to_string(),
        },
        ThreadInfo {
            pid: 100,
            tid: 101,
            comm: "prog".to_string(),
        },
        ThreadInfo {
            pid: 200,
            tid: 200,
            comm: "other <b>".to_string(),
        },
    ];
    p.mappings = vec![
        Mapping {
            path: "/opt/prog".to_string(),
            short_name: "prog".to_string(),
            build_id: Some("0123abcd".to_string()),
            kind: MappingKind::File,
            address_range: (0x401000, 0x401100),
        },
        Mapping {
            path: "/usr/lib/libc.so.6".to_string(),
            short_name: "libc.so.6".to_string(),
            build_id: None,
            kind: MappingKind::File,
            address_range: (0x7f00_0000_1000, 0x7f00_0000_5000),
        },
        Mapping {
            path: "[kernel.kallsyms]".to_string(),
            short_name: "[kernel.kallsyms]".to_string(),
            build_id: None,
            kind: MappingKind::Kernel,
            address_range: (0xffff_ffff_8100_0000, 0xffff_ffff_8100_0000),
        },
    ];
    p.functions = vec![
        function("main", 0, Some("main.c")),
        function("work", 0, Some("main.c")),
        function("helper", 0, Some("helper.h")),
        function("memcpy", 1, None),
        function("[unknown]", 1, None),
        function("do_syscall", 2, None),
    ];
    p.locations = vec![
        location(0, 0x401000, 0x1000, &[(MAIN, Some(10))]),
        location(0, 0x401100, 0x1100, &[(HELPER, Some(7)), (WORK, Some(20))]),
        location(1, 0x7f00_0000_1000, 0x1000, &[(MEMCPY, None)]),
        location(1, 0x7f00_0000_5000, 0x5000, &[(UNKNOWN, None)]),
        location(
            2,
            0xffff_ffff_8100_0000,
            0xffff_ffff_8100_0000,
            &[(SYSCALL, None)],
        ),
    ];
    p.nodes = vec![
        StackNode {
            parent: NONE,
            location: 0,
        },
        StackNode {
            parent: 0,
            location: 1,
        },
        StackNode {
            parent: 0,
            location: 2,
        },
        StackNode {
            parent: 1,
            location: 4,
        },
        StackNode {
            parent: NONE,
            location: 3,
        },
    ];
    add_samples(&mut p);
    p.summary.samples = p.samples.iter().map(|s| s.count).sum();
    p
}

/// The samples of [`profile`]'s nodes, aggregated and on the timeline (every sample, 1 ms
/// apart, in a fixed interleaving), with their events' totals.
fn add_samples(p: &mut StackProfile) {
    // (stack, thread, event, count, period per sample)
    let aggregated: [(u32, u32, u32, u64, u64); 6] = [
        (1, 0, 0, 5, 1_000_000),
        (2, 0, 0, 2, 1_000_000),
        (3, 1, 0, 1, 1_000_000),
        (4, 2, 0, 2, 1_000_000),
        (1, 0, 1, 3, 1),
        (3, 1, 1, 1, 4),
    ];
    let mut left: Vec<u64> = aggregated.iter().map(|a| a.3).collect();
    let mut time = 1_000_000;
    while left.iter().any(|&n| n > 0) {
        for (i, a) in aggregated.iter().enumerate() {
            if left[i] > 0 {
                left[i] -= 1;
                p.timeline.push(TimedSample {
                    time,
                    thread: a.1,
                    event: a.2,
                    stack: a.0,
                    period: a.4,
                    cpu: a.1,
                });
                time += 1_000_000;
            }
        }
    }
    for &(stack, thread, event, count, period) in &aggregated {
        p.samples.push(StackSample {
            stack,
            thread,
            event,
            count,
            period: count * period,
        });
        let e = &mut p.events[event as usize];
        e.samples += count;
        e.period += count * period;
    }
}
