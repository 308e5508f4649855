//! Hook for DWARF unwinding of sampled user stacks (`--call-graph dwarf` recordings).
//!
//! A sample whose event recorded both PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER carries
//! the user registers and a copy of the top of the user stack, but no user call chain (perf
//! and culprit set `exclude_callchain_user`: the kernel part of the chain, if any, comes from
//! PERF_SAMPLE_CALLCHAIN). Unwinding needs the unwind tables of the mapped files, which is
//! file I/O and does not belong in this pure decoder: the caller passes an implementation of
//! [`UserStackUnwinder`] (culprit-symbols has one, built on framehop) in
//! [`crate::Reader::unwinder`]. The decoder calls it while it builds each such sample, with the
//! process's mappings *at that moment*, and appends the returned addresses to the sample's
//! call chain as user frames, resolved like the sampled IP. Report, annotate, trace and top
//! then see DWARF chains like frame-pointer chains.

use crate::cursor::Cur;
use crate::model::{CpuMode, Dso, DsoId, DsoKind, Frame, Profile};
use crate::state::{Maps, State};

/// perf's x86-64 register numbers (`enum perf_event_x86_regs`) of the registers unwinding
/// needs; [`UnwindInput::reg`] takes these.
pub mod x86_64_reg {
    /// RBP (frame pointer).
    pub const BP: u32 = 6;
    /// RSP (stack pointer).
    pub const SP: u32 = 7;
    /// RIP (instruction pointer).
    pub const IP: u32 = 8;
}

/// perf's arm64 register numbers (`enum perf_event_arm_regs`: x0..x30 are 0..30) of the
/// registers unwinding needs.
pub mod aarch64_reg {
    /// x29, the frame pointer.
    pub const FP: u32 = 29;
    /// x30, the link register (the return address of a frame that has not saved it yet).
    pub const LR: u32 = 30;
    /// SP.
    pub const SP: u32 = 31;
    /// PC.
    pub const PC: u32 = 32;
}

/// The instruction set of the sampled user code, which says how [`UnwindInput::regs`] are
/// numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnwindArch {
    /// x86-64 ([`x86_64_reg`]).
    #[default]
    X86_64,
    /// AArch64 ([`aarch64_reg`]).
    Aarch64,
}

impl UnwindArch {
    /// The architecture of a recording from its `HEADER_ARCH` (`uname -m`); x86-64 when the
    /// file does not say (perf has written HEADER_ARCH since 2.6.38).
    pub fn of_recording(arch: Option<&str>) -> UnwindArch {
        match arch {
            Some("aarch64" | "arm64") => UnwindArch::Aarch64,
            _ => UnwindArch::X86_64,
        }
    }

    /// The perf register numbers of (instruction pointer, stack pointer).
    fn ip_sp(self) -> (u32, u32) {
        match self {
            UnwindArch::X86_64 => (x86_64_reg::IP, x86_64_reg::SP),
            UnwindArch::Aarch64 => (aarch64_reg::PC, aarch64_reg::SP),
        }
    }
}

/// One executable mapping of the sampled process, as known at the sample's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapInfo<'a> {
    /// First address of the mapping.
    pub start: u64,
    /// Exclusive end.
    pub end: u64,
    /// File offset of `start` (meaningless for [`DsoKind::Anonymous`] and the vDSO).
    pub pgoff: u64,
    /// The mapped object.
    pub dso: DsoId,
    /// Its path as recorded (`/usr/lib/x86_64-linux-gnu/libc.so.6`, `[vdso]`, `//anon`).
    pub path: &'a str,
    /// Its build-id, if the file recorded one.
    pub build_id: Option<&'a [u8]>,
    /// What it is.
    pub kind: DsoKind,
}

