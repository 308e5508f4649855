//! `culprit script -F`/`--fields`: perf script's field list, with perf's names and rules, and
//! perf script's text layout for it (as current perf prints it: `%7d/%-7d` thread ids, run
//! time addresses in call chains, `dsoff`).
//!
//! - `-F comm,tid,ip,sym` prints those fields only; `-F +addr,-dso` adds to and removes from
//!   perf's default (`comm,tid,cpu,time,event,ip,sym,symoff,dso,period`); the two forms do
//!   not mix. A field the user asks for that an event did not record (`cpu` without
//!   PERF_SAMPLE_CPU) is an error naming the event; a default one is silently left out.
//! - With call chains (and `ip`), the sample line ends after the event and each frame gets a
//!   line (`\t ADDR sym+0xoff (dso)`), then an empty line; the command is then not padded.
//!   As perf, files with call chains show `ip` and `sym` in `+`/`-` lists unless removed.
//! - `sym`, `symoff`, `dso`, `dsoff` qualify `ip`: without `ip` they print nothing.

use std::fmt::Write as _;

use culprit_decode::abi::{perf_type, sample_type};
use culprit_decode::model::{EventInfo, Profile};
use culprit_output::text::escape;

use super::{sym_text, ListedSample};

/// A field of perf script's `-F` list that culprit prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Command name.
    Comm,
    /// Thread id.
    Tid,
    /// Process id.
    Pid,
    /// Time, seconds.microseconds.
    Time,
    /// CPU number, `[000]`.
    Cpu,
    /// Event name.
    Event,
    /// Sampled address (with a call chain: the chain).
    Ip,
    /// Symbol of each address.
    Sym,
    /// DSO of each address.
    Dso,
    /// Offset in the DSO's file, after the DSO (`(path+0x1172)`).
    Dsoff,
    /// PERF_SAMPLE_ADDR.
    Addr,
    /// `+0xoff` after each symbol.
    Symoff,
    /// The sample's period.
    Period,
    /// PERF_SAMPLE_WEIGHT.
    Weight,
    /// PERF_SAMPLE_PHYS_ADDR.
    PhysAddr,
    /// PERF_SAMPLE_DATA_SRC: the raw value and perf's decoded `|OP …|LVL …|…` text.
    DataSrc,
    /// A tracepoint's record as its print format writes it.
    Trace,
}

/// Names culprit accepts, in perf's order.
pub const FIELDS: &[(&str, Field)] = &[
    ("comm", Field::Comm),
    ("tid", Field::Tid),
    ("pid", Field::Pid),
    ("time", Field::Time),
    ("cpu", Field::Cpu),
    ("event", Field::Event),
    ("ip", Field::Ip),
    ("sym", Field::Sym),
    ("dso", Field::Dso),
    ("dsoff", Field::Dsoff),
    ("addr", Field::Addr),
    ("symoff", Field::Symoff),
    ("period", Field::Period),
    ("weight", Field::Weight),
    ("data_src", Field::DataSrc),
    ("phys_addr", Field::PhysAddr),
    ("trace", Field::Trace),
];

/// perf script's other field names: valid for perf, not printed by culprit.
pub const PERF_ONLY: &[&str] = &[
    "srcline",
    "iregs",
    "uregs",
    "brstack",
    "brstacksym",
    "flags",
    "bpf-output",
    "brstackinsn",
    "brstackinsnlen",
    "brstackoff",
    "callindent",
    "insn",
    "disasm",
    "insnlen",
    "synth",
    "metric",
    "misc",
    "srccode",
    "ipc",
    "tod",
    "data_page_size",
    "code_page_size",
    "ins_lat",
    "machine_pid",
    "vcpu",
    "cgroup",
    "retire_lat",
    "brstackdisasm",
    "brcntr",
];

/// A set of fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldSet(u32);

impl FieldSet {
    fn bit(f: Field) -> u32 {
        1 << (f as u32)
    }
    /// Whether `f` is in the set.
    pub fn has(self, f: Field) -> bool {
        self.0 & Self::bit(f) != 0
    }
    fn add(&mut self, f: Field) {
        self.0 |= Self::bit(f);
    }
    fn remove(&mut self, f: Field) {
        self.0 &= !Self::bit(f);
    }
    fn of(fields: &[Field]) -> FieldSet {
        let mut s = FieldSet::default();
        fields.iter().for_each(|&f| s.add(f));
        s
    }
    fn names(self) -> Vec<&'static str> {
        FIELDS
            .iter()
            .filter(|(_, f)| self.has(*f))
            .map(|(n, _)| *n)
            .collect()
    }
}

