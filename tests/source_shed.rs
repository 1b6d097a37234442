//! A stream drop decided on the source's thread (`runtime::source_shed`): the engine counts
//! every offered tuple, sheds the rest at the stream, and each window learns exactly which
//! share of its tuples it kept, as when the engine's own drop point decides, including
//! batches that cross a window boundary (the loss accounting then reads the offered times).

use std::collections::BTreeMap;

use spillway::core::batch::Batch;
use spillway::core::drop::DropReason;
use spillway::core::engine::Engine;
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Scalar, Schema};
use spillway::runtime::source_shed::{SourceShed, StreamKeep};

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

#[test]
fn a_source_cut_stream_balances_its_ledger_and_tells_each_window_its_kept_share() {
    let sql = "SELECT k, COUNT(*) AS n, window_end FROM s GROUP BY k, TUMBLE(ts, INTERVAL '10' MILLISECOND)";
    let mut engine: Engine = cases::engine(&schema(), sql, SchedulerKind::RoundRobin);
    let types = schema().types();
    let keep = StreamKeep::default();
    let shed = SourceShed::new(keep.clone(), types.clone(), 11);
    keep.set(0.3);
    // 4,000 tuples 10 us apart: 40 ms, four windows; batches of 512 span 5.12 ms, so some
    // cross a window's end.
    let (rows, size) = (4_000i64, 512i64);
    let mut kept_in: BTreeMap<(i64, i64), u64> = BTreeMap::new();
    let mut kept_total = 0u64;
    for start in (0..rows).step_by(size as usize) {
        let end = (start + size).min(rows);
        let mut b = Batch::new(&types, (end - start) as usize);
        for i in start..end {
            b.push_row(
                i * 10 * US,
                &[Scalar::Int(i % 4), Scalar::Timestamp(i * 10 * US)],
            );
        }
        let cut = shed.cut(b).expect("keep 0.3 cuts");
        for &i in &cut.sel {
            let row = start + i as i64;
            *kept_in
                .entry((row % 4, row * 10 * US / 10_000_000))
                .or_default() += 1;
        }
        kept_total += cut.sel.len() as u64;
        engine.ingest_pre_shed(0, cut);
        let now = end * 10 * US;
        while engine.run_turn(now).is_some() {}
    }
    engine.flush(rows * 10 * US + 1);
    let out_types = engine.query_plan(0).output.types();
    let mut seen = 0;
    engine.emit(rows * 10 * US + 1, |e| {
        let approx = e.approx.expect("rows over a shed input say so");
        for r in 0..e.batch.len() {
            let row = e.batch.row(r, &out_types);
            let (Scalar::Int(k), Scalar::Int(n), Scalar::Timestamp(end)) =
                (&row[0], &row[1], &row[2])
            else {
                panic!("{row:?}")
            };
            let w = end / 10_000_000 - 1;
            // The keep the source drew with, and COUNT scaled by it (Horvitz-Thompson).
            assert!(
                (approx.keep[r] - 0.3).abs() < 1e-9,
                "{row:?}: keep {}",
                approx.keep[r]
            );
            let want = kept_in[&(*k, w)] as f64 / 0.3;
            assert!((*n as f64 - want).abs() <= 1.0, "{row:?}: n against {want}");
            seen += 1;
        }
    });
    assert_eq!(seen, 16, "four keys in four windows");
    let q = &engine.snapshot().queries[0];
    assert_eq!(q.offered, rows as u64);
    assert_eq!(q.processed, kept_total);
    assert_eq!(
        q.dropped[DropReason::ShedRandom.index()],
        rows as u64 - kept_total
    );
    assert_eq!(q.queued, 0);
    let share = kept_total as f64 / rows as f64;
    assert!((share - 0.3).abs() < 0.03, "{share}");
}
