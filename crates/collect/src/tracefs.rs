//! The kernel's tracing file system: tracepoint ids and formats
//! (`/sys/kernel/tracing/events/SYSTEM/NAME/{id,format}`, or under
//! `/sys/kernel/debug/tracing` on older systems), `SYSTEM:NAME` wildcards, and the tracing
//! data perf saves in a recording (HEADER_TRACING_DATA, or a pipe's TRACING_DATA record) so
//! that readers decode the raw records with the formats of the machine that recorded them.
//!
//! The tracing data's layout, as perf's `tools/perf/util/trace-event-info.c` writes it
//! (version 0.6; integers in the host's byte order): the magic `"\x17\x08\x44tracing"`,
//! `"0.6\0"`, one byte big-endian flag, one byte `sizeof(long)`, u32 page size;
//! `"header_page\0"` + u64 size + `events/header_page`; `"header_event\0"` + u64 size +
//! `events/header_event`; u32 count of ftrace formats (0: no `ftrace:` events are
//! recorded); u32 count of systems, each its NUL-terminated name, u32 count of formats and
//! each format as u64 size + text; u32 size of kallsyms (0, as perf writes since 5.19);
//! u32 size + `printk_formats`; u64 size + `saved_cmdlines`.

use std::path::{Path, PathBuf};

use culprit_decode::tracepoint::{self, TracepointFormat};

use crate::live::events::glob_match;

/// A tracing file system (its root holds `events/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

/// The places tracefs is mounted, newest first (perf looks in the same ones).
const ROOTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Why a tracepoint cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TracefsError {
    /// No tracefs with an `events` directory.
    #[error("tracepoint `{event}`: the tracing file system is not mounted (looked in {}); mount it with `mount -t tracefs nodev /sys/kernel/tracing`", ROOTS.join(" and "))]
    NotMounted {
        /// The event asked for.
        event: String,
    },
    /// No tracepoint of that name (or no match for a pattern).
    #[error("unknown tracepoint `{event}`{}; the tracepoints are listed in {root}/available_events (`perf list tracepoint`)", suggest(.suggestions))]
    Unknown {
        /// The event asked for.
        event: String,
        /// Up to three close names.
        suggestions: Vec<String>,
        /// The tracefs root.
        root: String,
    },
    /// A file of the tracepoint could not be read (permissions: tracefs is root's).
    #[error("tracepoint `{event}`: cannot read {path}: {message}{}", if *.denied { " (tracefs is readable by root only: run as root, or `chmod -R o+rx` it)" } else { "" })]
    Unreadable {
        /// The event.
        event: String,
        /// The file.
        path: String,
        /// The OS error.
        message: String,
        /// Permission denied.
        denied: bool,
    },
    /// The format file does not parse.
    #[error("tracepoint `{event}`: {path} is not a format file culprit can read")]
    BadFormat {
        /// The event.
        event: String,
        /// The file.
        path: String,
    },
}

fn suggest(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", names.join(", "))
    }
}

/// Reads a tracefs file whole. Some of them (`events/header_page`) answer a short first read
/// and then end-of-file, so they are read as perf does: large reads until one returns 0.
fn read_whole(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether an event string has the shape of a tracepoint, `SYSTEM:NAME` (either part may
/// hold `*` and `?`): returns the two parts. `cycles:u`, `cpu/…/:p` and other events with
/// perf's modifier letters after the colon are not tracepoints.
pub fn split_tracepoint(event: &str) -> Option<(&str, &str)> {
    let (sys, name) = event.trim().split_once(':')?;
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'*' | b'?'))
    };
    if !word(sys) || !word(name) || name.contains(':') {
        return None;
    }
    // `cycles:u`, `cpu-clock:ppp`, `instructions:uk`: modifiers, not a tracepoint name.
    let modifiers = name.len() <= 6 && name.chars().all(|c| "ukhpPGHISDWebR".contains(c));
    (!modifiers).then_some((sys, name))
}

impl Tracefs {
    /// The running system's tracefs, if mounted.
    pub fn system() -> Option<Tracefs> {
        ROOTS
            .iter()
            .map(Path::new)
            .find(|r| r.join("events").is_dir())
            .map(|r| Tracefs {
                root: r.to_path_buf(),
            })
    }

