//! Disassembly of one function, x86-64 (iced-x86) or AArch64 (yaxpeax-arm), with what the
//! skid analysis needs per instruction: control flow (kind and near target) and memory
//! operands (whether the address is computed from general registers, or is stack- or
//! PC-relative). The architecture is the code's own (its ELF header), not the host's, so a
//! recording from another machine annotates on either build.
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

use culprit_decode::model::{DsoId, DsoKind, Profile};

use crate::{DsoState, Symbolizer};

mod aarch64;
mod x86;

/// The instruction set of a piece of code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arch {
    /// x86-64 (64-bit mode).
    #[default]
    X86_64,
    /// AArch64 (A64 instructions, little-endian).
    Aarch64,
}

impl Arch {
    /// The architecture of an ELF `e_machine` value; `None` for others (no disassembler).
    pub fn from_elf_machine(machine: u16) -> Option<Arch> {
        match machine {
            // EM_X86_64 and EM_AARCH64 of the ELF specification.
            62 => Some(Arch::X86_64),
            183 => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The architecture of perf's `HEADER_ARCH` string (`uname -m` of the recording host).
    pub fn from_uname(machine: &str) -> Option<Arch> {
        match machine {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// `e_machine` of an ELF image (32- or 64-bit, either byte order): it sits at offset 18 in
/// both classes, after `e_ident` (byte 5 is the byte order) and `e_type`.
fn elf_machine(image: &[u8]) -> Option<u16> {
    if image.get(..4)? != b"\x7fELF" {
        return None;
    }
    let bytes: [u8; 2] = image.get(18..20)?.try_into().ok()?;
    match image.get(5)? {
        1 => Some(u16::from_le_bytes(bytes)),
        2 => Some(u16::from_be_bytes(bytes)),
        _ => None,
    }
}

/// Decodes x86-64 `code` as if it started at `addr` (see [`disassemble_for`]).
pub fn disassemble(code: &[u8], addr: u64, syntax: Syntax) -> Vec<Insn> {
    x86::disassemble(code, addr, syntax)
}

/// Decodes `code` of `arch` as if it started at `addr`. Undecodable bytes become
/// [`Insn::invalid`] entries (one byte on x86, one 4-byte word on AArch64) so that decoding
/// resynchronizes. `syntax` chooses AT&T or Intel on x86; AArch64 has one syntax (objdump's
/// mnemonics, including its aliases).
pub fn disassemble_for(arch: Arch, code: &[u8], addr: u64, syntax: Syntax) -> Vec<Insn> {
    match arch {
        Arch::X86_64 => x86::disassemble(code, addr, syntax),
        Arch::Aarch64 => aarch64::disassemble(code, addr),
    }
}

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
        // A BPF program's JIT image, from the recording's HEADER_BPF_PROG_INFO (offsets
        // count from its first byte, as the KSYMBOL DSO's do).
        if let Some(d) = profile.dsos.get(dso as usize) {
            if d.kind == DsoKind::Ksymbol {
                let f = profile.meta.bpf_function(&d.path)?;
                let from = usize::try_from(start).ok()?;
                let to = usize::try_from(end).unwrap_or(usize::MAX).min(f.code.len());
                return f
                    .code
                    .get(from..to)
                    .filter(|c| !c.is_empty())
                    .map(<[u8]>::to_vec);
            }
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

    /// The instruction set of a DSO's code: its ELF header's machine, or for the kernel and JIT
    /// code the recording host's (`HEADER_ARCH`); x86-64 when neither is known, as before
    /// culprit read AArch64 code. `None` for an ELF file of an architecture culprit cannot
    /// disassemble.
    pub fn code_arch(&mut self, profile: &Profile, dso: DsoId) -> Option<Arch> {
        self.ensure_prepared(profile, dso);
        let host = || {
            profile
                .meta
                .arch
                .as_deref()
                .map_or(Some(Arch::X86_64), Arch::from_uname)
        };
        match self.dsos.get(&dso) {
            Some(DsoState::Elf { path, .. }) => {
                let map = crate::elf::map_file(path).ok()?;
                match elf_machine(&map) {
                    Some(machine) => Arch::from_elf_machine(machine),
                    None => host(),
                }
            }
            _ => host(),
        }
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
