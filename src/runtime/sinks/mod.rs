//! Result sinks that talk to the outside and outlive its outages (`tcp`). The simple sinks
//! (stdout, a JSONL file) and the `Sink` trait live in `runtime::sink`.

pub mod tcp;

pub use tcp::TcpSink;
