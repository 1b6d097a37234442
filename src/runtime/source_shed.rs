//! The stream drop point, applied on a push source's own thread: while the shedder keeps a
//! share `k < 1` of a stream, its source draws each tuple's fate itself and sends the
//! engine the kept rows, the selection and the offered batch's time spans, so that the
//! engine thread neither draws, copies nor reads the tuples it will not process (live at
//! 56 M tuples/s offered, copying the kept fifth of each batch out of memory the source
//! thread had just written took a quarter of the engine thread). The engine still counts
//! every offered tuple and learns which ones its windows lost (`Engine::ingest_pre_shed`).
//! Invariant: a batch is cut only with the keep the engine published for its stream, read
//! once per batch, and the keep travels with the batch for Horvitz-Thompson scaling.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::{SeedableRng, rngs::SmallRng};

use crate::core::batch::Batch;
use crate::core::drop::sample_rows;
use crate::core::engine::PreShed;
use crate::core::operators::TimeSpans;
use crate::core::plan::TimeSource;
use crate::core::schema::DataType;

/// The keep the engine publishes for one stream (f64 bits; 1 keeps everything).
#[derive(Clone, Debug)]
pub struct StreamKeep(Arc<AtomicU64>);

impl Default for StreamKeep {
    fn default() -> StreamKeep {
        StreamKeep(Arc::new(AtomicU64::new(1f64.to_bits())))
    }
}

impl StreamKeep {
    pub fn set(&self, keep: f64) {
        let k = if keep.is_finite() {
            keep.clamp(0.0, 1.0)
        } else {
            1.0
        };
        self.0.store(k.to_bits(), Ordering::Relaxed);
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A source's half of its stream's drop point.
pub struct SourceShed {
    keep: StreamKeep,
    types: Vec<DataType>,
    /// Time columns (and arrival) whose span the engine's loss accounting reads: the
    /// timestamp columns, stored as ints, so `TimeSpans::span` can read each.
    times: Vec<TimeSource>,
    /// One task sends at a time; the lock is never contended.
    rng: Mutex<SmallRng>,
}

impl SourceShed {
    pub fn new(keep: StreamKeep, types: Vec<DataType>, seed: u64) -> SourceShed {
        let mut times = vec![TimeSource::Arrival];
        times.extend(
            types
                .iter()
                .enumerate()
                .filter(|(_, t)| **t == DataType::Timestamp)
                .map(|(i, _)| TimeSource::Column(i)),
        );
        times.truncate(4);
        SourceShed {
            keep,
            types,
            times,
            rng: Mutex::new(SmallRng::seed_from_u64(seed)),
        }
    }

    /// `batch` cut by the stream's keep in force, or `Err(batch)` whole when it keeps all.
    pub fn cut(&self, batch: Batch) -> Result<PreShed, Batch> {
        let keep = self.keep.get();
        if keep >= 1.0 || batch.is_empty() {
            return Err(batch);
        }
        let mut sel: Vec<u32> = Vec::new();
        if keep > 0.0 {
            let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
            sample_rows(&mut rng, keep, batch.len(), &mut sel);
        }
        let mut kept = Batch::new(&self.types, sel.len());
        kept.gather_from(&batch, &sel);
        let spans = self
            .times
            .iter()
            .filter_map(|&t| TimeSpans::span(t, &batch).map(|(lo, hi)| (t, lo, hi)))
            .collect();
        Ok(PreShed {
            offered: batch,
            kept,
            sel,
            keep,
            spans,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::Scalar;

    #[test]
    fn a_cut_keeps_the_asked_share_with_the_spans_of_the_offered_batch() {
        let keep = StreamKeep::default();
        let shed = SourceShed::new(keep.clone(), vec![DataType::Int, DataType::Timestamp], 3);
        let mut b = Batch::new(&[DataType::Int, DataType::Timestamp], 10_000);
        for i in 0..10_000 {
            b.push_row(100 + i, &[Scalar::Int(i), Scalar::Timestamp(5_000 - i)]);
        }
        let b = shed.cut(b).expect_err("keep 1 sends the batch whole");
        keep.set(0.25);
        let p = shed.cut(b).expect("keep 0.25 cuts");
        assert_eq!(p.keep, 0.25);
        assert_eq!(p.kept.len(), p.sel.len());
        assert!(p.kept.is_consistent());
        let share = p.sel.len() as f64 / 10_000.0;
        assert!((share - 0.25).abs() < 0.02, "{share}");
        for (k, &i) in p.sel.iter().enumerate() {
            assert_eq!(
                p.kept.columns[0].scalar(k, DataType::Int),
                Scalar::Int(i as i64)
            );
        }
        assert!(p.sel.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            p.spans,
            vec![
                (TimeSource::Arrival, 100, 10_099),
                (TimeSource::Column(1), 5_000 - 9_999, 5_000)
            ]
        );
        keep.set(0.0);
        let p = shed.cut(p.offered).expect("keep 0 cuts everything");
        assert!(p.sel.is_empty() && p.kept.is_empty());
        keep.set(f64::NAN);
        assert_eq!(keep.get(), 1.0);
    }
}
