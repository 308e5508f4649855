//! `-vv`: every `perf_event_attr` on stderr before it is opened, in perf 6.1's layout
//! (`tools/perf/util/perf_event_attr_fprintf.c` and `display_attr()` in `util/evsel.c`), so
//! that a reader can hold culprit's attrs against `perf record -vv` line by line:
//!
//! ```text
//! ------------------------------------------------------------
//! perf_event_attr:
//!   type                             4
//!   size                             128
//!   config                           0x1cd
//!   ...
//! ------------------------------------------------------------
//! sys_perf_event_open: pid 1234  cpu 0  group_fd -1  flags 0x8 = 5
//! ```
//!
//! perf's rules, kept here: only non-zero fields are printed, in the struct's order; `config`,
//! `config1`/`bp_addr`, `config2`/`bp_len` and the register masks are `%#x` hex, the rest
//! decimal; `sample_type`, `read_format` and `branch_sample_type` are `|`-joined flag names in
//! perf's (not the bits') order. The verbosity is process-wide: `culprit top` opens its events
//! on a recorder thread.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::perfdata::ATTR_SIZE;

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Sets the verbosity (the number of `-v`); 2 and more print every attr before it is opened.
pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// The verbosity set with [`set_level`].
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Whether attrs and opens are printed (`-vv`).
pub fn shows_attrs() -> bool {
    level() >= 2
}

/// perf's `graph_dotted_line` cut to 60 characters (it is made of dashes).
const DOTTED_LINE: &str = "------------------------------------------------------------";

/// `PERF_SAMPLE_*` names in perf's order (its table, not the bit order; TRANSACTION is not in
/// it, as in perf 6.1).
const SAMPLE_TYPE_NAMES: &[(u64, &str)] = &[
    (1 << 0, "IP"),
    (1 << 1, "TID"),
    (1 << 2, "TIME"),
    (1 << 3, "ADDR"),
    (1 << 4, "READ"),
    (1 << 5, "CALLCHAIN"),
    (1 << 6, "ID"),
    (1 << 7, "CPU"),
    (1 << 8, "PERIOD"),
    (1 << 9, "STREAM_ID"),
    (1 << 10, "RAW"),
    (1 << 11, "BRANCH_STACK"),
    (1 << 12, "REGS_USER"),
    (1 << 13, "STACK_USER"),
    (1 << 16, "IDENTIFIER"),
    (1 << 18, "REGS_INTR"),
    (1 << 15, "DATA_SRC"),
    (1 << 14, "WEIGHT"),
    (1 << 19, "PHYS_ADDR"),
    (1 << 20, "AUX"),
    (1 << 21, "CGROUP"),
    (1 << 22, "DATA_PAGE_SIZE"),
    (1 << 23, "CODE_PAGE_SIZE"),
    (1 << 24, "WEIGHT_STRUCT"),
];

/// `PERF_SAMPLE_BRANCH_*` names in perf's order.
const BRANCH_SAMPLE_TYPE_NAMES: &[(u64, &str)] = &[
    (1 << 0, "USER"),
    (1 << 1, "KERNEL"),
    (1 << 2, "HV"),
    (1 << 3, "ANY"),
    (1 << 4, "ANY_CALL"),
    (1 << 5, "ANY_RETURN"),
    (1 << 6, "IND_CALL"),
    (1 << 7, "ABORT_TX"),
    (1 << 8, "IN_TX"),
    (1 << 9, "NO_TX"),
    (1 << 10, "COND"),
    (1 << 11, "CALL_STACK"),
    (1 << 12, "IND_JUMP"),
    (1 << 13, "CALL"),
    (1 << 14, "NO_FLAGS"),
    (1 << 15, "NO_CYCLES"),
    (1 << 16, "TYPE_SAVE"),
    (1 << 17, "HW_INDEX"),
    (1 << 18, "PRIV_SAVE"),
];

/// `PERF_FORMAT_*` names.
const READ_FORMAT_NAMES: &[(u64, &str)] = &[
    (1 << 0, "TOTAL_TIME_ENABLED"),
    (1 << 1, "TOTAL_TIME_RUNNING"),
    (1 << 2, "ID"),
    (1 << 3, "GROUP"),
    (1 << 4, "LOST"),
];

