//! PMU discovery from sysfs (`/sys/bus/event_source/devices/*`) and CPU identity from
//! `/proc/cpuinfo`.
//!
//! Every PMU the kernel registers has a directory with a `type` file (the value for
//! `perf_event_attr.type`), and optionally `format/` (how named terms map onto bits of
//! config/config1/config2, e.g. `config:0-7,32-35`), `events/` (named aliases such as
//! `cache-misses` → `event=0x64,umask=0x09`) and `caps/` (capabilities such as `max_precise`).
//!
//! [`Sysfs::at`] reads a tree rooted anywhere, so parsing is testable with a fake tree;
//! [`Sysfs::system`] is the real one.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Where the kernel lists PMUs.
pub const DEVICES_DIR: &str = "/sys/bus/event_source/devices";

/// Errors reading a PMU's sysfs description.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SysfsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file's content is not what the kernel ABI says it should be.
    #[error("unexpected content in {path}: {content:?} ({why})")]
    BadContent {
        /// The file.
        path: PathBuf,
        /// What it contained (trimmed).
        content: String,
        /// What was wrong.
        why: &'static str,
    },
}

/// Which `perf_event_attr` word a format field writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3` (newer kernels; culprit's [`crate::events::EventSpec`] cannot carry it yet).
    Config3,
}

impl ConfigWord {
    /// The name as sysfs spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
}

/// One `format/` file: a named field made of one or more bit ranges of one config word.
///
/// A value is spread over the ranges in order, lowest value bits first: for `config:0-7,32-35`
/// value bits 0-7 go to config bits 0-7 and value bits 8-11 to config bits 32-35.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatField {
    /// The term name (the file name), e.g. `event`, `umask`, `cnt_ctl`.
    pub name: String,
    /// The word it writes.
    pub word: ConfigWord,
    /// Inclusive bit ranges `(lo, hi)`, in value order.
    pub ranges: Vec<(u8, u8)>,
}

impl FormatField {
    /// Parses a format file's content, e.g. `config:0-7,32-35`, `config1:0-11`, `config:19`.
    pub fn parse(name: &str, content: &str) -> Result<FormatField, &'static str> {
        let content = content.trim();
        let (word, bits) = content
            .split_once(':')
            .ok_or("expected `config<N>:<bits>`")?;
        let word = match word {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            "config3" => ConfigWord::Config3,
            _ => return Err("unknown config word"),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo, hi),
                None => (part, part),
            };
            let lo: u8 = lo.trim().parse().map_err(|_| "bad bit number")?;
            let hi: u8 = hi.trim().parse().map_err(|_| "bad bit number")?;
            if lo > hi || hi > 63 {
                return Err("bit range out of order or above 63");
            }
            ranges.push((lo, hi));
        }
        if ranges.is_empty() {
            return Err("no bit ranges");
        }
        if ranges
            .iter()
            .map(|&(lo, hi)| u32::from(hi - lo) + 1)
            .sum::<u32>()
            > 64
        {
            return Err("more than 64 bits");
        }
        Ok(FormatField {
            name: name.to_string(),
            word,
            ranges,
        })
    }

    /// Total number of value bits.
    pub fn width(&self) -> u32 {
        self.ranges
            .iter()
            .map(|&(lo, hi)| u32::from(hi - lo) + 1)
            .sum()
    }

    /// The largest value that fits.
    pub fn max_value(&self) -> u64 {
        match self.width() {
            w if w >= 64 => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// Returns `(mask, bits)` to apply to the word: `word = (word & !mask) | bits`; `None`
    /// when `value` does not fit in [`width`](Self::width) bits.
    pub fn place(&self, value: u64) -> Option<(u64, u64)> {
        if value > self.max_value() {
            return None;
        }
        let mut rest = value;
        let (mut mask, mut bits) = (0u64, 0u64);
        for &(lo, hi) in &self.ranges {
            let width = u32::from(hi - lo) + 1;
            let field_mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            mask |= field_mask << lo;
            bits |= (rest & field_mask) << lo;
            rest = if width >= 64 { 0 } else { rest >> width };
        }
        Some((mask, bits))
    }

    /// The sysfs spelling, e.g. `config:0-7,32-35`.
    pub fn spec(&self) -> String {
        let ranges: Vec<String> = self
            .ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                }
            })
            .collect();
        format!("{}:{}", self.word.as_str(), ranges.join(","))
    }
}

