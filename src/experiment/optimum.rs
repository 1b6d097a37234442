//! The offline optimum: with hindsight of every tuple's utility and cost, the most
//! utility the declared capacity allows. A fractional knapsack solved per control period
//! (tick): within a period, tuples are taken in order of utility per nanosecond of cost
//! until the period's capacity (`cores x tick`) is spent; lossless queries are taken first.
//!
//! Why per period and not over the whole run: a tuple has to be processed within its
//! latency target, which is of the order of a period, so capacity left idle in a calm
//! second cannot pay for a burst ten seconds later. A whole-run knapsack would credit the
//! optimum with exactly the buffering that breaks latency targets.
//!
//! Invariant: a tuple's utility is `weight x value-utility(value) / (total value utility
//! the query was offered)`, summed over tuples; so the optimum's weighted total and every
//! run's are on the same scale, 1 meaning everything delivered.

use super::recorder::TickRow;

/// One query as the knapsack sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct KnapsackQuery {
    /// Utility of a tuple in each value bin (one bin of utility 1 without a value graph).
    pub bin_utility: Vec<f64>,
    /// Nanoseconds of processing per tuple.
    pub cost: f64,
    pub weight: f64,
    pub lossless: bool,
}

/// What the optimum delivers per query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Optimum {
    /// Share of the offered value utility delivered, per query.
    pub value_share: Vec<f64>,
    /// Share of the offered tuples delivered, per query.
    pub delivered: Vec<f64>,
    /// Weighted mean of `value_share`.
    pub weighted: f64,
}

/// The tuples of each bin a tick offered, per query: the exact run's processed counts
/// (with no capacity limit, everything offered is processed within its tick).
fn offered_bins(row: &TickRow, q: &KnapsackQuery) -> Vec<u64> {
    if q.bin_utility.len() == 1 || row.processed_values.len() != q.bin_utility.len() {
        let mut v = vec![0; q.bin_utility.len()];
        v[0] = row.processed;
        v
    } else {
        row.processed_values.clone()
    }
}

/// Solves the knapsack over the exact run's ticks; `cores` is the declared capacity.
pub fn optimum(exact_ticks: &[TickRow], queries: &[KnapsackQuery], cores: f64) -> Optimum {
    let n = queries.len();
    // Group the rows by tick (they come in tick order, one per query).
    let ticks: Vec<&[TickRow]> = exact_ticks.chunks(n.max(1)).collect();
    let mut offered_value = vec![0.0; n];
    let mut offered_count = vec![0.0; n];
    for t in &ticks {
        for row in t.iter() {
            let q = &queries[row.query];
            for (b, c) in offered_bins(row, q).iter().enumerate() {
                offered_value[row.query] += *c as f64 * q.bin_utility[b];
                offered_count[row.query] += *c as f64;
            }
        }
    }
    let total_weight: f64 = queries.iter().map(|q| q.weight).sum::<f64>().max(1e-12);
    let mut taken_value = vec![0.0; n];
    let mut taken_count = vec![0.0; n];
    let mut prev_at = 0;
    let mut items: Vec<(f64, usize, f64, f64)> = Vec::new();
    for t in &ticks {
        let at = t.first().map_or(prev_at, |r| r.at);
        let mut capacity = cores * (at - prev_at).max(0) as f64;
        prev_at = at;
        items.clear();
        for row in t.iter() {
            let qi = row.query;
            let q = &queries[qi];
            for (b, c) in offered_bins(row, q).into_iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let (count, u) = (c as f64, q.bin_utility[b]);
                if q.lossless {
                    capacity -= count * q.cost;
                    taken_value[qi] += count * u;
                    taken_count[qi] += count;
                    continue;
                }
                let gain = q.weight * u / offered_value[qi].max(1e-12);
                let ratio = if q.cost > 0.0 {
                    gain / q.cost
                } else {
                    f64::INFINITY
                };
                items.push((ratio, qi, count, u));
            }
        }
        items.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, qi, count, u) in &items {
            let cost = queries[qi].cost;
            let take = if cost > 0.0 {
                (capacity.max(0.0) / cost).min(count)
            } else {
                count
            };
            capacity -= take * cost;
            taken_value[qi] += take * u;
            taken_count[qi] += take;
        }
    }
    let share = |taken: &[f64], offered: &[f64]| -> Vec<f64> {
        taken
            .iter()
            .zip(offered)
            .map(|(t, o)| if *o > 0.0 { t / o } else { 1.0 })
            .collect()
    };
    let value_share = share(&taken_value, &offered_value);
    let weighted = queries
        .iter()
        .zip(&value_share)
        .map(|(q, s)| q.weight * s)
        .sum::<f64>()
        / total_weight;
    Optimum {
        delivered: share(&taken_count, &offered_count),
        value_share,
        weighted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at: i64, query: usize, bins: Vec<u64>) -> TickRow {
        TickRow {
            at,
            query,
            input_rate: 0.0,
            latency: None,
            keep: 1.0,
            delivered: 1.0,
            queued: 0,
            processed: bins.iter().sum(),
            processed_values: bins,
        }
    }

    #[test]
    fn takes_the_most_useful_tuples_first_within_each_tick() {
        // One query, two bins of utility 0.2 and 1.0, 100 tuples each per 1000 ns tick,
        // 10 ns a tuple: capacity for 100 tuples per tick, so the valuable bin only.
        let q = KnapsackQuery {
            bin_utility: vec![0.2, 1.0],
            cost: 10.0,
            weight: 1.0,
            lossless: false,
        };
        let ticks = vec![row(1000, 0, vec![100, 100]), row(2000, 0, vec![100, 100])];
        let o = optimum(&ticks, &[q], 1.0);
        assert!((o.value_share[0] - 1.0 / 1.2).abs() < 1e-12, "{o:?}");
        assert!((o.delivered[0] - 0.5).abs() < 1e-12);
        assert!((o.weighted - 1.0 / 1.2).abs() < 1e-12);
    }

    #[test]
    fn capacity_does_not_carry_over_between_ticks() {
        // Tick 1 is idle, tick 2 offers twice its capacity: only half can be taken.
        let q = KnapsackQuery {
            bin_utility: vec![1.0],
            cost: 10.0,
            weight: 1.0,
            lossless: false,
        };
        let ticks = vec![row(1000, 0, vec![0]), row(2000, 0, vec![200])];
        let o = optimum(&ticks, &[q], 1.0);
        assert!((o.delivered[0] - 0.5).abs() < 1e-12, "{o:?}");
    }
}
