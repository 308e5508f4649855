//! Lock contention (`culprit lock contention`, perf's `perf lock contention`):
//!
//! - **Kernel locks** from `lock:contention_begin`/`lock:contention_end` with call chains,
//!   with perf 6.1's tracepoint-mode rules (`tools/perf/builtin-lock.c`): a row per call
//!   stack (its frames after the first [`LockOptions::stack_skip`], lock and scheduler
//!   functions left out), named by its first such frame with a symbol (`caller+0xOFF`); per
//!   thread and lock address a begin opens a wait (a second begin while waiting is ignored)
//!   and the end closes it; `contended` counts begins, the average divides the total by the
//!   ends.
//! - **User locks** (pthread mutexes, condition variables) from the futex waits:
//!   `syscalls:sys_enter_futex` with a waiting operation (`FUTEX_WAIT`, `WAIT_BITSET`,
//!   `LOCK_PI`, `LOCK_PI2`, `WAIT_REQUEUE_PI`) to the thread's `sys_exit_futex`, per futex
//!   address and call site (the first user frame outside the C library), with the waiters'
//!   stacks that waited longest.

use std::collections::HashMap;
use std::ops::Range;

use culprit_decode::model::{CpuMode, Frame, Profile, Sample};
use culprit_decode::tracepoint::{FieldValue, TracepointFormat};
use culprit_symbols::{Query, Symbolizer};
use serde::Serialize;

use crate::offenders::report::Place;
use crate::AnalysisError;

/// Options of [`lock_contention`].
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Frames skipped at the top of kernel call chains (perf's `--stack-skip`, default 3:
    /// the tracepoint's own frames).
    pub stack_skip: usize,
    /// The kernel's lock and scheduler text ([`Symbolizer::kernel_lock_text`]).
    pub lock_text: Vec<Range<u64>>,
    /// Waiter stacks kept per futex row.
    pub top_stacks: usize,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            stack_skip: 3,
            lock_text: Vec::new(),
            top_stacks: 3,
        }
    }
}

/// A kernel lock call site (perf's row).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelLockRow {
    /// `function+0xOFF` of the first frame past the lock functions.
    pub caller: String,
    /// perf's lock type from the begin's flags (`spinlock`, `rwsem:W`, `mutex`, …).
    pub kind: &'static str,
    /// Lock addresses seen at this call site.
    pub addresses: Vec<String>,
    /// Contention begins.
    pub contended: u64,
    /// Closed waits.
    pub acquired: u64,
    /// Sum of the waits, ns.
    pub total_ns: u64,
    /// Longest wait, ns.
    pub max_ns: u64,
    /// `total_ns / acquired`.
    pub avg_ns: u64,
}

/// A waiter stack and how long it waited in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaiterStack {
    /// User frames, innermost first (`function` or `[dso]+0xADDR`).
    pub frames: Vec<String>,
    /// Waits.
    pub waits: u64,
    /// Sum of the waits, ns.
    pub total_ns: u64,
}

/// A futex (user lock) and call site.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FutexRow {
    /// The futex word's address (the pthread mutex or condition variable).
    pub address: String,
    /// The first user frame outside the C library.
    pub call_site: String,
    /// Waits.
    pub waits: u64,
    /// Sum of the waits, ns.
    pub total_ns: u64,
    /// Longest wait, ns.
    pub max_ns: u64,
    /// Average wait, ns.
    pub avg_ns: u64,
    /// The stacks that waited longest.
    pub top_stacks: Vec<WaiterStack>,
}

/// The report of [`lock_contention`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockReport {
    /// Kernel lock call sites, longest total wait first (waits of 0 ns left out, as perf).
    pub kernel: Vec<KernelLockRow>,
    /// Futexes by address and call site, longest total wait first.
    pub futex: Vec<FutexRow>,
}

/// Which tracepoint a sample is.
#[derive(Clone, Copy)]
enum Role {
    Begin,
    End,
    FutexEnter,
    FutexExit,
}

fn int_field(f: &TracepointFormat, raw: &[u8], name: &str) -> Option<u64> {
    match f.field(name)?.read(raw, f.big_endian)? {
        FieldValue::Signed(v) => Some(v as u64),
        FieldValue::Unsigned(v) | FieldValue::Address(v) => Some(v),
        _ => None,
    }
}

