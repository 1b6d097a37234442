//! How much to shed: Aurora's loss/gain greedy over per-query percent-delivery cursors. It
//! takes the move that loses the least weighted utility per unit of work saved, stops as
//! soon as the excess is covered ("enough, not more"), and never moves a lossless query.
//! A step below what a query held under the last plan loses `HOLD_PREMIUM` more: plans
//! change which queries they cut only for a clear gain.

use crate::qos::UtilityCurve;
use crate::qos::loss_utility;

/// Ratios this close (relatively) are ties; sums of equal terms need not be bit-equal.
const RATIO_TIE: f64 = 1e-9;
/// A step that takes a query's cursor below what it held under the last plan counts its
/// loss this much higher (hysteresis). Without it, queries with the same curve were cut
/// in the order of their measured costs, which noise reorders: live, with a busy
/// neighbour, the step shape's plans moved the cut from one aggregate to another tick
/// after tick; the cut one fell at once while the other rose at most `KEEP_RISE` a tick,
/// so a third of those plans handed out under 90% of their target (down to 58%) and the
/// engine idled a fifth of those ticks. A plan now swaps them only when the swap saves
/// over 35% more work per unit of utility lost.
pub const HOLD_PREMIUM: f64 = 0.35;

/// One query as the greedy sees it.
#[derive(Clone, Copy, Debug)]
pub struct GreedyQuery<'c> {
    /// Stream index, for moves that lower all queries of a stream together.
    pub stream: usize,
    /// Work saved per second per percent not delivered: `r_s * c_q / 100`.
    pub gain_per_percent: f64,
    /// Multiplies utility losses.
    pub weight: f64,
    /// Utility by percent delivered (`None`: linear).
    pub curve: Option<&'c UtilityCurve>,
    /// Whether the cursor may move at all (false for lossless and paused queries).
    pub movable: bool,
    /// Paused by the caller: it keeps nothing whatever its cursor, so it never holds up its
    /// stream's highest cursor.
    pub paused: bool,
    /// Percent delivered under the last plan (0 without one): steps below it lose
    /// `HOLD_PREMIUM` more.
    pub held: f64,
}

/// What a move lowers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveTarget {
    /// One query's cursor (a drop at its own drop point).
    Query(usize),
    /// The cursors of every query of a stream, together.
    Stream(usize),
}

/// One step taken, in order: the prefix of Aurora's load-shedding road map that this tick
/// needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    pub target: MoveTarget,
    /// Weighted utility lost by the step.
    pub loss: f64,
    /// Work saved per second by the step, ns/s.
    pub gain: f64,
}

/// The greedy's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Cover {
    /// Percent delivered per query, in `[0, 100]`.
    pub cursors: Vec<f64>,
    /// Total work saved per second, ns/s.
    pub gained: f64,
    /// The moves in the order taken.
    pub moves: Vec<Move>,
}

/// Loss and gain of one step of one query from `steps` steps taken.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Step {
    loss: f64,
    gain: f64,
}

impl Step {
    /// Whether `self` goes before `other`: smaller loss/gain, then larger gain. Equal on
    /// both: not better, so the earlier candidate (lower index) stays.
    fn better_than(&self, other: &Step) -> bool {
        let (a, b) = (self.loss / self.gain, other.loss / other.gain);
        let tol = RATIO_TIE * a.abs().max(b.abs());
        if a < b - tol {
            return true;
        }
        if a > b + tol {
            return false;
        }
        self.gain > other.gain * (1.0 + 1e-12)
    }
}

fn cursor_after(steps: u32, step: f64) -> f64 {
    (100.0 - f64::from(steps) * step).max(0.0)
}

fn next_step(q: &GreedyQuery, steps: u32, step: f64) -> Option<Step> {
    if !q.movable {
        return None;
    }
    let (from, to) = (cursor_after(steps, step), cursor_after(steps + 1, step));
    let gain = q.gain_per_percent * (from - to);
    if !(gain > 0.0 && gain.is_finite()) {
        return None;
    }
    let mut loss = q.weight * (loss_utility(q.curve, from) - loss_utility(q.curve, to)).max(0.0);
    if to < q.held - 1e-9 {
        loss *= 1.0 + HOLD_PREMIUM;
    }
    Some(Step { loss, gain })
}

/// Takes one step of query `i` and refreshes its next step.
fn advance(
    queries: &[GreedyQuery],
    steps: &mut [u32],
    next: &mut [Option<Step>],
    i: usize,
    step: f64,
) {
    steps[i] += 1;
    next[i] = next_step(&queries[i], steps[i], step);
}

/// Lowers cursors by `step` percent at a time, cheapest loss/gain first, until the work
/// saved reaches `excess` (ns/s) or nothing can move. Candidates each round: every movable
/// query with cursor above 0 (gain `r_s * c_q * step / 100`, loss `w_q * (U(c) - U(c -
/// step))`), and every stream with two or more queries that can all move (gain and loss
/// summed over them). Ties go to the larger gain, so identical queries sharing a stream
/// move together, then to the lower index, queries before streams. Deterministic.
pub fn cover(queries: &[GreedyQuery], streams: usize, excess: f64, step: f64) -> Cover {
    cover_shared(queries, streams, &[], excess, step)
}

/// A stream's highest cursor over its unpaused queries, how many hold it, and the next
/// highest below it (0 when none).
#[derive(Clone, Copy, Debug, Default)]
struct Top {
    max: f64,
    at_max: usize,
    second: f64,
}