/// A named event alias from a PMU's `events/` directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventAlias {
    /// The alias (file name), e.g. `cache-misses`.
    pub name: String,
    /// Its terms, e.g. `event=0x64,umask=0x09`.
    pub terms: String,
    /// Content of `<name>.unit`, if any (e.g. `Joules`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Content of `<name>.scale`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
}

/// One PMU as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pmu {
    /// Directory name (`cpu`, `software`, `ibs_op`, `msr`, …).
    pub name: String,
    /// `perf_event_attr.type` for this PMU.
    #[serde(rename = "type")]
    pub attr_type: u32,
    /// Format fields, sorted by name.
    pub formats: Vec<FormatField>,
    /// Event aliases, sorted by name.
    pub events: Vec<EventAlias>,
    /// Capability files `(name, content)`, sorted by name.
    pub caps: Vec<(String, String)>,
    /// The CPUs of `cpumask`, which uncore PMUs (`uncore_imc_0`, `amd_l3`, `power`) publish:
    /// their events count for the whole package or die, opened system-wide on these CPUs
    /// only, as perf does. `None` for core PMUs (no such file).
    #[serde(skip)]
    pub cpumask: Option<Vec<u32>>,
    /// The CPUs of `cpus`, which the core PMUs of hybrid CPUs publish (`cpu_core`,
    /// `cpu_atom`; arm64 big.LITTLE): their events count only there. `None` elsewhere.
    #[serde(skip)]
    pub cpus: Option<Vec<u32>>,
}

impl Pmu {
    /// The format field called `name`.
    pub fn format(&self, name: &str) -> Option<&FormatField> {
        self.formats.iter().find(|f| f.name == name)
    }

    /// The event alias called `name` (sysfs names are matched case-insensitively, like perf).
    pub fn alias(&self, name: &str) -> Option<&EventAlias> {
        self.events.iter().find(|e| e.name == name).or_else(|| {
            self.events
                .iter()
                .find(|e| e.name.eq_ignore_ascii_case(name))
        })
    }

