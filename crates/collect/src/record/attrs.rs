//! Attr building: the `perf_event_attr` of each event of a recording (sample type, rate,
//! call graph, side-band flags), the default event, the group descriptions of the header,
//! and the check that a ring buffer can hold one sample.

use culprit_decode::abi::{attr_flag, perf_type, read_format, sample_type};

use super::diagnose::cycles_unavailable_reason;
use super::{
    CallGraph, RecordOptions, Target, DEFAULT_DWARF_STACK, DEFAULT_FREQUENCY, X86_64_REGS_MASK,
};
use crate::error::RecordError;
use crate::events::{EventSpec, SampleRate};
use crate::perfdata::{Attr, GroupDesc};
use crate::ring;

/// The call graph of one event: its own `call-graph=`/`stack-size=` terms over the
/// recording's `--call-graph` (perf's per-event config terms).
pub fn event_call_graph(spec: &EventSpec, global: CallGraph) -> CallGraph {
    use crate::events::EventCallGraph;
    let global_stack = match global {
        CallGraph::Dwarf(size) => Some(size),
        _ => None,
    };
    match spec.call_graph {
        Some(EventCallGraph::No) => CallGraph::None,
        Some(EventCallGraph::Fp) => CallGraph::Fp,
        Some(EventCallGraph::Dwarf) => CallGraph::Dwarf(
            spec.stack_size
                .or(global_stack)
                .unwrap_or(DEFAULT_DWARF_STACK),
        ),
        None => match (global, spec.stack_size) {
            (CallGraph::Dwarf(_), Some(size)) => CallGraph::Dwarf(size),
            _ => global,
        },
    }
}

/// Builds the attr of one event.
pub(super) fn build_attr(
    spec: &EventSpec,
    rate: SampleRate,
    opts: &RecordOptions,
    first: bool,
) -> Attr {
    let mut st = sample_type::IDENTIFIER
        | sample_type::IP
        | sample_type::TID
        | sample_type::TIME
        | sample_type::CPU
        | sample_type::PERIOD;
    // The exclusions, pinned, exclusive and precise_ip the event string chose.
    let mut flags =
        attr_flag::DISABLED | attr_flag::SAMPLE_ID_ALL | attr_flag::INHERIT | spec.modifier_flags();
    let mut regs = 0;
    let mut stack = 0;
    match event_call_graph(spec, opts.call_graph) {
        CallGraph::None => {}
        CallGraph::Fp => st |= sample_type::CALLCHAIN,
        CallGraph::Dwarf(size) => {
            // As perf: the kernel part of the chain from CALLCHAIN, the user part unwound
            // offline from the register and stack copies.
            st |= sample_type::CALLCHAIN | sample_type::REGS_USER | sample_type::STACK_USER;
            flags |= attr_flag::EXCLUDE_CALLCHAIN_USER;
            regs = X86_64_REGS_MASK;
            stack = size;
        }
    }
    if spec.attr_type == perf_type::TRACEPOINT {
        // The tracepoint's fields (decoded with its format, saved in the file).
        st |= sample_type::RAW;
    }
    if spec.pmu.as_deref().is_some_and(|p| p.starts_with("ibs")) {
        st |= sample_type::RAW;
        // The IBS PMUs reject exclude_host/exclude_guest/exclude_idle with EINVAL.
        flags &= !attr_flag::EXCLUDE_GUEST;
    }
    st |= crate::ibs::pebs_memory_sample_bits(spec);
    if spec.precise_max {
        // `:P` starts at the highest precision and falls back when the kernel refuses it
        // (`open_precise_fallback`), as perf record does.
        flags |= 3 << attr_flag::PRECISE_IP_SHIFT;
    }
    if matches!(opts.target, Target::Command(_)) {
        flags |= attr_flag::ENABLE_ON_EXEC;
    }
    if first {
        flags |= attr_flag::MMAP
            | attr_flag::MMAP2
            | attr_flag::COMM
            | attr_flag::COMM_EXEC
            | attr_flag::TASK;
        if matches!(event_call_graph(spec, opts.call_graph), CallGraph::Dwarf(_)) {
            // As perf: DWARF unwinders look up the stack and data mappings too.
            flags |= attr_flag::MMAP_DATA;
        }
    }
    let mut period = match rate {
        SampleRate::Period(p) => {
            // As perf: a fixed period is in the attr, not in each sample. The kernel's
            // software and breakpoint events sample *every* hit when PERIOD is sampled
            // without freq (perf_swevent_event), so keeping it would ignore `-c`.
            // Tracepoints keep it, as perf's do.
            if spec.attr_type != perf_type::TRACEPOINT {
                st &= !sample_type::PERIOD;
            }
            p
        }
        SampleRate::Frequency(f) => {
            flags |= attr_flag::FREQ;
            f
        }
    };
    let mut read_format = read_format::ID;
    if let Some(g) = spec.group {
        if !g.leader {
            // As perf: members are enabled with their leader.
            flags &= !(attr_flag::DISABLED | attr_flag::ENABLE_ON_EXEC);
        }
        if g.leader_sampling {
            // As perf: every event of the group reads the whole group by id, and counters
            // are not inherited (kernels before 6.11 refuse inherited PERF_SAMPLE_READ, and
            // perf before 6.12 takes deltas per id, not per thread).
            st |= sample_type::READ;
            read_format |= read_format::GROUP;
            flags &= !attr_flag::INHERIT;
            if !g.leader {
                // Members do not sample: the leader's samples read them.
                period = 0;
                flags &= !attr_flag::FREQ;
            }
        }
    }
    Attr {
        attr_type: spec.attr_type,
        config: spec.config,
        sample_period_or_freq: period,
        sample_type: st,
        read_format,
        flags,
        config1: spec.config1,
        config2: spec.config2,
        bp_type: spec.bp_type,
        sample_regs_user: regs,
        sample_stack_user: stack,
        ..Attr::default()
    }
}

