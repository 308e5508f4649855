//! Helpers shared by the symbolizer's integration tests.

use std::path::{Path, PathBuf};

/// A fresh scratch directory under target/test-tmp/NAME.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-tmp")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
