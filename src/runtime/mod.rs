//! The drivers around the pure engine. `simulated` steps it on virtual time and is pure
//! itself; with the `shell` feature come the wall clock, the live driver (tokio sources,
//! the engine loop), sinks and the status line. Only the shell and the CLI do I/O.

#[cfg(feature = "shell")]
pub mod assemble;
#[cfg(feature = "shell")]
pub mod clock;
pub mod control;
#[cfg(feature = "shell")]
pub mod live;
pub mod monitor;
pub mod simulated;
#[cfg(feature = "shell")]
pub mod sink;
pub mod status;
