//! Aggregations: keyed accumulators with a key limit that is never silent, and DTrace's
//! output formats (sorted by value, quantize histograms).

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use culprit_analysis::offenders::{Config as OffConfig, Detector, Observation, Step, Unit};
use culprit_decode::model::Location;

use crate::format::{self, Piece};
use crate::{Interner, Ty};

mod budget;
mod json;
mod render;

pub use budget::{entry_bytes, format_size, parse_size, MemoryBudget};
pub use json::*;
pub use render::print_many;

/// Most keys an aggregation may have (the checker enforces it).
pub const MAX_AGG_KEYS: usize = 8;

/// An aggregation key held inline: no allocation per key and no pointer to follow when
/// comparing; hashed and compared over its used slots only, without `memcmp`/`memset`
/// calls (they dominated the profile of `@[sym] = count()`).
#[derive(Debug, Clone, Copy)]
pub struct Key {
    len: u8,
    k: [i64; MAX_AGG_KEYS],
}

impl Key {
    /// The key of `keys` (at most 8; extra ones are ignored).
    #[inline]
    pub fn new(keys: &[i64]) -> Key {
        Key {
            len: keys.len().min(MAX_AGG_KEYS) as u8,
            k: std::array::from_fn(|i| keys.get(i).copied().unwrap_or(0)),
        }
    }

    /// The key's values.
    #[inline]
    pub fn as_slice(&self) -> &[i64] {
        &self.k[..usize::from(self.len).min(MAX_AGG_KEYS)]
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, o: &Key) -> bool {
        // One key (`@[sym]`, the common form) compares one slot.
        if self.len == 1 {
            return o.len == 1 && self.k[0] == o.k[0];
        }
        // Branch-free over the used slots (a short loop LLVM does not turn into `memcmp`).
        self.len == o.len
            && self
                .as_slice()
                .iter()
                .zip(o.as_slice())
                .fold(0, |d, (a, b)| d | (a ^ b))
                == 0
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        if self.len == 1 {
            h.write_i64(self.k[0]);
            return;
        }
        for &v in self.as_slice() {
            h.write_i64(v);
        }
    }
}

/// Names of addresses symbolized so far (address → interned `module`symbol+0xoff`), for `%a`.
pub type AddrNames = FxHashMap<u64, u32>;

/// Aggregating functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// count()
    Count,
    /// sum(x)
    Sum,
    /// avg(x)
    Avg,
    /// min(x)
    Min,
    /// max(x)
    Max,
    /// stddev(x)
    Stddev,
    /// quantize(x): power-of-two buckets.
    Quantize,
    /// lquantize(x, lo, hi, step): linear buckets.
    Lquantize {
        /// Lower bound.
        lo: i64,
        /// Upper bound.
        hi: i64,
        /// Bucket width.
        step: i64,
    },
    /// offenders(addr[, t1, t2]): the paired-sampling worst-offender detector
    /// (culprit_analysis::offenders), thresholds in samples.
    Offenders {
        /// First counter's terminal value.
        t1: u64,
        /// Second counter's terminal value.
        t2: u64,
    },
}

impl Func {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            Func::Count => "count",
            Func::Sum => "sum",
            Func::Avg => "avg",
            Func::Min => "min",
            Func::Max => "max",
            Func::Stddev => "stddev",
            Func::Quantize => "quantize",
            Func::Lquantize { .. } => "lquantize",
            Func::Offenders { .. } => "offenders",
        }
    }

    fn buckets(self) -> usize {
        match self {
            Func::Quantize => 127,
            // Checked at compile time: (hi - lo) / step is small.
            Func::Lquantize { lo, hi, step } => {
                ((i128::from(hi) - i128::from(lo)) / i128::from(step)) as usize + 2
            }
            _ => 0,
        }
    }
}

/// One key's accumulator.
#[derive(Debug, Clone, Default)]
pub struct Acc {
    /// count, min or max.
    pub a: i64,
    /// The sum for sum, avg and stddev: 128 bits, so that no realistic run wraps (2^64
    /// values of i64::MAX). Printed saturated to 64 bits, with a note.
    pub sum: i128,
    /// The count for avg/stddev.
    pub n: i64,
    /// Sum of squares for stddev (saturating).
    pub sq: i128,
    /// Histogram buckets (quantize, lquantize).
    pub buckets: Option<Box<[i64]>>,
    /// The detector (offenders).
    pub det: Option<Box<OffState>>,
}

