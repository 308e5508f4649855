//! The perf.data (`PERFILE2`) writer: pure byte encoding, no OS access. The caller passes the
//! facts (attrs and their ids, records, host description) in.
//!
//! File layout written (all little-endian):
//!
//! ```text
//! header (104 bytes)  magic "PERFILE2", size, attr_size, attrs{off,size}, data{off,size},
//!                     event_types{0,0}, 256-bit feature bitmap
//! ids                 u64 sample ids of every attr, attr after attr
//! attrs               per attr: perf_event_attr (128 bytes, VER7) + ids{off,size}
//! data                records, appended while recording (never buffered to the end)
//! feature index       one {offset,size} per set feature bit, in bit order
//! feature sections    HOSTNAME, OSRELEASE, …, EVENT_DESC, BUILD_ID, …
//! ```
//!
//! [`PerfDataWriter::new`] writes the header (with a zero data size), ids and attrs;
//! [`PerfDataWriter::write_data`] appends record bytes; [`PerfDataWriter::finish`] appends the
//! feature sections and rewrites the header.

pub mod attr;
pub mod compress;
pub mod features;
pub mod pipe;
pub mod records;

use std::io::{self, Seek, SeekFrom, Write};

use culprit_decode::abi::{FILE_HEADER_SIZE, MAGIC};

pub use attr::{Attr, ATTR_SIZE};
pub use features::{BuildIdEntry, CpuTopology, Features, GroupDesc};

/// Size of one attrs-section entry: the attr plus its ids {offset,size}.
const FILE_ATTR_SIZE: u64 = ATTR_SIZE as u64 + 16;

/// One event of the file: its attr, its display name and the sample ids the kernel gave it
/// (one per opened file descriptor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAttr {
    /// The attr as passed to `perf_event_open`.
    pub attr: Attr,
    /// Event name for HEADER_EVENT_DESC.
    pub name: String,
    /// Sample ids (`PERF_EVENT_IOC_ID`) of every fd of this event.
    pub ids: Vec<u64>,
}

/// Writes a perf.data file progressively. See the module doc for the layout.
#[derive(Debug)]
pub struct PerfDataWriter<W: Write + Seek> {
    out: W,
    attrs: Vec<FileAttr>,
    data_offset: u64,
    data_size: u64,
    /// A write failed: the file may end with part of a record.
    torn: bool,
}

/// Outputs that can be cut to a length (to drop a torn record after a failed write).
pub trait SetLen {
    /// Truncates (or extends) the output to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

impl SetLen for std::fs::File {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        std::fs::File::set_len(self, len)
    }
}

impl SetLen for io::Cursor<Vec<u8>> {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.get_mut().truncate(len as usize);
        Ok(())
    }
}

/// A file ended by [`PerfDataWriter::close`].
#[derive(Debug)]
pub struct Closed<W> {
    /// The output, positioned at the end of the file.
    pub out: W,
    /// The file's size in bytes.
    pub size: u64,
    /// Why the feature sections are missing (the header alone was rewritten: the records
    /// are all readable, the host description and build ids are not there).
    pub features_error: Option<io::Error>,
}

fn header_bytes(
    attrs_off: u64,
    attrs_size: u64,
    data_off: u64,
    data_size: u64,
    bits: &[u32],
) -> Vec<u8> {
    let mut h = Vec::with_capacity(FILE_HEADER_SIZE);
    h.extend_from_slice(MAGIC);
    for v in [
        FILE_HEADER_SIZE as u64,
        FILE_ATTR_SIZE,
        attrs_off,
        attrs_size,
        data_off,
        data_size,
        0,
        0,
    ] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    let mut bitmap = [0u8; 32];
    for &b in bits {
        if let Some(byte) = bitmap.get_mut((b / 8) as usize) {
            *byte |= 1 << (b % 8);
        }
    }
    h.extend_from_slice(&bitmap);
    h
}