/// The bitfield word's fields (offset 40), bit and width, in the struct's (and perf's
/// printing) order.
const FLAG_FIELDS: &[(&str, u32, u32)] = &[
    ("disabled", 0, 1),
    ("inherit", 1, 1),
    ("pinned", 2, 1),
    ("exclusive", 3, 1),
    ("exclude_user", 4, 1),
    ("exclude_kernel", 5, 1),
    ("exclude_hv", 6, 1),
    ("exclude_idle", 7, 1),
    ("mmap", 8, 1),
    ("comm", 9, 1),
    ("freq", 10, 1),
    ("inherit_stat", 11, 1),
    ("enable_on_exec", 12, 1),
    ("task", 13, 1),
    ("watermark", 14, 1),
    ("precise_ip", 15, 2),
    ("mmap_data", 17, 1),
    ("sample_id_all", 18, 1),
    ("exclude_host", 19, 1),
    ("exclude_guest", 20, 1),
    ("exclude_callchain_kernel", 21, 1),
    ("exclude_callchain_user", 22, 1),
    ("mmap2", 23, 1),
    ("comm_exec", 24, 1),
    ("use_clockid", 25, 1),
    ("context_switch", 26, 1),
    ("write_backward", 27, 1),
    ("namespaces", 28, 1),
    ("ksymbol", 29, 1),
    ("bpf_event", 30, 1),
    ("aux_output", 31, 1),
    ("cgroup", 32, 1),
    ("text_poke", 33, 1),
    ("build_id", 34, 1),
    ("inherit_thread", 35, 1),
    ("remove_on_exec", 36, 1),
    ("sigtrap", 37, 1),
];

/// How perf prints one field's value.
#[derive(Clone, Copy)]
enum Style {
    Unsigned,
    Signed,
    Hex,
    SampleType,
    ReadFormat,
    BranchSampleType,
}

/// A field of the struct after the bitfield word: printed name, offset, width in bytes, style.
type Field = (&'static str, usize, usize, Style);

/// The fields before the bitfield word.
const HEAD_FIELDS: &[Field] = &[
    ("type", 0, 4, Style::Unsigned),
    ("size", 4, 4, Style::Unsigned),
    ("config", 8, 8, Style::Hex),
    ("{ sample_period, sample_freq }", 16, 8, Style::Unsigned),
    ("sample_type", 24, 8, Style::SampleType),
    ("read_format", 32, 8, Style::ReadFormat),
];

/// The fields after the bitfield word.
const TAIL_FIELDS: &[Field] = &[
    (
        "{ wakeup_events, wakeup_watermark }",
        48,
        4,
        Style::Unsigned,
    ),
    ("bp_type", 52, 4, Style::Unsigned),
    ("{ bp_addr, config1 }", 56, 8, Style::Hex),
    ("{ bp_len, config2 }", 64, 8, Style::Hex),
    ("branch_sample_type", 72, 8, Style::BranchSampleType),
    ("sample_regs_user", 80, 8, Style::Hex),
    ("sample_stack_user", 88, 4, Style::Unsigned),
    ("clockid", 92, 4, Style::Signed),
    ("sample_regs_intr", 96, 8, Style::Hex),
    ("aux_watermark", 104, 4, Style::Unsigned),
    ("sample_max_stack", 108, 2, Style::Unsigned),
    ("aux_sample_size", 112, 4, Style::Unsigned),
    ("sig_data", 120, 8, Style::Unsigned),
];

/// A little-endian unsigned field of `width` bytes at `off` (0 past the end).
fn read_field(b: &[u8], off: usize, width: usize) -> u64 {
    let Some(bytes) = b.get(off..off + width) else {
        return 0;
    };
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte))
}

/// `A|B|C` of the set bits that have a name (perf's `__p_bits`).
fn flag_names(value: u64, names: &[(u64, &str)]) -> String {
    names
        .iter()
        .filter(|(bit, _)| value & bit != 0)
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join("|")
}

fn format_value(value: u64, style: Style) -> String {
    match style {
        Style::Unsigned => value.to_string(),
        // Only clockid is signed (a 32-bit int).
        Style::Signed => (value as u32 as i32).to_string(),
        Style::Hex => format!("{value:#x}"),
        Style::SampleType => flag_names(value, SAMPLE_TYPE_NAMES),
        Style::ReadFormat => flag_names(value, READ_FORMAT_NAMES),
        Style::BranchSampleType => flag_names(value, BRANCH_SAMPLE_TYPE_NAMES),
    }
}

/// One `  name   value` line as perf's `__open_attr__fprintf` writes it (`"  %-32s %s\n"`).
fn push_line(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "  {name:<32} {value}");
}

fn push_fields(out: &mut String, b: &[u8], fields: &[Field]) {
    for &(name, off, width, style) in fields {
        let v = read_field(b, off, width);
        if v != 0 {
            push_line(out, name, &format_value(v, style));
        }
    }
}

/// The `field value` lines of an encoded `perf_event_attr` (perf's
/// `perf_event_attr__fprintf`): the non-zero fields only.
pub fn attr_fields(bytes: &[u8]) -> String {
    let mut out = String::new();
    push_fields(&mut out, bytes, HEAD_FIELDS);
    let flags = read_field(bytes, 40, 8);
    for &(name, bit, width) in FLAG_FIELDS {
        let v = (flags >> bit) & ((1u64 << width) - 1);
        if v != 0 {
            push_line(&mut out, name, &v.to_string());
        }
    }
    push_fields(&mut out, bytes, TAIL_FIELDS);
    out
}

/// The whole block perf's `display_attr` writes before opening an event: dashes,
/// `perf_event_attr:`, the fields, dashes.
pub fn attr_block(bytes: &[u8; ATTR_SIZE]) -> String {
    format!(
        "{DOTTED_LINE}\nperf_event_attr:\n{}{DOTTED_LINE}\n",
        attr_fields(bytes)
    )
}

