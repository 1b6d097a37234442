//! How much, where and how the shedder cuts, once `planner` has decided that it must:
//! greedy cursors per query against the excess load, checked against the full load model
//! (work that does not shrink with the input), whole-window drops and pauses where input
//! drops cannot cover the excess, then merged at streams and realised per query as random,
//! key, window or value drops. Pure, like the planner: the same input gives the same plan.

use crate::qos::{UtilityCurve, loss_utility};

use super::greedy::{GreedyQuery, cover_shared};
use super::input::{PolicyParams, QueryInput, ShedInput, ShedKind};
use super::model::{Rows, load_at};
use super::placement::merge_at_streams;
use super::plan::{QueryDrop, ShedPlan};
use super::planner::{non_negative, rate_of};
use super::rise::limit_rises;
use super::semantic::{derived_curve, semantic_drop};

/// A query is paused when shedding leaves it under this share of its input while its
/// non-shrinking work takes more than `PAUSE_SHARE` of the machine.
const PAUSE_KEEP: f64 = 0.1;
const PAUSE_SHARE: f64 = 0.5;
fn weight_of(q: &QueryInput) -> f64 {
    usable_weight(q.weight)
}

/// A query's weight as plans weigh it: 1 when it is not finite and positive.
fn usable_weight(w: f64) -> f64 {
    if w.is_finite() && w > 0.0 { w } else { 1.0 }
}

/// A plan's utility: `sum w_q * u_q / sum w_q` over `(weight, utility)` pairs (weights as
/// `usable_weight` reads them); 1 without queries.
pub fn weighted_mean(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut total, mut sum) = (0.0, 0.0);
    for (w, u) in pairs {
        let w = usable_weight(w);
        total += w;
        sum += w * u;
    }
    if total > 0.0 { sum / total } else { 1.0 }
}

/// What the allocation carries over from earlier ticks.
pub(super) struct Held<'a> {
    /// The last shedding plan's delivered shares, which keeps rise from (`KEEP_RISE`).
    pub prev: Option<&'a [f64]>,
    /// Queries paused, kept while shedding lasts (updated).
    pub paused: &'a mut Vec<bool>,
    /// Queries switched to whole-key drops, kept while shedding lasts (updated).
    pub by_keys: &'a mut Vec<bool>,
}

/// How a query's cursor is realised at its drop point.
#[derive(Clone, Copy)]
enum Mode {
    Random,
    /// A stable share of the query's keys (rows shrink with it).
    Keys,
    /// Index into the derived curves.
    Semantic(usize),
    Window,
}

/// Chooses each query's drop kind: value drops need a value QoS with counts, window drops a
/// windowed aggregate; everything else drops at random.
fn mode(kind: ShedKind, q: &QueryInput, derived: &mut Vec<UtilityCurve>) -> Mode {
    match kind {
        ShedKind::Semantic => match q.value.and_then(|v| derived_curve(v.histogram)) {
            Some(c) => {
                derived.push(c);
                Mode::Semantic(derived.len() - 1)
            }
            None => Mode::Random,
        },
        ShedKind::WindowAware if q.windowed => Mode::Window,
        ShedKind::None | ShedKind::TailDrop | ShedKind::Random | ShedKind::WindowAware => {
            Mode::Random
        }
    }
}

/// How a query's keep is realised and how its rows follow the keep.
fn shape_of(q: &QueryInput, mode: &Mode) -> Rows {
    match mode {
        Mode::Window | Mode::Keys => Rows::Linear,
        _ => q.rows_shape,
    }
}

/// Per stream: whether its own drop point can take its queries' drops, so that a tuple it
/// discards is never fanned out (every query on it random and sheddable, and at least one).
fn mergeable_streams(input: &ShedInput, modes: &[Mode]) -> Vec<bool> {
    let mut ok = vec![None; input.streams.len()];
    for (q, m) in input.queries.iter().zip(modes) {
        if let Some(s) = ok.get_mut(q.stream) {
            let this = matches!(m, Mode::Random) && !q.lossless;
            *s = Some(s.unwrap_or(true) && this);
        }
    }
    ok.into_iter().map(|s| s == Some(true)).collect()
}