/// perf 6.1's `get_type_str`.
fn lock_kind(flags: u64) -> &'static str {
    const SPIN: u64 = 1;
    const READ: u64 = 2;
    const WRITE: u64 = 4;
    const RT: u64 = 8;
    const PERCPU: u64 = 16;
    const MUTEX: u64 = 32;
    match flags {
        0 => "semaphore",
        SPIN => "spinlock",
        f if f == SPIN | READ => "rwlock:R",
        f if f == SPIN | WRITE => "rwlock:W",
        READ => "rwsem:R",
        WRITE => "rwsem:W",
        RT => "rtmutex",
        f if f == RT | READ => "rwlock-rt:R",
        f if f == RT | WRITE => "rwlock-rt:W",
        f if f == PERCPU | READ => "pcpu-sem:R",
        f if f == PERCPU | WRITE => "pcpu-sem:W",
        MUTEX => "mutex",
        f if f == MUTEX | SPIN => "mutex",
        _ => "unknown",
    }
}

/// Whether a futex operation waits (`op & FUTEX_CMD_MASK`).
fn futex_waits(op: u64) -> bool {
    matches!(op & 127, 0 | 6 | 9 | 11 | 13)
}

#[derive(Default)]
struct KernelStat {
    caller: String,
    flags: u64,
    addresses: Vec<u64>,
    contended: u64,
    acquired: u64,
    total: u64,
    max: u64,
}

/// An open futex wait: since when, on which futex, and the waiter's user frames (kept
/// here, as the sample itself is gone once a stream moves on).
struct FutexWait {
    time: u64,
    addr: u64,
    pid: i32,
    frames: Vec<Frame>,
}

/// A futex row being built, with its waiter stacks: frames -> (waits, total ns).
type FutexAcc = (FutexRow, HashMap<Vec<String>, (u64, u64)>);

/// Everything [`lock_contention`] keeps while it reads the samples: per lock, call site and
/// open wait, nothing per sample.
/// Waits begun and not ended yet, paired as perf pairs them: a kernel lock's
/// `contention_begin` with the same thread's `contention_end` of the same lock (a begin while
/// one is open is nested: the first counts), a futex wait's `sys_enter_futex` with the
/// thread's next `sys_exit_futex` (a non-waiting futex call cancels it). `F`: what a futex
/// wait keeps.
struct OpenWaits<F> {
    kernel: HashMap<(i32, u64), u64>,
    futex: HashMap<i32, F>,
}

impl<F> Default for OpenWaits<F> {
    fn default() -> Self {
        OpenWaits {
            kernel: HashMap::new(),
            futex: HashMap::new(),
        }
    }
}

impl<F> OpenWaits<F> {
    /// Whether a kernel lock wait may begin: none is open for the thread and lock.
    fn may_begin(&self, tid: i32, addr: u64) -> bool {
        !self.kernel.contains_key(&(tid, addr))
    }

    /// A kernel lock wait begins at `time` (the first of nested begins counts).
    fn begin(&mut self, tid: i32, addr: u64, time: u64) {
        self.kernel.entry((tid, addr)).or_insert(time);
    }

    /// The begin time of the thread's open wait for the lock, now ended.
    fn end(&mut self, tid: i32, addr: u64) -> Option<u64> {
        self.kernel.remove(&(tid, addr))
    }

    /// A futex call of the thread: a waiting one opens a wait (`Some`), any other cancels
    /// the open one.
    fn futex_enter(&mut self, tid: i32, wait: Option<F>) {
        match wait {
            Some(w) => self.futex.insert(tid, w),
            None => self.futex.remove(&tid),
        };
    }

    /// The thread's open futex wait, now ended.
    fn futex_exit(&mut self, tid: i32) -> Option<F> {
        self.futex.remove(&tid)
    }
}

struct Walk<'a> {
    sym: &'a mut Symbolizer,
    options: &'a LockOptions,
    /// Kernel rows by their key frames.
    kernel: HashMap<Vec<u64>, KernelStat>,
    /// Open waits; a futex wait keeps its time, address and user frames.
    open: OpenWaits<FutexWait>,
    futex: HashMap<(u64, String), FutexAcc>,
    names: HashMap<(i32, u64), Place>,
}

