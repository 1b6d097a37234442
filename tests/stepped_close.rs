//! A large window close is emitted over several turns (`Engine::set_close_step`), so a
//! query with a tight target runs in between instead of waiting behind it. Found live on
//! `workloads/wide-tumble.yaml`: the first close of a million-group tumble held the engine
//! thread for 250 ms in one call, and a filter with a 100 ms target waited behind it.
//!
//! The stepped close gives every row the whole close gives, in the same order and due at
//! the same arrival; only when they leave changes.

use spillway::core::batch::{Batch, Column};
use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Nanos, Schema};
use spillway::sql::{Catalog, plan_query};

const SEC: i64 = 1_000_000_000;
const USERS: i64 = 5_000;
const STEP: usize = 1_000;

fn schema() -> Schema {
    Schema::new(vec![
        Field {
            name: "uid".into(),
            ty: DataType::Int,
        },
        Field {
            name: "ts".into(),
            ty: DataType::Timestamp,
        },
    ])
}

/// A one-second tumble per user (query 0) and a filter (query 1), closes stepped by
/// `step` rows.
fn engine(step: Option<usize>, scheduler: SchedulerKind) -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let def = |name: &str, sql: &str, target: Nanos| QueryDef {
        name: name.into(),
        plan: plan_query(sql, &catalog).expect("plans"),
        latency_target: Some(target),
        weight: 1.0,
        lossless: false,
    };
    let defs = vec![
        def(
            "per_user",
            "SELECT uid, COUNT(*) AS n, window_end FROM s \
             GROUP BY uid, TUMBLE(ts, INTERVAL '1' SECOND)",
            2 * SEC,
        ),
        def("few", "SELECT uid, ts FROM s WHERE uid < 3", SEC / 10),
    ];
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    let config = EngineConfig {
        scheduler,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(streams, defs, config).expect("builds");
    if let Some(step) = step {
        e.set_close_step(step);
    }
    e
}

/// `uids` at event time `t`, each arriving at `t` plus its position in ns.
fn rows(uids: impl Iterator<Item = i64>, t: i64) -> Batch {
    let uids: Vec<i64> = uids.collect();
    let arrival: Vec<i64> = (0..uids.len() as i64).map(|i| t + i).collect();
    Batch {
        columns: vec![Column::Int(uids), Column::Int(vec![t; arrival.len()])],
        arrival,
    }
}

/// Rows a turn left: (query, row as text, arrival its latency counts from).
type Emitted = Vec<(usize, String, Nanos)>;

/// Feeds one second of every user, then a batch at 1 s that closes it; runs turns until
/// no work is left, emitting after each. Returns the rows emitted after the closing batch
/// and the query of each turn with the rows it emitted.
fn closing_run(step: Option<usize>, scheduler: SchedulerKind) -> (Emitted, Vec<(usize, usize)>) {
    let mut e = engine(step, scheduler);
    e.ingest(0, rows(0..USERS, SEC / 2));
    while e.run_turn(0).is_some() {}
    e.emit(0, |_| {});
    e.ingest(0, rows(0..10, SEC));
    let mut all = Vec::new();
    let mut turns = Vec::new();
    while e.has_work() {
        let turn = e.run_turn(SEC).expect("has work");
        let before = all.len();
        e.emit(SEC, |em| {
            for r in 0..em.batch.len() {
                let row = em.batch.row(r, em.types);
                all.push((em.index, format!("{row:?}"), em.batch.arrival[r]));
            }
        });
        turns.push((turn.query, all.len() - before));
    }
    (all, turns)
}

fn of(rows: &Emitted, query: usize) -> Vec<(String, Nanos)> {
    (rows.iter().filter(|r| r.0 == query))
        .map(|r| (r.1.clone(), r.2))
        .collect()
}

#[test]
fn a_large_close_is_emitted_a_step_at_a_time_with_the_filter_in_between() {
    for scheduler in [SchedulerKind::RoundRobin, SchedulerKind::Qos] {
        let (whole, whole_turns) = closing_run(None, scheduler);
        let (stepped, turns) = closing_run(Some(STEP), scheduler);
        // Whole: one turn of the tumble emits every user's row.
        assert!(
            whole_turns.contains(&(0, USERS as usize)),
            "{whole_turns:?}"
        );
        // Stepped: no turn emits more than a step, and the close takes many turns.
        let tumble: Vec<usize> = (turns.iter()).filter(|t| t.0 == 0).map(|t| t.1).collect();
        assert!(tumble.iter().all(|&n| n <= STEP), "{turns:?}");
        assert!(tumble.len() >= USERS as usize / STEP, "{turns:?}");
        // The filter ran before the close was done, not behind all of it.
        let filter_at = turns.iter().position(|t| t.0 == 1).expect("filter ran");
        let last_close = turns.iter().rposition(|t| t.0 == 0 && t.1 > 0).unwrap();
        assert!(filter_at < last_close, "{scheduler:?}: {turns:?}");
        // The same rows, in the same order, due at the arrival of the closing batch.
        assert_eq!(of(&stepped, 0), of(&whole, 0));
        assert_eq!(of(&stepped, 1), of(&whole, 1));
        assert_eq!(of(&stepped, 0).len(), USERS as usize);
        assert!(of(&stepped, 0).iter().all(|r| r.1 == SEC), "due at 1 s");
        assert_eq!(of(&stepped, 1).len(), 3);
    }
}

