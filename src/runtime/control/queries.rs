//! Changing what the controller controls while it runs: queries added, their QoS patched,
//! queries removed, the policy switched. Invariant: every per-query vector of the
//! controller (and of its monitor) keeps one entry per engine query index, removed
//! queries included, so indices stay stable for the whole run.

use super::Controller;
use super::templates::{key_columns, rows_shape, window_rule};
use crate::core::drop::DropRule;
use crate::core::engine::{DropRules, Engine};
use crate::core::schema::Nanos;
use crate::shed::{QueryDrop, ShedState};
use crate::spec::{Policy, QosSpec};

impl Controller {
    /// Starts controlling query `q`, just added to `engine`, under `qos`; `model_cost` is
    /// its declared per-tuple cost (used when the controller models declared costs). It is
    /// planned for from the next tick.
    pub fn add_query(
        &mut self,
        engine: &mut Engine,
        q: usize,
        qos: Option<QosSpec>,
        model_cost: Option<Nanos>,
    ) {
        self.monitor.add_query(engine, q, qos.clone());
        self.qos.push(qos.clone());
        self.removed.push(false);
        self.window_rules.push(window_rule(engine, q));
        self.rows_shapes.push(rows_shape(engine, q));
        self.key_columns.push(key_columns(engine, q));
        self.prev_queued.push(0.0);
        self.backlog.clear();
        self.targets
            .push(qos.as_ref().and_then(|s| s.latency).map(|l| l.target));
        if let Some(c) = &mut self.model_costs {
            c.push(model_cost.map_or(f64::NAN, |c| c as f64));
        }
        let h = &mut self.history;
        h.query_min_keep.push(1.0);
        h.utility_sum.push(0.0);
        h.utility_min.push(1.0);
        h.utility_ticks.push(0);
        if let Some(last) = &mut self.last {
            last.plan.queries.push(QueryDrop::KeepAll);
            last.plan.delivered.push(1.0);
            last.plan.utility.push(1.0);
            last.query_keep.push(1.0);
        }
    }

    /// Changes the QoS query `q` is judged and shed by; the next tick replans with it.
    pub fn set_qos(&mut self, engine: &mut Engine, q: usize, qos: Option<QosSpec>) {
        self.monitor.set_qos(engine, q, qos.clone());
        self.targets[q] = qos.as_ref().and_then(|s| s.latency).map(|l| l.target);
        self.qos[q] = qos;
    }

    /// The QoS query `q` runs under.
    pub fn qos(&self, q: usize) -> Option<&QosSpec> {
        self.qos.get(q).and_then(|s| s.as_ref())
    }

    /// Stops controlling query `q` (removed from `engine`): it is never planned for again.
    pub fn remove_query(&mut self, engine: &mut Engine, q: usize) {
        self.monitor.remove_query(engine, q);
        self.removed[q] = true;
        self.targets[q] = None;
        self.rows_memory.forget(q);
    }

    /// Switches the shedding policy from the next tick on: every drop point keeps
    /// everything again, the queue bound becomes the new policy's (or the engine's own),
    /// and the shedder starts afresh. Counted in the run's history.
    pub fn set_policy(&mut self, engine: &mut Engine, policy: Policy) {
        engine.install(&DropRules {
            streams: vec![DropRule::KeepAll; engine.stream_count()],
            queries: vec![DropRule::KeepAll; engine.query_count()],
            queue_capacity: Some(
                policy
                    .queue_capacity
                    .unwrap_or_else(|| engine.configured_queue_capacity()),
            ),
        });
        self.installed_queue = true;
        self.policy = policy;
        self.state = ShedState::new();
        self.ceilings = Default::default();
        self.history.policy_switches += 1;
    }
}
