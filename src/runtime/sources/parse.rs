//! Lines to tuples: a `LineParser` appends the tuple one line encodes (JSON object or CSV
//! record, fields by the stream's schema) to a batch the caller owns, or says why the line
//! is malformed and leaves the batch exactly as it was. Invariant: no allocation per
//! well-formed line (keys are matched on borrowed bytes, strings come from a bounded
//! interner); only a malformed line may allocate, for its message.

use std::fmt;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use rustc_hash::FxHashMap;

use super::parse_csv::CsvRecord;
use crate::core::batch::{Batch, Column};
use crate::core::schema::{DataType, Nanos, Schema};
use crate::spec::LineFormat;

/// Why a line did not become a tuple.
#[derive(Debug)]
pub enum LineError {
    /// The bytes are not UTF-8 (first bad byte at this offset).
    Utf8(usize),
    /// Bad JSON, a missing, duplicate or mistyped field (serde_json says which and where).
    Json(serde_json::Error),
    /// A CSV record with the wrong number of fields.
    FieldCount { got: usize, want: usize },
    /// CSV field `field` does not hold a value of its type.
    Value { field: usize, ty: DataType },
    /// A line longer than the limit (bytes).
    TooLong(usize),
    /// The input ended in the middle of a line.
    Unterminated,
}

/// A `LineError` with the field names it refers to, for messages.
pub struct ShowError<'a>(pub &'a LineError, pub &'a Schema);

impl fmt::Display for ShowError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            LineError::Utf8(at) => write!(f, "invalid UTF-8 at byte {at}"),
            LineError::Json(e) => write!(f, "{e}"),
            LineError::FieldCount { got, want } => {
                write!(f, "{got} CSV fields, expected {want}")
            }
            LineError::Value { field, ty } => write!(
                f,
                "field `{}` is not a valid {ty}",
                self.1.fields.get(*field).map_or("?", |x| x.name.as_str())
            ),
            LineError::TooLong(max) => write!(f, "line longer than {max} bytes (max_line)"),
            LineError::Unterminated => write!(f, "connection closed mid-line"),
        }
    }
}

/// Most distinct strings the interner keeps; past it, it starts afresh (bounded memory).
const INTERNED: usize = 4096;

/// Hands out one shared `Arc<str>` per distinct string value, so repeated values (the
/// usual case for keys and categories) cost a lookup, not an allocation.
#[derive(Default)]
pub struct Interner {
    map: FxHashMap<Box<str>, Arc<str>>,
}

impl Interner {
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.map.get(s) {
            return a.clone();
        }
        if self.map.len() >= INTERNED {
            self.map.clear();
        }
        let a: Arc<str> = Arc::from(s);
        self.map.insert(Box::from(s), a.clone());
        a
    }
}

/// Parses a timestamp: integer nanoseconds since the epoch, or RFC 3339 text
/// (`2026-11-03T10:00:00.250Z`, as sinks write it).
pub fn parse_timestamp(s: &str) -> Option<Nanos> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return Some(n);
    }
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// Parses lines of one format into tuples of one schema.
pub struct LineParser {
    format: LineFormat,
    pub(super) schema: Schema,
    pub(super) names: Vec<Box<str>>,
    pub(super) types: Vec<DataType>,
    pub(super) seen: Vec<bool>,
    pub(super) strings: Interner,
    /// CSV column `j` holds schema field `csv_order[j]` (identity unless a header said).
    pub(super) csv_order: Vec<usize>,
    csv: CsvRecord,
}

impl LineParser {
    pub fn new(schema: &Schema, format: LineFormat) -> LineParser {
        LineParser {
            format,
            schema: schema.clone(),
            names: schema
                .fields
                .iter()
                .map(|f| f.name.as_str().into())
                .collect(),
            types: schema.types(),
            seen: vec![false; schema.len()],
            strings: Interner::default(),
            csv_order: (0..schema.len()).collect(),
            csv: CsvRecord::new(schema.len()),
        }
    }

