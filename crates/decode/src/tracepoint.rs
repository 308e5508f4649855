//! perf's tracing data: the ftrace event formats `perf record` saves for tracepoint and
//! probe events (the HEADER_TRACING_DATA feature section in file mode, the payload of a
//! PERF_RECORD_HEADER_TRACING_DATA record in pipe mode). Layout as read by perf's
//! `tools/perf/util/trace-event-read.c`:
//!
//! magic `"\x17\x08\x44tracing"`, a NUL-terminated version (`"0.6"`), one byte big-endian
//! flag, one byte long size, u32 page size, `"header_page\0"` + u64 size + text,
//! `"header_event\0"` + u64 size + text, u32 count of ftrace format files (each u64 size +
//! text), u32 count of systems (each a NUL-terminated name, u32 count of event format files,
//! each u64 size + text), u32 size + kallsyms text, u32 size + printk formats, and from
//! version 0.6 u64 size + saved command lines. Integers are in the tracing data's own byte
//! order.
//!
//! An event format text holds `name: sched_switch`, `ID: 316` and one
//! `field:TYPE NAME; offset:N; size:N; signed:N;` line per field: the ID is the
//! tracepoint's `perf_event_attr.config`, so it names the event `system:name` as perf does.

use serde::Serialize;

use crate::cursor::Cur;

pub mod print_fmt;

/// The magic at the start of the tracing data.
const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// One field of a tracepoint's raw record (`PERF_SAMPLE_RAW` payload).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TracepointField {
    /// Field name (`prev_comm`).
    pub name: String,
    /// C type as the format spells it, array bounds included (`char[16]`, `__data_loc
    /// char[]`, `pid_t`).
    pub type_name: String,
    /// Byte offset in the raw record.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Whether the field is signed.
    pub signed: bool,
}

/// A tracepoint's format from the tracing data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TracepointFormat {
    /// The tracepoint id (`perf_event_attr.config` of its events).
    pub id: u64,
    /// System (`sched`, `probe_myprog`, `ftrace`).
    pub system: String,
    /// Event name (`sched_switch`, `main`).
    pub name: String,
    /// The fields, common ones (`common_type`, `common_pid`, ...) first.
    pub fields: Vec<TracepointField>,
    /// Whether the raw records are big-endian (the tracing data's byte order: the
    /// recording machine's).
    pub big_endian: bool,
    /// The `print fmt:` line, parsed; `None` when absent or not understood.
    #[serde(skip)]
    pub print_fmt: Option<print_fmt::PrintFmt>,
}

impl TracepointFormat {
    /// perf's name for the event: `system:name`.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&TracepointField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The event's own fields: all but the `common_*` header every record starts with
    /// (what `perf script` prints).
    pub fn own_fields(&self) -> impl Iterator<Item = &TracepointField> {
        self.fields
            .iter()
            .filter(|f| !f.name.starts_with("common_"))
    }

    /// The event's own fields decoded from a raw record (`PERF_SAMPLE_RAW`), in format
    /// order; a field the record is too short for is left out.
    pub fn decode<'f>(&'f self, raw: &[u8]) -> Vec<(&'f str, FieldValue)> {
        self.own_fields()
            .filter_map(|f| Some((f.name.as_str(), f.read(raw, self.big_endian)?)))
            .collect()
    }

    /// A raw record as its `print fmt:` line writes it (libtraceevent's, so perf script's,
    /// text: `prev_state=D`), or `None` when the line is absent or cannot be evaluated.
    /// `resolve` names kernel code addresses for `%ps`/`%pS`.
    pub fn render(&self, raw: &[u8], resolve: print_fmt::Resolver<'_>) -> Option<String> {
        print_fmt::render(self.print_fmt.as_ref()?, self, raw, resolve)
    }
}

/// How a field's bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer of 1, 2, 4 or 8 bytes.
    Int {
        /// Sign-extended when read.
        signed: bool,
    },
    /// A NUL-padded string: `char NAME[N]` in place, or `__data_loc char[]` /
    /// `__rel_loc char[]` (a u32 locating the bytes: offset in the low 16 bits, length in
    /// the high 16; `__rel_loc` offsets count from the end of the field).
    Str {
        /// How the bytes are found.
        loc: Loc,
    },
    /// An array of integers (`unsigned long args[6]`, `__data_loc u8[] buf`).
    Array {
        /// Bytes per element (1, 2, 4 or 8).
        elem: u32,
        /// Elements are signed.
        signed: bool,
        /// How the bytes are found.
        loc: Loc,
    },
}

