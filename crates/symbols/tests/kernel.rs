//! Kernel symbols: perf's build-id cache copy of kallsyms stands in for the running kernel's
//! `/proc/kallsyms` (slow to read) only when it provably lists the same table.

mod common;

use std::path::{Path, PathBuf};

use culprit_decode::model::{Dso, DsoKind, Profile};
use culprit_symbols::{Query, Symbolizer, SymbolizerOptions};

const BUILD_ID: [u8; 20] = [0x5a; 20];

/// `/sys/kernel/notes` with one GNU build-id note.
fn notes(id: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend_from_slice(&4u32.to_ne_bytes());
    n.extend_from_slice(&(id.len() as u32).to_ne_bytes());
    n.extend_from_slice(&3u32.to_ne_bytes());
    n.extend_from_slice(b"GNU\0");
    n.extend_from_slice(id);
    n
}

/// kallsyms text with the kernel at `base`; `name` is the symbol at `base + 0x100`.
fn kallsyms(base: u64, name: &str, module: bool) -> String {
    let mut t = format!(
        "{base:016x} T _stext\n{base:016x} T _text\n{:016x} T {name}\n{:016x} T _etext\n",
        base + 0x100,
        base + 0x1000
    );
    if module {
        t.push_str("ffffffffc0000000 t mod_fn\t[kvm]\n");
    }
    // A pseudo-module, as on every kernel with ftrace.
    t.push_str("ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n");
    t
}

struct Machine {
    dir: PathBuf,
}

impl Machine {
    /// A scratch "machine": notes of the running kernel, its kallsyms, a build-id cache.
    fn new(name: &str) -> Machine {
        let dir = common::scratch(name);
        std::fs::write(dir.join("notes"), notes(&BUILD_ID)).unwrap();
        Machine { dir }
    }

    fn cache_copy(&self) -> PathBuf {
        let hex: String = BUILD_ID.iter().map(|b| format!("{b:02x}")).collect();
        let d = self.dir.join("cache/[kernel.kallsyms]").join(hex);
        std::fs::create_dir_all(&d).unwrap();
        d.join("kallsyms")
    }

    fn opts(&self) -> SymbolizerOptions {
        SymbolizerOptions {
            debug_root: self.dir.join("none"),
            buildid_cache: Some(self.dir.join("cache")),
            kallsyms: self.dir.join("proc-kallsyms"),
            kernel_notes: self.dir.join("notes"),
            modules: self.dir.join("proc-modules"),
            perf_map_dir: self.dir.join("none"),
        }
    }

    /// The name of kernel address `addr` in a profile recorded on this kernel; `prefetch`:
    /// through [`Symbolizer::prefetch_kernel_symbols`], and the same through
    /// [`Symbolizer::load_kernel_symbols`].
    fn name(&self, addr: u64, prefetch: bool) -> Option<String> {
        let name = self.name_with(
            addr,
            prefetch.then_some(Symbolizer::prefetch_kernel_symbols),
        );
        if prefetch {
            let loaded = self.name_with(addr, Some(Symbolizer::load_kernel_symbols));
            assert_eq!(name, loaded, "prefetched and loaded kernel symbols differ");
        }
        name
    }

    /// [`Machine::name`] with `early` called on the symbolizer before the lookup.
    fn name_with(&self, addr: u64, early: Option<fn(&mut Symbolizer)>) -> Option<String> {
        let p = Profile {
            dsos: vec![Dso {
                path: "[kernel.kallsyms]".into(),
                short_name: "[kernel.kallsyms]".into(),
                build_id: Some(BUILD_ID.to_vec()),
                kind: DsoKind::Kernel,
                pid: None,
            }],
            ..Profile::default()
        };
        let mut s = Symbolizer::new(self.opts());
        if let Some(early) = early {
            early(&mut s);
        }
        let r = s.resolve(
            &p,
            Query {
                dso: Some(0),
                file_offset: addr,
                pid: -1,
            },
        );
        r.symbol
            .and_then(|id| s.symbol(id))
            .map(|sym| sym.name.to_string())
    }
}

fn write(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
}

#[test]
fn test_cached_kallsyms_used_only_when_it_matches_the_running_kernel() {
    let base = 0xffff_ffff_8100_0000u64;
    let addr = base + 0x180;
    for prefetch in [false, true] {
        let m = Machine::new(&format!("symbols-kallsyms-{prefetch}"));
        // The two files name the function differently, to tell which one was read.
        write(
            &m.dir.join("proc-kallsyms"),
            &kallsyms(base, "from_proc", false),
        );
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_proc"),
            "no copy"
        );

        write(&m.cache_copy(), &kallsyms(base, "from_cache", false));
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_cache"),
            "same kernel"
        );
        // An empty module list is no module.
        write(&m.dir.join("proc-modules"), "\n");
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_cache"),
            "no modules"
        );

        // A module is loaded: its addresses could differ from the copy's.
        write(
            &m.dir.join("proc-modules"),
            "kvm 1200000 0 - Live 0xffffffffc0000000\n",
        );
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_proc"),
            "modules"
        );
        std::fs::remove_file(m.dir.join("proc-modules")).unwrap();

        // The copy lists modules.
        write(&m.cache_copy(), &kallsyms(base, "from_cache", true));
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_proc"),
            "copy has modules"
        );

        // Another boot: KASLR put the kernel elsewhere.
        write(
            &m.cache_copy(),
            &kallsyms(base + 0x20_0000, "from_cache", false),
        );
        assert_eq!(
            m.name(addr, prefetch).as_deref(),
            Some("from_proc"),
            "moved kernel"
        );

        // Hidden addresses (kptr_restrict): the copy cannot be checked; the kernel's file
        // is read (and gives no names, as before).
        write(&m.cache_copy(), &kallsyms(base, "from_cache", false));
        write(
            &m.dir.join("proc-kallsyms"),
            &kallsyms(0, "from_proc", false),
        );
        assert_eq!(m.name(addr, prefetch), None, "hidden addresses");

        // Another running kernel: its copy is not the recorded kernel's.
        write(
            &m.dir.join("proc-kallsyms"),
            &kallsyms(base, "from_proc", false),
        );
        std::fs::write(m.dir.join("notes"), notes(&[0x11; 20])).unwrap();
        let other: String = [0x11u8; 20].iter().map(|b| format!("{b:02x}")).collect();
        let d = m.dir.join("cache/[kernel.kallsyms]").join(other);
        std::fs::create_dir_all(&d).unwrap();
        write(&d.join("kallsyms"), &kallsyms(base, "other_kernel", false));
        let name = m.name(addr, prefetch);
        assert_ne!(
            name.as_deref(),
            Some("other_kernel"),
            "another kernel's copy"
        );
    }
}
