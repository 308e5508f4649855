//! The rows of one folded input, as one perf.data report makes them, added to the merge.

use rustc_hash::FxHashMap;

use super::{
    event_json, event_names, FoldKey, Group, InputError, InputFold, InputPlace, Kept, TablesInput,
};
use crate::fleet::{FleetMerge, FleetOptions, InputSummary};
use crate::hotspots::{children_window, EventFacts, HotspotsMerge, KeyPart};
use crate::SortKey;

/// A group that is no frame: rows of reports without a location key.
const NO_FRAME: u32 = u32::MAX;

/// A row being accumulated for one input.
struct RowAcc {
    /// The first entry and group that made it (its texts: pid's comm, sym's tag).
    comm: u32,
    pid: i32,
    tid: i32,
    cpu: i32,
    group: Group,
    /// Whether the group was met as a call-chain frame (unnamed code is then keyed and shown
    /// by its address, as perf does), else as the sampled location (by file offset).
    caller: bool,
    /// Per event of the input: samples, period, children samples, children period.
    values: Vec<[u64; 4]>,
}

/// Checks the input's row count, then adds its events and rows to `fleet`.
pub(super) fn add_input(
    opts: &FleetOptions,
    fleet: &mut FleetMerge,
    fold: InputFold,
    place: &InputPlace,
) -> Result<(), InputError> {
    let InputFold {
        input,
        kept,
        children,
        selected,
        totals,
        entries,
        ..
    } = fold;
    let h = &opts.hotspots;
    // Every row once: a samples file copied twice (or lost) would change every count.
    let rows: u64 = totals.iter().map(|t| t.0).sum();
    if i64::try_from(rows).ok() != Some(input.sample_rows) {
        return Err(InputError {
            path: place.samples_dir.clone(),
            why: format!(
                "{rows} sample rows for input {}, where hosts.samples says {} (a samples \
                 file duplicated or missing?)",
                place.id, input.sample_rows
            ),
        });
    }

    // The input's event columns: those asked for, or those with samples (all when none has).
    let any = totals.iter().any(|t| t.0 > 0);
    let columns: Vec<usize> = (0..input.events.len())
        .filter(|&e| selected[e] && (!h.events.is_empty() || !any || totals[e].0 > 0))
        .collect();
    let mut summary = InputSummary {
        file: place.label.clone(),
        meta: Some(input.meta.clone()),
        events: Vec::new(),
        stopped: None,
        error: None,
    };
    if !h.events.is_empty() && columns.is_empty() {
        fleet.warn(format!(
            "{}: none of the events asked for (-e {}); its events: {}",
            summary.file,
            h.events.join(","),
            event_names(&input)
        ));
        fleet.add_input(summary);
        return Ok(());
    }
    let merge = fleet.rows();
    let mut col_of = vec![usize::MAX; input.events.len()];
    for &e in &columns {
        let ev = &input.events[e];
        let facts = EventFacts {
            period_is_ns: ev.unit == "ns",
            deskid: "stays where sampled",
        };
        col_of[e] = merge.add_event(&ev.name, facts, totals[e].0, totals[e].1, 0);
        summary.events.push(event_json(&ev.name, totals[e]));
    }
    if children {
        merge.set_has_callchains();
    }
    let mut table = Rows {
        unknown_per_address: h.unknown_per_address,
        ..Rows::default()
    };
    fold_rows(
        &mut table, &h.keys, &input, kept, children, &entries, &col_of, place,
    )?;
    emit_rows(opts, merge, &input, &table.rows, &col_of);
    fleet.add_input(summary);
    Ok(())
}

/// The rows of the folded entries, as one perf.data report makes them: each entry counts
/// for the row of its sampled location, and (children) once for each other row of its
/// call chain; into `table`.
#[allow(clippy::too_many_arguments)]
fn fold_rows(
    table: &mut Rows,
    keys: &[SortKey],
    input: &TablesInput,
    kept: Kept,
    children: bool,
    entries: &[(FoldKey, u64, u64)],
    col_of: &[usize],
    place: &InputPlace,
) -> Result<(), InputError> {
    let ncol = input.events.len();
    let mut words: Vec<u64> = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for (k, samples, period) in entries {
        let e = k.0 as usize;
        if col_of[e] == usize::MAX {
            continue;
        }
        let (leaf, chain) = places(input, kept, k, place)?;
        let r = table.row(keys, input, k, leaf, false, ncol, &mut words);
        let v = &mut table.rows[r as usize].values[e];
        v[0] += samples;
        v[1] += period;
        v[2] += samples;
        v[3] += period;
        if children {
            // The call chain is the sampled location and its callers, as the kernel gives
            // it (the export keeps the sampled location once); perf counts its outermost
            // frames only (--max-stack).
            seen.clear();
            seen.push(r);
            for &g in children_window(chain) {
                let r = table.row(keys, input, k, g, true, ncol, &mut words);
                if seen.contains(&r) {
                    continue;
                }
                seen.push(r);
                let v = &mut table.rows[r as usize].values[e];
                v[2] += samples;
                v[3] += period;
            }
        }
    }
    Ok(())
}