/// Where a string's or array's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// At the field's offset, the field's size.
    InPlace,
    /// `__data_loc`: a u32 with the offset in the record (low 16 bits) and length.
    DataLoc,
    /// `__rel_loc`: as `__data_loc`, the offset counted from the end of the u32.
    RelLoc,
}

/// A decoded field value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// A signed integer.
    Signed(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// A pointer (`char * buf`, `const char * filename`): shown in hex.
    Address(u64),
    /// A string (bytes up to the first NUL; invalid UTF-8 replaced).
    Str(String),
    /// An array of signed integers.
    SignedArray(Vec<i64>),
    /// An array of unsigned integers.
    UnsignedArray(Vec<u64>),
}

impl std::fmt::Display for FieldValue {
    /// As `name=value` pairs show it: integers in decimal, pointers in hex, strings as they
    /// are, arrays as `[a, b, …]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn list<T: std::fmt::Display>(
            f: &mut std::fmt::Formatter<'_>,
            v: &[T],
        ) -> std::fmt::Result {
            f.write_str("[")?;
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{x}")?;
            }
            f.write_str("]")
        }
        match self {
            FieldValue::Signed(v) => write!(f, "{v}"),
            FieldValue::Unsigned(v) => write!(f, "{v}"),
            FieldValue::Address(v) => write!(f, "{v:#x}"),
            FieldValue::Str(s) => f.write_str(s),
            FieldValue::SignedArray(v) => list(f, v),
            FieldValue::UnsignedArray(v) => list(f, v),
        }
    }
}

impl TracepointField {
    /// How the field is read, from its type and size.
    pub fn kind(&self) -> FieldKind {
        let ty = self.type_name.as_str();
        let (loc, ty) = if let Some(t) = ty.strip_prefix("__data_loc ") {
            (Some(Loc::DataLoc), t)
        } else if let Some(t) = ty.strip_prefix("__rel_loc ") {
            (Some(Loc::RelLoc), t)
        } else {
            (None, ty)
        };
        let (base, bounds) = match ty.find('[') {
            Some(i) => (ty[..i].trim(), Some(&ty[i..])),
            None => (ty.trim(), None),
        };
        let is_char = matches!(base, "char" | "const char" | "signed char");
        match (loc, bounds) {
            (Some(loc), _) if is_char => FieldKind::Str { loc },
            (None, Some(_)) if is_char => FieldKind::Str { loc: Loc::InPlace },
            (Some(loc), _) => FieldKind::Array {
                elem: elem_size(base),
                signed: self.signed,
                loc,
            },
            (None, Some(b)) => {
                let n = b
                    .trim_matches(|c| c == '[' || c == ']')
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0);
                let elem = n.map_or_else(|| elem_size(base), |n| self.size / n);
                FieldKind::Array {
                    elem: if matches!(elem, 1 | 2 | 4 | 8) {
                        elem
                    } else {
                        1
                    },
                    signed: self.signed,
                    loc: Loc::InPlace,
                }
            }
            (None, None) => FieldKind::Int {
                signed: self.signed,
            },
        }
    }

    /// Whether the field holds an address (a pointer type): shown and compared as one.
    pub fn is_pointer(&self) -> bool {
        self.type_name.contains('*')
    }

    /// The field's value in a raw record of the given byte order; `None` when the record
    /// is too short for it (or its `__data_loc` points outside the record).
    pub fn read(&self, raw: &[u8], big_endian: bool) -> Option<FieldValue> {
        let at = self.offset as usize;
        let int = |b: &[u8], signed: bool| -> Option<FieldValue> {
            let mut word = [0u8; 8];
            let n = b.len();
            if !matches!(n, 1 | 2 | 4 | 8) {
                return None;
            }
            if big_endian {
                word[8 - n..].copy_from_slice(b);
            } else {
                word[..n].copy_from_slice(b);
            }
            let v = if big_endian {
                u64::from_be_bytes(word)
            } else {
                u64::from_le_bytes(word)
            };
            Some(if signed {
                let shift = 64 - 8 * n as u32;
                FieldValue::Signed(((v << shift) as i64) >> shift)
            } else {
                FieldValue::Unsigned(v)
            })
        };
        let bytes = |loc: Loc| -> Option<&[u8]> {
            match loc {
                Loc::InPlace => raw.get(at..at.checked_add(self.size as usize)?),
                Loc::DataLoc | Loc::RelLoc => {
                    let w = raw.get(at..at + 4)?;
                    let w = [w[0], w[1], w[2], w[3]];
                    let v = if big_endian {
                        u32::from_be_bytes(w)
                    } else {
                        u32::from_le_bytes(w)
                    };
                    let mut off = (v & 0xffff) as usize;
                    if loc == Loc::RelLoc {
                        off += at + 4;
                    }
                    raw.get(off..off + (v >> 16) as usize)
                }
            }
        };
        match self.kind() {
            FieldKind::Int { .. } if self.is_pointer() => match int(bytes(Loc::InPlace)?, false)? {
                FieldValue::Unsigned(v) => Some(FieldValue::Address(v)),
                other => Some(other),
            },
            FieldKind::Int { signed } => int(bytes(Loc::InPlace)?, signed),
            FieldKind::Str { loc } => {
                let b = bytes(loc)?;
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                Some(FieldValue::Str(
                    String::from_utf8_lossy(&b[..end]).into_owned(),
                ))
            }
            FieldKind::Array { elem, signed, loc } => {
                let b = bytes(loc)?;
                let items = b.chunks_exact(elem as usize).map(|c| int(c, signed));
                Some(if signed {
                    FieldValue::SignedArray(
                        items
                            .map(|v| match v {
                                Some(FieldValue::Signed(x)) => x,
                                _ => 0,
                            })
                            .collect(),
                    )
                } else {
                    FieldValue::UnsignedArray(
                        items
                            .map(|v| match v {
                                Some(FieldValue::Unsigned(x)) => x,
                                _ => 0,
                            })
                            .collect(),
                    )
                })
            }
        }
    }
}

