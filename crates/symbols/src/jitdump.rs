//! JIT dump files, `jit-PID.dump` (perf's `tools/perf/Documentation/jitdump-specification.txt`):
//! what a JIT runtime (V8 with `--perf-prof`, CPython 3.13 with `-X perf_jit`, the JVM with
//! an agent) writes about the code it generates. The runtime maps the file executable, so the
//! recording holds an MMAP of it: that is how `perf inject --jit` finds it, and how
//! [`crate::Symbolizer`] does at report time, without rewriting anything.
//!
//! Written by hand rather than with `linux-perf-data`'s reader: the format is a 40-byte header
//! and five fixed records, and that crate would bring a second perf.data parser into the
//! workspace besides `culprit-decode`.
//!
//! Records used (as `perf inject --jit` does):
//! - `JIT_CODE_LOAD`: a function's name, address, size and code bytes;
//! - `JIT_CODE_MOVE`: the same code at a new address;
//! - `JIT_CODE_DEBUG_INFO`: source lines of the next loaded function;
//! - `JIT_CODE_UNWINDING_INFO`: `.eh_frame` (and `.eh_frame_hdr`) of the next function;
//! - `JIT_CODE_CLOSE`: the end of the dump.
//!
//! A later load over the same addresses replaces the earlier one, as perf's injected MMAPs
//! do for the samples after it. A truncated or corrupt file keeps what was read before the
//! damage and says where it stopped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use crate::table::{Binding, Symbol, SymbolTable};

/// The magic number, "JiTD" read in the writer's byte order.
const MAGIC: u32 = 0x4A69_5444;
/// The magic number read in the other byte order.
const MAGIC_SWAPPED: u32 = 0x4454_694A;
/// Header: magic, version, total_size, elf_mach, pad1, pid (u32 each), timestamp, flags (u64).
const HEADER_SIZE: usize = 40;
/// Record prefix: id, total_size (u32), timestamp (u64).
const RECORD_PREFIX: usize = 16;
/// Record ids.
const CODE_LOAD: u32 = 0;
const CODE_MOVE: u32 = 1;
const CODE_DEBUG_INFO: u32 = 2;
const CODE_CLOSE: u32 = 3;
const CODE_UNWINDING_INFO: u32 = 4;
/// The file name of a debug entry that repeats the previous entry's file (spec: "0xff 0x0").
const SAME_FILE: &[u8] = &[0xff];

/// One source line of JIT code (a `JIT_CODE_DEBUG_INFO` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitLine {
    /// First address of the code of this line.
    pub addr: u64,
    /// Source file (a script, for JavaScript and Python).
    pub file: String,
    /// Line number.
    pub line: u32,
    /// Discriminator.
    pub discriminator: u32,
}

/// One function of generated code (a `JIT_CODE_LOAD` record, or its `JIT_CODE_MOVE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitFunction {
    /// The name the runtime gave it (`LazyCompile:*fib /tmp/x.js:1`, `py::fib:x.py`).
    pub name: String,
    /// Address of its first instruction.
    pub addr: u64,
    /// Code size in bytes.
    pub size: u64,
    /// The runtime's unique index of this code.
    pub index: u64,
    /// Timestamp of the record (the runtime's clock, perf's when it records with `-k mono`).
    pub timestamp: u64,
    /// The code bytes (empty when the record carried none).
    pub code: Vec<u8>,
    /// Source lines, by address (from the debug-info record before the load).
    pub lines: Vec<JitLine>,
    /// `.eh_frame` of the code followed by `.eh_frame_hdr` (from the unwinding record
    /// before the load), empty when none was given.
    pub unwinding: Vec<u8>,
    /// Size of the `.eh_frame_hdr` at the end of [`JitFunction::unwinding`].
    pub eh_frame_hdr_size: u64,
}

impl JitFunction {
    /// One past the last address.
    pub fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }

    /// The source line of an address of this function: the last entry at or below it.
    pub fn line_at(&self, addr: u64) -> Option<&JitLine> {
        let pos = self.lines.partition_point(|l| l.addr <= addr);
        self.lines.get(pos.checked_sub(1)?)
    }
}

/// A parsed JIT dump: the functions live at its end, by address.
#[derive(Debug, Clone, Default)]
pub struct JitDump {
    /// The pid the header names.
    pub pid: u32,
    /// ELF machine of the code (`EM_X86_64` = 62).
    pub elf_mach: u32,
    /// Functions by start address; a later load over the same range replaced earlier ones.
    functions: BTreeMap<u64, JitFunction>,
    /// Why reading stopped early, if it did (truncated or corrupt file).
    pub damage: Option<String>,
}

