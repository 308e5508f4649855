//! A sorted symbol table with perf's fix-ups: zero-sized symbols extend to the next symbol,
//! and symbols sharing a start address are reduced to the one perf would show.

use std::sync::OnceLock;

use crate::demangle::demangle;

/// ELF symbol binding, as far as choosing between aliases needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// STB_LOCAL (and kallsyms lower-case types).
    Local,
    /// STB_GLOBAL (and kallsyms upper-case types).
    Global,
    /// STB_WEAK (kallsyms `w`/`W`).
    Weak,
}

/// One symbol: a named address range in the DSO's SVMA space.
#[derive(Debug, Clone)]
pub struct Symbol {
    /// Name: demangled (Rust without the hash, C++ without parameters, like perf), or as
    /// the ELF file spells it for a table built with [`SymbolTable::demangling`], which
    /// demangles each name on first use.
    pub name: String,
    /// First address (SVMA; kernel address for the kernel and modules).
    pub start: u64,
    /// One past the last address (after perf's fix-ups of zero sizes).
    pub end: u64,
    /// Binding, used to choose among aliases.
    pub binding: Binding,
}

/// A symbol of a [`SymbolTable`]: its name is borrowed from the table's name arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolRef<'a> {
    /// Demangled name.
    pub name: &'a str,
    /// First address.
    pub start: u64,
    /// One past the last address (after perf's fix-ups of zero sizes).
    pub end: u64,
    /// Binding.
    pub binding: Binding,
}

/// A table entry: the name is a range of the table's name arena. Plain integers, so that a
/// table of 10^5 kernel symbols is one allocation for the entries and one for the names
/// (a `String` per symbol made reading kallsyms mostly malloc and page faults), and 24
/// bytes (the binding shares a word with the name's length): fresh pages cost.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u64,
    end: u64,
    name_at: u32,
    /// The name's length (up to [`MAX_NAME`]) times four, plus the binding (0 to 2).
    len_binding: u32,
}

/// The longest name an entry holds (longer ones are stored empty).
const MAX_NAME: usize = (u32::MAX >> 2) as usize;

impl Entry {
    fn new(start: u64, end: u64, name: Option<(u32, usize)>, binding: Binding) -> Entry {
        let (name_at, len) = match name {
            Some((at, len)) if len <= MAX_NAME => (at, len as u32),
            _ => (0, 0),
        };
        let b = match binding {
            Binding::Local => 0,
            Binding::Global => 1,
            Binding::Weak => 2,
        };
        Entry {
            start,
            end,
            name_at,
            len_binding: len << 2 | b,
        }
    }

    fn binding(&self) -> Binding {
        match self.len_binding & 3 {
            0 => Binding::Local,
            1 => Binding::Global,
            _ => Binding::Weak,
        }
    }

    /// The entry's name in `names`, its table's arena (empty if out of range).
    fn name<'a>(&self, names: &'a Names) -> &'a str {
        let at = self.name_at as usize;
        names.get(at..at + (self.len_binding >> 2) as usize)
    }

    /// The entry as a [`SymbolRef`] with its name from `names`.
    fn view<'a>(&self, names: &'a Names) -> SymbolRef<'a> {
        SymbolRef {
            name: self.name(names),
            start: self.start,
            end: self.end,
            binding: self.binding(),
        }
    }
}

/// Text that a table's names are byte ranges of (see [`SymbolTableBuilder::over_text`]).
pub type SharedText = std::sync::Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where a table's names live.
#[derive(Clone)]
enum Names {
    /// Copied into one string.
    Owned(String),
    /// Ranges of a text the table shares (a kallsyms file: no copy of 10^5 names).
    Shared(SharedText),
}

impl Names {
    /// The name at `range` (empty if out of range or, in shared text, not UTF-8).
    fn get(&self, range: std::ops::Range<usize>) -> &str {
        match self {
            Names::Owned(s) => s.get(range).unwrap_or(""),
            // Checked on each use: shared text may be a mapped file, which another process
            // could change after it was parsed. Names are short.
            Names::Shared(t) => (**t)
                .as_ref()
                .get(range)
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or(""),
        }
    }
}

impl Default for Names {
    fn default() -> Self {
        Names::Owned(String::new())
    }
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Names::Owned(s) => write!(f, "Owned({} bytes)", s.len()),
            Names::Shared(t) => write!(f, "Shared({} bytes)", (**t).as_ref().len()),
        }
    }
}

/// Symbols sorted by start address, without duplicates at the same start.
#[derive(Debug, Default, Clone)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    names: Names,
    /// For a table of mangled names ([`SymbolTable::demangling`]): each entry's demangled
    /// name, made on first use (`None`: the same as the stored one). A large C++ library
    /// has 10^5 symbols and a profile names a few hundred of them: demangling them all when
    /// the table was built was most of the time to read such a library.
    demangled: Option<Vec<OnceLock<Option<Box<str>>>>>,
}

