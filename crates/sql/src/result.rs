//! A query's result as an owned model: typed columns and rows of cells, rendered as a
//! culprit document (text), a CSV table or JSON (docs/schemas/sql.schema.json).

use culprit_output::{Column, Document, Table, TextColumn, Values};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, Schema, UInt64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde::Serialize;

use crate::export::Export;

/// One value of a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// SQL NULL (JSON `null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer (every signed integer type).
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A floating-point number (JSON `null` when not finite).
    Float(f64),
    /// A string, or any other type as DataFusion prints it (timestamps, decimals, structs).
    Text(String),
    /// A list (`stacks.frame_ids`, `array_agg`).
    List(Vec<Cell>),
}

/// What a column holds, as the renderers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    /// Signed integers.
    Int,
    /// Unsigned integers.
    UInt,
    /// Floating-point numbers.
    Float,
    /// Booleans.
    Bool,
    /// Strings.
    Text,
    /// Lists.
    List,
    /// Anything else, as text.
    Other,
}

impl ColumnKind {
    fn of(t: &DataType) -> ColumnKind {
        match t {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => ColumnKind::Int,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                ColumnKind::UInt
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => ColumnKind::Float,
            DataType::Boolean => ColumnKind::Bool,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => ColumnKind::Text,
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(..) => ColumnKind::List,
            DataType::Dictionary(_, v) => ColumnKind::of(v),
            _ => ColumnKind::Other,
        }
    }
}

/// A result column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultColumn {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ColumnKind,
    /// Its Arrow type as DataFusion names it (`Int64`, `Utf8View`, `List(Int64)`).
    #[serde(rename = "type")]
    pub arrow_type: String,
}

/// A query's result (JSON: docs/schemas/sql.schema.json).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SqlResult {
    /// Format version.
    pub schema: u32,
    /// The named query that ran (`top-functions`, `by-host`, `diff`), or `null`.
    pub named: Option<&'static str>,
    /// The SQL that ran.
    pub query: String,
    /// The export directories, as given.
    pub dirs: Vec<String>,
    /// Number of recordings (perf.data files) in them.
    pub recordings: usize,
    /// The columns.
    pub columns: Vec<ResultColumn>,
    /// The rows, each one cell per column.
    pub rows: Vec<Vec<Cell>>,
}

/// One cell per row of `array`: `value(i)`, or NULL where the row is null.
fn or_null(array: &dyn Array, value: impl Fn(usize) -> Cell) -> Vec<Cell> {
    (0..array.len())
        .map(|i| {
            if array.is_valid(i) {
                value(i)
            } else {
                Cell::Null
            }
        })
        .collect()
}

/// The cells of `array` (any type).
fn cells(array: &ArrayRef) -> Vec<Cell> {
    let n = array.len();
    let typed = |to: &DataType| cast(array, to).ok();
    match array.data_type() {
        DataType::Null => vec![Cell::Null; n],
        DataType::Dictionary(_, v) => match typed(v) {
            Some(a) => cells(&a),
            None => formatted(array),
        },
        t => match ColumnKind::of(t) {
            ColumnKind::Bool => {
                let a = array.as_boolean();
                or_null(array.as_ref(), |i| Cell::Bool(a.value(i)))
            }
            ColumnKind::Int => match typed(&DataType::Int64) {
                Some(a) => {
                    let a = a.as_primitive::<Int64Type>();
                    or_null(array.as_ref(), |i| Cell::Int(a.value(i)))
                }
                None => formatted(array),
            },
            ColumnKind::UInt => match typed(&DataType::UInt64) {
                Some(a) => {
                    let a = a.as_primitive::<UInt64Type>();
                    or_null(array.as_ref(), |i| Cell::UInt(a.value(i)))
                }
                None => formatted(array),
            },
            ColumnKind::Float => match typed(&DataType::Float64) {
                Some(a) => {
                    let a = a.as_primitive::<Float64Type>();
                    or_null(array.as_ref(), |i| Cell::Float(a.value(i)))
                }
                None => formatted(array),
            },
            ColumnKind::Text => match typed(&DataType::Utf8) {
                Some(a) => {
                    let a = a.as_string::<i32>();
                    or_null(array.as_ref(), |i| Cell::Text(a.value(i).to_string()))
                }
                None => formatted(array),
            },
            ColumnKind::List => list_cells(array).unwrap_or_else(|| formatted(array)),
            ColumnKind::Other => formatted(array),
        },
    }
}

/// The cells of a list array: each list's values.
fn list_cells(array: &ArrayRef) -> Option<Vec<Cell>> {
    let one = |v: ArrayRef| Cell::List(cells(&v));
    let out = match array.data_type() {
        DataType::List(_) => {
            let a = array.as_list::<i32>();
            or_null(a, |i| one(a.value(i)))
        }
        DataType::LargeList(_) => {
            let a = array.as_list::<i64>();
            or_null(a, |i| one(a.value(i)))
        }
        DataType::FixedSizeList(..) => {
            let a = array.as_fixed_size_list();
            or_null(a, |i| one(a.value(i)))
        }
        _ => return None,
    };
    Some(out)
}

