//! The `tcp` result sink as written (`TcpSinkConfig`) and as validated (`TcpSinkSpec`):
//! a query's rows as JSON lines to a listener elsewhere, reconnecting with backoff, with a
//! bounded buffer whose overflow is counted as undelivered. A spec comes out only if every
//! setting is valid; every error names its setting path.
//!
//! ```yaml
//! queries:
//!   hot:
//!     sql: SELECT sensor, temp FROM readings WHERE temp > 30
//!     sink: {tcp: {connect: 127.0.0.1:9000, buffer: 4194304}}
//! ```

use std::net::SocketAddr;

use serde::Deserialize;

use super::error::{Diagnostics, join};

/// The default `sink.tcp.buffer` in bytes: results held while the listener is away or slow.
pub const DEFAULT_SINK_BUFFER: usize = 4 << 20;

/// `sink.tcp:` send the query's results, one JSON object per line, to a TCP listener.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSinkConfig {
    /// `IP:port` of the listener to connect to, e.g. `127.0.0.1:9000`. The run does not
    /// wait for it: until it is there, and after it goes away, the sink retries with a
    /// backoff from 50 ms doubling up to 2 s.
    pub connect: String,
    /// `jsonl`, the only format for now (the rows `stdout` and `jsonl` sinks write).
    #[serde(default)]
    pub format: Option<SinkFormatConfig>,
    /// Bytes of results held while the listener is away or slower than the query, 4096 to
    /// 1073741824 (default 4194304, 4 MiB). Rows that do not fit are counted as
    /// undelivered, as are rows still held when the run ends and the listener is still
    /// away after a short grace (1 s): nothing is lost silently.
    #[serde(default)]
    pub buffer: Option<usize>,
}

/// `sink.tcp.format:` how rows are encoded on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkFormatConfig {
    Jsonl,
}

/// A validated `tcp` sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSinkSpec {
    pub connect: SocketAddr,
    /// Most bytes held for the listener; at least 4096.
    pub buffer: usize,
}

/// Checks `t`, found at `path` (`queries.<name>.sink.tcp`).
pub(crate) fn build_tcp_sink(
    diag: &mut Diagnostics,
    path: &str,
    t: &TcpSinkConfig,
) -> Option<TcpSinkSpec> {
    let before = diag.count();
    let connect = match t.connect.trim().parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            diag.at(
                &join(path, "connect"),
                format!(
                    "connect `{}` is not an address; write IP:port, e.g. 127.0.0.1:9000",
                    t.connect
                ),
            );
            None
        }
    };
    let buffer = t.buffer.unwrap_or(DEFAULT_SINK_BUFFER);
    if !(4096..=1 << 30).contains(&buffer) {
        diag.at(
            &join(path, "buffer"),
            format!("buffer must be 4096 to 1073741824 bytes, got {buffer}"),
        );
    }
    (diag.count() == before).then(|| TcpSinkSpec {
        connect: connect.expect("checked"),
        buffer,
    })
}