/// Collects symbols in any order for a [`SymbolTable`], copying names into one arena (or
/// taking them as ranges of a shared text).
#[derive(Debug, Default)]
pub struct SymbolTableBuilder {
    entries: Vec<Entry>,
    names: Names,
}

impl SymbolTableBuilder {
    /// An empty builder with room for about `symbols` symbols of `name_bytes` name bytes.
    pub fn with_capacity(symbols: usize, name_bytes: usize) -> Self {
        SymbolTableBuilder {
            entries: Vec::with_capacity(symbols),
            names: Names::Owned(String::with_capacity(name_bytes)),
        }
    }

    /// An empty builder with room for about `symbols` symbols whose names are ranges of
    /// `text` ([`SymbolTableBuilder::push_range`]): the table keeps the text instead of
    /// copies of the names.
    pub fn over_text(text: SharedText, symbols: usize) -> Self {
        SymbolTableBuilder {
            entries: Vec::with_capacity(symbols),
            names: Names::Shared(text),
        }
    }

    /// Adds a symbol `[start, end)` (`end == start`: size unknown, fixed up like perf). A
    /// name past the arena's 4 GiB, or added to a builder [`over_text`], is stored empty.
    ///
    /// [`over_text`]: SymbolTableBuilder::over_text
    pub fn push(&mut self, name: &str, start: u64, end: u64, binding: Binding) {
        let name = match &mut self.names {
            Names::Owned(names) => match (
                u32::try_from(names.len()),
                u32::try_from(names.len() + name.len()),
            ) {
                (Ok(at), Ok(_)) => {
                    names.push_str(name);
                    Some((at, name.len()))
                }
                _ => None,
            },
            Names::Shared(_) => None,
        };
        self.entries.push(Entry::new(start, end, name, binding));
    }

    /// Adds a symbol whose name is the byte range `name` of the builder's text (see
    /// [`SymbolTableBuilder::over_text`]; in a builder that copies names, or past 4 GiB,
    /// the name is stored empty).
    pub fn push_range(
        &mut self,
        name: std::ops::Range<usize>,
        start: u64,
        end: u64,
        binding: Binding,
    ) {
        let name = match (&self.names, u32::try_from(name.start)) {
            (Names::Shared(_), Ok(at)) => Some((at, name.len())),
            _ => None,
        };
        self.entries.push(Entry::new(start, end, name, binding));
    }

    /// Sorts the symbols and applies perf's fix-ups.
    ///
    /// Kernel and module symbols are kept in separate tables, so perf's kallsyms variant of
    /// the end fix-up (do not run into the next region) holds by construction.
    pub fn build(self) -> SymbolTable {
        self.build_with(false)
    }

    /// [`SymbolTableBuilder::build`]; with `mangled`, the names are demangled on first use
    /// (and where two symbols at the same start are compared, as perf compares demangled
    /// names).
    fn build_with(self, mangled: bool) -> SymbolTable {
        let SymbolTableBuilder { mut entries, names } = self;
        // Stable: among equal starts, input order decides ties like perf's rb-tree insert.
        // Sorted input (kallsyms mostly is) is checked first: the stable sort allocates a
        // scratch buffer of half the table even then (fresh pages: ~1 ms for 10^5 symbols).
        if !entries.is_sorted_by_key(|e| e.start) {
            entries.sort_by_key(|e| e.start);
        }
        // perf's symbols__fixup_end: zero-sized symbols run to the next symbol's start.
        let n = entries.len();
        for i in 1..n {
            let next_start = entries[i].start;
            let prev = &mut entries[i - 1];
            if prev.end == prev.start {
                prev.end = next_start;
            }
        }
        if let Some(last) = entries.last_mut() {
            if last.end == last.start {
                // perf: roundup(start, 4096) + 4096.
                last.end = last.start.saturating_add(4095) / 4096 * 4096 + 4096;
            }
        }
        // perf's symbols__fixup_duplicate: keep the best of symbols sharing a start. Where
        // sizes and bindings tie, perf compares demangled names: a table of mangled names
        // keeps such a run whole and chooses at lookup ([`SymbolTable::find`]), so that
        // only the names asked for are demangled (a C++ library has 10^4 such aliases).
        let mut kept = 0usize;
        let mut run = 0;
        while run < n {
            let start = entries[run].start;
            let end = run
                + entries[run..]
                    .iter()
                    .take_while(|e| e.start == start)
                    .count();
            let mut best = entries[run];
            let mut undecided = false;
            for &e in &entries[run + 1..end] {
                let (a, b) = (best.view(&names), e.view(&names));
                let first = match prefer_by_shape(&a, &b) {
                    Some(first) => first,
                    None if mangled => {
                        undecided = true;
                        break;
                    }
                    None => prefer_by_name(a.name, b.name),
                };
                if !first {
                    best = e;
                }
            }
            if undecided {
                entries.copy_within(run..end, kept);
                kept += end - run;
            } else {
                entries[kept] = best;
                kept += 1;
            }
            run = end;
        }
        entries.truncate(kept);
        entries.shrink_to_fit();
        let demangled = mangled.then(|| entries.iter().map(|_| OnceLock::new()).collect());
        SymbolTable {
            entries,
            names,
            demangled,
        }
    }
}

