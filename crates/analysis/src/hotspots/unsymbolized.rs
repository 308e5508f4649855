//! The DSOs whose sampled addresses no symbol covers (stripped files, or files whose debug
//! copy was not found): their share, said once under the report with how to get names.

use serde::Serialize;

use super::*;

/// A DSO with samples at addresses no symbol covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnsymbolizedDso {
    /// perf's short name (`cc1`), as the rows show it.
    pub dso: String,
    /// The path it was recorded at.
    pub path: String,
    /// Per event of the report (its columns): self samples without a symbol.
    pub samples: Vec<u64>,
    /// Per event of the report: their summed period.
    pub period: Vec<u64>,
}

/// How to get names for unnamed code, said once under a report (docs/symbols.md).
pub const HOW_TO_NAME: &str = "to name them, install their debug symbols (Debian: the \
     -dbgsym/-dbg packages), or let culprit fetch them with debuginfod (set DEBUGINFOD_URLS), \
     or point --symfs/--debug-dir at unstripped copies";

/// Sums the self values of the rows that `is_unnamed` (with the DSO of the row) into one
/// entry per DSO, biggest first for event `sort_event`. `rows` gives each accumulated
/// row's DSO when its `sym` has no name (`None` otherwise: named, or not an ELF file whose
/// debug information could give names).
pub(super) fn collect(
    profile: &Profile,
    ncol: usize,
    nv: usize,
    values: &[u64],
    nrows: usize,
    unnamed_dso: &dyn Fn(u32) -> Option<DsoId>,
    sort_event: usize,
) -> Vec<UnsymbolizedDso> {
    let mut by_name: FxHashMap<String, usize> = FxHashMap::default();
    let mut out: Vec<UnsymbolizedDso> = Vec::new();
    for r in 0..nrows {
        let Some(d) = unnamed_dso(r as u32) else {
            continue;
        };
        let Some(dso) = profile.dsos.get(d as usize) else {
            continue;
        };
        if dso.kind != DsoKind::Elf {
            continue;
        }
        let base = r * ncol * nv;
        let Some(row) = values.get(base..base + ncol * nv) else {
            continue;
        };
        if (0..ncol).all(|c| row[c * nv + V_SAMPLES] == 0) {
            continue;
        }
        let i = *by_name.entry(dso.short_name.clone()).or_insert_with(|| {
            out.push(UnsymbolizedDso {
                dso: dso.short_name.clone(),
                path: dso.path.clone(),
                samples: vec![0; ncol],
                period: vec![0; ncol],
            });
            out.len() - 1
        });
        for c in 0..ncol {
            out[i].samples[c] += row[c * nv + V_SAMPLES];
            out[i].period[c] += row[c * nv + V_PERIOD];
        }
    }
    sort(&mut out, sort_event);
    out
}

/// Biggest first by `event`'s period, then by name.
pub(super) fn sort(list: &mut [UnsymbolizedDso], event: usize) {
    list.sort_by(|a, b| {
        let p = |u: &UnsymbolizedDso| u.period.get(event).copied().unwrap_or(0);
        p(b).cmp(&p(a)).then_with(|| a.dso.cmp(&b.dso))
    });
}

/// Adds `part`'s entries (whose events are `part_cols`: merged column of each) to `into`
/// (`ncol` merged columns), by DSO name.
pub(super) fn merge_into(
    into: &mut Vec<UnsymbolizedDso>,
    part: &[UnsymbolizedDso],
    part_cols: &[usize],
) {
    for u in part {
        let i = match into.iter().position(|x| x.dso == u.dso) {
            Some(i) => i,
            None => {
                into.push(UnsymbolizedDso {
                    dso: u.dso.clone(),
                    path: u.path.clone(),
                    samples: Vec::new(),
                    period: Vec::new(),
                });
                into.len() - 1
            }
        };
        for (pe, &c) in part_cols.iter().enumerate() {
            let x = &mut into[i];
            if x.samples.len() <= c {
                x.samples.resize(c + 1, 0);
                x.period.resize(c + 1, 0);
            }
            x.samples[c] += u.samples.get(pe).copied().unwrap_or(0);
            x.period[c] += u.period.get(pe).copied().unwrap_or(0);
        }
    }
}

/// The note under a report with unnamed code: which DSOs, their share of event `e`
/// (`total` its period), how their rows are shown, and how to get names. `None` when no
/// DSO has unnamed samples of `e`.
pub fn note(list: &[UnsymbolizedDso], e: usize, total: u64, per_address: bool) -> Option<String> {
    let shown: Vec<String> = list
        .iter()
        .filter(|u| u.samples.get(e).copied().unwrap_or(0) > 0)
        .map(|u| {
            let p = u.period.get(e).copied().unwrap_or(0);
            let pct = if total == 0 {
                0.0
            } else {
                p as f64 * 100.0 / total as f64
            };
            format!("{} {pct:.2}%", u.dso)
        })
        .collect();
    if shown.is_empty() {
        return None;
    }
    const LISTED: usize = 8;
    let mut names = shown
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if shown.len() > LISTED {
        names.push_str(&format!(" and {} more", shown.len() - LISTED));
    }
    let rows = if per_address {
        "one [unknown] row per address"
    } else {
        "one [unknown] row per DSO; --unknown address: one row per address, as perf"
    };
    Some(format!(
        "Samples without symbols in: {names} ({rows}); {HOW_TO_NAME}"
    ))
}
