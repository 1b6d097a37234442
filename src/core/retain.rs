//! A stream's retained recent history (an Aurora connection point): the last N seconds of
//! arrivals or the last M tuples, as ingested, before any drop point (history is never
//! shed). Invariant: it never holds more than `limit.tuples` rows nor rows older than
//! `limit.last` behind the newest arrival; every row that leaves is counted as evicted.
//!
//! Batches are shared with the ingest path (`Arc`), never copied; rows leaving the front
//! of a batch are skipped by an offset until the whole batch can go.

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::schema::{DataType, Nanos};

/// How much of a stream to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetainLimit {
    /// Keep rows that arrived at most this long before the newest one (ns).
    pub last: Option<Nanos>,
    /// Keep at most this many rows (always set: history is bounded in memory).
    pub tuples: u64,
}

/// Figures of a stream's retained history.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RetainSnapshot {
    /// Rows held now.
    pub tuples: u64,
    /// Estimated bytes held (columns and arrival times; string payloads are shared with
    /// the rest of the engine and not counted).
    pub bytes: u64,
    /// Rows that aged or were pushed out so far.
    pub evicted: u64,
    /// Arrival of the oldest and newest rows held.
    pub oldest: Option<Nanos>,
    pub newest: Option<Nanos>,
}

#[derive(Debug)]
pub struct Retained {
    limit: RetainLimit,
    batches: VecDeque<Arc<Batch>>,
    /// Rows of the front batch already evicted.
    skip: usize,
    tuples: u64,
    evicted: u64,
    /// Bytes per row (estimate).
    row_bytes: u64,
}

impl Retained {
    pub fn new(limit: RetainLimit, types: &[DataType]) -> Retained {
        let row_bytes = 8 + types
            .iter()
            .map(|t| match t {
                DataType::Bool => 1,
                DataType::Str => 16,
                _ => 8,
            })
            .sum::<u64>();
        Retained {
            limit,
            batches: VecDeque::new(),
            skip: 0,
            tuples: 0,
            evicted: 0,
            row_bytes,
        }
    }

    pub fn limit(&self) -> RetainLimit {
        self.limit
    }

    /// Keeps `batch` (as ingested, before any drop) and evicts what falls out.
    pub fn push(&mut self, batch: Arc<Batch>) {
        if batch.is_empty() {
            return;
        }
        let newest = batch.arrival.iter().copied().max();
        self.tuples += batch.len() as u64;
        self.batches.push_back(batch);
        self.evict(newest);
    }

    /// Evicts rows beyond the tuple bound and, with `now`, rows older than `last` before it.
    pub fn evict(&mut self, now: Option<Nanos>) {
        let cutoff = match (self.limit.last, now) {
            (Some(last), Some(now)) => Some(now.saturating_sub(last)),
            _ => None,
        };
        while let Some(front) = self.batches.front() {
            let over = self.tuples.saturating_sub(self.limit.tuples) as usize;
            let old = cutoff.map_or(0, |c| {
                front.arrival[self.skip..]
                    .iter()
                    .take_while(|&&a| a < c)
                    .count()
            });
            let left = front.len() - self.skip;
            let drop = over.max(old).min(left);
            if drop == 0 {
                break;
            }
            self.tuples -= drop as u64;
            self.evicted += drop as u64;
            if drop == left {
                self.batches.pop_front();
                self.skip = 0;
            } else {
                self.skip += drop;
            }
        }
    }

    /// The rows held that arrived at or after `from`, oldest first, as batches (the first
    /// may be a copy of part of a held batch; the others are shared).
    pub fn history(&self, from: Nanos, types: &[DataType]) -> Vec<Arc<Batch>> {
        let mut out = Vec::with_capacity(self.batches.len());
        for (i, b) in self.batches.iter().enumerate() {
            let start = if i == 0 { self.skip } else { 0 };
            let sel: Vec<u32> = (start..b.len())
                .filter(|&r| b.arrival[r] >= from)
                .map(|r| r as u32)
                .collect();
            if sel.len() == b.len() {
                out.push(b.clone());
            } else if !sel.is_empty() {
                let mut part = Batch::new(types, sel.len());
                part.gather_from(b, &sel);
                out.push(Arc::new(part));
            }
        }
        out
    }

    /// The oldest arrival `history` may return at `now`: `now - last`, or everything held.
    pub fn window_start(&self, now: Nanos) -> Nanos {
        self.limit
            .last
            .map_or(Nanos::MIN, |last| now.saturating_sub(last))
    }

    pub fn snapshot(&self) -> RetainSnapshot {
        let oldest = self.batches.front().map(|b| b.arrival[self.skip]);
        let newest = self.batches.back().and_then(|b| b.arrival.last().copied());
        RetainSnapshot {
            tuples: self.tuples,
            bytes: self.tuples * self.row_bytes,
            evicted: self.evicted,
            oldest,
            newest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::Scalar;

    fn batch(arrivals: std::ops::Range<i64>) -> Arc<Batch> {
        let mut b = Batch::new(&[DataType::Int], 0);
        for a in arrivals {
            b.push_row(a, &[Scalar::Int(a)]);
        }
        Arc::new(b)
    }

    #[test]
    fn a_tuple_bound_keeps_exactly_the_last_tuples() {
        let mut r = Retained::new(
            RetainLimit {
                last: None,
                tuples: 25,
            },
            &[DataType::Int],
        );
        for i in 0..10 {
            r.push(batch(i * 10..i * 10 + 10));
        }
        let s = r.snapshot();
        assert_eq!(
            (s.tuples, s.evicted, s.oldest, s.newest),
            (25, 75, Some(75), Some(99))
        );
        let rows: Vec<i64> = r
            .history(Nanos::MIN, &[DataType::Int])
            .iter()
            .flat_map(|b| b.arrival.clone())
            .collect();
        assert_eq!(rows, (75..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_time_bound_keeps_the_last_span_and_ages_out_when_idle() {
        let mut r = Retained::new(
            RetainLimit {
                last: Some(50),
                tuples: 1_000,
            },
            &[DataType::Int],
        );
        for i in 0..10 {
            r.push(batch(i * 10..i * 10 + 10));
        }
        // Newest 99: rows from 49 on stay.
        assert_eq!(r.snapshot().oldest, Some(49));
        assert_eq!(r.snapshot().tuples, 51);
        assert_eq!(r.snapshot().bytes, 51 * 16);
        let from = r.window_start(120);
        let kept: usize = r
            .history(from, &[DataType::Int])
            .iter()
            .map(|b| b.len())
            .sum();
        assert_eq!(kept, 30, "rows 70..99 are within 50 of 120");
        r.evict(Some(200));
        assert_eq!(r.snapshot().tuples, 0);
        assert_eq!(r.snapshot().evicted, 100);
    }
}
