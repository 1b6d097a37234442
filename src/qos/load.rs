//! Load of Spillway's own topology (each query reads one stream through its own input queue)
//! and the load report. Invariant: load is work (nanoseconds) per second, the unit of
//! capacity `C = cores * 1e9`, so `T > H * C` compares like with like.

/// Load in ns of work per second: `total = stream + queue`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadReport {
    /// `S = sum of L_i * r_i`: work the arriving tuples bring each second.
    pub stream: f64,
    /// `Q = melt * sum of L_i * q_i`: work to do each second for queues to shrink at the
    /// melt rate.
    pub queue: f64,
    /// `T = S + Q`.
    pub total: f64,
}

impl LoadReport {
    pub fn new(stream: f64, queue: f64) -> LoadReport {
        LoadReport {
            stream,
            queue,
            total: stream + queue,
        }
    }

    /// Aurora's overload test `T > H * C`.
    pub fn overloaded(&self, headroom: f64, capacity: f64) -> bool {
        self.total > headroom * capacity
    }
}

/// A stream as the load model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamLoad {
    /// Tuples per second offered at the stream's drop point (before any drop).
    pub rate: f64,
}

/// A query as the load model sees it: one pipeline reading one stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryLoad {
    /// Index of the stream it reads in the `streams` slice; out of range counts as a
    /// silent stream.
    pub stream: usize,
    /// Work per input tuple, ns (measured or declared).
    pub cost: f64,
    /// Tuples waiting in its input queue.
    pub queued: f64,
    /// Fraction of the stream's offered tuples that reach the queue: the product of the
    /// stream's and the query's drop-point keep fractions. 1 gives the unshed demand, which
    /// is what the shedder plans against; the current keeps give the load left after
    /// shedding. Queued tuples are already admitted, so `keep` does not scale them.
    pub keep: f64,
}

/// `x` when it is finite and positive, else 0: a measurement or estimate made safe to
/// add and multiply.
pub fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

/// Load coefficient of each stream: `L_s = sum of keep_q * c_q` over the queries reading
/// `s` (a stream's fan-out is free in this model; all work is in the query pipelines).
pub fn stream_coefficients(streams: usize, queries: &[QueryLoad]) -> Vec<f64> {
    let mut l = vec![0.0; streams];
    for q in queries {
        if let Some(ls) = l.get_mut(q.stream) {
            *ls += non_negative(q.keep).min(1.0) * non_negative(q.cost);
        }
    }
    l
}

/// `S = sum of r_s * L_s`, `Q = melt * sum of c_q * queued_q`, `T = S + Q`. Negative or
/// non-finite inputs count as 0.
pub fn engine_load(streams: &[StreamLoad], queries: &[QueryLoad], melt: f64) -> LoadReport {
    let mut stream = 0.0;
    let mut queue = 0.0;
    for q in queries {
        let cost = non_negative(q.cost);
        if let Some(s) = streams.get(q.stream) {
            stream += non_negative(s.rate) * non_negative(q.keep).min(1.0) * cost;
        }
        queue += cost * non_negative(q.queued);
    }
    LoadReport::new(stream, non_negative(melt) * queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology() -> (Vec<StreamLoad>, Vec<QueryLoad>) {
        let streams = vec![StreamLoad { rate: 1000.0 }, StreamLoad { rate: 250.0 }];
        let q = |stream, cost, queued, keep| QueryLoad {
            stream,
            cost,
            queued,
            keep,
        };
        let queries = vec![
            q(0, 200.0, 50.0, 1.0),
            q(0, 100.0, 0.0, 0.5),
            q(1, 400.0, 10.0, 0.8),
        ];
        (streams, queries)
    }

    #[test]
    fn engine_load_by_hand() {
        let (streams, queries) = topology();
        assert_eq!(stream_coefficients(2, &queries), vec![250.0, 320.0]);
        let r = engine_load(&streams, &queries, 0.5);
        // S = 1000 * (200 + 0.5 * 100) + 250 * 0.8 * 400; Q = 0.5 * (200 * 50 + 400 * 10).
        assert_eq!(r.stream, 250_000.0 + 80_000.0);
        assert_eq!(r.queue, 7_000.0);
        assert_eq!(r.total, 337_000.0);
    }

    #[test]
    fn bad_numbers_count_as_zero() {
        let streams = [StreamLoad { rate: f64::NAN }];
        let queries = [QueryLoad {
            stream: 3,
            cost: -1.0,
            queued: f64::INFINITY,
            keep: 1.0,
        }];
        assert_eq!(engine_load(&streams, &queries, 0.5).total, 0.0);
    }
}
