//! AArch64 (A64) decoding with yaxpeax-arm, shaped like `objdump -d`: GNU's mnemonics and
//! aliases (`b.cc`/`b.cs`, `bti`, `uxtl`/`sxtl`, `dup`, `dc`/`ic`), PC-relative operands as
//! absolute addresses, control flow and memory operands from the decoded operands.
//!
//! yaxpeax-arm is pure Rust (no C build on any target), decodes the whole base A64 set and
//! ASIMD, and is fuzzed upstream. It does not decode SVE: those words are shown as objdump
//! shows words it cannot decode (`.inst 0x…`), marked [`Insn::invalid`], and decoding goes on
//! at the next word.

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand};

use super::{AddrKind, Flow, Insn, MemOperand};

/// Register number 31 in an address base is `sp`; 29 is the frame pointer.
const SP: u16 = 31;
const FP: u16 = 29;

/// Decodes little-endian A64 `code` as if it started at `addr` (4 bytes per instruction; a
/// trailing partial word is one invalid entry).
pub(super) fn disassemble(code: &[u8], addr: u64) -> Vec<Insn> {
    let decoder = InstDecoder::default();
    let mut out = Vec::with_capacity(code.len() / 4);
    for (i, word) in code.chunks(4).enumerate() {
        let at = addr.wrapping_add(4 * i as u64);
        let decoded = (word.len() == 4)
            .then(|| decoder.decode(&mut U8Reader::new(word)).ok())
            .flatten();
        let Some(instr) = decoded else {
            let text = match <[u8; 4]>::try_from(word) {
                Ok(w) => format!(".inst 0x{:08x}", u32::from_le_bytes(w)),
                Err(_) => "(bad)".to_string(),
            };
            out.push(Insn {
                addr: at,
                bytes: word.to_vec(),
                text,
                flow: Flow::Other,
                target: None,
                mem: Vec::new(),
                rip_target: None,
                invalid: true,
            });
            continue;
        };
        let pc_target = instr.operands.iter().find_map(|op| match op {
            Operand::PCOffset(offset) => Some(pc_relative(instr.opcode, at, *offset)),
            _ => None,
        });
        let text = objdump_text(&instr, at);
        let flow = flow_of(instr.opcode);
        let target = matches!(flow, Flow::Branch | Flow::CondBranch | Flow::Call)
            .then_some(pc_target)
            .flatten();
        out.push(Insn {
            addr: at,
            bytes: word.to_vec(),
            mem: memory_operands(&instr, mnemonic(&text)),
            rip_target: (flow == Flow::Next).then_some(pc_target).flatten(),
            text,
            flow,
            target,
            invalid: false,
        });
    }
    out
}

/// The absolute address a PC-relative operand names: `adrp` counts in pages from the
/// instruction's page, everything else in bytes from the instruction.
fn pc_relative(opcode: Opcode, at: u64, offset: i64) -> u64 {
    match opcode {
        Opcode::ADRP => (at & !0xfff).wrapping_add(offset as u64),
        _ => at.wrapping_add(offset as u64),
    }
}

fn flow_of(opcode: Opcode) -> Flow {
    use Opcode::*;
    match opcode {
        B => Flow::Branch,
        Bcc(_) | CBZ | CBNZ | TBZ | TBNZ => Flow::CondBranch,
        BL => Flow::Call,
        BR | BRAA | BRAAZ | BRAB | BRABZ => Flow::IndirectBranch,
        BLR | BLRAA | BLRAAZ | BLRAB | BLRABZ => Flow::IndirectCall,
        RET | RETAA | RETAB => Flow::Return,
        ERET | ERETAA | ERETAB | SVC | HVC | SMC | BRK | HLT | DCPS1 | DCPS2 | DCPS3 | UDF => {
            Flow::Other
        }
        _ => Flow::Next,
    }
}

fn mnemonic(text: &str) -> &str {
    text.split(' ').next().unwrap_or("")
}

/// Atomic read-modify-write memory operations: they read and write their address.
fn is_atomic_rmw(mnemonic: &str) -> bool {
    const OPS: [&str; 8] = ["add", "clr", "eor", "set", "smax", "smin", "umax", "umin"];
    mnemonic.starts_with("cas")
        || mnemonic.starts_with("swp")
        || ["ld", "st"].iter().any(|prefix| {
            mnemonic
                .strip_prefix(prefix)
                .is_some_and(|rest| OPS.iter().any(|op| rest.starts_with(op)))
        })
}