/// Nothing is queued while a close is half emitted: the engine still has work, and a
/// flush at the end of input emits the rest.
#[test]
fn a_half_emitted_close_is_work_and_a_flush_finishes_it() {
    let mut e = engine(Some(STEP), SchedulerKind::RoundRobin);
    e.ingest(0, rows(0..USERS, SEC / 2));
    while e.run_turn(0).is_some() {}
    e.ingest(0, rows(0..1, SEC));
    e.run_turn(SEC).expect("the tumble's batch");
    e.run_turn(SEC).expect("the filter's batch");
    assert!(e.has_work(), "the close is not done");
    let mut n = 0;
    e.flush(2 * SEC);
    e.emit(2 * SEC, |em| {
        if em.index == 0 {
            n += em.batch.len();
        }
    });
    // Every user's row of [0 s, 1 s), then user 0's of [1 s, 2 s) at the flush.
    assert_eq!(n, USERS as usize + 1);
    assert!(!e.has_work());
    let snapshot = e.snapshot();
    let q = &snapshot.queries[0];
    assert_eq!(q.offered, q.processed, "{q:?}");
}

/// A query removed without a flush while a close is part-emitted still delivers every row
/// already due; only the open window is discarded and counted.
#[test]
fn a_removal_without_flush_delivers_the_rest_of_a_close() {
    let mut e = engine(Some(STEP), SchedulerKind::RoundRobin);
    e.ingest(0, rows(0..USERS, SEC / 2));
    while e.run_turn(0).is_some() {}
    e.emit(0, |_| {});
    e.ingest(0, rows(0..1, SEC));
    e.run_turn(SEC).expect("the tumble's batch");
    let mut delivered = 0;
    e.emit(SEC, |em| delivered += em.batch.len());
    assert!(delivered <= STEP, "one step so far: {delivered}");
    let removal = e
        .remove_query(0, false, SEC, |em| delivered += em.batch.len())
        .expect("removes");
    assert_eq!(delivered, USERS as usize, "every row of [0 s, 1 s)");
    assert_eq!(removal.rows_dropped, 1, "user 0's open window [1 s, 2 s)");
}

/// A query added later replays history under the live close step: every window the
/// history closed is answered at once, none left for live turns.
#[test]
fn a_replay_answers_every_closed_window_whatever_the_step() {
    use spillway::core::retain::RetainLimit;
    let mut e = engine(Some(STEP), SchedulerKind::RoundRobin);
    e.retain(
        0,
        RetainLimit {
            last: None,
            tuples: 1 << 20,
        },
    );
    e.ingest(0, rows(0..USERS, SEC / 2));
    e.ingest(0, rows(0..1, SEC));
    while e.run_turn(SEC).is_some() {}
    e.emit(SEC, |_| {});
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let q = e
        .add_query(QueryDef {
            name: "late_per_user".into(),
            plan: plan_query(
                "SELECT uid, COUNT(*) AS n FROM s GROUP BY uid, TUMBLE(ts, INTERVAL '1' SECOND)",
                &catalog,
            )
            .expect("plans"),
            latency_target: None,
            weight: 1.0,
            lossless: false,
        })
        .expect("adds");
    let mut rows_seen = 0;
    let replay = e
        .replay_history(q, SEC, |em| rows_seen += em.batch.len())
        .expect("replays");
    assert_eq!(replay.rows, USERS as u64);
    assert_eq!(rows_seen, USERS as usize);
    assert!(!e.has_work(), "nothing left for live turns");
}

/// Sharing engine time (`Engine::set_turn_quantum`), the filter drains its queue while the
/// tumble's close steps wait; a turn a round, it gets one batch per close step. Each turn
/// is charged as the live driver would: 2 ms for the tumble's, 10 us for the filter's.
#[test]
fn sharing_time_lets_the_filter_drain_between_close_steps() {
    let order = |quantum: Nanos| {
        let mut e = engine(Some(STEP), SchedulerKind::RoundRobin);
        e.set_turn_quantum(quantum);
        e.ingest(0, rows(0..USERS, SEC / 2));
        while e.run_turn(0).is_some() {}
        e.emit(0, |_| {});
        e.ingest(0, rows(0..10, SEC));
        for i in 1..=20 {
            e.ingest(0, rows(0..3, SEC + i));
        }
        let mut turns = Vec::new();
        while let Some(turn) = e.run_turn(SEC) {
            let cost = if turn.query == 0 { 2_000_000 } else { 10_000 };
            e.record_busy(turn.query, cost);
            e.emit(SEC, |_| {});
            turns.push(turn.query);
        }
        turns
    };
    let shared = order(1_000_000);
    // The filter's 21 batches all ran before the tumble's second turn.
    let second = (shared.iter().enumerate().filter(|t| *t.1 == 0))
        .nth(1)
        .expect("the tumble ran twice")
        .0;
    let last_filter = shared.iter().rposition(|&q| q == 1).unwrap();
    assert!(last_filter < second, "{shared:?}");
    assert_eq!(shared.iter().filter(|&&q| q == 1).count(), 21);
    // A turn a round: the same turns, the filter's spread over the close.
    let by_turns = order(0);
    let mut sorted = (shared.clone(), by_turns.clone());
    sorted.0.sort();
    sorted.1.sort();
    assert_eq!(sorted.0, sorted.1);
    let second = (by_turns.iter().enumerate().filter(|t| *t.1 == 0))
        .nth(1)
        .unwrap()
        .0;
    assert!(
        by_turns.iter().rposition(|&q| q == 1).unwrap() > second,
        "{by_turns:?}"
    );
}