/// Bytes of a C integer type (arrays' elements); 1 when unknown (shown byte by byte).
fn elem_size(base: &str) -> u32 {
    let b = base.trim_start_matches("const ").trim();
    match b {
        "u8" | "s8" | "__u8" | "__s8" | "unsigned char" | "uint8_t" | "int8_t" | "bool" => 1,
        "u16" | "s16" | "__u16" | "__s16" | "short" | "unsigned short" | "uint16_t" | "int16_t" => {
            2
        }
        "u32" | "s32" | "__u32" | "__s32" | "int" | "unsigned int" | "unsigned" | "pid_t"
        | "uint32_t" | "int32_t" => 4,
        "u64" | "s64" | "__u64" | "__s64" | "long" | "unsigned long" | "long long"
        | "unsigned long long" | "size_t" | "uint64_t" | "int64_t" => 8,
        _ if b.ends_with('*') => 8,
        _ => 1,
    }
}

/// A NUL-terminated string.
fn c_str<'a>(c: &mut Cur<'a>) -> Option<&'a [u8]> {
    let mut n = 0;
    loop {
        let mut probe = *c;
        probe.skip(n)?;
        if probe.bytes(1)? == [0] {
            break;
        }
        n += 1;
    }
    let s = c.bytes(n)?;
    c.skip(1)?;
    Some(s)
}

/// A u64-sized blob.
fn blob8<'a>(c: &mut Cur<'a>) -> Option<&'a [u8]> {
    let n = usize::try_from(c.u64()?).ok()?;
    c.bytes(n)
}

/// The tracepoint formats of tracing data (the layout above, as perf writes it); damaged
/// data is an `Err` saying where it stopped.
pub fn parse_tracing_data(b: &[u8]) -> Result<Vec<TracepointFormat>, String> {
    parse(b).map(|(formats, _)| formats)
}

