//! Kernel symbols: perf's build-id cache copy of kallsyms stands in for the running kernel's
//! `/proc/kallsyms` (slow to read) only when it provably lists the same table.

use crate::common;

use std::path::{Path, PathBuf};

use culprit_decode::model::{Dso, DsoKind, Profile};
use culprit_symbols::{KernelSymbols, Query, Symbolizer, SymbolizerOptions};

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
            jitdump_dirs: Vec::new(),
            debuginfod: None,
            os_release: self.dir.join("osrelease"),
            kernel_symbols: KernelSymbols::Recorded,
            symfs: None,
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

/// The name of kernel address `addr` in a profile recorded on a kernel with build-id
/// `build_id` and release `release`, with `opts`; and the symbolizer's warnings.
fn recorded_name(
    opts: SymbolizerOptions,
    build_id: Option<&[u8]>,
    release: Option<&str>,
    addr: u64,
) -> (Option<String>, Vec<String>) {
    let mut p = Profile {
        dsos: vec![Dso {
            path: "[kernel.kallsyms]".into(),
            short_name: "[kernel.kallsyms]".into(),
            build_id: build_id.map(<[u8]>::to_vec),
            kind: DsoKind::Kernel,
            pid: None,
        }],
        ..Profile::default()
    };
    p.meta.os_release = release.map(str::to_string);
    let mut s = Symbolizer::new(opts);
    s.prefetch_kernel_symbols();
    let r = s.resolve(
        &p,
        Query {
            dso: Some(0),
            file_offset: addr,
            pid: -1,
        },
    );
    let name = r
        .symbol
        .and_then(|id| s.symbol(id))
        .map(|sym| sym.name.to_string());
    (name, s.warnings().to_vec())
}

/// Kernel addresses are named only with the recorded kernel's symbols: this machine's when
/// the build-ids match (or, without a recorded build-id, the releases), perf's cached copy
/// of the recorded build-id's, or the file the user gives; never silently another kernel's.
#[test]
fn test_kernel_names_come_only_from_the_recorded_kernel() {
    let base = 0xffff_ffff_8100_0000u64;
    let addr = base + 0x180;
    let m = Machine::new("symbols-kernel-provenance");
    write(
        &m.dir.join("proc-kallsyms"),
        &kallsyms(base, "from_proc", false),
    );
    write(&m.dir.join("osrelease"), "6.1.0-test\n");
    let name = |opts, id: Option<&[u8]>, rel| recorded_name(opts, id, rel, addr);

    // Same build-id: this machine's names, no warning.
    let (n, w) = name(m.opts(), Some(&BUILD_ID), None);
    assert_eq!((n.as_deref(), w.len()), (Some("from_proc"), 0));
    // No build-id, the same release: this machine's.
    let (n, w) = name(m.opts(), None, Some("6.1.0-test"));
    assert_eq!((n.as_deref(), w.len()), (Some("from_proc"), 0));
    // No build-id, another release: none, and why.
    let (n, w) = name(m.opts(), None, Some("3.4.0"));
    assert_eq!(n, None);
    assert!(
        w.len() == 1 && w[0].contains("3.4.0") && w[0].contains("6.1.0-test"),
        "{w:?}"
    );
    assert!(w[0].contains("--kallsyms"), "{w:?}");
    // Neither build-id nor release (old pipe files): none.
    let (n, w) = name(m.opts(), None, None);
    assert_eq!(n, None);
    assert!(w.len() == 1 && w[0].contains("neither"), "{w:?}");
    // A build-id, but this machine's cannot be read: none (not this machine's names)...
    let no_notes = SymbolizerOptions {
        kernel_notes: m.dir.join("no-notes"),
        ..m.opts()
    };
    let (n, w) = name(no_notes.clone(), Some(&BUILD_ID), Some("6.1.0-test"));
    assert_eq!(n, None, "{w:?}");
    // ... unless perf's cache has that kernel's kallsyms.
    write(&m.cache_copy(), &kallsyms(base, "from_cache", false));
    let (n, _) = name(no_notes, Some(&BUILD_ID), None);
    assert_eq!(n.as_deref(), Some("from_cache"));
    // Another build-id recorded, no copy: none.
    let (n, w) = name(m.opts(), Some(&[0x22; 20]), Some("6.1.0-test"));
    assert_eq!(n, None);
    assert!(
        w.len() == 1 && w[0].contains("not the one recorded"),
        "{w:?}"
    );

    std::fs::remove_file(m.cache_copy()).unwrap();

    // The user's kallsyms file names them whatever the file records.
    let given = m.dir.join("given-kallsyms");
    write(&given, &kallsyms(base, "from_given", false));
    let opts = SymbolizerOptions {
        kernel_symbols: KernelSymbols::Kallsyms(given),
        ..m.opts()
    };
    let (n, w) = name(opts, None, None);
    assert_eq!((n.as_deref(), w.len()), (Some("from_given"), 0));
    // A live view of this machine names them with its kernel's.
    let opts = SymbolizerOptions {
        kernel_symbols: KernelSymbols::Running,
        ..m.opts()
    };
    let (n, w) = name(opts, None, None);
    assert_eq!((n.as_deref(), w.len()), (Some("from_proc"), 0));
}

/// `--vmlinux`: a kernel ELF image's symbols name kernel addresses (a tiny image linked at
/// kernel addresses, built with the C compiler when there is one).
#[test]
fn test_vmlinux_symbols_name_kernel_addresses() {
    let m = Machine::new("symbols-kernel-vmlinux");
    let src = m.dir.join("k.c");
    write(
        &src,
        "void vm_first(void){}\nvoid vm_second(void){ vm_first(); }\nvoid _start(void){ vm_second(); }\n",
    );
    let vmlinux = m.dir.join("vmlinux");
    let built = std::process::Command::new("cc")
        .args([
            "-O0",
            "-mcmodel=kernel",
            "-fno-pie",
            "-no-pie",
            "-nostdlib",
            "-static",
        ])
        .args(["-Wl,-Ttext=0xffffffff81000000", "-Wl,--build-id", "-o"])
        .arg(&vmlinux)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("skipped: no C compiler for x86-64 kernel code");
        return;
    }
    let opts = SymbolizerOptions {
        kernel_symbols: KernelSymbols::Vmlinux(vmlinux),
        ..m.opts()
    };
    // No build-id nor release recorded: the given image is used all the same.
    let (n, w) = recorded_name(opts.clone(), None, None, 0xffff_ffff_8100_0008);
    assert_eq!((n.as_deref(), w.len()), (Some("vm_second"), 0), "{w:?}");
    // Another kernel's build-id recorded: used, with a warning.
    let (n, w) = recorded_name(opts, Some(&[0x33; 20]), None, 0xffff_ffff_8100_0001);
    assert_eq!(n.as_deref(), Some("vm_first"));
    assert!(
        w.len() == 1 && w[0].contains("not the recorded kernel's"),
        "{w:?}"
    );
}