/// What an unwinder gets for one sample.
#[derive(Clone, Copy)]
pub struct UnwindInput<'a> {
    /// Process id of the sample.
    pub pid: i32,
    /// Thread id of the sample.
    pub tid: i32,
    /// How the registers are numbered (the recording's architecture).
    pub arch: UnwindArch,
    /// `sample_regs_user` of the event: which registers [`Self::regs`] holds.
    pub regs_mask: u64,
    /// The register values in the order of the mask's bits (x86-64 perf numbering: AX=0
    /// BX=1 CX=2 DX=3 SI=4 DI=5 BP=6 SP=7 IP=8 FLAGS=9 CS=10 SS=11 … R8..R15=16..23;
    /// arm64: x0..x30=0..30 SP=31 PC=32).
    pub regs: &'a [u64],
    /// The valid user stack bytes (`dyn_size` applied), starting at the stack pointer.
    pub stack: &'a [u8],
    maps: Option<&'a Maps>,
    dsos: &'a [Dso],
}

impl<'a> UnwindInput<'a> {
    /// The value of register `n` (perf numbering), if the mask has it.
    pub fn reg(&self, n: u32) -> Option<u64> {
        if n >= 64 || self.regs_mask & (1u64 << n) == 0 {
            return None;
        }
        let index = (self.regs_mask & ((1u64 << n) - 1)).count_ones() as usize;
        self.regs.get(index).copied()
    }

    /// The process's executable mapping covering `addr` at the time of the sample.
    pub fn map_at(&self, addr: u64) -> Option<MapInfo<'a>> {
        let m = self.maps?.find(addr)?;
        let d = self.dsos.get(m.dso as usize)?;
        Some(MapInfo {
            start: m.start,
            end: m.end,
            pgoff: m.pgoff,
            dso: m.dso,
            path: &d.path,
            build_id: d.build_id.as_deref(),
            kind: d.kind,
        })
    }

    /// The DSOs of the recording so far (a JIT dump's marker MMAP is among them).
    pub fn dsos(&self) -> &'a [Dso] {
        self.dsos
    }

    /// The sampled instruction pointer (x86-64's IP, arm64's PC).
    pub fn ip(&self) -> Option<u64> {
        self.reg(self.arch.ip_sp().0)
    }

    /// The sampled stack pointer.
    pub fn sp(&self) -> Option<u64> {
        self.reg(self.arch.ip_sp().1)
    }

    /// Reads the u64 (little-endian, as x86-64 and little-endian arm64 store it) at user
    /// address `addr`, if it lies in the sampled stack copy (`stack[0]` is at the stack
    /// pointer).
    pub fn read_stack(&self, addr: u64) -> Option<u64> {
        let sp = self.sp()?;
        let off = usize::try_from(addr.checked_sub(sp)?).ok()?;
        let b = self.stack.get(off..off.checked_add(8)?)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        Some(u64::from_le_bytes(w))
    }
}