/// The cells of `array` as Arrow prints them (NULL as [`Cell::Null`]).
fn formatted(array: &ArrayRef) -> Vec<Cell> {
    let options = FormatOptions::default();
    match ArrayFormatter::try_new(array.as_ref(), &options) {
        Ok(f) => or_null(array.as_ref(), |i| Cell::Text(f.value(i).to_string())),
        Err(e) => vec![Cell::Text(format!("<{e}>")); array.len()],
    }
}

/// `c` as one line of text (lists as `[1, 2, 3]`, NULL empty).
fn cell_text(c: &Cell, out: &mut String) {
    use std::fmt::Write as _;
    match c {
        Cell::Null => {}
        Cell::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Cell::Int(x) => {
            let _ = write!(out, "{x}");
        }
        Cell::UInt(x) => {
            let _ = write!(out, "{x}");
        }
        Cell::Float(x) => {
            let _ = write!(out, "{x}");
        }
        Cell::Text(s) => out.push_str(s),
        Cell::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if matches!(item, Cell::Null) {
                    out.push_str("NULL");
                } else {
                    cell_text(item, out);
                }
            }
            out.push(']');
        }
    }
}

/// Decimals that show every value of a float column exactly, at most 6.
fn decimals(values: &[f64]) -> u8 {
    values
        .iter()
        .filter(|x| x.is_finite())
        .map(|x| {
            let s = x.to_string();
            s.split_once('.').map_or(0, |(_, frac)| frac.len().min(6))
        })
        .max()
        .unwrap_or(0) as u8
}

impl SqlResult {
    /// The result of `sql` from its Arrow batches.
    pub(crate) fn new(
        sql: &str,
        named: Option<&'static str>,
        export: &Export,
        schema: &Schema,
        batches: &[RecordBatch],
    ) -> SqlResult {
        let columns: Vec<ResultColumn> = schema
            .fields()
            .iter()
            .map(|f| ResultColumn {
                name: f.name().clone(),
                kind: ColumnKind::of(f.data_type()),
                arrow_type: f.data_type().to_string(),
            })
            .collect();
        let mut rows = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
        for b in batches {
            let cols: Vec<Vec<Cell>> = b.columns().iter().map(cells).collect();
            for r in 0..b.num_rows() {
                rows.push(cols.iter().map(|c| c[r].clone()).collect());
            }
        }
        SqlResult {
            schema: crate::SCHEMA,
            named,
            query: sql.to_string(),
            dirs: export
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            recordings: export.recordings,
            columns,
            rows,
        }
    }

    /// Column `j`'s values, typed for the renderers: integers as numbers (right-aligned,
    /// exact), floats with the decimals they need (at most 6), everything else as text.
    fn values(&self, j: usize) -> Values {
        let col = self.rows.iter().map(|r| r.get(j).unwrap_or(&Cell::Null));
        let texts = || {
            let mut t = TextColumn::with_capacity(self.rows.len(), 16 * self.rows.len());
            for c in col.clone() {
                t.push_with(|out| cell_text(c, out));
            }
            Values::Texts(t)
        };
        match self.columns[j].kind {
            ColumnKind::Int => Values::Int(
                col.map(|c| match *c {
                    Cell::Int(x) => Some(x),
                    _ => None,
                })
                .collect(),
            ),
            ColumnKind::UInt => {
                let v: Vec<Option<u64>> = col
                    .clone()
                    .map(|c| match *c {
                        Cell::UInt(x) => Some(x),
                        _ => None,
                    })
                    .collect();
                if v.iter().all(Option::is_some) {
                    Values::Count(v.into_iter().flatten().collect())
                } else if v.iter().flatten().all(|&x| i64::try_from(x).is_ok()) {
                    Values::Int(v.into_iter().map(|x| x.map(|x| x as i64)).collect())
                } else {
                    texts()
                }
            }
            ColumnKind::Float => {
                let v: Vec<f64> = col
                    .map(|c| match *c {
                        Cell::Float(x) => x,
                        _ => f64::NAN,
                    })
                    .collect();
                let d = decimals(&v);
                Values::Float(v, d)
            }
            _ => texts(),
        }
    }

    /// The result as one table (text and CSV: the column names are the headers).
    pub fn table(&self) -> Table {
        let columns = (0..self.columns.len())
            .map(|j| {
                let name = &self.columns[j].name;
                let c = Column::new(name.clone(), name.clone(), self.values(j));
                if c.values.right_aligned() {
                    c
                } else {
                    c.shrink(12)
                }
            })
            .collect();
        let mut t = Table::new(columns);
        t.empty = Some("(no rows)".into());
        // Wide results continue in panels that repeat the first column.
        t.repeat = usize::from(self.columns.len() > 1);
        t
    }

