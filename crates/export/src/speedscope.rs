//! speedscope: the JSON file format of <https://www.speedscope.app> (its published schema is
//! `https://www.speedscope.app/file-format-schema.json`, from speedscope's
//! `src/lib/file-format-spec.ts`).
//!
//! What the file holds, from a [`StackProfile`]:
//! - `shared.frames`: one frame per function (its name and source file); code without a
//!   symbol is `[DSO file name]`. Inlined functions are frames of their own, callers first;
//! - one `sampled` profile per (thread, event), named `COMM (pid P, tid T) EVENT`, in the
//!   model's thread order: its samples are the thread's distinct stacks (root first), its
//!   weights their summed periods, in `nanoseconds` for clock events and `none` (a plain
//!   count of events) otherwise;
//! - the busiest profile of the first event in the file's order is the one speedscope opens.
//!
//! Limits: samples are aggregated per stack, so speedscope's "Time Order" view shows stacks
//! in order of first occurrence, not a timeline; there is no per-line frame.

use std::collections::HashMap;
use std::io::{self, Write};

use culprit_analysis::stacks::{PeriodUnit, StackProfile};
use serde::{Deserialize, Serialize};

use crate::common::{frame_name, primary_event};

/// The `$schema` value speedscope's importer checks.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

/// A speedscope file (the subset of `FileFormat.File` culprit writes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct File {
    /// Always [`SCHEMA_URL`].
    #[serde(rename = "$schema")]
    pub schema: String,
    /// Frames shared by every profile.
    pub shared: Shared,
    /// The profiles (one per thread and event).
    pub profiles: Vec<SampledProfile>,
    /// Name of the whole file.
    pub name: String,
    /// The profile shown first.
    #[serde(rename = "activeProfileIndex")]
    pub active_profile_index: usize,
    /// What wrote the file.
    pub exporter: String,
}

/// `shared`: the frame table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shared {
    /// Frames, referenced by index from samples.
    pub frames: Vec<SpeedscopeFrame>,
}

/// `FileFormat.Frame`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedscopeFrame {
    /// Function name.
    pub name: String,
    /// Source file, when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file: Option<String>,
}

/// `FileFormat.SampledProfile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledProfile {
    /// Always `sampled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Thread and event.
    pub name: String,
    /// `nanoseconds` or `none`.
    pub unit: String,
    /// Always 0.
    #[serde(rename = "startValue")]
    pub start_value: u64,
    /// The sum of the weights.
    #[serde(rename = "endValue")]
    pub end_value: u64,
    /// Stacks as frame indices, root first.
    pub samples: Vec<Vec<usize>>,
    /// One weight per stack.
    pub weights: Vec<u64>,
}

/// Writes `profile` as a speedscope file; returns the number of (stack, weight) samples
/// written.
pub fn write<W: Write>(profile: &StackProfile, out: W) -> io::Result<u64> {
    let file = build(profile);
    let mut out = io::BufWriter::new(out);
    serde_json::to_writer(&mut out, &file)?;
    out.flush()?;
    Ok(file.profiles.iter().map(|p| p.samples.len() as u64).sum())
}

