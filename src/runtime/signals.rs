//! Signals as stop requests: Ctrl-C (everywhere) and SIGTERM (Unix) each call
//! `StopHandle::request`, so the first one stops the run cleanly and the second aborts it
//! through the handle. Nothing here prints or exits; the driver reports the request as an
//! event and the CLI picks the exit code.

use super::stop::{StopHandle, StopReason};

/// Watches for stop signals on `runtime` for as long as it runs.
pub fn watch_signals(runtime: &tokio::runtime::Runtime, stop: StopHandle) {
    #[cfg(unix)]
    {
        let term = stop.clone();
        runtime.spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(mut s) = signal(SignalKind::terminate()) else {
                return;
            };
            while s.recv().await.is_some() {
                term.request(StopReason::Terminate);
            }
        });
    }
    runtime.spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            stop.request(StopReason::Interrupt);
        }
    });
}
