//! Skid: how far sampled IPs land from the instruction that caused the event, and an
//! estimate of that instruction (the *skid-corrected IP*).
//!
//! Without IBS or PEBS the PMU interrupt is taken some instructions after the event, so the
//! sampled IP is usually *after* the culprit. The rule (docs/skid.md says why and where it
//! fails) depends on what the event counts ([`classify`]):
//! - [`EventClass::Memory`] (cache fills and misses, DTLB misses): the nearest preceding
//!   instruction of the same basic block that accesses memory through an address computed
//!   from registers; if the block has none before the sample, the same search continues
//!   backwards through the likely predecessor blocks (a loop back edge, else the
//!   fall-through one, else the only one) up to [`MAX_MEMORY_DISTANCE`] instructions; failing that, the nearest preceding
//!   access of the block (stack, RIP-relative); if there is none either, the sample stays.
//! - [`EventClass::Branch`] (mispredictions): the conditional (or indirect) branch that ends
//!   a predecessor block in the control-flow graph, searched breadth-first backwards through
//!   blocks entered by fall-through or unconditional jumps, at most [`MAX_BRANCH_DEPTH`]
//!   blocks away.
//! - [`EventClass::DataBreakpoint`] (hardware data breakpoints, `mem:ADDR:rw`/`:w`): the
//!   debug exception is a trap taken after the accessing instruction completes, so the
//!   sampled IP is the next instruction and the culprit is the one just before it, when that
//!   one accesses memory and falls through to the sample (a rep-string instruction with
//!   iterations left is its own culprit). This rule is exact, not an estimate.
//! - [`EventClass::Stays`] (cycles, instructions, clocks, execution breakpoints, everything
//!   else): not moved.
//!
//! Precise samples (`exact_ip`, IBS, PEBS: see [`is_precise_event`]) are never moved.
//! Everything here is a pure function of the disassembly ([`Insn`]) and counts.

use std::collections::BTreeMap;

use culprit_decode::abi::perf_type;
use culprit_decode::model::EventInfo;
use culprit_symbols::disasm::{Flow, Insn};
use serde::Serialize;

/// What an event counts, as far as the de-skid rule is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventClass {
    /// Data cache fills/misses and data TLB misses: the culprit is a memory access.
    Memory,
    /// Branch mispredictions: the culprit is a branch.
    Branch,
    /// Hardware data breakpoints: the trap comes right after the accessing instruction, so
    /// the culprit is the instruction before the sampled one (exact).
    DataBreakpoint,
    /// Cycles, instructions, clocks and anything else: samples stay where they are.
    Stays,
}

impl EventClass {
    /// Whether the rule's answer is exact (data breakpoints) rather than an estimate.
    pub fn exact(self) -> bool {
        self == EventClass::DataBreakpoint
    }
}

/// Classifies an event by its generic type/config, else by its name (modifiers and the
/// `pmu/…/` wrapper ignored, case-insensitive).
pub fn classify(name: &str, attr_type: u32, config: u64) -> EventClass {
    match attr_type {
        // perf_hw_id: 2 cache-references, 3 cache-misses, 4 branch-instructions,
        // 5 branch-misses.
        perf_type::HARDWARE => {
            return match config {
                2 | 3 => EventClass::Memory,
                4 | 5 => EventClass::Branch,
                _ => EventClass::Stays,
            }
        }
        // perf_hw_cache_id in the low byte: 0 L1D, 1 L1I, 2 LL, 3 DTLB, 4 ITLB, 5 BPU,
        // 6 NODE. Instruction-side caches stay: their IP is the fetched instruction.
        perf_type::HW_CACHE => {
            return match config & 0xff {
                0 | 2 | 3 | 6 => EventClass::Memory,
                5 => EventClass::Branch,
                _ => EventClass::Stays,
            }
        }
        perf_type::BREAKPOINT => return breakpoint_class(name),
        _ => {}
    }
    classify_name(name)
}

/// A breakpoint by its name (`mem:0x404048:rw`, as perf and culprit name them): an
/// execution breakpoint (`:x` only) faults *before* its instruction, whose address is the
/// sample's: it stays; data breakpoints (`r`/`w`, or no access letters: perf's default `rw`)
/// trap after the access.
fn breakpoint_class(name: &str) -> EventClass {
    let access = name
        .trim_start_matches("mem:")
        .split(':')
        .nth(1)
        .filter(|a| !a.is_empty() && a.chars().all(|c| "rwx".contains(c)))
        .unwrap_or("rw");
    if access.contains(['r', 'w']) {
        EventClass::DataBreakpoint
    } else {
        EventClass::Stays
    }
}

