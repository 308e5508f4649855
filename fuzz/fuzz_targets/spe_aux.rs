//! Fuzz target: arbitrary bytes as an ARM SPE AUX buffer through the packet decoder, the
//! record assembly and perf's event synthesis. The property: no panic, and every packet
//! length stays within the input.
#![no_main]

use culprit_decode::spe::{decode_packet, decode_records, synthesized_events};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while at < data.len() {
        match decode_packet(&data[at..]) {
            Ok((_, len)) => {
                assert!(len >= 1 && at + len <= data.len());
                at += len;
            }
            Err(_) => at += 1,
        }
    }
    let (records, skipped) = decode_records(data);
    assert!(skipped <= data.len());
    let events: usize = records.iter().map(|r| synthesized_events(r).len()).sum();
    std::hint::black_box(events);
});