impl JitDump {
    /// The functions, in address order.
    pub fn functions(&self) -> impl Iterator<Item = &JitFunction> {
        self.functions.values()
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// Whether the dump has no function.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The function containing `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&JitFunction> {
        let (_, f) = self.functions.range(..=addr).next_back()?;
        (addr < f.end()).then_some(f)
    }

    /// Whether any function has code in `start..end` (an empty range: at `start`).
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.function_at(start).is_some()
            || self
                .functions
                .range(start..end.max(start + 1))
                .next()
                .is_some()
    }

    /// The functions as a symbol table (names at their addresses).
    pub fn symbol_table(&self) -> SymbolTable {
        SymbolTable::new(
            self.functions()
                .map(|f| Symbol {
                    name: f.name.clone(),
                    start: f.addr,
                    end: f.end(),
                    binding: Binding::Global,
                })
                .collect(),
        )
    }

    /// Adds a function, dropping those it overlaps (the code was replaced).
    fn insert(&mut self, f: JitFunction) {
        let (start, end) = (f.addr, f.end().max(f.addr + 1));
        // Functions never overlap, so their ends are sorted like their starts.
        let overlapping: Vec<u64> = self
            .functions
            .range(..end)
            .rev()
            .take_while(|(_, g)| g.end().max(g.addr + 1) > start)
            .map(|(&a, _)| a)
            .collect();
        for a in overlapping {
            self.functions.remove(&a);
        }
        self.functions.insert(f.addr, f);
    }
}

/// A bounds-checked reader of the dump's integers in its byte order.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    swapped: bool,
}

impl<'a> Cursor<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }

    fn u32(&mut self) -> Option<u32> {
        let v = u32::from_le_bytes(self.bytes(4)?.try_into().ok()?);
        Some(if self.swapped { v.swap_bytes() } else { v })
    }

    fn u64(&mut self) -> Option<u64> {
        let v = u64::from_le_bytes(self.bytes(8)?.try_into().ok()?);
        Some(if self.swapped { v.swap_bytes() } else { v })
    }

    /// A NUL-terminated string (bytes without the NUL).
    fn c_str(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.pos..)?;
        let n = memchr::memchr(0, rest)?;
        self.pos += n + 1;
        Some(&rest[..n])
    }
}

/// The dumps read so far, by path, with the length and modification time they were read
/// at; weak, so a dump is freed once nobody holds it.
type DumpCache = HashMap<PathBuf, (u64, Option<SystemTime>, Weak<JitDump>)>;
static SHARED_DUMPS: Mutex<Option<DumpCache>> = Mutex::new(None);

/// The parsed dump of the file at `path`, read and parsed once while any reader holds it:
/// the symbolizer (names, code, lines) and the DWARF unwinder (unwinding records) each
/// need a process's dump, which can hold hundreds of MB of code. A file that changed since
/// (a live session's growing dump) is read again.
pub(crate) fn read_shared(path: &Path) -> std::io::Result<Arc<JitDump>> {
    let meta = std::fs::metadata(path)?;
    let (len, modified) = (meta.len(), meta.modified().ok());
    let mut cache = SHARED_DUMPS.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((l, m, dump)) = cache.get(path) {
        if (*l, *m) == (len, modified) {
            if let Some(dump) = dump.upgrade() {
                return Ok(dump);
            }
        }
    }
    let dump = Arc::new(parse_jitdump(&std::fs::read(path)?));
    cache.retain(|_, (_, _, d)| d.strong_count() > 0);
    cache.insert(path.to_path_buf(), (len, modified, Arc::downgrade(&dump)));
    Ok(dump)
}

