//! One shape's figures from one run of `spillway soak` (a table row), whether they keep the
//! promise, and the ranges over repeated runs (`--runs`): the issue asks for figures from
//! three runs, reported as ranges, since one run on a shared 2-core machine is not a
//! figure. Invariant: a row is built from a finished run only (its last second closed).

use super::measured::Measured;
use crate::cli::outln;

/// What one run of one shape measured, as printed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Row {
    pub(super) shape: String,
    /// Tuples/s the shape was scaled to.
    pub(super) capacity: f64,
    /// (seconds over target after each surge's first, seconds counted).
    pub(super) over: (u64, u64),
    /// The query furthest over (or closest to) its target: name, whole-run p99 and target
    /// (ns).
    pub(super) worst: Option<(String, f64, f64)>,
    /// Query turns' and ingest's shares of the engine over ticks that shed.
    pub(super) busy: f64,
    pub(super) ingest: f64,
    /// The engine thread's share of those ticks spent waiting for input with nothing to
    /// do: capacity the plans left unused (the rest of `1 - busy - ingest` is the loop's
    /// own work: control ticks, the guard, emitting results).
    pub(super) idle: f64,
    pub(super) keep: f64,
    pub(super) utility: f64,
    pub(super) model_error: Option<f64>,
    pub(super) refits: u64,
    pub(super) insufficient: u64,
    pub(super) shedding_ticks: u64,
    pub(super) load: Option<f64>,
}

impl Row {
    /// The row of a finished run of `shape`; `names` are the workload's query names.
    pub(super) fn of(shape: &str, capacity: f64, m: &Measured, names: &[String]) -> Row {
        let worst = (0..names.len())
            .filter_map(|q| {
                let t = m.targets[q]? as f64;
                Some((q, m.whole[q].value_at_percentile(99.0) as f64, t))
            })
            .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))
            .map(|(q, p, t)| (names[q].clone(), p, t));
        let shedding = m.shedding_ticks.max(1) as f64;
        Row {
            shape: shape.to_string(),
            capacity,
            over: m.over,
            worst,
            busy: m.busy_sum / shedding,
            ingest: m.ingest_sum / shedding,
            idle: m.idle_sum / shedding,
            keep: m.keep_sum / shedding,
            utility: m.utility_sum / m.ticks.max(1) as f64,
            model_error: m.model_error,
            refits: m.refits,
            insufficient: m.insufficient,
            shedding_ticks: m.shedding_ticks,
            load: super::load_average(),
        }
    }

    /// The share of counted seconds over target.
    pub(super) fn over_share(&self) -> f64 {
        self.over.0 as f64 / self.over.1.max(1) as f64
    }

    pub(super) fn print(&self) {
        outln!(
            "{:<7} {:>8} {:>4}/{:<3} {:>4.1}% {:>22} {:>5.2} {:>5.2} {:>5.2} {:>6.2} {:>5.2} {:>6} {:>5} {:>5} {:>5}",
            self.shape,
            // A user's workload runs at its own rates: no capacity was scaled to.
            if self.capacity > 0.0 {
                format!("{:.2}M", self.capacity / 1e6)
            } else {
                "-".to_string()
            },
            self.over.0,
            self.over.1,
            100.0 * self.over_share(),
            self.worst
                .as_ref()
                .map_or("-".to_string(), |(q, p, t)| format!(
                    "{:.0}/{:.0}ms {q}",
                    p / 1e6,
                    t / 1e6,
                )),
            self.busy,
            self.ingest,
            self.idle,
            self.keep,
            self.utility,
            self.model_error
                .map_or("-".to_string(), |e| format!("{:.0}%", 100.0 * e)),
            self.refits,
            self.insufficient,
            self.load.map_or("-".to_string(), |l| format!("{l:.1}")),
        );
    }

    /// How this run broke the promise: more than 1% of seconds over target after the first
    /// second of each surge, or the engine (query turns and ingest) under 85% busy while
    /// shedding. A scaled shape that never shed did not overload: the check did not happen.
    pub(super) fn failures(&self, issue: bool) -> Vec<String> {
        let mut failed = Vec::new();
        let name = &self.shape;
        if self.over_share() > 0.01 {
            failed.push(format!(
                "{name}: {:.1}% of seconds over target",
                100.0 * self.over_share()
            ));
        }
        if self.shedding_ticks > 0 && self.busy + self.ingest < 0.85 {
            failed.push(format!(
                "{name}: engine {:.0}% busy while shedding",
                100.0 * (self.busy + self.ingest)
            ));
        }
        if self.shedding_ticks == 0 && !issue {
            failed.push(format!("{name}: never shed (no overload)"));
        }
        failed
    }
}