impl<W: Write + Seek> PerfDataWriter<W> {
    /// Starts a file at the current position 0 of `out`: header, ids and attrs.
    pub fn new(mut out: W, attrs: Vec<FileAttr>) -> io::Result<Self> {
        let nids: u64 = attrs.iter().map(|a| a.ids.len() as u64).sum();
        let ids_off = FILE_HEADER_SIZE as u64;
        let attrs_off = ids_off + 8 * nids;
        let attrs_size = FILE_ATTR_SIZE * attrs.len() as u64;
        let data_offset = attrs_off + attrs_size;
        let mut buf = header_bytes(attrs_off, attrs_size, data_offset, 0, &[]);
        for a in &attrs {
            for id in &a.ids {
                buf.extend_from_slice(&id.to_le_bytes());
            }
        }
        let mut id_pos = ids_off;
        for a in &attrs {
            buf.extend_from_slice(&a.attr.to_bytes());
            let len = 8 * a.ids.len() as u64;
            buf.extend_from_slice(&id_pos.to_le_bytes());
            buf.extend_from_slice(&len.to_le_bytes());
            id_pos += len;
        }
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&buf)?;
        Ok(PerfDataWriter {
            out,
            attrs,
            data_offset,
            data_size: 0,
            torn: false,
        })
    }

    /// The events of the file.
    pub fn attrs(&self) -> &[FileAttr] {
        &self.attrs
    }

    /// Appends whole records to the data section. On a write error (a full disk) only the
    /// records written whole count (see [`PerfDataWriter::data_size`]); the torn tail is
    /// dropped by [`PerfDataWriter::close`].
    pub fn write_data(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut done = 0;
        while done < bytes.len() {
            let err = match self.out.write(&bytes[done..]) {
                Ok(0) => io::Error::from(io::ErrorKind::WriteZero),
                Ok(n) => {
                    done += n;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            self.data_size += records::whole_records_len(&bytes[..done]) as u64;
            self.torn = true;
            return Err(err);
        }
        self.data_size += bytes.len() as u64;
        Ok(())
    }

    /// Bytes of records written so far.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Where the data section starts (the size of the header, ids and attrs).
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Appends the feature index and sections, rewrites the header with the final data size
    /// and feature bitmap, and returns the output (positioned at the end of the file).
    pub fn finish(mut self, features: &Features) -> io::Result<W> {
        self.write_features(features)?;
        Ok(self.out)
    }

    /// Writes the feature index and sections after the data, then the header; returns the
    /// file's size.
    fn write_features(&mut self, features: &Features) -> io::Result<u64> {
        let descs: Vec<features::EventDesc<'_>> = self
            .attrs
            .iter()
            .map(|a| features::EventDesc {
                attr: &a.attr,
                name: &a.name,
                ids: &a.ids,
            })
            .collect();
        let sections = features::encode(features, &descs);
        let index_off = self.data_offset + self.data_size;
        let mut pos = index_off + 16 * sections.len() as u64;
        let mut buf = Vec::new();
        for (_, bytes) in &sections {
            buf.extend_from_slice(&pos.to_le_bytes());
            buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            pos += bytes.len() as u64;
        }
        for (_, bytes) in &sections {
            buf.extend_from_slice(bytes);
        }
        self.out.seek(SeekFrom::Start(index_off))?;
        self.out.write_all(&buf)?;
        let bits: Vec<u32> = sections.iter().map(|(b, _)| *b).collect();
        self.write_header(&bits)?;
        self.out.seek(SeekFrom::Start(pos))?;
        self.out.flush()?;
        Ok(pos)
    }

    /// Rewrites the header with the data size so far and these feature bits.
    fn write_header(&mut self, bits: &[u32]) -> io::Result<()> {
        let nids: u64 = self.attrs.iter().map(|a| a.ids.len() as u64).sum();
        let attrs_off = FILE_HEADER_SIZE as u64 + 8 * nids;
        let header = header_bytes(
            attrs_off,
            FILE_ATTR_SIZE * self.attrs.len() as u64,
            self.data_offset,
            self.data_size,
            bits,
        );
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header)
    }
}