/// Adds the rows that pass the DSO filter to `merge`, with their keys' texts.
fn emit_rows(
    opts: &FleetOptions,
    merge: &mut HotspotsMerge,
    input: &TablesInput,
    rows: &[RowAcc],
    col_of: &[usize],
) {
    let h = &opts.hotspots;
    let keys = &h.keys;
    // The DSO filter keeps the rows whose first place is in one of the DSOs (by short name:
    // the tables have no paths).
    let dso_ok = |r: &RowAcc| {
        h.filters.dsos.is_empty() || {
            let name = if r.group.frame != NO_FRAME {
                input.strings.get(input.frames[r.group.frame as usize].dso)
            } else {
                "[unknown]"
            };
            h.filters.dsos.iter().any(|d| d == name)
        }
    };
    let mut texts: Vec<String> = Vec::with_capacity(keys.len());
    for r in rows {
        if !dso_ok(r) {
            continue;
        }
        key_texts(keys, input, r, &mut texts);
        let parts = key_parts(keys, input, r, &texts);
        for (e, v) in r.values.iter().enumerate() {
            if col_of[e] != usize::MAX && v.iter().any(|&x| x > 0) {
                merge.add_row(&parts, col_of[e], *v);
            }
        }
    }
}

/// The texts of row `r`'s keys that are made here (pid, tid, cpu, srcline; empty for the
/// others).
fn key_texts(keys: &[SortKey], input: &TablesInput, r: &RowAcc, texts: &mut Vec<String>) {
    texts.clear();
    for key in keys {
        texts.push(match key {
            SortKey::Pid => format!("{}:{}", r.pid, input.strings.get(r.comm)),
            SortKey::Tid => format!("{}:{}", r.tid, input.strings.get(r.comm)),
            SortKey::Cpu => r.cpu.to_string(),
            SortKey::Srcline if r.group.frame != NO_FRAME => {
                let f = &input.frames[r.group.frame as usize];
                match input.frames[r.group.innermost as usize].srcline {
                    Some(s) => input.strings.get(s).to_string(),
                    None => format!("{}+{:#x}", input.strings.get(f.dso), f.offset),
                }
            }
            _ => String::new(),
        });
    }
}

/// The key parts of row `r`, as the merge compares and shows them.
fn key_parts<'a>(
    keys: &[SortKey],
    input: &'a TablesInput,
    r: &RowAcc,
    texts: &'a [String],
) -> Vec<KeyPart<'a>> {
    let mut parts: Vec<KeyPart<'a>> = Vec::with_capacity(keys.len());
    for (j, key) in keys.iter().enumerate() {
        let fr = (r.group.frame != NO_FRAME).then(|| &input.frames[r.group.frame as usize]);
        let inner = (r.group.frame != NO_FRAME).then(|| &input.frames[r.group.innermost as usize]);
        let dso = fr.map_or("[unknown]", |f| input.strings.get(f.dso));
        parts.push(match key {
            SortKey::Comm => KeyPart::Text(input.strings.get(r.comm)),
            SortKey::Pid => KeyPart::Number(i64::from(r.pid), &texts[j]),
            SortKey::Tid => KeyPart::Number(i64::from(r.tid), &texts[j]),
            SortKey::Cpu => KeyPart::Number(i64::from(r.cpu), &texts[j]),
            SortKey::Dso => KeyPart::Text(dso),
            SortKey::Sym => KeyPart::Sym {
                name: fr.and_then(|f| f.function).map(|n| input.strings.get(n)),
                dso,
                kernel: fr.is_some_and(|f| f.kernel),
                addr: fr.map_or(0, |f| if r.caller { f.address } else { f.offset }),
            },
            SortKey::Srcline => KeyPart::Text(if fr.is_some() { &texts[j] } else { "[unknown]" }),
            SortKey::Srcfile => KeyPart::Srcfile {
                file: inner.and_then(|f| f.srcfile).map(|s| input.strings.get(s)),
                dso,
            },
            _ => KeyPart::Text(""),
        });
    }
    parts
}

