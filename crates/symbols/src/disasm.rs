//! x86-64 disassembly of one function (iced-x86), with what the skid analysis needs per
//! instruction: control flow (kind and near target) and memory operands (whether the address
//! is computed from general registers, or is stack- or RIP-relative).
//!
//! Addresses here are SVMAs (what `objdump -d` prints). [`Symbolizer::function_code`] reads
//! a function's bytes from the ELF file the symbolizer resolved the DSO to, and
//! [`disassemble`] decodes them.
//!
//! ```
//! use culprit_symbols::disasm::{disassemble, Flow, Syntax};
//! // mov (%rdi,%rdx,8),%rdx ; jne back to it
//! let insns = disassemble(&[0x48, 0x8b, 0x14, 0xd7, 0x75, 0xfa], 0x11b8, Syntax::Att);
//! assert_eq!(insns[0].text, "mov (%rdi,%rdx,8),%rdx");
//! assert!(insns[0].mem.iter().any(|m| m.register_computed() && m.read));
//! assert_eq!(insns[1].flow, Flow::CondBranch);
//! assert_eq!(insns[1].target, Some(0x11b8));
//! ```

use culprit_decode::model::{DsoId, Profile};
use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction,
    InstructionInfoFactory, IntelFormatter, OpAccess, Register,
};

use crate::{DsoState, Symbolizer};

/// Assembly syntax of [`Insn::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// AT&T (GNU as, objdump's default).
    #[default]
    Att,
    /// Intel.
    Intel,
}

/// How control leaves an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Unconditional direct jump.
    Branch,
    /// Conditional direct jump (jcc, loop, jrcxz).
    CondBranch,
    /// Indirect jump (`jmp *%rax`).
    IndirectBranch,
    /// Direct call (returns to the next instruction).
    Call,
    /// Indirect call.
    IndirectCall,
    /// Return.
    Return,
    /// Interrupt, syscall, exception-raising (`ud2`) and transactional instructions.
    Other,
}

impl Flow {
    /// Whether the instruction ends a basic block (calls do not: they return).
    pub fn ends_block(self) -> bool {
        matches!(
            self,
            Flow::Branch | Flow::CondBranch | Flow::IndirectBranch | Flow::Return | Flow::Other
        )
    }
}

/// How a memory operand's address is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrKind {
    /// From general registers (base and/or index other than the stack and frame pointers):
    /// pointers, array elements: the usual source of cache and TLB misses.
    Register,
    /// Relative to `%rsp` or `%rbp` without an index: locals and spills.
    Stack,
    /// RIP-relative (globals) or an absolute address.
    Static,
}

/// One memory access of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOperand {
    /// How the address is formed.
    pub kind: AddrKind,
    /// The instruction reads this memory.
    pub read: bool,
    /// The instruction writes this memory.
    pub write: bool,
}

impl MemOperand {
    /// Whether the address comes from general registers (see [`AddrKind::Register`]).
    pub fn register_computed(&self) -> bool {
        self.kind == AddrKind::Register
    }
}

/// One decoded instruction.
#[derive(Debug, Clone)]
pub struct Insn {
    /// SVMA of the first byte.
    pub addr: u64,
    /// The instruction's bytes.
    pub bytes: Vec<u8>,
    /// Formatted text (mnemonic and operands; branch targets as plain addresses).
    pub text: String,
    /// Control flow kind.
    pub flow: Flow,
    /// Near branch or call target, for direct branches and calls.
    pub target: Option<u64>,
    /// Memory actually accessed (not `lea`'s or hint-`nop`'s address operand).
    pub mem: Vec<MemOperand>,
    /// The absolute address of a RIP-relative memory operand (objdump's `# 4040 <n>`).
    pub rip_target: Option<u64>,
    /// Bytes that did not decode (shown as `(bad)`).
    pub invalid: bool,
}

impl Insn {
    /// Address of the next instruction.
    pub fn end(&self) -> u64 {
        self.addr + self.bytes.len() as u64
    }
}

fn is_frame_reg(r: Register) -> bool {
    matches!(
        r,
        Register::RSP | Register::RBP | Register::ESP | Register::EBP | Register::SP | Register::BP
    )
}

fn flow_of(i: &Instruction) -> Flow {
    match i.flow_control() {
        FlowControl::Next => Flow::Next,
        FlowControl::UnconditionalBranch => Flow::Branch,
        FlowControl::ConditionalBranch => Flow::CondBranch,
        FlowControl::IndirectBranch => Flow::IndirectBranch,
        FlowControl::Call => Flow::Call,
        FlowControl::IndirectCall => Flow::IndirectCall,
        FlowControl::Return => Flow::Return,
        _ => Flow::Other,
    }
}

