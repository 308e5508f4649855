//! Kernel symbols from a kallsyms file (`/proc/kallsyms` or perf's cached copy), split into
//! the kernel proper and one table per module, and the running kernel's build-id from
//! `/sys/kernel/notes`.

use std::collections::HashMap;
use std::ops::Range;

use crate::table::{Binding, SharedText, SymbolTable, SymbolTableBuilder};

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

impl Kallsyms {
    /// The tables with their names copied out of the text they were parsed from (see
    /// [`SymbolTable::with_own_names`]), which is then freed.
    pub fn with_own_names(self) -> Kallsyms {
        Kallsyms {
            kernel: self.kernel.with_own_names(),
            modules: self
                .modules
                .into_iter()
                .map(|(m, t)| (m, t.with_own_names()))
                .collect(),
            all_zero: self.all_zero,
        }
    }
}

/// Parses kallsyms text. Keeps the symbol types perf keeps (text, weak, data, bss).
pub fn parse_kallsyms(text: &str) -> Kallsyms {
    parse_kallsyms_bytes(text.as_bytes())
}

/// [`parse_kallsyms`] over bytes (copied: see [`parse_kallsyms_text`] to share them). A
/// name that is not UTF-8 is kept empty.
pub fn parse_kallsyms_bytes(bytes: &[u8]) -> Kallsyms {
    parse_kallsyms_text(std::sync::Arc::new(bytes.to_vec()))
}

/// [`parse_kallsyms`] over a shared text (such as a mapped file), which the tables keep:
/// their names are ranges of it, not copies. A name that is not UTF-8 reads as empty.
///
/// Written for speed (~10^5 lines; generic splitting and a `String` per symbol made this
/// 15 ms of a report's start): see [`kallsyms_line`]. One thread: two halves on two
/// threads were not faster on 2-core VMs (see docs/performance.md).
pub fn parse_kallsyms_text(text: SharedText) -> Kallsyms {
    let bytes: &[u8] = (*text).as_ref();
    // ~44 bytes a line.
    let mut kernel = SymbolTableBuilder::over_text(text.clone(), bytes.len() / 44);
    let mut modules: HashMap<&[u8], SymbolTableBuilder> = HashMap::new();
    let mut seen = 0u64;
    let mut nonzero = 0u64;
    let mut pos = 0;
    while pos < bytes.len() {
        let (fields, next) = kallsyms_line(bytes, pos);
        pos = next;
        let Some((addr, t, name, module)) = fields else {
            continue;
        };
        seen += 1;
        if addr != 0 {
            nonzero += 1;
        }
        if !matches!(t.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') {
            continue;
        }
        let binding = if t == b'w' || t == b'W' {
            Binding::Weak
        } else if t.is_ascii_uppercase() {
            Binding::Global
        } else {
            Binding::Local
        };
        match module {
            Some(m) if m.first() == Some(&b'[') => {
                let m = m.strip_prefix(b"[").unwrap_or(m);
                let m = m.strip_suffix(b"]").unwrap_or(m);
                modules
                    .entry(m)
                    .or_insert_with(|| SymbolTableBuilder::over_text(text.clone(), 0))
                    .push_range(name, addr, addr, binding);
            }
            _ => kernel.push_range(name, addr, addr, binding),
        }
    }
    Kallsyms {
        kernel: kernel.build(),
        modules: modules
            .into_iter()
            .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.build()))
            .collect(),
        all_zero: seen > 0 && nonzero == 0,
    }
}

/// A kallsyms line's address, type letter, name (its byte range in the text) and the
/// field after the name (the `[module]`).
type LineFields<'a> = (u64, u8, Range<usize>, Option<&'a [u8]>);

