//! The fast inner guard: between control ticks, at scheduler turns, a query whose queued
//! input will be late gets its drop point's keep cut at once. "Will be late" is predicted:
//! the later of the oldest queued tuple's age and the work queued ahead of the newest
//! (every queued tuple at its query's measured cost). Under a surge the backlog grows
//! faster than any age (at 3x, twice as fast), so the surge is caught while it builds, not
//! when its first tuple is already near the target. Invariant: at most one cut per
//! control tick (of every query predicted late), never on a lossless query, and the check
//! is two queue peeks per query with queued input.

use super::Controller;
use crate::core::drop::DropRule;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::shed::ShedKind;

/// The inner guard cuts when a query's predicted latency reaches this share of its target.
pub const GUARD: f64 = 0.9;

impl Controller {
    /// The fast inner guard, for the driver to call at every scheduler turn. A query's
    /// predicted latency is the later of its oldest queued tuple's age and the backlog:
    /// the ns of work queued over all queries (depth times measured cost per tuple), which
    /// its newest tuple waits for under a work-conserving scheduler. When that reaches `GUARD` of
    /// its target, its drop point's keep is halved at once instead of at the next control
    /// tick (at most one cut per tick, of every query then predicted late; the next plan
    /// takes over from there, its feedback seeing the same queue). Lossless queries are
    /// never cut. Returns whether it cut.
    pub fn guard(&mut self, engine: &mut Engine, now: Nanos) -> bool {
        if !self.guard_armed
            || matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop)
        {
            return false;
        }
        let costs = &self.guard_costs;
        let backlog: f64 = engine
            .queued_queries()
            .map(|q| engine.queue_depth(q) as f64 * costs.get(q).copied().unwrap_or(0.0))
            .sum();
        let mut late = std::mem::take(&mut self.guard_late);
        late.clear();
        late.extend(engine.queued_queries().filter(|&q| {
            q < self.targets.len()
                && !self.qos[q].as_ref().is_some_and(|s| s.lossless)
                && self.targets[q].is_some_and(|t| {
                    engine
                        .oldest_queued(q)
                        .is_some_and(|a| ((now - a) as f64).max(backlog) >= GUARD * t as f64)
                })
        }));
        let cut = !late.is_empty();
        if cut {
            self.guard_armed = false;
            self.guard_cuts += 1;
            let mut rules = engine.drop_rules();
            rules.queue_capacity = None;
            for &q in &late {
                let rule = &mut rules.queries[q];
                *rule = halved(std::mem::take(rule));
            }
            engine.install(&rules);
        }
        self.guard_late = late;
        cut
    }
}

/// `rule` keeping half as much.
fn halved(rule: DropRule) -> DropRule {
    match rule {
        DropRule::KeepAll => DropRule::Random { keep: 0.5 },
        DropRule::Random { keep } => DropRule::Random { keep: keep * 0.5 },
        DropRule::Semantic(mut bins) => {
            bins.keep.iter_mut().for_each(|k| *k *= 0.5);
            DropRule::Semantic(bins)
        }
        DropRule::Keys { keep, key_columns } => DropRule::Keys {
            keep: keep * 0.5,
            key_columns,
        },
        DropRule::Window(mut w) => {
            w.keep *= 0.5;
            DropRule::Window(w)
        }
    }
}
