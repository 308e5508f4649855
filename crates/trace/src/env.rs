//! The machine compiled programs run on: the per-firing context ([`Env`]) every compiled
//! closure reads, the run-time state it updates ([`Rt`]: variables, aggregations, interned
//! strings, symbol caches) and the symbol source behind `sym`, `mod`, `srcline` and `%a`.

use rustc_hash::FxHashMap;

use culprit_decode::model::{Location, Profile, Sample};

use crate::agg::{print_many, AddrNames, Agg};
use crate::format::Piece;
use crate::Interner;

/// What to ask a [`SymbolSource`] about a sample's IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum What {
    /// Function name (`sym`).
    Sym,
    /// Module (DSO short name, `mod`).
    Mod,
    /// `file:line` (`srcline`).
    Srcline,
    /// `module`symbol+0xoffset` (`%a`), DTrace's address form.
    Addr,
}

/// Names of code locations for `sym`, `mod` and `srcline`. Called once per distinct location
/// and question: the runner caches the answers.
pub trait SymbolSource {
    /// The name of `sample`'s IP.
    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String;

    /// The address of `sample`'s location as its ELF file states it (objdump's), when the
    /// file can be read.
    fn elf_address(&mut self, _profile: &Profile, _sample: &Sample) -> Option<u64> {
        None
    }
}

/// Names from the profile alone: the DSO for `mod`, the hex address for `sym` and `srcline`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String {
        match what {
            What::Mod => profile
                .dso(&sample.location)
                .map_or_else(|| "[unknown]".to_string(), |d| d.short_name.clone()),
            What::Addr => match profile.dso(&sample.location) {
                Some(d) => format!("{}`0x{:x}", d.short_name, sample.location.file_offset),
                None => format!("0x{:x}", sample.ip),
            },
            _ => format!("0x{:x}", sample.ip),
        }
    }
}

impl SymbolSource for culprit_symbols::Symbolizer {
    fn elf_address(&mut self, profile: &Profile, sample: &Sample) -> Option<u64> {
        self.resolve(
            profile,
            culprit_symbols::Query::of(sample.location, sample.pid),
        )
        .svma
    }

    fn lookup(&mut self, profile: &Profile, sample: &Sample, what: What) -> String {
        match what {
            What::Mod => NoSymbols.lookup(profile, sample, what),
            What::Addr => {
                let r = self.resolve(
                    profile,
                    culprit_symbols::Query::of(sample.location, sample.pid),
                );
                let sym = r.symbol.and_then(|id| self.symbol(id));
                let module = profile.dso(&sample.location).map(|d| d.short_name.as_str());
                match (module, sym, r.svma) {
                    (Some(m), Some(s), Some(a)) if a > s.start => {
                        format!("{m}`{}+0x{:x}", s.name, a - s.start)
                    }
                    (Some(m), Some(s), _) => format!("{m}`{}", s.name),
                    _ => NoSymbols.lookup(profile, sample, what),
                }
            }
            What::Sym => {
                let r = self.resolve(
                    profile,
                    culprit_symbols::Query::of(sample.location, sample.pid),
                );
                r.symbol
                    .and_then(|id| self.symbol(id))
                    .map_or_else(|| "[unknown]".to_string(), |s| s.name.to_string())
            }
            What::Srcline => {
                let frames = self.source(
                    profile,
                    sample.location.dso,
                    sample.location.file_offset,
                    false,
                );
                match frames.first() {
                    Some(f) => format!(
                        "{}:{}",
                        f.file.as_deref().unwrap_or("??"),
                        f.line.map_or_else(|| "?".to_string(), |l| l.to_string())
                    ),
                    None => "??:0".to_string(),
                }
            }
        }
    }
}

/// One slot of the direct-mapped symbol cache (`what` = u8::MAX: empty).
#[derive(Clone, Copy)]
struct FrontEntry {
    offset: u64,
    dso: u32,
    pid: i32,
    what: u8,
    id: u32,
}

const FRONT_BITS: u32 = 12;

const EMPTY_FRONT: FrontEntry = FrontEntry {
    offset: 0,
    dso: 0,
    pid: 0,
    what: u8::MAX,
    id: 0,
};