impl Walk<'_> {
    fn place(&mut self, profile: &Profile, pid: i32, frame: &Frame) -> Place {
        let sym = &mut *self.sym;
        self.names
            .entry((pid, frame.addr))
            .or_insert_with(|| Place::of(profile, sym, frame.location, pid))
            .clone()
    }

    fn is_lock_function(&self, ip: u64) -> bool {
        self.options.lock_text.iter().any(|r| r.contains(&ip))
    }

    /// perf's `callchain_id` frames and `lock_contention_caller` name of a sample.
    fn kernel_key(&mut self, profile: &Profile, s: &Sample) -> (Vec<u64>, String) {
        let frames = profile.callchain(s);
        let mut key = Vec::new();
        let mut caller = None;
        for f in frames.iter().skip(self.options.stack_skip) {
            let r = self.sym.resolve(profile, Query::of(f.location, s.pid));
            let symbol = r
                .symbol
                .and_then(|id| self.sym.symbol(id))
                .map(|x| (x.name.to_string(), x.start));
            if symbol.is_some() && self.is_lock_function(f.addr) {
                continue;
            }
            key.push(f.addr);
            if caller.is_none() {
                if let Some((name, start)) = symbol {
                    let at = r.svma.unwrap_or(f.addr);
                    caller = Some(format!("{name}+{:#x}", at.saturating_sub(start)));
                }
            }
        }
        (key, caller.unwrap_or_default())
    }

    fn begin(&mut self, profile: &Profile, s: &Sample, addr: u64, flags: u64) {
        if !self.open.may_begin(s.tid, addr) {
            // A nested begin (mutex spinning): the first one counts.
            return;
        }
        let (key, caller) = self.kernel_key(profile, s);
        let st = self.kernel.entry(key).or_insert_with(|| KernelStat {
            caller,
            flags,
            ..KernelStat::default()
        });
        if !st.addresses.contains(&addr) {
            st.addresses.push(addr);
        }
        st.contended += 1;
        self.open.begin(s.tid, addr, s.time);
    }

    fn end(&mut self, profile: &Profile, s: &Sample, addr: u64) {
        let (key, _) = self.kernel_key(profile, s);
        // perf finds the row by the end's own stack; without one the wait stays open.
        let Some(st) = self.kernel.get_mut(&key) else {
            return;
        };
        if let Some(t0) = self.open.end(s.tid, addr) {
            let wait = s.time.saturating_sub(t0);
            st.total += wait;
            st.max = st.max.max(wait);
            st.acquired += 1;
        }
    }

    fn futex_enter(&mut self, profile: &Profile, s: &Sample, addr: u64) {
        let frames = profile
            .callchain(s)
            .iter()
            .filter(|f| matches!(f.cpumode, CpuMode::User))
            .copied()
            .collect();
        let wait = FutexWait {
            time: s.time,
            addr,
            pid: s.pid,
            frames,
        };
        self.open.futex_enter(s.tid, Some(wait));
    }

    fn futex_exit(&mut self, profile: &Profile, s: &Sample) {
        let Some(open) = self.open.futex_exit(s.tid) else {
            return;
        };
        let (addr, wait) = (open.addr, s.time.saturating_sub(open.time));
        let places: Vec<Place> = open
            .frames
            .iter()
            .map(|f| self.place(profile, open.pid, f))
            .collect();
        let name = |p: &Place| {
            p.symbol
                .clone()
                .unwrap_or_else(|| format!("[{}]+{:#x}", p.dso, p.addr))
        };
        let in_libc = |p: &Place| {
            p.dso.starts_with("libc")
                || p.dso.starts_with("libpthread")
                || p.dso.starts_with("ld-linux")
        };
        let site = places
            .iter()
            .find(|p| !in_libc(p))
            .or(places.first())
            .map(name)
            .unwrap_or_else(|| "[unknown]".to_string());
        let stack: Vec<String> = places.iter().map(name).collect();
        let (row, stacks) = self.futex.entry((addr, site.clone())).or_insert_with(|| {
            (
                FutexRow {
                    address: format!("{addr:#x}"),
                    call_site: site,
                    waits: 0,
                    total_ns: 0,
                    max_ns: 0,
                    avg_ns: 0,
                    top_stacks: Vec::new(),
                },
                HashMap::new(),
            )
        });
        row.waits += 1;
        row.total_ns += wait;
        row.max_ns = row.max_ns.max(wait);
        let e = stacks.entry(stack).or_insert((0, 0));
        e.0 += 1;
        e.1 += wait;
    }
}

/// Kernel lock and futex contention of `profile` (see the module documentation).
pub fn lock_contention(
    profile: &Profile,
    sym: &mut Symbolizer,
    options: &LockOptions,
) -> Result<LockReport, AnalysisError> {
    let mut contention = LockContention::new(sym, options);
    for s in &profile.samples {
        contention.sample(profile, s);
    }
    contention.finish(profile)
}

/// Per thread, the intervals it waited for a lock, `[begin, end)` ns, sorted and merged:
/// kernel locks (`lock:contention_begin` to the `contention_end` of the same lock; a nested
/// begin counts from the first) and futex waits (`syscalls:sys_enter_futex` with a waiting
/// operation to the thread's `sys_exit_futex`), as [`lock_contention`] pairs them. Empty
/// when the profile has none of these events.
pub fn lock_waits(profile: &Profile) -> HashMap<i32, Vec<(u64, u64)>> {
    let mut waits = LockWaits::default();
    for s in &profile.samples {
        waits.add(profile, s);
    }
    waits.finish()
}

