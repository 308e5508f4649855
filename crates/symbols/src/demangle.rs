//! Demangling like perf's default output: Rust names without the hash, C++ names without
//! parameter lists; anything else unchanged.

/// Demangles a symbol name, or returns it unchanged.
pub fn demangle(name: &str) -> String {
    // rustc-demangle also accepts plain C++ `_ZN…E` names: only trust it for real Rust ones.
    if name.starts_with("_R") || is_rust_legacy(without_llvm_suffix(name)) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            // `{:#}` drops the `::h0123…` hash, as perf's rust_demangle_sym does.
            return format!("{d:#}");
        }
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = cpp_demangle::DemangleOptions::new().no_params();
            if let Ok(s) = sym.demangle_with_options(&opts) {
                return gnu_literal_suffixes(&s);
            }
        }
    }
    name.to_string()
}

/// GNU's (libiberty's, so perf's and c++filt's) spelling of integer template arguments:
/// cpp_demangle writes `A<(unsigned int)0>` where GNU writes `A<0u>`. GNU keeps the cast
/// form for the other types (`(char)97`, `(short)8`), as cpp_demangle does.
fn gnu_literal_suffixes(name: &str) -> String {
    const SUFFIXES: &[(&str, &str)] = &[
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
    ];
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    'scan: while let Some(open) = rest.find('(') {
        for (cast, suffix) in SUFFIXES {
            let Some(after) = rest[open..].strip_prefix(cast) else {
                continue;
            };
            let sign = usize::from(after.starts_with('-'));
            let digits = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                continue;
            }
            out.push_str(&rest[..open]);
            out.push_str(&after[..sign + digits]);
            out.push_str(suffix);
            rest = &after[sign + digits..];
            continue 'scan;
        }
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
    }
    out.push_str(rest);
    out
}

/// The name without the `.llvm.NNNN` suffix LLVM gives local symbols it promotes to global
/// (ThinLTO): `_ZN…17h0123456789abcdefE.llvm.1234567890`. rustc-demangle drops the suffix
/// (like rustfilt), but the hash test must see the name's end.
fn without_llvm_suffix(name: &str) -> &str {
    match name.find(".llvm.") {
        Some(i) => &name[..i],
        None => name,
    }
}

/// Legacy Rust symbols end in a 16-hex-digit hash path component: `17h0123456789abcdefE`.
fn is_rust_legacy(name: &str) -> bool {
    let Some(body) = name.strip_suffix('E') else {
        return false;
    };
    let Some(pos) = body.rfind("17h") else {
        return false;
    };
    let hash = &body[pos + 3..];
    hash.len() == 16 && hash.bytes().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_demangle_rust_legacy_drops_hash() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
    }

    #[test]
    fn test_demangle_rust_legacy_with_llvm_suffix() {
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE.llvm.1234567890"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(
            demangle("_ZN6unwind5frame8frame_in17h3d21f3863d0e41ceE.llvm.16285473514433299877"),
            "unwind::frame::frame_in"
        );
    }

    #[test]
    fn test_demangle_rust_v0() {
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }

    #[test]
    fn test_demangle_cpp_without_params() {
        assert_eq!(demangle("_ZN3foo3barEi"), "foo::bar");
        assert_eq!(demangle("_Z5helloPKc"), "hello");
    }

    #[test]
    fn test_demangle_cpp_template_literals_as_gnu() {
        // Expected values: binutils 2.40 `c++filt -p` (GNU libiberty, what perf uses) on
        // symbols g++ 12 emitted for these template arguments.
        let cases = [
            ("_ZN1AILj0EE1fEi", "A<0u>::f"),
            ("_ZN1AILj4000000000EE1fEi", "A<4000000000u>::f"),
            ("_ZN1BILl3EE1fEi", "B<3l>::f"),
            ("_ZN1CILm4EE1fEi", "C<4ul>::f"),
            ("_ZN1DILx5EE1fEi", "D<5ll>::f"),
            ("_ZN1EILy6EE1fEi", "E<6ull>::f"),
            ("_ZN1FILb1EE1fEi", "F<true>::f"),
            ("_ZN1GILc97EE1fEi", "G<(char)97>::f"),
            ("_ZN1HILi7EE1fEi", "H<7>::f"),
            ("_ZN1IILs8EE1fEi", "I<(short)8>::f"),
            ("_ZN1JILh9EE1fEi", "J<(unsigned char)9>::f"),
            ("_ZN1KILin2EE1fEi", "K<-2>::f"),
            ("_ZN1BILln3EE1fEi", "B<-3l>::f"),
        ];
        for (mangled, gnu) in cases {
            assert_eq!(demangle(mangled), gnu, "{mangled}");
        }
        // A cast not followed by a literal is left alone.
        assert_eq!(gnu_literal_suffixes("f((long)x)"), "f((long)x)");
    }

    #[test]
    fn test_demangle_c_unchanged() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Znot valid"), "_Znot valid");
    }
}