    /// The content of `caps/<name>`.
    pub fn cap(&self, name: &str) -> Option<&str> {
        self.caps
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A view of the PMU tree, rooted at `/sys/bus/event_source/devices` or at a test directory.
///
/// What it reads is kept (shared by its clones): the tree does not change while culprit
/// runs, and resolving an event list read each event's PMU anew, ~36 system calls per
/// event (18,000 for the 500 events of a `stat -e` list, 0.2 s of a 0.25 s run).
#[derive(Debug, Clone)]
pub struct Sysfs {
    root: PathBuf,
    read: Arc<Mutex<ReadSoFar>>,
}

/// The PMU names and PMUs a [`Sysfs`] has read (errors are not kept: they are read again).
#[derive(Debug, Default)]
struct ReadSoFar {
    names: Option<Vec<String>>,
    pmus: HashMap<String, Option<Pmu>>,
}

impl PartialEq for Sysfs {
    fn eq(&self, other: &Sysfs) -> bool {
        self.root == other.root
    }
}

impl Eq for Sysfs {}

impl Sysfs {
    /// The running system's PMUs.
    pub fn system() -> Sysfs {
        Sysfs::at(DEVICES_DIR)
    }

    /// A tree laid out like `/sys/bus/event_source/devices` (one directory per PMU).
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs {
            root: root.into(),
            read: Arc::default(),
        }
    }

    /// The directory this view reads.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The cache, even after a panic elsewhere poisoned it (it only ever holds whole reads).
    fn read_so_far(&self) -> std::sync::MutexGuard<'_, ReadSoFar> {
        self.read.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Names of the PMUs that have a `type` file, sorted. Empty when the directory is missing.
    pub fn pmu_names(&self) -> Vec<String> {
        if let Some(names) = &self.read_so_far().names {
            return names.clone();
        }
        let names = self.read_pmu_names();
        self.read_so_far().names = Some(names.clone());
        names
    }

    fn read_pmu_names(&self) -> Vec<String> {
        let mut names: Vec<String> = match fs::read_dir(&self.root) {
            Ok(dir) => dir
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("type").is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names
    }

    /// Whether a PMU directory called `name` exists.
    pub fn has_pmu(&self, name: &str) -> bool {
        if !valid_component(name) {
            return false;
        }
        if let Some(names) = &self.read_so_far().names {
            return names.binary_search_by(|n| n.as_str().cmp(name)).is_ok();
        }
        self.root.join(name).join("type").is_file()
    }

    /// Reads the PMU called `name`; `Ok(None)` when there is none.
    pub fn pmu(&self, name: &str) -> Result<Option<Pmu>, SysfsError> {
        if let Some(pmu) = self.read_so_far().pmus.get(name) {
            return Ok(pmu.clone());
        }
        let pmu = self.read_pmu(name)?;
        self.read_so_far()
            .pmus
            .insert(name.to_string(), pmu.clone());
        Ok(pmu)
    }

    fn read_pmu(&self, name: &str) -> Result<Option<Pmu>, SysfsError> {
        if !self.has_pmu(name) {
            return Ok(None);
        }
        let dir = self.root.join(name);
        let type_path = dir.join("type");
        let type_text = read_trimmed(&type_path)?;
        let attr_type = type_text
            .parse::<u32>()
            .map_err(|_| SysfsError::BadContent {
                path: type_path.clone(),
                content: type_text.clone(),
                why: "not a decimal u32",
            })?;
        let mut formats = Vec::new();
        for (file, path) in list_files(&dir.join("format")) {
            let content = read_trimmed(&path)?;
            let field =
                FormatField::parse(&file, &content).map_err(|why| SysfsError::BadContent {
                    path: path.clone(),
                    content: content.clone(),
                    why,
                })?;
            formats.push(field);
        }
        let events_dir = dir.join("events");
        let mut events = Vec::new();
        for (file, path) in list_files(&events_dir) {
            // `.scale`, `.unit`, `.per-pkg`, `.snapshot` describe another alias.
            if [".scale", ".unit", ".per-pkg", ".snapshot"]
                .iter()
                .any(|s| file.ends_with(s))
            {
                continue;
            }
            // Some aliases are root-only or otherwise unreadable: list what we can.
            let Ok(terms) = read_trimmed(&path) else {
                continue;
            };
            let unit = read_trimmed(&events_dir.join(format!("{file}.unit"))).ok();
            let scale = read_trimmed(&events_dir.join(format!("{file}.scale"))).ok();
            events.push(EventAlias {
                name: file,
                terms,
                unit,
                scale,
            });
        }
        let mut caps = Vec::new();
        for (file, path) in list_files(&dir.join("caps")) {
            if let Ok(content) = read_trimmed(&path) {
                caps.push((file, content));
            }
        }
        let cpumask = read_trimmed(&dir.join("cpumask"))
            .ok()
            .and_then(|text| crate::procfs::parse_cpu_list(&text))
            .filter(|cpus| !cpus.is_empty());
        let cpus = read_trimmed(&dir.join("cpus"))
            .ok()
            .and_then(|text| crate::procfs::parse_cpu_list(&text))
            .filter(|cpus| !cpus.is_empty());
        Ok(Some(Pmu {
            name: name.to_string(),
            attr_type,
            formats,
            events,
            caps,
            cpumask,
            cpus,
        }))
    }

    /// Every readable PMU, sorted by name (unreadable ones are skipped).
    pub fn pmus(&self) -> Vec<Pmu> {
        self.pmu_names()
            .iter()
            .filter_map(|n| self.pmu(n).ok().flatten())
            .collect()
    }
}

/// A PMU name must be one path component: no `/`, not `.`/`..`.
fn valid_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

fn read_trimmed(path: &Path) -> Result<String, SysfsError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| SysfsError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Regular files of a directory as `(name, path)`, sorted; empty when it does not exist.
fn list_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut files: Vec<(String, PathBuf)> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// CPU vendor, family and model as `/proc/cpuinfo` reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuIdentity {
    /// `vendor_id`, e.g. `AuthenticAMD`, `GenuineIntel`.
    pub vendor: String,
    /// `cpu family` (decimal in cpuinfo; AMD Zen 4 is 25 = 0x19, Zen 5 is 26 = 0x1A).
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `stepping` (0 when cpuinfo has none); part of perf's CPU id string, not of the listing.
    #[serde(skip)]
    pub stepping: u32,
    /// `model name`, e.g. `AMD EPYC 9R45`.
    pub model_name: String,
    /// Whether the `hypervisor` flag is set (running in a VM).
    pub hypervisor: bool,
}

impl CpuIdentity {
    /// Whether this is an AMD CPU.
    pub fn is_amd(&self) -> bool {
        self.vendor == "AuthenticAMD" || self.vendor == "HygonGenuine"
    }