/// How perf's `choose_best_symbol` orders two symbols at the same address, before it looks
/// at names (sizes, then weak, then global):
/// true if `a` wins, `None` on a tie.
fn prefer_by_shape(a: &SymbolRef, b: &SymbolRef) -> Option<bool> {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if lb == 0 && la > 0 {
        return Some(true);
    }
    if la == 0 && lb > 0 {
        return Some(false);
    }
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wa != wb {
        return Some(wb);
    }
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga != gb {
        return Some(ga);
    }
    None
}

/// perf's `choose_best_symbol` by names: fewer leading underscores, then the longer name
/// (the first on equal lengths). True if `a` wins.
fn prefer_by_name(a: &str, b: &str) -> bool {
    let underscores = |s: &str| s.bytes().take_while(|&c| c == b'_').count();
    let (ua, ub) = (underscores(a), underscores(b));
    if ua != ub {
        return ub > ua;
    }
    a.len() >= b.len()
}

/// [`demangle`] without a copy of names that are not mangled (most C names).
fn demangle_cow(name: &str) -> std::borrow::Cow<'_, str> {
    if name.starts_with("_Z") || name.starts_with("_R") {
        std::borrow::Cow::Owned(demangle(name))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

impl SymbolTable {
    /// Builds a table from symbols in any order, applying perf's fix-ups (see
    /// [`SymbolTableBuilder::build`]).
    pub fn new(syms: Vec<Symbol>) -> SymbolTable {
        Self::builder_of(&syms).build()
    }

    /// [`SymbolTable::new`] for names as an ELF file spells them: each is demangled (as
    /// [`demangle`] does) when the table first gives it out.
    pub fn demangling(syms: Vec<Symbol>) -> SymbolTable {
        Self::builder_of(&syms).build_with(true)
    }

    fn builder_of(syms: &[Symbol]) -> SymbolTableBuilder {
        let bytes = syms.iter().map(|s| s.name.len()).sum();
        let mut b = SymbolTableBuilder::with_capacity(syms.len(), bytes);
        for s in syms {
            b.push(&s.name, s.start, s.end, s.binding);
        }
        b
    }

    /// The table with its names copied into an arena of its own, so that it no longer holds
    /// the text it shares (a kallsyms file read into memory is twice its names).
    pub fn with_own_names(self) -> SymbolTable {
        if matches!(self.names, Names::Owned(_)) {
            return self;
        }
        let bytes = self.entries.iter().map(|e| e.name(&self.names).len()).sum();
        let mut b = SymbolTableBuilder::with_capacity(self.entries.len(), bytes);
        for e in &self.entries {
            b.push(e.name(&self.names), e.start, e.end, e.binding());
        }
        // In the same order: the table was sorted and fixed up when it was built.
        SymbolTable {
            entries: b.entries,
            names: b.names,
            demangled: self.demangled,
        }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The symbol at an index.
    pub fn get(&self, index: u32) -> Option<SymbolRef<'_>> {
        let mut view = self.entries.get(index as usize)?.view(&self.names);
        if let Some(cell) = self.demangled.as_ref().and_then(|d| d.get(index as usize)) {
            let raw = view.name;
            let name = cell.get_or_init(|| match demangle_cow(raw) {
                std::borrow::Cow::Owned(d) if d != raw => Some(d.into_boxed_str()),
                _ => None,
            });
            if let Some(d) = name {
                view.name = d;
            }
        }
        Some(view)
    }

    /// Index of the symbol containing `addr`, if any: like perf, only the symbol with the
    /// closest start at or below `addr` is considered (an address past its end is unknown
    /// even if an earlier, bigger symbol encloses it).
    pub fn find(&self, addr: u64) -> Option<u32> {
        let pos = self.entries.partition_point(|s| s.start <= addr);
        let last = pos.checked_sub(1)?;
        let i = self.best_of_run(last);
        (addr < self.entries[i].end).then_some(i as u32)
    }

    /// The symbol perf keeps among those starting where entry `last` starts (the last of
    /// them): a run longer than one is left only in tables of mangled names, where the
    /// choice compares demangled names (see [`SymbolTableBuilder::build`]).
    fn best_of_run(&self, last: usize) -> usize {
        let start = self.entries[last].start;
        let first = last
            - self.entries[..last]
                .iter()
                .rev()
                .take_while(|e| e.start == start)
                .count();
        let mut best = first;
        for i in first + 1..=last {
            // get() gives demangled names (made once, then cached).
            let (Some(a), Some(b)) = (self.get(best as u32), self.get(i as u32)) else {
                continue;
            };
            if !prefer_by_shape(&a, &b).unwrap_or_else(|| prefer_by_name(a.name, b.name)) {
                best = i;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, start: u64, size: u64, binding: Binding) -> Symbol {
        Symbol {
            name: name.into(),
            start,
            end: start + size,
            binding,
        }
    }

    #[test]
    fn test_find_sized_and_zero_sized() {
        let t = SymbolTable::new(vec![
            sym("b", 0x2000, 0x10, Binding::Global),
            sym("a", 0x1000, 0, Binding::Global),
        ]);
        assert_eq!(t.find(0x1fff).and_then(|i| t.get(i)).unwrap().name, "a");
        assert_eq!(t.find(0x2005).and_then(|i| t.get(i)).unwrap().name, "b");
        assert_eq!(t.find(0x2010), None);
        assert_eq!(t.find(0xfff), None);
    }

    #[test]
    fn test_duplicates_choose_like_perf() {
        let t = SymbolTable::new(vec![
            sym("_IO_printf", 0x1000, 0x20, Binding::Global),
            sym("printf", 0x1000, 0x20, Binding::Global),
            sym("weak_one", 0x2000, 0x20, Binding::Weak),
            sym("local_one", 0x2000, 0x20, Binding::Local),
            sym("zero", 0x3000, 0, Binding::Global),
            sym("sized", 0x3000, 4, Binding::Local),
        ]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(t.find(0x1000).unwrap()).unwrap().name, "printf");
        assert_eq!(t.get(t.find(0x2000).unwrap()).unwrap().name, "local_one");
        assert_eq!(t.get(t.find(0x3000).unwrap()).unwrap().name, "sized");
    }

    #[test]
    fn test_demangling_table_equals_a_table_of_demangled_names() {
        let raw = vec![
            // At 0x1000 the demangled names decide (no underscore, longer wins); the mangled
            // ones would not (`_ZN…` has an underscore): perf compares demangled names.
            sym("_ZN5hello5worldEv", 0x1000, 0x10, Binding::Global),
            sym("hi", 0x1000, 0x10, Binding::Global),
            sym(
                "_ZN4core3fmt5write17h0123456789abcdefE",
                0x2000,
                0x10,
                Binding::Local,
            ),
            sym("plain_c", 0x3000, 0, Binding::Global),
            sym("_Znot valid", 0x4000, 8, Binding::Global),
            // A run of three: the binding decides the first pair, the names the second.
            sym("_ZN1a1bEv", 0x5000, 0x10, Binding::Local),
            sym("_ZN5hello5worldEv", 0x5000, 0x10, Binding::Global),
            sym("zz", 0x5000, 0x10, Binding::Global),
        ];
        let eager: Vec<Symbol> = raw
            .iter()
            .map(|s| Symbol {
                name: demangle(&s.name),
                ..s.clone()
            })
            .collect();
        let (lazy, eager) = (SymbolTable::demangling(raw), SymbolTable::new(eager));
        fn found(t: &SymbolTable, a: u64) -> Option<SymbolRef<'_>> {
            t.find(a).and_then(|i| t.get(i))
        }
        for addr in (0xff0..0x5100).step_by(4) {
            assert_eq!(found(&lazy, addr), found(&eager, addr), "{addr:#x}");
            // Twice: the second answer's names come from the cache.
            assert_eq!(found(&lazy, addr), found(&eager, addr), "{addr:#x}");
        }
        let name = |a: u64| lazy.get(lazy.find(a).unwrap()).unwrap().name.to_string();
        assert_eq!(name(0x1000), "hello::world");
        assert_eq!(name(0x2005), "core::fmt::write");
        assert_eq!(name(0x3000), "plain_c");
        assert_eq!(name(0x4000), "_Znot valid");
        assert_eq!(name(0x5008), "hello::world");
    }

    #[test]
    fn test_only_the_closest_symbol_counts() {
        let t = SymbolTable::new(vec![
            sym("outer", 0x1000, 0x100, Binding::Global),
            sym("inner", 0x1010, 0x10, Binding::Local),
        ]);
        assert_eq!(t.get(t.find(0x1015).unwrap()).unwrap().name, "inner");
        // perf does not fall back to the enclosing symbol.
        assert_eq!(t.find(0x1050), None);
    }
}