/// Decodes `code` (64-bit mode) as if it started at `addr`. Undecodable bytes become
/// one-byte [`Insn::invalid`] entries so that decoding resynchronizes.
pub fn disassemble(code: &[u8], addr: u64, syntax: Syntax) -> Vec<Insn> {
    let mut decoder = Decoder::with_ip(64, code, addr, DecoderOptions::NONE);
    let mut gas = GasFormatter::new();
    let mut intel = IntelFormatter::new();
    for f in [
        gas.options_mut() as &mut iced_x86::FormatterOptions,
        intel.options_mut(),
    ] {
        // objdump prints branch targets without a `0x` prefix; keep the hex prefix for
        // clarity but no leading zeros.
        f.set_branch_leading_zeros(false);
        f.set_space_after_operand_separator(false);
        f.set_uppercase_hex(false);
        // `$0x0,-0x4(%rbp)` like objdump, not `$0,-4(%rbp)`.
        f.set_small_hex_numbers_in_decimal(false);
        // `0x2d71(%rip)` like objdump; the absolute address is in `Insn::rip_target`.
        f.set_rip_relative_addresses(true);
    }
    let mut info = InstructionInfoFactory::new();
    let mut out = Vec::new();
    let mut instr = Instruction::default();
    let mut text = String::new();
    while decoder.can_decode() {
        let pos = decoder.position();
        decoder.decode_out(&mut instr);
        let len = instr.len().max(1);
        let bytes = code.get(pos..pos + len).unwrap_or(&[]).to_vec();
        if instr.is_invalid() {
            out.push(Insn {
                addr: instr.ip(),
                bytes: code.get(pos..pos + 1).unwrap_or(&[]).to_vec(),
                text: "(bad)".to_string(),
                flow: Flow::Other,
                target: None,
                mem: Vec::new(),
                rip_target: None,
                invalid: true,
            });
            // Resynchronize one byte further.
            let next = pos + 1;
            if next >= code.len() {
                break;
            }
            if decoder.set_position(next).is_err() {
                break;
            }
            decoder.set_ip(addr + next as u64);
            continue;
        }
        text.clear();
        match syntax {
            Syntax::Att => gas.format(&instr, &mut text),
            Syntax::Intel => intel.format(&instr, &mut text),
        }
        let flow = flow_of(&instr);
        let target = match flow {
            Flow::Branch | Flow::CondBranch | Flow::Call => Some(instr.near_branch_target()),
            _ => None,
        };
        let mem = info
            .info(&instr)
            .used_memory()
            .iter()
            .filter(|m| !matches!(m.access(), OpAccess::NoMemAccess | OpAccess::None))
            .map(|m| {
                let (base, index) = (m.base(), m.index());
                let rip = base == Register::RIP || base == Register::EIP;
                let kind = if rip || (base == Register::None && index == Register::None) {
                    AddrKind::Static
                } else if (index == Register::None && is_frame_reg(base))
                    || (base == Register::None && is_frame_reg(index))
                {
                    AddrKind::Stack
                } else {
                    AddrKind::Register
                };
                let (read, write) = match m.access() {
                    OpAccess::Read | OpAccess::CondRead => (true, false),
                    OpAccess::Write | OpAccess::CondWrite => (false, true),
                    OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                    _ => (false, false),
                };
                MemOperand { kind, read, write }
            })
            .collect();
        out.push(Insn {
            addr: instr.ip(),
            bytes,
            text: text.clone(),
            flow,
            target,
            mem,
            rip_target: instr
                .is_ip_rel_memory_operand()
                .then(|| instr.ip_rel_memory_address()),
            invalid: false,
        });
    }
    out
}

impl Symbolizer {
    fn ensure_prepared(&mut self, profile: &Profile, dso: DsoId) {
        if !self.dsos.contains_key(&dso) {
            let state = self.prepare(profile, dso);
            self.dsos.insert(dso, state);
        }
    }

    /// The bytes of the SVMA range `start..end` of an ELF DSO, read from the file the
    /// symbolizer resolved it to (the file on disk, or perf's build-id cache copy).
    /// JIT code's bytes come from the process's JIT dump. `None` for the kernel, unknown
    /// DSOs, JIT code without a dump, or a range outside the file's PT_LOAD segments. The
    /// range is cut at 1 MiB.
    pub fn function_code(
        &mut self,
        profile: &Profile,
        dso: DsoId,
        start: u64,
        end: u64,
    ) -> Option<Vec<u8>> {
        self.ensure_prepared(profile, dso);
        if let Some(DsoState::Jit) = self.dsos.get(&dso) {
            return self.jit_code(profile, dso, start, end);
        }
        let Some(DsoState::Elf { segments, path, .. }) = self.dsos.get(&dso) else {
            return None;
        };
        let seg = segments
            .iter()
            .find(|s| start >= s.vaddr && start - s.vaddr < s.filesz)?;
        let off = start - seg.vaddr + seg.offset;
        // Stay inside the segment's file bytes (zero-sized symbols may run to the next one).
        let seg_end = seg.vaddr + seg.filesz;
        let len = end.min(seg_end).saturating_sub(start).min(1 << 20);
        let map = crate::elf::map_file(path).ok()?;
        let from = usize::try_from(off).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        map.get(from..to).map(<[u8]>::to_vec)
    }

