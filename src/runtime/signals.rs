//! Signals as stop requests: Ctrl-C (everywhere) and SIGTERM (Unix) each call
//! `StopHandle::request`, so the first one stops the run cleanly and the second aborts it
//! through the handle. Nothing here prints or exits; the driver reports the request as an
//! event and the CLI picks the exit code.

use super::stop::{StopHandle, StopReason};

/// Watches for stop signals on `runtime` for as long as it runs.
pub fn watch_signals(runtime: &tokio::runtime::Runtime, stop: StopHandle) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // One listener per signal for the whole run, so none is missed between two.
        for (kind, reason) in [
            (SignalKind::terminate(), StopReason::Terminate),
            (SignalKind::interrupt(), StopReason::Interrupt),
        ] {
            let stop = stop.clone();
            runtime.spawn(async move {
                let Ok(mut s) = signal(kind) else {
                    return;
                };
                while s.recv().await.is_some() {
                    stop.request(reason);
                }
            });
        }
    }
    #[cfg(not(unix))]
    runtime.spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            stop.request(StopReason::Interrupt);
        }
    });
}
