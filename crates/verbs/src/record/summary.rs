//! The end-of-run summary of a recording, as a model: its JSON form
//! (docs/schemas/record.schema.json), its text lines in perf's `[ perf record: … ]` style,
//! the notices of a long recording as they happen, and the warnings about what the
//! recording missed.

use std::path::Path;

use culprit_collect::events::SampleRate;
use culprit_collect::launch::ChildExit;
use culprit_collect::modes::{Notice, StopReason};
use culprit_collect::record::{self, RecordSummary};
use culprit_output::text::escape;
use serde::Serialize;

/// JSON form of the summary (docs/schemas/record.schema.json).
#[derive(Debug, Serialize)]
pub struct JsonSummary {
    /// The schema's version (1).
    pub schema: u32,
    /// The `-o` path as given (`-` for a stream).
    pub output: String,
    /// Size of the finished file (or of the whole stream) in bytes.
    pub file_size: u64,
    /// Bytes of records in the data section.
    pub data_size: u64,
    /// Wall time of the recording in milliseconds.
    pub duration_ms: f64,
    /// Per event, in `-e` order.
    pub events: Vec<JsonEvent>,
    /// Samples written, over all events.
    pub samples: u64,
    /// LOST records written.
    pub lost_records: u64,
    /// Samples lost in total.
    pub lost_samples: u64,
    /// THROTTLE records written.
    pub throttle_records: u64,
    /// UNTHROTTLE records written.
    pub unthrottle_records: u64,
    /// The launched command's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed the launched command.
    pub signal: Option<i32>,
    /// Whether SIGINT/SIGTERM stopped the recording.
    pub interrupted: bool,
    /// Why the recording stopped on its own (`--duration`, `--max-size`).
    pub stop_reason: Option<StopReason>,
    /// Samples read but not written, past `--max-size`.
    pub dropped_samples: u64,
    /// What `-z` did.
    pub compression: Option<JsonCompression>,
    /// Every file finished, in order.
    pub files: Vec<JsonFile>,
}

/// What `-z` did, in the JSON summary.
#[derive(Debug, Serialize)]
pub struct JsonCompression {
    /// The zstd level.
    pub level: u32,
    /// Bytes of records before compression.
    pub raw_bytes: u64,
    /// Bytes of the compressed records.
    pub compressed_bytes: u64,
}

/// One finished file, in the JSON summary.
#[derive(Debug, Serialize)]
pub struct JsonFile {
    /// Its path.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Samples written to it.
    pub samples: u64,
    /// Still on disk (not removed by --switch-max-files).
    pub kept: bool,
}

/// One event, in the JSON summary.
#[derive(Debug, Serialize)]
pub struct JsonEvent {
    /// The event's name.
    pub name: String,
    /// Samples written.
    pub samples: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// THROTTLE records of this event.
    pub throttled: u64,
    /// The sampling setting used.
    pub rate: SampleRate,
}

/// The summary of a finished recording, to be shown as text or JSON.
#[derive(Debug, Clone, Copy)]
pub struct Summary<'a> {
    /// What the recording produced.
    pub summary: &'a RecordSummary,
    /// The `-o` path as given (`-` for a stream).
    pub output: &'a Path,
    /// Whether `--switch-output` was given (the text then counts files).
    pub switched: bool,
}