    /// The text document: a header line, the table.
    pub fn document(&self) -> Document {
        let mut doc = Document::new();
        let what = match self.named {
            Some(n) => format!("culprit sql --{n}"),
            None => "culprit sql".to_string(),
        };
        let rows = self.rows.len();
        // A fleet's hundreds of directories would fill the screen: past three, the count and
        // the first and last (JSON lists them all).
        let dirs = match self.dirs.as_slice() {
            [first, .., last] if self.dirs.len() > 3 => {
                format!("{} directories ({first} … {last})", self.dirs.len())
            }
            all => all.join(", "),
        };
        doc.header(format!(
            "{what}: {rows} row{} over {} recording{} in {dirs}",
            if rows == 1 { "" } else { "s" },
            self.recordings,
            if self.recordings == 1 { "" } else { "s" },
        ));
        doc.table(self.table());
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::arrow::array::{
        BooleanArray, DictionaryArray, Float64Array, Int32Array, ListArray, StringArray,
        UInt64Array,
    };
    use datafusion::arrow::datatypes::Int32Type;

    #[test]
    fn test_cells_of_each_kind() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(-3), None]));
        assert_eq!(cells(&ints), vec![Cell::Int(-3), Cell::Null]);
        let u: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX, 1]));
        assert_eq!(cells(&u), vec![Cell::UInt(u64::MAX), Cell::UInt(1)]);
        let b: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), None]));
        assert_eq!(cells(&b), vec![Cell::Bool(true), Cell::Null]);
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("a\u{1b}"), None]));
        assert_eq!(cells(&s), vec![Cell::Text("a\u{1b}".into()), Cell::Null]);
        let d: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::from_iter(["x", "y", "x"]));
        assert_eq!(
            cells(&d),
            vec![
                Cell::Text("x".into()),
                Cell::Text("y".into()),
                Cell::Text("x".into())
            ]
        );
        let l: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            None,
        ]));
        assert_eq!(
            cells(&l),
            vec![Cell::List(vec![Cell::Int(1), Cell::Int(2)]), Cell::Null]
        );
        let f: ArrayRef = Arc::new(Float64Array::from(vec![0.5]));
        assert_eq!(cells(&f), vec![Cell::Float(0.5)]);
    }

    #[test]
    fn test_values_types_and_decimals() {
        let r = SqlResult {
            schema: 1,
            named: None,
            query: String::new(),
            dirs: vec![],
            recordings: 0,
            columns: ["i", "u", "f", "t"]
                .iter()
                .zip([
                    ColumnKind::Int,
                    ColumnKind::UInt,
                    ColumnKind::Float,
                    ColumnKind::List,
                ])
                .map(|(n, k)| ResultColumn {
                    name: n.to_string(),
                    kind: k,
                    arrow_type: String::new(),
                })
                .collect(),
            rows: vec![
                vec![
                    Cell::Int(-1),
                    Cell::UInt(7),
                    Cell::Float(1.25),
                    Cell::List(vec![Cell::Int(1), Cell::Null]),
                ],
                vec![Cell::Null, Cell::UInt(8), Cell::Float(3.0), Cell::Null],
            ],
        };
        let t = r.table();
        assert_eq!(t.columns[0].values, Values::Int(vec![Some(-1), None]));
        assert_eq!(t.columns[1].values, Values::Count(vec![7, 8]));
        assert_eq!(t.columns[2].values, Values::Float(vec![1.25, 3.0], 2));
        let mut s = String::new();
        t.columns[3].values.text_into(0, &mut s);
        assert_eq!(s, "[1, NULL]");
        let json = serde_json::to_value(&r.rows).unwrap();
        assert_eq!(
            json,
            serde_json::json!([[-1, 7, 1.25, [1, null]], [null, 8, 3.0, null]])
        );
    }

    #[test]
    fn test_header_names_few_directories_and_counts_many() {
        let header = |n: usize| {
            let r = SqlResult {
                schema: 1,
                named: None,
                query: String::new(),
                dirs: (0..n).map(|i| format!("d{i}/")).collect(),
                recordings: n,
                columns: vec![],
                rows: vec![],
            };
            let mut out = Vec::new();
            let o = culprit_output::TextOptions {
                width: None,
                color: false,
            };
            culprit_output::text::write(&mut out, &r.document(), &o).unwrap();
            String::from_utf8(out)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            header(3),
            "# culprit sql: 0 rows over 3 recordings in d0/, d1/, d2/"
        );
        assert_eq!(
            header(100),
            "# culprit sql: 0 rows over 100 recordings in 100 directories (d0/ … d99/)"
        );
    }
}