/// Fan-out work per second at these keeps, ns/s: a mergeable stream passes its highest
/// keep (the placement moves that keep up to it), any other stream all it is offered.
fn ingest_at(input: &ShedInput, mergeable: &[bool], keeps: &[f64]) -> f64 {
    let mut pass: Vec<f64> = mergeable
        .iter()
        .map(|&m| if m { 0.0 } else { 1.0 })
        .collect();
    for (q, k) in input.queries.iter().zip(keeps) {
        if let Some(p) = pass.get_mut(q.stream) {
            *p = p.max(k.clamp(0.0, 1.0));
        }
    }
    input
        .streams
        .iter()
        .zip(&pass)
        .map(|(s, p)| non_negative(s.rate) * non_negative(s.ingest) * p)
        .sum()
}

/// How much, where and how: greedy cursors against `out.excess`, merged at streams,
/// realised per query. The greedy sees linear gains; the plan is then checked against the
/// full load model (rows that do not shrink with the input) and tightened; if dropping
/// input cannot cover the excess, whole-window drops take over where a query allows
/// them, and the lowest-utility queries are paused.
pub(super) fn allocate(
    input: &ShedInput,
    p: &PolicyParams,
    queue_load: f64,
    scale: f64,
    held: Held<'_>,
    out: &mut ShedPlan,
) {
    let Held {
        prev,
        paused: sticky,
        by_keys,
    } = held;
    let qs = &input.queries;
    let mut derived = Vec::new();
    let mut modes: Vec<Mode> = qs.iter().map(|q| mode(p.kind, q, &mut derived)).collect();
    by_keys.resize(qs.len(), false);
    for (i, m) in modes.iter_mut().enumerate() {
        if by_keys[i] {
            *m = Mode::Keys;
        }
    }
    // Work at keep 1. A query dropping whole keys sheds its window work too, but only as
    // its open windows close: the fixed work stays reserved until the fit sees it go.
    let full_of = |modes: &[Mode]| -> Vec<f64> {
        qs.iter()
            .zip(modes)
            .map(|(q, m)| load_at(q, rate_of(input, q), 1.0, shape_of(q, m), scale))
            .collect()
    };
    let mut full = full_of(&modes);
    sticky.resize(qs.len(), false);
    let mut paused: Vec<bool> = (0..qs.len())
        .map(|i| sticky[i] && !qs[i].lossless)
        .collect();
    let mut excess = out.excess;
    let mut cov;
    let mut round = 0;
    loop {
        let curve_of = |i: usize| match modes[i] {
            Mode::Semantic(d) => Some(&derived[d]),
            Mode::Random | Mode::Window | Mode::Keys => qs[i].loss,
        };
        let greedy: Vec<GreedyQuery> = qs
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let r = rate_of(input, q);
                // Gain of a linear query is all of its work; of a grouped one, only the
                // per-tuple part is sure to go with the input.
                let gain = match shape_of(q, &modes[i]) {
                    Rows::Linear => full[i],
                    Rows::Grouped { .. } => r * non_negative(q.cost) * scale,
                };
                GreedyQuery {
                    stream: q.stream,
                    gain_per_percent: gain / 100.0,
                    weight: weight_of(q),
                    curve: curve_of(i),
                    movable: !q.lossless && !paused[i],
                    paused: paused[i],
                    held: prev
                        .and_then(|p| p.get(i))
                        .filter(|w| w.is_finite())
                        .map_or(0.0, |w| 100.0 * w.clamp(0.0, 1.0)),
                }
            })
            .collect();
        let mergeable = mergeable_streams(input, &modes);
        // Fan-out a stream's drop point saves per percent of its highest keep.
        let shared: Vec<f64> = input
            .streams
            .iter()
            .zip(&mergeable)
            .map(|(s, &m)| {
                if m {
                    non_negative(s.rate) * non_negative(s.ingest) / 100.0
                } else {
                    0.0
                }
            })
            .collect();
        let pause_gain = pause_gain(input, &paused, &full, &mergeable);
        cov = cover_shared(
            &greedy,
            input.streams.len(),
            &shared,
            excess - pause_gain,
            p.step,
        );
        let keeps = cursor_keeps(&cov.cursors, &paused);
        let predicted: f64 = qs
            .iter()
            .enumerate()
            .map(|(i, q)| priced_load(input, q, keeps[i], shape_of(q, &modes[i]), scale))
            .sum::<f64>()
            + queue_load
            + ingest_at(input, &mergeable, &keeps);
        // The dominance rule: a grouped query left under PAUSE_KEEP of its input while its
        // work that does not shrink with the input takes over PAUSE_SHARE of the machine
        // buys little: drop whole keys instead (its rows then shrink), or pause it.
        let whole =
            non_negative(input.capacity) + qs.iter().map(|q| non_negative(q.fixed)).sum::<f64>();
        let dominated = (0..qs.len()).find(|&i| {
            let q = &qs[i];
            let k = keeps[i];
            let r = rate_of(input, q);
            !paused[i]
                && !q.lossless
                && matches!(modes[i], Mode::Random)
                && matches!(q.rows_shape, Rows::Grouped { .. })
                && k < PAUSE_KEEP
                && non_negative(q.fixed) * scale + load_at(q, r, k, shape_of(q, &modes[i]), scale)
                    - r * k * non_negative(q.cost) * scale
                    > PAUSE_SHARE * whole
        });
        if let Some(i) = dominated
            && round < 2 * qs.len() + 4
        {
            out.input_insufficient = true;
            round += 1;
            if qs[i].keys {
                modes[i] = Mode::Keys;
                full = full_of(&modes);
            } else {
                paused[i] = true;
            }
            continue;
        }
        let over = predicted - out.target;
        let unmet = excess - pause_gain - cov.gained;
        round += 1;
        if round > 2 * qs.len() + 4 || (over <= 0.02 * out.target.max(1.0) && unmet <= 0.0) {
            break;
        }
        // Row work of grouped queries still running, which the greedy's gains leave out.
        let hidden: f64 = (0..qs.len())
            .filter(|&i| {
                !paused[i]
                    && !qs[i].lossless
                    && matches!(shape_of(&qs[i], &modes[i]), Rows::Grouped { .. })
            })
            .map(|i| full[i] - rate_of(input, &qs[i]) * non_negative(qs[i].cost) * scale)
            .sum();
        // Work no drop can remove this tick: the backlog's melt, lossless queries and the
        // fan-out of streams whose drop point cannot take the drops.
        let floor = queue_load
            + (0..qs.len())
                .filter(|&i| qs[i].lossless)
                .map(|i| full[i])
                .sum::<f64>()
            + ingest_at(input, &mergeable, &vec![0.0; qs.len()]);
        if unmet > 0.0 && (hidden <= 0.0 || floor >= out.target) {
            // Nothing but queued or lossless work is left: shedding cannot do more.
            break;
        }
        if unmet > 0.0 {
            // Input drops alone cannot cover: switch a windowed query to whole-window
            // drops (its rows then shrink with its input), else pause the query with the
            // least utility per unit of load.
            out.input_insufficient = true;
            if let Some(i) = (0..qs.len()).find(|&i| {
                qs[i].windowed
                    && !qs[i].lossless
                    && matches!(modes[i], Mode::Random)
                    && matches!(qs[i].rows_shape, Rows::Grouped { .. })
            }) {
                modes[i] = Mode::Window;
                continue;
            }
            let next = (0..qs.len())
                .filter(|&i| !qs[i].lossless && !paused[i] && full[i] > 0.0)
                .min_by(|&a, &b| {
                    (weight_of(&qs[a]) / full[a]).total_cmp(&(weight_of(&qs[b]) / full[b]))
                });
            match next {
                Some(i) => paused[i] = true,
                None => break,
            }
        } else {
            // The rows shrank less than the greedy assumed: ask for the difference.
            excess += over;
        }
    }
    *sticky = paused.clone();
    *by_keys = modes.iter().map(|m| matches!(m, Mode::Keys)).collect();
    let mergeable = mergeable_streams(input, &modes);
    out.unmet = (excess - cov.gained - pause_gain(input, &paused, &full, &mergeable)).max(0.0);
    out.paused = (0..qs.len()).filter(|&i| paused[i]).collect();
    let curve_of = |i: usize| match modes[i] {
        Mode::Semantic(d) => Some(&derived[d]),
        Mode::Random | Mode::Window | Mode::Keys => qs[i].loss,
    };

    // Where: random drops shared by a whole stream move up to it, once the rise limits
    // (`rise.rs`) have had their say.
    let planned = cursor_keeps(&cov.cursors, &paused);
    let movable: Vec<bool> = (0..qs.len())
        .map(|i| !paused[i] && !qs[i].lossless)
        .collect();
    let limited = limit_rises(planned, prev, out.excess, out.target, &movable, |i, k| {
        priced_load(input, &qs[i], k, shape_of(&qs[i], &modes[i]), scale)
    });
    out.rising = limited.rising;
    let keeps = limited.keeps;
    let mergeable: Vec<bool> = modes.iter().map(|m| matches!(m, Mode::Random)).collect();
    let query_streams: Vec<usize> = qs.iter().map(|q| q.stream).collect();
    let merged = merge_at_streams(input.streams.len(), &query_streams, &keeps, &mergeable);

    // How: each query's drop, and what it is expected to deliver.
    let mut stream_load = 0.0;
    for (i, q) in qs.iter().enumerate() {
        let cursor = 100.0 * keeps[i];
        out.queries[i] = match modes[i] {
            _ if cursor >= 100.0 => QueryDrop::KeepAll,
            Mode::Random => QueryDrop::random(merged.queries[i]),
            Mode::Window => QueryDrop::window(keeps[i]),
            Mode::Keys if keeps[i] >= 1.0 - 1e-12 => QueryDrop::KeepAll,
            Mode::Keys => QueryDrop::Keys { keep: keeps[i] },
            Mode::Semantic(_) => match q.value {
                Some(v) => QueryDrop::Semantic(semantic_drop(v.column, v.histogram, cursor)),
                None => QueryDrop::random(keeps[i]),
            },
        };
        out.delivered[i] = keeps[i];
        out.utility[i] = loss_utility(curve_of(i), cursor);
        stream_load += load_at(
            q,
            rate_of(input, q),
            keeps[i],
            shape_of(q, &modes[i]),
            scale,
        );
    }
    out.ingest = ingest_at(input, &mergeable, &keeps);
    out.streams = merged.streams;
    out.expected_load = stream_load + queue_load + out.ingest;
    out.expected_input = stream_load;
    out.weighted_utility = weighted(qs, &out.utility);
}

