//! pprof: the gzipped `profile.proto` read by Go's `go tool pprof`, Parca, Pyroscope and
//! Google Cloud Profiler.
//!
//! What the file holds, from a [`StackProfile`]:
//! - two sample values per event: the number of samples (`samples`/`count`) and the summed
//!   period (`EVENT`/`nanoseconds` for clock events, `EVENT`/`events` for the others). With
//!   more than one event the count is named `EVENT_samples`. The period of the first event in
//!   the file's order is the default sample type.
//! - one sample per (stack, thread) with `pid`, `tid` (numbers) and `comm` (string) labels.
//! - one location per code address, leaf first in each sample, with its line entries
//!   innermost inlined function first (as `profile.proto` orders them) and the function the
//!   symbol names last.
//! - one mapping per (file, load address): memory start and limit span the sampled
//!   addresses, the file offset is the one of the start, so that `address - memory_start +
//!   file_offset` is each location's offset in the file; build id and path as recorded. The
//!   same library loaded at two addresses (two processes) gives two mappings.
//! - functions with their demangled name (also as the system name) and source file.
//!
//! Limits: the perf clock is not wall time, so `time_nanos` stays 0 (the duration is set);
//! functions without a symbol have no line entry (pprof shows their address).

use std::collections::HashMap;
use std::io::{self, Write};

use culprit_analysis::stacks::{MappingKind, PeriodUnit, StackProfile, NONE};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use crate::common::primary_event;

pub mod proto;

/// Writes `profile` as a gzipped pprof `Profile` message; returns the number of pprof
/// samples (stack and thread pairs) written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> io::Result<u64> {
    let message = build(profile);
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&message.encode_to_vec())?;
    gz.finish()?.flush()?;
    Ok(message.sample.len() as u64)
}

/// The pprof message for `profile` (not yet encoded or compressed).
pub fn build(profile: &StackProfile) -> proto::Profile {
    let mut strings = Strings::default();
    let mut out = proto::Profile::default();
    strings.index("");

    // Sample types: (count, period) per event.
    let single = profile.events.len() == 1;
    for e in &profile.events {
        let count_name = if single {
            "samples".to_string()
        } else {
            format!("{}_samples", e.name)
        };
        out.sample_type.push(proto::ValueType {
            r#type: strings.index(&count_name),
            unit: strings.index("count"),
        });
        out.sample_type.push(proto::ValueType {
            r#type: strings.index(&e.name),
            unit: strings.index(unit_name(e.unit)),
        });
    }
    if let Some(first) = primary_event(profile).and_then(|e| profile.events.get(e as usize)) {
        out.default_sample_type = strings.index(&first.name);
        out.period_type = Some(proto::ValueType {
            r#type: strings.index(&first.name),
            unit: strings.index(unit_name(first.unit)),
        });
        out.period = i64_of(first.period.checked_div(first.samples).unwrap_or(0));
    }
    if let Some((first, last)) = profile.summary.time_range {
        out.duration_nanos = i64_of(last.saturating_sub(first));
    }
    for comment in comments(profile) {
        out.comment.push(strings.index(&comment));
    }

    // Functions: model index + 1 is the id.
    for (i, f) in profile.functions.iter().enumerate() {
        let name = strings.index(&f.name);
        out.function.push(proto::Function {
            id: i as u64 + 1,
            name,
            system_name: name,
            filename: f.file.as_deref().map_or(0, |file| strings.index(file)),
            start_line: 0,
        });
    }

    let mapping_of_location = mappings(profile, &mut strings, &mut out);

    // Locations: model index + 1 is the id.
    for (i, loc) in profile.locations.iter().enumerate() {
        let known = loc.frames.iter().any(|fr| {
            profile
                .functions
                .get(fr.function as usize)
                .is_some_and(|f| !f.unknown)
        });
        let line = if known {
            loc.frames
                .iter()
                .map(|fr| proto::Line {
                    function_id: u64::from(fr.function) + 1,
                    line: fr.line.map_or(0, i64::from),
                    column: 0,
                })
                .collect()
        } else {
            Vec::new()
        };
        out.location.push(proto::Location {
            id: i as u64 + 1,
            mapping_id: mapping_of_location[i],
            address: loc.address,
            line,
            is_folded: false,
        });
    }

    // Samples: one per (stack, thread), values per event.
    let width = profile.events.len() * 2;
    let mut sample_of: HashMap<(u32, u32), usize> = HashMap::new();
    let (pid_key, tid_key, comm_key) = (
        strings.index("pid"),
        strings.index("tid"),
        strings.index("comm"),
    );
    for s in &profile.samples {
        let slot = *sample_of.entry((s.stack, s.thread)).or_insert_with(|| {
            let mut label = Vec::new();
            if let Some(t) = profile.threads.get(s.thread as usize) {
                label.push(proto::Label {
                    key: pid_key,
                    num: i64::from(t.pid),
                    ..Default::default()
                });
                label.push(proto::Label {
                    key: tid_key,
                    num: i64::from(t.tid),
                    ..Default::default()
                });
                label.push(proto::Label {
                    key: comm_key,
                    str: strings.index(&t.comm),
                    ..Default::default()
                });
            }
            out.sample.push(proto::Sample {
                location_id: stack_location_ids(profile, s.stack),
                value: vec![0; width],
                label,
            });
            out.sample.len() - 1
        });
        let e = s.event as usize;
        if let Some(values) = out.sample[slot].value.get_mut(2 * e..2 * e + 2) {
            values[0] = values[0].saturating_add(i64_of(s.count));
            values[1] = values[1].saturating_add(i64_of(s.period));
        }
    }

    out.string_table = strings.table;
    out
}

