//! Recording modes for long recordings, with perf's flags and semantics: compression (`-z`),
//! bounds (`--duration`, `--max-size`), output switching (`--switch-output`,
//! `--switch-max-files`) and the flight recorder (`--overwrite`). The values, their parsing
//! and the names of switched files; the recording loop (`record`) applies them.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When `--switch-output` starts a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchOutput {
    /// On SIGUSR2 (perf's default for `--switch-output` without a value).
    Signal,
    /// When the file reaches this many bytes.
    Size(u64),
    /// Every this long.
    Time(Duration),
}

/// The modes of one recording; the default is one plain file until the target ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordModes {
    /// `-z` / `--compression-level N`: zstd level (1..=22) of PERF_RECORD_COMPRESSED records.
    pub compression_level: Option<u32>,
    /// `--duration`: stop after this long (a launched command gets SIGTERM, as with Ctrl-C
    /// twice).
    pub duration: Option<Duration>,
    /// `--max-size`: stop when the file reaches this many bytes (header, attrs and records;
    /// the feature sections, a few KiB, come on top).
    pub max_size: Option<u64>,
    /// `--switch-output`: rotate to `FILE.<timestamp>` files.
    pub switch_output: Option<SwitchOutput>,
    /// `--switch-max-files`: keep only the newest N files of the rotation (the one being
    /// written counts).
    pub switch_max_files: Option<usize>,
    /// `--overwrite`: the rings keep only the newest data (kernel overwrite mode), written on
    /// SIGUSR2 and at the end.
    pub overwrite: bool,
}

impl RecordModes {
    /// Whether SIGUSR2 writes a file (`--switch-output=signal`, or `--overwrite`).
    pub fn dumps_on_signal(&self) -> bool {
        self.overwrite || self.switch_output == Some(SwitchOutput::Signal)
    }
}

/// A file a recording finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Samples in it.
    pub samples: u64,
}

/// What a long recording reports as it happens (perf prints these as `[ perf record: … ]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A file was finished under its switched name (`--switch-output`, `--overwrite`).
    Dumped(RecordedFile),
    /// An old file was removed (`--switch-max-files`).
    Removed(PathBuf),
    /// `--max-size` was reached with this many bytes: the recording stops.
    SizeLimit(u64),
    /// `--duration` elapsed: the recording stops.
    DurationReached(Duration),
}

/// Why a recording stopped on its own (not the target's end nor a signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `--duration` elapsed.
    Duration,
    /// `--max-size` was reached.
    MaxSize,
}

/// What `-z` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionSummary {
    /// zstd level.
    pub level: u32,
    /// Record bytes before compression.
    pub raw_bytes: u64,
    /// COMPRESSED record bytes written for them.
    pub compressed_bytes: u64,
}

/// Parses a size with perf's units: `B`, `K`, `M`, `G` (case-insensitive, powers of 1024);
/// a bare number is bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mult = match c.to_ascii_uppercase() {
                'B' => 1u64,
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("`{s}`: the size unit must be B, K, M or G")),
            };
            (&t[..i], mult)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (a number with B, K, M or G)"))?;
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("`{s}`: the size must be between 1 byte and 2^64"))
}

/// Parses a time with perf's units: `s`, `m`, `h`, `d`.
pub fn parse_time(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let Some(unit) = t.chars().last().filter(|c| c.is_ascii_alphabetic()) else {
        return Err(format!("`{s}`: the time needs a unit (s, m, h or d)"));
    };
    let secs = match unit.to_ascii_lowercase() {
        's' => 1u64,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => return Err(format!("`{s}`: the time unit must be s, m, h or d")),
    };
    let n: u64 = t[..t.len() - 1]
        .parse()
        .map_err(|_| format!("`{s}` is not a time (a number with s, m, h or d)"))?;
    match n.checked_mul(secs) {
        Some(v) if v > 0 => Ok(Duration::from_secs(v)),
        _ => Err(format!("`{s}`: the time must be at least 1 second")),
    }
}

/// Parses `--switch-output`'s value as perf does: `signal`, a size (`100M`: B, K, M, G) or a
/// time (`30s`: s, m, h, d); a unit is required (a bare number could be either).
pub fn parse_switch_output(s: &str) -> Result<SwitchOutput, String> {
    let t = s.trim();
    if t == "signal" {
        return Ok(SwitchOutput::Signal);
    }
    // perf's tags are case-sensitive: `M` is MiB, `m` minutes.
    match t.chars().last() {
        Some('B' | 'K' | 'M' | 'G') => parse_size(t).map(SwitchOutput::Size),
        Some('s' | 'm' | 'h' | 'd') => parse_time(t).map(SwitchOutput::Time),
        _ => Err(format!(
            "--switch-output `{s}`: expected `signal`, a size (100M: B, K, M, G) or a time \
             (30s: s, m, h, d); put `--` before the command"
        )),
    }
}

