//! The load shedder's decisions: when to shed (hysteresis on model load and latencies), how
//! much (Aurora's loss/gain greedy against `H * C * m`, with `m` from PI feedback on
//! latency), where (stream or query drop points) and how (random, semantic, window). Pure:
//! nothing here touches tuples except `SemanticDrop::keep_probability`, which is O(1) and
//! allocation-free.
//!
//! Each control tick the runtime:
//! 1. builds a `ShedInput` from one consistent snapshot: per stream the offered rate at its
//!    drop point (before any drop); per query its cost per input tuple, queue depth, QoS
//!    (loss curve, weight, lossless), its value histogram (fed with every offered tuple,
//!    before any drop, and decayed once per tick) and its latency at the target's
//!    percentile over a short recent window;
//! 2. calls `plan(&input, &mut state)` with the same `ShedState` every tick;
//! 3. installs `ShedPlan::streams` at the stream drop points and `ShedPlan::queries` at the
//!    query drop points (nothing to install for `None` and `TailDrop`), and scales random
//!    samples by `ShedPlan::delivered`.

mod adapt;
mod allocate;
mod feedback;
mod greedy;
mod input;
mod model;
mod placement;
mod plan;
mod planner;
mod rise;
mod semantic;
mod trigger;

#[cfg(test)]
mod tests_control;
#[cfg(test)]
mod tests_fanout;
#[cfg(test)]
mod tests_plan;
#[cfg(test)]
mod tests_rise;
#[cfg(test)]
mod tests_rows;

pub use adapt::IDLE_TARGET;
pub use allocate::weighted_mean;
pub use feedback::{Feedback, Gains, MAX_STEP, latency_error, latency_miss};
pub use greedy::{Cover, GreedyQuery, Move, MoveTarget, cover, cover_shared};
pub use input::{
    BacklogInput, Emission, LatencyInput, PolicyParams, QueryInput, ShedInput, ShedKind,
    StreamInput, ValueQos,
};
pub use model::{Rows, load_at, rows_at};
pub use placement::{Merged, merge_at_streams};
pub use plan::{QueryDrop, SemanticDrop, ShedPlan};
pub use planner::{ShedState, plan};
pub use semantic::{derived_curve, semantic_drop, semantic_keeps};
pub use trigger::Trigger;
