//! JSON rendering: every report's JSON is its owned report struct serialized by serde
//! derives, pretty-printed, with a `schema` version as its first field (docs/schemas/).

use std::io::{self, Write};

use serde::Serialize;

/// Writes `value` as pretty JSON and a newline. serde_json escapes every control character
/// of names from files.
pub fn write<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")
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