/// perf's timestamp of a switched file: local time `YYYYMMDDHHMMSS` and centiseconds
/// (`perf.data.2015122620363710`, `fetch_current_timestamp` in perf's `util/time-utils.c`).
pub fn timestamp(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes the broken-down time into `tm`, a valid struct.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            tm = std::mem::zeroed();
            tm.tm_mday = 1;
            tm.tm_year = 70;
        }
        tm
    };
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        since.subsec_millis() / 10
    )
}

/// `FILE.<timestamp>` for a file switched now. The timestamp is above `previous` (the last
/// one given, updated) and names no existing file: two switches in the same hundredth of a
/// second count up, so that names stay unique and sort in the order of the files.
pub fn switched_name(base: &Path, now: SystemTime, previous: &mut Option<u64>) -> PathBuf {
    let mut stamp: u64 = timestamp(now).parse().unwrap_or(0);
    if let Some(p) = *previous {
        stamp = stamp.max(p + 1);
    }
    loop {
        let mut name = base.as_os_str().to_owned();
        name.push(format!(".{stamp:016}"));
        let p = PathBuf::from(name);
        if std::fs::symlink_metadata(&p).is_err() {
            *previous = Some(stamp);
            return p;
        }
        stamp += 1;
    }
}

/// The files of a rotation, oldest first, and how many were removed to keep the newest.
#[derive(Debug, Default)]
pub struct Retention {
    files: std::collections::VecDeque<PathBuf>,
    max: Option<usize>,
    /// Files removed so far.
    pub removed: Vec<PathBuf>,
}

impl Retention {
    /// Keeps at most `max` files (`None`: all).
    pub fn new(max: Option<usize>) -> Retention {
        Retention {
            max,
            ..Retention::default()
        }
    }

    /// A finished file; removes the oldest ones so that at most `max` files exist, counting
    /// `writing` more being written (1 while recording, 0 after the last file).
    pub fn push(&mut self, file: PathBuf, writing: usize) -> Vec<std::io::Error> {
        self.files.push_back(file);
        let mut errors = Vec::new();
        let Some(max) = self.max else {
            return errors;
        };
        while self.files.len() + writing > max.max(1) {
            let Some(old) = self.files.pop_front() else {
                break;
            };
            match std::fs::remove_file(&old) {
                Ok(()) => self.removed.push(old),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.removed.push(old),
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// The files kept, oldest first.
    pub fn kept(&self) -> Vec<PathBuf> {
        self.files.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_size_units() {
        assert_eq!(parse_size("100").unwrap(), 100);
        assert_eq!(parse_size("4B").unwrap(), 4);
        assert_eq!(parse_size("2k").unwrap(), 2048);
        assert_eq!(parse_size("3M").unwrap(), 3 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert!(parse_size("0").is_err());
        assert!(parse_size("10X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }

    #[test]
    fn test_parse_switch_output_as_perf() {
        assert_eq!(parse_switch_output("signal").unwrap(), SwitchOutput::Signal);
        assert_eq!(
            parse_switch_output("10M").unwrap(),
            SwitchOutput::Size(10 << 20)
        );
        assert_eq!(
            parse_switch_output("1G").unwrap(),
            SwitchOutput::Size(1 << 30)
        );
        assert_eq!(
            parse_switch_output("30s").unwrap(),
            SwitchOutput::Time(Duration::from_secs(30))
        );
        assert_eq!(
            parse_switch_output("5m").unwrap(),
            SwitchOutput::Time(Duration::from_secs(300))
        );
        assert_eq!(
            parse_switch_output("1d").unwrap(),
            SwitchOutput::Time(Duration::from_secs(86400))
        );
        let e = parse_switch_output("100").unwrap_err();
        assert!(e.contains("--"), "{e}");
        assert!(parse_switch_output("./prog").is_err());
        assert!(parse_time("0s").is_err());
    }

    #[test]
    fn test_timestamp_has_perfs_16_digits() {
        let t = timestamp(SystemTime::now());
        assert_eq!(t.len(), 16, "{t}");
        assert!(t.bytes().all(|b| b.is_ascii_digit()), "{t}");
        assert!(t.starts_with("20"), "{t}");
    }

    #[test]
    fn test_switched_names_are_unique_and_retention_keeps_the_newest() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-modes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("perf.data");
        let now = SystemTime::now();
        let mut r = Retention::new(Some(2));
        let mut names = Vec::new();
        let mut previous = None;
        for _ in 0..4 {
            let n = switched_name(&base, now, &mut previous);
            std::fs::write(&n, b"x").unwrap();
            assert!(names.last().is_none_or(|last| *last < n), "in order");
            names.push(n.clone());
            assert!(r.push(n, 1).is_empty());
        }
        // while recording: one finished file + the one being written
        assert_eq!(r.kept(), names[3..].to_vec());
        assert_eq!(r.removed, names[..3].to_vec());
        let last = switched_name(&base, now, &mut previous);
        std::fs::write(&last, b"x").unwrap();
        r.push(last.clone(), 0);
        assert_eq!(r.kept(), vec![names[3].clone(), last]);
        let on_disk = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(on_disk, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