    /// Whether this is an Intel CPU.
    pub fn is_intel(&self) -> bool {
        self.vendor == "GenuineIntel"
    }

    /// A short human description: `AuthenticAMD family 0x1a model 0x02 (AMD EPYC ...)`.
    pub fn describe(&self) -> String {
        format!(
            "{} family {:#x} model {:#x} ({})",
            self.vendor, self.family, self.model, self.model_name
        )
    }
}

/// Parses the first processor block of `/proc/cpuinfo` text; `None` when the vendor, family
/// or model is missing (e.g. on non-x86 machines).
pub fn parse_cpuinfo(text: &str) -> Option<CpuIdentity> {
    let (mut vendor, mut family, mut model, mut model_name, mut hypervisor) =
        (None, None, None, String::new(), false);
    let mut stepping = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            // End of the first processor's block.
            if vendor.is_some() {
                break;
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "vendor_id" => vendor = Some(value.to_string()),
            "cpu family" => family = value.parse::<u32>().ok(),
            "model" => model = value.parse::<u32>().ok(),
            "model name" => model_name = value.to_string(),
            "stepping" => stepping = value.parse::<u32>().unwrap_or(0),
            "flags" => hypervisor = value.split_whitespace().any(|f| f == "hypervisor"),
            _ => {}
        }
    }
    Some(CpuIdentity {
        vendor: vendor?,
        family: family?,
        model: model?,
        stepping,
        model_name,
        hypervisor,
    })
}

/// The running CPU's identity from `/proc/cpuinfo`, or the one `PERF_CPUID` names (as perf,
/// it overrides the CPU events are resolved for).
pub fn cpu_identity() -> Option<CpuIdentity> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok();
    if let Some(id) = std::env::var("PERF_CPUID")
        .ok()
        .and_then(|v| parse_perf_cpuid(&v))
    {
        let hypervisor = cpuinfo
            .as_deref()
            .and_then(parse_cpuinfo)
            .is_some_and(|c| c.hypervisor);
        return Some(CpuIdentity { hypervisor, ..id });
    }
    parse_cpuinfo(&cpuinfo?)
}

/// perf's x86 CPUID string, `VENDOR-FAMILY-MODEL[-STEPPING]` with the family in decimal and
/// the model in hex (`GenuineIntel-6-55-4`, `AuthenticAMD-25-11-1`); `None` otherwise.
pub fn parse_perf_cpuid(text: &str) -> Option<CpuIdentity> {
    let mut parts = text.trim().split('-');
    let vendor = parts.next().filter(|v| !v.is_empty())?;
    let family = parts.next()?.parse::<u32>().ok()?;
    let model = u32::from_str_radix(parts.next()?, 16).ok()?;
    let stepping = parts
        .next()
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .unwrap_or(0);
    Some(CpuIdentity {
        vendor: vendor.to_string(),
        family,
        model,
        stepping,
        model_name: format!("PERF_CPUID={}", text.trim()),
        hypervisor: false,
    })
}