/// Why a `-F` list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A name perf does not know either.
    #[error("unknown field `{field}` in -F `{spec}`; fields: {}", valid())]
    Unknown {
        /// The list as given.
        spec: String,
        /// The unknown name.
        field: String,
    },
    /// A perf field culprit does not print.
    #[error("field `{field}` in -F `{spec}` is perf script's, but culprit does not print it; fields: {}", valid())]
    NotPrinted {
        /// The list as given.
        spec: String,
        /// The field.
        field: String,
    },
    /// `+a,b`: adding/removing and a plain list mixed.
    #[error("-F `{spec}`: cannot mix +field/-field with a plain field list (write `-F a,b` or `-F +a,-b`)")]
    Mixed {
        /// The list as given.
        spec: String,
    },
    /// perf's per-type lists (`sw:comm,tid`).
    #[error("-F `{spec}`: per-event-type lists (`{kind}:…`) are not supported; give one list for every event")]
    PerType {
        /// The list as given.
        spec: String,
        /// The type prefix.
        kind: String,
    },
    /// Nothing in the list.
    #[error("-F is empty; fields: {}", valid())]
    Empty,
    /// A field the user asked for that an event did not record.
    #[error("samples of event `{event}` do not have {what} (recorded without it): cannot print field `{field}`")]
    NotRecorded {
        /// The event.
        event: String,
        /// The perf_event_attr sample bit, as perf names it (`CPU`, `ADDR`).
        what: &'static str,
        /// The field.
        field: &'static str,
    },
    /// `symoff` without `sym`.
    #[error("-F: `symoff` needs `sym` (the offset is printed after the symbol)")]
    SymoffWithoutSym,
}

fn valid() -> String {
    FIELDS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A parsed `-F` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldList {
    /// `-F a,b,c`: exactly these.
    Set(FieldSet),
    /// `-F +a,-b`: perf's default with these added and removed.
    Change {
        /// Added.
        add: FieldSet,
        /// Removed.
        remove: FieldSet,
    },
}

impl FieldList {
    /// Parses `-F`'s value with perf's names and rules.
    pub fn parse(spec: &str) -> Result<FieldList, FieldError> {
        let mut set = FieldSet::default();
        let mut add = FieldSet::default();
        let mut remove = FieldSet::default();
        let (mut plain, mut changes) = (false, false);
        let mut any = false;
        for item in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (sign, name) = match item.as_bytes()[0] {
                b'+' => (Some(true), &item[1..]),
                b'-' => (Some(false), &item[1..]),
                _ => (None, item),
            };
            if let Some((kind, _)) = name.split_once(':') {
                return Err(FieldError::PerType {
                    spec: spec.to_string(),
                    kind: kind.to_string(),
                });
            }
            let Some(&(_, field)) = FIELDS.iter().find(|(n, _)| *n == name) else {
                return Err(if PERF_ONLY.contains(&name) {
                    FieldError::NotPrinted {
                        spec: spec.to_string(),
                        field: name.to_string(),
                    }
                } else {
                    FieldError::Unknown {
                        spec: spec.to_string(),
                        field: name.to_string(),
                    }
                });
            };
            any = true;
            match sign {
                None => {
                    plain = true;
                    set.add(field);
                }
                Some(true) => {
                    changes = true;
                    add.add(field);
                    remove.remove(field);
                }
                Some(false) => {
                    changes = true;
                    remove.add(field);
                    add.remove(field);
                }
            }
            if plain && changes {
                return Err(FieldError::Mixed {
                    spec: spec.to_string(),
                });
            }
        }
        if !any {
            return Err(FieldError::Empty);
        }
        Ok(if plain {
            FieldList::Set(set)
        } else {
            FieldList::Change { add, remove }
        })
    }
}

/// perf script's default fields for an event's type.
fn perf_default(e: &EventInfo) -> FieldSet {
    use Field::*;
    let mut s = FieldSet::of(&[Comm, Tid, Cpu, Time, Event]);
    if e.attr_type == perf_type::TRACEPOINT {
        s.add(Trace);
    } else {
        s = FieldSet(s.0 | FieldSet::of(&[Ip, Sym, Symoff, Dso, Period]).0);
    }
    if e.attr_type == perf_type::RAW {
        s = FieldSet(s.0 | FieldSet::of(&[Addr, Weight, PhysAddr]).0);
    }
    s
}

/// The sample_type bit a field needs, as perf names it.
fn needs(f: Field) -> Option<(u64, &'static str)> {
    match f {
        Field::Ip => Some((sample_type::IP, "IP")),
        Field::Tid | Field::Pid => Some((sample_type::TID, "TID")),
        Field::Time => Some((sample_type::TIME, "TIME")),
        Field::Cpu => Some((sample_type::CPU, "CPU")),
        Field::Addr => Some((sample_type::ADDR, "ADDR")),
        Field::Weight => Some((sample_type::WEIGHT | sample_type::WEIGHT_STRUCT, "WEIGHT")),
        Field::PhysAddr => Some((sample_type::PHYS_ADDR, "PHYS_ADDR")),
        Field::DataSrc => Some((sample_type::DATA_SRC, "DATA_SRC")),
        Field::Trace => Some((sample_type::RAW, "RAW")),
        _ => None,
    }
}

