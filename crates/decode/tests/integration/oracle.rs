//! A second, independent oracle: linux-perf-data's own parser must see the same samples (ip,
//! pid, tid, time, cpu, period, RAW size) in the fixtures.

use linux_perf_data::linux_perf_event_reader::EventRecord;
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use crate::common::fixture;

type Key = (u64, i32, i32, u64, u32, u64, usize);

#[test]
fn test_read_file_agrees_with_linux_perf_data() {
    for file in [
        "cpu-clock-c.data",
        "cpu-clock-g.data",
        "two-events.data",
        "system-wide-g.data",
        "exec-g.data",
        "dwarf.data",
        "compressed-g.data",
        "ibs-fam17h_m31_zen2.data",
    ] {
        let bytes = std::fs::read(fixture(file)).unwrap();
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(std::io::Cursor::new(&bytes[..])).unwrap();
        let mut theirs: Vec<Key> = Vec::new();
        while let Some(r) = record_iter.next_record(&mut perf_file).unwrap() {
            if let PerfFileRecord::EventRecord { record, .. } = r {
                if let Ok(EventRecord::Sample(s)) = record.parse() {
                    theirs.push((
                        s.timestamp.unwrap_or(0),
                        s.pid.unwrap_or(-1),
                        s.tid.unwrap_or(-1),
                        s.ip.unwrap_or(0),
                        s.cpu.unwrap_or(0),
                        s.period.unwrap_or(0),
                        s.raw.map_or(0, |r| r.len()),
                    ));
                }
            }
        }
        let p = culprit_decode::Reader::from_bytes(&bytes)
            .collect()
            .unwrap();
        let mut ours: Vec<Key> = p
            .samples
            .iter()
            .map(|s| (s.time, s.pid, s.tid, s.ip, s.cpu, s.period, p.raw(s).len()))
            .collect();
        // linux-perf-data has no fixed-period fallback: compare periods only where present.
        if p.events.iter().all(|e| e.sample_type & (1 << 8) == 0) {
            ours.iter_mut().for_each(|k| k.5 = 0);
        }
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs, "{file}");
    }
}