    /// CSV records hold the fields in this order (a permutation of the schema's indices).
    pub fn set_csv_order(&mut self, order: Vec<usize>) {
        debug_assert_eq!(order.len(), self.types.len());
        self.csv_order = order;
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Appends the tuple in `line` (no newline) to `out` with arrival `t`; on error `out`
    /// is unchanged.
    pub fn parse_into(&mut self, line: &[u8], t: Nanos, out: &mut Batch) -> Result<(), LineError> {
        let rows = out.len();
        let text = std::str::from_utf8(line).map_err(|e| LineError::Utf8(e.valid_up_to()))?;
        let r = match self.format {
            LineFormat::Jsonl => self.json_row(text, &mut out.columns),
            LineFormat::Csv => self.csv.row(
                &self.types,
                &self.csv_order,
                &mut self.strings,
                text.as_bytes(),
                &mut out.columns,
            ),
        };
        match r {
            Ok(()) => {
                out.arrival.push(t);
                Ok(())
            }
            Err(e) => {
                truncate(&mut out.columns, rows);
                Err(e)
            }
        }
    }
}

/// Pushes `text` as a value of type `ty` into `col`; false if it does not parse.
pub(super) fn push_text(
    ty: DataType,
    strings: &mut Interner,
    text: &str,
    col: &mut Column,
) -> bool {
    {
        match (col, ty) {
            (Column::Int(c), DataType::Timestamp) => match parse_timestamp(text) {
                Some(v) => c.push(v),
                None => return false,
            },
            (Column::Int(c), _) => match text.trim().parse::<i64>() {
                Ok(v) => c.push(v),
                Err(_) => return false,
            },
            (Column::Float(c), _) => match text.trim().parse::<f64>() {
                Ok(v) => c.push(v),
                Err(_) => return false,
            },
            (Column::Bool(c), _) => match text.trim() {
                t if t.eq_ignore_ascii_case("true") => c.push(true),
                t if t.eq_ignore_ascii_case("false") => c.push(false),
                _ => return false,
            },
            (Column::Str(c), _) => c.push_str(text, || strings.get(text)),
        }
        true
    }
}

/// Cuts every column back to `rows` (undoes a half-parsed line).
fn truncate(columns: &mut [Column], rows: usize) {
    for c in columns {
        match c {
            Column::Int(v) => v.truncate(rows),
            Column::Float(v) => v.truncate(rows),
            Column::Str(v) => v.truncate(rows),
            Column::Bool(v) => v.truncate(rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::{Field, Scalar};

    fn schema() -> Schema {
        let f = |n: &str, ty| Field { name: n.into(), ty };
        Schema::new(vec![
            f("sensor", DataType::Int),
            f("temp", DataType::Float),
            f("city", DataType::Str),
            f("ts", DataType::Timestamp),
        ])
    }

    fn parse(format: LineFormat, lines: &[&str]) -> (Batch, Vec<String>) {
        let s = schema();
        let mut p = LineParser::new(&s, format);
        let mut b = Batch::new(&s.types(), 8);
        let mut errors = Vec::new();
        for l in lines {
            if let Err(e) = p.parse_into(l.as_bytes(), 5, &mut b) {
                errors.push(ShowError(&e, &s).to_string());
            }
            assert!(b.is_consistent());
        }
        (b, errors)
    }

    #[test]
    fn csv_records_parse_with_quotes_and_bad_ones_leave_the_batch_unchanged() {
        let (b, errors) = parse(
            LineFormat::Csv,
            &[
                "1,2.5,oslo,17",
                "2,-3,\"a, \"\"quoted\"\" city\",2026-01-01T00:00:00Z",
                "3,x,oslo,1",
                "4,1.0,oslo",
                "5,1.0,oslo,1,extra",
            ],
        );
        assert_eq!(b.len(), 2);
        assert_eq!(
            b.row(1, &schema().types()),
            vec![
                Scalar::Int(2),
                Scalar::Float(-3.0),
                Scalar::Str("a, \"quoted\" city".into()),
                Scalar::Timestamp(1_767_225_600_000_000_000),
            ]
        );
        assert_eq!(
            errors,
            vec![
                "field `temp` is not a valid float",
                "3 CSV fields, expected 4",
                "5 CSV fields, expected 4",
            ]
        );
    }

    #[test]
    fn json_objects_parse_by_key_and_every_kind_of_bad_one_is_named() {
        let (b, errors) = parse(
            LineFormat::Jsonl,
            &[
                r#"{"ts":17,"city":"oslo","temp":2,"sensor":1,"other":[1,{}]}"#,
                r#"{"sensor":1,"temp":2.0,"city":"oslo"}"#,
                r#"{"sensor":1.5,"temp":2.0,"city":"oslo","ts":1}"#,
                r#"{"sensor":1,"sensor":1,"temp":2.0,"city":"oslo","ts":1}"#,
                r#"[1,2]"#,
                r#"{"sensor":1,"temp":2.0,"city":"oslo","ts":"yesterday"}"#,
            ],
        );
        assert_eq!(b.len(), 1);
        assert_eq!(
            b.row(0, &schema().types()),
            vec![
                Scalar::Int(1),
                Scalar::Float(2.0),
                Scalar::Str("oslo".into()),
                Scalar::Timestamp(17)
            ]
        );
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].contains("missing field `ts`"), "{}", errors[0]);
        assert!(
            errors[1].contains("an integer for field `sensor`"),
            "{}",
            errors[1]
        );
        assert!(
            errors[2].contains("field `sensor` given twice"),
            "{}",
            errors[2]
        );
        assert!(errors[3].contains("JSON object"), "{}", errors[3]);
        assert!(errors[4].contains("RFC 3339"), "{}", errors[4]);
    }
}
