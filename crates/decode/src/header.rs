//! The perf.data header: the file header, `perf_event_attr`s and the HEADER_* feature
//! sections (file mode), and the same facts as they arrive in pipe mode (HEADER_ATTR and
//! HEADER_FEATURE records). Offsets and layouts follow Linux
//! `tools/perf/Documentation/perf.data-file-format.txt` and `include/uapi/linux/perf_event.h`.

use crate::abi::{
    self, ATTR_SIZE_VER0, FILE_HEADER_SIZE, FILE_HEADER_SIZE_NO_FEATURES, MAGIC, MAGIC_BIG_ENDIAN,
};
use crate::cursor::{c_string, u32_at, Cur};
use crate::model::{BpfFunction, CpuMode, Meta};

/// Feature bit numbers (`HEADER_*`).
pub(crate) use crate::abi::feature as feat;

/// A `{offset, size}` pair of the file header.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Section {
    pub offset: u64,
    pub size: u64,
}

impl Section {
    fn read(c: &mut Cur) -> Option<Section> {
        Some(Section {
            offset: c.u64()?,
            size: c.u64()?,
        })
    }

    /// The section's bytes, if it lies inside `data`.
    pub(crate) fn slice<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::try_from(self.offset).ok()?;
        let end = start.checked_add(usize::try_from(self.size).ok()?)?;
        data.get(start..end)
    }
}

/// `struct perf_file_header`.
#[derive(Debug, Clone)]
pub(crate) struct FileHeader {
    pub big_endian: bool,
    pub attr_size: u64,
    pub attrs: Section,
    pub data: Section,
    pub features: [u64; 4],
}

/// Why the header could not be read (becomes a `DecodeError`).
#[derive(Debug)]
pub(crate) struct HeaderError {
    pub offset: u64,
    pub what: String,
}

impl From<HeaderError> for crate::DecodeError {
    fn from(e: HeaderError) -> Self {
        crate::DecodeError::Header {
            offset: e.offset,
            what: e.what,
        }
    }
}

/// The legacy (version 1) magic.
pub(crate) use crate::abi::MAGIC_V1;

/// `perf_event_attr` sizes perf accepts in a version-1 file (PERF_ATTR_SIZE_VER0..VER4):
/// its `attr_size` is one of them plus the 16-byte ids section.
const V1_ATTR_SIZES: [u64; 5] = [64, 72, 80, 96, 104];

/// The byte order of a perf.data image from its magic (`true`: big-endian).
///
/// `PERFILE2` (or its byte-swapped `2ELIFREP`) says it. The legacy `PERFFILE` magic does not:
/// as perf does (header.c `check_magic_endian`), a pipe is recognized by its header size of
/// 16 read in either order, a file by an `attr_size` that is one of perf's attr ABI sizes plus
/// 16 in either order.
pub(crate) fn byte_order(data: &[u8]) -> Result<bool, crate::DecodeError> {
    let Some(magic) = data.get(..8) else {
        return Err(crate::DecodeError::TooShort(data.len() as u64));
    };
    if magic == MAGIC {
        Ok(false)
    } else if magic == MAGIC_BIG_ENDIAN {
        Ok(true)
    } else if magic == MAGIC_V1 {
        v1_byte_order(data)
    } else {
        let mut m = [0u8; 8];
        m.copy_from_slice(magic);
        Err(crate::DecodeError::BadMagic(m))
    }
}

/// [`byte_order`] of a `PERFFILE` (version 1) header.
fn v1_byte_order(data: &[u8]) -> Result<bool, crate::DecodeError> {
    let too_short = || crate::DecodeError::TooShort(data.len() as u64);
    let orders = [false, true];
    let size_in = |off: usize, be: bool| crate::cursor::u64_at(data, off, be);
    if let Some(be) = orders.into_iter().find(|&be| size_in(8, be) == Some(16)) {
        return Ok(be);
    }
    size_in(16, false).ok_or_else(too_short)?;
    orders
        .into_iter()
        .find(|&be| size_in(16, be).is_some_and(|a| V1_ATTR_SIZES.iter().any(|s| s + 16 == a)))
        .ok_or_else(|| crate::DecodeError::Header {
            offset: 16,
            what: format!(
                "legacy PERFFILE header whose attr_size ({:#x}) is none of perf's attr sizes \
                 plus 16 in either byte order: its byte order is unknown",
                size_in(16, false).unwrap_or(0)
            ),
        })
}

