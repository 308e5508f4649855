//! A sorted symbol table with perf's fix-ups: zero-sized symbols extend to the next symbol,
//! and symbols sharing a start address are reduced to the one perf would show.

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
    /// Demangled name (Rust without the hash, C++ without parameters, like perf).
    pub name: String,
    /// First address (SVMA; kernel address for the kernel and modules).
    pub start: u64,
    /// One past the last address (after perf's fix-ups of zero sizes).
    pub end: u64,
    /// Binding, used to choose among aliases.
    pub binding: Binding,
}

/// Symbols sorted by start address, without duplicates at the same start.
#[derive(Debug, Default, Clone)]
pub struct SymbolTable {
    syms: Vec<Symbol>,
}

/// How perf's `choose_best_symbol` orders two symbols at the same address: true if `a` wins.
fn prefer_first(a: &Symbol, b: &Symbol) -> bool {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if lb == 0 && la > 0 {
        return true;
    }
    if la == 0 && lb > 0 {
        return false;
    }
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wb && !wa {
        return true;
    }
    if wa && !wb {
        return false;
    }
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga && !gb {
        return true;
    }
    if gb && !ga {
        return false;
    }
    let underscores = |s: &str| s.bytes().take_while(|&c| c == b'_').count();
    let (ua, ub) = (underscores(&a.name), underscores(&b.name));
    if ub > ua {
        return true;
    }
    if ua > ub {
        return false;
    }
    a.name.len() >= b.name.len()
}

impl SymbolTable {
    /// Builds a table from symbols in any order, applying perf's fix-ups.
    ///
    /// Kernel and module symbols are kept in separate tables, so perf's kallsyms variant of
    /// the end fix-up (do not run into the next region) holds by construction.
    pub fn new(mut syms: Vec<Symbol>) -> SymbolTable {
        // Stable: among equal starts, input order decides ties like perf's rb-tree insert.
        syms.sort_by_key(|s| s.start);
        // perf's symbols__fixup_end: zero-sized symbols run to the next symbol's start.
        let n = syms.len();
        for i in 1..n {
            let next_start = syms[i].start;
            let prev = &mut syms[i - 1];
            if prev.end == prev.start {
                prev.end = next_start;
            }
        }
        if let Some(last) = syms.last_mut() {
            if last.end == last.start {
                // perf: roundup(start, 4096) + 4096.
                last.end = last.start.saturating_add(4095) / 4096 * 4096 + 4096;
            }
        }
        // perf's symbols__fixup_duplicate: keep the best of symbols sharing a start.
        let mut out: Vec<Symbol> = Vec::with_capacity(n);
        for s in syms {
            match out.last_mut() {
                Some(cur) if cur.start == s.start => {
                    if !prefer_first(cur, &s) {
                        *cur = s;
                    }
                }
                _ => out.push(s),
            }
        }
        SymbolTable { syms: out }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol at an index.
    pub fn get(&self, index: u32) -> Option<&Symbol> {
        self.syms.get(index as usize)
    }

    /// Index of the symbol containing `addr`, if any: like perf, only the symbol with the
    /// closest start at or below `addr` is considered (an address past its end is unknown
    /// even if an earlier, bigger symbol encloses it).
    pub fn find(&self, addr: u64) -> Option<u32> {
        let pos = self.syms.partition_point(|s| s.start <= addr);
        let i = pos.checked_sub(1)?;
        let s = &self.syms[i];
        (addr < s.end).then_some(i as u32)
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