/// The memory an instruction reads or writes: its addressing operand, classified as on x86
/// (`sp`/`x29` bases without an index are stack slots, literals are static). Prefetches and
/// cache maintenance access nothing, as x86's `prefetch` in iced.
fn memory_operands(instr: &Instruction, mnemonic: &str) -> Vec<MemOperand> {
    let (read, write) = if is_atomic_rmw(mnemonic) {
        (true, true)
    } else if mnemonic.starts_with("ld") {
        (true, false)
    } else if mnemonic.starts_with("st") {
        (false, true)
    } else {
        return Vec::new();
    };
    let frame_base = |base: u16| base == SP || base == FP;
    instr
        .operands
        .iter()
        .filter_map(|op| {
            let kind = match op {
                Operand::RegPreIndex(base, ..)
                | Operand::RegPostIndex(base, _)
                | Operand::RegPostIndexReg(base, _) => {
                    if frame_base(*base) {
                        AddrKind::Stack
                    } else {
                        AddrKind::Register
                    }
                }
                Operand::RegRegOffset(..) => AddrKind::Register,
                // `ldr x0, <literal>`.
                Operand::PCOffset(_) => AddrKind::Static,
                _ => return None,
            };
            Some(MemOperand { kind, read, write })
        })
        .collect()
}

/// yaxpeax's text with GNU objdump's spelling: absolute PC-relative addresses and the aliases
/// objdump prefers where yaxpeax prints another one.
fn objdump_text(instr: &Instruction, at: u64) -> String {
    let text = absolute_pc_operands(&instr.to_string(), instr.opcode, at);
    let (mnemonic, operands) = text.split_once(' ').unwrap_or((text.as_str(), ""));
    let renamed = match mnemonic {
        // objdump names the unsigned-compare conditions cc/cs, not lo/hs.
        "b.lo" => Some("b.cc".to_string()),
        "b.hs" => Some("b.cs".to_string()),
        "hint" => return bti_alias(operands).unwrap_or(text),
        "sys" => return cache_op_alias(operands).unwrap_or(text),
        "ushll" | "ushll2" | "sshll" | "sshll2" => {
            // A shift of 0 is the extend-long alias: `ushll v0.2d, v0.2s, #0x0` is `uxtl`.
            if let Some(rest) = operands.strip_suffix(", #0x0") {
                return format!("{} {rest}", mnemonic.replacen("shll", "xtl", 1));
            }
            None
        }
        // DUP (element) into a whole vector: yaxpeax calls it `mov`, which is only the scalar
        // form's alias.
        "mov"
            if matches!(
                (&instr.operands[0], &instr.operands[1]),
                (
                    Operand::SIMDRegisterElements(..),
                    Operand::SIMDRegisterElementsLane(..)
                )
            ) =>
        {
            Some("dup".to_string())
        }
        _ => None,
    };
    match renamed {
        Some(name) if operands.is_empty() => name,
        Some(name) => format!("{name} {operands}"),
        None => text,
    }
}

/// `$+0x120` / `$-0xb0` (offsets from this instruction, or its page for `adrp`) as the
/// absolute address objdump prints.
fn absolute_pc_operands(text: &str, opcode: Opcode, at: u64) -> String {
    let Some(dollar) = text.find('$') else {
        return text.to_string();
    };
    let rest = &text[dollar + 1..];
    let (sign, digits) = match rest.as_bytes().first() {
        Some(b'-') => (-1i64, &rest[1..]),
        Some(b'+') => (1, &rest[1..]),
        _ => return text.to_string(),
    };
    let hex = digits.strip_prefix("0x").unwrap_or(digits);
    let len = hex
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    let Ok(magnitude) = u64::from_str_radix(&hex[..len], 16) else {
        return text.to_string();
    };
    let offset = (magnitude as i64).wrapping_mul(sign);
    let end = dollar + 1 + 1 + (digits.len() - hex.len()) + len;
    format!(
        "{}{:#x}{}",
        &text[..dollar],
        pc_relative(opcode, at, offset),
        &text[end..]
    )
}

/// `hint #0x22` is `bti c` (Branch Target Identification landing pads).
fn bti_alias(operands: &str) -> Option<String> {
    let name = match operands {
        "#0x20" => "bti",
        "#0x22" => "bti c",
        "#0x24" => "bti j",
        "#0x26" => "bti jc",
        _ => return None,
    };
    Some(name.to_string())
}

