//! Units of the text output: counts with SI prefixes, durations, sizes, thousands groups.

use std::fmt::Write as _;

/// Appends an event count with a unit prefix, as the text reports show periods:
/// `1234`, `12.3 k`, `1.23 M`, `4.56 G`, `7.89 T`.
pub fn human_count_into(v: u64, out: &mut String) {
    let f = v as f64;
    let _ = if f >= 1e12 {
        write!(out, "{:.2} T", f / 1e12)
    } else if f >= 1e9 {
        write!(out, "{:.2} G", f / 1e9)
    } else if f >= 1e6 {
        write!(out, "{:.2} M", f / 1e6)
    } else if f >= 1e4 {
        write!(out, "{:.1} k", f / 1e3)
    } else {
        write!(out, "{v}")
    };
}

/// An event count with a unit prefix (see [`human_count_into`]).
pub fn human_count(v: u64) -> String {
    let mut s = String::new();
    human_count_into(v, &mut s);
    s
}

/// Appends a duration in nanoseconds: `12 ns`, `1.2 us`, `3.45 ms`, `1.234 s`.
pub fn human_ns_into(v: u64, out: &mut String) {
    let f = v as f64;
    let _ = if f >= 1e9 {
        write!(out, "{:.3} s", f / 1e9)
    } else if f >= 1e6 {
        write!(out, "{:.2} ms", f / 1e6)
    } else if f >= 1e3 {
        write!(out, "{:.1} us", f / 1e3)
    } else {
        write!(out, "{v} ns")
    };
}

/// A duration in nanoseconds (see [`human_ns_into`]).
pub fn human_ns(v: u64) -> String {
    let mut s = String::new();
    human_ns_into(v, &mut s);
    s
}

/// Appends a size in bytes: `512 B`, `4.0 KiB`, `1.5 MiB`, `2.00 GiB`.
pub fn human_bytes_into(v: u64, out: &mut String) {
    let f = v as f64;
    let _ = if f >= (1u64 << 30) as f64 {
        write!(out, "{:.2} GiB", f / (1u64 << 30) as f64)
    } else if f >= (1u64 << 20) as f64 {
        write!(out, "{:.1} MiB", f / (1u64 << 20) as f64)
    } else if f >= 1024.0 {
        write!(out, "{:.1} KiB", f / 1024.0)
    } else {
        write!(out, "{v} B")
    };
}

/// A size in bytes (see [`human_bytes_into`]).
pub fn human_bytes(v: u64) -> String {
    let mut s = String::new();
    human_bytes_into(v, &mut s);
    s
}

/// An integer with thousands separators, as `perf stat` prints counts: `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Appends `v` as `{:#x}` does (`0x` and lowercase digits), without the formatting
/// machinery: reports print hundreds of thousands of addresses.
pub fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = DIGITS[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.push_str("0x");
    out.extend(buf[i..].iter().map(|&b| char::from(b)));
}

/// Rounds to 4 decimals (the precision of percentages in JSON and CSV).
pub fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_units() {
        assert_eq!(human_count(999), "999");
        assert_eq!(human_count(12_345), "12.3 k");
        assert_eq!(human_count(1_234_567), "1.23 M");
        assert_eq!(human_ns(999), "999 ns");
        assert_eq!(human_ns(1_500), "1.5 us");
        assert_eq!(human_ns(2_000_000_000), "2.000 s");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.0 KiB");
        assert_eq!(group_digits(1_234_567), "1,234,567");
        assert_eq!(group_digits(12), "12");
        assert_eq!(round4(1.234_56), 1.2346);
        let mut values = vec![0u64, 1, 15, 16, 255, 0x7f5a_9d77_392b, u64::MAX];
        values.extend((0..64).map(|b| 1u64 << b));
        for v in values {
            let mut s = String::new();
            push_hex(&mut s, v);
            assert_eq!(s, format!("{v:#x}"));
        }
    }
}
