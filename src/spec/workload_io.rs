//! The validated source kinds that bring outside data in (TCP, file replay) and the Nexmark
//! stream: every value here has passed `build_source`, so sources never re-check it.

use std::net::SocketAddr;

use crate::generator::RateProfile;

/// How lines encode tuples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineFormat {
    /// One JSON object per line; keys are field names, other keys are ignored.
    Jsonl,
    /// Comma-separated values, one record per line.
    Csv,
}

impl LineFormat {
    pub fn label(self) -> &'static str {
        match self {
            LineFormat::Jsonl => "jsonl",
            LineFormat::Csv => "csv",
        }
    }
}

/// The default `tcp.listen`: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7070";
/// The default `tcp.max_line` in bytes.
pub const DEFAULT_MAX_LINE: usize = 65_536;
/// The default `tcp.max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// A TCP listener: one tuple per line, from many connections at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSpec {
    pub listen: SocketAddr,
    pub format: LineFormat,
    /// Longest accepted line in bytes, newline excluded.
    pub max_line: usize,
    /// Most connections open at once; at least 1.
    pub max_connections: usize,
    /// Threads that parse connections, 1 to 64; `None`: the machine's cores, at most 4.
    pub parse_threads: Option<usize>,
}

/// A file replayed line by line.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySpec {
    pub file: String,
    pub format: LineFormat,
    pub pace: ReplayPace,
    /// Start again at the first line after the last.
    pub repeat: bool,
}

/// When a replayed tuple is due.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayPace {
    /// As fast as the engine takes it.
    Unpaced,
    /// At the recorded spacing of timestamp column `column`, `speed` times faster.
    Timestamps { column: usize, speed: f64 },
    /// At a rate profile.
    Rate(RateProfile),
}

/// Which Nexmark stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NexmarkEvent {
    Person,
    Auction,
    Bid,
}

impl NexmarkEvent {
    pub fn label(self) -> &'static str {
        match self {
            NexmarkEvent::Person => "person",
            NexmarkEvent::Auction => "auction",
            NexmarkEvent::Bid => "bid",
        }
    }
}

/// One Nexmark stream; `columns[i]` is the event field that fills schema field `i`.
#[derive(Clone, Debug, PartialEq)]
pub struct NexmarkSpec {
    pub event: NexmarkEvent,
    /// Events of all kinds per second.
    pub rate: RateProfile,
    /// Events of all kinds after which the stream ends.
    pub count: Option<u64>,
    pub seed: u64,
    pub columns: Vec<crate::generator::nexmark::NexmarkField>,
}