/// Classifies an event by name only (see [`classify`]).
pub fn classify_name(name: &str) -> EventClass {
    let mut n = name.to_ascii_lowercase();
    // `cpu/event=…,name=x/pp` or `x:ppp`: keep the part that names the event.
    if let Some(pos) = n.find("name=") {
        n = n[pos + 5..]
            .split([',', '/'])
            .next()
            .unwrap_or("")
            .to_string();
    }
    if let Some((base, _mods)) = n.split_once(':') {
        n = base.to_string();
    }
    let n = n.as_str();
    if name.starts_with("mem:") {
        return breakpoint_class(name);
    }
    let memory = [
        "cache-misses",
        "cache-references",
        "dcache",
        "llc-",
        "dtlb",
        "l1_d_tlb",
        "l2_dtlb",
        "fills",
        "refills",
        "mem_load",
        "mem-loads",
        "mem-stores",
        "node-load",
        "node-store",
    ];
    let branch = [
        "branch-misses",
        "branch-load",
        "branch-instructions",
        "branches",
        "ex_ret_brn",
        "ex_ret_msprd",
        "br_misp",
        "br_inst_retired",
    ];
    if n.contains("icache") || n.contains("itlb") || n.contains("ic_") {
        EventClass::Stays
    } else if memory.iter().any(|m| n.contains(m)) {
        EventClass::Memory
    } else if branch.iter().any(|b| n.contains(b)) {
        EventClass::Branch
    } else {
        EventClass::Stays
    }
}

/// Classifies an event of a profile.
pub fn classify_event(e: &EventInfo) -> EventClass {
    classify(&e.name, e.attr_type, e.config)
}

/// Whether every sample of an event has a precise IP whatever its `misc` says: IBS PMUs and
/// PEBS (`precise_ip > 0`). Samples flagged `exact_ip` are precise in any case.
pub fn is_precise_event(e: &EventInfo) -> bool {
    e.precise_ip > 0 || e.pmu.as_deref().is_some_and(|p| p.starts_with("ibs"))
}

/// One basic block: instructions `start..end` of the function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// First instruction index.
    pub start: usize,
    /// One past the last instruction index.
    pub end: usize,
    /// Predecessor blocks (by fall-through or a direct branch inside the function).
    pub preds: Vec<usize>,
}

/// The control-flow graph of one function.
#[derive(Debug, Clone)]
pub struct Cfg {
    /// Blocks in address order.
    pub blocks: Vec<Block>,
    /// Block index of each instruction.
    pub block_of: Vec<usize>,
    /// Per block: its nearest predecessor reached from it again (a loop back edge), if any.
    pub back_pred: Vec<Option<usize>>,
}

/// Above this many blocks, back edges are guessed by address (a predecessor at or after
/// the block) instead of by reachability, which is quadratic.
const MAX_BLOCKS_FOR_REACHABILITY: usize = 2000;

fn back_preds(blocks: &[Block]) -> Vec<Option<usize>> {
    let nb = blocks.len();
    if nb > MAX_BLOCKS_FOR_REACHABILITY {
        return (0..nb)
            .map(|b| blocks[b].preds.iter().copied().filter(|&p| p >= b).min())
            .collect();
    }
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for (b, blk) in blocks.iter().enumerate() {
        for &p in &blk.preds {
            succs[p].push(b);
        }
    }
    let mut out = vec![None; nb];
    let mut seen = vec![false; nb];
    let mut stack = Vec::new();
    for (b, slot) in out.iter_mut().enumerate() {
        if blocks[b].preds.is_empty() {
            continue;
        }
        seen.iter_mut().for_each(|x| *x = false);
        stack.clear();
        stack.extend(succs[b].iter().copied());
        while let Some(x) = stack.pop() {
            if !seen[x] {
                seen[x] = true;
                stack.extend(succs[x].iter().copied());
            }
        }
        // Nearest in address order among the predecessors reachable from b.
        *slot = blocks[b]
            .preds
            .iter()
            .copied()
            .filter(|&p| seen[p])
            .min_by_key(|&p| (p < b, p.abs_diff(b)));
    }
    out
}

/// Index of the instruction starting exactly at `addr`.
pub fn insn_at(insns: &[Insn], addr: u64) -> Option<usize> {
    insns.binary_search_by_key(&addr, |i| i.addr).ok()
}

/// Index of the instruction containing `addr` (a sample in the middle of an instruction
/// counts for it).
pub fn insn_containing(insns: &[Insn], addr: u64) -> Option<usize> {
    let pos = insns.partition_point(|i| i.addr <= addr);
    let i = pos.checked_sub(1)?;
    (addr < insns[i].end()).then_some(i)
}

