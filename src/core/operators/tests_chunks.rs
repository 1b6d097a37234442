//! Closes finished in chunks: a flush or a frontier jump over many windows holds at most a
//! chunk of unfiltered group rows (plus one window's) at once, and finishing window by
//! window gives the rows, the side-car and the lost-window count of finishing each close
//! whole, for tumbling and sliding windows (two stacks and direct mode), event and arrival
//! time, with tuples lost at every kind of drop point.

use proptest::prelude::*;

use super::aggregate::CHUNK_ROWS;
use super::tests::{batch, pipeline};
use super::{Body, ColumnApprox, LossKind, Output, Pipeline};

const MS: i64 = 1_000_000;

/// Finishes group rows once `rows` are buffered (`usize::MAX`: each close whole).
fn chunked(sql: &str, rows: usize) -> Pipeline {
    let mut p = pipeline(sql);
    let Body::Aggregate(a) = &mut p.body else {
        unreachable!("an aggregate query")
    };
    a.set_chunk_rows(rows);
    p
}

fn peak(p: &Pipeline) -> usize {
    let Body::Aggregate(a) = &p.body else {
        unreachable!("an aggregate query")
    };
    a.peak_group_rows()
}

/// A key per row, 20 rows per millisecond for `ms` milliseconds, in one batch per ms.
fn feed(p: &mut Pipeline, ms: i64, out: &mut Output) {
    for t in 0..ms {
        let rows: Vec<(i64, i64, i64)> = (0..20).map(|i| (t * 20 + i, i % 7, t)).collect();
        p.process(&batch(&rows), 1.0, 1.0, out);
    }
}

/// The fuzz case's shape: distinct keys over a HOP of 100 slices per window, all windows
/// open at the end of input, and a HAVING that drops every row. Whole, the flush builds
/// about 100 windows x 2,000 rows; in chunks, one chunk and one window at most.
#[test]
fn a_flush_over_many_windows_holds_one_chunk_of_group_rows() {
    let q = "SELECT k, COUNT(*) AS n FROM s GROUP BY k, \
             HOP(ts, INTERVAL '1' MILLISECOND, INTERVAL '100' MILLISECOND) HAVING COUNT(*) > 1";
    let window = 100 * 20;
    for (rows, bounded) in [(CHUNK_ROWS, true), (usize::MAX, false)] {
        let mut p = chunked(q, rows);
        let mut out = p.new_output();
        feed(&mut p, 400, &mut out);
        p.flush(1_000_000 * MS, &mut out);
        assert!(out.is_empty(), "HAVING drops every row");
        if bounded {
            assert!(
                peak(&p) < CHUNK_ROWS + window,
                "{} group rows held",
                peak(&p)
            );
        } else {
            assert!(peak(&p) > 100_000, "whole, {} group rows", peak(&p));
        }
    }
}

/// Arrival-time tumbling windows never ticked pile up until the flush; an event-time jump
/// closes every open sliding window in one batch. Both are finished in chunks.
#[test]
fn piled_up_tumbling_windows_and_a_frontier_jump_are_finished_in_chunks() {
    let tumbling = "SELECT k, COUNT(*) AS n FROM s GROUP BY k, \
                    TUMBLE(PROCTIME(), INTERVAL '1' MILLISECOND) HAVING COUNT(*) > 1";
    let mut p = chunked(tumbling, CHUNK_ROWS);
    let mut out = p.new_output();
    feed(&mut p, 2_000, &mut out);
    p.flush(1_000_000 * MS, &mut out);
    assert!(peak(&p) < CHUNK_ROWS + 20, "{} group rows held", peak(&p));

    let hop = "SELECT k, COUNT(*) AS n FROM s GROUP BY k, \
               HOP(ts, INTERVAL '2' MILLISECOND, INTERVAL '200' MILLISECOND) HAVING COUNT(*) > 1";
    let mut p = chunked(hop, CHUNK_ROWS);
    let mut out = p.new_output();
    feed(&mut p, 300, &mut out);
    let before = peak(&p);
    // One row far ahead: every open window closes inside this batch.
    p.process(&batch(&[(0, 0, 100_000)]), 1.0, 1.0, &mut out);
    assert!(peak(&p) > before, "the jump closed windows");
    assert!(
        peak(&p) < CHUNK_ROWS + 200 * 20,
        "{} group rows held",
        peak(&p)
    );
}

/// A step of the random input: its rows `(k, v, ts_ms)`, then what reached the query: all
/// (with keep fraction `keep`), none or every other row, and what the rest were lost to.
type Step = (Vec<(i64, i64, i64)>, f64, u8, u8);

fn steps(monotonic: bool) -> impl Strategy<Value = Vec<Step>> {
    let row = (0i64..1000, -10i64..10, -2i64..5);
    let step = (
        prop::collection::vec(row, 0..40),
        prop::sample::select(vec![1.0, 1.0, 0.5, 0.25]),
        0u8..4,
        0u8..3,
        any::<bool>(),
        0u8..12,
    );
    prop::collection::vec(step, 1..40).prop_map(move |steps| {
        let mut t = 0i64;
        (steps.into_iter())
            .map(|(rows, keep, reach, kind, wide, jump)| {
                // Now and then a jump far ahead: a frontier closing many windows at once.
                if jump == 0 {
                    t += 150;
                }
                let rows = (rows.into_iter())
                    .map(|(k, v, dt)| {
                        let dt = if monotonic { dt.max(0) } else { dt };
                        t = (t + dt).max(0);
                        (if wide { k } else { k % 4 }, v, t)
                    })
                    .collect();
                (rows, keep, reach, kind)
            })
            .collect()
    })
}

