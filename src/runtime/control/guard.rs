//! The fast inner guard: between control ticks, at scheduler turns, a query whose queued
//! input will be late gets its drop point's keep cut at once. "Will be late" is predicted:
//! the latest of the oldest queued tuple's age, the work queued ahead of the newest (every
//! queued tuple at its query's measured cost), and the queue's depth over the rate the
//! query has been taking tuples at (Little's law: a deep queue of cheap tuples is as late
//! as its depth says, however little work it holds), once its oldest tuple has waited a
//! quarter of the target (a batch just in from a slow source is deep for its rate, not
//! late). Under a surge the backlog grows faster than any age (at 3x, twice as fast), so
//! the surge is caught while it builds, not when its first tuple is already near the
//! target; before shedding has begun the work ahead is cut at half the target (`AHEAD`),
//! since every queued tuple still waits it out. Each query is cut at most once per
//! control tick, unless the backlog has since grown by half again (a halving at 3x still
//! leaves 1.5x: the queue keeps growing until the next plan, and a 200 ms burst is over by
//! then), up to `MAX_CUTS` times. Invariant: never a lossless query, never a second cut of
//! a query while the backlog it was cut at has not grown, and the check is two queue peeks
//! and a division per query with queued input.

use super::Controller;
use crate::core::drop::DropRule;
use crate::core::engine::Engine;
use crate::core::plan::PlanBody;
use crate::core::schema::Nanos;
use crate::runtime::monitor::QosSnapshot;
use crate::shed::{QueryDrop, ShedKind, ShedPlan};

/// The inner guard cuts when a query's predicted latency reaches this share of its target:
/// above the feedback's setpoint (0.8 by default), so that in a steady overload the
/// feedback, not a cut every tick, holds the latency.
pub const GUARD: f64 = 0.9;

/// The inner guard cuts when the wait a query's newest queued tuple has ahead of it (the
/// backlog, or its depth over its rate) reaches this share of its target (for a query
/// whose waits show in its latency at once, `waits_show`): earlier than an age, because the work ahead keeps growing until a cut takes effect and every queued
/// tuple still has to wait it out (at a step to 3x, a cut at 0.9 of the target left a
/// queue whose last tuples came out over it).
pub const AHEAD: f64 = 0.5;

/// Little's law is believed once the oldest queued tuple has waited this share of the
/// target: a batch that has just arrived from a slow source is deep for its rate but not
/// late.
pub const CORROBORATED: f64 = 0.25;

/// A query the guard cut in this control tick is cut again only once the backlog has
/// grown to this multiple of what it was at that cut: the cut was not enough.
pub const REGROWN: f64 = 1.5;

/// At most this many cuts of one query per control tick (keep / 8).
pub const MAX_CUTS: u32 = 3;

