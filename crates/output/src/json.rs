//! JSON rendering: every report's JSON is its owned report struct serialized by serde
//! derives, pretty-printed, with a `schema` version as its first field (docs/schemas/).

use std::io::{self, Write};

use serde::Serialize;

/// Writes `value` as pretty JSON and a newline, indented [`MAX_INDENT`] levels at most:
/// deeper values (call trees) are written compactly, so that the output grows with the data,
/// not with its depth. serde_json escapes every control character of names from files.
pub fn write<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, CappedPretty::default());
    value.serialize(&mut ser).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// Levels of nesting [`write`] indents; values nested deeper are compact.
pub const MAX_INDENT: usize = 6;

/// serde_json's pretty formatter (two spaces), compact below [`MAX_INDENT`] levels.
#[derive(Default)]
struct CappedPretty {
    depth: usize,
    has_value: bool,
}

impl CappedPretty {
    /// Whether the values of the container at `depth` are compact.
    fn flat(depth: usize) -> bool {
        depth > MAX_INDENT
    }

    fn newline<W: ?Sized + Write>(w: &mut W, depth: usize) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn begin<W: ?Sized + Write>(&mut self, w: &mut W, open: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + Write>(&mut self, w: &mut W, close: &[u8]) -> io::Result<()> {
        let flat = Self::flat(self.depth);
        self.depth -= 1;
        if self.has_value && !flat {
            Self::newline(w, self.depth)?;
        }
        w.write_all(close)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if Self::flat(self.depth) {
            return Ok(());
        }
        Self::newline(w, self.depth)
    }
}

impl serde_json::ser::Formatter for CappedPretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if Self::flat(self.depth) { b":" } else { b": " })
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` as one line of JSON (JSON Lines output: one object per sample or event).
pub fn write_line<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// A percentage (or any share) rounded to 4 decimals when serialized.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Round4(pub f64);

impl Serialize for Round4 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(crate::units::round4(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct R {
        schema: u32,
        name: String,
        share: Round4,
    }

    #[test]
    fn test_write_indents_like_serde_up_to_the_cap_then_compacts() {
        let shallow = serde_json::json!({"a": [1, {"b": [], "c": {}}], "d": {"e": [[2, 3]]}});
        let mut v = Vec::new();
        write(&mut v, &shallow).unwrap();
        let want = serde_json::to_string_pretty(&shallow).unwrap() + "\n";
        assert_eq!(String::from_utf8(v).unwrap(), want);
        // A 60-deep tree (serde_json parses 128 levels): the same value, but no line is indented past the cap and the
        // text is not quadratic in the depth.
        let mut deep = serde_json::json!({"name": "leaf", "children": []});
        for _ in 0..60 {
            deep = serde_json::json!({"name": "node", "children": [deep]});
        }
        let mut v = Vec::new();
        write(&mut v, &deep).unwrap();
        let text = String::from_utf8(v).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, deep);
        let compact = serde_json::to_string(&deep).unwrap();
        assert!(
            text.len() < compact.len() + 200,
            "{} vs {}",
            text.len(),
            compact.len()
        );
        let widest = text.lines().map(|l| l.len() - l.trim_start().len()).max();
        assert!(widest <= Some(2 * MAX_INDENT), "{widest:?}");
    }

    #[test]
    fn test_json_escapes_and_rounds() {
        let mut v = Vec::new();
        write_line(
            &mut v,
            &R {
                schema: 1,
                name: "a\u{1b}b".into(),
                share: Round4(1.234_567),
            },
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "{\"schema\":1,\"name\":\"a\\u001bb\",\"share\":1.2346}\n"
        );
    }
}
