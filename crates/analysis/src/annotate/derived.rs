//! Derived per-instruction columns of an annotation: ratios of its event columns where
//! the events measure related things (CPI from cycles and instructions, a miss event over
//! its accesses).

use super::*;

/// What a generic or named event measures, for derived columns.
#[derive(PartialEq)]
enum Base {
    Cycles,
    Instructions,
    Other,
}

/// What event `name` (of perf type and config) measures.
fn base_of(name: &str, attr_type: u32, config: u64) -> Base {
    let n = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    match (attr_type, config) {
        (0, 0) => return Base::Cycles,
        (0, 1) => return Base::Instructions,
        _ => {}
    }
    match n.as_str() {
        "cycles" | "cpu-cycles" | "ls_not_halted_cyc" | "cpu_clk_unhalted.thread" => Base::Cycles,
        "instructions" | "ex_ret_instr" | "inst_retired.any" => Base::Instructions,
        _ => Base::Other,
    }
}

/// The access event a miss event is a ratio of (`X-load-misses` → `X-loads`, …).
fn access_name_for(miss: &str) -> Vec<String> {
    let m = miss.split(':').next().unwrap_or(miss);
    match m {
        "cache-misses" => vec!["cache-references".into()],
        "branch-misses" => vec!["branch-instructions".into(), "branches".into()],
        _ => match m.strip_suffix("-misses") {
            Some(base) => vec![format!("{base}s")],
            None => Vec::new(),
        },
    }
}

/// `num * scale / den`, none for a zero denominator.
fn ratio(num: u64, den: u64, scale: f64) -> Option<f64> {
    (den > 0).then(|| num as f64 * scale / den as f64)
}

/// The derived columns the annotation's events allow, per instruction and for the whole
/// function, from the instructions' periods.
pub(super) fn derived_columns(
    profile: &Profile,
    cols: &[EventId],
    rows: &[AnnotatedInsn],
) -> Vec<Derived> {
    let info = |c: usize| &profile.events[usize::from(cols[c])];
    let find = |want: Base| {
        (0..cols.len()).find(|&c| {
            let e = info(c);
            base_of(&e.name, e.attr_type, e.config) == want
        })
    };
    let sum = |c: usize| -> u64 { rows.iter().map(|r| r.period[c]).sum() };
    let make = |name: String, formula: String, num: usize, den: usize, scale: f64| Derived {
        name,
        formula,
        function: ratio(sum(num), sum(den), scale),
        values: rows
            .iter()
            .map(|r| ratio(r.period[num], r.period[den], scale))
            .collect(),
    };
    let mut out = Vec::new();
    let cyc = find(Base::Cycles);
    let ins = find(Base::Instructions);
    if let (Some(cy), Some(i)) = (cyc, ins) {
        out.push(make(
            "CPI".into(),
            format!("{} / {} (periods)", info(cy).name, info(i).name),
            cy,
            i,
            1.0,
        ));
    }
    for c in 0..cols.len() {
        let e = info(c);
        if !matches!(
            skid::classify_event(e),
            EventClass::Memory | EventClass::Branch
        ) {
            continue;
        }
        let access = access_name_for(&e.name);
        if let Some(a) = (0..cols.len()).find(|&a| a != c && access.contains(&info(a).name)) {
            out.push(make(
                format!("{} ratio", e.name),
                format!("{} / {} (periods)", e.name, info(a).name),
                c,
                a,
                1.0,
            ));
        } else if let Some(i) = ins {
            out.push(make(
                format!("{} MPKI", e.name),
                format!("1000 * {} / {} (periods)", e.name, info(i).name),
                c,
                i,
                1000.0,
            ));
        }
    }
    out
}
