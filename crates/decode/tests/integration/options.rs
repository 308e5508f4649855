//! `Reader` options that leave parts of samples out change exactly those parts.

use std::path::Path;

use culprit_decode::Reader;
use serde_json::Value;

use crate::common::fixture;
use crate::stream::{profile_view, sample_view};

/// Samples and profile of a streaming read that skips chains and/or locations.
fn read_with(path: &Path, (chains, locations): (bool, bool)) -> (Vec<Value>, Value) {
    let mut samples = Vec::new();
    let p = Reader::open(path)
        .skip_callchains(chains)
        .skip_locations(locations)
        .fold(|p, s| samples.push(sample_view(p, s)))
        .expect("read with options");
    (samples, profile_view(&p))
}

const FIXTURES: &[&str] = &[
    "cpu-clock-g.data",
    "cpu-clock-c.data",
    "system-wide-g.data",
    "two-events.data",
    "exec-g.data",
    "compressed-g.data",
    "dwarf.data",
    "ibs-fam19h_m11_zen4.data",
];

#[test]
fn test_skip_locations_and_chains_change_only_those() {
    for name in FIXTURES {
        let path = fixture(name);
        let mut full = Vec::new();
        let p = Reader::open(&path)
            .fold(|p, s| full.push(sample_view(p, s)))
            .expect("plain read");
        let full_profile = profile_view(&p);
        let (lean, lean_profile) = read_with(&path, (true, true));
        assert_eq!(lean_profile, full_profile, "{name}: profile");
        assert_eq!(lean.len(), full.len(), "{name}: sample count");
        let mut resolved = 0;
        for (i, (mut a, b)) in full.into_iter().zip(lean).enumerate() {
            // What the options leave out: the location (an address in no mapping), the DSO
            // it names, the chain.
            let ip = a["sample"]["ip"].clone();
            resolved += usize::from(!a["dso"].is_null());
            a["sample"]["location"] = serde_json::json!({"dso": null, "file_offset": ip});
            a["dso"] = Value::Null;
            a["chain"] = serde_json::json!([]);
            assert_eq!(a, b, "{name}: sample {i}");
        }
        assert!(resolved > 0, "{name}: the plain read resolves locations");
    }
}

#[test]
fn test_skip_locations_leaves_chain_frames_unresolved_too() {
    for name in ["cpu-clock-g.data", "system-wide-g.data", "exec-g.data"] {
        let path = fixture(name);
        let mut full = Vec::new();
        Reader::open(&path)
            .fold(|p, s| full.push(sample_view(p, s)))
            .expect("plain read");
        let (lean, _) = read_with(&path, (false, true));
        let mut frames = 0;
        for (i, (mut a, b)) in full.into_iter().zip(lean).enumerate() {
            let ip = a["sample"]["ip"].clone();
            a["sample"]["location"] = serde_json::json!({"dso": null, "file_offset": ip});
            a["dso"] = Value::Null;
            for f in a["chain"].as_array_mut().unwrap() {
                // [addr, frame, dso]
                let addr = f[0].clone();
                f[1]["location"] = serde_json::json!({"dso": null, "file_offset": addr});
                f[2] = Value::Null;
                frames += 1;
            }
            assert_eq!(a, b, "{name}: sample {i}");
        }
        assert!(frames > 0, "{name}: chains");
    }
}

#[test]
fn test_sampled_elf_build_ids_are_the_sampled_elf_files_of_the_header() {
    // What the header alone gives is what the full read gives the ELF DSOs by build-id;
    // the kernel, modules and the vDSO are left out.
    let mut listed = 0;
    for name in [
        "cpu-clock-g.data",
        "system-wide-g.data",
        "two-events.data",
        "exec-g.data",
        "dwarf.data",
    ] {
        let path = crate::common::fixture(name);
        let ids = Reader::open(&path).sampled_elf_build_ids();
        let profile = culprit_decode::Reader::open(&path).collect().expect("read");
        for (p, id) in &ids {
            assert!(!p.starts_with('['), "{name}: {p} listed");
            let dso = profile.dsos.iter().find(|d| &d.path == p);
            let dso = dso.unwrap_or_else(|| panic!("{name}: {p} is no DSO of the profile"));
            assert_eq!(dso.kind, culprit_decode::model::DsoKind::Elf, "{name}: {p}");
            assert_eq!(dso.build_id.as_ref(), Some(id), "{name}: {p}");
        }
        listed += ids.len();
    }
    assert!(listed > 0, "no fixture lists a build-id");
    // Pipe mode: nothing from the header.
    let pipe = crate::common::fixture("pipe-g.data");
    assert_eq!(Reader::open(&pipe).sampled_elf_build_ids(), vec![]);
}