/// Builds basic blocks and edges: leaders are the entry, direct branch targets inside the
/// function and instructions after block-ending ones; calls do not end blocks; indirect
/// jumps and returns have no known successors.
pub fn build_cfg(insns: &[Insn]) -> Cfg {
    let n = insns.len();
    let mut leader = vec![false; n];
    if n > 0 {
        leader[0] = true;
    }
    for (i, ins) in insns.iter().enumerate() {
        if matches!(ins.flow, Flow::Branch | Flow::CondBranch) {
            if let Some(t) = ins.target.and_then(|t| insn_at(insns, t)) {
                leader[t] = true;
            }
        }
        if ins.flow.ends_block() && i + 1 < n {
            leader[i + 1] = true;
        }
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut block_of = vec![0; n];
    for i in 0..n {
        if leader[i] {
            blocks.push(Block {
                start: i,
                end: i + 1,
                preds: Vec::new(),
            });
        }
        let b = blocks.len() - 1;
        blocks[b].end = i + 1;
        block_of[i] = b;
    }
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for (b, blk) in blocks.iter().enumerate() {
        let last = &insns[blk.end - 1];
        let falls = matches!(last.flow, Flow::Next | Flow::Call | Flow::IndirectCall)
            || last.flow == Flow::CondBranch;
        if falls && blk.end < n {
            edges.push((b, block_of[blk.end]));
        }
        if matches!(last.flow, Flow::Branch | Flow::CondBranch) {
            if let Some(t) = last.target.and_then(|t| insn_at(insns, t)) {
                edges.push((b, block_of[t]));
            }
        }
    }
    for (from, to) in edges {
        if !blocks[to].preds.contains(&from) {
            blocks[to].preds.push(from);
        }
    }
    let back_pred = back_preds(&blocks);
    Cfg {
        blocks,
        block_of,
        back_pred,
    }
}

/// How far back (in blocks) the branch rule searches.
pub const MAX_BRANCH_DEPTH: usize = 4;

/// The estimated culprit of a non-precise sample at instruction `idx`, and the distance
/// from it to the sample in instructions along the path (0: the sample is on it). `None`:
/// no plausible culprit, the sample stays.
pub fn culprit(class: EventClass, insns: &[Insn], cfg: &Cfg, idx: usize) -> Option<(usize, u32)> {
    if idx >= insns.len() {
        return None;
    }
    match class {
        EventClass::Stays => None,
        EventClass::Memory => memory_culprit(insns, cfg, idx),
        EventClass::Branch => branch_culprit(insns, cfg, idx),
        EventClass::DataBreakpoint => breakpoint_culprit(insns, idx),
    }
}

/// The instruction whose data access raised a breakpoint trap sampled at `idx`: x86 takes
/// the debug exception after the access completes, with the IP of the next instruction to
/// run. That is the following instruction when the access falls through, so the culprit is
/// the one ending exactly at the sample and accessing memory. A repeated string instruction
/// (`rep movs…`) traps after the iteration that hit, on itself while iterations remain.
/// `None` (the sample stays) when the instruction before cannot be it: the access was a
/// control transfer through memory (`ret`, `call *`, `jmp *`), whose trap IP is its target.
fn breakpoint_culprit(insns: &[Insn], idx: usize) -> Option<(usize, u32)> {
    let here = &insns[idx];
    if here.text.starts_with("rep") && !here.mem.is_empty() {
        return Some((idx, 0));
    }
    let prev = idx.checked_sub(1)?;
    let p = &insns[prev];
    (p.end() == here.addr && p.flow == Flow::Next && !p.mem.is_empty()).then_some((prev, 1))
}

/// How far back (in instructions along the path) the memory rule searches.
pub const MAX_MEMORY_DISTANCE: usize = 32;

/// The block execution most plausibly came from: a loop back edge (a predecessor reached
/// from the block again: loops run many times per entry), else the fall-through
/// predecessor (the layout-previous block, when it is a predecessor), else the only
/// predecessor.
fn likely_pred(cfg: &Cfg, b: usize) -> Option<usize> {
    let preds = &cfg.blocks[b].preds;
    if let Some(back) = cfg.back_pred[b] {
        return Some(back);
    }
    if b > 0 && preds.contains(&(b - 1)) && cfg.blocks[b - 1].end == cfg.blocks[b].start {
        return Some(b - 1);
    }
    match preds.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

fn memory_culprit(insns: &[Insn], cfg: &Cfg, idx: usize) -> Option<(usize, u32)> {
    let b0 = cfg.block_of[idx];
    let start = cfg.blocks[b0].start;
    // The sampled instruction itself is not a candidate: the interrupt is taken after
    // the instruction that caused the event retired or completed.
    let reg = |i: usize| insns[i].mem.iter().any(|m| m.register_computed());
    if let Some(i) = (start..idx).rev().find(|&i| reg(i)) {
        return Some((i, (idx - i) as u32));
    }
    // No register-addressed access before the sample in its block: the skid may have
    // crossed a block boundary; follow the likely predecessor blocks back.
    let mut dist = idx - start;
    let mut b = b0;
    let mut seen = vec![false; cfg.blocks.len()];
    seen[b0] = true;
    while let Some(p) = likely_pred(cfg, b) {
        if seen[p] {
            // A loop back to the sample's own block: its instructions after the sample
            // are the path too.
            if p == b0 {
                let blk = &cfg.blocks[p];
                if let Some(i) = (idx..blk.end).rev().find(|&i| reg(i)) {
                    let d = dist + (blk.end - i);
                    if d <= MAX_MEMORY_DISTANCE {
                        return Some((i, d as u32));
                    }
                }
            }
            break;
        }
        seen[p] = true;
        let blk = &cfg.blocks[p];
        if let Some(i) = (blk.start..blk.end).rev().find(|&i| reg(i)) {
            let d = dist + (blk.end - i);
            if d <= MAX_MEMORY_DISTANCE {
                return Some((i, d as u32));
            }
            break;
        }
        dist += blk.end - blk.start;
        if dist > MAX_MEMORY_DISTANCE {
            break;
        }
        b = p;
    }
    // Else the nearest stack or RIP-relative access of the block.
    let found = (start..idx).rev().find(|&i| !insns[i].mem.is_empty())?;
    Some((found, (idx - found) as u32))
}

fn is_branch_culprit(ins: &Insn) -> bool {
    matches!(ins.flow, Flow::CondBranch | Flow::IndirectBranch)
}

fn branch_culprit(insns: &[Insn], cfg: &Cfg, idx: usize) -> Option<(usize, u32)> {
    let b0 = cfg.block_of[idx];
    let first = cfg.blocks[b0].start;
    // Distance from the end of a block to the sample: instructions of the blocks between.
    let mut frontier: Vec<(usize, u32)> = vec![(b0, (idx - first) as u32 + 1)];
    let mut seen = vec![false; cfg.blocks.len()];
    seen[b0] = true;
    for _ in 0..MAX_BRANCH_DEPTH {
        let mut found: Vec<(usize, u32)> = Vec::new();
        let mut next: Vec<(usize, u32)> = Vec::new();
        for &(b, dist) in &frontier {
            for &p in &cfg.blocks[b].preds {
                let last = cfg.blocks[p].end - 1;
                if is_branch_culprit(&insns[last]) {
                    if !found.iter().any(|&(i, _)| i == last) {
                        found.push((last, dist));
                    }
                } else if !seen[p] {
                    seen[p] = true;
                    let len = (cfg.blocks[p].end - cfg.blocks[p].start) as u32;
                    next.push((p, dist + len));
                }
            }
        }
        if !found.is_empty() {
            // Several candidates at the same depth: the closest one before the sample in
            // address order, else the first after it (deterministic; docs/skid.md).
            let pick = found
                .iter()
                .filter(|&&(i, _)| i < idx)
                .max_by_key(|&&(i, _)| i)
                .or_else(|| found.iter().min_by_key(|&&(i, _)| i))
                .copied();
            return pick;
        }
        if next.is_empty() {
            return None;
        }
        frontier = next;
    }
    None
}

/// How many instructions hold 90% of the samples (0 when there are none).
pub fn spread90(counts: &[u64]) -> usize {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let mut sorted: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut acc = 0u64;
    for (i, c) in sorted.iter().enumerate() {
        acc += c;
        // acc / total >= 0.9, in integers.
        if acc * 10 >= total * 9 {
            return i + 1;
        }
    }
    sorted.len()
}

/// Skid figures of one event in one function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkidStats {
    /// The event's class (which rule applies).
    pub class: EventClass,
    /// Samples of the event in the function.
    pub samples: u64,
    /// Of which precise (never moved).
    pub precise: u64,
    /// Instructions holding 90% of the raw samples.
    pub spread90: usize,
    /// Instructions holding 90% of the de-skidded samples.
    pub spread90_deskid: usize,
    /// Non-precise samples moved to another instruction.
    pub moved: u64,
    /// Non-precise samples for which the rule found no culprit (they stay).
    pub no_culprit: u64,
    /// Distance (instructions along the path) from the estimated culprit to the sampled
    /// instruction → samples; for non-precise samples of memory and branch events that
    /// have a culprit.
    pub distance: BTreeMap<u32, u64>,
}

/// Raw and de-skidded counts of one event over a function's instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct Deskidded {
    /// Per instruction: samples after re-attribution.
    pub counts: Vec<u64>,
    /// The figures.
    pub stats: SkidStats,
}

