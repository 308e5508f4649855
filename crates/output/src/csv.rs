//! CSV rendering: a header row of the columns' CSV names, one row per table row, unformatted
//! numbers, RFC 4180 quoting of every field that needs it.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::model::Table;

/// A CSV field: control characters of names from files (newlines, terminal escapes) written
/// as `\xNN` as in text output, so that a field never breaks a row nor drives a terminal;
/// then quoted when it holds a comma or quote (quotes doubled), or starts or ends with a space.
pub fn field(s: &str) -> Cow<'_, str> {
    let s = crate::text::escape(s);
    let needs = s.contains([',', '"']) || s.starts_with(' ') || s.ends_with(' ');
    if needs {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        s
    }
}

/// Writes a table as CSV (the columns shown in CSV, in order).
pub fn write(out: &mut dyn Write, t: &Table) -> io::Result<()> {
    let cols: Vec<&crate::Column> = t.columns.iter().filter(|c| c.in_csv).collect();
    let mut line = String::new();
    for (k, c) in cols.iter().enumerate() {
        if k > 0 {
            line.push(',');
        }
        line.push_str(&field(&c.csv_name));
    }
    writeln!(out, "{line}")?;
    let mut cell = String::new();
    for row in 0..t.rows() {
        line.clear();
        for (k, c) in cols.iter().enumerate() {
            if k > 0 {
                line.push(',');
            }
            cell.clear();
            c.values.csv_into(row, &mut cell);
            line.push_str(&field(&cell));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Column, Values};

    #[test]
    fn test_csv_escapes_control_characters() {
        assert_eq!(field("a\nb"), "a\\x0ab");
        assert_eq!(field("x\x1b[31m,y"), "\"x\\x1b[31m,y\"");
        assert_eq!(field("plain"), "plain");
    }

    #[test]
    fn test_csv_quotes_and_raw_numbers() {
        let t = Table::new(vec![
            Column::new(
                "Symbol",
                "sym",
                Values::Text(vec!["a,b".into(), "q\"x".into()]),
            ),
            Column::new(
                "Self",
                "cpu-clock:percent",
                Values::Percent(vec![12.345_67, 0.0]),
            ),
            Column::new("Period", "cpu-clock:period", Values::Ns(vec![1_000_000, 5])),
            Column::new("Samples", "samples", Values::Count(vec![3, 4])).text_only(),
        ]);
        let mut v = Vec::new();
        write(&mut v, &t).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "sym,cpu-clock:percent,cpu-clock:period\n\"a,b\",12.3457,1000000\n\"q\"\"x\",0.0000,5\n"
        );
    }

    #[test]
    fn test_int_is_exact_signed_and_none_is_empty() {
        let v = Values::Int(vec![Some(-12), None, Some(i64::MAX)]);
        let both = |i| {
            let (mut t, mut c) = (String::new(), String::new());
            v.text_into(i, &mut t);
            v.csv_into(i, &mut c);
            (t, c)
        };
        assert_eq!(both(0), ("-12".into(), "-12".into()));
        assert_eq!(both(1), (String::new(), String::new()));
        assert_eq!(both(2).0, i64::MAX.to_string());
        assert!(v.right_aligned() && v.len() == 3);
        // Right-aligned under its header in text output, NULL empty.
        let mut d = crate::Document::new();
        d.table(Table::new(vec![Column::new("delta", "delta", v.clone())]));
        let mut out = Vec::new();
        let o = crate::TextOptions::detect(crate::ColorChoice::Never, Some(0), false);
        crate::text::write(&mut out, &d, &o).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let w = lines[0].len();
        assert!(lines[0].ends_with("delta"), "{text}");
        assert!(lines[1].len() == w && lines[1].ends_with(" -12"), "{text}");
        assert!(lines[2].trim().is_empty(), "{text}");
        assert!(
            lines[3].len() == w && lines[3].ends_with(&i64::MAX.to_string()),
            "{text}"
        );
    }

    #[test]
    fn test_delta_is_signed_in_text_and_raw_in_csv_and_nan_is_empty() {
        let v = Values::Delta(vec![39.654_9, -0.001, 0.0, f64::NAN]);
        let text = |i| {
            let mut s = String::new();
            v.text_into(i, &mut s);
            s
        };
        let csv = |i| {
            let mut s = String::new();
            v.csv_into(i, &mut s);
            s
        };
        // perf diff's spelling: always a sign, two decimals (`-0.00%` for a tiny fall).
        assert_eq!(
            [text(0), text(1), text(2), text(3)],
            ["+39.65%", "-0.00%", "+0.00%", ""]
        );
        assert_eq!([csv(0), csv(1), csv(3)], ["39.6549", "-0.0010", ""]);
        assert!(v.right_aligned() && v.percent(0).is_none());
    }
}
