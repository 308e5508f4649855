//! x86-64 decoding with iced-x86: AT&T (objdump's) or Intel syntax, control flow and memory
//! operands from iced's instruction info.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction,
    InstructionInfoFactory, IntelFormatter, OpAccess, Register,
};

use super::{AddrKind, Flow, Insn, MemOperand, Syntax};

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
pub(super) fn disassemble(code: &[u8], addr: u64, syntax: Syntax) -> Vec<Insn> {
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