impl Acc {
    /// Adds value `v` as aggregating function `func` does.
    #[inline(always)]
    fn add(&mut self, func: Func, v: i64) {
        match func {
            Func::Offenders { .. } => {}
            Func::Count => self.a += 1,
            Func::Sum => self.sum += i128::from(v),
            Func::Avg => {
                self.sum += i128::from(v);
                self.n += 1;
            }
            Func::Min => self.a = self.a.min(v),
            Func::Max => self.a = self.a.max(v),
            Func::Stddev => {
                self.sum += i128::from(v);
                self.n += 1;
                self.sq = self.sq.saturating_add(i128::from(v) * i128::from(v));
            }
            Func::Quantize => {
                if let Some(b) = self.buckets.as_mut() {
                    b[qbucket(v)] += 1;
                }
            }
            Func::Lquantize { lo, hi, step } => {
                if let Some(b) = self.buckets.as_mut() {
                    let i = if v < lo {
                        0
                    } else if v >= hi {
                        b.len() - 1
                    } else {
                        ((i128::from(v) - i128::from(lo)) / i128::from(step)) as usize + 1
                    };
                    b[i] += 1;
                }
            }
        }
    }
}

/// One key's offender detector and the names of what it confirmed.
#[derive(Debug, Clone)]
pub struct OffState {
    /// The detector (fixed-size table).
    pub det: Detector,
    /// Names of confirmed locations, pruned to the table's entries.
    pub names: Vec<(Location, OffenderName)>,
}

impl OffState {
    fn new(t1: u64, t2: u64) -> OffState {
        OffState {
            det: Detector::new(OffConfig {
                t1,
                t2,
                unit: Unit::Samples,
                ..OffConfig::default()
            }),
            names: Vec::new(),
        }
    }

    /// The name recorded for a location.
    pub fn name(&self, loc: &Location) -> Option<OffenderName> {
        self.names.iter().find(|x| x.0 == *loc).map(|x| x.1)
    }
}

/// How a confirmed offender is shown: `offenders(ip)` as `report --offenders` shows it (the
/// ELF address and the DSO), with its `%a` name; another argument as its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffenderName {
    /// `module`symbol+0xoff` (interned), or the value in hex.
    pub symbol: u32,
    /// The DSO's short name (interned); `None` for an argument other than `ip`.
    pub dso: Option<u32>,
    /// The ELF address (objdump's), or the value.
    pub address: u64,
}

/// Index of `v`'s quantize bucket: 63 is zero, 64+k holds [2^k, 2^(k+1)), 62-k the negatives.
fn qbucket(v: i64) -> usize {
    match v.cmp(&0) {
        std::cmp::Ordering::Equal => 63,
        std::cmp::Ordering::Greater => 64 + (63 - v.leading_zeros() as usize),
        std::cmp::Ordering::Less => {
            let k = 63 - v.unsigned_abs().leading_zeros() as usize;
            62usize.saturating_sub(k)
        }
    }
}

/// The lower bound of quantize bucket `i`.
fn qvalue(i: usize) -> i64 {
    match i.cmp(&63) {
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1i64 << (i - 64),
        std::cmp::Ordering::Less => {
            let k = 62 - i;
            if k >= 63 {
                i64::MIN
            } else {
                -(1i64 << k)
            }
        }
    }
}

