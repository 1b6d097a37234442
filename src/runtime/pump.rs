//! The live engine thread's intake: what the sources sent, moved into the engine between
//! turns. Push batches are taken as they come; a pull source only while its stream's
//! queues have room; the batches a stream with shared members had waiting are merged
//! (`merge_rows`) so that each member pays one append per merged batch.
//! Invariant: batches of one stream are ingested in the order their source sent them, and
//! a pull batch is stamped with its arrival when taken (the batches merged into one, taken
//! in one pass, with the first one's).

use std::time::Duration;

use crossbeam_channel::TryRecvError;

use super::clock::WallClock;
use super::observe::{Event, Observers};
use super::source::{SourceLink, SourceMsg};
use crate::core::batch::Batch;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::spec::Flow;

/// Moves what the sources have sent into the engine: what each push source had sent when
/// the call began, and from pull sources only while their stream's queries have room.
/// True once every source has ended and its channel is empty.
///
/// Bounded by what was there at the start (at most a channel's worth): a source that
/// sends as fast as the engine ingests would otherwise keep the engine thread here, with
/// no turn run and no control tick taken, while its input piles up in the queues (a
/// start at 10x capacity once queued 8 M tuples before the first plan). At a tick the
/// frontier is read first, so every batch stamped below it is already in the channel
/// and is taken. The batches a stream with shared members (`Engine::shared_queries`) had
/// waiting are ingested merged, up to `merge_rows` rows each, in order.
pub(super) fn pump(
    links: &mut [SourceLink],
    engine: &mut Engine,
    clock: &WallClock,
    batch_size: usize,
    observers: &mut Observers<'_>,
    since: Nanos,
) -> bool {
    let mut all_done = true;
    for (stream, link) in links.iter_mut().enumerate() {
        // A stream whose queries share evaluation takes the batches waiting in its
        // channel as one (`merge_rows`): each member then costs one append per merged
        // batch, not one per source batch. They were waiting anyway: no row waits longer.
        let members = engine.shared_queries(stream).len();
        let merge = members > 0;
        let merge_rows = merge_rows(members);
        let mut merged: Option<Batch> = None;
        // At least one look, so that an ended source is seen as ended.
        let mut pending = link.rx.len().max(1);
        if merge
            && link.flow == Flow::Pull
            && !link.done
            && waits_to_merge(engine, stream, pending * batch_size, merge_rows)
        {
            all_done = false;
            continue;
        }
        while !link.done && pending > 0 {
            pending -= 1;
            let pull = link.flow == Flow::Pull;
            let waiting = merged.as_ref().map_or(0, Batch::len);
            if pull
                && engine.stream_room(stream) < batch_size + waiting
                && !(waiting == 0 && engine.stream_drained(stream))
            {
                break;
            }
            match link.rx.try_recv() {
                Ok(SourceMsg::Batch(mut b)) => {
                    if pull {
                        // The batches merged into one are taken in one pass, microseconds
                        // apart: one stamp for all of them, so each member's rows of a
                        // merged batch are one run of one latency (`record_latencies`),
                        // not one per source batch.
                        let now = match merged.as_ref().and_then(|m| {
                            m.arrival
                                .first()
                                .filter(|_| m.len() + b.len() <= merge_rows)
                        }) {
                            Some(&first) => first,
                            None => clock.now(),
                        };
                        b.arrival.iter_mut().for_each(|a| *a = now);
                    }
                    if !merge {
                        engine.ingest(stream, b);
                    } else if let Some(m) =
                        merged.as_mut().filter(|m| m.len() + b.len() <= merge_rows)
                    {
                        m.extend_from(&b);
                    } else if let Some(m) = merged.replace(b) {
                        engine.ingest(stream, m);
                    }
                }
                Ok(SourceMsg::Shed(cut)) => {
                    if let Some(m) = merged.take() {
                        engine.ingest(stream, m);
                    }
                    engine.ingest_pre_shed(stream, cut)
                }
                Ok(SourceMsg::Malformed { count, sample }) => {
                    engine.record_malformed(stream, count);
                    observers.event(Event::Malformed {
                        at: since,
                        stream,
                        count,
                        sample,
                    });
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => link.done = true,
            }
        }
        if let Some(m) = merged {
            engine.ingest(stream, m);
        }
        all_done &= link.done;
    }
    all_done
}

/// The most rows `pump` merges the waiting batches of a stream with shared members into.
const MERGE_ROWS: usize = 8192;

/// The most rows merged for a stream with `members` shared members: `MERGE_ROWS`, and up
/// to four times as many for hundreds of members. Each member's share of a merged batch
/// costs it a few cache misses whatever its size (its row list, its queued batch): with
/// 1000 threshold queries, batches of 32768 rows ran at 4.8-6.0 M tuples/s where 8192
/// ran at 3.6-5.5, with a lower p99; with 100 they made no gain and cost cache room.
fn merge_rows(members: usize) -> usize {
    (members * 32).clamp(MERGE_ROWS, 4 * MERGE_ROWS)
}

/// Whether a pull stream with shared members, `waiting` rows in its channel, should leave
/// them there until its queues have room for a whole merged batch (`most` rows): taken
/// one batch a turn as room frees up, as a backlog at its bound would be, they would
/// never merge, and each member would pay an append per source batch (1000 threshold
/// queries ran at half the speed). It waits only while some queue is busy, and for at most
/// half the room its queues have when drained (a small bound merges fewer batches rather
/// than stall until every queue drains); a pull batch is stamped when taken, so no
/// latency is hidden by the wait.
fn waits_to_merge(engine: &mut Engine, stream: usize, waiting: usize, most: usize) -> bool {
    let want = waiting.min(most);
    if engine.stream_has_room(stream, want) {
        return false;
    }
    let want = want.min(engine.stream_room_empty(stream) / 2);
    !engine.stream_has_room(stream, want) && !engine.stream_drained(stream)
}

/// Blocks until some source has sent something, or `timeout`.
pub(super) fn wait_for_input(links: &[SourceLink], timeout: Duration) {
    let mut sel = crossbeam_channel::Select::new();
    let mut any = false;
    for l in links.iter().filter(|l| !l.done) {
        sel.recv(&l.rx);
        any = true;
    }
    if any {
        let _ = sel.ready_timeout(timeout);
    } else {
        std::thread::sleep(timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Column;
    use crate::core::drop::DropRule;
    use crate::core::engine::{DropRules, EngineConfig, QueryDef, StreamDef};
    use crate::core::schema::{DataType, Field, Schema};
    use crate::sql::{Catalog, plan_query};

    /// A pulled stream `s` of int columns `cols`, read by one query per SQL text (named
    /// `q0`, `q1`, ...).
    fn pulled(cols: &[&str], sqls: &[String], config: EngineConfig) -> Engine {
        let fields = cols
            .iter()
            .map(|n| Field {
                name: (*n).into(),
                ty: DataType::Int,
            })
            .collect();
        let schema = Schema::new(fields);
        let catalog = Catalog {
            streams: vec![("s".into(), schema.clone())],
        };
        let defs = sqls
            .iter()
            .enumerate()
            .map(|(i, sql)| QueryDef {
                name: format!("q{i}"),
                plan: plan_query(sql, &catalog).expect("plans"),
                latency_target: None,
                weight: 1.0,
                lossless: false,
            })
            .collect();
        let streams = vec![StreamDef {
            name: "s".into(),
            schema,
        }];
        let mut e = Engine::new(streams, defs, config).expect("builds");
        e.set_pulled(0);
        e
    }

    /// Two int columns: 24 bytes a row with its arrival.
    fn engine(budget: usize) -> Engine {
        let config = EngineConfig {
            queue_capacity: 1 << 30,
            queue_memory: budget,
            ..EngineConfig::default()
        };
        pulled(&["a", "b"], &vec!["SELECT a FROM s".to_string(); 2], config)
    }

    fn batch(rows: usize) -> Batch {
        Batch {
            arrival: vec![0; rows],
            columns: vec![Column::Int(vec![1; rows]), Column::Int(vec![2; rows])],
        }
    }

    #[test]
    fn batches_merged_in_one_pass_share_one_stamp() {
        use std::sync::Arc;

        use crate::runtime::frontier::SourceFrontier;
        use crate::runtime::source_shed::StreamKeep;

        // Ten filter queries on one column: a stream with shared members, so it merges.
        let sqls: Vec<String> = (0..10)
            .map(|i| format!("SELECT a FROM s WHERE a > {i}"))
            .collect();
        let mut e = pulled(&["a"], &sqls, EngineConfig::default());
        assert!(
            !e.shared_queries(0).is_empty(),
            "the stream has shared members"
        );
        let (tx, rx) = crossbeam_channel::unbounded();
        let clock = WallClock::start();
        let mut links = vec![SourceLink {
            rx,
            frontier: Arc::new(SourceFrontier::new(clock.now(), 0)),
            flow: Flow::Pull,
            done: false,
            keep: StreamKeep::default(),
        }];
        // Ten batches of 1024 rows (values 0..1024, so q9 keeps 1014 of each): the first
        // eight fill one merged batch (`MERGE_ROWS`), the last two start the next.
        let rows = 1024;
        for _ in 0..10 {
            let b = Batch {
                arrival: vec![0; rows],
                columns: vec![Column::Int((0..rows as i64).collect())],
            };
            tx.send(SourceMsg::Batch(b)).expect("sends");
        }
        let mut observers = Observers::new(Vec::new());
        pump(&mut links, &mut e, &clock, rows, &mut observers, 0);
        while e.has_work() {
            e.run_turn(0);
        }
        let mut arrivals: Vec<Nanos> = Vec::new();
        e.emit(clock.now(), |r| {
            if r.query == "q9" {
                arrivals.extend_from_slice(&r.batch.arrival);
            }
        });
        assert_eq!(
            arrivals.len(),
            10 * (rows - 10),
            "every row of q9 reached it"
        );
        let (first, second) = arrivals.split_at(8 * (rows - 10));
        assert!(
            first.iter().all(|&a| a == first[0]),
            "one stamp for a merge"
        );
        assert!(
            second.iter().all(|&a| a == second[0]),
            "one stamp for the next"
        );
        assert!(
            second[0] >= first[0] && first[0] > 0,
            "stamped when taken, in order"
        );
    }

    #[test]
    fn hundreds_of_members_merge_larger_batches() {
        assert_eq!(merge_rows(10), MERGE_ROWS);
        assert_eq!(merge_rows(100), MERGE_ROWS);
        assert_eq!(merge_rows(500), 16_000);
        assert_eq!(merge_rows(1000), 32_000);
        assert_eq!(merge_rows(5000), 4 * MERGE_ROWS, "capped");
    }

    #[test]
    fn a_pull_stream_waits_for_room_for_a_merged_batch_only_while_it_could_get_it() {
        // Room for 40,000 rows drained.
        let mut e = engine(24 * 40_000);
        assert!(
            !waits_to_merge(&mut e, 0, 8 * 1024, MERGE_ROWS),
            "drained: no wait"
        );
        // 35,000 rows queued: room for 5,000, less than a merged batch.
        e.ingest(0, batch(35_000));
        assert!(waits_to_merge(&mut e, 0, 8 * 1024, MERGE_ROWS));
        assert!(
            !waits_to_merge(&mut e, 0, 4096, MERGE_ROWS),
            "what is waiting fits"
        );
        // A bound that could never hold a merged batch asks for half of it at most: a
        // stream that waited for room it cannot get would stall until every queue drained.
        e.install(&DropRules {
            streams: vec![DropRule::KeepAll],
            queries: vec![DropRule::KeepAll; 2],
            queue_capacity: Some(2 * 1024),
        });
        while e.queue_depth(0) > 0 {
            e.run_turn(0);
        }
        e.ingest(0, batch(100));
        // q1 still holds its 35,000 rows: no room at all, and nothing drained.
        assert!(waits_to_merge(&mut e, 0, 8 * 1024, MERGE_ROWS));
        while e.has_work() {
            e.run_turn(0);
        }
        e.ingest(0, batch(1000));
        // Room 1,048 of a 2,048 bound: at least half of it, so the batches are taken.
        assert!(!waits_to_merge(&mut e, 0, 8 * 1024, MERGE_ROWS));
    }
}
