//! Kernel symbols from a kallsyms file (`/proc/kallsyms` or perf's cached copy), split into
//! the kernel proper and one table per module, and the running kernel's build-id from
//! `/sys/kernel/notes`.

use std::collections::HashMap;

use crate::table::{Binding, Symbol, SymbolTable};

/// Parsed kallsyms: the kernel's table and one per module (by module name).
#[derive(Debug, Default)]
pub struct Kallsyms {
    /// Symbols of the kernel image.
    pub kernel: SymbolTable,
    /// Symbols of each module, keyed by the module name as kallsyms prints it.
    pub modules: HashMap<String, SymbolTable>,
    /// Whether every address was zero (kptr_restrict hides them).
    pub all_zero: bool,
}

/// Parses kallsyms text. Keeps the symbol types perf keeps (text, weak, data, bss).
pub fn parse_kallsyms(text: &str) -> Kallsyms {
    let mut kernel = Vec::new();
    let mut modules: HashMap<String, Vec<Symbol>> = HashMap::new();
    let mut seen = 0u64;
    let mut nonzero = 0u64;
    for line in text.lines() {
        let mut parts = line.split_ascii_whitespace();
        let (Some(addr), Some(ty), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        seen += 1;
        if addr != 0 {
            nonzero += 1;
        }
        let Some(t) = ty.chars().next() else {
            continue;
        };
        if !matches!(t.to_ascii_uppercase(), 'T' | 'W' | 'D' | 'B') {
            continue;
        }
        let binding = if t == 'w' || t == 'W' {
            Binding::Weak
        } else if t.is_ascii_uppercase() {
            Binding::Global
        } else {
            Binding::Local
        };
        let sym = Symbol {
            name: name.to_string(),
            start: addr,
            end: addr,
            binding,
        };
        match parts.next() {
            Some(m) if m.starts_with('[') => {
                let m = m.trim_start_matches('[').trim_end_matches(']');
                modules.entry(m.to_string()).or_default().push(sym);
            }
            _ => kernel.push(sym),
        }
    }
    Kallsyms {
        kernel: SymbolTable::new(kernel),
        modules: modules
            .into_iter()
            .map(|(k, v)| (k, SymbolTable::new(v)))
            .collect(),
        all_zero: seen > 0 && nonzero == 0,
    }
}

/// The address of `_text` (the start of the kernel's text) in kallsyms text, if listed and
/// not hidden (zero).
pub fn text_address(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut parts = line.split_ascii_whitespace();
        let (addr, _ty, name) = (parts.next()?, parts.next()?, parts.next()?);
        if name != "_text" || parts.next().is_some() {
            return None;
        }
        u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0)
    })
}

/// Extracts the GNU build-id from an ELF note section image (`/sys/kernel/notes`).
pub fn build_id_from_notes(notes: &[u8]) -> Option<Vec<u8>> {
    let mut pos = 0usize;
    let rd = |p: usize| -> Option<u32> {
        notes
            .get(p..p + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    while pos + 12 <= notes.len() {
        let namesz = rd(pos)? as usize;
        let descsz = rd(pos + 4)? as usize;
        let ntype = rd(pos + 8)?;
        let name_at = pos + 12;
        let desc_at = name_at.checked_add(align4(namesz)?)?;
        let end = desc_at.checked_add(align4(descsz)?)?;
        let name = notes.get(name_at..name_at + namesz)?;
        if ntype == 3 && name.starts_with(b"GNU") {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        pos = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_kallsyms_splits_modules_and_filters_types() {
        let k = parse_kallsyms(
            "ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81000100 t helper\n\
             ffffffff81000200 A absolute_thing\n\
             ffffffff81000300 W weak_fn\n\
             ffffffffc0000000 t mod_fn\t[kvm]\n\
             garbage line\n",
        );
        assert!(!k.all_zero);
        let t = &k.kernel;
        // Same start: perf's fix-ups leave `_stext` zero-sized, so `_text` wins.
        assert_eq!(
            t.get(t.find(0xffffffff81000050).unwrap()).unwrap().name,
            "_text"
        );
        assert_eq!(
            t.get(t.find(0xffffffff81000250).unwrap()).unwrap().name,
            "helper"
        );
        assert_eq!(
            t.get(t.find(0xffffffff81000300).unwrap()).unwrap().name,
            "weak_fn"
        );
        let m = &k.modules["kvm"];
        assert_eq!(
            m.get(m.find(0xffffffffc0000010).unwrap()).unwrap().name,
            "mod_fn"
        );
    }

    #[test]
    fn test_parse_kallsyms_detects_hidden_addresses() {
        let k = parse_kallsyms("0000000000000000 T a\n0000000000000000 t b\n");
        assert!(k.all_zero);
    }

    #[test]
    fn test_build_id_from_notes() {
        let mut n = Vec::new();
        // A non-GNU note first, then the build-id note.
        for (name, ty, desc) in [
            (&b"Xen\0"[..], 1u32, &[1u8, 2][..]),
            (b"GNU\0", 3, &[0xab; 20]),
        ] {
            n.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            n.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            n.extend_from_slice(&ty.to_ne_bytes());
            n.extend_from_slice(name);
            n.extend_from_slice(desc);
            while n.len() % 4 != 0 {
                n.push(0);
            }
        }
        assert_eq!(build_id_from_notes(&n), Some(vec![0xab; 20]));
        assert_eq!(build_id_from_notes(&n[..10]), None);
    }
}