/// One aggregation.
#[derive(Debug)]
pub struct Agg {
    /// Name without `@` (`""` for the anonymous one).
    pub name: String,
    /// Its function.
    pub func: Func,
    /// Types of its keys.
    pub key_types: Vec<Ty>,
    /// Entries.
    pub map: FxHashMap<Key, Acc>,
    /// Key limit.
    pub max_keys: usize,
    /// Samples whose key was new when the limit was reached.
    pub dropped_samples: u64,
    /// Distinct dropped keys (by hash; capped, see `dropped_keys_capped`).
    pub dropped_keys: FxHashSet<u64>,
    /// More distinct keys were dropped than `dropped_keys` holds.
    pub dropped_keys_capped: bool,
    /// Keys were dropped because the program's memory budget was reached (else the key
    /// limit dropped them).
    pub budget_reached: bool,
    /// The memory budget shared with the program's other aggregations.
    pub budget: MemoryBudget,
    /// Estimated bytes of one entry ([`entry_bytes`]).
    pub entry_bytes: usize,
    /// Printed by printa (then not printed again at exit).
    pub printed: bool,
    /// normalize() factor.
    pub norm: i64,
}

/// A 128-bit sum as the i64 DTrace prints: saturated at the ends of the range.
fn saturate(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Cap on distinct dropped keys remembered, so that counting them stays bounded too.
const DROPPED_CAP: usize = 1 << 20;

impl Agg {
    /// A new aggregation, with no memory budget (see [`Agg::with_budget`]).
    pub fn new(name: String, func: Func, key_types: Vec<Ty>, max_keys: usize) -> Agg {
        Agg::with_budget(name, func, key_types, max_keys, MemoryBudget::default())
    }

    /// A new aggregation charging its entries to `budget`.
    pub fn with_budget(
        name: String,
        func: Func,
        key_types: Vec<Ty>,
        max_keys: usize,
        budget: MemoryBudget,
    ) -> Agg {
        Agg {
            name,
            func,
            key_types,
            map: FxHashMap::default(),
            max_keys,
            dropped_samples: 0,
            dropped_keys: FxHashSet::default(),
            dropped_keys_capped: false,
            budget_reached: false,
            budget,
            entry_bytes: entry_bytes(func),
            printed: false,
            norm: 1,
        }
    }

    /// Adds value `v` under `keys`.
    #[inline(always)]
    pub fn update(&mut self, keys: &[i64], v: i64) {
        // Keyless aggregations hold at most one entry: reach it without hashing.
        let found = if keys.is_empty() {
            self.map.values_mut().next()
        } else {
            self.map.get_mut(&Key::new(keys))
        };
        match found {
            Some(acc) => acc.add(self.func, v),
            None => self.insert_and_update(keys, v),
        }
    }

    /// [`Agg::update`] of a key not in the table yet (out of line: rare after warm-up).
    #[inline(never)]
    fn insert_and_update(&mut self, keys: &[i64], v: i64) {
        let over_budget =
            self.map.len() < self.max_keys && !self.budget.charge_entry(self.entry_bytes);
        if over_budget || self.map.len() >= self.max_keys {
            self.budget_reached |= over_budget;
            self.dropped_samples += 1;
            use std::hash::BuildHasher;
            let h = FxBuildHasher.hash_one(keys);
            if self.dropped_keys.contains(&h) {
                return;
            }
            if self.dropped_keys.len() < DROPPED_CAP && self.budget.charge_dropped_key() {
                self.dropped_keys.insert(h);
            } else {
                self.dropped_keys_capped = true;
            }
            return;
        }
        let nb = self.func.buckets();
        let init = Acc {
            a: match self.func {
                Func::Min => i64::MAX,
                Func::Max => i64::MIN,
                _ => 0,
            },
            buckets: (nb > 0).then(|| vec![0i64; nb].into_boxed_slice()),
            det: match self.func {
                Func::Offenders { t1, t2 } => Some(Box::new(OffState::new(t1, t2))),
                _ => None,
            },
            ..Acc::default()
        };
        let func = self.func;
        self.map.entry(Key::new(keys)).or_insert(init).add(func, v);
    }

    /// Feeds an observation to the offenders detector under `keys` (the aggregation must be
    /// `offenders`). Returns the confirmed location when this observation confirmed one and
    /// it has no name yet: the caller names it with [`Agg::name_offender`].
    pub fn observe(&mut self, keys: &[i64], o: &Observation) -> Option<(Location, u64, i32)> {
        let key = Key::new(keys);
        if !self.map.contains_key(&key) {
            // Creates the entry (or counts the drop) through the common path.
            self.update(keys, 0);
        }
        let acc = self.map.get_mut(&key)?;
        let st = acc.det.as_mut()?;
        match st.det.observe(o) {
            Step::Confirmed(i) => {
                let x = st.det.offenders().get(i)?;
                let loc = x.location;
                st.name(&loc).is_none().then_some((loc, x.ip, x.pid))
            }
            _ => None,
        }
    }

    /// Records the name of a confirmed location (kept only while it is in the table).
    pub fn name_offender(&mut self, keys: &[i64], loc: Location, name: OffenderName) {
        let Some(st) = self
            .map
            .get_mut(&Key::new(keys))
            .and_then(|a| a.det.as_mut())
        else {
            return;
        };
        let live: Vec<Location> = st.det.offenders().iter().map(|x| x.location).collect();
        st.names.retain(|x| live.contains(&x.0));
        st.names.push((loc, name));
    }

    /// The value DTrace prints and sorts by (histograms: their total count).
    pub fn value(&self, acc: &Acc) -> i64 {
        let v = match self.func {
            Func::Offenders { .. } => acc.det.as_ref().map_or(0, |d| d.det.confirmations() as i64),
            Func::Count | Func::Min | Func::Max => acc.a,
            Func::Sum => saturate(acc.sum),
            Func::Avg => {
                if acc.n == 0 {
                    0
                } else {
                    // The mean of i64 values is an i64.
                    saturate(acc.sum / i128::from(acc.n))
                }
            }
            Func::Stddev => {
                if acc.n == 0 {
                    0
                } else {
                    let n = acc.n as f64;
                    let mean = acc.sum as f64 / n;
                    let var = (acc.sq as f64 / n - mean * mean).max(0.0);
                    var.sqrt() as i64
                }
            }
            Func::Quantize | Func::Lquantize { .. } => {
                acc.buckets.as_ref().map_or(0, |b| b.iter().sum())
            }
        };
        if self.norm > 1
            && !matches!(
                self.func,
                Func::Quantize | Func::Lquantize { .. } | Func::Offenders { .. }
            )
        {
            v / self.norm
        } else {
            v
        }
    }

    /// Entries sorted as DTrace prints them: by value ascending, then by key.
    pub fn sorted(&self, strings: &Interner) -> Vec<(&[i64], &Acc)> {
        let mut v: Vec<(&[i64], &Acc, i64)> = self
            .map
            .iter()
            .map(|(k, a)| (k.as_slice(), a, self.value(a)))
            .collect();
        v.sort_by(|x, y| x.2.cmp(&y.2).then_with(|| self.cmp_keys(x.0, y.0, strings)));
        v.into_iter().map(|(k, a, _)| (k, a)).collect()
    }

    fn cmp_keys(&self, a: &[i64], b: &[i64], strings: &Interner) -> std::cmp::Ordering {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let o = match self.key_types.get(i) {
                Some(Ty::Str) => strings.get(*x as u32).cmp(strings.get(*y as u32)),
                Some(Ty::Addr) => (*x as u64).cmp(&(*y as u64)),
                _ => x.cmp(y),
            };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    }

    /// `trunc(@a, n)`: keeps the n largest (n < 0: the |n| smallest); no n clears all keys.
    pub fn trunc(&mut self, n: Option<i64>, strings: &Interner) {
        let Some(n) = n else {
            self.budget.release(self.map.len() * self.entry_bytes);
            self.map.clear();
            return;
        };
        let sorted: Vec<Key> = self
            .sorted(strings)
            .into_iter()
            .map(|(k, _)| Key::new(k))
            .collect();
        let keep = n.unsigned_abs().min(sorted.len() as u64) as usize;
        let drop: Vec<&Key> = if n >= 0 {
            sorted[..sorted.len() - keep].iter().collect()
        } else {
            sorted[keep..].iter().collect()
        };
        for k in drop {
            if self.map.remove(k).is_some() {
                self.budget.release(self.entry_bytes);
            }
        }
    }

    /// `clear(@a)`: zeroes the values, keeps the keys.
    pub fn clear(&mut self) {
        let func = self.func;
        for acc in self.map.values_mut() {
            acc.a = match func {
                Func::Min => i64::MAX,
                Func::Max => i64::MIN,
                _ => 0,
            };
            acc.n = 0;
            acc.sum = 0;
            acc.sq = 0;
            if let Some(b) = acc.buckets.as_mut() {
                b.iter_mut().for_each(|x| *x = 0);
            }
            if let (Some(d), Func::Offenders { t1, t2 }) = (acc.det.as_mut(), func) {
                **d = OffState::new(t1, t2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_buckets() {
        assert_eq!(qbucket(0), 63);
        assert_eq!(qbucket(1), 64);
        assert_eq!(qbucket(2), 65);
        assert_eq!(qbucket(3), 65);
        assert_eq!(qbucket(4), 66);
        assert_eq!(qbucket(-1), 62);
        assert_eq!(qbucket(i64::MAX), 126);
        assert_eq!(qbucket(i64::MIN), 0);
        for v in [1i64, 5, 1000, -7, 0, 1 << 40] {
            let i = qbucket(v);
            // Positive buckets are labelled by their lower bound, negative ones by the bound
            // nearest zero (DTrace's layout).
            if v >= 0 {
                assert!(qvalue(i) <= v && v < qvalue(i + 1).max(v + 1), "{v}");
            } else {
                assert!(qvalue(i) >= v && v > qvalue(i - 1), "{v}");
            }
        }
    }

    #[test]
    fn key_limit_counts_drops() {
        let s = Interner::default();
        let mut a = Agg::new("a".into(), Func::Count, vec![Ty::Int], 2);
        for k in [1, 2, 3, 3, 4, 1] {
            a.update(&[k], 0);
        }
        assert_eq!(a.map.len(), 2);
        assert_eq!(a.dropped_samples, 3);
        assert_eq!(a.dropped_keys.len(), 2);
        assert!(a
            .dropped_note()
            .unwrap()
            .contains("2 more keys and 3 samples"));
        let sorted = a.sorted(&s);
        assert_eq!(sorted[1].0, &[1]);
        a.trunc(Some(1), &s);
        assert_eq!(a.map.len(), 1);
        assert!(a.map.contains_key(&Key::new(&[1])));
    }

    #[test]
    fn histogram_layout() {
        let mut a = Agg::new("q".into(), Func::Quantize, vec![], 10);
        for v in [1, 1, 1, 2, 3] {
            a.update(&[], v);
        }
        let mut out = String::new();
        a.print_default(&mut out, &Interner::default());
        let expected = "\n           value  ------------- Distribution ------------- count\n               0 |                                         0\n               1 |@@@@@@@@@@@@@@@@@@@@@@@@                 3\n               2 |@@@@@@@@@@@@@@@@                         2\n               4 |                                         0\n\n";
        assert_eq!(out, expected);
    }

    #[test]
    fn lquantize_extreme_bounds_do_not_overflow() {
        let f = Func::Lquantize {
            lo: -i64::MAX,
            hi: i64::MAX,
            step: i64::MAX,
        };
        let mut a = Agg::new("l".into(), f, vec![], 10);
        for v in [i64::MIN, -1, 0, i64::MAX] {
            a.update(&[], v);
        }
        let mut out = String::new();
        a.print_default(&mut out, &Interner::default());
        assert!(out.contains(">= 9223372036854775807"), "{out}");
        let _ = a.to_json(&Interner::default());
    }

    #[test]
    fn lquantize_and_stats() {
        let mut a = Agg::new(
            "l".into(),
            Func::Lquantize {
                lo: 0,
                hi: 10,
                step: 5,
            },
            vec![],
            10,
        );
        for v in [-1, 0, 4, 5, 10, 99] {
            a.update(&[], v);
        }
        let b = a.map.values().next().unwrap().buckets.clone().unwrap();
        assert_eq!(&*b, &[1, 2, 1, 2]);
        let mut s = Agg::new("s".into(), Func::Stddev, vec![], 10);
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.update(&[], v);
        }
        assert_eq!(s.value(s.map.values().next().unwrap()), 2);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes_and_print_back() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        assert_eq!(format_size(512 << 20), "512M");
        assert_eq!(format_size(1536 << 10), "1536K");
        assert_eq!(format_size(1000), "1000");
    }
}
