//! Facts read from /proc and /sys for the recorder: online CPUs, processes' threads, names and
//! executable mappings (to synthesize COMM/MMAP2 for state that existed before recording, as
//! perf does), the kernel text range, and the host description for the perf.data header.

use std::fs;
use std::path::Path;

use crate::perfdata::{CpuTopology, Features};

/// Parses a CPU list such as `0-3,8,10-11` (sysfs `online`, or `-C`). `None` if malformed.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 65_536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    if cpus.is_empty() {
        return None;
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Online CPUs (from /sys/devices/system/cpu/online; all of 0..nproc if unreadable).
pub fn online_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(|| {
            // SAFETY: sysconf has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
            (0..n).collect()
        })
}

/// Thread ids of a process (from /proc/PID/task); empty if the process is gone.
pub fn threads(pid: i32) -> Vec<i32> {
    let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// All process ids in /proc.
pub fn all_pids() -> Vec<i32> {
    let mut pids: Vec<i32> = fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// A thread's name (`/proc/PID/task/TID/comm`), without the newline.
pub fn comm(pid: i32, tid: i32) -> Option<String> {
    let s = fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    Some(s.trim_end_matches('\n').to_string())
}

/// Whether a process exists (it may be a zombie).
pub fn process_exists(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether a process exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the last ')' of the comm field.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// `PROT_*` bits from the `rwx` letters.
    pub prot: u32,
    /// `MAP_PRIVATE` or `MAP_SHARED` from the `p`/`s` letter.
    pub flags: u32,
    /// File offset.
    pub pgoff: u64,
    /// Device major.
    pub maj: u32,
    /// Device minor.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// Path (empty for anonymous mappings).
    pub path: String,
}

impl MapEntry {
    /// Whether the mapping is executable.
    pub fn is_exec(&self) -> bool {
        self.prot & libc::PROT_EXEC as u32 != 0
    }
}

/// Parses one /proc/PID/maps line.
pub fn parse_maps_line(line: &str) -> Option<MapEntry> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?;
    let off = it.next()?;
    let dev = it.next()?;
    let ino = it.next()?;
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    let p = perms.as_bytes();
    let mut prot = 0u32;
    for (i, (ch, bit)) in [
        (b'r', libc::PROT_READ),
        (b'w', libc::PROT_WRITE),
        (b'x', libc::PROT_EXEC),
    ]
    .iter()
    .enumerate()
    {
        if p.get(i) == Some(ch) {
            prot |= *bit as u32;
        }
    }
    let flags = if p.get(3) == Some(&b's') {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    Some(MapEntry {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot,
        flags,
        pgoff: u64::from_str_radix(off, 16).ok()?,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino: ino.parse().ok()?,
        path,
    })
}

/// The mappings of a process (empty if it is gone or unreadable).
pub fn maps(pid: i32) -> Vec<MapEntry> {
    fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|s| s.lines().filter_map(parse_maps_line).collect())
        .unwrap_or_default()
}

/// The kernel text range for the synthesized kernel MMAP: `(address of _text, end)`.
/// `None` when kallsyms hides addresses (kptr_restrict) or is unreadable.
///
/// Only the head of /proc/kallsyms is read (`_text` is among its first lines; reading the
/// whole file to reach `_etext` costs ~90 ms of kernel time), so the end is the end of the
/// address space, as perf writes when it does not know the kernel map's end.
pub fn kernel_text_range() -> Option<(u64, u64)> {
    use std::io::BufRead;
    let f = fs::File::open("/proc/kallsyms").ok()?;
    let mut head = String::new();
    for line in std::io::BufReader::new(f).lines().take(4096) {
        let line = line.ok()?;
        let is_text = line.ends_with(" _text");
        head.push_str(&line);
        head.push('\n');
        if is_text {
            break;
        }
    }
    parse_kallsyms_text(&head)
}

/// The `_text`/`_etext` range from kallsyms text; the end is `u64::MAX` when `_etext` is not
/// in `s`.
pub fn parse_kallsyms_text(s: &str) -> Option<(u64, u64)> {
    let mut text = None;
    let mut etext = None;
    for line in s.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if it.next().is_some() {
            continue; // module symbols have a fourth column
        }
        match name {
            "_text" => text = u64::from_str_radix(addr, 16).ok(),
            "_etext" => etext = u64::from_str_radix(addr, 16).ok(),
            _ => {}
        }
        if text.is_some() && etext.is_some() {
            break;
        }
    }
    let start = text.filter(|&a| a != 0)?;
    let end = etext.filter(|&e| e > start).unwrap_or(u64::MAX);
    Some((start, end))
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// `kernel.perf_event_paranoid`.
pub fn perf_event_paranoid() -> Option<i32> {
    read_trim("/proc/sys/kernel/perf_event_paranoid")?
        .parse()
        .ok()
}

/// `kernel.perf_event_max_sample_rate`.
pub fn max_sample_rate() -> Option<u64> {
    read_trim("/proc/sys/kernel/perf_event_max_sample_rate")?
        .parse()
        .ok()
}

/// x86 CPU identity from /proc/cpuinfo text: (cpuid string as perf writes it, model name).
pub fn parse_cpuinfo(s: &str) -> (Option<String>, Option<String>) {
    let mut vendor = None;
    let mut family = None;
    let mut model = None;
    let mut stepping = None;
    let mut name = None;
    for line in s.lines() {
        if line.trim().is_empty() && vendor.is_some() {
            break; // the first processor block is enough
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k.trim() {
            "vendor_id" => vendor = Some(v),
            "cpu family" => family = Some(v),
            "model" => model = Some(v),
            "stepping" => stepping = Some(v),
            "model name" => name = Some(v),
            _ => {}
        }
    }
    let cpuid = match (vendor, family, model, stepping) {
        (Some(v), Some(f), Some(m), Some(s)) => Some(format!("{v},{f},{m},{s}")),
        _ => None,
    };
    (cpuid, name)
}

fn uname_machine() -> Option<String> {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname to write into.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .machine
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(bytes).ok()
}

/// PMU name → type from /sys/bus/event_source/devices/*/type.
pub fn pmu_mappings() -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name().to_str()?.to_string();
                let t = read_trim(e.path().join("type"))?.parse().ok()?;
                Some((t, name))
            })
            .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Capabilities of a PMU (`caps/` files), sorted by name.