/// The line of kallsyms text starting at byte `pos`: its fields, split on ASCII white space
/// like `split_ascii_whitespace` (`None` for a line with fewer fields or a bad address), and
/// where the next line starts. Lines as the kernel prints them (`%px %c %s\t[%s]`: 16
/// digits) are read in one pass without searching for the line's end first.
fn kallsyms_line(b: &[u8], pos: usize) -> (Option<LineFields<'_>>, usize) {
    if let Some(head) = b.get(pos..pos + 19) {
        if head[16] == b' ' && head[18] == b' ' && head[17] > b' ' {
            if let Some(addr) = parse_hex16(&head[..16]).or_else(|| parse_hex(&head[..16])) {
                // The name runs to the first white space or control byte: a newline ends
                // the line, a tab brings the module. Others (a space, CR, form feed…) take
                // the general path.
                let name_at = pos + 19;
                let end = name_end(b, name_at);
                if end > name_at {
                    match b.get(end) {
                        None | Some(b'\n') => {
                            return (Some((addr, head[17], name_at..end, None)), end + 1);
                        }
                        Some(b'\t') => {
                            let line_end = memchr_newline(b, end);
                            let module = fields(&b[end..line_end]).next();
                            return (Some((addr, head[17], name_at..end, module)), line_end + 1);
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    let line_end = memchr_newline(b, pos);
    let line = &b[pos..line_end];
    let mut parts = fields(line).map(|f| {
        // Each field's range in `b` (fields are subslices of `line`).
        let at = pos + (f.as_ptr() as usize - line.as_ptr() as usize);
        (f, at..at + f.len())
    });
    let fields = (|| {
        let ((addr, _), (ty, _), (_, name)) = (parts.next()?, parts.next()?, parts.next()?);
        Some((parse_hex(addr)?, ty[0], name, parts.next().map(|(m, _)| m)))
    })();
    (fields, line_end + 1)
}

/// The index of the first byte at or after `from` that is a space or below (white space
/// and control bytes), or the length. Eight bytes at a time in a word: names are ~20
/// bytes, too short for a vector search's setup (`memchr2` for the newline and tab was a
/// tenth of the parse).
fn name_end(b: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(word) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        // A high bit for each byte below 0x21 (the lowest such byte exactly: borrows only
        // run toward higher bytes, which come later in the text).
        let low = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
        if low != 0 {
            return i + (low.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(|&c| c > b' ') {
        i += 1;
    }
    i
}

/// The fields of a line split on ASCII white space (as `str::split_ascii_whitespace`).
fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty())
}

/// The index of the first `\n` at or after `from`, or the length.
fn memchr_newline(b: &[u8], from: usize) -> usize {
    memchr::memchr(b'\n', &b[from..]).map_or(b.len(), |i| from + i)
}

/// Hex digit values by byte (`HEX_INVALID` for a byte that is not one).
const HEX_DIGIT: [u8; 256] = {
    let mut t = [HEX_INVALID; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        t[b'A' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};
const HEX_INVALID: u8 = 0x10;

/// A hexadecimal number that fits 64 bits, exactly as `u64::from_str_radix(_, 16)` reads it.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    let digits = match digits {
        [b'+', rest @ ..] if !rest.is_empty() => rest,
        _ => digits,
    };
    // Leading zeros do not count against the 16 digits.
    let first = digits
        .iter()
        .position(|&c| c != b'0')
        .unwrap_or(digits.len());
    let (zeros, digits) = digits.split_at(first);
    if digits.len() > 16 || (digits.is_empty() && zeros.is_empty()) {
        return None;
    }
    let mut v = 0u64;
    let mut bad = 0u8;
    for &c in digits {
        let d = HEX_DIGIT[c as usize];
        bad |= d;
        v = v << 4 | u64::from(d & 0xf);
    }
    (bad & HEX_INVALID == 0).then_some(v)
}

/// Exactly 16 hexadecimal digits (how the kernel prints an address), or `None`: then
/// [`parse_hex`] decides. Validated and combined eight digits at a time in a word, not
/// digit by digit (a chain of 16 dependent shifts): this was a large part of the parse.
fn parse_hex16(digits: &[u8]) -> Option<u64> {
    let d: &[u8; 16] = digits.try_into().ok()?;
    // Without stopping early, so that the 16 checks are done as one vector compare.
    if !d.iter().fold(true, |ok, c| ok & c.is_ascii_hexdigit()) {
        return None;
    }
    let (hi, lo) = d.split_at(8);
    Some(hex8(hi.try_into().ok()?) << 32 | hex8(lo.try_into().ok()?))
}

/// The value of eight hexadecimal digits (already checked).
fn hex8(digits: &[u8; 8]) -> u64 {
    const LOW_NIBBLES: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The first digit in the top byte.
    let x = u64::from_be_bytes(*digits);
    // '0'-'9' are 0x30-0x39; 'a'-'f' and 'A'-'F' have bit 6 set and their low nibble is
    // 1-6: add 9. No byte carries into the next (at most 15).
    let v = (x & LOW_NIBBLES) + ((x >> 6) & ONES) * 9;
    // Pairs of digits into bytes, pairs of bytes into 16 bits, then into 32.
    let v = ((v >> 8) & 0x00ff_00ff_00ff_00ff) << 4 | (v & 0x00ff_00ff_00ff_00ff);
    let v = ((v >> 16) & 0x0000_ffff_0000_ffff) << 8 | (v & 0x0000_ffff_0000_ffff);
    (v >> 32) << 16 | (v & 0xffff_ffff)
}

/// The address of `_text` (the start of the kernel's text) in kallsyms text, if listed and
/// not hidden (zero).
pub fn text_address(text: &[u8]) -> Option<u64> {
    let mut pos = 0usize;
    while pos < text.len() {
        let (fields, next) = kallsyms_line(text, pos);
        pos = next;
        if let Some((addr, _, name, None)) = fields {
            if text.get(name) == Some(b"_text") {
                return (addr != 0).then_some(addr);
            }
        }
    }
    None
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

    /// The plain reading of kallsyms lines the fast path must agree with: (module, address,
    /// type, name) of every kept line, in order.
    fn reference_fields(text: &str) -> Vec<(Option<String>, u64, char, String)> {
        let mut out = Vec::new();
        for line in text.lines() {
            let mut parts = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let module = parts
                .next()
                .filter(|m| m.starts_with('['))
                .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
            out.push((module, addr, ty.chars().next().unwrap(), name.to_string()));
        }
        out
    }

    fn fast_fields(text: &str) -> Vec<(Option<String>, u64, char, String)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < text.len() {
            let (f, next) = kallsyms_line(text.as_bytes(), pos);
            assert!(next > pos, "no progress at {pos}");
            pos = next;
            if let Some((addr, t, name, module)) = f {
                let module = module
                    .map(|m| std::str::from_utf8(m).unwrap())
                    .filter(|m| m.starts_with('['))
                    .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
                out.push((module, addr, t as char, text[name].to_string()));
            }
        }
        out
    }

    #[test]
    fn test_kallsyms_fast_path_agrees_with_plain_split() {
        let odd = "ffffffff81000000 T _text\n\
                   ffffffff81000010 t  two_spaces\n\
                   ffffffff81000020 t tail_space \n\
                   ffffffff81000030 t crlf\r\n\
                   81000040 t short_address\n\
                   +ffffffff8100005 t signed\n\
                   0000ffffffff81000060 t long_zeros\n\
                   ffffffffg1000070 t not_hex\n\
                   ffffffff81000080 t\n\
                   ffffffff81000090 t mod_fn\t[kvm]\n\
                   ffffffff810000a0 t mod_fn2\t[kvm] extra\n\
                   ffffffff810000b0 t after_tab\t\n\
                   ffffffff810000b8 t ctl\x01byte\n\
                   ffffffff810000b9 t vt\x0bname\n\
                   ffffffff810000ba t ff\x0cname\n\
                   ffffffff810000bb t eight888\n\
                   ffffffff810000bc t sixteen_chars_xx\tmod\n\
                   ffffffff810000bd t sixteen_chars_x\x02\n\
                   \n\
                   ffffffff810000c0 T no_newline";
        assert_eq!(fast_fields(odd), reference_fields(odd));
        // Every truncation of it too (a file cut anywhere).
        for cut in 0..odd.len() {
            assert_eq!(
                fast_fields(&odd[..cut]),
                reference_fields(&odd[..cut]),
                "cut {cut}"
            );
        }
        // Names in UTF-8 (a word of them holds bytes above 0x7f).
        let utf8 = "ffffffff81000000 t caf\u{e9}_na\u{ef}ve_\u{1f600}\n\
                    ffffffff81000010 t \u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\t[m\u{e9}]\n";
        assert_eq!(fast_fields(utf8), reference_fields(utf8));
        // And the running kernel's table, when it can be read.
        if let Ok(text) = std::fs::read_to_string("/proc/kallsyms") {
            assert_eq!(fast_fields(&text), reference_fields(&text));
        }
    }

    #[test]
    fn test_parse_hex_like_from_str_radix() {
        for s in [
            "0",
            "00",
            "f",
            "F",
            "ffffffffffffffff",
            "0000ffffffffffffffff",
            "1ffffffffffffffff",
            "",
            "g",
            "12 ",
            "-1",
            "+1",
            "+",
            "++1",
            "aB9",
        ] {
            assert_eq!(
                parse_hex(s.as_bytes()),
                u64::from_str_radix(s, 16).ok(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn test_parse_hex16_like_from_str_radix() {
        // Every digit value in every position, upper and lower case, and near misses of
        // the ranges (bytes next to '0'-'9', 'a'-'f', 'A'-'F' and with bit 5 or 6 flipped).
        let digits = b"0123456789abcdefABCDEF";
        let near = b"/:@G`g\x10\x19\x11pqPQ+- ";
        let mut cases: Vec<[u8; 16]> = vec![*b"ffffffff81000000", *b"0000000000000000"];
        for pos in 0..16 {
            for &c in digits.iter().chain(near.iter()) {
                let mut s = *b"ffffffff8badf00d";
                s[pos] = c;
                cases.push(s);
            }
        }
        // A spread of values (a fixed LCG: the same cases every run).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            cases.push(format!("{x:016x}").as_bytes().try_into().unwrap());
            cases.push(format!("{x:016X}").as_bytes().try_into().unwrap());
        }
        for s in cases {
            let want = std::str::from_utf8(&s)
                .ok()
                .filter(|t| !t.starts_with('+'))
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            assert_eq!(parse_hex16(&s), want, "{:?}", String::from_utf8_lossy(&s));
            // And with the general parser behind it, exactly from_str_radix.
            let both = parse_hex16(&s).or_else(|| parse_hex(&s));
            let radix = std::str::from_utf8(&s)
                .ok()
                .and_then(|t| u64::from_str_radix(t, 16).ok());
            assert_eq!(both, radix, "{:?}", String::from_utf8_lossy(&s));
        }
        assert_eq!(parse_hex16(b"0123"), None, "not 16 digits");
    }

    #[test]
    fn test_kallsyms_bytes_names_not_utf8_read_empty() {
        // A module line and a name that is not UTF-8 (kept empty; the others are fine).
        let mut text = b"ffffffff81000000 T _text\nffffffff81000100 t ".to_vec();
        text.extend_from_slice(&[0xff, 0xfe]);
        text.extend_from_slice(b"\nffffffff81000200 t after\nffffffffc0000000 t m_fn\t[kvm]\n");
        let k = parse_kallsyms_bytes(&text);
        let t = &k.kernel;
        let name = |t: &SymbolTable, a: u64| t.get(t.find(a).unwrap()).unwrap().name.to_string();
        assert_eq!(name(t, 0xffffffff81000010), "_text");
        assert_eq!(name(t, 0xffffffff81000110), "");
        assert_eq!(name(t, 0xffffffff81000210), "after");
        assert_eq!(name(&k.modules["kvm"], 0xffffffffc0000000), "m_fn");
        assert_eq!(text_address(&text), Some(0xffffffff81000000));
    }

    #[test]
    fn test_own_names_keep_every_symbol() {
        // Duplicates at one start (fixed up when built), a weak symbol, a name that is not
        // UTF-8, modules; this machine's table too when it can be read.
        let mut text = b"ffffffff81000000 T _text\nffffffff81000000 t _stext\n".to_vec();
        text.extend_from_slice(b"ffffffff81000100 W weak_fn\nffffffff81000200 t ");
        text.extend_from_slice(&[0xff, 0xfe]);
        text.extend_from_slice(b"\nffffffffc0000000 t m_fn\t[kvm]\nffffffffc0000100 t n\t[kvm]\n");
        let mut texts = vec![text];
        texts.extend(std::fs::read("/proc/kallsyms").ok());
        let all = |t: &SymbolTable| {
            (0..t.len() as u32)
                .map(|i| {
                    let s = t.get(i).unwrap();
                    (s.name.to_string(), s.start, s.end, s.binding)
                })
                .collect::<Vec<_>>()
        };
        for text in texts {
            let shared = parse_kallsyms_bytes(&text);
            let own = parse_kallsyms_bytes(&text).with_own_names();
            assert_eq!(all(&own.kernel), all(&shared.kernel));
            assert_eq!(own.modules.len(), shared.modules.len());
            for (m, t) in &shared.modules {
                assert_eq!(all(&own.modules[m]), all(t), "module {m}");
            }
            assert_eq!(own.all_zero, shared.all_zero);
        }
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