/// Prints the attr block on stderr at `-vv`.
pub fn display_attr(bytes: &[u8; ATTR_SIZE]) {
    if shows_attrs() {
        let _ = std::io::stderr().write_all(attr_block(bytes).as_bytes());
    }
}

/// perf's line for one `perf_event_open` call and its result: `sys_perf_event_open: pid P  cpu
/// C  group_fd G  flags 0xF = FD`, or the call followed by `sys_perf_event_open failed, error
/// -ERRNO`.
pub fn open_lines(
    pid: i32,
    cpu: i32,
    group_fd: i32,
    flags: u64,
    result: Result<i32, i32>,
) -> String {
    let call =
        format!("sys_perf_event_open: pid {pid}  cpu {cpu}  group_fd {group_fd}  flags {flags:#x}");
    match result {
        Ok(fd) => format!("{call} = {fd}\n"),
        Err(errno) => format!("{call}\nsys_perf_event_open failed, error -{errno}\n"),
    }
}

/// Prints [`open_lines`] on stderr at `-vv`.
pub fn display_open(pid: i32, cpu: i32, group_fd: i32, flags: u64, result: Result<i32, i32>) {
    if shows_attrs() {
        let _ =
            std::io::stderr().write_all(open_lines(pid, cpu, group_fd, flags, result).as_bytes());
    }
}

/// Prints perf's note when a `:P` event is retried one precision lower (at `-vv`).
/// One of perf's fallback notes between two tries of an open (`-vv`).
pub fn display_note(note: &str) {
    if shows_attrs() {
        eprintln!("{note}");
    }
}

/// perf's note before it retries with one precise level less (`-vv`).
pub fn display_precise_fallback(precise_ip: u8) {
    if shows_attrs() {
        eprintln!("decreasing precise_ip by one ({precise_ip})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfdata::Attr;
    use culprit_decode::abi::{attr_flag, read_format, sample_type};

    #[test]
    fn test_attr_block_matches_perf_layout() {
        // perf 6.1: `perf record -vv -e cpu/mem-loads,ldlat=30/P -c 1000` on Intel, first try.
        let attr = Attr {
            attr_type: 4,
            config: 0x1cd,
            sample_period_or_freq: 1000,
            sample_type: sample_type::IP | sample_type::TID | sample_type::TIME,
            read_format: read_format::ID | read_format::LOST,
            flags: attr_flag::DISABLED
                | attr_flag::INHERIT
                | attr_flag::ENABLE_ON_EXEC
                | (3 << attr_flag::PRECISE_IP_SHIFT)
                | attr_flag::SAMPLE_ID_ALL,
            config1: 30,
            ..Attr::default()
        };
        let want = "\
------------------------------------------------------------
perf_event_attr:
  type                             4
  size                             128
  config                           0x1cd
  { sample_period, sample_freq }   1000
  sample_type                      IP|TID|TIME
  read_format                      ID|LOST
  disabled                         1
  inherit                          1
  enable_on_exec                   1
  precise_ip                       3
  sample_id_all                    1
  { bp_addr, config1 }             0x1e
------------------------------------------------------------
";
        assert_eq!(attr_block(&attr.to_bytes()), want);
    }

    #[test]
    fn test_flag_names_use_perfs_order_and_tail_fields() {
        // IDENTIFIER is listed before DATA_SRC and WEIGHT, as in perf's table.
        let st = sample_type::WEIGHT | sample_type::DATA_SRC | sample_type::IDENTIFIER;
        assert_eq!(
            flag_names(st, SAMPLE_TYPE_NAMES),
            "IDENTIFIER|DATA_SRC|WEIGHT"
        );
        let attr = Attr {
            attr_type: 5,
            bp_type: 3,
            config1: 0x1000,
            config2: 4,
            sample_regs_user: 0xff0fff,
            sample_stack_user: 8192,
            ..Attr::default()
        };
        let lines = attr_fields(&attr.to_bytes());
        assert!(
            lines.contains("  bp_type                          3\n"),
            "{lines}"
        );
        assert!(
            lines.contains("  { bp_len, config2 }              0x4\n"),
            "{lines}"
        );
        assert!(
            lines.contains("  sample_regs_user                 0xff0fff\n"),
            "{lines}"
        );
        assert!(
            lines.contains("  sample_stack_user                8192\n"),
            "{lines}"
        );
        assert!(
            !lines.contains("config "),
            "a zero config is not printed: {lines}"
        );
    }

    #[test]
    fn test_open_lines() {
        assert_eq!(
            open_lines(12, 0, -1, 8, Ok(3)),
            "sys_perf_event_open: pid 12  cpu 0  group_fd -1  flags 0x8 = 3\n"
        );
        assert_eq!(
            open_lines(12, -1, 5, 8, Err(2)),
            "sys_perf_event_open: pid 12  cpu -1  group_fd 5  flags 0x8\nsys_perf_event_open failed, error -2\n"
        );
    }
}