/// Unwinds sampled user stacks. Implementations must not panic on any input.
pub trait UserStackUnwinder {
    /// Pushes the user call chain of one sample to `out`, innermost first: the sampled user
    /// IP (the `IP` register), then return addresses. Pushes nothing when it cannot even
    /// start (no IP register).
    fn unwind(&mut self, input: &UnwindInput<'_>, out: &mut Vec<u64>);

    /// The warnings gathered so far, taken (a [`crate::Reader`] appends them to the profile's
    /// after the read). None by default.
    fn take_warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// The caller's unwinder: borrowed (file readers) or owned (a long-lived decoder such as
/// the stream decoder, whose reader cannot borrow; share state with `Rc<RefCell<_>>`).
enum UnwinderRef<'p> {
    Borrowed(&'p mut dyn UserStackUnwinder),
    Owned(Box<dyn UserStackUnwinder + 'p>),
}

/// The reader's unwinding state: the caller's unwinder and reused buffers.
pub(crate) struct Hook<'p> {
    unwinder: UnwinderRef<'p>,
    out: Vec<u64>,
    regs: Vec<u64>,
}

impl<'p> Hook<'p> {
    pub(crate) fn new(unwinder: &'p mut dyn UserStackUnwinder) -> Hook<'p> {
        Hook {
            unwinder: UnwinderRef::Borrowed(unwinder),
            out: Vec::new(),
            regs: Vec::new(),
        }
    }

    /// A hook owning its unwinder (for readers that live as long as their input).
    pub(crate) fn owned(unwinder: Box<dyn UserStackUnwinder + 'p>) -> Hook<'p> {
        Hook {
            unwinder: UnwinderRef::Owned(unwinder),
            out: Vec::new(),
            regs: Vec::new(),
        }
    }

    /// Unwinds one sample and appends its user frames to `p.frames` (whose chain started at
    /// `f0`). Does nothing if the chain already has user frames (a recording that did not
    /// exclude the kernel-walked user chain) or no registers were recorded.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_user_frames(
        &mut self,
        st: &State,
        p: &mut Profile,
        f0: usize,
        (pid, tid): (i32, i32),
        regs_mask: u64,
        regs: &[u8],
        stack: &[u8],
        be: bool,
    ) {
        if regs.is_empty()
            || p.frames
                .get(f0..)
                .unwrap_or(&[])
                .iter()
                .any(|f| f.cpumode == CpuMode::User)
        {
            return;
        }
        self.regs.clear();
        let mut c = Cur::new(regs, be);
        while let Some(v) = c.u64() {
            self.regs.push(v);
        }
        let user = st.user_maps(pid);
        let input = UnwindInput {
            pid,
            tid,
            arch: UnwindArch::of_recording(p.meta.arch.as_deref()),
            regs_mask,
            regs: &self.regs,
            stack,
            maps: user,
            dsos: &p.dsos,
        };
        self.out.clear();
        match &mut self.unwinder {
            UnwinderRef::Borrowed(u) => u.unwind(&input, &mut self.out),
            UnwinderRef::Owned(u) => u.unwind(&input, &mut self.out),
        }
        for &a in &self.out {
            let location = st.resolve(user, CpuMode::User, a);
            p.frames.push(Frame {
                addr: a,
                cpumode: CpuMode::User,
                location,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_reg_picks_values_in_mask_order() {
        // AX, BP, SP, IP recorded.
        let mask = 1 | (1 << 6) | (1 << 7) | (1 << 8);
        let regs = [10, 16, 0x1000, 0x400000];
        let stack: Vec<u8> = (0u64..4).flat_map(|v| (v + 100).to_le_bytes()).collect();
        let input = UnwindInput {
            pid: 1,
            tid: 1,
            arch: UnwindArch::X86_64,
            regs_mask: mask,
            regs: &regs,
            stack: &stack,
            maps: None,
            dsos: &[],
        };
        assert_eq!(input.reg(0), Some(10));
        assert_eq!(input.reg(x86_64_reg::BP), Some(16));
        assert_eq!(input.reg(x86_64_reg::SP), Some(0x1000));
        assert_eq!(input.reg(x86_64_reg::IP), Some(0x400000));
        assert_eq!(input.reg(1), None);
        assert_eq!(input.reg(64), None);
        assert_eq!(input.read_stack(0x1000), Some(100));
        assert_eq!(input.read_stack(0x1018), Some(103));
        assert_eq!(input.read_stack(0x1019), None);
        assert_eq!(input.read_stack(0xff8), None);
        assert!(input.map_at(0x400000).is_none());
        assert_eq!(input.ip(), Some(0x400000));
    }

    #[test]
    fn test_aarch64_numbering() {
        // x29, x30, sp, pc recorded (perf record --call-graph dwarf on arm64 takes all 33).
        let mask = (1u64 << 29) | (1 << 30) | (1 << 31) | (1 << 32);
        let regs = [0x7ff0, 0x400abc, 0x7f00, 0x400100];
        let stack = 7u64.to_le_bytes();
        let input = UnwindInput {
            pid: 1,
            tid: 1,
            arch: UnwindArch::of_recording(Some("aarch64")),
            regs_mask: mask,
            regs: &regs,
            stack: &stack,
            maps: None,
            dsos: &[],
        };
        assert_eq!(input.ip(), Some(0x400100));
        assert_eq!(input.sp(), Some(0x7f00));
        assert_eq!(input.reg(aarch64_reg::LR), Some(0x400abc));
        assert_eq!(input.read_stack(0x7f00), Some(7));
        assert_eq!(UnwindArch::of_recording(None), UnwindArch::X86_64);
    }
}