fn herr(offset: u64, what: impl Into<String>) -> HeaderError {
    HeaderError {
        offset,
        what: what.into(),
    }
}

/// Parses the 104-byte file header (after the magic has been recognized).
pub(crate) fn parse_file_header(data: &[u8], big_endian: bool) -> Result<FileHeader, HeaderError> {
    let mut c = Cur::new(data, big_endian);
    c.skip(8)
        .ok_or_else(|| herr(0, "file shorter than the magic"))?;
    let short = || herr(data.len() as u64, "file header truncated");
    let size = c.u64().ok_or_else(short)?;
    // perf's previous header ended before the feature bits (72 bytes): no features then.
    let has_features = size != FILE_HEADER_SIZE_NO_FEATURES as u64;
    if size < FILE_HEADER_SIZE as u64 && has_features {
        return Err(herr(
            8,
            format!("header size {size} is smaller than the {FILE_HEADER_SIZE} bytes of a perf.data header (pipe-mode size is 16)"),
        ));
    }
    let attr_size = c.u64().ok_or_else(short)?;
    let attrs = Section::read(&mut c).ok_or_else(short)?;
    let data_sec = Section::read(&mut c).ok_or_else(short)?;
    let _event_types = Section::read(&mut c).ok_or_else(short)?;
    let mut features = [0u64; 4];
    if has_features {
        for f in &mut features {
            *f = c.u64().ok_or_else(short)?;
        }
    }
    Ok(FileHeader {
        big_endian,
        attr_size,
        attrs,
        data: data_sec,
        features,
    })
}

/// The fields of `perf_event_attr` culprit uses, read only where the attr's own `size` covers
/// them (older perf writes shorter attrs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Attr {
    pub type_: u32,
    pub config: u64,
    pub period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    /// `bp_type` of a hardware breakpoint (`HW_BREAKPOINT_R` 1, `W` 2, `X` 4).
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub sample_regs_intr: u64,
    pub ids: Vec<u64>,
    pub name: Option<String>,
}

/// `perf_event_attr` flag bits.
pub(crate) use crate::abi::attr_flag as flag;

/// Parses one `perf_event_attr` from `b` (at most `b.len()` bytes are looked at). Returns the
/// attr and its self-declared size.
pub(crate) fn parse_attr(b: &[u8], big_endian: bool) -> Option<(Attr, usize)> {
    let mut c = Cur::new(b, big_endian);
    let type_ = c.u32()?;
    // Size 0: written by perf before attrs had sizes; perf reads it as the first ABI's.
    let size = match c.u32()? as usize {
        0 => ATTR_SIZE_VER0,
        n => n,
    };
    if size < ATTR_SIZE_VER0 {
        return None;
    }
    // Only the bytes the attr claims (and we have) are read.
    let body = b.get(..size.min(b.len()))?;
    let field = |off: usize| crate::cursor::u64_at(body, off, big_endian).unwrap_or(0);
    let u32_field = |off: usize| {
        let mut c = Cur::new(body, big_endian);
        c.skip(off).and_then(|_| c.u32()).unwrap_or(0)
    };
    let attr = Attr {
        type_,
        config: field(8),
        period_or_freq: field(16),
        sample_type: field(24),
        read_format: field(32),
        flags: field(40),
        bp_type: u32_field(52),
        config1: field(56),
        config2: field(64),
        branch_sample_type: field(72),
        sample_regs_user: field(80),
        sample_stack_user: u32_field(88),
        sample_regs_intr: field(96),
        ids: Vec::new(),
        name: None,
    };
    if body.len() < ATTR_SIZE_VER0 {
        return None;
    }
    Some((attr, size))
}