/// `sys #op1, c7, cm, #op2, xt` as the data and instruction cache operations objdump names.
fn cache_op_alias(operands: &str) -> Option<String> {
    let fields: Vec<&str> = operands.split(", ").collect();
    let [op1, "c7", crm, op2, reg] = fields.as_slice() else {
        return None;
    };
    let name = match (*op1, *crm, *op2) {
        ("#0x3", "c4", "#0x1") => "dc zva",
        ("#0x3", "c4", "#0x3") => "dc gva",
        ("#0x3", "c4", "#0x4") => "dc gzva",
        ("#0x0", "c6", "#0x1") => "dc ivac",
        ("#0x0", "c6", "#0x2") => "dc isw",
        ("#0x0", "c10", "#0x2") => "dc csw",
        ("#0x0", "c14", "#0x2") => "dc cisw",
        ("#0x3", "c10", "#0x1") => "dc cvac",
        ("#0x3", "c11", "#0x1") => "dc cvau",
        ("#0x3", "c12", "#0x1") => "dc cvap",
        ("#0x3", "c13", "#0x1") => "dc cvadp",
        ("#0x3", "c14", "#0x1") => "dc civac",
        ("#0x3", "c5", "#0x1") => "ic ivau",
        _ => return None,
    };
    Some(format!("{name}, {reg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words from `aarch64-linux-gnu-objdump -d` of the pointer_chase workload and glibc,
    /// with objdump's mnemonic for each.
    const OBJDUMP: [(u32, &str); 14] = [
        (0xa9bc7bfd, "stp"),
        (0x910003fd, "mov"),
        (0x7100041f, "cmp"),
        (0x54ffff23, "b.cc"),
        (0x54ffffa2, "b.cs"),
        (0x94000048, "bl"),
        (0xf00000f0, "adrp"),
        (0xd503245f, "bti"),
        (0x0f20a400, "sxtl"),
        (0x2f20a400, "uxtl"),
        (0x4e080400, "dup"),
        (0xd50b7423, "dc"),
        (0xb8200020, "ldadd"),
        (0xd65f03c0, "ret"),
    ];

    fn one(word: u32, at: u64) -> Insn {
        let mut v = disassemble(&word.to_le_bytes(), at);
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    #[test]
    fn test_mnemonics_equal_objdump() {
        for (word, expected) in OBJDUMP {
            let insn = one(word, 0x1000);
            assert_eq!(mnemonic(&insn.text), expected, "{word:08x}: {}", insn.text);
        }
        assert_eq!(one(0x0f20a400, 0).text, "sxtl v0.2d, v0.2s");
        assert_eq!(one(0x2f20a400, 0).text, "uxtl v0.2d, v0.2s");
        assert_eq!(one(0xd503245f, 0).text, "bti c");
        assert_eq!(one(0xd50b7423, 0).text, "dc zva, x3");
    }

    #[test]
    fn test_branch_targets_are_absolute() {
        // objdump: b14: 54ffff23  b.cc af0 <main+0xb0>
        let b = one(0x54ffff23, 0xb0c);
        assert_eq!(b.flow, Flow::CondBranch);
        assert_eq!(b.target, Some(0xaf0));
        assert_eq!(b.text, "b.cc 0xaf0");
        // 714: 94000048  bl 834 <call_weak_fn>
        let call = one(0x94000048, 0x714);
        assert_eq!((call.flow, call.target), (Flow::Call, Some(0x834)));
        // 5f0: f00000f0  adrp x16, 1f000
        let adrp = one(0xf00000f0, 0x5f0);
        assert_eq!(adrp.text, "adrp x16, 0x1f000");
        assert_eq!((adrp.flow, adrp.rip_target), (Flow::Next, Some(0x1f000)));
        // tbz w3, #0, 93c at 958 (backwards).
        let tbz = one(0x3607ff23, 0x958);
        assert_eq!(tbz.target, Some(0x93c));
        assert_eq!(one(0xd65f03c0, 0).flow, Flow::Return);
        // br x16; blr x1.
        assert_eq!(one(0xd61f0200, 0).flow, Flow::IndirectBranch);
        assert_eq!(one(0xd63f0020, 0).flow, Flow::IndirectCall);
    }

    #[test]
    fn test_memory_operands() {
        // stp x29, x30, [sp, #-64]!: a stack write.
        let stp = one(0xa9bc7bfd, 0);
        assert_eq!(stp.mem.len(), 1);
        assert_eq!(stp.mem[0].kind, AddrKind::Stack);
        assert!(stp.mem[0].write && !stp.mem[0].read);
        // ldr x17, [x16, #4088]: a register-computed load.
        let ldr = one(0xf947fe11, 0);
        assert!(ldr.mem[0].register_computed() && ldr.mem[0].read && !ldr.mem[0].write);
        // ldadd w0, w0, [x1]: reads and writes.
        let rmw = one(0xb8200020, 0);
        assert!(rmw.mem[0].read && rmw.mem[0].write);
        // prfm pldl1keep, [x1] and mov x29, sp access nothing.
        assert!(one(0xf9800020, 0).mem.is_empty());
        assert!(one(0x910003fd, 0).mem.is_empty());
    }

    #[test]
    fn test_undecodable_words_resynchronize() {
        // An SVE `ptrue p0.b` (not decoded), then `ret`, then 2 stray bytes.
        let mut code = 0x2518e3e0u32.to_le_bytes().to_vec();
        code.extend(0xd65f03c0u32.to_le_bytes());
        code.extend([0x1f, 0x20]);
        let v = disassemble(&code, 0x400);
        assert_eq!(v.len(), 3);
        assert!(v[0].invalid);
        assert_eq!(v[0].text, ".inst 0x2518e3e0");
        assert_eq!((v[1].addr, v[1].text.as_str()), (0x404, "ret"));
        assert!(v[2].invalid && v[2].bytes.len() == 2);
        assert!(disassemble(&[], 0).is_empty());
    }
}
