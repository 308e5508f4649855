//! IBS vector files: every sample's RAW payload and fields equal what perf 6.1 printed for it
//! (`ibs-vectors.json`).

use culprit_decode::Reader;

use crate::common::*;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn num(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::String(s) => {
            u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
        }
        v => v.as_u64().unwrap(),
    }
}

#[test]
fn test_read_file_ibs_raw_payloads_match_vectors() {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("ibs-vectors.json")).unwrap()).unwrap();
    let samples = json["samples"].as_array().unwrap();
    let mut checked = 0;
    for variant in json["variants"].as_array().unwrap() {
        let name = variant["name"].as_str().unwrap();
        let p = Reader::open(fixture(&format!("ibs-{name}.data")))
            .collect()
            .unwrap();
        let want: Vec<_> = samples.iter().filter(|s| s["variant"] == name).collect();
        assert_eq!(p.samples.len(), want.len(), "{name}");
        for (s, w) in p.samples.iter().zip(&want) {
            assert_eq!(hex(p.raw(s)), w["raw_hex"].as_str().unwrap(), "{name}");
            assert_eq!(p.raw(s).len() as u64, num(&w["raw_size"]));
            assert_eq!(s.ip, num(&w["ip"]), "{name}");
            assert_eq!(s.pid as u64, num(&w["pid"]));
            assert_eq!(s.tid as u64, num(&w["tid"]));
            assert_eq!(s.time, num(&w["time"]));
            assert_eq!(s.cpu as u64, num(&w["cpu"]));
            assert_eq!(s.period, num(&w["period"]));
            assert_eq!(s.id, Some(num(&w["sample_id"])));
            assert_eq!(
                p.events[s.event as usize].attr_type as u64,
                num(&w["attr_type"])
            );
            assert_eq!(p.str(s.comm), "ibs-vector");
            checked += 1;
        }
    }
    assert_eq!(checked, 100);
}