fn top_of(members: &[usize], queries: &[GreedyQuery], steps: &[u32], step: f64) -> Top {
    let mut t = Top::default();
    for &i in members {
        let c = if queries[i].paused {
            0.0
        } else {
            cursor_after(steps[i], step)
        };
        if c > t.max {
            t.second = t.max;
            t.max = c;
            t.at_max = 1;
        } else if c == t.max {
            t.at_max += 1;
        } else if c > t.second {
            t.second = c;
        }
    }
    t
}

/// `cover` with work shared by a stream's queries: `shared[s]` (ns/s per percent) is saved
/// as stream `s`'s highest cursor falls, because its drop point then discards tuples before
/// they are fanned out to any query. The caller gives it only for streams whose drop point
/// can take the drops (every query random); 0 or missing: none. A query's step then also
/// gains the fall of the stream's highest cursor it causes, and a stream's step the fall of
/// its highest cursor.
pub fn cover_shared(
    queries: &[GreedyQuery],
    streams: usize,
    shared: &[f64],
    excess: f64,
    step: f64,
) -> Cover {
    let step = if step.is_finite() && step > 0.0 {
        step.min(100.0)
    } else {
        1.0
    };
    let mut steps = vec![0u32; queries.len()];
    let mut next: Vec<Option<Step>> = queries.iter().map(|q| next_step(q, 0, step)).collect();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); streams];
    for (i, q) in queries.iter().enumerate() {
        if let Some(m) = members.get_mut(q.stream) {
            m.push(i);
        }
    }
    let group = |next: &[Option<Step>], s: usize| -> Option<Step> {
        let m = &members[s];
        if m.len() < 2 {
            return None;
        }
        let mut sum = Step {
            loss: 0.0,
            gain: 0.0,
        };
        for &i in m {
            let st = next[i]?;
            sum.loss += st.loss;
            sum.gain += st.gain;
        }
        Some(sum)
    };
    let shared_of = |s: usize| {
        shared
            .get(s)
            .copied()
            .filter(|g| g.is_finite() && *g > 0.0)
            .unwrap_or(0.0)
    };
    let mut tops: Vec<Top> = (0..streams)
        .map(|s| top_of(&members[s], queries, &steps, step))
        .collect();
    // The shared work a step of query `i` (from its cursor now) saves.
    let bonus = |steps: &[u32], tops: &[Top], i: usize| -> f64 {
        let s = queries[i].stream;
        let g = shared_of(s);
        if g == 0.0 || queries[i].paused {
            return 0.0;
        }
        let Some(t) = tops.get(s) else {
            return 0.0;
        };
        let (from, to) = (
            cursor_after(steps[i], step),
            cursor_after(steps[i] + 1, step),
        );
        let others = if from == t.max && t.at_max == 1 {
            t.second
        } else {
            t.max
        };
        g * (from.max(others) - to.max(others))
    };
    let group_bonus = |steps: &[u32], tops: &[Top], s: usize| -> f64 {
        let g = shared_of(s);
        if g == 0.0 {
            return 0.0;
        }
        let after = members[s]
            .iter()
            .map(|&i| cursor_after(steps[i] + 1, step))
            .fold(0.0, f64::max);
        g * (tops[s].max - after).max(0.0)
    };
    let with_group_bonus = |st: Option<Step>, steps: &[u32], tops: &[Top], s: usize| {
        st.map(|mut st| {
            st.gain += group_bonus(steps, tops, s);
            st
        })
    };
    let mut groups: Vec<Option<Step>> = (0..streams)
        .map(|s| with_group_bonus(group(&next, s), &steps, &tops, s))
        .collect();

    let mut gained = 0.0;
    let mut moves = Vec::new();
    while gained < excess {
        let mut best: Option<(MoveTarget, Step)> = None;
        let candidates = next
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let st = st.map(|mut st| {
                    st.gain += bonus(&steps, &tops, i);
                    st
                });
                (MoveTarget::Query(i), st)
            })
            .chain(
                groups
                    .iter()
                    .enumerate()
                    .map(|(s, st)| (MoveTarget::Stream(s), *st)),
            );
        for (target, st) in candidates {
            if let Some(st) = st
                && best.is_none_or(|(_, b)| st.better_than(&b))
            {
                best = Some((target, st));
            }
        }
        let Some((target, st)) = best else {
            break;
        };
        match target {
            MoveTarget::Query(i) => advance(queries, &mut steps, &mut next, i, step),
            MoveTarget::Stream(s) => {
                for &i in &members[s] {
                    advance(queries, &mut steps, &mut next, i, step);
                }
            }
        }
        let s = match target {
            MoveTarget::Query(i) => queries[i].stream,
            MoveTarget::Stream(s) => s,
        };
        if s < streams {
            tops[s] = top_of(&members[s], queries, &steps, step);
            groups[s] = with_group_bonus(group(&next, s), &steps, &tops, s);
        }
        gained += st.gain;
        moves.push(Move {
            target,
            loss: st.loss,
            gain: st.gain,
        });
    }
    Cover {
        cursors: steps.iter().map(|&k| cursor_after(k, step)).collect(),
        gained,
        moves,
    }
}

#[cfg(test)]
#[path = "greedy_tests.rs"]
pub(super) mod tests;