/// Location ids of a stack, leaf first.
fn stack_location_ids(profile: &StackProfile, stack: u32) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut node = stack;
    while let Some(n) = profile.nodes.get(node as usize) {
        ids.push(u64::from(n.location) + 1);
        // The tree lists parents first; a parent index past the node would loop.
        if n.parent != NONE && n.parent >= node {
            break;
        }
        node = n.parent;
    }
    ids
}

/// Builds the mappings into `out` (the main binary first) and returns each location's
/// mapping id (0: none).
fn mappings(profile: &StackProfile, strings: &mut Strings, out: &mut proto::Profile) -> Vec<u64> {
    /// One pprof mapping: a model mapping at one load bias.
    struct Range {
        mapping: u32,
        bias: u64,
        start: u64,
        end: u64,
        leaf_weight: u64,
        functions: bool,
        files: bool,
        lines: bool,
        inlines: bool,
    }
    let mut ranges: Vec<Range> = Vec::new();
    let mut range_of: HashMap<(u32, u64), usize> = HashMap::new();
    let mut location_range = vec![usize::MAX; profile.locations.len()];
    for (i, loc) in profile.locations.iter().enumerate() {
        if loc.mapping == NONE || profile.mapping(loc.mapping).is_none() {
            continue;
        }
        // Kernel and anonymous code record the address itself as the offset: bias 0.
        let bias = loc.address.wrapping_sub(loc.file_offset);
        let r = *range_of.entry((loc.mapping, bias)).or_insert_with(|| {
            ranges.push(Range {
                mapping: loc.mapping,
                bias,
                start: loc.address,
                end: loc.address,
                leaf_weight: 0,
                functions: false,
                files: false,
                lines: false,
                inlines: false,
            });
            ranges.len() - 1
        });
        let range = &mut ranges[r];
        range.start = range.start.min(loc.address);
        range.end = range.end.max(loc.address);
        for fr in &loc.frames {
            if let Some(f) = profile.functions.get(fr.function as usize) {
                range.functions |= !f.unknown;
                range.files |= f.file.is_some();
            }
            range.lines |= fr.line.is_some();
        }
        range.inlines |= loc.frames.len() > 1;
        location_range[i] = r;
    }
    // pprof takes mapping[0] as the main binary: the executable of the busiest thread when
    // its name (the comm) names one, else the file with the most self samples.
    for s in &profile.samples {
        if let Some(n) = profile.nodes.get(s.stack as usize) {
            if let Some(&r) = location_range.get(n.location as usize) {
                if let Some(range) = ranges.get_mut(r) {
                    range.leaf_weight += s.count;
                }
            }
        }
    }
    let mut thread_weight = vec![0u64; profile.threads.len()];
    for s in &profile.samples {
        if let Some(w) = thread_weight.get_mut(s.thread as usize) {
            *w += s.count;
        }
    }
    let busiest_comm = thread_weight
        .iter()
        .enumerate()
        .max_by_key(|&(i, w)| (*w, std::cmp::Reverse(i)))
        .and_then(|(i, _)| profile.threads.get(i))
        .map(|t| t.comm.as_str());
    let is_file = |r: &Range| {
        profile
            .mapping(r.mapping)
            .is_some_and(|m| m.kind == MappingKind::File)
    };
    let main = ranges
        .iter()
        .position(|r| {
            is_file(r)
                && busiest_comm.is_some_and(|comm| {
                    !comm.is_empty()
                        && profile
                            .mapping(r.mapping)
                            .is_some_and(|m| m.short_name.starts_with(comm))
                })
        })
        .or_else(|| {
            ranges
                .iter()
                .enumerate()
                .filter(|(_, r)| is_file(r))
                .max_by_key(|(i, r)| (r.leaf_weight, std::cmp::Reverse(*i)))
                .map(|(i, _)| i)
        });
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    if let Some(main) = main {
        order.retain(|&r| r != main);
        order.insert(0, main);
    }
    let mut id_of_range = vec![0u64; ranges.len()];
    for (position, &r) in order.iter().enumerate() {
        let range = &ranges[r];
        let Some(m) = profile.mapping(range.mapping) else {
            continue;
        };
        let id = position as u64 + 1;
        id_of_range[r] = id;
        out.mapping.push(proto::Mapping {
            id,
            memory_start: range.start,
            memory_limit: range.end.saturating_add(1),
            file_offset: range.start.wrapping_sub(range.bias),
            filename: strings.index(&m.path),
            build_id: m.build_id.as_deref().map_or(0, |b| strings.index(b)),
            has_functions: range.functions,
            has_filenames: range.files,
            has_line_numbers: range.lines,
            has_inline_frames: range.inlines,
        });
    }
    location_range
        .iter()
        .map(|&r| id_of_range.get(r).copied().unwrap_or(0))
        .collect()
}