/// HEADER_GROUP_DESC of the events: every group of more than one event.
pub(super) fn group_desc(specs: &[EventSpec]) -> Vec<GroupDesc> {
    let mut out: Vec<GroupDesc> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        match s.group {
            Some(g) if g.leader => out.push(GroupDesc {
                leader: i as u32,
                members: 1,
            }),
            Some(_) => {
                if let Some(last) = out.last_mut() {
                    last.members += 1;
                }
            }
            None => {}
        }
    }
    out.retain(|g| g.members > 1);
    out
}

/// The event a recording without `-e` samples: cycles if the PMU can *sample* it here (some
/// VMs count but cannot sample), else cpu-clock, as perf falls back; with the sentence that
/// says why it fell back (information: the recording works either way).
pub fn default_event(opts: &RecordOptions) -> (EventSpec, Option<String>) {
    let cycles = crate::events::default_event();
    let probe = Attr {
        flags: attr_flag::DISABLED | attr_flag::EXCLUDE_KERNEL | attr_flag::EXCLUDE_HV,
        ..build_attr(
            &cycles,
            SampleRate::Frequency(DEFAULT_FREQUENCY),
            opts,
            false,
        )
    };
    match ring::perf_event_open(&probe, 0, -1) {
        Ok(_) => (cycles, None),
        Err(e) => (
            crate::events::cpu_clock(),
            Some(format!(
                "cycles cannot be sampled here ({}): falling back to cpu-clock",
                cycles_unavailable_reason(e)
            )),
        ),
    }
}

/// The largest sample a `--call-graph dwarf,SIZE` event can write, in bytes: the fixed
/// fields, a kernel call chain of up to 127 frames, the user registers and SIZE bytes of
/// stack with their size words.
pub fn max_dwarf_sample_bytes(stack: u32) -> usize {
    const FIXED: usize = 8 * 8;
    const KERNEL_CHAIN: usize = 8 + 8 * 128;
    const REGS: usize = 8 + 8 * X86_64_REGS_MASK.count_ones() as usize;
    FIXED + KERNEL_CHAIN + REGS + 16 + stack as usize
}

/// Refuses a ring buffer too small for one sample of the call-graph's size: the kernel
/// would drop every sample (a recording of 0 samples).
pub(super) fn check_ring_holds_a_sample(opts: &RecordOptions) -> Result<(), RecordError> {
    // The largest stack copy of any event (`--call-graph dwarf,N` or an event's own
    // `call-graph=dwarf,stack-size=N`).
    let largest = opts
        .events
        .iter()
        .map(|e| event_call_graph(e, opts.call_graph))
        .chain([opts.call_graph])
        .filter_map(|cg| match cg {
            CallGraph::Dwarf(stack) => Some(stack),
            _ => None,
        })
        .max();
    let Some(stack) = largest else {
        return Ok(());
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let ring_bytes = opts.mmap_pages * page;
    let sample = max_dwarf_sample_bytes(stack);
    if ring_bytes <= sample {
        let needed = (sample / page + 1).next_power_of_two();
        return Err(RecordError::Invalid(format!(
            "-m {} ({} KiB per CPU) cannot hold one sample of --call-graph dwarf,{stack} (up to \
             {} KiB with its stack copy): the kernel would drop every sample; use -m {needed} or \
             more, or a smaller stack size",
            opts.mmap_pages,
            ring_bytes / 1024,
            sample.div_ceil(1024)
        )));
    }
    Ok(())
}