/// Reads the attrs section of a file-mode header: `attr_size`-byte entries, each an attr
/// followed by a `{offset, size}` section of its u64 ids.
pub(crate) fn parse_file_attrs(data: &[u8], h: &FileHeader) -> Result<Vec<Attr>, HeaderError> {
    let sec = h.attrs.slice(data).ok_or_else(|| {
        herr(
            h.attrs.offset,
            format!(
                "attribute section ({} bytes at offset {}) lies outside the {}-byte file",
                h.attrs.size,
                h.attrs.offset,
                data.len()
            ),
        )
    })?;
    let entry = usize::try_from(h.attr_size).unwrap_or(usize::MAX);
    if !(ATTR_SIZE_VER0 + 16..=4096).contains(&entry) {
        return Err(herr(16, format!("implausible attr_size {}", h.attr_size)));
    }
    let mut attrs = Vec::new();
    for (i, chunk) in sec.chunks_exact(entry).enumerate() {
        let at = h.attrs.offset + (i * entry) as u64;
        let (attr_bytes, ids_bytes) = chunk.split_at(entry - 16);
        let (mut attr, _) = parse_attr(attr_bytes, h.big_endian)
            .ok_or_else(|| herr(at, "unreadable perf_event_attr"))?;
        let mut c = Cur::new(ids_bytes, h.big_endian);
        let ids_sec = Section::read(&mut c).ok_or_else(|| herr(at, "attr ids section"))?;
        // The ids are optional for reading samples when there is one attr; a bad ids section
        // is reported by the caller as a warning through an empty list.
        if let Some(ids) = ids_sec.slice(data) {
            let mut c = Cur::new(ids, h.big_endian);
            while let Some(id) = c.u64() {
                attr.ids.push(id);
            }
        }
        attrs.push(attr);
    }
    if attrs.is_empty() {
        return Err(herr(h.attrs.offset, "the file has no event attributes"));
    }
    Ok(attrs)
}

/// Header facts collected from feature sections (both modes).
#[derive(Debug, Default)]
pub(crate) struct Features {
    pub meta: Meta,
    /// (pid, path, build-id, cpumode) from HEADER_BUILD_ID or pipe-mode HEADER_BUILD_ID
    /// records.
    pub build_ids: Vec<(i32, String, Vec<u8>, CpuMode)>,
    /// EVENT_DESC: (name, ids) per event, in file order.
    pub event_desc: Vec<(String, Vec<u64>)>,
    /// Tracepoint formats from the tracing data (HEADER_TRACING_DATA, or the pipe-mode
    /// TRACING_DATA record).
    pub tracepoints: Vec<crate::tracepoint::TracepointFormat>,
    pub warnings: Vec<String>,
}

/// Finds the feature sections of a file-mode header: a table of `{offset, size}` pairs right
/// after the data section, one per set feature bit, in bit order.
/// Also says whether the table was complete.
pub(crate) fn file_feature_sections(data: &[u8], h: &FileHeader) -> (Vec<(u32, Section)>, bool) {
    let mut out = Vec::new();
    let wanted = h.features.iter().map(|w| w.count_ones()).sum::<u32>();
    let rest = h
        .data
        .offset
        .checked_add(h.data.size)
        .and_then(|t| usize::try_from(t).ok())
        .and_then(|t| data.get(t..));
    let Some(rest) = rest else {
        return (out, wanted == 0);
    };
    let mut c = Cur::new(rest, h.big_endian);
    for bit in 0..256u32 {
        let word = h.features[(bit / 64) as usize];
        if word & (1u64 << (bit % 64)) == 0 {
            continue;
        }
        match Section::read(&mut c) {
            Some(s) => out.push((bit, s)),
            None => break,
        }
    }
    let complete = out.len() as u32 == wanted;
    (out, complete)
}