/// Parses a JIT dump. Never fails: a file that is not a dump gives an empty one with
/// [`JitDump::damage`] saying why, and a damaged one keeps the records before the damage.
pub fn parse_jitdump(data: &[u8]) -> JitDump {
    let mut dump = JitDump::default();
    let Some(magic) = data.get(..4).and_then(|b| b.try_into().ok()) else {
        dump.damage = Some("too short for a jitdump header".into());
        return dump;
    };
    let swapped = match u32::from_le_bytes(magic) {
        MAGIC => false,
        MAGIC_SWAPPED => true,
        _ => {
            dump.damage = Some("not a jitdump file (bad magic)".into());
            return dump;
        }
    };
    let mut c = Cursor {
        data,
        pos: 4,
        swapped,
    };
    let header = (|| Some((c.u32()?, c.u32()?, c.u32()?, c.u32()?, c.u32()?)))();
    let Some((_version, total_size, elf_mach, _pad, pid)) = header else {
        dump.damage = Some("truncated header".into());
        return dump;
    };
    dump.pid = pid;
    dump.elf_mach = elf_mach;
    if (total_size as usize) < HEADER_SIZE || total_size as usize > data.len() {
        dump.damage = Some(format!("bad header size {total_size}"));
        return dump;
    }
    c.pos = total_size as usize;
    let mut pending = Pending::default();
    while c.pos < data.len() {
        let at = c.pos;
        match read_record(&mut c, &mut dump, &mut pending) {
            Ok(true) => {}
            Ok(false) => break,
            Err(why) => {
                dump.damage = Some(format!("{why} at byte {at}"));
                break;
            }
        }
    }
    dump
}

/// What the records before a load said about it.
#[derive(Default)]
struct Pending {
    lines: Vec<JitLine>,
    lines_for: u64,
    unwinding: Vec<u8>,
    eh_frame_hdr_size: u64,
}

/// Reads the record at the cursor; false at `JIT_CODE_CLOSE`.
fn read_record(
    c: &mut Cursor<'_>,
    dump: &mut JitDump,
    pending: &mut Pending,
) -> Result<bool, String> {
    let start = c.pos;
    let truncated = || "truncated record".to_string();
    let id = c.u32().ok_or_else(truncated)?;
    let size = c.u32().ok_or_else(truncated)? as usize;
    let timestamp = c.u64().ok_or_else(truncated)?;
    if size < RECORD_PREFIX {
        return Err(format!("record of impossible size {size}"));
    }
    let body = c
        .data
        .get(start + RECORD_PREFIX..start.saturating_add(size))
        .ok_or_else(truncated)?;
    c.pos = start + size;
    let mut r = Cursor {
        data: body,
        pos: 0,
        swapped: c.swapped,
    };
    let bad = |what: &str| format!("corrupt {what} record");
    match id {
        CODE_LOAD => {
            let f = read_load(&mut r, timestamp, pending).ok_or_else(|| bad("code-load"))?;
            dump.insert(f);
        }
        CODE_MOVE => {
            let (_pid, _tid, _vma) = (r.u32(), r.u32(), r.u64());
            let moved = (|| Some((r.u64()?, r.u64()?, r.u64()?, r.u64()?)))();
            let (old, new, size, index) = moved.ok_or_else(|| bad("code-move"))?;
            if let Some(mut f) = dump
                .functions
                .get(&old)
                .filter(|f| f.index == index)
                .cloned()
            {
                f.addr = new;
                f.size = size;
                f.timestamp = timestamp;
                let shift = new.wrapping_sub(old);
                for l in &mut f.lines {
                    l.addr = l.addr.wrapping_add(shift);
                }
                dump.insert(f);
            }
        }
        CODE_DEBUG_INFO => {
            let (addr, lines) = read_debug_info(&mut r).ok_or_else(|| bad("debug-info"))?;
            pending.lines = lines;
            pending.lines_for = addr;
        }
        CODE_UNWINDING_INFO => {
            let sizes = (|| Some((r.u64()?, r.u64()?, r.u64()?)))();
            let (unwinding_size, hdr_size, _mapped) = sizes.ok_or_else(|| bad("unwinding"))?;
            let n = usize::try_from(unwinding_size).map_err(|_| bad("unwinding"))?;
            pending.unwinding = r.bytes(n).ok_or_else(|| bad("unwinding"))?.to_vec();
            pending.eh_frame_hdr_size = hdr_size.min(unwinding_size);
        }
        CODE_CLOSE => return Ok(false),
        // Unknown records (a newer writer): skipped by their size, as perf does.
        _ => {}
    }
    Ok(true)
}

/// A `JIT_CODE_LOAD` body, with what the records before it said.
fn read_load(r: &mut Cursor<'_>, timestamp: u64, pending: &mut Pending) -> Option<JitFunction> {
    let (_pid, _tid) = (r.u32()?, r.u32()?);
    let (_vma, addr, size, index) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
    let name = String::from_utf8_lossy(r.c_str()?).into_owned();
    // Code bytes follow the name; a writer may leave them out (size kept, no bytes).
    let code = usize::try_from(size)
        .ok()
        .and_then(|n| r.bytes(n))
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let lines = if pending.lines_for == addr {
        std::mem::take(&mut pending.lines)
    } else {
        Vec::new()
    };
    pending.lines.clear();
    Some(JitFunction {
        name,
        addr,
        size,
        index,
        timestamp,
        code,
        lines,
        unwinding: std::mem::take(&mut pending.unwinding),
        eh_frame_hdr_size: std::mem::take(&mut pending.eh_frame_hdr_size),
    })
}

