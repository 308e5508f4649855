//! The pipe-mode perf.data writer (what `perf record -o -` writes): no seeks, everything is a
//! record, so a reader can decode the stream while it is being written.
//!
//! Stream layout (all little-endian):
//!
//! ```text
//! header (16 bytes)   magic "PERFILE2", size 16
//! per event           PERF_RECORD_HEADER_ATTR (type 64): header, perf_event_attr, u64 ids[]
//!                     PERF_RECORD_EVENT_UPDATE (type 78), kind NAME (2): header, kind, id, name
//! per feature         PERF_RECORD_HEADER_FEATURE (type 80): header, u64 feature bit, the
//!                     feature section's bytes (as in a file's feature section)
//! records             the synthesized state (kernel MMAP, /proc COMM/MMAP2)
//! FINISHED_INIT       type 82: the synthesized state is complete
//! records             kernel records and FINISHED_ROUND (68) after each drain pass
//! at the end          PERF_RECORD_HEADER_BUILD_ID (type 67) per object that got samples
//! ```
//!
//! Like perf, the features are sent first (SAMPLE_TIME and BUILD_ID, which are only known at
//! the end, are not: the build ids come as HEADER_BUILD_ID records after the data). perf 6.1
//! ends the features with a HEADER_FEATURE whose id is its own `HEADER_LAST_FEATURE`; that
//! number changes between perf versions and a reader rejects ids above its own, so it is not
//! written.

use std::io::{self, Write};

use culprit_decode::abi::{feature, record_type, EVENT_UPDATE_NAME, MAGIC, PIPE_HEADER_SIZE};

use super::features::{self, BuildIdEntry, Features};
use super::FileAttr;

/// Why a stream head cannot be encoded.
fn too_big(what: &str, size: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} needs a {size}-byte record, more than the 65535 bytes a record can hold"),
    )
}

/// Appends a record header (type, misc, size) and the body; the size must fit 16 bits.
fn push_record(out: &mut Vec<u8>, rtype: u32, misc: u16, body: &[u8]) -> Option<()> {
    let size = u16::try_from(8 + body.len()).ok()?;
    out.extend_from_slice(&rtype.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(body);
    Some(())
}

/// Encodes the head of a stream: header, attrs with their names, the features known at the
/// start. Features too large for a record are left out (perf does the same).
pub fn encode_head(attrs: &[FileAttr], features: &Features) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(PIPE_HEADER_SIZE as u64).to_le_bytes());
    for a in attrs {
        let mut body = a.attr.to_bytes().to_vec();
        for id in &a.ids {
            body.extend_from_slice(&id.to_le_bytes());
        }
        let n = body.len();
        push_record(&mut out, record_type::HEADER_ATTR, 0, &body)
            .ok_or_else(|| too_big(&format!("event '{}' ({} ids)", a.name, a.ids.len()), n + 8))?;
        if let Some(&id) = a.ids.first() {
            let mut body = EVENT_UPDATE_NAME.to_le_bytes().to_vec();
            body.extend_from_slice(&id.to_le_bytes());
            super::records::push_cstr8(&mut body, a.name.as_bytes());
            let n = body.len();
            push_record(&mut out, record_type::EVENT_UPDATE, 0, &body)
                .ok_or_else(|| too_big("an event name", n + 8))?;
        }
    }
    let descs: Vec<features::EventDesc<'_>> = attrs
        .iter()
        .map(|a| features::EventDesc {
            attr: &a.attr,
            name: &a.name,
            ids: &a.ids,
        })
        .collect();
    let head = Features {
        build_ids: Vec::new(),
        sample_time: None,
        tracing_data: None,
        ..features.clone()
    };
    for (b, bytes) in features::encode(&head, &descs) {
        if b == feature::BUILD_ID || b == feature::SAMPLE_TIME {
            continue;
        }
        let mut body = u64::from(b).to_le_bytes().to_vec();
        body.extend_from_slice(&bytes);
        // A feature too large for one record is skipped: it is descriptive only.
        let _ = push_record(&mut out, record_type::HEADER_FEATURE, 0, &body);
    }
    if let Some(t) = &features.tracing_data {
        // As perf: a 16-byte record (header, u32 size, padding) followed by the data padded
        // to 8 bytes; the record's size does not cover the data.
        let padded = t.len().next_multiple_of(8);
        let size = u32::try_from(padded).map_err(|_| too_big("the tracing data", padded))?;
        out.extend_from_slice(&record_type::HEADER_TRACING_DATA.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(t);
        out.resize(out.len() + padded - t.len(), 0);
    }
    Ok(out)
}

/// Encodes HEADER_BUILD_ID records: the entries of a file's BUILD_ID section, each already a
/// record (header with misc and size), with the record type set.
pub fn encode_build_ids(entries: &[BuildIdEntry]) -> Vec<u8> {
    if entries.is_empty() {
        return Vec::new();
    }
    let only = Features {
        build_ids: entries.to_vec(),
        ..Features::default()
    };
    let Some((_, mut bytes)) = features::encode(&only, &[])
        .into_iter()
        .find(|(b, _)| *b == feature::BUILD_ID)
    else {
        return Vec::new();
    };
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let size = usize::from(u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]));
        if size < 8 {
            break;
        }
        bytes[pos..pos + 4].copy_from_slice(&record_type::HEADER_BUILD_ID.to_le_bytes());
        pos += size;
    }
    bytes
}

/// Writes a pipe-mode stream progressively to any writer (stdout, an OS pipe).
#[derive(Debug)]
pub struct PipeWriter<W: Write> {
    out: W,
    data_size: u64,
    written: u64,
}