/// Free-form facts about the recording for `Profile.comment`.
fn comments(profile: &StackProfile) -> Vec<String> {
    let s = &profile.summary;
    let mut out = vec![format!("culprit export of {}", s.input)];
    let facts = [
        ("host", &s.hostname),
        ("os", &s.os_release),
        ("arch", &s.arch),
        ("cpu", &s.cpu),
        ("cmdline", &s.cmdline),
        ("perf version", &s.perf_version),
    ];
    for (key, value) in facts {
        if let Some(v) = value {
            out.push(format!("{key}: {v}"));
        }
    }
    if s.lost > 0 {
        out.push(format!("lost samples: {}", s.lost));
    }
    out
}

/// pprof's unit name for an event's period.
fn unit_name(unit: PeriodUnit) -> &'static str {
    match unit {
        PeriodUnit::Nanoseconds => "nanoseconds",
        PeriodUnit::Events => "events",
    }
}

/// A count as proto's int64 (saturating: no profile counts past 2^63).
fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The string table under construction.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn index(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;

    fn decoded() -> proto::Profile {
        let mut bytes = Vec::new();
        write(&testutil::profile(), &mut bytes).unwrap();
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut raw)
            .unwrap();
        proto::Profile::decode(&raw[..]).unwrap()
    }

    fn string(p: &proto::Profile, i: i64) -> &str {
        &p.string_table[i as usize]
    }

    #[test]
    fn test_write_round_trips_through_gzip_and_prost() {
        let p = decoded();
        assert_eq!(p, build(&testutil::profile()));
        assert_eq!(p.string_table[0], "");
    }

    #[test]
    fn test_build_sample_types_per_event() {
        let p = decoded();
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (string(&p, t.r#type), string(&p, t.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("cpu-clock_samples", "count"),
                ("cpu-clock", "nanoseconds"),
                ("page-faults_samples", "count"),
                ("page-faults", "events"),
            ]
        );
        assert_eq!(string(&p, p.default_sample_type), "cpu-clock");
    }

    #[test]
    fn test_build_values_sum_to_event_totals() {
        let model = testutil::profile();
        let p = decoded();
        for (e, event) in model.events.iter().enumerate() {
            let count: i64 = p.sample.iter().map(|s| s.value[2 * e]).sum();
            let period: i64 = p.sample.iter().map(|s| s.value[2 * e + 1]).sum();
            assert_eq!((count as u64, period as u64), (event.samples, event.period));
        }
        // Samples of two events at one (stack, thread) share a pprof sample.
        assert_eq!(p.sample.len(), 4);
    }

    #[test]
    fn test_build_locations_leaf_first_and_inlines_innermost_first() {
        let p = decoded();
        let name_of_location = |id: u64| -> Vec<&str> {
            let loc = p.location.iter().find(|l| l.id == id).unwrap();
            loc.line
                .iter()
                .map(|l| {
                    let f = p.function.iter().find(|f| f.id == l.function_id).unwrap();
                    string(&p, f.name)
                })
                .collect()
        };
        // The kernel stack: do_syscall ← work/helper ← main.
        let s = p.sample.iter().find(|s| s.location_id.len() == 3).unwrap();
        let names: Vec<Vec<&str>> = s
            .location_id
            .iter()
            .map(|&id| name_of_location(id))
            .collect();
        assert_eq!(
            names,
            [vec!["do_syscall"], vec!["helper", "work"], vec!["main"]]
        );
        let labels: Vec<(&str, i64, &str)> = s
            .label
            .iter()
            .map(|l| (string(&p, l.key), l.num, string(&p, l.str)))
            .collect();
        assert_eq!(
            labels,
            [("pid", 100, ""), ("tid", 101, ""), ("comm", 0, "prog")]
        );
        // The unknown address has no line: pprof prints its address.
        let unknown = p
            .location
            .iter()
            .find(|l| l.address == 0x7f00_0000_5000)
            .unwrap();
        assert!(unknown.line.is_empty());
        let helper = p
            .function
            .iter()
            .find(|f| string(&p, f.name) == "helper")
            .unwrap();
        assert_eq!(string(&p, helper.filename), "helper.h");
    }

    #[test]
    fn test_build_mappings_give_each_location_its_file_offset() {
        let model = testutil::profile();
        let p = decoded();
        assert_eq!(string(&p, p.mapping[0].filename), "/opt/prog");
        assert_eq!(string(&p, p.mapping[0].build_id), "0123abcd");
        assert!(p.mapping[0].has_inline_frames && p.mapping[0].has_line_numbers);
        for (loc, model_loc) in p.location.iter().zip(&model.locations) {
            let m = p.mapping.iter().find(|m| m.id == loc.mapping_id).unwrap();
            assert!(m.memory_start <= loc.address && loc.address < m.memory_limit);
            assert_eq!(
                loc.address - m.memory_start + m.file_offset,
                model_loc.file_offset
            );
        }
    }
}