/// Parses tracing data. Returns the formats found and the bytes the tracing data used.
/// Damage is an `Err` saying where; formats are only returned for a complete parse of the
/// event files (the trailing kallsyms/printk/cmdline parts may be absent).
pub(crate) fn parse(b: &[u8]) -> Result<(Vec<TracepointFormat>, usize), String> {
    if b.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
        return Err("tracing data without its magic".into());
    }
    // The byte-order flag comes after the version string: find it first.
    let mut c = Cur::new(b, false);
    c.skip(MAGIC.len()).ok_or("tracing data truncated")?;
    let version = c_str(&mut c).ok_or("tracing data: unterminated version")?;
    let version = String::from_utf8_lossy(version).into_owned();
    let flags = c.bytes(2).ok_or("tracing data truncated")?;
    let big_endian = flags.first() == Some(&1);
    let pos = c.pos();
    let mut c = Cur::new(b, big_endian);
    c.skip(pos).ok_or("tracing data truncated")?;
    let short = |what: &str| format!("tracing data truncated in {what}");
    let _page_size = c.u32().ok_or_else(|| short("the page size"))?;
    for label in [&b"header_page\0"[..], &b"header_event\0"[..]] {
        let got = c
            .bytes(label.len())
            .ok_or_else(|| short("the header files"))?;
        if got != label {
            return Err(format!(
                "tracing data: {} expected",
                String::from_utf8_lossy(&label[..label.len() - 1])
            ));
        }
        blob8(&mut c).ok_or_else(|| short("the header files"))?;
    }
    let mut formats = Vec::new();
    let ftrace = c.u32().ok_or_else(|| short("the ftrace formats"))?;
    for _ in 0..ftrace {
        let text = blob8(&mut c).ok_or_else(|| short("the ftrace formats"))?;
        formats.extend(parse_format("ftrace", text, big_endian));
    }
    let systems = c.u32().ok_or_else(|| short("the event formats"))?;
    for _ in 0..systems {
        let system = c_str(&mut c).ok_or_else(|| short("a system name"))?;
        let system = String::from_utf8_lossy(system).into_owned();
        let n = c.u32().ok_or_else(|| short("the event formats"))?;
        for _ in 0..n {
            let text = blob8(&mut c).ok_or_else(|| short("the event formats"))?;
            formats.extend(parse_format(&system, text, big_endian));
        }
    }
    // kallsyms and printk formats (u32 sizes), then the saved command lines from 0.6 on.
    let tail = (|| {
        for _ in 0..2 {
            let n = c.u32()? as usize;
            c.skip(n)?;
        }
        if version_at_least_0_6(&version) {
            blob8(&mut c)?;
        }
        Some(())
    })();
    if tail.is_none() {
        return Err(short("the kallsyms, printk formats or command lines"));
    }
    Ok((formats, c.pos()))
}

fn version_at_least_0_6(v: &str) -> bool {
    let mut parts = v.split('.').map(|p| p.trim().parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (0, 6)
}

/// One event format file (`/sys/kernel/tracing/events/SYSTEM/NAME/format`, or one of the
/// tracing data): its `name:`, `ID:` and `field:` lines. `None` without a name or an id.
pub fn parse_format(system: &str, text: &[u8], big_endian: bool) -> Option<TracepointFormat> {
    let text = String::from_utf8_lossy(text);
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("print fmt:") {
            print = print_fmt::parse(v);
        } else if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse::<u64>().ok();
        } else if let Some(v) = line.strip_prefix("field:") {
            if let Some(f) = parse_field(v) {
                fields.push(f);
            }
        }
    }
    Some(TracepointFormat {
        id: id?,
        system: system.to_string(),
        name: name?,
        fields,
        big_endian,
        print_fmt: print,
    })
}