/// Parses one feature section's bytes into `f`. Unknown features are ignored.
pub(crate) fn parse_feature(f: &mut Features, id: u32, b: &[u8], big_endian: bool) {
    let mut c = Cur::new(b, big_endian);
    let ok = match id {
        feat::HOSTNAME => c.header_string().map(|s| f.meta.hostname = Some(s)),
        feat::OSRELEASE => c.header_string().map(|s| f.meta.os_release = Some(s)),
        feat::VERSION => c.header_string().map(|s| f.meta.perf_version = Some(s)),
        feat::ARCH => c.header_string().map(|s| f.meta.arch = Some(s)),
        feat::CPUDESC => c.header_string().map(|s| f.meta.cpu_desc = Some(s)),
        feat::CPUID => c.header_string().map(|s| f.meta.cpuid = Some(s)),
        feat::NRCPUS => (|| {
            // Order as written by perf: nr_cpus_avail, then nr_cpus_online.
            f.meta.nr_cpus = Some(c.u32()?);
            f.meta.nr_cpus_online = Some(c.u32()?);
            Some(())
        })(),
        feat::TOTAL_MEM => c.u64().map(|v| f.meta.total_mem_kb = Some(v)),
        feat::CMDLINE => (|| {
            let n = c.u32()?;
            let mut parts = Vec::new();
            for _ in 0..n {
                parts.push(c.header_string()?);
            }
            f.meta.cmdline = Some(parts.join(" "));
            Some(())
        })(),
        feat::PMU_MAPPINGS => (|| {
            let n = c.u32()?;
            for _ in 0..n {
                let ty = c.u32()?;
                let name = c.header_string()?;
                f.meta.pmu_mappings.push((ty, name));
            }
            Some(())
        })(),
        feat::PMU_CAPS => (|| {
            // u32 nr_pmu; per PMU: u32 nr_caps, nr_caps × {name, value} strings, PMU name.
            let n = c.u32()?;
            for _ in 0..n {
                let nr_caps = c.u32()?;
                let mut caps = Vec::new();
                for _ in 0..nr_caps {
                    let name = c.header_string()?;
                    let value = c.header_string()?;
                    caps.push((name, value));
                }
                let pmu = c.header_string()?;
                for (name, value) in caps {
                    f.meta.pmu_caps.push((pmu.clone(), name, value));
                }
            }
            Some(())
        })(),
        feat::SAMPLE_TIME => (|| {
            let first = c.u64()?;
            let last = c.u64()?;
            f.meta.header_time_range = Some((first, last));
            Some(())
        })(),
        feat::EVENT_DESC => parse_event_desc(f, &mut c, big_endian),
        feat::BUILD_ID => {
            // A sequence of build_id_event records (8-byte header with their size).
            while c.remaining() >= 8 {
                let start = c.pos();
                let Some(rec) = (|| {
                    let _type = c.u32()?;
                    let misc = c.u16()?;
                    let size = c.u16()? as usize;
                    let body = c.bytes(size.checked_sub(8)?)?;
                    Some((misc, body))
                })() else {
                    f.warnings.push(format!(
                        "HEADER_BUILD_ID: unreadable entry at section offset {start}"
                    ));
                    break;
                };
                if let Some(e) = parse_build_id_body(rec.0, rec.1, big_endian) {
                    f.build_ids.push(e);
                }
            }
            Some(())
        }
        feat::COMPRESSED => {
            f.meta.compressed = true;
            Some(())
        }
        feat::BPF_PROG_INFO => parse_bpf_prog_info(b, big_endian).map(|functions| {
            f.meta.bpf_functions = std::sync::Arc::new(functions);
        }),
        feat::TRACING_DATA => {
            add_tracing_data(f, b);
            Some(())
        }
        _ => Some(()),
    };
    if ok.is_none() {
        f.warnings
            .push(format!("feature section {id} is malformed; ignored"));
    }
}