/// The fields one event prints, and whether its samples print a call chain.
#[derive(Debug, Clone, Copy)]
struct EventFields {
    fields: FieldSet,
    chain: bool,
}

/// `-F`'s layout over one profile's events: resolved once the events are known (at the first
/// sample; a pipe's events come before its samples).
#[derive(Debug, Clone)]
pub struct PerfLayout {
    list: FieldList,
    events: Vec<EventFields>,
    name_width: usize,
    /// The widest `data_src` text printed so far: perf pads each to it (a running maximum).
    data_src_width: usize,
}

impl PerfLayout {
    /// The layout of a parsed list.
    pub fn new(list: FieldList) -> PerfLayout {
        PerfLayout {
            list,
            events: Vec::new(),
            name_width: 0,
            data_src_width: 0,
        }
    }

    /// Whether samples may print call chains (else the listing need not resolve them).
    pub fn may_print_chains(&self) -> bool {
        match &self.list {
            FieldList::Set(s) => s.has(Field::Ip),
            FieldList::Change { remove, .. } => !remove.has(Field::Ip),
        }
    }

    /// The fields each event of `profile` prints, checked against what it recorded.
    fn prepare(&mut self, profile: &Profile) -> Result<(), FieldError> {
        let any_chain = profile
            .events
            .iter()
            .any(|e| e.sample_type & sample_type::CALLCHAIN != 0);
        let mut out = Vec::with_capacity(profile.events.len());
        for e in &profile.events {
            let (mut fields, asked) = match &self.list {
                FieldList::Set(s) => (*s, *s),
                FieldList::Change { add, remove } => {
                    let mut f = perf_default(e);
                    // As perf: a file with call chains shows them unless told otherwise.
                    if any_chain {
                        f.add(Field::Ip);
                        f.add(Field::Sym);
                    }
                    f = FieldSet((f.0 | add.0) & !remove.0);
                    (f, *add)
                }
            };
            for &(name, field) in FIELDS {
                let Some((bits, what)) = needs(field) else {
                    continue;
                };
                if !fields.has(field) || e.sample_type & bits != 0 {
                    continue;
                }
                if asked.has(field) {
                    return Err(FieldError::NotRecorded {
                        event: e.name.clone(),
                        what,
                        field: name,
                    });
                }
                fields.remove(field);
            }
            if fields.has(Field::Symoff) && !fields.has(Field::Sym) {
                return Err(FieldError::SymoffWithoutSym);
            }
            if fields.has(Field::Dsoff) {
                fields.add(Field::Dso);
            }
            out.push(EventFields {
                fields,
                chain: any_chain
                    && fields.has(Field::Ip)
                    && e.sample_type & sample_type::CALLCHAIN != 0,
            });
        }
        self.name_width = profile
            .events
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0);
        self.events = out;
        Ok(())
    }

    /// The fields printed for the events of `profile`, by event (for messages and tests).
    pub fn field_names(&mut self, profile: &Profile) -> Result<Vec<Vec<&'static str>>, FieldError> {
        self.prepare(profile)?;
        Ok(self.events.iter().map(|e| e.fields.names()).collect())
    }

    /// The text lines of one sample of `profile`, as `perf script -F` prints them.
    pub fn lines(
        &mut self,
        profile: &Profile,
        s: &ListedSample,
    ) -> Result<Vec<String>, FieldError> {
        if self.events.len() != profile.events.len() {
            self.prepare(profile)?;
        }
        let Some(&EventFields { fields: f, chain }) = self.events.get(s.event_id) else {
            return Ok(Vec::new());
        };
        let mut lines = Vec::new();
        let mut t = String::new();
        if f.has(Field::Comm) {
            if chain {
                let _ = write!(t, "{} ", escape(&s.comm));
            } else {
                let _ = write!(t, "{:>16} ", escape(&s.comm));
            }
        }
        match (f.has(Field::Pid), f.has(Field::Tid)) {
            (true, true) => {
                let _ = write!(t, "{:>7}/{:<7} ", s.pid, s.tid);
            }
            (true, false) => {
                let _ = write!(t, "{:>7} ", s.pid);
            }
            (false, true) => {
                let _ = write!(t, "{:>7} ", s.tid);
            }
            (false, false) => {}
        }
        if f.has(Field::Cpu) {
            let _ = write!(t, "[{:03}] ", s.cpu);
        }
        if f.has(Field::Time) {
            let stamp = format!(
                "{}.{:06}",
                s.time / 1_000_000_000,
                (s.time % 1_000_000_000) / 1000
            );
            let _ = write!(t, "{stamp:>12}: ");
        }
        if f.has(Field::Period) {
            let _ = write!(t, "{:>10} ", s.period);
        }
        if f.has(Field::Event) {
            let _ = write!(t, "{:>w$}: ", escape(&s.event), w = self.name_width);
        }
        if f.has(Field::Trace) {
            if let Some(text) = &s.fields_text {
                t.push_str(&escape(text));
            } else if let Some(fields) = &s.fields {
                let pairs: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{}={}", escape(n), escape(&v.to_string())))
                    .collect();
                t.push_str(&pairs.join(" "));
            }
        }
        if f.has(Field::Addr) {
            let _ = write!(t, "{:16x}", s.addr.unwrap_or(0));
        }
        if f.has(Field::DataSrc) {
            let text = data_src_text(s.data_src.unwrap_or(0));
            self.data_src_width = self.data_src_width.max(text.len());
            let _ = write!(t, "{text:<w$}", w = self.data_src_width);
        }
        if f.has(Field::Weight) {
            let _ = write!(t, "{:16}", s.weight.unwrap_or(0));
        }
        if f.has(Field::Ip) {
            let (sym, off, dso, dsoff) = (
                f.has(Field::Sym),
                f.has(Field::Symoff),
                f.has(Field::Dso),
                f.has(Field::Dsoff),
            );
            if chain {
                lines.push(std::mem::take(&mut t));
                lines.extend(
                    s.callchain
                        .iter()
                        .map(|fr| fr.perf_line(sym, off, dso, dsoff)),
                );
            } else {
                let _ = write!(t, " {:16x}", s.ip);
                if sym {
                    t.push(' ');
                    t.push_str(&sym_text(s.sym.as_deref(), s.symoff, off));
                }
                if dso {
                    t.push_str(" (");
                    t.push_str(&escape(s.dso_path.as_deref().unwrap_or("[unknown]")));
                    if let (true, Some(o)) = (dsoff, s.dso_offset) {
                        let _ = write!(t, "+{o:#x}");
                    }
                    t.push(')');
                }
            }
        }
        if f.has(Field::PhysAddr) {
            let _ = write!(t, "{:16x}", s.phys_addr.unwrap_or(0));
        }
        lines.push(t);
        Ok(lines)
    }
}