/// Every row as the sinks see it: values, arrival, keep fraction, and for a lossy row its
/// intervals and bound flags (Debug text, so that NaN compares equal to NaN).
fn view(p: &Pipeline, out: &Output) -> Vec<String> {
    (0..out.len())
        .map(|i| {
            let keep = out.approx.keep.get(i).copied().unwrap_or(1.0);
            let mut s = format!(
                "{:?} @{} keep {keep:?}",
                out.rows.row(i, p.output_types()),
                out.rows.arrival[i]
            );
            if keep < 1.0 {
                for (c, kind) in out.approx.columns.iter().enumerate() {
                    match kind {
                        ColumnApprox::Exact => {}
                        ColumnApprox::Interval { .. } => {
                            s += &format!(" {c}:{:?}", out.approx.interval(c, i))
                        }
                        bound => s += &format!(" {c}:{bound:?}"),
                    }
                }
            }
            s
        })
        .collect()
}

/// Runs the steps through a pipeline of `sql` finishing every `rows` group rows: each
/// step's rows reach it or are noted lost, then a tick at the step's last time; then the
/// flush. Returns the rows as seen, the windows lost whole and the late tuples.
fn run(sql: &str, rows: usize, steps: &[Step]) -> (Vec<String>, u64, u64) {
    run_stepped(sql, rows, usize::MAX, steps)
}

/// `run` with closes emitting at most `close_step` rows a call, and every other step
/// followed by one `resume_close` (what a turn of its own does).
fn run_stepped(
    sql: &str,
    rows: usize,
    close_step: usize,
    steps: &[Step],
) -> (Vec<String>, u64, u64) {
    let mut p = chunked(sql, rows);
    p.set_close_step(close_step);
    let mut out = p.new_output();
    for (i, (input, keep, reach, kind)) in steps.iter().enumerate() {
        let b = batch(input);
        let kind = [LossKind::Scaled, LossKind::Unscaled, LossKind::WholeGroups][*kind as usize];
        let kept: Vec<u32> = match reach {
            0 => Vec::new(),
            1 => (0..input.len() as u32).step_by(2).collect(),
            _ => (0..input.len() as u32).collect(),
        };
        if kept.len() < input.len() {
            p.note_lost(&b, &kept, kind);
        }
        if !kept.is_empty() {
            let part: Vec<_> = kept.iter().map(|&i| input[i as usize]).collect();
            p.process(&batch(&part), *keep, 1.0, &mut out);
        }
        if let Some(&(_, _, t)) = input.last() {
            p.on_tick(t * MS, &mut out);
        }
        if i % 2 == 1 {
            p.resume_close(&mut out);
        }
    }
    p.flush(1_000_000 * MS, &mut out);
    (view(&p, &out), p.windows_lost(), p.late())
}

fn query(time: &str, window: &str, having: bool) -> String {
    let having = if having { " HAVING COUNT(*) > 1" } else { "" };
    format!(
        "SELECT k, COUNT(*) AS n, SUM(v) AS sv, AVG(x) AS ax, MIN(v) AS lo, MAX(x) AS hi, \
         window_start FROM s WHERE v > -8 GROUP BY k, {window}({time}, {}){having}",
        match window {
            "TUMBLE" => "INTERVAL '5' MILLISECOND".to_string(),
            _ => "INTERVAL '2' MILLISECOND, INTERVAL '12' MILLISECOND".to_string(),
        }
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Finishing after every window (and after a few) equals finishing each close whole.
    #[test]
    fn chunks_equal_whole_closes_in_event_time(
        steps in steps(false),
        window in prop::sample::select(vec!["TUMBLE", "HOP"]),
        having in any::<bool>(),
    ) {
        let q = query("ts", window, having);
        let whole = run(&q, usize::MAX, &steps);
        prop_assert_eq!(&run(&q, 1, &steps), &whole);
        prop_assert_eq!(&run(&q, 7, &steps), &whole);
    }

    /// Closes emitted a few rows a call (the rest by later batches, ticks or resumes)
    /// give the rows, annotations, lost windows and late tuples of whole closes. Stepped
    /// are tumbling windows; HOP (sliced, closed whole) checks the step changes nothing.
    #[test]
    fn stepped_closes_equal_whole_closes(
        steps in steps(false),
        time in prop::sample::select(vec!["ts", "PROCTIME()"]),
        window in prop::sample::select(vec!["TUMBLE", "HOP"]),
        having in any::<bool>(),
        close_step in 1usize..5,
    ) {
        // No WHERE: the share of input a filter passes is a running estimate read when
        // rows are finished, and a stepped close finishes some of them later.
        let q = query(time, window, having).replace(" WHERE v > -8", "");
        let whole = run(&q, usize::MAX, &steps);
        prop_assert_eq!(&run_stepped(&q, 1, close_step, &steps), &whole);
        prop_assert_eq!(&run_stepped(&q, usize::MAX, close_step, &steps), &whole);
    }

    #[test]
    fn chunks_equal_whole_closes_in_arrival_time(
        steps in steps(true),
        window in prop::sample::select(vec!["TUMBLE", "HOP"]),
        having in any::<bool>(),
    ) {
        let q = query("PROCTIME()", window, having);
        let whole = run(&q, usize::MAX, &steps);
        prop_assert_eq!(&run(&q, 1, &steps), &whole);
        prop_assert_eq!(&run(&q, 7, &steps), &whole);
    }
}