/// HEADER_BPF_PROG_INFO (perf's `write_bpf_prog_info`): a u32 count, then per program
/// perf's `struct perf_bpil`: `info_len`, `data_len` (u32), the `arrays` mask (u64), the
/// kernel's `bpf_prog_info` (`info_len` bytes, its pointers rewritten as offsets into the
/// data) and the data (`data_len` bytes). Returns the programs' functions; None when the
/// section is cut short.
pub(crate) fn parse_bpf_prog_info(b: &[u8], big_endian: bool) -> Option<Vec<BpfFunction>> {
    use crate::abi::bpf_prog_info::*;
    let mut c = Cur::new(b, big_endian);
    let count = c.u32()?;
    let mut out = Vec::new();
    for _ in 0..count {
        let info_len = c.u32()? as usize;
        let data_len = c.u32()? as usize;
        let arrays = c.u64()?;
        let info = c.bytes(info_len)?;
        let data = c.bytes(data_len)?;
        // Fields past the writer's `info_len` read as 0, as perf does.
        let info_u32 = |off: usize| u32_at(info, off, big_endian).unwrap_or(0);
        let info_u64 = |off: usize| crate::cursor::u64_at(info, off, big_endian).unwrap_or(0);
        // An array of `n` items of `size` bytes, where its bit says the data holds it.
        let array = |bit: u64, off: usize, n: u32, size: usize| -> Option<&[u8]> {
            if arrays & bit == 0 || n == 0 {
                return None;
            }
            let start = usize::try_from(info_u64(off)).ok()?;
            data.get(start..start.checked_add((n as usize).checked_mul(size)?)?)
        };
        let nr_ksyms = info_u32(NR_JITED_KSYMS);
        let Some(ksyms) = array(JITED_KSYMS_BIT, JITED_KSYMS, nr_ksyms, 8) else {
            continue;
        };
        let code = array(
            JITED_INSNS_BIT,
            JITED_PROG_INSNS,
            info_u32(JITED_PROG_LEN),
            1,
        )
        .unwrap_or_default();
        let nr_lens = info_u32(NR_JITED_FUNC_LENS);
        let lens = array(JITED_FUNC_LENS_BIT, JITED_FUNC_LENS, nr_lens, 4);
        let nr_tags = info_u32(NR_PROG_TAGS);
        let tags = array(PROG_TAGS_BIT, PROG_TAGS, nr_tags, 8);
        let mut prog_tag = [0u8; 8];
        prog_tag.copy_from_slice(info.get(TAG..TAG + 8).unwrap_or(&[0; 8]));
        let prog_name = c_string(info.get(NAME..NAME + 16).unwrap_or(&[]));
        let mut at = 0usize;
        for i in 0..nr_ksyms as usize {
            let addr = crate::cursor::u64_at(ksyms, i * 8, big_endian)?;
            // One function: all the code; several: each its length, in order.
            let len = match lens {
                Some(l) => u32_at(l, i * 4, big_endian)? as usize,
                None if nr_ksyms == 1 => code.len(),
                None => 0,
            };
            let tag = match tags.and_then(|t| t.get(i * 8..i * 8 + 8)) {
                Some(t) => t.try_into().ok()?,
                None => prog_tag,
            };
            let end = at.saturating_add(len);
            out.push(BpfFunction {
                prog_id: info_u32(ID),
                prog_name: prog_name.clone(),
                tag,
                addr,
                code: code.get(at..end).map(<[u8]>::to_vec).unwrap_or_default(),
            });
            at = end;
        }
    }
    Some(out)
}

/// The warning for a recording with AUX area trace data (its AUXTRACE_INFO record, in file
/// and pipe mode), given once.
pub(crate) const AUX_NOT_DECODED: &str = "the recording holds AUX area trace data (Intel PT, \
    CoreSight, ARM SPE, ...), which culprit does not decode: the events perf synthesizes from \
    it (instructions, branches, cbr, psb, ...) are not shown; the sampled events are";