/// [`lock_waits`] fed one sample at a time, as a stream is read: it keeps the open waits
/// and the closed intervals (one per wait), not the samples.
#[derive(Default)]
pub struct LockWaits {
    open: OpenWaits<u64>,
    waits: HashMap<i32, Vec<(u64, u64)>>,
}

impl LockWaits {
    /// Takes the next sample in time order (`profile`: what was read so far).
    pub fn add(&mut self, profile: &Profile, s: &Sample) {
        let Some((role, f)) = role_of(profile, s.event) else {
            return;
        };
        let raw = profile.raw(s);
        let closed = match role {
            Role::Begin => {
                if let Some(addr) = int_field(f, raw, "lock_addr") {
                    self.open.begin(s.tid, addr, s.time);
                }
                None
            }
            Role::End => int_field(f, raw, "lock_addr").and_then(|addr| self.open.end(s.tid, addr)),
            Role::FutexEnter => {
                let waits = int_field(f, raw, "op").is_some_and(futex_waits);
                self.open.futex_enter(s.tid, waits.then_some(s.time));
                None
            }
            Role::FutexExit => self.open.futex_exit(s.tid),
        };
        if let Some(begin) = closed {
            self.waits.entry(s.tid).or_default().push((begin, s.time));
        }
    }

    /// The intervals per thread, sorted and merged.
    pub fn finish(mut self) -> HashMap<i32, Vec<(u64, u64)>> {
        for spans in self.waits.values_mut() {
            spans.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
            for &(a, b) in spans.iter() {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            *spans = merged;
        }
        self.waits
    }
}

/// The tracepoint an event is, if [`lock_contention`] reads it.
fn role_of(
    profile: &Profile,
    event: culprit_decode::model::EventId,
) -> Option<(Role, &TracepointFormat)> {
    let f = profile.tracepoint_format(event)?;
    let role = match (f.system.as_str(), f.name.as_str()) {
        ("lock", "contention_begin") => Role::Begin,
        ("lock", "contention_end") => Role::End,
        ("syscalls", "sys_enter_futex") => Role::FutexEnter,
        ("syscalls", "sys_exit_futex") => Role::FutexExit,
        _ => return None,
    };
    Some((role, f))
}

/// [`lock_contention`] fed one sample at a time, as a stream is read: it keeps per-lock,
/// per-call-site and open-wait state only, so memory does not grow with the samples.
pub struct LockContention<'a>(Walk<'a>);

impl<'a> LockContention<'a> {
    /// A walk symbolizing with `sym`.
    pub fn new(sym: &'a mut Symbolizer, options: &'a LockOptions) -> Self {
        LockContention(Walk {
            sym,
            options,
            kernel: HashMap::new(),
            open: OpenWaits::default(),
            futex: HashMap::new(),
            names: HashMap::new(),
        })
    }

    /// Takes the next sample `s` of `profile` (what was read so far) in processing order.
    pub fn sample(&mut self, profile: &Profile, s: &Sample) {
        let w = &mut self.0;
        let Some((role, f)) = role_of(profile, s.event) else {
            return;
        };
        let raw = profile.raw(s);
        match role {
            Role::Begin => {
                if let (Some(addr), Some(flags)) =
                    (int_field(f, raw, "lock_addr"), int_field(f, raw, "flags"))
                {
                    w.begin(profile, s, addr, flags);
                }
            }
            Role::End => {
                if let Some(addr) = int_field(f, raw, "lock_addr") {
                    w.end(profile, s, addr);
                }
            }
            Role::FutexEnter => {
                if let (Some(addr), Some(op)) =
                    (int_field(f, raw, "uaddr"), int_field(f, raw, "op"))
                {
                    if futex_waits(op) {
                        w.futex_enter(profile, s, addr);
                    } else {
                        w.open.futex_enter(s.tid, None);
                    }
                }
            }
            Role::FutexExit => w.futex_exit(profile, s),
        }
    }

    /// The report; fails with [`AnalysisError::NoData`] when `profile` (read to its end)
    /// has none of the events read.
    pub fn finish(self, profile: &Profile) -> Result<LockReport, AnalysisError> {
        if (0..profile.events.len()).all(|i| role_of(profile, i as _).is_none()) {
            return Err(AnalysisError::NoData(
                "the file has no lock:contention_begin/end nor syscalls:sys_enter/exit_futex \
                 samples: record them with `culprit lock record -- CMD` (or `perf lock record`)"
                    .to_string(),
            ));
        }
        Ok(report(self.0))
    }
}