impl Controller {
    /// The fast inner guard, for the driver to call at every scheduler turn. A query's
    /// predicted latency is the latest of its oldest queued tuple's age, the backlog (the
    /// ns of work queued over all queries, depth times measured cost per tuple, which its
    /// newest tuple waits for under a work-conserving scheduler) and, once the oldest has
    /// waited `CORROBORATED` of the target, its depth over its rate. When that reaches `GUARD` of
    /// its target, its drop point's keep is halved at once instead of at the next control
    /// tick (once per tick, or again when the backlog has grown `REGROWN` times since that
    /// cut, up to `MAX_CUTS`; the next plan takes over from there, its feedback seeing the
    /// same queue). Lossless queries are never cut. Returns whether it cut.
    pub fn guard(&mut self, engine: &mut Engine, now: Nanos) -> bool {
        if matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop) {
            return false;
        }
        let costs = &self.guard_costs;
        let backlog: f64 = engine
            .queued_queries()
            .map(|q| engine.queue_depth(q) as f64 * costs.get(q).copied().unwrap_or(0.0))
            .sum();
        let mut late = std::mem::take(&mut self.guard_late);
        late.clear();
        let rates = &self.guard_rates;
        let cut_before = &self.guard_cut;
        // Cut already in this tick: again only when that cut was not enough, and only
        // while not shedding yet (once shedding, the feedback holds the line: live, re-cuts
        // while shedding took 7x-hop, step and ramp from 0 to 1 second of 60 over target,
        // with the engine less busy).
        let shedding = self.state.shedding();
        let may_cut = |q: usize| match cut_before.get(q) {
            Some(&(at, n)) if n > 0 => {
                !shedding && n < MAX_CUTS && at > 0.0 && backlog >= REGROWN * at
            }
            _ => true,
        };
        // Early (`AHEAD`) only while not shedding yet: the surge a plan has not met. Once
        // shedding, the feedback holds latency at its setpoint (under `GUARD`), and an
        // early cut every tick would take its place and hide the model's error from it.
        // A semantic cut halves every value range alike, the valuable ones too: it waits
        // for `GUARD` (an early cut cost the shipped experiment a tenth of its utility).
        let early = !self.state.shedding() && self.policy.params.kind != ShedKind::Semantic;
        late.extend(engine.queued_queries().filter(|&q| {
            q < self.targets.len()
                && may_cut(q)
                && !self.qos[q].as_ref().is_some_and(|s| s.lossless)
                && self.targets[q].is_some_and(|t| {
                    let t = t as f64;
                    engine.oldest_queued(q).is_some_and(|a| {
                        let age = (now - a) as f64;
                        // Little's law, once the oldest has waited: the newest queued
                        // tuple waits depth / rate.
                        let little = match rates.get(q) {
                            Some(&r) if r > 0.0 && age >= CORROBORATED * t => {
                                1e9 * engine.queue_depth(q) as f64 / r
                            }
                            _ => 0.0,
                        };
                        let ahead = if early && waits_show(engine, q, t) {
                            AHEAD
                        } else {
                            GUARD
                        };
                        age >= GUARD * t || backlog.max(little) >= ahead * t
                    })
                })
        }));
        // A cut that was not enough (the backlog regrew): every query's input feeds the
        // backlog, so every other one with queued input is cut with it, not only the one
        // with the tightest target again and again.
        let again = late
            .iter()
            .any(|&q| self.guard_cut.get(q).is_some_and(|c| c.1 > 0));
        if again {
            let cut_before = &self.guard_cut;
            let others: Vec<usize> = engine
                .queued_queries()
                .filter(|&q| {
                    !late.contains(&q)
                        && q < self.targets.len()
                        && self.targets[q].is_some()
                        && !self.qos[q].as_ref().is_some_and(|s| s.lossless)
                        && cut_before.get(q).is_none_or(|c| c.1 < MAX_CUTS)
                })
                .collect();
            late.extend(others);
        }
        let cut = !late.is_empty();
        if cut {
            self.guard_cuts += 1;
            if self.guard_cut.len() < self.targets.len() {
                self.guard_cut.resize(self.targets.len(), (0.0, 0));
            }
            for &q in &late {
                let c = &mut self.guard_cut[q];
                *c = (backlog, c.1 + 1);
            }
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

/// Whether query `q`'s queued wait shows in its latency at once: a filter's results leave
/// with their tuple, and a window closing at least once per target (`t`, ns) emits behind
/// whatever is queued. A window closing less often (a 1 s tumbling count with a 300 ms
/// target) is late only if it closes while its input waits, so the work ahead of it is
/// cut at `GUARD`, not `AHEAD`: the next plan has time to drain its queue first.
fn waits_show(engine: &Engine, q: usize, t: f64) -> bool {
    match &engine.query_plan(q).body {
        PlanBody::Project(_) => true,
        PlanBody::Aggregate(a) => a.window.slide as f64 <= t,
    }
}

/// When plan `p` sheds nothing, keeps the queries the inner guard cut in the tick just
/// ended (`cut`, per query: the backlog at its last cut and how many) at the keep the
/// guard left them: a plan that has not seen the surge yet (robust estimates give its
/// first tick no weight) would otherwise restore the keep the guard just halved, and a
/// burst of two ticks would grow a late queue under every plan. The next plan is free
/// again. A plan that sheds is left alone: its feedback holds the latency, and a guard
/// taking its place would hide the model's error from it. Only random query drops are
/// held (a semantic or window rule is a different shape of keep); `streams[q]` is query
/// `q`'s stream.
pub(super) fn hold_guard_cuts(
    engine: &Engine,
    p: &mut ShedPlan,
    cut: &[(f64, u32)],
    streams: &[usize],
) {
    if p.shedding || cut.iter().all(|c| c.1 == 0) {
        return;
    }
    let rules = engine.drop_rules();
    for (q, &(_, n)) in cut.iter().enumerate() {
        let (Some(drop), Some(DropRule::Random { keep: guarded })) =
            (p.queries.get_mut(q), rules.queries.get(q))
        else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let planned = match *drop {
            QueryDrop::KeepAll => 1.0,
            QueryDrop::Random { keep } => keep,
            _ => continue,
        };
        if planned > *guarded {
            *drop = QueryDrop::Random { keep: *guarded };
            let stream = streams.get(q).and_then(|&s| p.streams.get(s)).copied();
            if let Some(d) = p.delivered.get_mut(q) {
                *d = stream.unwrap_or(1.0) * guarded;
            }
            p.shedding = true;
        }
    }
}

/// Per query: the index of its stream.
pub(super) fn streams_of(qos: &QosSnapshot) -> Vec<usize> {
    qos.queries.iter().map(|q| q.stream).collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Batch;
    use crate::core::schema::{DataType, Scalar};
    use crate::runtime::assemble::engine_for;
    use crate::spec::{self, parse_policy};

    const W: &str = r#"
name: guard
engine: {mode: live, tick: 50ms}
streams:
  s:
    schema: {k: int}
    rate: 1000
    fields: {k: {uniform: {min: 1, max: 9}}}
queries:
  q:
    sql: SELECT k FROM s
    qos: {latency: {p99: 100ms}}
  exact:
    sql: SELECT k FROM s
    qos: {latency: {p99: 100ms}, lossless: true}
"#;

    /// A controller and engine with `n` tuples queued for both queries, all arriving at
    /// `at`, and the guard believing each costs `cost` ns.
    fn queued(n: usize, at: Nanos, cost: f64) -> (Controller, Engine) {
        let w = spec::parse(W, "guard.yaml").expect("valid workload");
        let policy = parse_policy("kind: random\n", "random.yaml").expect("valid policy");
        let mut engine = engine_for(&w).expect("engine");
        let mut c = Controller::new(&w, &mut engine, policy, 1.0, w.engine.tick, 0);
        let mut b = Batch::new(&[DataType::Int], n);
        for i in 0..n {
            b.push_row(at, &[Scalar::Int(i as i64)]);
        }
        engine.ingest(0, b);
        c.guard_costs = vec![cost; 2];
        (c, engine)
    }

    #[test]
    fn a_deep_queue_of_cheap_tuples_is_cut_by_its_depth_over_its_rate() {
        // 10,000 tuples at 1 ns each: 20 us of work, 30 ms old. But the query has been
        // taking 100k tuples/s, so the newest waits 100 ms.
        let (mut c, mut engine) = queued(10_000, 0, 1.0);
        assert!(
            !c.guard(&mut engine, 30_000_000),
            "no rate known: work and age only"
        );
        c.guard_rates = vec![100_000.0, 100_000.0];
        assert!(
            !c.guard(&mut engine, 1_000_000),
            "a batch 1 ms old has not waited yet"
        );
        assert!(c.guard(&mut engine, 30_000_000), "depth over rate is late");
        assert_eq!(
            engine.drop_rules().queries[0],
            DropRule::Random { keep: 0.5 }
        );
        // The same queue at 10 M tuples/s waits 1 ms: left to the plan.
        let (mut c, mut engine) = queued(10_000, 0, 1.0);
        c.guard_rates = vec![1e7, 1e7];
        assert!(!c.guard(&mut engine, 30_000_000));
    }

    #[test]
    fn a_backlog_that_will_be_late_is_cut_before_any_tuple_is_old() {
        // 10,000 fresh tuples x 2 queries x 5 us = 100 ms of work ahead: the newest will be
        // 100 ms late though the oldest waited 1 ms.
        let (mut c, mut engine) = queued(10_000, 0, 5_000.0);
        assert!(c.guard(&mut engine, 1_000_000), "a late backlog is cut");
        let rules = engine.drop_rules();
        assert_eq!(rules.queries[0], DropRule::Random { keep: 0.5 });
        // The lossless query is as late, and never cut.
        assert_eq!(rules.queries[1], DropRule::KeepAll);
        // Once per control tick.
        assert!(!c.guard(&mut engine, 2_000_000));
    }

    #[test]
    fn a_backlog_past_half_the_target_is_cut_before_it_is_late() {
        // 10,000 x 2 x 3 us = 60 ms of work ahead of fresh tuples: over half the 100 ms
        // target, so cut now (the work ahead only grows until a cut takes effect); 40 ms
        // is left to the plan.
        let (mut c, mut engine) = queued(10_000, 0, 3_000.0);
        assert!(c.guard(&mut engine, 1_000_000));
        assert_eq!(
            engine.drop_rules().queries[0],
            DropRule::Random { keep: 0.5 }
        );
        let (mut c, mut engine) = queued(10_000, 0, 2_000.0);
        assert!(!c.guard(&mut engine, 1_000_000));
    }

    #[test]
    fn a_window_closing_less_often_than_its_target_is_cut_only_when_nearly_late() {
        // The same 60 ms of work ahead, but the window closes once a second: left to the
        // plan until the work ahead reaches `GUARD` of the target.
        let w = W.replace(
            "sql: SELECT k FROM s\n    qos: {latency: {p99: 100ms}}\n",
            "sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '1' SECOND)\n    qos: {latency: {p99: 100ms}}\n",
        );
        assert_ne!(w, W);
        let w = spec::parse(&w, "guard.yaml").expect("valid workload");
        let policy = parse_policy("kind: random\n", "random.yaml").expect("valid policy");
        let mut engine = engine_for(&w).expect("engine");
        let mut c = Controller::new(&w, &mut engine, policy, 1.0, w.engine.tick, 0);
        let mut b = Batch::new(&[DataType::Int], 10_000);
        for i in 0..10_000 {
            b.push_row(0, &[Scalar::Int(i)]);
        }
        engine.ingest(0, b);
        c.guard_costs = vec![3_000.0; 2];
        assert!(!c.guard(&mut engine, 1_000_000));
        c.guard_costs = vec![4_500.0; 2];
        assert!(c.guard(&mut engine, 1_000_000), "90 ms of work ahead");
    }

    #[test]
    fn a_semantic_cut_waits_until_nearly_late() {
        // 60 ms of work ahead: a random policy cuts (above), a semantic one, whose cut is
        // blind to value, waits for 90 ms.
        let (mut c, mut engine) = queued(10_000, 0, 3_000.0);
        c.policy = parse_policy("kind: semantic\n", "semantic.yaml").expect("valid policy");
        assert!(!c.guard(&mut engine, 1_000_000));
        c.guard_costs = vec![4_500.0; 2];
        assert!(c.guard(&mut engine, 1_000_000));
    }

    #[test]
    fn a_small_fresh_backlog_is_left_to_the_plan() {
        // 10,000 x 2 x 1 us = 20 ms of work, oldest 1 ms old: nothing will be late.
        let (mut c, mut engine) = queued(10_000, 0, 1_000.0);
        assert!(!c.guard(&mut engine, 1_000_000));
        assert_eq!(engine.drop_rules().queries[0], DropRule::KeepAll);
        // The same backlog with its oldest tuple at 95 ms is cut (age alone, as before).
        assert!(c.guard(&mut engine, 95_000_000));
    }
}