/// Parses tracing data into `f.tracepoints`; damage is a warning (the events keep their
/// numeric names).
pub(crate) fn add_tracing_data(f: &mut Features, b: &[u8]) {
    match crate::tracepoint::parse(b) {
        Ok((formats, _)) => f.tracepoints.extend(formats),
        Err(e) => f
            .warnings
            .push(format!("{e}: tracepoint events are not named from it")),
    }
}

/// The body (after the 8-byte header) of a `build_id_event`: pid, 24 bytes of build-id
/// (the first 20 used; with misc bit 15 byte 20 is the real size), NUL-terminated path.
pub(crate) fn parse_build_id_body(
    misc: u16,
    body: &[u8],
    big_endian: bool,
) -> Option<(i32, String, Vec<u8>, CpuMode)> {
    let mut c = Cur::new(body, big_endian);
    let pid = c.i32()?;
    let id = c.bytes(24)?;
    let path = c_string(c.bytes(c.remaining())?);
    let len = if misc & abi::misc::BUILD_ID_SIZE != 0 {
        usize::from(*id.get(20)?).min(20)
    } else {
        // Old files: 20 bytes, trailing zero words trimmed (short ids such as md5 ones).
        let mut n = 20;
        while n >= 4 && id.get(n - 4..n).is_some_and(|w| w.iter().all(|&b| b == 0)) {
            n -= 4;
        }
        n
    };
    Some((pid, path, id.get(..len)?.to_vec(), CpuMode::from_misc(misc)))
}