/// `unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;` (after `field:`).
fn parse_field(line: &str) -> Option<TracepointField> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some((k, v)) = p.split_once(':') {
            let v = v.trim().parse::<u32>().ok();
            match k.trim() {
                "offset" => offset = v,
                "size" => size = v,
                "signed" => signed = v == Some(1),
                _ => {}
            }
        }
    }
    // The name is the declaration's last word, array bounds moved to the type.
    let (ty, word) = decl.rsplit_once(char::is_whitespace)?;
    let (field, bounds) = match word.find('[') {
        Some(i) => word.split_at(i),
        None => (word, ""),
    };
    Some(TracepointField {
        name: field.to_string(),
        type_name: format!("{}{bounds}", ty.trim()),
        offset: offset?,
        size: size?,
        signed,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \nprint fmt: \"prev_comm=%s\", REC->prev_comm\n";
    const PROBE: &str = "name: main\nID: 1329\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n";

    /// Tracing data as perf writes it, with the given (system, formats) and byte order.
    pub(crate) fn tracing_data(systems: &[(&str, &[&str])], be: bool) -> Vec<u8> {
        let u32b = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let u64b = |v: u64| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(b"0.6\0");
        out.push(u8::from(be));
        out.push(8);
        out.extend_from_slice(&u32b(4096));
        for (label, text) in [("header_page", "page"), ("header_event", "event")] {
            out.extend_from_slice(label.as_bytes());
            out.push(0);
            out.extend_from_slice(&u64b(text.len() as u64));
            out.extend_from_slice(text.as_bytes());
        }
        out.extend_from_slice(&u32b(0)); // no ftrace formats
        out.extend_from_slice(&u32b(systems.len() as u32));
        for (sys, formats) in systems {
            out.extend_from_slice(sys.as_bytes());
            out.push(0);
            out.extend_from_slice(&u32b(formats.len() as u32));
            for f in *formats {
                out.extend_from_slice(&u64b(f.len() as u64));
                out.extend_from_slice(f.as_bytes());
            }
        }
        out.extend_from_slice(&u32b(3));
        out.extend_from_slice(b"k\n\0");
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u64b(5));
        out.extend_from_slice(b"1 a\n\0");
        out
    }

    pub(crate) const SCHED: (&str, &[&str]) = ("sched", &[SWITCH]);
    pub(crate) const PROBES: (&str, &[&str]) = ("probe_x", &[PROBE]);

    #[test]
    fn test_parse_names_ids_and_fields_both_byte_orders() {
        for be in [false, true] {
            let b = tracing_data(&[SCHED, PROBES], be);
            let (formats, used) = parse(&b).unwrap();
            assert_eq!(used, b.len());
            let names: Vec<(u64, String)> = formats.iter().map(|f| (f.id, f.full_name())).collect();
            assert_eq!(
                names,
                [
                    (316, "sched:sched_switch".to_string()),
                    (1329, "probe_x:main".to_string())
                ]
            );
            let comm = &formats[0].fields[1];
            assert_eq!(
                (
                    comm.name.as_str(),
                    comm.type_name.as_str(),
                    comm.offset,
                    comm.size
                ),
                ("prev_comm", "char[16]", 8, 16)
            );
            assert!(formats[0].fields[2].signed && !formats[0].fields[0].signed);
        }
    }

    #[test]
    fn test_decode_field_kinds_both_byte_orders() {
        let text = "name: t\nID: 9\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:short delta;\toffset:2;\tsize:2;\tsigned:1;\n\
            \tfield:__data_loc char[] name;\toffset:4;\tsize:4;\tsigned:0;\n\
            \tfield:const char * path;\toffset:8;\tsize:8;\tsigned:0;\n\
            \tfield:unsigned int args[2];\toffset:16;\tsize:8;\tsigned:0;\n\
            \tfield:char comm[8];\toffset:24;\tsize:8;\tsigned:0;\n";
        for be in [false, true] {
            let f = parse_format("s", text.as_bytes(), be).unwrap();
            let mut raw = vec![0u8; 32];
            let put = |raw: &mut Vec<u8>, at: usize, bytes: &[u8]| {
                raw[at..at + bytes.len()].copy_from_slice(bytes)
            };
            let (d16, loc, p, a0, a1) = if be {
                (
                    (-3i16).to_be_bytes().to_vec(),
                    ((3u32 << 16) | 32).to_be_bytes().to_vec(),
                    0x7ffdu64.to_be_bytes().to_vec(),
                    7u32.to_be_bytes().to_vec(),
                    8u32.to_be_bytes().to_vec(),
                )
            } else {
                (
                    (-3i16).to_le_bytes().to_vec(),
                    ((3u32 << 16) | 32).to_le_bytes().to_vec(),
                    0x7ffdu64.to_le_bytes().to_vec(),
                    7u32.to_le_bytes().to_vec(),
                    8u32.to_le_bytes().to_vec(),
                )
            };
            put(&mut raw, 2, &d16);
            put(&mut raw, 4, &loc);
            put(&mut raw, 8, &p);
            put(&mut raw, 16, &a0);
            put(&mut raw, 20, &a1);
            put(&mut raw, 24, b"ab\0junk!");
            raw.extend_from_slice(b"xy\0");
            let got = f.decode(&raw);
            assert_eq!(
                got,
                vec![
                    ("delta", FieldValue::Signed(-3)),
                    ("name", FieldValue::Str("xy".into())),
                    ("path", FieldValue::Address(0x7ffd)),
                    ("args", FieldValue::UnsignedArray(vec![7, 8])),
                    ("comm", FieldValue::Str("ab".into())),
                ],
                "big-endian {be}"
            );
            assert_eq!(got[2].1.to_string(), "0x7ffd");
            // A record too short for some fields: those are left out, no panic.
            for cut in 0..raw.len() {
                assert!(f.decode(&raw[..cut]).len() <= got.len());
            }
        }
    }

    #[test]
    fn test_parse_rejects_damage_without_panicking() {
        let b = tracing_data(&[SCHED], false);
        for n in 0..b.len() {
            assert!(parse(&b[..n]).is_err(), "cut at {n}");
        }
        let mut bad = b.clone();
        bad[0] = 0;
        assert!(parse(&bad).unwrap_err().contains("magic"));
        // A lying format size.
        let at = b.windows(6).position(|w| w == b"sched\0").unwrap() + 10;
        let mut lying = b;
        lying[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&lying).is_err());
    }
}
