//! Arrival-time frontiers: each source promises "every tuple I stamp from now on is stamped
//! at or after F"; the engine may close an arrival-time window of a stream once the
//! frontier of its sources has passed the window's end. Invariant: a stream's frontier is
//! the minimum over its sources that are neither finished nor idle, so a silent source
//! holds its windows back only until its idle timeout, as Flink's source idleness does.
//! Streams do not wait for each other: each query waits only for its own stream.
//!
//! Pure: times are passed in. The live driver reads the atomics sources write; tests drive
//! `stream_frontier` directly on chosen times.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::core::schema::Nanos;

/// A finished source: it will stamp nothing more.
pub const DONE: Nanos = Nanos::MAX;

/// One source's frontier, written by the source, read by the engine thread.
#[derive(Debug)]
pub struct SourceFrontier {
    value: AtomicI64,
    /// When the source last showed it is alive (moved its frontier or waited on a full
    /// engine): a pull source blocked by backpressure is busy, not idle.
    touched: AtomicI64,
    idle_timeout: Nanos,
}

impl SourceFrontier {
    pub fn new(start: Nanos, idle_timeout: Nanos) -> SourceFrontier {
        SourceFrontier {
            value: AtomicI64::new(start),
            touched: AtomicI64::new(start),
            idle_timeout,
        }
    }

    /// Nothing stamped from now on will be stamped before `t` (`now` is when it was said).
    pub fn advance(&self, t: Nanos, now: Nanos) {
        self.value.fetch_max(t, Ordering::AcqRel);
        self.touched.store(now, Ordering::Release);
    }

    /// The source is alive but cannot move its frontier (it waits for room).
    pub fn touch(&self, now: Nanos) {
        self.touched.store(now, Ordering::Release);
    }

    /// The source has ended.
    pub fn finish(&self) {
        self.value.store(DONE, Ordering::Release);
    }

    pub fn view(&self) -> FrontierView {
        FrontierView {
            value: self.value.load(Ordering::Acquire),
            touched: self.touched.load(Ordering::Acquire),
            idle_timeout: self.idle_timeout,
        }
    }
}

/// One source's frontier as read at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontierView {
    pub value: Nanos,
    pub touched: Nanos,
    pub idle_timeout: Nanos,
}

impl FrontierView {
    pub fn is_idle(&self, now: Nanos) -> bool {
        self.value != DONE && now.saturating_sub(self.touched) > self.idle_timeout
    }
}

/// A stream's arrival-time frontier at `now`: the least frontier among its active sources;
/// `now` when every source is finished or idle (nothing can arrive stamped before `now`
/// except from an idle source, whose late tuples are counted as late).
pub fn stream_frontier(now: Nanos, sources: impl IntoIterator<Item = FrontierView>) -> Nanos {
    sources
        .into_iter()
        .filter(|f| f.value != DONE && !f.is_idle(now))
        .map(|f| f.value)
        .min()
        .unwrap_or(now)
        .min(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn the_slowest_active_source_holds_the_frontier() {
        let a = SourceFrontier::new(0, 1000 * MS);
        let b = SourceFrontier::new(0, 1000 * MS);
        a.advance(500 * MS, 500 * MS);
        b.advance(200 * MS, 500 * MS);
        assert_eq!(stream_frontier(600 * MS, [a.view(), b.view()]), 200 * MS);
        // Frontiers never move back.
        b.advance(100 * MS, 600 * MS);
        assert_eq!(b.view().value, 200 * MS);
    }

    #[test]
    fn an_idle_source_stops_holding_windows_back_after_its_timeout() {
        let busy = SourceFrontier::new(0, 100 * MS);
        let idle = SourceFrontier::new(0, 100 * MS);
        idle.advance(50 * MS, 50 * MS);
        for t in (60..=400).step_by(10) {
            busy.advance(t * MS, t * MS);
            let f = stream_frontier(t * MS, [busy.view(), idle.view()]);
            if t * MS - 50 * MS <= 100 * MS {
                assert_eq!(f, 50 * MS, "at {t} ms the silent source still counts");
            } else {
                assert_eq!(f, t * MS, "at {t} ms the silent source is idle");
            }
        }
        // It speaks again: it holds the frontier again.
        idle.advance(380 * MS, 400 * MS);
        assert_eq!(
            stream_frontier(400 * MS, [busy.view(), idle.view()]),
            380 * MS
        );
    }

    #[test]
    fn a_waiting_source_is_not_idle_and_finished_sources_do_not_count() {
        let waiting = SourceFrontier::new(0, 100 * MS);
        waiting.advance(10 * MS, 10 * MS);
        waiting.touch(900 * MS);
        let done = SourceFrontier::new(0, 100 * MS);
        done.finish();
        assert_eq!(
            stream_frontier(950 * MS, [waiting.view(), done.view()]),
            10 * MS
        );
        assert_eq!(stream_frontier(950 * MS, [done.view()]), 950 * MS);
    }
}
