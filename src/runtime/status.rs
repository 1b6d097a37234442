//! The status observer: a start line, one status line per query every second, events
//! worth a line (stop requests, QoS violations, malformed input, sink failures) and the
//! end-of-run summary (`status/summary.rs`), written to stderr so result rows on stdout
//! stay pipeable. It is one observer among others and formats only what the reports carry.

use std::fmt::Write as _;
use std::io::Write as _;

use super::observe::{Event, Observer, RunInfo, RunMode, TickReport};
use super::stop::StopReason;
use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::runtime::control::ControlReport;

mod summary;

pub use summary::{shedding_summary, summary};

fn ms(n: Nanos) -> f64 {
    n as f64 / 1e6
}

/// Formats a rate compactly: `812`, `50.0k`, `1.20M`.
pub fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2}M", per_sec / 1e6)
    } else if per_sec >= 1e4 {
        format!("{:.1}k", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

/// One line per query from the latest control report: processed and result rates,
/// queue depth, p50/p99 latency over the last second, the keep fraction of its input and
/// its utility; and a load line when a shedding policy is active.
pub fn status_lines(r: &ControlReport, at: Nanos, shedding_policy: bool) -> String {
    let width = r
        .qos
        .queries
        .iter()
        .map(|q| q.name.len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    if shedding_policy {
        let p = &r.plan;
        let _ = writeln!(
            s,
            "[{:>6.1}s] demand {:.2} x capacity target ({:.0}% busy{}), {}, utility {:.2}{}",
            at as f64 / 1e9,
            if p.target > 0.0 {
                p.load / p.target
            } else {
                0.0
            },
            100.0 * r.qos.busy,
            // The engine's work outside query turns (fan-out, shared filters, control),
            // when it is measured: the busy share alone can read 1% with the engine full.
            if r.qos.overhead >= 0.005e9 {
                format!(", {:.0}% ingest", r.qos.overhead / 1e7)
            } else {
                String::new()
            },
            if p.shedding {
                format!(
                    "shedding (model correction {:.2}, headroom {:.2}{}{}{})",
                    p.correction,
                    p.headroom,
                    if p.lift > 1.005 {
                        format!(", idle lift {:.2}", p.lift)
                    } else {
                        String::new()
                    },
                    r.qos
                        .model_error
                        .map(|e| format!(", model error {:+.0}%", 100.0 * e))
                        .unwrap_or_default(),
                    if p.input_insufficient {
                        ", input drops cannot cover the load"
                    } else {
                        ""
                    }
                )
            } else {
                "not shedding".to_string()
            },
            p.weighted_utility,
            // Stream drop points, when any drops (query points show per query below).
            r.qos
                .streams
                .iter()
                .zip(&r.stream_keep)
                .filter(|(_, k)| **k < 1.0)
                .map(|(st, k)| format!(", stream {} keep {k:.2}", st.name))
                .collect::<String>(),
        );
    }
    for (i, q) in r.qos.queries.iter().enumerate().filter(|(_, q)| !q.removed) {
        let keep = r.stream_keep.get(q.stream).copied().unwrap_or(1.0)
            * r.query_keep.get(i).copied().unwrap_or(1.0);
        // No result in the window: no latency to show (not a latency of 0).
        let lat = |n: Nanos| {
            if q.p99 == 0 {
                format!("{:>8}", "-")
            } else {
                format!("{:>8.2}", ms(n))
            }
        };
        let _ = writeln!(
            s,
            "[{:>6.1}s] {:<width$}  in {:>7}/s  out {:>7}/s  queue {:>8}  p50 {} ms  p99 {} ms  keep {:.2}  utility {:.2}",
            at as f64 / 1e9,
            q.name,
            rate(q.rate_in),
            rate(q.rate_out),
            q.queued,
            lat(q.p50),
            lat(q.p99),
            keep,
            q.utility,
        );
    }
    s
}

/// Writes status lines and the summary to stderr. `quiet` keeps only the summary and
/// the lines that say something went wrong.
pub struct StatusObserver {
    quiet: bool,
    shedding_policy: bool,
    next_status: Nanos,
    queries: Vec<String>,
    streams: Vec<String>,
}

/// Status lines come once per this much run time.
pub const STATUS_EVERY: Nanos = 1_000_000_000;

impl StatusObserver {
    pub fn new(quiet: bool) -> StatusObserver {
        StatusObserver {
            quiet,
            shedding_policy: false,
            next_status: STATUS_EVERY,
            queries: Vec::new(),
            streams: Vec::new(),
        }
    }

    fn line(&self, text: &str) {
        // A closed stderr is no reason to fail a run.
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

impl Observer for StatusObserver {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        if t.last || t.elapsed < self.next_status {
            return;
        }
        self.next_status = t.elapsed + STATUS_EVERY;
        if !self.quiet {
            self.line(&status_lines(t.control, t.elapsed, self.shedding_policy));
        }
    }

    fn on_event(&mut self, e: &Event) {
        match e {
            Event::RunStarted(info) => {
                self.shedding_policy = info.shedding_policy;
                self.queries = info.queries.iter().map(|q| q.name.clone()).collect();
                self.streams = info.streams.iter().map(|s| s.name.clone()).collect();
                if !self.quiet {
                    self.line(&start_line(info));
                }
            }
            Event::StopRequested { reason, abort, .. } => {
                let who = match reason {
                    StopReason::Interrupt => "Ctrl-C",
                    StopReason::Terminate => "SIGTERM",
                    StopReason::Requested => "stop requested",
                };
                self.line(&if *abort {
                    format!("spillway: {who} again: aborting without draining\n")
                } else {
                    format!(
                        "spillway: {who}: draining queues and flushing sinks (again to abort)\n"
                    )
                });
            }
            Event::ViolationBegan {
                at,
                query,
                latency,
                target,
            } if !self.quiet => self.line(&format!(
                "[{:>6.1}s] {}: latency {:.2} ms over its {:.2} ms target\n",
                *at as f64 / 1e9,
                self.queries.get(*query).map_or("?", |s| s.as_str()),
                ms(*latency),
                ms(*target)
            )),
            // A notice that is not a malformed input (a refused connection).
            Event::Malformed {
                at,
                stream,
                count: 0,
                sample,
            } => self.line(&format!(
                "[{:>6.1}s] stream {}: {sample}\n",
                *at as f64 / 1e9,
                self.streams.get(*stream).map_or("?", |s| s.as_str()),
            )),
            Event::Malformed {
                at,
                stream,
                count,
                sample,
            } => self.line(&format!(
                "[{:>6.1}s] stream {}: {count} malformed input(s), e.g. {sample}\n",
                *at as f64 / 1e9,
                self.streams.get(*stream).map_or("?", |s| s.as_str()),
            )),
            Event::SinkFailed { query, message, .. } => self.line(&format!(
                "spillway: sink of query `{}` failed: {message}\n",
                self.queries.get(*query).map_or("?", |s| s.as_str())
            )),
            Event::QueryAdded { at, query, info } => {
                self.queries.resize(*query, String::from("?"));
                self.queries.push(info.name.clone());
                self.line(&format!(
                    "[{:>6.1}s] query `{}` added\n",
                    *at as f64 / 1e9,
                    info.name
                ));
            }
            Event::QueryChanged { at, info, .. } => self.line(&format!(
                "[{:>6.1}s] query `{}`: QoS changed\n",
                *at as f64 / 1e9,
                info.name
            )),
            Event::QueryRemoved {
                at,
                ledger,
                rows_dropped,
                ..
            } => self.line(&format!(
                "[{:>6.1}s] query `{}` removed: offered {} = processed {} + shed {} + queue-full {} + withdrawn {}{}\n",
                *at as f64 / 1e9,
                ledger.name,
                ledger.offered,
                ledger.processed,
                ledger.shed() - ledger.dropped[DropReason::Withdrawn.index()],
                ledger.queue_full(),
                ledger.dropped[DropReason::Withdrawn.index()],
                if *rows_dropped > 0 {
                    format!("; {rows_dropped} open-window rows dropped")
                } else {
                    String::new()
                }
            )),
            Event::PolicyChanged {
                at,
                policy,
                shedding_policy,
            } => {
                self.shedding_policy = *shedding_policy;
                self.line(&format!(
                    "[{:>6.1}s] policy switched to {policy}\n",
                    *at as f64 / 1e9
                ));
            }
            Event::ModelRefit { at, scale } if !self.quiet => self.line(&format!(
                "[{:>6.1}s] load model refitted: costs x{scale:.2} (the correction sat at its bound)\n",
                *at as f64 / 1e9
            )),
            Event::InputDropsInsufficient { at, paused } if !self.quiet => {
                let names: Vec<&str> = paused
                    .iter()
                    .map(|q| self.queries.get(*q).map_or("?", |s| s.as_str()))
                    .collect();
                self.line(&format!(
                    "[{:>6.1}s] dropping input cannot bring the load under capacity (work per emitted row does not shrink with it): dropping whole windows{}\n",
                    *at as f64 / 1e9,
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(", pausing {}", names.join(", "))
                    }
                ))
            }
            Event::InputDropsSufficient { at } if !self.quiet => self.line(&format!(
                "[{:>6.1}s] input drops cover the load again\n",
                *at as f64 / 1e9
            )),
            Event::RunEnded(summary_) => self.line(&summary(summary_)),
            _ => {}
        }
    }
}

/// `spillway: running `w` live (...)`.
pub fn start_line(info: &RunInfo) -> String {
    let flows: Vec<String> = info
        .streams
        .iter()
        .map(|s| format!("{} {} {}", s.name, s.source, s.flow.label()))
        .collect();
    match info.mode {
        RunMode::Live => format!(
            "spillway: running `{}` live ({}; {} query(ies), policy {}){}\n",
            info.workload,
            flows.join(", "),
            info.queries.len(),
            info.policy,
            info.duration
                .map(|d| format!(" for {:.1} s; Ctrl-C stops early", d as f64 / 1e9))
                .unwrap_or_else(|| "; Ctrl-C stops".into())
        ),
        RunMode::Simulated => format!(
            "spillway: running `{}` simulated for {:.1} s of virtual time on {} core(s) ({}; policy {})\n",
            info.workload,
            info.duration.unwrap_or(0) as f64 / 1e9,
            info.cores,
            flows.join(", "),
            info.policy
        ),
    }
}