/// The keys of a row for a sample (`comm`, `pid`, `tid`, `cpu`) at group `g` (as the
/// sampled location or a caller), as words: equal words, same row.
fn key_words(
    keys: &[SortKey],
    input: &TablesInput,
    k: &FoldKey,
    g: Group,
    caller: bool,
    unknown_per_address: bool,
    out: &mut Vec<u64>,
) {
    out.clear();
    let f = &input.frames[g.frame as usize];
    let inner = &input.frames[g.innermost as usize];
    for key in keys {
        match key {
            SortKey::Comm => out.extend([u64::from(k.1), 0]),
            SortKey::Pid => out.extend([k.2 as u32 as u64, 0]),
            SortKey::Tid => out.extend([k.3 as u32 as u64, 0]),
            SortKey::Cpu => out.extend([k.4 as u32 as u64, 0]),
            SortKey::Dso => out.extend([u64::from(f.dso), 0]),
            SortKey::Sym => match f.function {
                Some(n) => out.extend([u64::from(f.dso) | 1 << 32, u64::from(n)]),
                None if unknown_per_address => {
                    out.extend([u64::from(f.dso), if caller { f.address } else { f.offset }])
                }
                // One row per DSO for its unnamed addresses (merged so by `add_row`).
                None => out.extend([u64::from(f.dso), u64::MAX]),
            },
            SortKey::Srcline => match inner.srcline {
                Some(s) => out.extend([u64::MAX, u64::from(s)]),
                None => out.extend([u64::from(f.dso), f.offset]),
            },
            SortKey::Srcfile => match inner.srcfile {
                Some(s) => out.extend([u64::MAX, u64::from(s)]),
                None => out.extend([u64::from(f.dso), u64::MAX]),
            },
            // Refused before reading (see `unsupported`).
            _ => out.extend([0, 0]),
        }
    }
}

/// The sampled location of folded entry `k` and its call chain (the sampled location
/// first, then its callers; empty when the stack is not kept).
fn places<'a>(
    input: &'a TablesInput,
    kept: Kept,
    k: &FoldKey,
    place: &InputPlace,
) -> Result<(Group, &'a [Group]), InputError> {
    let no_group = Group {
        frame: NO_FRAME,
        innermost: NO_FRAME,
    };
    let missing = |what: String| InputError {
        path: place.samples_file.clone(),
        why: what,
    };
    if kept.stack {
        let &(a, b) = input
            .stacks
            .get(&k.5)
            .ok_or_else(|| missing(format!("stack {} is not in stacks/", k.5)))?;
        let g = input.groups.get(a as usize..b as usize).unwrap_or(&[]);
        Ok((g.first().copied().unwrap_or(no_group), g))
    } else if kept.leaf {
        let &f = input
            .frame_index
            .get(&k.5)
            .ok_or_else(|| missing(format!("leaf frame {} is not in frames/", k.5)))?;
        Ok((
            Group {
                frame: f,
                innermost: f,
            },
            &[],
        ))
    } else {
        Ok((no_group, &[]))
    }
}

/// The rows of one input, by their key words, in first-seen order.
#[derive(Default)]
struct Rows {
    rows: Vec<RowAcc>,
    index: FxHashMap<Vec<u64>, u32>,
    /// Unnamed addresses are rows of their own, not one `[unknown]` row per DSO
    /// ([`crate::HotspotOptions::unknown_per_address`]).
    unknown_per_address: bool,
}

impl Rows {
    /// The row of entry `k` at group `g` (as its sampled location, or a `caller`), made on
    /// first sight with `ncol` events.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        keys: &[SortKey],
        input: &TablesInput,
        k: &FoldKey,
        g: Group,
        caller: bool,
        ncol: usize,
        words: &mut Vec<u64>,
    ) -> u32 {
        if g.frame != NO_FRAME {
            let per_address = self.unknown_per_address;
            key_words(keys, input, k, g, caller, per_address, words);
        } else {
            // No location key: the sample's keys only.
            words.clear();
            for key in keys {
                words.push(match key {
                    SortKey::Comm => u64::from(k.1),
                    SortKey::Pid => k.2 as u32 as u64,
                    SortKey::Tid => k.3 as u32 as u64,
                    SortKey::Cpu => k.4 as u32 as u64,
                    _ => u64::MAX,
                });
            }
        }
        if let Some(&r) = self.index.get(words.as_slice()) {
            return r;
        }
        let r = self.rows.len() as u32;
        self.index.insert(words.clone(), r);
        self.rows.push(RowAcc {
            comm: k.1,
            pid: k.2,
            tid: k.3,
            cpu: k.4,
            group: g,
            caller,
            values: vec![[0; 4]; ncol],
        });
        r
    }
}