/// Whether we run in a virtual machine: the cpuinfo `hypervisor` flag, or a DMI vendor /
/// product naming a hypervisor. Returns the evidence, or `None` for bare metal (as far as we
/// can tell).
pub fn virtualization() -> Option<String> {
    if cpu_identity().is_some_and(|c| c.hypervisor) {
        return Some("cpuinfo flag `hypervisor`".to_string());
    }
    for file in ["sys_vendor", "product_name"] {
        let path = Path::new("/sys/class/dmi/id").join(file);
        if let Ok(v) = fs::read_to_string(&path) {
            let v = v.trim();
            let lower = v.to_ascii_lowercase();
            if [
                "qemu",
                "kvm",
                "vmware",
                "virtualbox",
                "xen",
                "amazon ec2",
                "google compute",
                "microsoft corporation",
                "cloud hypervisor",
            ]
            .iter()
            .any(|h| lower.contains(h))
            {
                return Some(format!("DMI {file} = {v}"));
            }
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Fake sysfs trees (the test kit's [`FakeSysfs`]) shaped like the machines the tests need.
    pub use culprit_testkit::FakeSysfs;

    /// The machines collect's tests fake.
    pub trait FakeMachines {
        /// An AMD Zen-like tree: cpu (type 4), ibs_op, ibs_fetch, software, msr.
        fn amd() -> FakeSysfs {
            let s = FakeSysfs::empty();
            s.pmu(
                "cpu",
                4,
                &[
                    ("event", "config:0-7,32-35"),
                    ("umask", "config:8-15"),
                    ("edge", "config:18"),
                    ("inv", "config:23"),
                    ("cmask", "config:24-31"),
                ],
                &[
                    ("cpu-cycles", "event=0x76"),
                    ("instructions", "event=0xc0"),
                    ("cache-misses", "event=0x64,umask=0x09"),
                    ("branch-instructions", "event=0xc2"),
                ],
                // As on real AMD: no PEBS, so 0; precision comes from IBS.
                &[("max_precise", "0")],
            )
            .pmu(
                "ibs_op",
                11,
                &[
                    ("cnt_ctl", "config:19"),
                    ("l3missonly", "config:16"),
                    ("ldlat", "config1:0-11"),
                    ("swfilt", "config2:0"),
                ],
                &[],
                &[("zen4_ibs_extensions", "1"), ("ldlat", "1")],
            )
            .pmu(
                "ibs_fetch",
                10,
                &[("rand_en", "config:57"), ("l3missonly", "config:59")],
                &[],
                &[("zen4_ibs_extensions", "1")],
            )
            .pmu("software", 1, &[], &[], &[])
            .pmu(
                "msr",
                12,
                &[("event", "config:0-63")],
                &[("tsc", "event=0x00"), ("smi", "event=0x04")],
                &[],
            );
            s
        }

        /// A tree like this development VM: no cpu PMU, only software ones.
        fn no_hw() -> FakeSysfs {
            let s = FakeSysfs::empty();
            s.pmu("software", 1, &[], &[], &[])
                .pmu("tracepoint", 2, &[], &[], &[])
                .pmu(
                    "msr",
                    10,
                    &[("event", "config:0-63")],
                    &[("tsc", "event=0x00")],
                    &[],
                );
            s
        }
    }

    impl FakeMachines for FakeSysfs {}
}

#[cfg(test)]
mod tests {
    use super::testutil::{FakeMachines, FakeSysfs};
    use super::*;

    #[test]
    fn test_parse_perf_cpuid() {
        let c = parse_perf_cpuid("GenuineIntel-6-55-4").unwrap();
        assert_eq!(
            (c.vendor.as_str(), c.family, c.model),
            ("GenuineIntel", 6, 0x55)
        );
        let c = parse_perf_cpuid("AuthenticAMD-25-11").unwrap();
        assert_eq!((c.family, c.model), (25, 0x11));
        assert!(c.is_amd());
        assert!(parse_perf_cpuid("GenuineIntel").is_none());
        assert!(parse_perf_cpuid("x-y-z").is_none());
    }

    #[test]
    fn test_format_parse_split_range() {
        let f = FormatField::parse("event", "config:0-7,32-35\n").unwrap();
        assert_eq!(f.word, ConfigWord::Config);
        assert_eq!(f.ranges, vec![(0, 7), (32, 35)]);
        assert_eq!(f.width(), 12);
        assert_eq!(f.max_value(), 0xFFF);
        assert_eq!(f.spec(), "config:0-7,32-35");
        // 0x1A0: low byte 0xA0 to bits 0-7, high nibble 1 to bit 32.
        let (mask, bits) = f.place(0x1A0).unwrap();
        assert_eq!(bits, 0x1_0000_00A0);
        assert_eq!(mask, 0xF_0000_00FF);
        assert_eq!(f.place(0x1000), None);
    }

    #[test]
    fn test_format_parse_single_bit_and_config1() {
        let f = FormatField::parse("cnt_ctl", "config:19").unwrap();
        assert_eq!(f.place(1), Some((1 << 19, 1 << 19)));
        assert_eq!(f.place(2), None);
        let f = FormatField::parse("ldlat", "config1:0-11").unwrap();
        assert_eq!(f.word, ConfigWord::Config1);
        assert_eq!(f.place(0xFFF), Some((0xFFF, 0xFFF)));
        let f = FormatField::parse("event", "config:0-63").unwrap();
        assert_eq!(f.place(u64::MAX), Some((u64::MAX, u64::MAX)));
    }

    #[test]
    fn test_format_parse_rejects_garbage() {
        assert!(FormatField::parse("x", "config").is_err());
        assert!(FormatField::parse("x", "config9:1").is_err());
        assert!(FormatField::parse("x", "config:7-3").is_err());
        assert!(FormatField::parse("x", "config:0-64").is_err());
        assert!(FormatField::parse("x", "config:a").is_err());
    }

    #[test]
    fn test_sysfs_reads_fake_amd_tree() {
        let fake = FakeSysfs::amd();
        let sysfs = Sysfs::at(&fake.root);
        assert_eq!(
            sysfs.pmu_names(),
            vec!["cpu", "ibs_fetch", "ibs_op", "msr", "software"]
        );
        let cpu = sysfs.pmu("cpu").unwrap().unwrap();
        assert_eq!(cpu.attr_type, 4);
        assert_eq!(cpu.formats.len(), 5);
        assert_eq!(cpu.format("umask").unwrap().ranges, vec![(8, 15)]);
        assert_eq!(
            cpu.alias("cache-misses").unwrap().terms,
            "event=0x64,umask=0x09"
        );
        assert_eq!(cpu.cap("max_precise"), Some("0"));
        assert!(sysfs.pmu("nope").unwrap().is_none());
        assert!(sysfs.pmu("../etc").unwrap().is_none());
    }

    #[test]
    fn test_sysfs_bad_type_is_error() {
        let fake = FakeSysfs::empty();
        fake.pmu("weird", 0, &[], &[], &[]);
        std::fs::write(fake.root.join("weird/type"), "abc\n").unwrap();
        let err = Sysfs::at(&fake.root).pmu("weird").unwrap_err();
        assert!(err.to_string().contains("not a decimal u32"), "{err}");
    }

    #[test]
    fn test_parse_cpuinfo_amd_zen5() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\
                    model name\t: AMD EPYC 9R45\nflags\t\t: fpu vme hypervisor lahf_lm\n\n\
                    processor\t: 1\nvendor_id\t: GenuineIntel\n";
        let id = parse_cpuinfo(text).unwrap();
        assert_eq!(id.vendor, "AuthenticAMD");
        assert_eq!(id.family, 0x1A);
        assert_eq!(id.model, 2);
        assert!(id.hypervisor);
        assert!(id.is_amd());
        assert_eq!(id.model_name, "AMD EPYC 9R45");
        assert!(parse_cpuinfo("processor: 0\n").is_none());
    }
}
