//! Result sinks: JSON lines to stdout or to a file per query. Each row carries the query
//! name and its latency; field names are escaped once, values written without building
//! intermediate strings.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::core::batch::Column;
use crate::core::engine::Emitted;
use crate::core::schema::DataType;

/// Where a query's results go. Trait object: the one place users plug in.
pub trait Sink: Send {
    fn write(&mut self, results: &Emitted<'_>) -> io::Result<()>;
    fn flush(&mut self) -> io::Result<()>;
}

/// JSON lines: `{"query":"q","latency_ms":0.42,"col":value,...}` per result row.
pub struct JsonLines<W: Write + Send> {
    out: BufWriter<W>,
}

impl JsonLines<io::Stdout> {
    pub fn stdout() -> JsonLines<io::Stdout> {
        JsonLines::new(io::stdout())
    }
}

impl JsonLines<File> {
    /// Creates (truncates) `path`, making its directory if needed.
    pub fn create(path: &Path) -> io::Result<JsonLines<File>> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(JsonLines::new(File::create(path)?))
    }
}

impl<W: Write + Send> JsonLines<W> {
    pub fn new(w: W) -> JsonLines<W> {
        JsonLines {
            out: BufWriter::with_capacity(1 << 16, w),
        }
    }

    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write + Send> Sink for JsonLines<W> {
    fn write(&mut self, r: &Emitted<'_>) -> io::Result<()> {
        write_rows(&mut self.out, r)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes the rows of `r` as JSON lines.
pub fn write_rows(w: &mut impl Write, r: &Emitted<'_>) -> io::Result<()> {
    let query = serde_json::to_string(r.query).map_err(io::Error::other)?;
    let names: Vec<String> = r
        .names
        .iter()
        .map(|n| serde_json::to_string(n).unwrap_or_else(|_| "\"?\"".into()))
        .collect();
    for row in 0..r.batch.len() {
        let latency_ms = (r.emitted_at - r.batch.arrival[row]) as f64 / 1e6;
        write!(w, "{{\"query\":{query},\"latency_ms\":{latency_ms:.3}")?;
        for ((name, col), ty) in names.iter().zip(&r.batch.columns).zip(r.types) {
            write!(w, ",{name}:")?;
            write_value(w, col, row, *ty)?;
        }
        w.write_all(b"}\n")?;
    }
    Ok(())
}

fn write_value(w: &mut impl Write, col: &Column, row: usize, ty: DataType) -> io::Result<()> {
    match col {
        Column::Int(v) if ty == DataType::Timestamp => {
            let t = UNIX_EPOCH + Duration::from_nanos(v[row].max(0) as u64);
            write!(w, "\"{}\"", humantime::format_rfc3339_millis(t))
        }
        Column::Int(v) => write!(w, "{}", v[row]),
        Column::Float(v) if v[row].is_finite() => write!(w, "{}", v[row]),
        Column::Float(_) => w.write_all(b"null"),
        Column::Bool(v) => write!(w, "{}", v[row]),
        Column::Str(v) => serde_json::to_writer(&mut *w, &*v[row]).map_err(io::Error::other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Batch;
    use crate::core::schema::Scalar;

    #[test]
    fn rows_are_json_lines_with_query_and_latency() {
        let types = [
            DataType::Int,
            DataType::Str,
            DataType::Float,
            DataType::Timestamp,
        ];
        let mut b = Batch::new(&types, 2);
        b.push_row(
            1_000_000,
            &[
                Scalar::Int(7),
                Scalar::Str("a\"b".into()),
                Scalar::Float(2.5),
                Scalar::Timestamp(1_500_000_000),
            ],
        );
        let names: Vec<String> = ["k", "s", "x", "ts"].map(String::from).to_vec();
        let e = Emitted {
            index: 0,
            query: "q",
            names: &names,
            types: &types,
            batch: &b,
            approx: None,
            emitted_at: 3_500_000,
        };
        let mut out = Vec::new();
        write_rows(&mut out, &e).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"query\":\"q\",\"latency_ms\":2.500,\"k\":7,\"s\":\"a\\\"b\",\"x\":2.5,\
             \"ts\":\"1970-01-01T00:00:01.500Z\"}\n"
        );
    }
}