/// Run-time state shared by the compiled closures.
pub(crate) struct Rt {
    pub globals: Vec<i64>,
    pub this: Vec<i64>,
    pub selfs: FxHashMap<(i32, u32), i64>,
    pub self_limit: usize,
    pub self_dropped: u64,
    pub strings: Interner,
    /// Profile string id → interned id + 1 (0: not yet).
    comm_ids: Vec<u32>,
    /// Event index → interned id + 1.
    event_ids: Vec<u32>,
    loc_cache: FxHashMap<(What, Option<u32>, u64, i32), u32>,
    /// Direct-mapped front of `loc_cache` keyed by the sample's own (what, dso, offset, pid):
    /// one compare instead of hashing and probing for the locations seen over and over.
    loc_front: Box<[FrontEntry]>,
    /// Addresses named by `%a` (for printa's `%a` on keys), bounded by the key limit.
    pub addr_names: AddrNames,
    pub aggs: Vec<Agg>,
    pub out: String,
    pub exit: Option<i64>,
}

impl Rt {
    /// Fresh state: `globals` global and `this` clause-local slots, `strings` interned at
    /// compile time, the aggregations, and `key_limit` thread-local variables and `%a`
    /// names at most.
    pub fn new(
        globals: usize,
        this: usize,
        key_limit: usize,
        strings: Interner,
        aggs: Vec<Agg>,
    ) -> Rt {
        Rt {
            globals: vec![0; globals],
            this: vec![0; this],
            selfs: FxHashMap::default(),
            self_limit: key_limit,
            self_dropped: 0,
            strings,
            comm_ids: Vec::new(),
            event_ids: Vec::new(),
            loc_cache: FxHashMap::default(),
            loc_front: vec![EMPTY_FRONT; 1 << FRONT_BITS].into_boxed_slice(),
            addr_names: AddrNames::default(),
            aggs,
            out: String::new(),
            exit: None,
        }
    }

    pub fn set_self(&mut self, key: (i32, u32), v: i64) {
        if v == 0 {
            // DTrace frees a thread-local variable assigned zero; so do we (bounded memory).
            self.selfs.remove(&key);
        } else if self.selfs.len() < self.self_limit || self.selfs.contains_key(&key) {
            self.selfs.insert(key, v);
        } else {
            self.self_dropped += 1;
        }
    }

    pub fn printa(&mut self, idxs: &[usize], pieces: Option<&[Piece]>) {
        for &i in idxs {
            if let Some(a) = self.aggs.get_mut(i) {
                a.printed = true;
            }
        }
        let mut out = std::mem::take(&mut self.out);
        match idxs {
            [idx] => {
                if let Some(agg) = self.aggs.get(*idx) {
                    match pieces {
                        Some(p) => agg.print_format(&mut out, p, &self.strings, &self.addr_names),
                        None => agg.print_default(&mut out, &self.strings),
                    }
                }
            }
            _ => {
                let aggs: Vec<&Agg> = idxs.iter().filter_map(|&i| self.aggs.get(i)).collect();
                print_many(&mut out, &aggs, pieces, &self.strings, &self.addr_names);
            }
        }
        self.out = out;
    }
}

/// The per-firing context the closures read.
pub(crate) struct Env<'a> {
    pub p: &'a Profile,
    pub s: &'a Sample,
    pub rt: &'a mut Rt,
    pub syms: &'a mut dyn SymbolSource,
    pub fault: Option<&'static str>,
}