/// The keep fractions the greedy's cursors (percent) ask for, 0 for a paused query.
fn cursor_keeps(cursors: &[f64], paused: &[bool]) -> Vec<f64> {
    cursors
        .iter()
        .zip(paused)
        .map(|(&c, &p)| if p { 0.0 } else { c / 100.0 })
        .collect()
}

/// Predicted work per second of `q` at keep `k`. A grouped query shed to nothing that is
/// re-admitted: priced at its last measured emission, not at its faded rows
/// (`QueryInput::remembered`).
fn priced_load(input: &ShedInput, q: &QueryInput, k: f64, shape: Rows, scale: f64) -> f64 {
    let priced = match q.remembered {
        Some(e) if k > 0.0 => QueryInput {
            rows: e.rows,
            keep_now: e.keep,
            row_cost: e.row_cost,
            ..*q
        },
        _ => *q,
    };
    load_at(&priced, rate_of(input, q), k, shape, scale)
}

/// Work saved by the pauses alone: the paused queries' work, and the fan-out of each
/// mergeable stream all of whose queries are paused.
fn pause_gain(input: &ShedInput, paused: &[bool], full: &[f64], mergeable: &[bool]) -> f64 {
    let queries: f64 = (0..paused.len())
        .filter(|&i| paused[i])
        .map(|i| full[i])
        .sum();
    let keeps: Vec<f64> = paused.iter().map(|&p| if p { 0.0 } else { 1.0 }).collect();
    let fan_out =
        ingest_at(input, mergeable, &vec![1.0; paused.len()]) - ingest_at(input, mergeable, &keeps);
    queries + fan_out
}

/// `sum w_q * u_q / sum w_q`, 1 without queries.
pub(super) fn weighted(qs: &[QueryInput], utility: &[f64]) -> f64 {
    weighted_mean(qs.iter().map(|q| q.weight).zip(utility.iter().copied()))
}