    /// The file offset of an SVMA in an ELF DSO (the inverse of what [`Symbolizer::resolve`]
    /// does; the address itself for the kernel, modules and JIT code), for source lookups of
    /// instructions that have no samples.
    pub fn svma_to_file_offset(&mut self, profile: &Profile, dso: DsoId, svma: u64) -> Option<u64> {
        self.ensure_prepared(profile, dso);
        match self.dsos.get(&dso) {
            Some(DsoState::Elf { segments, .. }) => segments
                .iter()
                .find(|s| svma >= s.vaddr && svma - s.vaddr < s.filesz)
                .map(|s| svma - s.vaddr + s.offset),
            Some(DsoState::Absolute { .. } | DsoState::Jit) => Some(svma),
            _ => None,
        }
    }

    /// The symbol containing an SVMA of a DSO (ELF, kernel, module or JIT code), if any; works for
    /// addresses without file bytes too (`.bss` objects).
    pub fn symbol_at_svma(
        &mut self,
        profile: &Profile,
        dso: DsoId,
        svma: u64,
    ) -> Option<crate::SymbolId> {
        self.ensure_prepared(profile, dso);
        let table = match self.dsos.get(&dso)? {
            DsoState::Elf { table, .. } | DsoState::Absolute { table } => (*table)?,
            DsoState::Jit => self.jit_table(profile, dso, -1)?,
            _ => return None,
        };
        let index = self.tables.get(table as usize)?.find(svma)?;
        Some(crate::SymbolId { table, index })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_disassemble_matrix_inner_loop_att_and_intel() {
        // From simple_classic -O0: movss (%rax),%xmm0 ; mulss %xmm1,%xmm0 ;
        // movss -0xc(%rbp),%xmm1 ; mov 0x2d71(%rip),%eax ; lea (%rdi,%rsi,4),%r8
        let code = [
            0xf3, 0x0f, 0x10, 0x00, 0xf3, 0x0f, 0x59, 0xc1, 0xf3, 0x0f, 0x10, 0x4d, 0xf4, 0x8b,
            0x05, 0x71, 0x2d, 0x00, 0x00, 0x4c, 0x8d, 0x04, 0xb7,
        ];
        let att = disassemble(&code, 0x12af, Syntax::Att);
        let texts: Vec<&str> = att.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "movss (%rax),%xmm0",
                "mulss %xmm1,%xmm0",
                "movss -0xc(%rbp),%xmm1",
                "mov 0x2d71(%rip),%eax",
                "lea (%rdi,%rsi,4),%r8"
            ]
        );
        assert_eq!(att[1].addr, 0x12b3);
        assert_eq!(att[0].mem.len(), 1);
        assert_eq!(att[0].mem[0].kind, AddrKind::Register);
        assert!(att[0].mem[0].read && !att[0].mem[0].write);
        assert!(att[1].mem.is_empty());
        assert_eq!(att[2].mem[0].kind, AddrKind::Stack);
        assert_eq!(att[3].mem[0].kind, AddrKind::Static);
        // 0x12bc + 6 + 0x2d71.
        assert_eq!(att[3].rip_target, Some(0x4033));
        assert!(att[4].mem.is_empty(), "lea does not access memory");
        let intel = disassemble(&code, 0x12af, Syntax::Intel);
        assert_eq!(intel[0].text, "movss xmm0,[rax]");
    }

    #[test]
    fn test_disassemble_branches_and_store() {
        // 11d7: je 11b9 ; 11d9: jmp 11c9 ; movss %xmm0,-0xc(%rbp) ; call 0x1000 ; ret
        let code = [
            0x74, 0xe0, 0xeb, 0xee, 0xf3, 0x0f, 0x11, 0x45, 0xf4, 0xe8, 0x00, 0x00, 0x00, 0x00,
            0xc3,
        ];
        let v = disassemble(&code, 0x11d7, Syntax::Att);
        assert_eq!(v[0].flow, Flow::CondBranch);
        assert_eq!(v[0].target, Some(0x11b9));
        assert_eq!(v[1].flow, Flow::Branch);
        assert_eq!(v[1].target, Some(0x11c9));
        assert!(v[2].mem[0].write && !v[2].mem[0].read);
        assert_eq!(v[3].flow, Flow::Call);
        assert!(!v[3].flow.ends_block());
        assert_eq!(v[4].flow, Flow::Return);
        assert!(v[4].flow.ends_block());
    }

    #[test]
    fn test_disassemble_garbage_resynchronizes() {
        // 0x06 is invalid in 64-bit mode; then a nop and a truncated instruction.
        let v = disassemble(&[0x06, 0x90, 0x48], 0x100, Syntax::Att);
        assert!(v[0].invalid);
        assert_eq!(v[1].addr, 0x101);
        assert_eq!(v[1].text, "nop");
        assert!(v.last().unwrap().invalid);
        assert!(disassemble(&[], 0, Syntax::Att).is_empty());
    }
}
