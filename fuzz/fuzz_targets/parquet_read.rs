//! Any bytes as one table file of a Parquet export read back by `report --from-parquet`
//! (culprit_parquet::read::report): the report must return Ok or an error, never panic,
//! hang or allocate without bound. The export is made once per process from a committed
//! fixture; each input replaces one of its files (the first byte picks which), in a
//! directory of its own so the seed export stays intact.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use culprit_analysis::fleet::FleetOptions;
use culprit_analysis::hotspots::HotspotOptions;
use culprit_parquet::write::{export_file, ParquetOptions};
use culprit_symbols::{ProfileInput, SymbolizerOptions};
use libfuzzer_sys::fuzz_target;

/// The seed export's files (relative paths) and contents.
fn seed() -> &'static (PathBuf, Vec<(PathBuf, Vec<u8>)>) {
    static SEED: OnceLock<(PathBuf, Vec<(PathBuf, Vec<u8>)>)> = OnceLock::new();
    SEED.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("culprit-fuzz-parquet-{}", std::process::id()));
        let seed_dir = root.join("seed");
        let _ = std::fs::remove_dir_all(&root);
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/decode/tests/fixtures/cpu-clock-g.data");
        let input = ProfileInput::new(fixture, SymbolizerOptions::default());
        export_file(&input, &seed_dir, &ParquetOptions::default(), |_, _| {})
            .expect("the seed export");
        let mut files = Vec::new();
        let mut stack = vec![seed_dir.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(bytes) = std::fs::read(&p) {
                    files.push((p.strip_prefix(&seed_dir).unwrap_or(&p).to_path_buf(), bytes));
                }
            }
        }
        files.sort();
        (root, files)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let (root, files) = seed();
    if files.is_empty() {
        return;
    }
    let dir = root.join("case");
    let _ = std::fs::remove_dir_all(&dir);
    let target = pick as usize % files.len();
    for (i, (rel, content)) in files.iter().enumerate() {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&path, if i == target { bytes } else { content });
    }
    let opts = FleetOptions {
        hotspots: HotspotOptions::default(),
        children: None,
        unwind: false,
    };
    let _ = culprit_parquet::read::report(&[dir], &opts);
});