    /// A tracefs rooted at `root` (tests use a directory of format files).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn unreadable(event: &str, path: &Path, e: &std::io::Error) -> TracefsError {
        TracefsError::Unreadable {
            event: event.to_string(),
            path: path.display().to_string(),
            message: e.to_string(),
            denied: e.kind() == std::io::ErrorKind::PermissionDenied,
        }
    }

    /// The tracepoints matching `SYSTEM:NAME` (`*` and `?` in either part), as (system,
    /// name) sorted by system then name; an error names close tracepoints when nothing
    /// matches.
    pub fn expand(&self, pattern: &str) -> Result<Vec<(String, String)>, TracefsError> {
        let (sp, np) = split_tracepoint(pattern).ok_or_else(|| TracefsError::Unknown {
            event: pattern.to_string(),
            suggestions: Vec::new(),
            root: self.root.display().to_string(),
        })?;
        let events = self.root.join("events");
        let dirs = |p: &Path| -> Result<Vec<String>, TracefsError> {
            let rd = std::fs::read_dir(p).map_err(|e| Self::unreadable(pattern, p, &e))?;
            let mut names: Vec<String> = rd
                .filter_map(Result::ok)
                .filter(|d| d.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|d| d.file_name().into_string().ok())
                .collect();
            names.sort();
            Ok(names)
        };
        let has_id = |sys: &str, name: &str| events.join(sys).join(name).join("id").is_file();
        let systems = dirs(&events)?;
        let mut out = Vec::new();
        for sys in systems
            .iter()
            .filter(|s| glob_match(sp.as_bytes(), s.as_bytes()))
        {
            for name in dirs(&events.join(sys)).unwrap_or_default() {
                if glob_match(np.as_bytes(), name.as_bytes()) && has_id(sys, &name) {
                    out.push((sys.clone(), name));
                }
            }
        }
        if out.is_empty() {
            // Every tracepoint, for the names closest to the one asked for.
            let mut all = Vec::new();
            for sys in &systems {
                for name in dirs(&events.join(sys)).unwrap_or_default() {
                    if has_id(sys, &name) {
                        all.push(format!("{sys}:{name}"));
                    }
                }
            }
            return Err(TracefsError::Unknown {
                event: pattern.to_string(),
                suggestions: crate::events::suggest::closest(
                    pattern,
                    all.iter().map(String::as_str),
                ),
                root: self.root.display().to_string(),
            });
        }
        Ok(out)
    }

    /// A tracepoint's id (`perf_event_attr.config`).
    pub fn id(&self, system: &str, name: &str) -> Result<u64, TracefsError> {
        let event = format!("{system}:{name}");
        let path = self.root.join("events").join(system).join(name).join("id");
        let text = read_whole(&path).map_err(|e| Self::unreadable(&event, &path, &e))?;
        String::from_utf8_lossy(&text)
            .trim()
            .parse()
            .map_err(|_| TracefsError::BadFormat {
                event,
                path: path.display().to_string(),
            })
    }

    /// The text of a tracepoint's format file.
    pub fn format_text(&self, system: &str, name: &str) -> Result<Vec<u8>, TracefsError> {
        let path = self
            .root
            .join("events")
            .join(system)
            .join(name)
            .join("format");
        read_whole(&path).map_err(|e| Self::unreadable(&format!("{system}:{name}"), &path, &e))
    }

    /// A tracepoint's parsed format (fields, offsets, sizes), in this machine's byte order.
    pub fn format(&self, system: &str, name: &str) -> Result<TracepointFormat, TracefsError> {
        let text = self.format_text(system, name)?;
        tracepoint::parse_format(system, &text, cfg!(target_endian = "big")).ok_or_else(|| {
            TracefsError::BadFormat {
                event: format!("{system}:{name}"),
                path: self
                    .root
                    .join("events")
                    .join(system)
                    .join(name)
                    .join("format")
                    .display()
                    .to_string(),
            }
        })
    }

    /// The formats of every tracepoint matching the patterns (`sched:sched_switch`,
    /// `syscalls:sys_enter_*`).
    pub fn formats(&self, patterns: &[String]) -> Result<Vec<TracepointFormat>, TracefsError> {
        let mut out: Vec<TracepointFormat> = Vec::new();
        for p in patterns {
            for (sys, name) in self.expand(p)? {
                if !out.iter().any(|f| f.system == sys && f.name == name) {
                    out.push(self.format(&sys, &name)?);
                }
            }
        }
        Ok(out)
    }

    /// The tracing data for the given tracepoints (system, name), laid out as perf writes
    /// it (module docs); the events' format files are grouped by system in first-seen order.
    pub fn tracing_data(&self, events: &[(String, String)]) -> Result<Vec<u8>, TracefsError> {
        let read_or_empty = |rel: &str| read_whole(&self.root.join(rel)).unwrap_or_default();
        let mut out = b"\x17\x08\x44tracing".to_vec();
        out.extend_from_slice(b"0.6\0");
        out.push(u8::from(cfg!(target_endian = "big")));
        out.push(std::mem::size_of::<libc::c_long>() as u8);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u32;
        out.extend_from_slice(&page.to_ne_bytes());
        for (label, rel) in [
            ("header_page", "events/header_page"),
            ("header_event", "events/header_event"),
        ] {
            let text = read_or_empty(rel);
            out.extend_from_slice(label.as_bytes());
            out.push(0);
            out.extend_from_slice(&(text.len() as u64).to_ne_bytes());
            out.extend_from_slice(&text);
        }
        out.extend_from_slice(&0u32.to_ne_bytes()); // ftrace formats: none recorded
        let mut systems: Vec<(&str, Vec<&str>)> = Vec::new();
        for (sys, name) in events {
            match systems.iter_mut().find(|(s, _)| s == sys) {
                Some((_, names)) if !names.contains(&name.as_str()) => names.push(name),
                Some(_) => {}
                None => systems.push((sys, vec![name])),
            }
        }
        out.extend_from_slice(&(systems.len() as u32).to_ne_bytes());
        for (sys, names) in &systems {
            out.extend_from_slice(sys.as_bytes());
            out.push(0);
            out.extend_from_slice(&(names.len() as u32).to_ne_bytes());
            for name in names {
                let text = self.format_text(sys, name)?;
                out.extend_from_slice(&(text.len() as u64).to_ne_bytes());
                out.extend_from_slice(&text);
            }
        }
        // kallsyms: empty, as perf writes it (readers take symbols from elsewhere).
        out.extend_from_slice(&0u32.to_ne_bytes());
        let printk = read_or_empty("printk_formats");
        out.extend_from_slice(&(printk.len() as u32).to_ne_bytes());
        out.extend_from_slice(&printk);
        let cmdlines = read_or_empty("saved_cmdlines");
        out.extend_from_slice(&(cmdlines.len() as u64).to_ne_bytes());
        out.extend_from_slice(&cmdlines);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\n\
        print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    /// A tracefs tree with sched:sched_switch, sched:sched_wakeup and two syscalls.
    fn tree(name: &str) -> Tracefs {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-tracefs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let ev = root.join("events");
        for (sys, n, id) in [
            ("sched", "sched_switch", 316),
            ("sched", "sched_wakeup", 317),
            ("syscalls", "sys_enter_read", 600),
            ("syscalls", "sys_enter_write", 601),
        ] {
            let d = ev.join(sys).join(n);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("id"), format!("{id}\n")).unwrap();
            let fmt = SWITCH
                .replace("sched_switch", n)
                .replace("316", &id.to_string());
            std::fs::write(d.join("format"), fmt).unwrap();
        }
        std::fs::write(ev.join("header_page"), "page\n").unwrap();
        std::fs::write(ev.join("header_event"), "event\n").unwrap();
        std::fs::write(root.join("printk_formats"), "0x1 : \"x\"\n").unwrap();
        std::fs::write(root.join("saved_cmdlines"), "1 init\n").unwrap();
        Tracefs::at(root)
    }

    #[test]
    fn test_split_tracepoint_shapes() {
        assert_eq!(
            split_tracepoint("sched:sched_switch"),
            Some(("sched", "sched_switch"))
        );
        assert_eq!(
            split_tracepoint("syscalls:sys_enter_*"),
            Some(("syscalls", "sys_enter_*"))
        );
        for not in [
            "cycles:u",
            "cpu-clock:ppp",
            "cycles",
            "cpu/event=1/:p",
            "a:b:c",
            ":x",
        ] {
            assert_eq!(split_tracepoint(not), None, "{not}");
        }
    }

    #[test]
    fn test_expand_ids_and_unknown_names() {
        let t = tree("expand");
        assert_eq!(
            t.expand("syscalls:sys_enter_*").unwrap(),
            [
                ("syscalls".to_string(), "sys_enter_read".to_string()),
                ("syscalls".to_string(), "sys_enter_write".to_string())
            ]
        );
        assert_eq!(t.expand("*:sched_w*").unwrap().len(), 1);
        assert_eq!(t.id("sched", "sched_wakeup").unwrap(), 317);
        let e = t.expand("sched:sched_swich").unwrap_err().to_string();
        assert!(e.contains("unknown tracepoint `sched:sched_swich`"), "{e}");
        assert!(e.contains("sched:sched_switch"), "{e}");
        let f = t.format("sched", "sched_switch").unwrap();
        assert_eq!(f.id, 316);
        assert_eq!(f.own_fields().count(), 3);
    }

    #[test]
    fn test_tracing_data_reads_back_with_decode() {
        let t = tree("data");
        let events = t.expand("syscalls:*").unwrap();
        let mut events = [
            vec![("sched".to_string(), "sched_switch".to_string())],
            events,
        ]
        .concat();
        events.push(("sched".into(), "sched_switch".into())); // a duplicate is written once
        let data = t.tracing_data(&events).unwrap();
        let formats = tracepoint::parse_tracing_data(&data).unwrap();
        let names: Vec<(u64, String)> = formats.iter().map(|f| (f.id, f.full_name())).collect();
        assert_eq!(
            names,
            [
                (316, "sched:sched_switch".to_string()),
                (600, "syscalls:sys_enter_read".to_string()),
                (601, "syscalls:sys_enter_write".to_string())
            ]
        );
    }
}
