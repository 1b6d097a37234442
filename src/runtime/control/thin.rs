//! Thinning a late backlog when a plan cuts. A plan's keeps apply to what arrives next; in
//! a surge's first tick, before any plan, each query's queue takes everything offered (at
//! 7x capacity, 50 ms of input is about 350 ms of work), and under a work-conserving
//! scheduler every tuple that arrives later waits behind that backlog whatever the plan
//! keeps. So when a plan is installed while the backlog will make a query late, the queued
//! tuples of each query the plan cuts by at least `LEAST_CUT` are brought to the plan's
//! keep (`Engine::thin_queued`): a queue paused by the plan empties at once, without a
//! pass over its rows.
//!
//! Invariant: only queries whose plan drops at random (or only at their stream) are
//! thinned, never a lossless one; only at control ticks (the inner guard's halving between
//! ticks leaves the queue alone: a cut every turn would cost more passes than it saves).

use super::Controller;
use super::guard::{AHEAD, GUARD};
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::shed::{QueryDrop, ShedKind, ShedPlan};

/// A queued item is thinned only when the plan keeps at most this share of the keep it
/// was admitted at: a small cut is left to the scheduler (it would cost a pass over the
/// rows for little work saved).
pub const LEAST_CUT: f64 = 0.8;

impl Controller {
    /// After installing `p` at `now`: when the queued work (every query's depth at its
    /// measured cost) reaches `AHEAD` of some query's target (`GUARD` under a semantic
    /// policy), or its oldest tuple has waited `GUARD` of it, thins that query's queue to the plan's keep (stream keep
    /// times query keep; `streams[q]` is query `q`'s stream). Returns the tuples thinned,
    /// per query (empty when none were).
    pub(super) fn thin_backlog(
        &mut self,
        engine: &mut Engine,
        p: &ShedPlan,
        streams: &[usize],
        now: Nanos,
    ) -> Vec<u64> {
        if matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop) || !p.shedding {
            return Vec::new();
        }
        let costs = &self.guard_costs;
        let backlog: f64 = engine
            .queued_queries()
            .map(|q| engine.queue_depth(q) as f64 * costs.get(q).copied().unwrap_or(0.0))
            .sum();
        // As the inner guard: a semantic policy's plan is one of value, and its run waits
        // until the backlog is nearly late (`GUARD`) before losing tuples blind to it.
        let ahead = if self.policy.params.kind == ShedKind::Semantic {
            GUARD
        } else {
            AHEAD
        };
        let mut thinned = vec![0; p.queries.len()];
        for (q, (drop, &stream)) in p.queries.iter().zip(streams).enumerate() {
            let keep = match *drop {
                QueryDrop::KeepAll => 1.0,
                QueryDrop::Random { keep } => keep,
                _ => continue,
            };
            let Some(t) = self.targets.get(q).copied().flatten() else {
                continue;
            };
            let t = t as f64;
            let late = backlog >= ahead * t
                || engine
                    .oldest_queued(q)
                    .is_some_and(|a| (now - a) as f64 >= GUARD * t);
            // A queue ceiling's one-tick drain is thinned to as well (`drain.rs`): the
            // queue goes at once rather than over the tick.
            let goal = keep * p.streams.get(stream).copied().unwrap_or(1.0);
            // A plan that pauses a query (keep 0) empties its late queue too, though the
            // pause may come from this very backlog (its melt claims capacity): left to
            // drain, the simulated 7x surge's sliding window came out at 784 ms against
            // 200 in its first second (`tests/thin.rs`); the target is the promise.
            if late && goal < 1.0 {
                let n = engine.thin_queued(q, goal, LEAST_CUT);
                self.monitor.note_thinned(q, n);
                thinned[q] = n;
            }
        }
        self.thinned += thinned.iter().sum::<u64>();
        if thinned.iter().all(|&n| n == 0) {
            thinned.clear();
        }
        thinned
    }
}
