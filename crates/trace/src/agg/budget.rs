//! The memory budget of a program's aggregations and the sizes `--agg-memory` takes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use culprit_analysis::offenders::Config as OffConfig;
use culprit_decode::model::Location;

use super::{Acc, Func, Key, OffState, OffenderName};

/// The byte budget shared by all of a program's aggregations: every entry inserted charges
/// its estimated size (see [`entry_bytes`]), and a new key that does not fit is dropped.
/// Entries may use 7/8 of the budget; the rest is kept for remembering distinct dropped
/// keys, so that the count of dropped keys stays exact for a while past the limit.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    limit: usize,
    used: Arc<AtomicUsize>,
}

/// Estimated bytes to remember one distinct dropped key (a hash in a set, with the
/// table's growth slack).
const DROPPED_KEY_BYTES: usize = 2 * (std::mem::size_of::<u64>() + 1);

impl MemoryBudget {
    /// A budget of `limit` bytes, none used.
    pub fn new(limit: usize) -> MemoryBudget {
        MemoryBudget {
            limit,
            used: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes accounted so far (entries and remembered dropped keys).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Charges `bytes` if the total stays within `cap`; whether it did.
    fn charge_within(&self, bytes: usize, cap: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                u.checked_add(bytes).filter(|&t| t <= cap)
            })
            .is_ok()
    }

    /// Charges an entry of `bytes`, within the entries' share of the budget.
    pub(super) fn charge_entry(&self, bytes: usize) -> bool {
        self.charge_within(bytes, self.limit - self.limit / 8)
    }

    /// Charges one remembered dropped key, within the whole budget.
    pub(super) fn charge_dropped_key(&self) -> bool {
        self.charge_within(DROPPED_KEY_BYTES, self.limit)
    }

    /// Gives back `bytes` (entries removed by `trunc`/`clear`).
    pub(super) fn release(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }
}

impl Default for MemoryBudget {
    /// An unlimited budget.
    fn default() -> MemoryBudget {
        MemoryBudget::new(usize::MAX)
    }
}

/// `bytes` as `--agg-memory` takes it: in the largest binary unit that divides it (`512M`,
/// `1536K`, `100`).
pub fn format_size(bytes: usize) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Parses a size as `--agg-memory` takes it: bytes, or a number with a `K`, `M` or `G`
/// suffix (binary units; `KiB`, `MB`… also accepted).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let bad = || format!("invalid size `{text}`: expected bytes or a number with K, M or G");
    let n: usize = num.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(bad()),
    };
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("size `{text}` is too large"))
}

/// Estimated bytes of one entry of an aggregation of `func`: the key and accumulator in the
/// hash table (tripled: a table grows by doubling at 7/8 full, so up to 9/16 of its slots
/// are empty, and the smaller tables it grew from are left to the allocator), plus
/// what the accumulator owns on the heap (histogram buckets; the offenders detector's table
/// and the names of what it confirmed).
pub fn entry_bytes(func: Func) -> usize {
    use std::mem::size_of;
    let slot = 3 * (size_of::<Key>() + size_of::<Acc>() + 1);
    let buckets = func.buckets() * size_of::<i64>();
    let offenders = match func {
        Func::Offenders { .. } => {
            let capacity = OffConfig::default().capacity.max(1);
            size_of::<OffState>()
                + capacity
                    * (size_of::<culprit_analysis::offenders::Offender>()
                        + size_of::<(Location, OffenderName)>())
        }
        _ => 0,
    };
    slot + buckets + offenders
}
