//! The fast inner guard: between control ticks, at scheduler turns, a query whose oldest
//! queued tuple has waited most of its latency target gets its drop point's keep cut at
//! once. Invariant: at most one cut per control tick, never on a lossless query, and the
//! check is one queue peek per query with a target.

use super::Controller;
use crate::core::drop::DropRule;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::shed::ShedKind;

/// The inner guard cuts when the oldest queued tuple has waited this share of its target.
pub const GUARD: f64 = 0.9;

impl Controller {
    /// The fast inner guard, for the driver to call at every scheduler turn: when a
    /// query's oldest queued tuple has waited `GUARD` of its latency target, its drop
    /// point's keep is halved at once instead of at the next control tick (at most one cut
    /// per tick; the next plan takes over from there, its feedback seeing the same queue).
    /// Lossless queries are never cut. Cost: one queue peek per query with queued input.
    /// Returns whether it cut.
    pub fn guard(&mut self, engine: &mut Engine, now: Nanos) -> bool {
        if !self.guard_armed
            || matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop)
        {
            return false;
        }
        // Only queries with queued input can be late (in index order, as a full scan).
        let Some(q) = engine.queued_queries().find(|&q| {
            q < self.targets.len()
                && !self.qos[q].as_ref().is_some_and(|s| s.lossless)
                && self.targets[q].is_some_and(|t| {
                    engine
                        .oldest_queued(q)
                        .is_some_and(|a| (now - a) as f64 >= GUARD * t as f64)
                })
        }) else {
            return false;
        };
        self.guard_armed = false;
        self.guard_cuts += 1;
        let mut rules = engine.drop_rules();
        rules.queue_capacity = None;
        let rule = &mut rules.queries[q];
        *rule = match std::mem::take(rule) {
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
        };
        engine.install(&rules);
        true
    }
}