/// A `JIT_CODE_DEBUG_INFO` body: the code address and its lines, sorted by address.
fn read_debug_info(r: &mut Cursor<'_>) -> Option<(u64, Vec<JitLine>)> {
    let addr = r.u64()?;
    let n = r.u64()?;
    let mut lines = Vec::new();
    let mut file = String::new();
    for _ in 0..n {
        let at = r.u64()?;
        let line = r.u32()?;
        let discriminator = r.u32()?;
        let name = r.c_str()?;
        if name != SAME_FILE {
            file = String::from_utf8_lossy(name).into_owned();
        }
        lines.push(JitLine {
            addr: at,
            file: file.clone(),
            line,
            discriminator,
        });
    }
    lines.sort_by_key(|l| l.addr);
    Some((addr, lines))
}

/// Builds JIT dump files, for tests of the reader (here and in other crates).
#[derive(Debug, Clone)]
pub struct JitDumpWriter {
    bytes: Vec<u8>,
}

impl JitDumpWriter {
    /// A dump of process `pid` for x86-64 code.
    pub fn new(pid: u32) -> JitDumpWriter {
        let mut bytes = Vec::new();
        for v in [MAGIC, 1, HEADER_SIZE as u32, 62, 0, pid] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        JitDumpWriter { bytes }
    }

    fn record(&mut self, id: u32, timestamp: u64, body: &[u8]) {
        let size = (RECORD_PREFIX + body.len()) as u32;
        self.bytes.extend_from_slice(&id.to_le_bytes());
        self.bytes.extend_from_slice(&size.to_le_bytes());
        self.bytes.extend_from_slice(&timestamp.to_le_bytes());
        self.bytes.extend_from_slice(body);
    }

    /// A `JIT_CODE_LOAD` of `code` at `addr` named `name`.
    pub fn load(&mut self, timestamp: u64, name: &str, addr: u64, code: &[u8], index: u64) {
        let mut b = Vec::new();
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for v in [addr, addr, code.len() as u64, index] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(code);
        self.record(CODE_LOAD, timestamp, &b);
    }

    /// A `JIT_CODE_MOVE` of the code of `index` from `old` to `new`.
    pub fn move_code(&mut self, timestamp: u64, old: u64, new: u64, size: u64, index: u64) {
        let mut b = vec![0u8; 8];
        for v in [new, old, new, size, index] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        self.record(CODE_MOVE, timestamp, &b);
    }

    /// A `JIT_CODE_DEBUG_INFO` for the code at `addr`: `(address, file, line)` entries.
    pub fn debug_info(&mut self, timestamp: u64, addr: u64, lines: &[(u64, &str, u32)]) {
        let mut b = Vec::new();
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&(lines.len() as u64).to_le_bytes());
        let mut previous: Option<&str> = None;
        for &(at, file, line) in lines {
            b.extend_from_slice(&at.to_le_bytes());
            b.extend_from_slice(&line.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            if previous == Some(file) {
                b.extend_from_slice(SAME_FILE);
            } else {
                b.extend_from_slice(file.as_bytes());
            }
            b.push(0);
            previous = Some(file);
        }
        self.record(CODE_DEBUG_INFO, timestamp, &b);
    }

    /// A `JIT_CODE_UNWINDING_INFO` with `eh_frame` and `eh_frame_hdr` bytes.
    pub fn unwinding(&mut self, timestamp: u64, eh_frame: &[u8], eh_frame_hdr: &[u8]) {
        let mut b = Vec::new();
        let total = (eh_frame.len() + eh_frame_hdr.len()) as u64;
        for v in [total, eh_frame_hdr.len() as u64, total] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(eh_frame);
        b.extend_from_slice(eh_frame_hdr);
        self.record(CODE_UNWINDING_INFO, timestamp, &b);
    }

    /// A `JIT_CODE_CLOSE`.
    pub fn close(&mut self, timestamp: u64) {
        self.record(CODE_CLOSE, timestamp, &[]);
    }