impl<W: Write> PipeWriter<W> {
    /// Writes the head of the stream (see [`encode_head`]) and flushes it.
    pub fn new(mut out: W, attrs: &[FileAttr], features: &Features) -> io::Result<Self> {
        let head = encode_head(attrs, features)?;
        out.write_all(&head)?;
        out.flush()?;
        Ok(PipeWriter {
            out,
            data_size: 0,
            written: head.len() as u64,
        })
    }

    /// Appends whole records and flushes them (a live reader sees them at once).
    pub fn write_data(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()?;
        self.data_size += bytes.len() as u64;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Writes FINISHED_INIT: the records of the state that existed before recording (the
    /// synthesized kernel MMAP, COMM and MMAP2 from /proc) are all written.
    pub fn finish_init(&mut self) -> io::Result<()> {
        let mut r = Vec::with_capacity(8);
        push_record(&mut r, record_type::FINISHED_INIT, 0, &[]);
        self.write_data(&r)
    }

    /// Bytes of records written so far (not counting the head).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Bytes of the stream so far (the head included).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Writes the build-id records and returns the writer and the stream's total size.
    pub fn finish(mut self, build_ids: &[BuildIdEntry]) -> io::Result<(W, u64)> {
        let ids = encode_build_ids(build_ids);
        self.out.write_all(&ids)?;
        self.out.flush()?;
        Ok((self.out, self.written + ids.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::super::attr::Attr;
    use super::super::records;
    use super::super::tests::{prog_records, sample_record, two_events};
    use super::*;
    use culprit_decode::abi::{attr_flag, read_format, sample_type};

    fn attrs() -> Vec<FileAttr> {
        let a0 = Attr {
            attr_type: 1,
            sample_period_or_freq: 1000,
            sample_type: sample_type::IDENTIFIER
                | sample_type::IP
                | sample_type::TID
                | sample_type::TIME
                | sample_type::CPU
                | sample_type::PERIOD,
            read_format: read_format::ID,
            flags: attr_flag::DISABLED
                | attr_flag::MMAP2
                | attr_flag::COMM
                | attr_flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        two_events(a0)
    }

    /// A stream written in pieces decodes with culprit's reader: names, samples, mappings,
    /// host facts and the build ids sent at the end.
    #[test]
    fn test_pipe_stream_round_trip_culprit_decode() {
        let attrs = attrs();
        let features = Features {
            hostname: Some("host".into()),
            osrelease: Some("6.1.0".into()),
            nrcpus: Some((2, 2)),
            sample_time: Some((1, 2)),
            ..Features::default()
        };
        let mut w = PipeWriter::new(Vec::new(), &attrs, &features).unwrap();
        let buf = prog_records(&attrs[0].attr);
        w.write_data(&buf).unwrap();
        w.finish_init().unwrap();
        let mut round = sample_record(11, 0x400010, 100, 1000, 0, 1000);
        round.extend(sample_record(22, 0x400020, 100, 2000, 0, 1000));
        records::push_finished_round(&mut round);
        w.write_data(&round).unwrap();
        let (bytes, total) = w
            .finish(&[BuildIdEntry {
                cpumode: 2,
                build_id: vec![0xab; 20],
                filename: "/bin/prog".into(),
            }])
            .unwrap();
        assert_eq!(total, bytes.len() as u64);
        assert_eq!(&bytes[..8], b"PERFILE2");
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 16);
        let p = culprit_decode::Reader::from_bytes(&bytes)
            .collect()
            .unwrap();
        assert!(p.meta.pipe_mode);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(p.stopped.is_none(), "{:?}", p.stopped);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", "task-clock"]);
        let ips: Vec<u64> = p.samples.iter().map(|s| s.ip).collect();
        assert_eq!(ips, [0x400010, 0x400020]);
        assert_eq!(p.samples[1].event, 1);
        assert_eq!(p.str(p.samples[0].comm), "prog");
        assert_eq!(p.meta.hostname.as_deref(), Some("host"));
        let dso = p.samples[0].location.dso.expect("sample in /bin/prog");
        assert_eq!(p.dsos[dso as usize].path, "/bin/prog");
        assert_eq!(
            p.dsos[dso as usize].build_id.as_deref(),
            Some(&[0xab; 20][..])
        );
    }

    /// Record framing: every record's size field walks the stream exactly to its end, and the
    /// types are the pipe-mode ones in perf's order.
    #[test]
    fn test_pipe_head_record_sequence() {
        let head = encode_head(&attrs(), &Features::default()).unwrap();
        let mut pos = 16;
        let mut types = Vec::new();
        while pos < head.len() {
            let t = u32::from_le_bytes(head[pos..pos + 4].try_into().unwrap());
            let size = u16::from_le_bytes([head[pos + 6], head[pos + 7]]) as usize;
            assert!(size >= 8);
            types.push(t);
            pos += size;
        }
        assert_eq!(pos, head.len());
        // attr+name, attr+name, EVENT_DESC and PMU_CAPS features
        assert_eq!(types, [64, 78, 64, 78, 80, 80]);
        // HEADER_ATTR: 8 + 128-byte attr + 2 ids
        let size = u16::from_le_bytes([head[22], head[23]]);
        assert_eq!(size, 8 + 128 + 16);
    }

    #[test]
    fn test_too_many_ids_is_an_error_not_a_wrapped_size() {
        let mut a = attrs();
        a[0].ids = (0..9000).collect();
        assert!(encode_head(&a, &Features::default()).is_err());
    }
}
