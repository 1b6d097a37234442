//! Result sinks: JSON lines to stdout or to a file per query (the text of a row is
//! `json_rows`'). Invariant: a sink writes rows in the order it is handed them.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::core::engine::Emitted;
pub use crate::runtime::json_rows::write_rows;

/// Where a query's results go. Trait object: the one place users plug in.
pub trait Sink: Send {
    fn write(&mut self, results: &Emitted<'_>) -> io::Result<()>;
    fn flush(&mut self) -> io::Result<()>;
    /// Rows this sink took but could not deliver since it was last asked, and a note on
    /// why to report (once per outage). Sinks that fail by returning errors keep the
    /// default; a sink that outlives outages (`tcp`) counts its losses here.
    fn take_lost(&mut self) -> (u64, Option<String>) {
        (0, None)
    }
    /// Ends the sink at the end of the run: delivers what it still holds, within a
    /// deadline of its own. By default a flush.
    fn close(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// JSON lines: `{"query":"q","latency_ms":0.42,"col":value,...}` per result row. An
/// approximate row appends `"keep":0.5`, then `"col_ci95":[lo,hi]` for each scaled
/// aggregate and `"col_bound":"lower"` (MAX) or `"upper"` (MIN) for each observed one.
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