fn parse_event_desc(f: &mut Features, c: &mut Cur, big_endian: bool) -> Option<()> {
    let n = c.u32()?;
    let attr_size = c.u32()? as usize;
    for _ in 0..n {
        let _attr = c.bytes(attr_size)?;
        let nr_ids = c.u32()? as usize;
        let name = c.header_string()?;
        // Cap by what is left so a lying count cannot allocate.
        if nr_ids > c.remaining() / 8 {
            return None;
        }
        let mut ids = Vec::with_capacity(nr_ids);
        for _ in 0..nr_ids {
            ids.push(c.u64()?);
        }
        let _ = big_endian;
        f.event_desc.push((name, ids));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A HEADER_BPF_PROG_INFO section of one program with two functions (perf's layout,
    /// little-endian): 232-byte info, then the data its offsets point into.
    fn bpf_section() -> Vec<u8> {
        let mut info = vec![0u8; 232];
        let put32 =
            |b: &mut Vec<u8>, off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
        let put64 =
            |b: &mut Vec<u8>, off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
        put32(&mut info, 4, 97);
        info[8..16].copy_from_slice(&[0xaa; 8]);
        info[64..68].copy_from_slice(b"demo");
        // Data: code (5 + 3 bytes) at 0, ksyms at 8, func lens at 24, prog tags at 32.
        let mut data = vec![0x90u8; 8];
        data.extend_from_slice(&0xffff_0000_1000u64.to_le_bytes());
        data.extend_from_slice(&0xffff_0000_2000u64.to_le_bytes());
        data.extend_from_slice(&5u32.to_le_bytes());
        data.extend_from_slice(&3u32.to_le_bytes());
        data.extend_from_slice(&[0x11; 8]);
        data.extend_from_slice(&[0x22; 8]);
        put32(&mut info, 16, 8);
        put64(&mut info, 24, 0);
        put32(&mut info, 104, 2);
        put32(&mut info, 108, 2);
        put64(&mut info, 112, 8);
        put64(&mut info, 120, 24);
        put32(&mut info, 180, 2);
        put64(&mut info, 184, 32);
        let arrays: u64 = 1 | (1 << 3) | (1 << 4) | (1 << 8);
        let mut b = 1u32.to_le_bytes().to_vec();
        b.extend_from_slice(&(info.len() as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&arrays.to_le_bytes());
        b.extend_from_slice(&info);
        b.extend_from_slice(&data);
        b
    }

    #[test]
    fn test_bpf_prog_info_functions_code_and_names() {
        let f = parse_bpf_prog_info(&bpf_section(), false).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].prog_id, f[0].prog_name.as_str()), (97, "demo"));
        assert_eq!((f[0].addr, f[0].code.len()), (0xffff_0000_1000, 5));
        assert_eq!((f[1].addr, f[1].code.len()), (0xffff_0000_2000, 3));
        assert!(f[0].is_named("bpf_prog_1111111111111111_demo"));
        assert!(f[1].is_named("bpf_prog_2222222222222222_F"));
        assert!(!f[1].is_named("bpf_prog_aaaaaaaaaaaaaaaa_demo"));
        // Cut anywhere: no panic; cut inside an entry: none of it.
        let b = bpf_section();
        for cut in 0..b.len() {
            assert!(parse_bpf_prog_info(&b[..cut], false).is_none_or(|f| f.is_empty()));
        }
    }

    #[test]
    fn test_parse_attr_rejects_short_size() {
        let mut b = vec![0u8; 64];
        b[4] = 32; // size 32 < VER0
        assert!(parse_attr(&b, false).is_none());
        b[4] = 64;
        b[24] = 0x7; // sample_type IP|TID|TIME
        let (a, size) = parse_attr(&b, false).unwrap();
        assert_eq!(size, 64);
        assert_eq!(a.sample_type, 7);
    }

    #[test]
    fn test_parse_attr_reads_only_declared_size() {
        let mut b = vec![0u8; 128];
        b[4] = 64;
        b[80] = 0xff; // sample_regs_user lies beyond the declared 64 bytes
        let (a, _) = parse_attr(&b, false).unwrap();
        assert_eq!(a.sample_regs_user, 0);
    }

    #[test]
    fn test_legacy_magic_byte_order_from_attr_size() {
        let mut h = b"PERFFILE".to_vec();
        h.extend_from_slice(&104u64.to_le_bytes());
        h.extend_from_slice(&96u64.to_le_bytes()); // PERF_ATTR_SIZE_VER2 + 16
        assert!(!byte_order(&h).unwrap());
        h[16..24].copy_from_slice(&120u64.to_be_bytes()); // VER4 + 16, swapped
        assert!(byte_order(&h).unwrap());
        h[16..24].copy_from_slice(&144u64.to_le_bytes()); // not a v1 size
        let e = byte_order(&h).unwrap_err().to_string();
        assert!(e.contains("byte order"), "{e}");
        assert!(byte_order(&h[..12]).is_err());
    }

    #[test]
    fn test_header_without_feature_bits() {
        let mut h = b"PERFFILE".to_vec();
        for v in [72u64, 96, 72, 96, 168, 40, 0, 0, 0xffff, 0xffff] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let fh = parse_file_header(&h, false).unwrap();
        assert_eq!(
            (fh.attr_size, fh.data.offset, fh.features),
            (96, 168, [0; 4])
        );
        h[8..16].copy_from_slice(&80u64.to_le_bytes());
        assert!(parse_file_header(&h, false).is_err());
    }

    #[test]
    fn test_attr_size_zero_is_the_first_abi() {
        let b = vec![0u8; 64];
        let (_, size) = parse_attr(&b, false).unwrap();
        assert_eq!(size, 64);
    }

    #[test]
    fn test_build_id_body_size_bit() {
        let mut body = vec![0u8; 4 + 24];
        body[4..24].copy_from_slice(&[0xab; 20]);
        body[24] = 8; // real size 8
        body.extend_from_slice(b"/bin/x\0\0");
        let (_, path, id, _) = parse_build_id_body(1 << 15, &body, false).unwrap();
        assert_eq!(path, "/bin/x");
        assert_eq!(id.len(), 8);
        let (_, _, id, _) = parse_build_id_body(0, &body, false).unwrap();
        assert_eq!(id.len(), 20);
    }
}