/// perf 6.1's `data_src__fprintf` text: the value in hex (16 wide), a space and
/// `perf_script__meminfo_scnprintf`'s decoding, each part cut to perf's 100-byte buffers.
fn data_src_text(value: u64) -> String {
    use culprit_decode::pebs::text;
    const PERF_BUFFER: usize = 99;
    let mut decoded = format!(
        "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK  {}",
        text::op(value),
        text::lvl(value),
        text::snoop(value),
        text::tlb(value),
        text::locked(value),
        text::blocked(value)
    );
    decoded.truncate(PERF_BUFFER);
    let mut out = format!("{value:16x} {decoded}");
    out.truncate(PERF_BUFFER);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_plain_and_changes() {
        let l = FieldList::parse("comm,tid,ip,sym").unwrap();
        let FieldList::Set(s) = l else {
            panic!("{l:?}")
        };
        assert_eq!(s.names(), ["comm", "tid", "ip", "sym"]);
        let l = FieldList::parse("+addr,-dso").unwrap();
        let FieldList::Change { add, remove } = l else {
            panic!("{l:?}")
        };
        assert_eq!((add.names(), remove.names()), (vec!["addr"], vec!["dso"]));
        // The last word wins for a field given twice.
        let FieldList::Change { add, remove } = FieldList::parse("+cpu,-cpu").unwrap() else {
            panic!()
        };
        assert!(!add.has(Field::Cpu) && remove.has(Field::Cpu));
    }

    #[test]
    fn test_parse_errors_name_the_problem() {
        let e = FieldList::parse("comm,bogus").unwrap_err().to_string();
        assert!(
            e.contains("unknown field `bogus`") && e.contains("comm, tid, pid"),
            "{e}"
        );
        let e = FieldList::parse("comm,srcline").unwrap_err().to_string();
        assert!(
            e.contains("perf script's, but culprit does not print it"),
            "{e}"
        );
        let e = FieldList::parse("+comm,tid").unwrap_err().to_string();
        assert!(e.contains("cannot mix"), "{e}");
        let e = FieldList::parse("tid,-comm").unwrap_err().to_string();
        assert!(e.contains("cannot mix"), "{e}");
        let e = FieldList::parse("sw:comm").unwrap_err().to_string();
        assert!(e.contains("per-event-type"), "{e}");
        assert_eq!(FieldList::parse(" , "), Err(FieldError::Empty));
    }
}
