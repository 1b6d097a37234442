//! The stop handle: how anything outside a run (a signal, a dashboard key, a test, the
//! control API) asks it to end. The first request stops cleanly (sources stop, queues
//! drain, windows and sinks flush, the summary is printed); a second one aborts: the driver
//! leaves its loop at once, the observers still get the end of the run (so a full-screen
//! dashboard restores the terminal), and the caller exits. Nothing here exits the process.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Why a run was asked to stop; its exit code follows the shell's convention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Ctrl-C (SIGINT): exit code 130.
    Interrupt,
    /// SIGTERM (a service manager, `timeout`): exit code 143.
    Terminate,
    /// Asked for by the program (a dashboard's `q`, a test, the control API): exit 0.
    Requested,
}

impl StopReason {
    pub fn exit_code(self) -> u8 {
        match self {
            StopReason::Interrupt => 130,
            StopReason::Terminate => 143,
            StopReason::Requested => 0,
        }
    }

    fn code(self) -> u8 {
        match self {
            StopReason::Interrupt => 1,
            StopReason::Terminate => 2,
            StopReason::Requested => 3,
        }
    }

    fn from_code(c: u8) -> Option<StopReason> {
        match c {
            1 => Some(StopReason::Interrupt),
            2 => Some(StopReason::Terminate),
            3 => Some(StopReason::Requested),
            _ => None,
        }
    }
}

/// A cloneable handle; every clone controls the same run.
///
/// State in one byte: the low two bits hold the first stop reason, bit 2 says a second
/// request (abort) came in.
#[derive(Clone, Debug, Default)]
pub struct StopHandle(Arc<AtomicU8>);

const ABORT: u8 = 4;

impl StopHandle {
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Asks the run to stop; a second call (from anywhere) asks it to abort.
    pub fn request(&self, reason: StopReason) {
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some(if s & 3 == 0 { reason.code() } else { s | ABORT })
            });
    }

    /// The first stop request, if any.
    pub fn reason(&self) -> Option<StopReason> {
        StopReason::from_code(self.0.load(Ordering::Acquire) & 3)
    }

    pub fn is_stopping(&self) -> bool {
        self.reason().is_some()
    }

    /// Whether a second request asked the run to leave without draining.
    pub fn is_aborted(&self) -> bool {
        self.0.load(Ordering::Acquire) & ABORT != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_request_stops_second_aborts_and_the_first_reason_stays() {
        let h = StopHandle::new();
        assert!(!h.is_stopping() && !h.is_aborted());
        let other = h.clone();
        other.request(StopReason::Terminate);
        assert_eq!(h.reason(), Some(StopReason::Terminate));
        assert!(!h.is_aborted());
        h.request(StopReason::Interrupt);
        assert!(h.is_aborted());
        assert_eq!(h.reason(), Some(StopReason::Terminate));
        assert_eq!(h.reason().unwrap().exit_code(), 143);
    }
}