/// `lo-hi` of `xs` with `f` applied, each printed by `fmt`; one value when they agree.
fn range(xs: &[f64], fmt: impl Fn(f64) -> String) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (fmt(lo), fmt(hi));
    if a == b { a } else { format!("{a}-{b}") }
}

/// The ranges over every run of each shape, in the order shapes first appear in `rows`:
/// the lines the README's tables are made of.
pub(super) fn ranges(rows: &[Row]) -> Vec<String> {
    let mut shapes: Vec<&str> = Vec::new();
    for r in rows {
        if !shapes.contains(&r.shape.as_str()) {
            shapes.push(&r.shape);
        }
    }
    shapes
        .iter()
        .map(|&s| {
            let of: Vec<&Row> = rows.iter().filter(|r| r.shape == s).collect();
            let get = |f: fn(&Row) -> f64| of.iter().map(|r| f(r)).collect::<Vec<f64>>();
            let counted = of.iter().map(|r| r.over.1).max().unwrap_or(0);
            let capacity = get(|r| r.capacity / 1e6);
            let capacity = if capacity.iter().all(|&c| c > 0.0) {
                format!(", capacity {} M/s", range(&capacity, |x| format!("{x:.2}")))
            } else {
                String::new()
            };
            format!(
                "{s:<7} {} runs: over {} of {counted} s, worst p99/target {}, busy+ingest {}, idle {}, utility {}{capacity}",
                of.len(),
                range(&get(|r| r.over.0 as f64), |x| format!("{x:.0}")),
                range(
                    &get(|r| r.worst.as_ref().map_or(0.0, |w| w.1 / w.2)),
                    |x| format!("{x:.2}")
                ),
                range(&get(|r| r.busy + r.ingest), |x| format!("{x:.2}")),
                range(&get(|r| r.idle), |x| format!("{x:.2}")),
                range(&get(|r| r.utility), |x| format!("{x:.2}")),
            )
        })
        .collect()
}

/// Prints `ranges` under a heading (only worth it for more than one run).
pub(super) fn print_ranges(rows: &[Row]) {
    outln!("ranges over the runs:");
    for line in ranges(rows) {
        outln!("  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(shape: &str, over: u64, p99: f64, busy: f64, utility: f64) -> Row {
        Row {
            shape: shape.to_string(),
            capacity: 7e6,
            over: (over, 60),
            worst: Some(("q".to_string(), p99 * 1e6, 200e6)),
            busy,
            ingest: 0.2,
            idle: 0.05,
            keep: 0.3,
            utility,
            model_error: None,
            refits: 0,
            insufficient: 0,
            shedding_ticks: 100,
            load: None,
        }
    }

    #[test]
    fn ranges_span_every_run_of_each_shape_in_first_seen_order() {
        let rows = [
            row("3x", 1, 190.0, 0.65, 0.29),
            row("step", 0, 150.0, 0.70, 0.60),
            row("3x", 0, 222.0, 0.62, 0.27),
            row("3x", 3, 180.0, 0.66, 0.29),
        ];
        let r = ranges(&rows);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            "3x      3 runs: over 0-3 of 60 s, worst p99/target 0.90-1.11, busy+ingest 0.82-0.86, idle 0.05, utility 0.27-0.29, capacity 7.00 M/s"
        );
        assert!(
            r[1].starts_with("step    1 runs: over 0 of 60 s, worst p99/target 0.75,"),
            "{}",
            r[1]
        );
    }

    #[test]
    fn a_run_fails_over_one_percent_of_seconds_or_under_85_percent_busy() {
        assert!(row("3x", 0, 150.0, 0.7, 0.3).failures(false).is_empty());
        let f = row("3x", 1, 150.0, 0.6, 0.3).failures(false);
        assert_eq!(
            f,
            [
                "3x: 1.7% of seconds over target",
                "3x: engine 80% busy while shedding"
            ]
        );
        let mut calm = row("ramp", 0, 10.0, 0.0, 1.0);
        calm.shedding_ticks = 0;
        assert_eq!(calm.failures(false), ["ramp: never shed (no overload)"]);
        assert!(calm.failures(true).is_empty());
    }
}