fn report(w: Walk<'_>) -> LockReport {
    let options = w.options;
    let mut kernel: Vec<KernelLockRow> = w
        .kernel
        .into_values()
        .filter(|st| st.total > 0)
        .map(|st| KernelLockRow {
            caller: st.caller,
            kind: lock_kind(st.flags),
            addresses: st.addresses.iter().map(|a| format!("{a:#x}")).collect(),
            contended: st.contended,
            acquired: st.acquired,
            total_ns: st.total,
            max_ns: st.max,
            avg_ns: st.total / st.acquired.max(1),
        })
        .collect();
    kernel.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.caller.cmp(&b.caller))
    });
    let top = options.top_stacks;
    let mut futex: Vec<FutexRow> = w
        .futex
        .into_values()
        .map(|(mut row, stacks)| {
            row.avg_ns = row.total_ns / row.waits.max(1);
            let mut v: Vec<WaiterStack> = stacks
                .into_iter()
                .map(|(frames, (waits, total_ns))| WaiterStack {
                    frames,
                    waits,
                    total_ns,
                })
                .collect();
            v.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then_with(|| a.frames.cmp(&b.frames))
            });
            v.truncate(top);
            row.top_stacks = v;
            row
        })
        .collect();
    futex.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.address.cmp(&b.address))
    });
    LockReport { kernel, futex }
}

/// perf's `lock_stat_key_print_time`: `len` wide, two decimals in the largest unit.
pub fn perf_time(ns: u64, len: usize) -> String {
    // perf's bases are floats and so is its division (16395 ns is 16.40 us, not 16.39).
    const UNITS: [(f32, &str); 5] = [
        (1e9 * 3600.0, "h "),
        (1e9 * 60.0, "m "),
        (1e9, "s "),
        (1e6, "ms"),
        (1e3, "us"),
    ];
    let w = len.saturating_sub(3);
    for (base, unit) in UNITS {
        if ns as f32 >= base {
            return format!("{:>w$.2} {unit}", f64::from(ns as f32 / base));
        }
    }
    format!("{ns:>w$} ns")
}

/// Version of `culprit lock contention --format json` (docs/schemas/lock.schema.json).
pub const LOCK_SCHEMA: u32 = 1;

/// `culprit lock contention`: text, and JSON with [`LOCK_SCHEMA`].
pub type LockJson<'a> = culprit_output::LinesReport<'a, LockReport>;

impl culprit_output::TextLines for LockReport {
    /// Text: the kernel table in perf's layout, then the futex table with the top stacks.
    fn text_lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "{:>10} {:>12} {:>12} {:>12} {:>12}   {}",
            "contended", "total wait", "max wait", "avg wait", "type", "caller"
        )];
        out.push(String::new());
        for r in &self.kernel {
            out.push(format!(
                "{:>10} {} {} {} {:>12}   {}",
                r.contended,
                perf_time(r.total_ns, 12),
                perf_time(r.max_ns, 12),
                perf_time(r.avg_ns, 12),
                r.kind,
                r.caller
            ));
        }
        out.push(String::new());
        out.push(format!(
            "{:>10} {:>12} {:>12} {:>12}   {:<18}  {}",
            "waits", "total wait", "max wait", "avg wait", "futex", "call site (user locks)"
        ));
        out.push(String::new());
        for r in &self.futex {
            out.push(format!(
                "{:>10} {} {} {}   {:<18}  {}",
                r.waits,
                perf_time(r.total_ns, 12),
                perf_time(r.max_ns, 12),
                perf_time(r.avg_ns, 12),
                r.address,
                r.call_site
            ));
            for s in &r.top_stacks {
                out.push(format!(
                    "{:>10} {}   {}",
                    s.waits,
                    perf_time(s.total_ns, 12),
                    s.frames.join(" <- ")
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_perf_lock_time_format_and_types() {
        assert_eq!(perf_time(18_500, 12), "    18.50 us");
        assert_eq!(perf_time(999, 12), "      999 ns");
        assert_eq!(perf_time(1_210_000, 12), "     1.21 ms");
        assert_eq!(perf_time(16_395, 12), "    16.40 us");
        assert_eq!(lock_kind(1), "spinlock");
        assert_eq!(lock_kind(4), "rwsem:W");
        assert_eq!(lock_kind(33), "mutex");
        assert!(futex_waits(128) && futex_waits(9 | 128) && !futex_waits(1 | 128));
    }
}
