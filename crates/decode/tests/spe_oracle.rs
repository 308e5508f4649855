//! ARM SPE decoding against perf 6.1's output on a crafted perf.data.
//!
//! fixtures/spe/gen_spe_perf_data.py writes `spe-crafted.data` and its AUX payload
//! `spe-crafted.data.aux.bin`; `perf-6.1-aux-dump.txt` is perf 6.1's packet dump of it
//! (`perf script -D`, the `.  OFFSET:` lines) and `perf-6.1-script.txt` its synthesised
//! samples (`perf script -F event,ip,addr,phys_addr,weight,data_src`). Both were produced by perf 6.1 on x86 and checked in, so this test
//! needs no perf at run time.

use culprit_decode::spe::{decode_packet, decode_records, synthesized_events, Packet, SpeEvent};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/spe/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// perf's first word for a packet line (`PC`, `LAT`, `EV`, `LD`, ...), as culprit names it.
fn perf_kind(packet: &Packet) -> &'static str {
    use culprit_decode::spe::AddressKind::*;
    match packet {
        Packet::Padding => "PAD",
        Packet::End => "END",
        Packet::Timestamp(_) => "TS",
        Packet::Address { kind, .. } => match kind {
            Instruction => "PC",
            BranchTarget => "TGT",
            DataVirtual => "VA",
            DataPhysical => "PA",
            PreviousBranchTarget => "PBT",
            Unknown(_) => "ADDR",
        },
        Packet::Counter { .. } => "LAT",
        Packet::Context { .. } => "CONTEXT",
        Packet::OpType { class: 0, .. } => "OTHER",
        Packet::OpType { class: 1, subclass } if subclass & 1 == 1 => "ST",
        Packet::OpType { class: 1, .. } => "LD",
        Packet::OpType { .. } => "B",
        Packet::Events(_) => "EV",
        Packet::DataSource(_) => "DATA-SOURCE",
    }
}

#[test]
fn packets_equal_perf_dump() {
    let aux = fixture("spe-crafted.data.aux.bin");
    // (offset, length, kind) per packet, consecutive padding merged as perf prints it.
    let mut ours: Vec<(usize, usize, &str)> = Vec::new();
    let mut at = 0;
    while at < aux.len() {
        let (packet, len) = decode_packet(&aux[at..]).expect("crafted stream decodes");
        match ours.last_mut() {
            Some(last) if packet == Packet::Padding && last.2 == "PAD" && last.0 + last.1 == at => {
                last.1 += len
            }
            _ => ours.push((at, len, perf_kind(&packet))),
        }
        at += len;
    }
    let dump = String::from_utf8(fixture("perf-6.1-aux-dump.txt")).unwrap();
    let perf: Vec<(usize, usize, &str)> = dump
        .lines()
        .map(|line| {
            let (offset, rest) = line
                .trim_start_matches(". ")
                .trim()
                .split_once(':')
                .unwrap();
            let rest = rest.trim_start();
            // Hex bytes are 2 digits each, separated by single spaces, then padding.
            let hex: Vec<&str> = rest
                .split(' ')
                .take_while(|t| t.len() == 2 && t.chars().all(|c| c.is_ascii_hexdigit()))
                .collect();
            let kind = rest.split_whitespace().nth(hex.len()).unwrap();
            (usize::from_str_radix(offset, 16).unwrap(), hex.len(), kind)
        })
        .collect();
    assert_eq!(ours.len(), 29, "packets in the crafted stream");
    assert_eq!(ours, perf);
}

/// One synthesised sample's fields as `perf script -F event,ip,addr,phys_addr,weight` prints
/// them: event name, PC, address (data VA; branch target for `branch-miss`), physical address,
/// weight (total latency).
type SampleFields = (String, u64, u64, u64, u64);

#[test]
fn synthesized_samples_equal_perf_script() {
    let aux = fixture("spe-crafted.data.aux.bin");
    let (records, skipped) = decode_records(&aux);
    assert_eq!(skipped, 0);
    let ours: Vec<SampleFields> = records
        .iter()
        .flat_map(|record| {
            synthesized_events(record).into_iter().map(move |event| {
                let address = match event {
                    SpeEvent::BranchMiss => record.branch_target,
                    _ => record.data_virtual,
                };
                (
                    event.perf_name().to_string(),
                    record.pc.unwrap_or(0),
                    address.unwrap_or(0),
                    record.data_physical.unwrap_or(0),
                    u64::from(record.total_latency.unwrap_or(0)),
                )
            })
        })
        .collect();
    let script = String::from_utf8(fixture("perf-6.1-script.txt")).unwrap();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    let perf: Vec<SampleFields> = script
        .lines()
        .map(|line| {
            // "l1d-miss: 7fff12345678 90000882 |OP LOAD|...|BLK  N/A  120  400123  80001234":
            // event, addr, data_src (raw, then decoded up to "BLK  N/A"), weight, ip, phys_addr.
            let (head, tail) = line.split_once("|BLK  N/A").unwrap();
            let head: Vec<&str> = head.split_whitespace().collect();
            let tail: Vec<&str> = tail.split_whitespace().collect();
            (
                head[0].trim_end_matches(':').to_string(),
                hex(tail[1]),
                hex(head[1]),
                hex(tail[2]),
                tail[0].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ours.len(),
        11,
        "samples perf synthesises from the 4 records"
    );
    assert_eq!(ours, perf);
}
