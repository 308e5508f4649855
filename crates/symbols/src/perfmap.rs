//! JIT symbol maps, `/tmp/perf-PID.map`: one `START SIZE name` line per symbol, hex numbers.

use crate::table::{Binding, Symbol, SymbolTable};

/// Parses a perf map file; malformed lines are skipped.
pub fn parse_perf_map(text: &str) -> SymbolTable {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut syms = Vec::new();
    for line in text.lines() {
        let mut parts = line.trim().splitn(3, ' ');
        let (Some(start), Some(size), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Some(start), Some(size)) = (hex(start), hex(size)) else {
            continue;
        };
        syms.push(Symbol {
            name: name.trim().to_string(),
            start,
            end: start.saturating_add(size),
            binding: Binding::Global,
        });
    }
    SymbolTable::new(syms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_perf_map() {
        let t = parse_perf_map(
            "7f0000001000 40 LazyCompile:~foo bar.js:1\n0x7f0000002000 0x10 stub\nbad\n",
        );
        assert_eq!(t.len(), 2);
        assert_eq!(
            t.get(t.find(0x7f000000103f).unwrap()).unwrap().name,
            "LazyCompile:~foo bar.js:1"
        );
        assert_eq!(t.find(0x7f0000001040), None);
        assert_eq!(t.get(t.find(0x7f000000200f).unwrap()).unwrap().name, "stub");
    }
}
