//! "Did you mean" suggestions by edit distance.

/// Levenshtein distance between two strings, ASCII case-insensitive.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<u8> = a.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<u8> = b.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Up to 3 candidates closest to `name`: names that extend it (`ls_dmnd_fills_from_sys` →
/// `ls_dmnd_fills_from_sys.all`) first, then by edit distance within about a third of the
/// name's length.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let limit = (name.len() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cl = c.to_ascii_lowercase();
            if cl == lower {
                return None;
            }
            // A prefix match at a word boundary is a strong hint.
            if lower.len() >= 3
                && cl.starts_with(&lower)
                && matches!(
                    cl.as_bytes().get(lower.len()),
                    Some(b'.' | b'-' | b'_' | b'/')
                )
            {
                return Some((0, c));
            }
            let d = edit_distance(name, c);
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, c) in scored {
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
        if out.len() == 3 {
            break;
        }
    }
    out
}

/// `; did you mean `a`, `b`?` or nothing.
pub(crate) fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
    format!(" (did you mean {}?)", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_edit_distance() {
        assert_eq!(edit_distance("cycles", "cycles"), 0);
        assert_eq!(edit_distance("cycels", "cycles"), 2);
        assert_eq!(edit_distance("cycle", "cycles"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("CYCLES", "cycles"), 0);
    }

    #[test]
    fn test_closest_orders_and_limits() {
        let c = [
            "cycles",
            "cpu-cycles",
            "bus-cycles",
            "instructions",
            "ref-cycles",
        ];
        assert_eq!(closest("cycels", c), vec!["cycles"]);
        assert_eq!(closest("zzzzzzzz", c), Vec::<String>::new());
        let c = [
            "ls_dmnd_fills_from_sys.all",
            "ls_dmnd_fills_from_sys.local_l2",
            "ls_any_fills_from_sys.all",
        ];
        // Extensions of the name come first.
        let got = closest("ls_dmnd_fills_from_sys", c);
        assert_eq!(
            got[..2],
            [
                "ls_dmnd_fills_from_sys.all",
                "ls_dmnd_fills_from_sys.local_l2"
            ]
        );
    }

    #[test]
    fn test_did_you_mean_format() {
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(
            did_you_mean(&["a".into(), "b".into()]),
            " (did you mean `a`, `b`?)"
        );
    }
}