/// Re-attributes non-precise samples (`imprecise[i]` samples sampled at instruction `i`)
/// to their culprits; precise samples (`precise[i]`) stay. Both slices have one entry per
/// instruction of `insns`.
pub fn deskid(
    class: EventClass,
    insns: &[Insn],
    cfg: &Cfg,
    imprecise: &[u64],
    precise: &[u64],
) -> Deskidded {
    let n = insns.len();
    let mut counts: Vec<u64> = (0..n)
        .map(|i| precise.get(i).copied().unwrap_or(0))
        .collect();
    let mut stats = SkidStats {
        class,
        samples: 0,
        precise: precise.iter().sum(),
        spread90: 0,
        spread90_deskid: 0,
        moved: 0,
        no_culprit: 0,
        distance: BTreeMap::new(),
    };
    for (i, &c) in imprecise.iter().enumerate().take(n) {
        if c == 0 {
            continue;
        }
        match culprit(class, insns, cfg, i) {
            Some((to, dist)) => {
                counts[to] += c;
                *stats.distance.entry(dist).or_insert(0) += c;
                if to != i {
                    stats.moved += c;
                }
            }
            None => {
                counts[i] += c;
                if class != EventClass::Stays {
                    stats.no_culprit += c;
                }
            }
        }
    }
    let raw: Vec<u64> = (0..n)
        .map(|i| imprecise.get(i).copied().unwrap_or(0) + precise.get(i).copied().unwrap_or(0))
        .collect();
    stats.samples = raw.iter().sum();
    stats.spread90 = spread90(&raw);
    stats.spread90_deskid = spread90(&counts);
    Deskidded { counts, stats }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_symbols::disasm::{disassemble, Syntax};

    /// count_odd() of workloads/branchy.c at -O1 (gcc 12), bytes from objdump.
    const COUNT_ODD: [u8; 82] = [
        0x48, 0x83, 0x05, 0xaf, 0x2e, 0x00, 0x00, 0x01, // 1199 addq $0x1,0x2eaf(%rip)
        0x48, 0x85, 0xf6, // 11a1 test %rsi,%rsi
        0x74, 0x3d, // 11a4 je 11e3
        0x48, 0x89, 0xf9, // 11a6 mov %rdi,%rcx
        0x4c, 0x8d, 0x04, 0xb7, // 11a9 lea (%rdi,%rsi,4),%r8
        0xbf, 0x00, 0x00, 0x00, 0x00, // 11ad mov $0,%edi
        0xbe, 0x00, 0x00, 0x00, 0x00, // 11b2 mov $0,%esi
        0xeb, 0x19, // 11b7 jmp 11d2
        0x48, 0x89, 0xf8, // 11b9 mov %rdi,%rax
        0x48, 0xc1, 0xe0, 0x05, // 11bc shl $5,%rax
        0x48, 0x29, 0xf8, // 11c0 sub %rdi,%rax
        0x89, 0xd2, // 11c3 mov %edx,%edx
        0x48, 0x8d, 0x3c, 0x02, // 11c5 lea (%rdx,%rax,1),%rdi
        0x48, 0x83, 0xc1, 0x04, // 11c9 add $4,%rcx
        0x4c, 0x39, 0xc1, // 11cd cmp %r8,%rcx
        0x74, 0x14, // 11d0 je 11e6
        0x8b, 0x11, // 11d2 mov (%rcx),%edx
        0xf6, 0xc2, 0x01, // 11d4 test $1,%dl
        0x74, 0xe0, // 11d7 je 11b9
        0xc1, 0xea, 0x03, // 11d9 shr $3,%edx
        0x89, 0xd2, // 11dc mov %edx,%edx
        0x48, 0x01, 0xd6, // 11de add %rdx,%rsi
        0xeb, 0xe6, // 11e1 jmp 11c9
        0x48, 0x89, 0xf7, // 11e3 mov %rsi,%rdi
        0x48, 0x8d, 0x04, 0x3e, // 11e6 lea (%rsi,%rdi,1),%rax
        0xc3, // 11ea ret
    ];

    fn at(insns: &[Insn], a: u64) -> usize {
        insn_at(insns, a).unwrap()
    }

    #[test]
    fn test_classify_names_and_generic_ids() {
        assert_eq!(classify("cycles", 0, 0), EventClass::Stays);
        assert_eq!(classify("instructions", 0, 1), EventClass::Stays);
        assert_eq!(classify("cache-misses", 0, 3), EventClass::Memory);
        assert_eq!(classify("branch-misses", 0, 5), EventClass::Branch);
        // L1-dcache-load-misses: L1D | READ<<8 | MISS<<16.
        assert_eq!(
            classify("L1-dcache-load-misses", 3, 0x10000),
            EventClass::Memory
        );
        assert_eq!(classify("dTLB-load-misses", 3, 0x10003), EventClass::Memory);
        assert_eq!(
            classify("branch-load-misses", 3, 0x10005),
            EventClass::Branch
        );
        assert_eq!(
            classify("L1-icache-load-misses", 3, 0x10001),
            EventClass::Stays
        );
        for m in [
            "ls_any_fills_from_sys.all",
            "ls_dmnd_fills_from_sys.dram_io_all:u",
            "ls_l1_d_tlb_miss.all",
            "LLC-load-misses",
            "cpu/event=0x44,umask=0xff,name=ls_any_fills_from_sys.all/",
        ] {
            assert_eq!(classify(m, 4, 0x44), EventClass::Memory, "{m}");
        }
        for b in ["ex_ret_brn_misp", "ex_ret_brn_misp:pp"] {
            assert_eq!(classify(b, 4, 0xc3), EventClass::Branch, "{b}");
        }
        for s in [
            "cpu-clock",
            "task-clock",
            "ls_not_halted_cyc",
            "ex_ret_instr",
            "ic_tag_hit_miss",
        ] {
            assert_eq!(classify(s, 1, 0), EventClass::Stays, "{s}");
        }
    }

    #[test]
    fn test_build_cfg_count_odd() {
        let insns = disassemble(&COUNT_ODD, 0x1199, Syntax::Att);
        assert_eq!(insns.len(), 26);
        let cfg = build_cfg(&insns);
        let starts: Vec<u64> = cfg.blocks.iter().map(|b| insns[b.start].addr).collect();
        assert_eq!(
            starts,
            [0x1199, 0x11a6, 0x11b9, 0x11c9, 0x11d2, 0x11d9, 0x11e3, 0x11e6]
        );
        let preds = |a: u64| -> Vec<u64> {
            let mut v: Vec<u64> = cfg.blocks[cfg.block_of[at(&insns, a)]]
                .preds
                .iter()
                .map(|&p| insns[cfg.blocks[p].start].addr)
                .collect();
            v.sort();
            v
        };
        assert_eq!(preds(0x11b9), [0x11d2]); // taken edge of je 11b9
        assert_eq!(preds(0x11d9), [0x11d2]); // its fall-through
        assert_eq!(preds(0x11c9), [0x11b9, 0x11d9]);
        assert_eq!(preds(0x11d2), [0x11a6, 0x11c9]);
        assert_eq!(preds(0x11e6), [0x11c9, 0x11e3]);
    }

    #[test]
    fn test_branch_culprit_is_the_data_dependent_branch_not_the_previous_in_address() {
        let insns = disassemble(&COUNT_ODD, 0x1199, Syntax::Att);
        let cfg = build_cfg(&insns);
        let c = |a: u64| culprit(EventClass::Branch, &insns, &cfg, at(&insns, a));
        let je = at(&insns, 0x11d7);
        // Both targets of `je 11b9` and a few instructions into them.
        assert_eq!(c(0x11b9), Some((je, 1)));
        assert_eq!(c(0x11bc), Some((je, 2)));
        assert_eq!(c(0x11d9), Some((je, 1)));
        assert_eq!(c(0x11de), Some((je, 3)));
        // 11c9 is reached through fall-through (even) and `jmp 11c9` (odd): two blocks
        // further back, still the same branch. The previous branch in address order
        // (je 11a4) is not it.
        assert_eq!(c(0x11c9).map(|x| x.0), Some(je));
        // The loop's exit branch for what follows it.
        assert_eq!(c(0x11e6).map(|x| x.0), Some(at(&insns, 0x11d0)));
        // The entry block has no predecessor: stays.
        assert_eq!(c(0x11a1), None);
        assert_eq!(culprit(EventClass::Stays, &insns, &cfg, 5), None);
    }

    #[test]
    fn test_memory_culprit_prefers_register_addresses_in_the_block() {
        // multiply_matrices' inner block at -O0, from 0x128e (see simple_classic).
        let code = [
            0x48, 0x8b, 0x15, 0xe3, 0x2d, 0x00, 0x00, // 128e mov 0x2de3(%rip),%rdx
            0x8b, 0x05, 0xa5, 0x2d, 0x00, 0x00, // 1295 mov 0x2da5(%rip),%eax
            0x0f, 0xaf, 0x45, 0xf0, // 129b imul -0x10(%rbp),%eax
            0x89, 0xc1, // 129f mov %eax,%ecx
            0x8b, 0x45, 0xf8, // 12a1 mov -0x8(%rbp),%eax
            0x01, 0xc8, // 12a4 add %ecx,%eax
            0x48, 0x98, // 12a6 cltq
            0x48, 0xc1, 0xe0, 0x02, // 12a8 shl $2,%rax
            0x48, 0x01, 0xd0, // 12ac add %rdx,%rax
            0xf3, 0x0f, 0x10, 0x00, // 12af movss (%rax),%xmm0
            0xf3, 0x0f, 0x59, 0xc1, // 12b3 mulss %xmm1,%xmm0
            0xf3, 0x0f, 0x10, 0x4d, 0xf4, // 12b7 movss -0xc(%rbp),%xmm1
            0xf3, 0x0f, 0x58, 0xc1, // 12bc addss %xmm1,%xmm0
            0xf3, 0x0f, 0x11, 0x45, 0xf4, // 12c0 movss %xmm0,-0xc(%rbp)
            0x83, 0x45, 0xf0, 0x01, // 12c5 addl $1,-0x10(%rbp)
        ];
        let insns = disassemble(&code, 0x128e, Syntax::Att);
        let cfg = build_cfg(&insns);
        let load = at(&insns, 0x12af);
        let c = |a: u64| culprit(EventClass::Memory, &insns, &cfg, at(&insns, a));
        assert_eq!(c(0x12b3), Some((load, 1)));
        assert_eq!(c(0x12bc), Some((load, 3)), "skips the stack load at 12b7");
        assert_eq!(c(0x12c0), Some((load, 4)));
        assert_eq!(c(0x12c5), Some((load, 5)));
        // Before the register load only stack/RIP-relative accesses: the nearest one.
        assert_eq!(c(0x12a4), Some((at(&insns, 0x12a1), 1)));
        // Nothing before the first instruction of the block.
        assert_eq!(c(0x128e), None);

        // The measured skid: 44% addss, 30% store, 9% mulss, 0% on the load.
        let mut imprecise = vec![0u64; insns.len()];
        imprecise[at(&insns, 0x12bc)] = 44;
        imprecise[at(&insns, 0x12c0)] = 30;
        imprecise[at(&insns, 0x12b3)] = 9;
        imprecise[at(&insns, 0x12b7)] = 10;
        imprecise[at(&insns, 0x1295)] = 7;
        let mut precise = vec![0u64; insns.len()];
        precise[at(&insns, 0x12c5)] = 3;
        let d = deskid(EventClass::Memory, &insns, &cfg, &imprecise, &precise);
        assert_eq!(d.counts[load], 93);
        assert_eq!(d.counts[at(&insns, 0x128e)], 7);
        assert_eq!(d.counts[at(&insns, 0x12c5)], 3, "precise samples stay");
        assert_eq!(d.counts.iter().sum::<u64>(), 103);
        assert_eq!(d.stats.samples, 103);
        assert_eq!(d.stats.precise, 3);
        assert_eq!(d.stats.moved, 100);
        assert_eq!(d.stats.spread90, 4);
        assert_eq!(d.stats.spread90_deskid, 1);
        assert_eq!(d.stats.distance.get(&3), Some(&44));
        assert_eq!(d.stats.distance.get(&1), Some(&(9 + 7)));
    }

    #[test]
    fn test_memory_culprit_follows_likely_predecessors() {
        let insns = disassemble(&COUNT_ODD, 0x1199, Syntax::Att);
        let cfg = build_cfg(&insns);
        let c = |a: u64| culprit(EventClass::Memory, &insns, &cfg, at(&insns, a));
        let load = at(&insns, 0x11d2);
        // In the load's own block.
        assert_eq!(c(0x11d7), Some((load, 2)));
        // Fall-through successor (odd path) and the only-predecessor taken path.
        assert_eq!(c(0x11d9), Some((load, 3)));
        assert_eq!(c(0x11bc), Some((load, 4)));
        // Two blocks away: 11c9 <- 11d9 (its loop back edge, the odd path) <- 11d2.
        assert_eq!(c(0x11cd), Some((load, 3 + 4 + 1)));
        // The load's own block reached around the loop: one iteration.
        assert_eq!(c(0x11d2), Some((load, 3 + 4 + 3)));
        // The entry block: only a RIP-relative access before, no predecessor.
        assert_eq!(c(0x11a4), Some((0, 2)));
        assert_eq!(c(0x1199), None);

        // A one-block loop (pointer_chase's chase at -O1): a sample at the loop head goes
        // around the back edge, not to the entry path.
        let chase = [
            0x48, 0x85, 0xf6, // 11a9 test %rsi,%rsi
            0x74, 0x1b, // 11ac je 11c9
            0xb8, 0x00, 0x00, 0x00, 0x00, // 11ae mov $0,%eax
            0xba, 0x00, 0x00, 0x00, 0x00, // 11b3 mov $0,%edx
            0x48, 0x8b, 0x14, 0xd7, // 11b8 mov (%rdi,%rdx,8),%rdx
            0x48, 0x83, 0xc0, 0x01, // 11bc add $1,%rax
            0x48, 0x39, 0xc6, // 11c0 cmp %rax,%rsi
            0x75, 0xf3, // 11c3 jne 11b8
            0x48, 0x89, 0xd0, // 11c5 mov %rdx,%rax
            0xc3, // 11c8 ret
            0x48, 0x89, 0xf2, // 11c9 mov %rsi,%rdx
            0xeb, 0xf7, // 11cc jmp 11c5
        ];
        let insns = disassemble(&chase, 0x11a9, Syntax::Att);
        let cfg = build_cfg(&insns);
        let c = |a: u64| culprit(EventClass::Memory, &insns, &cfg, at(&insns, a));
        let load = at(&insns, 0x11b8);
        assert_eq!(c(0x11b8), Some((load, 4)));
        assert_eq!(c(0x11c3), Some((load, 3)));
        // After the loop: 11c5 has two predecessors, the loop's fall-through and the
        // `jmp 11c5` of the early exit placed after it, which is not a loop: the loop it is.
        assert_eq!(c(0x11c8), Some((load, 1 + 3 + 1)));
        assert_eq!(cfg.back_pred[cfg.block_of[at(&insns, 0x11c5)]], None);
        assert_eq!(cfg.back_pred[cfg.block_of[load]], Some(cfg.block_of[load]));
    }

    #[test]
    fn test_breakpoints_classify_by_access() {
        let bp = perf_type::BREAKPOINT;
        assert_eq!(
            classify("mem:0x404048:rw", bp, 0),
            EventClass::DataBreakpoint
        );
        assert_eq!(
            classify("mem:0x404048:w", bp, 0),
            EventClass::DataBreakpoint
        );
        // perf's default access is rw; a name without letters is a data breakpoint.
        assert_eq!(classify("mem:0x404048", bp, 0), EventClass::DataBreakpoint);
        // Execution breakpoints fault before the instruction: nothing to move.
        assert_eq!(classify("mem:0x401126:x", bp, 0), EventClass::Stays);
        assert_eq!(classify_name("mem:0x10:rw:u"), EventClass::DataBreakpoint);
        assert!(EventClass::DataBreakpoint.exact() && !EventClass::Memory.exact());
    }

    #[test]
    fn test_breakpoint_culprit_is_the_access_just_before() {
        // pointer_chase's chase at -O1 (as in the memory-rule test above).
        let chase = [
            0x48, 0x85, 0xf6, // 11a9 test %rsi,%rsi
            0x74, 0x1b, // 11ac je 11c9
            0xb8, 0x00, 0x00, 0x00, 0x00, // 11ae mov $0,%eax
            0xba, 0x00, 0x00, 0x00, 0x00, // 11b3 mov $0,%edx
            0x48, 0x8b, 0x14, 0xd7, // 11b8 mov (%rdi,%rdx,8),%rdx
            0x48, 0x83, 0xc0, 0x01, // 11bc add $1,%rax
            0x48, 0x39, 0xc6, // 11c0 cmp %rax,%rsi
            0x75, 0xf3, // 11c3 jne 11b8
            0x48, 0x89, 0xd0, // 11c5 mov %rdx,%rax
            0xc3, // 11c8 ret
        ];
        let insns = disassemble(&chase, 0x11a9, Syntax::Att);
        let cfg = build_cfg(&insns);
        let c = |a: u64| culprit(EventClass::DataBreakpoint, &insns, &cfg, at(&insns, a));
        let load = at(&insns, 0x11b8);
        // The trap IP of the load is the add after it: one instruction back, exactly.
        assert_eq!(c(0x11bc), Some((load, 1)));
        // Nothing before accesses memory, or the instruction before is a branch (the
        // sample is its target, and a jcc accesses no memory): the sample stays.
        assert_eq!(c(0x11b8), None);
        assert_eq!(c(0x11c5), None);
        assert_eq!(c(0x11a9), None);
        let mut raw = vec![0u64; insns.len()];
        raw[at(&insns, 0x11bc)] = 382;
        raw[at(&insns, 0x11c5)] = 1;
        let d = deskid(
            EventClass::DataBreakpoint,
            &insns,
            &cfg,
            &raw,
            &vec![0; insns.len()],
        );
        assert_eq!(d.counts[load], 382);
        assert_eq!(d.counts[at(&insns, 0x11c5)], 1);
        assert_eq!((d.stats.moved, d.stats.no_culprit), (382, 1));
        assert_eq!(d.stats.distance.get(&1), Some(&382));

        // A repeated string instruction traps on itself while iterations remain.
        let copy = [
            0x48, 0x89, 0xf8, // 1000 mov %rdi,%rax
            0xf3, 0xa4, // 1003 rep movsb (%rsi),(%rdi)
            0xc3, // 1005 ret
        ];
        let insns = disassemble(&copy, 0x1000, Syntax::Att);
        let cfg = build_cfg(&insns);
        let c = |a: u64| culprit(EventClass::DataBreakpoint, &insns, &cfg, at(&insns, a));
        assert_eq!(c(0x1003), Some((1, 0)));
        assert_eq!(c(0x1005), Some((1, 1)));
    }

    #[test]
    fn test_spread90() {
        assert_eq!(spread90(&[]), 0);
        assert_eq!(spread90(&[0, 0]), 0);
        assert_eq!(spread90(&[10]), 1);
        assert_eq!(spread90(&[5, 4, 1]), 2);
        assert_eq!(spread90(&[1; 10]), 9);
    }

    #[test]
    fn test_deskid_stays_class_keeps_counts() {
        let insns = disassemble(&COUNT_ODD, 0x1199, Syntax::Att);
        let cfg = build_cfg(&insns);
        let raw: Vec<u64> = (0..insns.len() as u64).collect();
        let d = deskid(EventClass::Stays, &insns, &cfg, &raw, &vec![0; insns.len()]);
        assert_eq!(d.counts, raw);
        assert_eq!(d.stats.moved, 0);
        assert_eq!(d.stats.no_culprit, 0);
    }
}