impl Env<'_> {
    pub fn execname(&mut self) -> i64 {
        let id = self.s.comm as usize;
        if let Some(&v) = self.rt.comm_ids.get(id) {
            if v != 0 {
                return i64::from(v - 1);
            }
        }
        let v = self.rt.strings.intern(self.p.str(self.s.comm));
        if id < self.p.strings.len() {
            if self.rt.comm_ids.len() <= id {
                self.rt.comm_ids.resize(id + 1, 0);
            }
            self.rt.comm_ids[id] = v + 1;
        }
        i64::from(v)
    }

    pub fn event_name(&mut self) -> i64 {
        let id = self.s.event as usize;
        if let Some(&v) = self.rt.event_ids.get(id) {
            if v != 0 {
                return i64::from(v - 1);
            }
        }
        let name = self.p.events.get(id).map_or("", |e| e.name.as_str());
        let v = self.rt.strings.intern(name);
        if id < self.p.events.len() {
            if self.rt.event_ids.len() <= id {
                self.rt.event_ids.resize(id + 1, 0);
            }
            self.rt.event_ids[id] = v + 1;
        }
        i64::from(v)
    }

    pub fn symbol(&mut self, what: What) -> i64 {
        let loc: Location = self.s.location;
        let dso = loc.dso.map_or(u32::MAX, |d| d);
        let w = what as u8;
        let h = (loc.file_offset ^ (u64::from(dso) << 40) ^ (u64::from(w) << 56))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - FRONT_BITS);
        let slot = &self.rt.loc_front[h as usize];
        if slot.what == w
            && slot.offset == loc.file_offset
            && slot.dso == dso
            && slot.pid == self.s.pid
        {
            return i64::from(slot.id);
        }
        let id = self.symbol_slow(what);
        self.rt.loc_front[h as usize] = FrontEntry {
            offset: loc.file_offset,
            dso,
            pid: self.s.pid,
            what: w,
            id,
        };
        i64::from(id)
    }

    fn symbol_slow(&mut self, what: What) -> u32 {
        let loc: Location = self.s.location;
        // Per-process objects (JIT, anonymous) and unmapped addresses are per pid.
        let pid = match self.p.dso(&loc) {
            Some(d) => d.pid.unwrap_or(-1),
            None => self.s.pid,
        };
        let key = (what, loc.dso, loc.file_offset, pid);
        if let Some(&v) = self.rt.loc_cache.get(&key) {
            return v;
        }
        let name = self.syms.lookup(self.p, self.s, what);
        let v = self.rt.strings.intern(&name);
        self.rt.loc_cache.insert(key, v);
        v
    }

    /// The name of another location than the sample's (a confirmed offender), cached.
    pub fn symbol_at(&mut self, what: What, loc: Location, ip: u64, pid: i32) -> u32 {
        let key_pid = match self.p.dso(&loc) {
            Some(d) => d.pid.unwrap_or(-1),
            None => pid,
        };
        let key = (what, loc.dso, loc.file_offset, key_pid);
        if let Some(&v) = self.rt.loc_cache.get(&key) {
            return v;
        }
        let mut s = self.s.clone();
        s.location = loc;
        s.ip = ip;
        s.pid = pid;
        let name = self.syms.lookup(self.p, &s, what);
        let v = self.rt.strings.intern(&name);
        self.rt.loc_cache.insert(key, v);
        v
    }

    /// How a confirmed `offenders(ip)` location is shown: its `%a` name, its DSO and its ELF
    /// address (the file offset when the ELF file cannot be read), as `report --offenders`.
    pub fn offender_name(&mut self, loc: Location, ip: u64, pid: i32) -> crate::agg::OffenderName {
        let symbol = self.symbol_at(What::Addr, loc, ip, pid);
        let dso = self.symbol_at(What::Mod, loc, ip, pid);
        let mut s = self.s.clone();
        s.location = loc;
        s.ip = ip;
        s.pid = pid;
        let address = self.syms.elf_address(self.p, &s).unwrap_or(loc.file_offset);
        crate::agg::OffenderName {
            symbol,
            dso: Some(dso),
            address,
        }
    }

    /// `%a`: the sample's IP is symbolized (module`symbol+0xoff); other addresses only if
    /// they were named before (the profile does not keep the process maps to look them up).
    pub fn addr_name(&mut self, v: i64) -> Option<u32> {
        let a = v as u64;
        if self.s.event != u16::MAX && a == self.s.ip {
            let id = self.symbol(What::Addr) as u32;
            if self.rt.addr_names.len() < self.rt.self_limit {
                self.rt.addr_names.insert(a, id);
            }
            return Some(id);
        }
        self.rt.addr_names.get(&a).copied()
    }
}
