//! The workload file format, part three: the source kinds that bring outside data in
//! (`tcp`, `replay`) and the Nexmark benchmark stream (`nexmark`), as serde structs that
//! mirror the YAML one to one. These doc comments are the reference for those blocks;
//! `build_source` validates them.
//!
//! ```yaml
//! streams:
//!   readings:
//!     schema: {sensor: int, temp: float, ts: timestamp}
//!     source:
//!       tcp: {listen: 127.0.0.1:7070, format: jsonl, max_line: 65536, max_connections: 64}
//!   trace:
//!     schema: {sensor: int, temp: float, ts: timestamp}
//!     source:
//!       replay: {file: data/trace.csv, format: csv, timestamps: ts, speed: 10}
//!   bids:
//!     schema: {auction: int, bidder: int, price: int, date_time: timestamp}
//!     source:
//!       nexmark: {event: bid, rate: 1000000}
//! ```

use serde::Deserialize;

use super::distribution::RateConfig;

/// `source.tcp:` a TCP listener; every connection sends one tuple per line.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// `IP:port` to listen on (default `127.0.0.1:7070`, loopback only). Listening on
    /// another interface, e.g. `0.0.0.0:7070`, exposes the port to the network: say so
    /// explicitly.
    #[serde(default)]
    pub listen: Option<String>,
    /// `jsonl` (default): one JSON object per line, keys are field names (others are
    /// ignored). `csv`: the fields in schema order, comma-separated, no header line.
    #[serde(default)]
    pub format: Option<FormatConfig>,
    /// Longest accepted line in bytes, newline excluded, 16 to 16777216 (default 65536).
    /// A longer line is counted as malformed and skipped up to its newline.
    #[serde(default)]
    pub max_line: Option<usize>,
    /// Most connections open at once, 1 to 10000 (default 64). A connection beyond the
    /// limit is told so in one line and closed at once; it is reported, never queued.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Threads that read and parse connections, 1 to 64 (default: the machine's cores, at
    /// most 4). Each connection is parsed on one thread at a time, so more threads help
    /// only with more connections; they share the cores with the engine thread.
    #[serde(default)]
    pub parse_threads: Option<usize>,
}

/// `format:` how lines encode tuples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FormatConfig {
    Jsonl,
    Csv,
}

/// `source.replay:` a file of tuples, one per line, replayed once or in a loop.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// Required. The file, relative to the working directory (as sink files are).
    pub file: String,
    /// `jsonl` or `csv` (default: from the file's extension, `.csv` or else `jsonl`).
    /// A CSV file starts with a header line naming the schema's fields, in any order.
    #[serde(default)]
    pub format: Option<FormatConfig>,
    /// Pace by a timestamp field: tuple `k` is sent `(ts_k - ts_0) / speed` after the
    /// first, so a trace keeps its recorded spacing. Needs a non-decreasing timestamp
    /// field; conflicts with `rate`.
    #[serde(default)]
    pub timestamps: Option<String>,
    /// With `timestamps`: how much faster than recorded, positive (default 1).
    #[serde(default)]
    pub speed: Option<f64>,
    /// Pace at a rate profile instead, as a generator's `rate` (e.g. `50000`). Without
    /// `timestamps` or `rate` the file is read as fast as the engine takes it (`pull`
    /// flow: nothing is lost).
    #[serde(default)]
    pub rate: Option<RateConfig>,
    /// Start again at the first line after the last (default false). With timestamps, a
    /// loop continues one mean gap after the last tuple.
    #[serde(default, rename = "loop")]
    pub repeat: Option<bool>,
}

/// `source.nexmark:` one of the three streams of the Nexmark auction benchmark.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NexmarkConfig {
    /// Required: `person`, `auction` or `bid`. The stream's schema names any of that
    /// event's fields (see docs/workload.md), in any order, with their types.
    pub event: NexmarkEventConfig,
    /// Required. Nexmark events per second of all three kinds together, as a generator's
    /// `rate`; this stream gets its share (persons 1/50, auctions 3/50, bids 46/50). Streams
    /// with the same rate and seed together form one consistent Nexmark stream.
    pub rate: RateConfig,
    /// Stop after this many events of all kinds, at least 1 (default: endless).
    #[serde(default)]
    pub count: Option<u64>,
    /// Seed of the event values (default: the workload's seed). Give the three streams of
    /// one auction the same seed so bids refer to auctions and persons that exist.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// `nexmark.event:` which Nexmark stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NexmarkEventConfig {
    Person,
    Auction,
    Bid,
}