impl<W: Write + Seek + SetLen> PerfDataWriter<W> {
    /// Ends the file whatever happened while writing it: drops a record torn by a failed
    /// write, appends the features and rewrites the header; when the features cannot be
    /// written (a full disk), rewrites the header alone (which needs no new space), so that
    /// every whole record written stays readable by culprit and perf.
    pub fn close(mut self, features: &Features) -> io::Result<Closed<W>> {
        let end = self.data_offset + self.data_size;
        if self.torn {
            self.out.set_len(end)?;
        }
        match self.write_features(features) {
            Ok(size) => Ok(Closed {
                out: self.out,
                size,
                features_error: None,
            }),
            Err(e) => {
                self.out.set_len(end)?;
                self.write_header(&[])?;
                self.out.seek(SeekFrom::Start(end))?;
                self.out.flush()?;
                Ok(Closed {
                    out: self.out,
                    size: end,
                    features_error: Some(e),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::records::{self, MmapArgs, SampleId};
    use super::*;
    use culprit_decode::abi::{attr_flag, misc, read_format, record_type, sample_type};
    use std::io::Cursor;

    /// The two events of the writer tests, from the first one's attr: cpu-clock (ids 11, 12)
    /// and task-clock (config 1, ids 21, 22).
    pub(super) fn two_events(a0: Attr) -> Vec<FileAttr> {
        let a1 = Attr {
            config: 1,
            flags: attr_flag::DISABLED | attr_flag::SAMPLE_ID_ALL,
            ..a0
        };
        vec![
            FileAttr {
                attr: a0,
                name: "cpu-clock".into(),
                ids: vec![11, 12],
            },
            FileAttr {
                attr: a1,
                name: "task-clock".into(),
                ids: vec![21, 22],
            },
        ]
    }

    /// COMM "prog" and an MMAP2 of /bin/prog at 0x400000 for pid 100, laid out for `a0`.
    pub(super) fn prog_records(a0: &Attr) -> Vec<u8> {
        let sid = SampleId {
            pid: 100,
            tid: 100,
            time: 0,
            id: 11,
            cpu: 0,
        };
        let mut buf = Vec::new();
        records::push_comm(&mut buf, a0, 100, 100, b"prog", true, &sid);
        let m = MmapArgs {
            pid: 100,
            tid: 100,
            start: 0x400000,
            len: 0x1000,
            pgoff: 0,
            maj: 0,
            min: 0,
            ino: 0,
            prot: 5,
            flags: 2,
            filename: b"/bin/prog",
            misc: misc::USER,
        };
        records::push_mmap2(&mut buf, a0, &m, &sid);
        buf
    }

    pub(super) fn sample_record(
        id: u64,
        ip: u64,
        pid: u32,
        time: u64,
        cpu: u32,
        period: u64,
    ) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&record_type::SAMPLE.to_le_bytes());
        r.extend_from_slice(&misc::USER.to_le_bytes());
        r.extend_from_slice(&56u16.to_le_bytes());
        for v in [id, ip] {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&time.to_le_bytes());
        r.extend_from_slice(&cpu.to_le_bytes());
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&period.to_le_bytes());
        assert_eq!(r.len(), 56);
        r
    }

    /// Writes a two-event file in memory and parses it back with linux-perf-data.
    #[test]
    fn test_writer_round_trip_linux_perf_data() {
        use linux_perf_data::linux_perf_event_reader::EventRecord;
        use linux_perf_data::{PerfFileReader, PerfFileRecord};

        let st = sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::PERIOD;
        let a0 = Attr {
            attr_type: 1,
            config: 0,
            sample_period_or_freq: 4000,
            sample_type: st,
            read_format: read_format::ID,
            flags: attr_flag::DISABLED
                | attr_flag::INHERIT
                | attr_flag::FREQ
                | attr_flag::MMAP
                | attr_flag::MMAP2
                | attr_flag::COMM
                | attr_flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let attrs = two_events(a0);
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs).unwrap();
        let buf = prog_records(&a0);
        w.write_data(&buf).unwrap();
        w.write_data(&sample_record(11, 0x400010, 100, 1000, 0, 250_000))
            .unwrap();
        w.write_data(&sample_record(22, 0x400020, 100, 2000, 1, 250_000))
            .unwrap();
        let mut fin = Vec::new();
        records::push_finished_round(&mut fin);
        w.write_data(&fin).unwrap();
        let features = Features {
            hostname: Some("host".into()),
            osrelease: Some("6.1.0".into()),
            arch: Some("x86_64".into()),
            nrcpus: Some((2, 2)),
            cpuid: Some("GenuineIntel,6,143,8".into()),
            cmdline: vec!["culprit".into(), "record".into()],
            build_ids: vec![BuildIdEntry {
                cpumode: 2,
                build_id: vec![0xab; 20],
                filename: "/bin/prog".into(),
            }],
            sample_time: Some((1000, 2000)),
            pmu_mappings: vec![(1, "software".into())],
            ..Features::default()
        };
        let bytes = w.finish(&features).unwrap().into_inner();

        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(Cursor::new(&bytes[..])).unwrap();
        assert_eq!(perf_file.hostname().unwrap(), Some("host"));
        assert_eq!(perf_file.os_release().unwrap(), Some("6.1.0"));
        assert_eq!(perf_file.arch().unwrap(), Some("x86_64"));
        let names: Vec<_> = perf_file
            .event_attributes()
            .iter()
            .map(|a| a.name().map(str::to_owned))
            .collect();
        assert_eq!(
            names,
            vec![
                Some("cpu-clock".to_string()),
                Some("task-clock".to_string())
            ]
        );
        let ids = perf_file.build_ids().unwrap();
        assert_eq!(ids.len(), 1);
        let mut kinds = Vec::new();
        while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
            match rec {
                PerfFileRecord::EventRecord { attr_index, record } => match record.parse().unwrap()
                {
                    EventRecord::Sample(s) => {
                        kinds.push(format!("sample{attr_index}@{:x}", s.ip.unwrap()))
                    }
                    EventRecord::Comm(c) => kinds.push(format!(
                        "comm {}",
                        String::from_utf8_lossy(&c.name.as_slice())
                    )),
                    EventRecord::Mmap2(m) => kinds.push(format!("mmap2 {:x}", m.address)),
                    _ => kinds.push("other".into()),
                },
                PerfFileRecord::UserRecord(_) => kinds.push("user".into()),
            }
        }
        // FINISHED_ROUND is consumed by the reader's sorting, not returned.
        assert_eq!(
            kinds,
            vec![
                "comm prog",
                "mmap2 400000",
                "sample0@400010",
                "sample1@400020"
            ]
        );
        drop(perf_file);
        // The header's data size covers exactly the records.
        let data_size = u64::from_le_bytes(bytes[48..56].try_into().unwrap());
        assert_eq!(data_size, (buf.len() + 56 + 56 + 8) as u64);
    }

    /// The same kind of file through culprit's own reader: events, names, samples, mappings,
    /// build ids and header facts survive the round trip.
    #[test]
    fn test_writer_round_trip_culprit_decode() {
        let st = sample_type::IDENTIFIER
            | sample_type::IP
            | sample_type::TID
            | sample_type::TIME
            | sample_type::CPU
            | sample_type::PERIOD;
        let a0 = Attr {
            attr_type: 1,
            sample_period_or_freq: 250_000,
            sample_type: st,
            read_format: read_format::ID,
            flags: attr_flag::DISABLED
                | attr_flag::INHERIT
                | attr_flag::MMAP
                | attr_flag::MMAP2
                | attr_flag::COMM
                | attr_flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let attrs = two_events(a0);
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs).unwrap();
        let mut buf = prog_records(&a0);
        for (id, ip, t, cpu) in [
            (11u64, 0x400010u64, 1000u64, 0u32),
            (22, 0x400020, 2000, 1),
            (12, 0x400030, 3000, 1),
        ] {
            buf.extend_from_slice(&sample_record(id, ip, 100, t, cpu, 250_000));
        }
        records::push_finished_round(&mut buf);
        w.write_data(&buf).unwrap();
        let features = Features {
            hostname: Some("host".into()),
            osrelease: Some("6.1.0".into()),
            arch: Some("x86_64".into()),
            nrcpus: Some((2, 2)),
            cpuid: Some("AuthenticAMD,26,17,0".into()),
            total_mem_kb: Some(1024),
            sample_time: Some((1000, 3000)),
            build_ids: vec![BuildIdEntry {
                cpumode: 2,
                build_id: vec![0xab; 20],
                filename: "/bin/prog".into(),
            }],
            pmu_mappings: vec![(1, "software".into())],
            ..Features::default()
        };
        let bytes = w.finish(&features).unwrap().into_inner();
        let p = culprit_decode::Reader::from_bytes(&bytes)
            .collect()
            .unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(p.stopped.is_none());
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", "task-clock"]);
        assert_eq!((p.events[0].samples, p.events[1].samples), (2, 1));
        let ips: Vec<u64> = p.samples.iter().map(|s| s.ip).collect();
        assert_eq!(ips, [0x400010, 0x400020, 0x400030]);
        assert!(p
            .samples
            .iter()
            .all(|s| s.pid == 100 && p.str(s.comm) == "prog"));
        let dso = p.samples[0].location.dso.expect("sample in /bin/prog");
        assert_eq!(p.dsos[dso as usize].path, "/bin/prog");
        assert_eq!(
            p.dsos[dso as usize].build_id.as_deref(),
            Some(&[0xab; 20][..])
        );
        assert_eq!(p.samples[0].location.file_offset, 0x10);
        assert_eq!(p.meta.hostname.as_deref(), Some("host"));
        assert_eq!(p.meta.cpuid.as_deref(), Some("AuthenticAMD,26,17,0"));
        assert_eq!(p.meta.total_mem_kb, Some(1024));
    }

    /// The same records written plain and as COMPRESSED records (with HEADER_COMPRESSED, in
    /// chunks small enough that one flush spans many records) read back to the same samples
    /// with culprit's reader and with linux-perf-data.
    #[test]
    fn test_compressed_file_reads_as_the_plain_one() {
        use super::compress::Compressor;
        use linux_perf_data::linux_perf_event_reader::EventRecord;
        use linux_perf_data::{PerfFileReader, PerfFileRecord};

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
            flags: attr_flag::SAMPLE_ID_ALL | attr_flag::MMAP2 | attr_flag::COMM,
            ..Attr::default()
        };
        let mut records_in = prog_records(&a0);
        for i in 0..5000u64 {
            let id = if i % 3 == 0 { 21 } else { 11 };
            records_in.extend(sample_record(
                id,
                0x400000 + (i * 7) % 0x1000,
                100,
                1000 + i,
                0,
                1000,
            ));
            if i % 700 == 0 {
                records::push_finished_round(&mut records_in);
            }
        }
        let features = Features {
            hostname: Some("host".into()),
            ..Features::default()
        };
        let mut plain = PerfDataWriter::new(Cursor::new(Vec::new()), two_events(a0)).unwrap();
        plain.write_data(&records_in).unwrap();
        let plain = plain.finish(&features).unwrap().into_inner();

        let mut c = Compressor::new(3, 1 << 16).unwrap();
        let mut z = Vec::new();
        c.compress(&records_in, &mut z).unwrap();
        assert!(z.len() * 3 < records_in.len());
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), two_events(a0)).unwrap();
        w.write_data(&z).unwrap();
        let mut zf = features.clone();
        zf.compressed = Some(c.header());
        let compressed = w.finish(&zf).unwrap().into_inner();

        let read = |bytes: &[u8]| {
            let p = culprit_decode::Reader::from_bytes(bytes).collect().unwrap();
            assert!(p.warnings.is_empty(), "{:?}", p.warnings);
            assert!(p.stopped.is_none(), "{:?}", p.stopped);
            let s: Vec<(u64, u64, i32)> = p.samples.iter().map(|s| (s.time, s.ip, s.pid)).collect();
            (s, p.meta.compressed)
        };
        let (a, a_compressed) = read(&plain);
        let (b, b_compressed) = read(&compressed);
        assert_eq!(a.len(), 5000);
        assert_eq!(a, b);
        assert!(!a_compressed && b_compressed);

        // An independent reader decompresses it too.
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(Cursor::new(&compressed[..])).unwrap();
        let mut ips = Vec::new();
        while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
            if let PerfFileRecord::EventRecord { record, .. } = rec {
                if let EventRecord::Sample(s) = record.parse().unwrap() {
                    ips.push(s.ip.unwrap());
                }
            }
        }
        let want: Vec<u64> = a.iter().map(|s| s.1).collect();
        assert_eq!(ips, want);
    }

    /// A disk of `room` bytes: writes past it fail with ENOSPC after filling it (as a
    /// regular file does), rewrites of existing bytes always succeed. After the first
    /// failure `freed` more bytes become free (someone deleted a file).
    struct SmallDisk {
        file: Cursor<Vec<u8>>,
        room: usize,
        freed: usize,
    }

    impl Write for SmallDisk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let pos = self.file.position() as usize;
            let fits = self.room.max(self.file.get_ref().len()).saturating_sub(pos);
            if fits == 0 && !buf.is_empty() {
                self.room += std::mem::take(&mut self.freed);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.file.write(&buf[..buf.len().min(fits)])
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Seek for SmallDisk {
        fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
            self.file.seek(to)
        }
    }

    impl SetLen for SmallDisk {
        fn set_len(&mut self, len: u64) -> io::Result<()> {
            self.file.set_len(len)
        }
    }

    /// A full disk mid-record: the torn record is dropped, the header says how much data
    /// there is, and the file reads back with the samples written whole, with or without
    /// room left for the feature sections.
    #[test]
    fn test_close_after_a_full_disk_keeps_a_readable_file() {
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
            flags: attr_flag::SAMPLE_ID_ALL | attr_flag::MMAP | attr_flag::COMM,
            ..Attr::default()
        };
        let features = Features {
            hostname: Some("host".into()),
            ..Features::default()
        };
        let mut head = Vec::new();
        for i in 0..10u64 {
            head.extend_from_slice(&sample_record(11, 0x400000 + i, 100, 1000 + i, 0, 1000));
        }
        let one = sample_record(11, 0, 100, 0, 0, 1000).len();
        let start = PerfDataWriter::new(Cursor::new(Vec::new()), two_events(a0))
            .unwrap()
            .data_offset as usize;
        // 4.5 samples fit; then no room is left for the features, or some is freed.
        for with_features in [false, true] {
            let disk = SmallDisk {
                file: Cursor::new(Vec::new()),
                room: start + 4 * one + one / 2,
                freed: if with_features { 10_000 } else { 0 },
            };
            let mut w = PerfDataWriter::new(disk, two_events(a0)).unwrap();
            let err = w.write_data(&head).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
            assert_eq!(w.data_size(), 4 * one as u64);
            let closed = w.close(&features).unwrap();
            assert_eq!(closed.features_error.is_none(), with_features);
            let bytes = closed.out.file.into_inner();
            assert_eq!(bytes.len() as u64, closed.size);
            let p = culprit_decode::Reader::from_bytes(&bytes)
                .collect()
                .unwrap();
            assert!(p.stopped.is_none(), "{:?}", p.stopped);
            assert_eq!(p.samples.len(), 4);
            assert_eq!(p.meta.hostname.is_some(), with_features);
        }
    }
}
