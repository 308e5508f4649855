//! Every committed perf.data fixture finds the binaries it has samples in, and every file of
//! its build-id table, *inside the repository*, never at the path where it was recorded: a
//! DSO with a recorded build-id in the fixtures' build-id cache (`crates/decode/tests/fixtures/buildid-cache`, perf's
//! `.build-id/xx/rest/elf` layout, which the suite's `$HOME/.debug` is filled from), a DSO
//! without one (pipe mode, `-z`) under the fixtures' `--symfs` root
//! (`crates/decode/tests/fixtures/symfs`). The few exceptions are listed with why.
//!
//! This is the check that a suite passing only on the machine that recorded the fixtures
//! (where the recorded paths still hold the binaries) would have failed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use culprit_decode::model::{DsoKind, Profile};
use object::Object;

/// Fixtures whose unresolved DSOs are the point, or are not symbolized by any test.
const EXEMPT_FILES: &[(&str, &str)] = &[
    (
        "ibs-",
        "crafted IBS vectors: their IPs name /opt/ibs-vector/bin/ibs-vector, a binary that \
         never existed; tests read their registers, not names",
    ),
    (
        "parallel-regressions/",
        "fuzzer-found inputs kept as reader regressions; never symbolized",
    ),
];

/// DSOs (by path prefix) of one fixture that may stay unresolved, with why.
const EXEMPT_DSOS: &[(&str, &str, &str)] = &[(
    "system-wide-g.data",
    "/root/.rustup/",
    "a system-wide recording of whatever ran then (rustc): tests compare its names with perf \
     on the same machine, where both resolve them alike, and pin only comm and dso",
)];

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../decode/tests/fixtures")
}

/// Every committed perf.data fixture outside the real-world corpus (whose unresolved names
/// are the point: other people's machines).
fn fixture_files() -> Vec<(String, PathBuf)> {
    let roots = [
        ("", fixtures_root()),
        (
            "cli:",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures"),
        ),
    ];
    let mut out = Vec::new();
    for (tag, root) in roots {
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(&root).unwrap().to_string_lossy().to_string();
                if rel.starts_with("real-perf-data") || rel.starts_with("buildid-cache") {
                    continue;
                }
                if p.is_dir() {
                    stack.push(p);
                } else if rel.ends_with(".data") {
                    out.push((format!("{tag}{rel}"), p));
                }
            }
        }
    }
    out.sort();
    out
}

/// The DSOs that samples (their IPs and call-chain frames) land in.
fn hit_dsos(p: &Profile) -> BTreeSet<usize> {
    let mut hit = BTreeSet::new();
    for s in &p.samples {
        hit.extend(s.location.dso.map(|d| d as usize));
        for f in p.callchain(s) {
            hit.extend(f.location.dso.map(|d| d as usize));
        }
    }
    hit
}

fn build_id_of(path: &Path) -> Option<Vec<u8>> {
    let data = std::fs::read(path).ok()?;
    let obj = object::File::parse(&*data).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Where inside the repository the binary of `path` (recorded with `build_id`) is, or why
/// it is not.
fn resolve_in_repo(path: &str, build_id: Option<&[u8]>) -> Result<PathBuf, String> {
    let root = fixtures_root();
    match build_id {
        Some(id) => {
            let h = hex(id);
            let p = root
                .join("buildid-cache/.build-id")
                .join(&h[..2])
                .join(&h[2..])
                .join("elf");
            let actual = build_id_of(&p)
                .ok_or_else(|| format!("build-id {h}: no {} in the repository", p.display()))?;
            if culprit_symbols::same_build_id(id, &actual) {
                Ok(p)
            } else {
                Err(format!(
                    "{} has build-id {}, not {h}",
                    p.display(),
                    hex(&actual)
                ))
            }
        }
        None => {
            let p = root.join("symfs").join(path.trim_start_matches('/'));
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "no build-id recorded and no {} (the fixtures' --symfs)",
                    p.display()
                ))
            }
        }
    }
}

#[test]
fn test_every_fixture_finds_its_binaries_inside_the_repository() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (name, path) in fixture_files() {
        if let Some((_, why)) = EXEMPT_FILES.iter().find(|(pre, _)| name.starts_with(pre)) {
            eprintln!("{name}: exempt ({why})");
            continue;
        }
        let p = culprit_decode::Reader::open(&path)
            .collect()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // The DSOs with samples, and every file of the build-id table (perf writes the
        // objects with hits there).
        let mut wanted = hit_dsos(&p);
        wanted.extend((0..p.dsos.len()).filter(|&d| p.dsos[d].build_id.is_some()));
        for d in wanted {
            let dso = &p.dsos[d];
            if dso.kind != DsoKind::Elf {
                continue; // the kernel, the vDSO, anonymous memory: not files
            }
            let exempt = EXEMPT_DSOS
                .iter()
                .any(|(f, pre, _)| name.ends_with(f) && dso.path.starts_with(pre));
            match resolve_in_repo(&dso.path, dso.build_id.as_deref()) {
                Ok(_) => checked += 1,
                Err(_) if exempt => {}
                Err(why) => problems.push(format!("{name}: {}: {why}", dso.path)),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "fixtures name binaries the repository does not hold (add them to \
         crates/decode/tests/fixtures/buildid-cache or symfs, see its README):\n  {}",
        problems.join("\n  ")
    );
    assert!(checked >= 10, "only {checked} fixture DSOs checked");
}
