//! Aggregations in trace's JSON report.

use super::*;

impl Agg {
    /// The aggregation as JSON (see docs/trace.md and docs/schemas/trace.schema.json).
    pub fn to_json(&self, strings: &Interner) -> AggregationJson {
        let entries = self
            .sorted(strings)
            .into_iter()
            .map(|(keys, acc)| {
                let keys = keys
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| match self.key_types.get(i) {
                        Some(Ty::Str) => KeyJson::Text(strings.get(k as u32).to_string()),
                        Some(Ty::Addr) => KeyJson::Text(format!("0x{:x}", k as u64)),
                        _ => KeyJson::Int(k),
                    })
                    .collect();
                let mut e = EntryJson {
                    buckets: None,
                    keys,
                    offenders: None,
                    t1: None,
                    t2: None,
                    value: self.value(acc),
                };
                if let Some(st) = &acc.det {
                    let list = st
                        .det
                        .ranked()
                        .iter()
                        .map(|x| {
                            let name = st.name(&x.location);
                            OffenderJson {
                                address: format!("{:#x}", name.map_or(x.ip, |n| n.address)),
                                confirmations: x.confirmations,
                                count1: x.count1,
                                count2: x.count2,
                                dso: name
                                    .and_then(|n| n.dso)
                                    .map(|id| strings.get(id).to_string()),
                                first_time: x.first_time,
                                last_time: x.last_time,
                                pid: x.pid,
                                symbol: name.map(|n| strings.get(n.symbol).to_string()),
                            }
                        })
                        .collect();
                    e.offenders = Some(list);
                    e.t1 = Some(st.det.config().t1);
                    e.t2 = Some(st.det.config().t2);
                }
                if let Some(b) = &acc.buckets {
                    let buckets = b
                        .iter()
                        .enumerate()
                        .filter(|(_, &c)| c != 0)
                        .map(|(i, &c)| {
                            let lo = match self.func {
                                Func::Quantize => Some(KeyJson::Int(qvalue(i))),
                                Func::Lquantize { lo, step, .. } => Some(if i == 0 {
                                    KeyJson::Text(format!("< {lo}"))
                                } else {
                                    let at = i128::from(lo) + (i as i128 - 1) * i128::from(step);
                                    KeyJson::Int(at as f64 as i64)
                                }),
                                _ => None,
                            };
                            BucketJson {
                                count: c,
                                value: lo,
                            }
                        })
                        .collect();
                    e.buckets = Some(buckets);
                }
                e
            })
            .collect();
        AggregationJson {
            dropped_keys: self.dropped_keys.len(),
            dropped_samples: self.dropped_samples,
            entries,
            function: self.func.name(),
            key_types: self.key_types.iter().map(|t| t.name()).collect(),
            name: self.name.clone(),
        }
    }
}

// The JSON of an aggregation. Fields are in alphabetical order: the order of the documented
// format (docs/trace.md), which JSON objects had when they were built as maps.

/// One aggregation in trace's JSON report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AggregationJson {
    /// Keys dropped past the key limit.
    pub dropped_keys: usize,
    /// Samples not counted because their key was dropped.
    pub dropped_samples: u64,
    /// The entries, sorted as printed.
    pub entries: Vec<EntryJson>,
    /// The aggregating function (`count`, `sum`, `quantize`…).
    pub function: &'static str,
    /// The type of each key (`string`, `int`, `addr`…).
    pub key_types: Vec<&'static str>,
    /// `@name`.
    pub name: String,
}

/// A key (or a bucket's low value): text (strings, addresses as `0x…`) or an integer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum KeyJson {
    /// A string or address.
    Text(String),
    /// An integer.
    Int(i64),
}

/// One entry of an aggregation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntryJson {
    /// quantize/lquantize: the non-empty buckets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<BucketJson>>,
    /// The keys.
    pub keys: Vec<KeyJson>,
    /// offenders(): the confirmed offenders, ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offenders: Option<Vec<OffenderJson>>,
    /// offenders(): the first counter's terminal value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t1: Option<u64>,
    /// offenders(): the second counter's terminal value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t2: Option<u64>,
    /// The aggregated value.
    pub value: i64,
}

/// One histogram bucket.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BucketJson {
    /// Samples in the bucket.
    pub count: i64,
    /// The bucket's low value (`< lo` for lquantize's underflow).
    pub value: Option<KeyJson>,
}

/// One offender of an `offenders()` aggregation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OffenderJson {
    /// ELF address (as `report --offenders`).
    pub address: String,
    /// Confirmations by the paired-sampling detector.
    pub confirmations: u64,
    /// First counter's count.
    pub count1: u64,
    /// Second counter's count.
    pub count2: u64,
    /// Module.
    pub dso: Option<String>,
    /// Time of the first confirmation.
    pub first_time: u64,
    /// Time of the last confirmation.
    pub last_time: u64,
    /// Process.
    pub pid: i32,
    /// Function.
    pub symbol: Option<String>,
}
