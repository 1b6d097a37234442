//! Live controls of a running run, set from outside the engine thread (the dashboard's
//! `+`/`-` and `s` keys): a rate scale that paced generator sources multiply their rate
//! profile by, and a policy switch the control loop picks up at its next tick. Both are
//! lock-free or try-locked so neither a source nor the engine ever waits on them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::shed::ShedKind;
use crate::spec::Policy;

/// A shared factor (starts at 1) on every paced generator's rate. Clones share it.
#[derive(Clone, Debug)]
pub struct RateScale(Arc<AtomicU64>);

impl Default for RateScale {
    fn default() -> RateScale {
        RateScale(Arc::new(AtomicU64::new(1f64.to_bits())))
    }
}

/// The scale is kept between these bounds (x 1/1000 .. x 100,000): far enough up that a
/// calm workload can be pushed past any machine's capacity (a generator that cannot keep
/// up runs flat out), and the dashboard shows the same clamped figure.
pub const SCALE_BOUNDS: (f64, f64) = (1e-3, 1e5);

impl RateScale {
    pub fn new() -> RateScale {
        RateScale::default()
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// Multiplies the scale by `factor` (clamped to the bounds); returns the new scale.
    pub fn scale_by(&self, factor: f64) -> f64 {
        let mut new = 1.0;
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bits| {
                new = (f64::from_bits(bits) * factor).clamp(SCALE_BOUNDS.0, SCALE_BOUNDS.1);
                Some(new.to_bits())
            });
        new
    }
}

/// A policy waiting to replace the one in force, taken by the controller at its next
/// tick. Clones share it; a newer request replaces an older one not yet taken.
#[derive(Clone, Debug, Default)]
pub struct PolicySwitch(Arc<Mutex<Option<Policy>>>);

impl PolicySwitch {
    pub fn new() -> PolicySwitch {
        PolicySwitch::default()
    }

    /// Asks the control loop to use `policy` from its next tick on.
    pub fn request(&self, policy: Policy) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(policy);
        }
    }

    /// The requested policy, if any; never waits (a busy slot is read next tick).
    pub fn take(&self) -> Option<Policy> {
        self.0.try_lock().ok().and_then(|mut slot| slot.take())
    }
}

/// The kinds the dashboard's `s` key cycles through, in order.
pub const POLICY_CYCLE: [ShedKind; 5] = [
    ShedKind::None,
    ShedKind::TailDrop,
    ShedKind::Random,
    ShedKind::Semantic,
    ShedKind::WindowAware,
];

/// The name a policy of `kind` goes by (as its file in `policies/`).
pub fn kind_label(kind: ShedKind) -> &'static str {
    match kind {
        ShedKind::None => "none",
        ShedKind::TailDrop => "tail-drop",
        ShedKind::Random => "random",
        ShedKind::Semantic => "semantic",
        ShedKind::WindowAware => "window-aware",
    }
}

/// `base` with the next kind of the cycle after `base`'s: its gains, headroom and
/// hysteresis stay, the name becomes the kind's, and tail-drop gets a queue bound.
pub fn next_policy(base: &Policy) -> Policy {
    let at = POLICY_CYCLE
        .iter()
        .position(|k| *k == base.params.kind)
        .unwrap_or(0);
    let kind = POLICY_CYCLE[(at + 1) % POLICY_CYCLE.len()];
    let mut p = base.clone();
    p.params.kind = kind;
    p.name = kind_label(kind).to_string();
    p.queue_capacity = match kind {
        ShedKind::TailDrop => Some(base.queue_capacity.unwrap_or(10_000)),
        _ => None,
    };
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_scale_multiplies_and_stays_in_bounds() {
        let s = RateScale::new();
        let other = s.clone();
        assert_eq!(s.get(), 1.0);
        assert!((other.scale_by(1.25) - 1.25).abs() < 1e-12);
        assert!((s.get() - 1.25).abs() < 1e-12);
        for _ in 0..100 {
            s.scale_by(0.8);
        }
        assert_eq!(s.get(), SCALE_BOUNDS.0);
        for _ in 0..200 {
            s.scale_by(1.25);
        }
        assert_eq!(s.get(), SCALE_BOUNDS.1);
    }

    #[test]
    fn policy_cycle_visits_every_kind_and_switch_hands_over_once() {
        let mut p = Policy::none();
        let mut seen = vec![];
        for _ in 0..5 {
            p = next_policy(&p);
            seen.push(p.name.clone());
        }
        assert_eq!(
            seen,
            ["tail-drop", "random", "semantic", "window-aware", "none"]
        );
        let sw = PolicySwitch::new();
        sw.clone().request(next_policy(&Policy::none()));
        let taken = sw.take().unwrap();
        assert_eq!(taken.params.kind, ShedKind::TailDrop);
        assert_eq!(taken.queue_capacity, Some(10_000));
        assert!(sw.take().is_none());
    }
}
