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

/// The crafted file read as a recording: the nine events perf synthesises follow the SPE
/// attr's, and the samples carry perf's fields (as `perf-6.1-script.txt` prints them) and
/// the SPE record's.
#[test]
fn reader_synthesises_perfs_samples_from_the_aux_data() {
    let data = fixture("spe-crafted.data");
    let profile = culprit_decode::Reader::from_bytes(&data)
        .threads(1)
        .collect()
        .expect("reads");
    let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names[1..],
        culprit_decode::spe::ALL_EVENTS.map(SpeEvent::perf_name)
    );
    assert!(
        !profile.warnings.iter().any(|w| w.contains("AUX area")),
        "{:?}",
        profile.warnings
    );
    let script = String::from_utf8(fixture("perf-6.1-script.txt")).unwrap();
    assert_eq!(profile.samples.len(), script.lines().count());
    for (s, line) in profile.samples.iter().zip(script.lines()) {
        let event = &profile.events[usize::from(s.event)].name;
        assert!(
            line.trim_start().starts_with(&format!("{event}:")),
            "{line}"
        );
        assert_eq!((s.pid, s.tid, s.cpu, s.period), (-1, 4242, 0, 1), "{line}");
        assert!(s.exact_ip && s.spe.is_some(), "{line}");
        let hex = format!("{:x}", s.ip);
        assert!(
            line.split_whitespace().any(|t| t == hex),
            "{line}: ip {hex}"
        );
        let src = format!("{:x}", s.data_src.unwrap());
        assert!(line.split_whitespace().any(|t| t == src), "{line}: {src}");
    }
    let load = profile.samples[0].spe.as_deref().unwrap();
    assert_eq!(
        (
            load.issue_latency,
            load.translation_latency,
            load.total_latency
        ),
        (Some(5), Some(9), Some(120))
    );
    assert_eq!(load.context_id, Some(4242));
    let event_totals: u64 = profile.events.iter().map(|e| e.samples).sum();
    assert_eq!(event_totals, 11);
}

/// The crafted file grown to 40 AUXTRACE buffers in 40 rounds: a parallel read gives the
/// samples of a sequential read, in the same order. With 3 or 4 equal shares each replays the
/// AUXTRACE_INFO before its share and decodes the AUX data of its own; with 2 the second
/// share's jump is refuted (AUX records count as state) and the first reads on.
#[test]
fn parallel_and_sequential_reads_agree() {
    let data = fixture("spe-crafted.data");
    let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let (data_off, data_size) = (u64_at(40) as usize, u64_at(48) as usize);
    // The fixture's data: AUXTRACE_INFO (32 bytes), then AUXTRACE (48) and its AUX bytes.
    let auxtrace = &data[data_off + 32..data_off + data_size];
    let mut big = data[..data_off + data_size].to_vec();
    for _ in 0..39 {
        big.extend_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]); // FINISHED_ROUND
        big.extend_from_slice(auxtrace);
    }
    let size = (big.len() - data_off) as u64;
    big[48..56].copy_from_slice(&size.to_le_bytes());
    let key = |p: &culprit_decode::Profile, s: &culprit_decode::model::Sample| {
        (
            p.events[usize::from(s.event)].name.clone(),
            s.ip,
            s.addr,
            s.weight,
        )
    };
    let sequential = culprit_decode::Reader::from_bytes(&big)
        .threads(1)
        .collect()
        .unwrap();
    assert_eq!(sequential.samples.len(), 40 * 11);
    let ours: Vec<_> = sequential
        .samples
        .iter()
        .map(|s| key(&sequential, s))
        .collect();

    /// The samples' keys, and how many merged shares brought samples.
    #[derive(Default)]
    struct Keys(Vec<(String, u64, Option<u64>, Option<u64>)>, usize);
    impl culprit_decode::Fold for Keys {
        fn add(&mut self, p: &culprit_decode::Profile, s: &culprit_decode::model::Sample) {
            self.0.push((
                p.events[usize::from(s.event)].name.clone(),
                s.ip,
                s.addr,
                s.weight,
            ));
        }
        fn split(&self) -> Self {
            Keys::default()
        }
        fn merge(&mut self, later: Self, _: &culprit_decode::Profile) {
            self.1 += usize::from(!later.0.is_empty()) + later.1;
            self.0.extend(later.0);
        }
    }
    let (profile, keys) = culprit_decode::Reader::from_bytes(&big)
        .threads(2)
        .split(culprit_decode::SplitRule::Fixed(0.5))
        .fold_parallel(Keys::default())
        .unwrap();
    assert_eq!(keys.0, ours);
    // Equal shares: each decodes the AUX data in its part of the file.
    for threads in [3, 4] {
        let (_, keys) = culprit_decode::Reader::from_bytes(&big)
            .threads(threads)
            .fold_parallel(Keys::default())
            .unwrap();
        assert!(
            keys.1 >= threads - 1,
            "{threads} threads: {} shares",
            keys.1
        );
        assert_eq!(keys.0, ours, "{threads} threads");
    }
    let totals: u64 = profile.events.iter().map(|e| e.samples).sum();
    assert_eq!(totals, 40 * 11);
}
