//! The drivers around the pure engine. `simulated` steps it on virtual time and is pure
//! itself, as are the observer seam (`observe`), the stop handle and arrival frontiers;
//! with the `shell` feature come the wall clock, the live driver, its sources, sinks and
//! signal handling. Only the shell, the observers that write, and the CLI do I/O.

#[cfg(feature = "shell")]
pub mod adhoc;
#[cfg(feature = "shell")]
pub mod api;
#[cfg(feature = "shell")]
pub mod assemble;
#[cfg(feature = "shell")]
pub mod clock;
pub mod control;
pub mod controls;
pub mod frontier;
#[cfg(feature = "shell")]
pub mod inbox;
#[cfg(feature = "shell")]
pub mod json_rows;
#[cfg(feature = "shell")]
pub mod live;
pub mod manage;
#[cfg(feature = "shell")]
pub mod metrics;
pub mod monitor;
pub mod observe;
#[cfg(feature = "shell")]
pub mod outputs;
#[cfg(feature = "shell")]
pub mod pace;
#[cfg(feature = "shell")]
mod pump;
#[cfg(feature = "shell")]
pub mod signals;
pub mod simulated;
#[cfg(feature = "shell")]
pub mod sink;
#[cfg(feature = "shell")]
pub mod sinks;
#[cfg(feature = "shell")]
pub mod source;
#[cfg(feature = "shell")]
pub mod source_shed;
#[cfg(feature = "shell")]
pub mod sources;
pub mod status;
pub mod stop;
#[cfg(feature = "shell")]
pub mod tui;
pub mod workers;