impl Summary<'_> {
    /// Samples written, over all events.
    fn samples(&self) -> u64 {
        self.summary.events.iter().map(|e| e.samples).sum()
    }

    /// The JSON form.
    pub fn json(&self) -> JsonSummary {
        let s = self.summary;
        let (exit_code, signal) = match s.exit {
            Some(ChildExit::Exited(c)) => (Some(c), None),
            Some(ChildExit::Signaled(sig)) => (None, Some(sig)),
            None => (None, None),
        };
        JsonSummary {
            schema: 1,
            output: self.output.display().to_string(),
            file_size: s.file_size,
            data_size: s.data_size,
            duration_ms: s.duration.as_secs_f64() * 1e3,
            events: s
                .events
                .iter()
                .map(|e| JsonEvent {
                    name: e.name.clone(),
                    samples: e.samples,
                    lost: e.lost,
                    throttled: e.throttled,
                    rate: e.rate,
                })
                .collect(),
            samples: self.samples(),
            lost_records: s.lost_records,
            lost_samples: s.lost_samples,
            throttle_records: s.throttle_records,
            unthrottle_records: s.unthrottle_records,
            exit_code,
            signal,
            interrupted: s.interrupted,
            stop_reason: s.stop_reason,
            dropped_samples: s.dropped_samples,
            compression: s.compression.map(|c| JsonCompression {
                level: c.level,
                raw_bytes: c.raw_bytes,
                compressed_bytes: c.compressed_bytes,
            }),
            files: s
                .recorded
                .iter()
                .map(|f| JsonFile {
                    path: f.path.display().to_string(),
                    size: f.size,
                    samples: f.samples,
                    kept: s.files.contains(&f.path),
                })
                .collect(),
        }
    }

    /// The text form: one `[ culprit record: … ]` line each (without line ends).
    pub fn text(&self) -> Vec<String> {
        let s = self.summary;
        let total = self.samples();
        let compressed = match s.compression {
            Some(c) if c.compressed_bytes > 0 => format!(
                ", compressed (original {:.3} MB, ratio is {:.3})",
                mb(c.raw_bytes),
                c.raw_bytes as f64 / c.compressed_bytes as f64
            ),
            _ => String::new(),
        };
        let mut lines = Vec::new();
        if self.switched || s.recorded.len() > 1 {
            let bytes: u64 = s.recorded.iter().map(|f| f.size).sum();
            lines.push(format!(
                "[ culprit record: Captured and wrote {:.3} MB in {} files ({} samples){compressed}; {} kept, {} removed ]",
                mb(bytes),
                s.recorded.len(),
                total,
                s.files.len(),
                s.removed_files.len()
            ));
        } else {
            lines.push(format!(
                "[ culprit record: Captured and wrote {:.3} MB {} ({} samples){compressed} ]",
                mb(s.file_size),
                escape(&self.output.display().to_string()),
                total
            ));
        }
        for e in &s.events {
            lines.push(format!(
                "[ culprit record: {:>8} samples  {}  ({}){} ]",
                e.samples,
                e.name,
                if e.read_by_leader {
                    "read by the group leader's samples".to_string()
                } else {
                    rate_text(e.rate)
                },
                if e.lost > 0 {
                    format!(", {} lost", e.lost)
                } else {
                    String::new()
                }
            ));
        }
        lines.push(format!(
            "[ culprit record: {} lost samples ({} LOST records), {} throttle / {} unthrottle events ]",
            s.lost_samples, s.lost_records, s.throttle_records, s.unthrottle_records
        ));
        if s.dropped_samples > 0 {
            lines.push(format!(
                "[ culprit record: {} samples dropped after the size limit (the file's LOST_SAMPLES record counts them) ]",
                s.dropped_samples
            ));
        }
        lines
    }

    /// The warnings about what the recording missed (lost samples, throttling, events that
    /// recorded nothing while others did), each a `culprit: warning: …` line.
    pub fn warnings(&self) -> Vec<String> {
        let s = self.summary;
        let mut lines = Vec::new();
        if s.lost_samples > 0 {
            lines.push(format!(
                "culprit: warning: {} samples were lost (the ring buffer overflowed): use a bigger buffer \
                 (-m {}) or a lower rate (-F/-c)",
                s.lost_samples,
                record::DEFAULT_MMAP_PAGES * 4
            ));
        }
        if s.throttle_records > 0 {
            lines.push(format!(
                "culprit: warning: the kernel throttled sampling {} times (too many interrupts): \
                 samples are missing in those periods; lower the rate (-F/-c)",
                s.throttle_records
            ));
        }
        let any = s.events.iter().any(|e| e.samples > 0);
        // A leader-sampled member never samples itself.
        for e in s
            .events
            .iter()
            .filter(|e| e.samples == 0 && any && !e.read_by_leader)
            // A tracepoint that did not fire, or a target that never blocked: nothing missed.
            .filter(|e| {
                e.name != culprit_collect::offcpu::EVENT_NAME
                    && culprit_collect::tracefs::split_tracepoint(&e.name).is_none()
            })
        {
            lines.push(format!(
                "culprit: warning: event '{}' recorded no samples while others did: it did not occur, or \
                 its counter was never scheduled (keep hardware events to 5 or fewer)",
                e.name
            ));
        }
        lines
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn rate_text(r: SampleRate) -> String {
    match r {
        SampleRate::Period(p) => format!("period {p}"),
        SampleRate::Frequency(f) => format!("{f} Hz"),
    }
}

/// What a long recording does as it happens, in perf's `[ perf record: … ]` style (one line,
/// without its line end).
pub fn notice_text(n: &Notice) -> String {
    let name = |p: &Path| escape(&p.display().to_string()).into_owned();
    match n {
        Notice::Dumped(f) => format!(
            "[ culprit record: Dump {} ({:.3} MB, {} samples) ]",
            name(&f.path),
            mb(f.size),
            f.samples
        ),
        Notice::Removed(p) => {
            format!(
                "[ culprit record: Removed {} (--switch-max-files) ]",
                name(p)
            )
        }
        Notice::SizeLimit(bytes) => format!(
            "[ culprit record: size limit reached ({} KB), stopping ]",
            bytes >> 10
        ),
        Notice::DurationReached(d) => format!(
            "[ culprit record: duration of {:.3} s reached, stopping ]",
            d.as_secs_f64()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use culprit_collect::modes::{CompressionSummary, RecordedFile};
    use culprit_collect::record::EventSummary;
    use std::path::PathBuf;
    use std::time::Duration;

    fn event(name: &str, samples: u64, rate: SampleRate) -> EventSummary {
        EventSummary {
            name: name.to_string(),
            samples,
            lost: 0,
            throttled: 0,
            rate,
            read_by_leader: false,
        }
    }

    fn summary() -> RecordSummary {
        RecordSummary {
            events: vec![
                event("cpu-clock", 1200, SampleRate::Frequency(4000)),
                event("page-faults", 0, SampleRate::Period(1)),
            ],
            lost_records: 0,
            lost_samples: 0,
            throttle_records: 0,
            unthrottle_records: 0,
            file_size: 3 << 20,
            data_size: 2 << 20,
            exit: Some(ChildExit::Exited(3)),
            interrupted: false,
            interrupt_signal: None,
            stopped: false,
            forced: false,
            build_ids: Vec::new(),
            duration: Duration::from_millis(250),
            rings: 2,
            stop_reason: None,
            dropped_samples: 0,
            compression: None,
            recorded: vec![RecordedFile {
                path: PathBuf::from("x.data"),
                size: 3 << 20,
                samples: 1200,
            }],
            files: vec![PathBuf::from("x.data")],
            removed_files: Vec::new(),
        }
    }

    #[test]
    fn test_text_summary_in_perfs_style() {
        let s = summary();
        let view = Summary {
            summary: &s,
            output: Path::new("x.data"),
            switched: false,
        };
        assert_eq!(
            view.text(),
            [
                "[ culprit record: Captured and wrote 3.000 MB x.data (1200 samples) ]",
                "[ culprit record:     1200 samples  cpu-clock  (4000 Hz) ]",
                "[ culprit record:        0 samples  page-faults  (period 1) ]",
                "[ culprit record: 0 lost samples (0 LOST records), 0 throttle / 0 unthrottle events ]",
            ]
        );
        // page-faults recorded nothing while cpu-clock did.
        let warnings = view.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("event 'page-faults' recorded no samples"));
    }

    #[test]
    fn test_switched_and_compressed_text() {
        let mut s = summary();
        s.compression = Some(CompressionSummary {
            level: 1,
            raw_bytes: 4 << 20,
            compressed_bytes: 1 << 20,
        });
        s.lost_samples = 5;
        s.removed_files = vec![PathBuf::from("x.data.1")];
        let view = Summary {
            summary: &s,
            output: Path::new("x.data"),
            switched: true,
        };
        assert_eq!(
            view.text()[0],
            "[ culprit record: Captured and wrote 3.000 MB in 1 files (1200 samples), compressed \
             (original 4.000 MB, ratio is 4.000); 1 kept, 1 removed ]"
        );
        assert!(view.warnings()[0].starts_with("culprit: warning: 5 samples were lost"));
    }

    #[test]
    fn test_json_summary() {
        let s = summary();
        let view = Summary {
            summary: &s,
            output: Path::new("x.data"),
            switched: false,
        };
        let j = serde_json::to_value(view.json()).unwrap();
        assert_eq!(j["schema"], 1);
        assert_eq!(j["samples"], 1200);
        assert_eq!(j["exit_code"], 3);
        assert!(j["signal"].is_null());
        assert_eq!(j["duration_ms"], 250.0);
        assert_eq!(j["events"][1]["name"], "page-faults");
        assert_eq!(j["files"][0]["kept"], true);
    }

    #[test]
    fn test_notices() {
        assert_eq!(
            notice_text(&Notice::SizeLimit(2048)),
            "[ culprit record: size limit reached (2 KB), stopping ]"
        );
        assert_eq!(
            notice_text(&Notice::DurationReached(Duration::from_millis(1500))),
            "[ culprit record: duration of 1.500 s reached, stopping ]"
        );
        assert_eq!(
            notice_text(&Notice::Removed(PathBuf::from("a\nb"))),
            "[ culprit record: Removed a\\x0ab (--switch-max-files) ]"
        );
    }
}
