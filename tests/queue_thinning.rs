//! The inner guard's cut of what is already queued (`Engine::thin_queue`): a random drop at
//! the query's drop point, accounted as one. Its tuples count `shed-random` and leave the
//! queue, the ledger balances, each window learns which share of its tuples it kept (items
//! queued whole and items queued as a drop point's selection of a shared batch alike), and
//! COUNT stays unbiased (Horvitz-Thompson over the product of the keeps).

use spillway::core::batch::Batch;
use spillway::core::drop::{DropReason, DropRule};
use spillway::core::engine::Engine;
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Scalar, Schema};

mod cases;

const US: i64 = 1_000;

fn schema() -> Schema {
    let field = |name: &str, ty| Field {
        name: name.into(),
        ty,
    };
    let mut s = Schema::new(vec![
        field("k", DataType::Int),
        field("ts", DataType::Timestamp),
    ]);
    s.event_time = Some(1);
    s
}

/// Queues 4,000 tuples 10 us apart (four 10 ms windows of 1,000, two keys) in batches of
/// 500; the first two windows through a drop point keeping half (queued as selections of
/// the batch), the last two whole.
fn queued_engine() -> Engine {
    let sql = "SELECT k, COUNT(*) AS n, window_end FROM s GROUP BY k, TUMBLE(ts, INTERVAL '10' MILLISECOND)";
    let mut engine = cases::engine(&schema(), sql, SchedulerKind::RoundRobin);
    let types = schema().types();
    let mut rules = engine.drop_rules();
    for start in (0..4_000i64).step_by(500) {
        rules.queries[0] = if start < 2_000 {
            DropRule::Random { keep: 0.5 }
        } else {
            DropRule::KeepAll
        };
        engine.install(&rules);
        let mut b = Batch::new(&types, 500);
        for i in start..start + 500 {
            b.push_row(
                i * 10 * US,
                &[Scalar::Int(i % 2), Scalar::Timestamp(i * 10 * US)],
            );
        }
        engine.ingest(0, b);
    }
    engine
}

#[test]
fn a_cut_queue_balances_its_ledger_and_scales_what_it_kept() {
    let mut engine = queued_engine();
    let before = engine.snapshot().queries[0].clone();
    let queued = before.queued;
    assert!(queued > 2_500 && queued < 3_500, "{queued}");
    let dropped = engine.thin_queue(0, 0.3);
    let after = engine.snapshot().queries[0].clone();
    assert_eq!(
        after.queued,
        queued - dropped,
        "what is cut leaves the queue"
    );
    assert_eq!(
        after.dropped[DropReason::ShedRandom.index()],
        before.dropped[DropReason::ShedRandom.index()] + dropped,
        "and counts as shed at random"
    );
    let share = after.queued as f64 / queued as f64;
    assert!((share - 0.3).abs() < 0.04, "kept {share} of the queue");
    assert_eq!(
        engine.queue_depth(0) as u64,
        after.queued,
        "the queue's own count"
    );

    while engine.run_turn(40_000 * US).is_some() {}
    engine.flush(40_000 * US + 1);
    let out_types = engine.query_plan(0).output.types();
    let (mut rows, mut total) = (0, 0.0);
    engine.emit(40_000 * US + 1, |e| {
        let approx = e.approx.expect("rows over a cut queue say so");
        for r in 0..e.batch.len() {
            let row = e.batch.row(r, &out_types);
            let (Scalar::Int(n), Scalar::Timestamp(end)) = (&row[1], &row[2]) else {
                panic!("{row:?}")
            };
            // The first two windows kept half, then 0.3 of that; the last two 0.3.
            let want = if *end <= 20_000 * US { 0.15 } else { 0.3 };
            let keep = approx.keep[r];
            assert!(
                (keep - want).abs() < 0.05,
                "{row:?}: keep {keep}, want {want}"
            );
            total += *n as f64;
            rows += 1;
        }
    });
    assert_eq!(rows, 8, "two keys in four windows");
    // Horvitz-Thompson: the scaled counts add up to what was offered, within sampling
    // error (sd about 300 here).
    assert!((total - 4_000.0).abs() < 1_000.0, "scaled total {total}");
    let q = &engine.snapshot().queries[0];
    let shed: u64 = q.dropped.iter().sum();
    assert_eq!(q.offered, 4_000);
    assert_eq!(q.queued, 0);
    assert_eq!(q.offered, q.processed + shed, "the ledger balances");
}

#[test]
fn keep_one_cuts_nothing_and_keep_zero_empties_the_queue() {
    let mut engine = queued_engine();
    let queued = engine.snapshot().queries[0].queued;
    assert_eq!(engine.thin_queue(0, 1.0), 0);
    assert_eq!(engine.snapshot().queries[0].queued, queued);
    assert_eq!(engine.thin_queue(0, 0.0), queued);
    assert_eq!(engine.queue_depth(0), 0);
    assert!(engine.oldest_queued(0).is_none(), "no empty item is left");
    assert!(engine.run_turn(40_000 * US).is_none());
}