/// The speedscope file of `profile`.
pub fn build(profile: &StackProfile) -> File {
    let mut frames: Vec<SpeedscopeFrame> = Vec::new();
    let mut frame_of_function: HashMap<u32, usize> = HashMap::new();
    let mut frame = |function: u32| -> usize {
        *frame_of_function.entry(function).or_insert_with(|| {
            let name = frame_name(profile, function).into_owned();
            let file = profile
                .functions
                .get(function as usize)
                .filter(|f| !f.unknown)
                .and_then(|f| f.file.clone());
            frames.push(SpeedscopeFrame { name, file });
            frames.len() - 1
        })
    };
    let mut profiles: Vec<SampledProfile> = Vec::new();
    let mut profile_of: HashMap<(u32, u32), usize> = HashMap::new();
    let mut keys: Vec<(u32, u32)> = Vec::new();
    for s in &profile.samples {
        let p = *profile_of.entry((s.thread, s.event)).or_insert_with(|| {
            let thread = profile.threads.get(s.thread as usize);
            let event = profile.events.get(s.event as usize);
            let name = match thread {
                Some(t) => format!(
                    "{} (pid {}, tid {}) {}",
                    t.comm,
                    t.pid,
                    t.tid,
                    event.map_or("", |e| &e.name)
                ),
                None => event.map_or("", |e| &e.name).to_string(),
            };
            let unit = match event.map(|e| e.unit) {
                Some(PeriodUnit::Nanoseconds) => "nanoseconds",
                _ => "none",
            };
            profiles.push(SampledProfile {
                kind: "sampled".to_string(),
                name,
                unit: unit.to_string(),
                start_value: 0,
                end_value: 0,
                samples: Vec::new(),
                weights: Vec::new(),
            });
            keys.push((s.thread, s.event));
            profiles.len() - 1
        });
        let stack: Vec<usize> = profile
            .stack_frames(s.stack)
            .iter()
            .map(|(f, _)| frame(f.function))
            .collect();
        let out = &mut profiles[p];
        out.samples.push(stack);
        out.weights.push(s.period);
        out.end_value += s.period;
    }
    // Profiles in thread order, then event order (samples come in order of first occurrence).
    let mut order: Vec<usize> = (0..profiles.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    let profiles: Vec<SampledProfile> = order.iter().map(|&i| profiles[i].clone()).collect();
    let keys: Vec<(u32, u32)> = order.iter().map(|&i| keys[i]).collect();
    let primary = primary_event(profile);
    let active_profile_index = (0..profiles.len())
        .filter(|&i| Some(keys[i].1) == primary)
        .max_by_key(|&i| (profiles[i].end_value, std::cmp::Reverse(i)))
        .unwrap_or(0);
    File {
        schema: SCHEMA_URL.to_string(),
        shared: Shared { frames },
        profiles,
        name: profile.summary.input.clone(),
        active_profile_index,
        exporter: format!("culprit {}", env!("CARGO_PKG_VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;

    #[test]
    fn test_build_one_profile_per_thread_and_event() {
        let model = testutil::profile();
        let mut bytes = Vec::new();
        write(&model, &mut bytes).unwrap();
        let file: File = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(file, build(&model));
        let names: Vec<(&str, &str, u64)> = file
            .profiles
            .iter()
            .map(|p| (p.name.as_str(), p.unit.as_str(), p.end_value))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "prog (pid 100, tid 100) cpu-clock",
                    "nanoseconds",
                    7_000_000
                ),
                ("prog (pid 100, tid 100) page-faults", "none", 3),
                (
                    "prog (pid 100, tid 101) cpu-clock",
                    "nanoseconds",
                    1_000_000
                ),
                ("prog (pid 100, tid 101) page-faults", "none", 4),
                (
                    "other <b> (pid 200, tid 200) cpu-clock",
                    "nanoseconds",
                    2_000_000
                ),
            ]
        );
        assert_eq!(file.active_profile_index, 0);
        for p in &file.profiles {
            assert_eq!(p.weights.iter().sum::<u64>(), p.end_value);
            assert_eq!(p.samples.len(), p.weights.len());
        }
    }

    #[test]
    fn test_build_stacks_root_first_with_inlines() {
        let file = build(&testutil::profile());
        let tid_101 = &file.profiles[2];
        let names: Vec<&str> = tid_101.samples[0]
            .iter()
            .map(|&f| file.shared.frames[f].name.as_str())
            .collect();
        assert_eq!(names, ["main", "work", "helper", "do_syscall"]);
        let helper = file
            .shared
            .frames
            .iter()
            .find(|f| f.name == "helper")
            .unwrap();
        assert_eq!(helper.file.as_deref(), Some("helper.h"));
        assert!(file.shared.frames.iter().any(|f| f.name == "[libc.so.6]"));
    }
}
