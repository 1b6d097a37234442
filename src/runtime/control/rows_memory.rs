//! What a grouped window's emission costs, remembered while its input is shed to nothing.
//! A grouped window emits about as many rows at a keep of a few percent as at keep 1 (each
//! group-window still holds a tuple), but a query shed to keep 0 emits nothing, and its
//! measured row rate and per-row cost fade to 0 within a second. The planner then reads
//! raising its keep as cheap, admits it at a few percent, and the emission work comes back
//! whole. Live, in `soak --shape 7x-hop`, a HOP over 1000 keys (and a 2 s HOP with MIN/MAX)
//! admitted at keep 0.03-0.05 took the engine from the alert filter beside it, whose queue
//! grew by 1-2 M tuples in two 50 ms ticks and went over its 100 ms target, until the
//! dominance rule (`shed::allocate`) paused the aggregate again a few ticks later. So the
//! last informative measurement (the row rate, the keep it was measured at, the cost per
//! row) is handed to the planner (`QueryInput::remembered`) while the query's own is not
//! informative; the allocation prices the keeps it chooses with it (the planner's row
//! model, `shed::model::rows_at`, extrapolates it, unless its rows exceed what its keep
//! admits: then they are priced as they are), but the demand at keep 1 stays what
//! was measured: priced there too, it raised the excess and paused more (round 23).
//!
//! Invariant: only grouped window aggregates are remembered; a measurement is informative
//! when the query delivered at least `INFORMATIVE_KEEP` of its input and both its row rate
//! and its per-row cost are positive; a query whose stream is silent uses its own figures.

/// A query that delivered less than this share of its input measures no emission worth
/// remembering (nor replacing what was remembered).
pub(super) const INFORMATIVE_KEEP: f64 = 0.02;

pub(super) use crate::shed::Emission;

/// The last informative `Emission` of each query, by query index.
#[derive(Debug, Default)]
pub(super) struct RowsMemory {
    last: Vec<Option<Emission>>,
}

impl RowsMemory {
    /// Notes query `q`'s emission measured this tick (`now`) and returns the one the planner
    /// should use: `now` when it is informative or `q` is not a grouped window (`grouped`),
    /// else the last informative one while its stream offers input (`stream_rate`).
    pub(super) fn note(
        &mut self,
        q: usize,
        grouped: bool,
        stream_rate: f64,
        now: Emission,
    ) -> Emission {
        if self.last.len() <= q {
            self.last.resize(q + 1, None);
        }
        if !grouped {
            return now;
        }
        if now.keep >= INFORMATIVE_KEEP && now.rows > 0.0 && now.row_cost > 0.0 {
            self.last[q] = Some(now);
            return now;
        }
        match self.last[q] {
            Some(e) if stream_rate > 0.0 => e,
            _ => now,
        }
    }

    /// Forgets query `q` (removed).
    pub(super) fn forget(&mut self, q: usize) {
        if let Some(e) = self.last.get_mut(q) {
            *e = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn e(rows: f64, keep: f64, row_cost: f64) -> Emission {
        Emission {
            rows,
            keep,
            row_cost,
        }
    }

    #[test]
    fn a_grouped_query_shed_to_nothing_keeps_its_last_emission() {
        let mut m = RowsMemory::default();
        let full = e(100_000.0, 0.5, 300.0);
        assert_eq!(
            m.note(2, true, 1e6, full),
            full,
            "informative: used and kept"
        );
        // Shed to keep 0: its own figures fade, the memory stands in.
        for faded in [
            e(40_000.0, 0.0, 300.0),
            e(0.0, 0.0, 0.0),
            e(0.0, 0.01, 120.0),
        ] {
            assert_eq!(m.note(2, true, 1e6, faded), full);
        }
        // Admitted again but not yet measured (no rows, or no per-row cost yet): still.
        assert_eq!(m.note(2, true, 1e6, e(0.0, 0.04, 300.0)), full);
        assert_eq!(m.note(2, true, 1e6, e(90_000.0, 0.04, 0.0)), full);
        // Measured again: the new figures replace it.
        let fresh = e(90_000.0, 0.04, 250.0);
        assert_eq!(m.note(2, true, 1e6, fresh), fresh);
        assert_eq!(m.note(2, true, 1e6, e(0.0, 0.0, 0.0)), fresh);
        // A silent stream: its own (zero) figures.
        assert_eq!(m.note(2, true, 0.0, e(0.0, 0.0, 0.0)), e(0.0, 0.0, 0.0));
        // Removed: forgotten.
        m.forget(2);
        assert_eq!(m.note(2, true, 1e6, e(0.0, 0.0, 0.0)), e(0.0, 0.0, 0.0));
    }

    #[test]
    fn other_queries_use_their_own_figures() {
        let mut m = RowsMemory::default();
        let full = e(100_000.0, 1.0, 300.0);
        assert_eq!(m.note(0, false, 1e6, full), full);
        assert_eq!(m.note(0, false, 1e6, e(0.0, 0.0, 0.0)), e(0.0, 0.0, 0.0));
        // Another query's memory is its own.
        m.note(1, true, 1e6, full);
        assert_eq!(m.note(3, true, 1e6, e(0.0, 0.0, 0.0)), e(0.0, 0.0, 0.0));
    }
}