    /// The file's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = JitDumpWriter::new(42);
        w.debug_info(1, 0x1000, &[(0x1000, "a.js", 3), (0x1008, "a.js", 4)]);
        w.unwinding(1, &[1, 2, 3, 4], &[5, 6]);
        w.load(2, "LazyCompile:*fib a.js:3", 0x1000, &[0x90; 16], 1);
        w.load(3, "stub", 0x2000, &[0xc3], 2);
        w.close(4);
        w.finish()
    }

    #[test]
    fn test_parse_loads_lines_and_unwinding() {
        let d = parse_jitdump(&sample());
        assert_eq!(d.damage, None);
        assert_eq!(d.pid, 42);
        let f = d.function_at(0x100f).unwrap();
        assert_eq!(f.name, "LazyCompile:*fib a.js:3");
        assert_eq!(f.code, vec![0x90; 16]);
        assert_eq!(f.line_at(0x1009).unwrap().line, 4);
        assert_eq!(
            f.line_at(0x1009).unwrap().file,
            "a.js",
            "0xff repeats the file"
        );
        assert_eq!(f.unwinding, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(f.eh_frame_hdr_size, 2);
        assert!(d.function_at(0x1010).is_none());
        let stub = d.function_at(0x2000).unwrap();
        assert!(stub.lines.is_empty() && stub.unwinding.is_empty());
        let t = d.symbol_table();
        assert_eq!(t.get(t.find(0x2000).unwrap()).unwrap().name, "stub");
    }

    #[test]
    fn test_later_load_replaces_overlapping_code_and_move_follows() {
        let mut w = JitDumpWriter::new(1);
        w.load(1, "old", 0x1000, &[0; 0x20], 1);
        w.load(2, "other", 0x3000, &[0; 0x10], 2);
        w.load(3, "new", 0x1010, &[0; 0x20], 3);
        w.move_code(4, 0x3000, 0x5000, 0x10, 2);
        let d = parse_jitdump(&w.finish());
        assert!(d.function_at(0x1000).is_none(), "old was replaced");
        assert_eq!(d.function_at(0x1010).unwrap().name, "new");
        assert_eq!(d.function_at(0x5008).unwrap().name, "other");
    }

    #[test]
    fn test_truncated_and_corrupt_keep_what_came_before() {
        let full = sample();
        // Cut inside the last load: the first function stays, the damage is said.
        let cut = &full[..full.len() - 20];
        let d = parse_jitdump(cut);
        assert!(
            d.damage.as_deref().unwrap().contains("truncated"),
            "{:?}",
            d.damage
        );
        assert!(d.function_at(0x1000).is_some());
        assert!(d.function_at(0x2000).is_none());
        // Every prefix and every single-byte corruption parses without panicking.
        for n in 0..full.len() {
            let _ = parse_jitdump(&full[..n]);
            let mut bad = full.clone();
            bad[n] ^= 0xff;
            let _ = parse_jitdump(&bad);
        }
        assert!(parse_jitdump(b"ELF").damage.is_some());
        assert!(parse_jitdump(b"\x7fELF\x02\x01\x01\0\0\0\0\0")
            .damage
            .unwrap()
            .contains("magic"));
    }

    #[test]
    fn test_big_endian_writer() {
        let mut b = Vec::new();
        for v in [MAGIC, 1, HEADER_SIZE as u32, 62, 0, 7] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&[0; 16]);
        let d = parse_jitdump(&b);
        assert_eq!((d.pid, d.damage), (7, None));
    }

    /// A dump is parsed once while a reader holds it, and again once its file changed or
    /// nobody holds it any more.
    #[test]
    fn test_read_shared_parses_a_dump_once_while_held() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("jitdump-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jit-42.dump");
        std::fs::write(&path, sample()).unwrap();
        let first = read_shared(&path).unwrap();
        let again = read_shared(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "a held dump is read again");
        assert_eq!(first.len(), parse_jitdump(&sample()).len());
        // The file changed (a growing dump): read again.
        let mut longer = sample();
        longer.extend_from_slice(&[0; 16]);
        std::fs::write(&path, &longer).unwrap();
        let changed = read_shared(&path).unwrap();
        assert!(!Arc::ptr_eq(&first, &changed));
        // Nobody holds it: read again, and the cache keeps no dump alive.
        let weak = Arc::downgrade(&changed);
        drop((first, again, changed));
        assert!(weak.upgrade().is_none());
        assert!(read_shared(&path).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