pub fn pmu_caps(pmu: &str) -> Vec<(String, String)> {
    let mut caps: Vec<(String, String)> =
        fs::read_dir(format!("/sys/bus/event_source/devices/{pmu}/caps"))
            .map(|d| {
                d.filter_map(|e| {
                    let e = e.ok()?;
                    Some((e.file_name().to_str()?.to_string(), read_trim(e.path())?))
                })
                .collect()
            })
            .unwrap_or_default();
    caps.sort();
    caps
}

fn cpu_topology(online: &[u32], avail: u32) -> Option<CpuTopology> {
    let mut t = CpuTopology::default();
    // perf reads exactly nr_cpus_avail (core, socket) pairs.
    for cpu in 0..avail {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let core = read_trim(format!("{dir}/core_id")).and_then(|s| s.parse().ok());
        let socket = read_trim(format!("{dir}/physical_package_id")).and_then(|s| s.parse().ok());
        t.cpus
            .push((core.unwrap_or(u32::MAX), socket.unwrap_or(u32::MAX)));
        if !online.contains(&cpu) {
            continue;
        }
        if let Some(s) = read_trim(format!("{dir}/core_siblings_list")) {
            if !t.core_siblings.contains(&s) {
                t.core_siblings.push(s);
            }
        }
        if let Some(s) = read_trim(format!("{dir}/thread_siblings_list")) {
            if !t.thread_siblings.contains(&s) {
                t.thread_siblings.push(s);
            }
        }
    }
    if t.core_siblings.is_empty() || t.thread_siblings.is_empty() {
        return None;
    }
    Some(t)
}

/// The host description for the perf.data header (everything but build ids, sample times and
/// the command line, which the recorder fills in).
pub fn host_features() -> Features {
    let online = online_cpus();
    let avail = fs::read_to_string("/sys/devices/system/cpu/present")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .map(|c| c.iter().max().map_or(0, |m| m + 1))
        .unwrap_or(online.len() as u32);
    let (cpuid, cpudesc) = fs::read_to_string("/proc/cpuinfo")
        .map(|s| parse_cpuinfo(&s))
        .unwrap_or((None, None));
    let total_mem_kb = fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    });
    let pmus = pmu_mappings();
    let cpu_caps = pmu_caps("cpu");
    let pmu_caps_list = pmus
        .iter()
        .filter(|(_, n)| n != "cpu")
        .map(|(_, n)| (n.clone(), pmu_caps(n)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    Features {
        hostname: read_trim("/proc/sys/kernel/hostname"),
        osrelease: read_trim("/proc/sys/kernel/osrelease"),
        arch: uname_machine(),
        nrcpus: Some((avail.max(online.len() as u32), online.len() as u32)),
        cpudesc,
        cpuid,
        total_mem_kb,
        cpu_topology: cpu_topology(&online, avail.max(online.len() as u32)),
        pmu_mappings: pmus,
        cpu_pmu_caps: if cpu_caps.is_empty() {
            None
        } else {
            Some(cpu_caps)
        },
        pmu_caps: pmu_caps_list,
        ..Features::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_cpu_list_ranges_and_errors() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list(""), None);
    }

    #[test]
    fn test_parse_maps_line_exec_file_and_anon() {
        let m = parse_maps_line(
            "7f12a000-7f12c000 r-xp 00002000 08:01 131090                     /usr/lib/libc.so.6",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.pgoff, m.maj, m.min, m.ino),
            (0x7f12a000, 0x7f12c000, 0x2000, 8, 1, 131090)
        );
        assert!(m.is_exec());
        assert_eq!(m.path, "/usr/lib/libc.so.6");
        assert_eq!(m.flags, libc::MAP_PRIVATE as u32);
        let a = parse_maps_line("7ffd1000-7ffd3000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(!a.is_exec());
        assert_eq!(a.path, "");
        assert_eq!(a.flags, libc::MAP_SHARED as u32);
        assert!(parse_maps_line("garbage").is_none());
    }

    #[test]
    fn test_parse_kallsyms_text_and_hidden() {
        let s = "ffffffff81000000 T _text\nffffffff81000100 T foo\nffffffff82000000 T _etext\nffffffffc0000000 t m [mod]\n";
        assert_eq!(
            parse_kallsyms_text(s),
            Some((0xffffffff81000000, 0xffffffff82000000))
        );
        assert_eq!(parse_kallsyms_text("0000000000000000 T _text\n"), None);
        assert_eq!(
            parse_kallsyms_text("ffffffff81000000 T _text\n"),
            Some((0xffffffff81000000, u64::MAX))
        );
    }

    #[test]
    fn test_parse_cpuinfo_perf_cpuid_string() {
        let s = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9B45\nstepping\t: 0\n\nprocessor\t: 1\n";
        let (id, name) = parse_cpuinfo(s);
        assert_eq!(id.as_deref(), Some("AuthenticAMD,26,17,0"));
        assert_eq!(name.as_deref(), Some("AMD EPYC 9B45"));
    }
}
