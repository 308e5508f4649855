//! perf's rules for matching a CPU id string against a `mapfile.csv` row (perf 6.12,
//! `strcmp_cpuid_str` in `tools/perf/arch/{x86,arm64}/util/header.c` and `util/header.c`).

use regex_lite::Regex;

/// Whether `cpuid` (this machine's id, as perf's `get_cpuid_str` builds it) selects a mapfile
/// row of `arch` whose first column is `pattern`.
///
/// - x86: the pattern is a POSIX extended regex that must match the whole id
///   (`GenuineIntel-6-55-4`); a pattern without a stepping (three `-`) ignores the id's
///   stepping, and a pattern with one refuses an id without one.
/// - arm64: both are MIDR values in hex; they match when implementer, architecture and part
///   agree and the id's variant/revision is at least the row's.
/// - other arches: the regex must match the whole id.
pub fn matches(arch: &str, pattern: &str, cpuid: &str) -> bool {
    match arch {
        "x86" => x86_matches(pattern, cpuid),
        "arm64" => midr_matches(pattern, cpuid),
        _ => regex_matches_whole(pattern, cpuid),
    }
}

/// perf's x86 `is_full_cpuid`: vendor-family-model-stepping has exactly three dashes.
fn is_full_cpuid(id: &str) -> bool {
    id.matches('-').count() == 3
}

fn x86_matches(pattern: &str, cpuid: &str) -> bool {
    let full_pattern = is_full_cpuid(pattern);
    let full_id = is_full_cpuid(cpuid);
    if full_pattern && !full_id {
        return false;
    }
    let compared = if !full_pattern && full_id {
        cpuid.rsplit_once('-').map_or(cpuid, |(head, _)| head)
    } else {
        cpuid
    };
    regex_matches_whole(pattern, compared)
}

/// perf requires the (POSIX leftmost-longest) match to span the whole string; an anchored
/// match of the whole string is the same test for the patterns the tables use.
fn regex_matches_whole(pattern: &str, id: &str) -> bool {
    Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(id))
}

const MIDR_VARIANT_MASK: u64 = 0xF << 20;
const MIDR_REVISION_MASK: u64 = 0xF;

/// `strtoull(s, NULL, 16)`: leading hex digits after an optional `0x`; 0 when none.
fn parse_hex_prefix(s: &str) -> u64 {
    let s = s.trim_start();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let digits: &str = &s[..s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len())];
    u64::from_str_radix(digits, 16).unwrap_or(if digits.is_empty() { 0 } else { u64::MAX })
}

fn midr_matches(pattern: &str, cpuid: &str) -> bool {
    let map_id = parse_hex_prefix(pattern);
    let id = parse_hex_prefix(cpuid);
    let fields = !(MIDR_VARIANT_MASK | MIDR_REVISION_MASK);
    if map_id & fields != id & fields {
        return false;
    }
    let variant = |v: u64| (v & MIDR_VARIANT_MASK) >> 20;
    let revision = |v: u64| v & MIDR_REVISION_MASK;
    variant(id) > variant(map_id)
        || (variant(id) == variant(map_id) && revision(id) >= revision(map_id))
}

/// perf's x86 cpuid string from `/proc/cpuinfo` fields: `vendor-family-MODEL-STEPPING`
/// with the family in decimal and model and stepping in upper-case hex without leading
/// zeros (`"%s-%u-%X-%X"`), e.g. `AuthenticAMD-25-11-1`.
pub fn x86_cpuid_string(vendor: &str, family: u32, model: u32, stepping: u32) -> String {
    format!("{vendor}-{family}-{model:X}-{stepping:X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_rows_match_like_perf() {
        assert!(matches(
            "x86",
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55-4"
        ));
        assert!(!matches(
            "x86",
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55-7"
        ));
        // A row with a stepping needs an id with one.
        assert!(!matches(
            "x86",
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55"
        ));
        // A row without a stepping ignores the id's.
        assert!(matches(
            "x86",
            "GenuineIntel-6-(97|9A|B7|BA|BF)",
            "GenuineIntel-6-97-2"
        ));
        assert!(matches(
            "x86",
            "GenuineIntel-6-(97|9A|B7|BA|BF)",
            "GenuineIntel-6-9A"
        ));
        assert!(!matches(
            "x86",
            "GenuineIntel-6-(97|9A)",
            "GenuineIntel-6-971-2"
        ));
        assert!(matches(
            "x86",
            "AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]])",
            "AuthenticAMD-25-1-1"
        ));
        assert!(!matches(
            "x86",
            "AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]])",
            "AuthenticAMD-25-11-1"
        ));
    }

    #[test]
    fn arm64_midr_matches_part_and_minimum_revision() {
        // Neoverse N1 row 0x00000000410fd0c0: any variant/revision of part d0c.
        assert!(matches("arm64", "0x00000000410fd0c0", "0x00000000413fd0c1"));
        assert!(!matches(
            "arm64",
            "0x00000000410fd0c0",
            "0x00000000410fd400"
        ));
        // A row that names r1p1 refuses r1p0 and accepts r2p0.
        assert!(!matches(
            "arm64",
            "0x00000000411fd071",
            "0x00000000411fd070"
        ));
        assert!(matches("arm64", "0x00000000411fd071", "0x00000000412fd070"));
    }

    #[test]
    fn x86_cpuid_string_is_perfs_format() {
        assert_eq!(
            x86_cpuid_string("AuthenticAMD", 25, 0x11, 1),
            "AuthenticAMD-25-11-1"
        );
        assert_eq!(
            x86_cpuid_string("GenuineIntel", 6, 0x55, 4),
            "GenuineIntel-6-55-4"
        );
    }
}
