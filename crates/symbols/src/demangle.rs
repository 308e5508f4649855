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
                return s;
            }
        }
    }
    name.to_string()
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
    fn test_demangle_c_unchanged() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Znot valid"), "_Znot valid");
    }
}
