//! The router's split (`runtime::workers::route`): each batch of a routed stream is split
//! once into one part per worker. Every row lands in exactly one part, in input order, on
//! the worker that owns its key's shard, and each part carries the stream time its rows
//! cannot see: per row the largest event time of the whole stream so far (across batches
//! and whichever worker owns the rows), and at the end the batch's.

use spillway::core::batch::{Batch, Column};
use spillway::core::engine::Engine;
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Schema};
use spillway::core::shard::{ShardMap, shards_of};
use spillway::runtime::workers::Sharded;
use spillway::runtime::workers::route::Route;

mod cases;

fn engine(sql: &str) -> Engine {
    let f = |n: &str, ty| Field { name: n.into(), ty };
    let mut schema = Schema::new(vec![f("k", DataType::Int), f("t", DataType::Timestamp)]);
    schema.event_time = Some(1);
    cases::engine(&schema, sql, SchedulerKind::RoundRobin)
}

const KEYED: &str = "SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(t, INTERVAL '1' SECOND)";

fn batch(rows: &[(i64, i64)], arrival0: i64) -> Batch {
    Batch {
        arrival: (0..rows.len() as i64).map(|i| arrival0 + i).collect(),
        columns: vec![
            Column::Int(rows.iter().map(|r| r.0).collect()),
            Column::Int(rows.iter().map(|r| r.1).collect()),
        ],
    }
}

/// A row as a part holds it: key, arrival, and the stream time it sees (time, arrival).
type Row = (i64, i64, (i64, i64));

#[test]
fn every_row_goes_to_its_owner_once_in_order_with_the_streams_time_so_far() {
    for workers in [2, 3, 4] {
        let mut sharded = Sharded::new(workers, 64, || Ok::<_, ()>(engine(KEYED))).unwrap();
        assert!(matches!(
            sharded.router.route(0),
            Route::Split { column: 0, .. }
        ));
        let map = ShardMap::new(64, workers);
        // Out of order within a batch, and a second batch whose first rows are older than
        // the first batch's newest: the prefix carries the first batch's high.
        let batches = [
            batch(
                &[(1, 50), (2, 10), (3, 70), (4, 60), (5, 80), (6, 20)],
                1000,
            ),
            batch(&[(7, 30), (8, 90), (9, 40), (10, 100), (11, 5)], 2000),
        ];
        let mut high = (i64::MIN, 0);
        for b in &batches {
            let parts = sharded.router.split(0, b).expect("routed");
            assert_eq!(parts.len(), workers);
            let mut shards = Vec::new();
            shards_of(b, 0, 64, &mut shards);
            let Column::Int(t) = &b.columns[1] else {
                unreachable!()
            };
            // The expected part of each worker, row by row in input order.
            let mut expect: Vec<Vec<Row>> = vec![Vec::new(); workers];
            for i in 0..b.len() {
                if t[i] > high.0 {
                    high = (t[i], b.arrival[i]);
                }
                let Column::Int(k) = &b.columns[0] else {
                    unreachable!()
                };
                expect[map.owner(shards[i] as usize)].push((k[i], b.arrival[i], high));
            }
            for (w, part) in parts.iter().enumerate() {
                let Column::Int(k) = &part.batch.columns[0] else {
                    unreachable!()
                };
                let got: Vec<Row> = (0..part.batch.len())
                    .map(|j| (k[j], part.batch.arrival[j], part.time.prefix[j]))
                    .collect();
                assert_eq!(got, expect[w], "worker {w} of {workers}");
                assert_eq!(part.time.tail, high, "worker {w} of {workers}");
                assert!(part.batch.is_consistent());
            }
            let total: usize = parts.iter().map(|p| p.batch.len()).sum();
            assert_eq!(total, b.len());
        }
    }
}

#[test]
fn one_worker_and_a_keyless_query_are_not_split() {
    let mut one = Sharded::new(1, 64, || Ok::<_, ()>(engine(KEYED))).unwrap();
    assert_eq!(one.router.route(0), Route::Broadcast);
    assert!(one.router.split(0, &batch(&[(1, 1)], 0)).is_none());
    let keyless = "SELECT COUNT(*) AS n FROM s GROUP BY TUMBLE(t, INTERVAL '1' SECOND)";
    let mut two = Sharded::new(2, 64, || Ok::<_, ()>(engine(keyless))).unwrap();
    assert_eq!(two.router.route(0), Route::Broadcast);
    assert!(two.router.split(0, &batch(&[(1, 1)], 0)).is_none());
}

/// `(key, arrival, stream time seen)` of every row of `parts`, in order.
fn rows_of(parts: &[spillway::runtime::workers::route::Part]) -> Vec<Row> {
    let mut rows = Vec::new();
    for p in parts {
        let Column::Int(k) = &p.batch.columns[0] else {
            unreachable!()
        };
        rows.extend((0..p.batch.len()).map(|j| (k[j], p.batch.arrival[j], p.time.prefix[j])));
    }
    rows
}

/// The coordinator joins each worker's parts of consecutive batches (`Coalesce`): a worker
/// gets the same rows, in the same order, with the same stream time per row, as from one
/// part per batch; every part but the last holds at least a batch's rows; and a part's
/// tail is the stream's time at the end of the last batch joined into it.
#[test]
fn joined_parts_hold_the_split_rows_in_batches_with_the_latest_tail() {
    use spillway::runtime::workers::route::{Coalesce, Part};
    for (workers, size) in [(2, 8), (3, 5), (4, 1), (2, 1000)] {
        let mut split = Sharded::new(workers, 64, || Ok::<_, ()>(engine(KEYED))).unwrap();
        let mut joined = Sharded::new(workers, 64, || Ok::<_, ()>(engine(KEYED))).unwrap();
        let mut join = Coalesce::new(&joined.router, 0, size);
        let (mut one, mut many): (Vec<Vec<Part>>, Vec<Vec<Part>>) = (
            (0..workers).map(|_| Vec::new()).collect(),
            (0..workers).map(|_| Vec::new()).collect(),
        );
        // Times out of order within and across batches; some batches miss some workers.
        let mut tails = Vec::new();
        for i in 0..40i64 {
            let rows: Vec<(i64, i64)> = (0..(i % 7))
                .map(|j| (i * 3 + j, (i * 37 + j * 11) % 100))
                .collect();
            let b = batch(&rows, i * 100);
            let parts = split.router.split(0, &b).expect("routed");
            let tail = parts[0].time.tail;
            tails.push(tail);
            for (w, p) in parts.into_iter().enumerate() {
                if !p.batch.is_empty() {
                    one[w].push(p);
                }
            }
            assert!(join.add(&mut joined.router, &b, |w, p| {
                assert!(p.batch.len() >= size, "a full part");
                assert_eq!(p.time.tail, tail, "sent at the batch that filled it");
                many[w].push(p);
            }));
        }
        let last = *tails.last().expect("batches");
        join.drain(&joined.router, |w, p| {
            assert!(!p.batch.is_empty());
            assert_eq!(p.time.tail, last);
            many[w].push(p);
        });
        for w in 0..workers {
            assert_eq!(
                rows_of(&many[w]),
                rows_of(&one[w]),
                "worker {w} of {workers}"
            );
            assert!(many[w].iter().all(|p| p.batch.is_consistent()));
            if size > 1 {
                assert!(many[w].len() < one[w].len(), "joined: {size} rows a part");
            }
        }
        // Nothing is left held after a drain.
        let mut after = 0;
        join.drain(&joined.router, |_, _| after += 1);
        assert_eq!(after, 0);
    }
}
