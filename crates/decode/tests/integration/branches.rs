//! Branch stacks of real files: entries kept per sample, both ends resolved, HW_INDEX kept.

use std::path::PathBuf;

use culprit_decode::model::CpuMode;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real-perf-data")
        .join(name)
}

#[test]
fn test_lbr_entries_are_kept_and_resolved() {
    // `perf record -b -- echo` on Skylake (kernel 4.14): perf report --branch-stack counts
    // 416 entries; 29 of them are empty (0 -> 0) and resolve nowhere.
    let p =
        culprit_decode::Reader::open(corpus("google-perf_data_converter/perf.data.branch-4.14"))
            .collect()
            .unwrap();
    let entries: Vec<_> = p.samples.iter().flat_map(|s| p.branches(s)).collect();
    assert_eq!(entries.len(), 416);
    for s in &p.samples {
        assert_eq!(p.branches(s).len(), s.branch_count as usize);
        assert_eq!(s.branch_hw_index, None);
    }
    let empty = entries.iter().filter(|e| e.from == 0 && e.to == 0);
    assert!(empty
        .clone()
        .all(|e| e.from_location.dso.is_none() && e.from_cpumode == CpuMode::Unknown));
    assert_eq!(empty.count(), 29);
    // Kernel branches resolve in the kernel's map, user ones in ld.so's.
    assert!(entries
        .iter()
        .any(|e| e.from_cpumode == CpuMode::Kernel && e.from_location.dso.is_some()));
    let user = entries
        .iter()
        .find(|e| e.from_cpumode == CpuMode::User)
        .expect("user branches");
    let dso = p.dso(&user.from_location).unwrap();
    assert_eq!(dso.short_name, "ld-2.23.so");
    // Skylake reports cycles and prediction.
    assert!(entries.iter().any(|e| e.cycles() > 0));
    assert!(entries.iter().any(|e| e.mispred()));
}

#[test]
fn test_hw_index_is_kept_when_the_attr_asks() {
    let p = culprit_decode::Reader::open(corpus(
        "google-perf_data_converter/perf.data.branch_stack_hw_index",
    ))
    .collect()
    .unwrap();
    let with: Vec<_> = p.samples.iter().filter(|s| s.branch_count > 0).collect();
    assert!(!with.is_empty());
    for s in with {
        let e = &p.events[usize::from(s.event)];
        assert_ne!(e.branch_sample_type & (1 << 17), 0);
        assert!(s.branch_hw_index.is_some());
    }
}
