//! Routing of results to the sinks of a run, shared by the live and simulated drivers. A
//! failed sink is reported once (as an event the driver forwards) and skipped afterwards;
//! every row it could not take is counted per query as undelivered, so no loss is silent.
//! A reader closing stdout (`run ... | head`) is not a failure: it ends the run.

use std::io;

use super::assemble::Sinks;
use crate::core::engine::Emitted;

/// The state of one sink.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Failed,
    /// Its reader went away: rows are no longer wanted, not lost.
    Closed,
}

/// Where a query added while running writes.
pub enum AddedSink {
    None,
    Stdout,
    Sink(Box<dyn super::sink::Sink>),
}

pub struct Outputs<'a> {
    sinks: &'a mut Sinks,
    state: Vec<State>,
    /// A reader closed its end: the run should stop, as pipelines expect.
    pub closed: bool,
    /// Rows each query's sink could not take.
    pub undelivered: Vec<u64>,
    /// Failures not yet reported: (query, message).
    pub failures: Vec<(usize, String)>,
    /// The sink writing to stdout (`with_stdout`), shared by queries added later.
    stdout: Option<usize>,
    /// Sinks of scripted adds not applied yet, by query name (`hold_scripted`): their
    /// index is known only when they are added, after whatever the control API added.
    pending: Vec<(String, Option<usize>)>,
}

impl<'a> Outputs<'a> {
    pub fn new(sinks: &'a mut Sinks, queries: usize) -> Outputs<'a> {
        Outputs {
            state: vec![State::Open; sinks.sinks.len()],
            sinks,
            closed: false,
            undelivered: vec![0; queries],
            failures: Vec::new(),
            stdout: None,
            pending: Vec::new(),
        }
    }

    /// Tells which sink already writes to stdout (`Sinks::stdout_of`), so a query added
    /// later that writes there shares it rather than interleaving with it.
    pub fn with_stdout(mut self, sink: Option<usize>) -> Outputs<'a> {
        self.stdout = sink;
        self
    }

    /// Writes one query's results to its sink, if it has one.
    pub fn write(&mut self, e: &Emitted<'_>) {
        // Queries added while running get their counters on first use.
        if self.undelivered.len() <= e.index {
            self.undelivered.resize(e.index + 1, 0);
        }
        let Some(si) = self.sinks.route.get(e.index).copied().flatten() else {
            return;
        };
        match self.state[si] {
            State::Closed => return,
            State::Failed => {
                self.undelivered[e.index] += e.batch.len() as u64;
                return;
            }
            State::Open => {}
        }
        if let Err(err) = self.sinks.sinks[si].write(e) {
            self.fail(si, e.index, &err);
            if self.state[si] == State::Failed {
                // Rows of the failed write may be partly written; count them as lost.
                self.undelivered[e.index] += e.batch.len() as u64;
            }
        }
        self.collect_lost(si, e.index);
    }

    /// Counts the rows sink `si` lost on its own (a `tcp` sink outliving an outage) as
    /// undelivered rows of `query`, and reports its note once.
    fn collect_lost(&mut self, si: usize, query: usize) {
        let (rows, note) = self.sinks.sinks[si].take_lost();
        if let Some(n) = self.undelivered.get_mut(query) {
            *n += rows;
        }
        if let Some(message) = note {
            self.failures.push((query, message));
        }
    }

    /// Ends the run's sinks (`Sink::close`: a `tcp` sink delivers what it holds within
    /// its grace) and counts what they could not deliver.
    pub fn close(&mut self) {
        self.flush();
        for si in 0..self.sinks.sinks.len() {
            if self.state[si] != State::Open {
                continue;
            }
            let query = self.sinks.route.iter().position(|r| *r == Some(si));
            if let Err(err) = self.sinks.sinks[si].close() {
                self.fail(si, query.unwrap_or(0), &err);
            }
            self.collect_lost(si, query.unwrap_or(0));
        }
    }

    /// Holds the routes from index `first` on (those `sinks_for` opened for the
    /// workload's scripted adds, named `names` in that order) until `claim_scripted`
    /// gives each the index its query actually gets.
    pub fn hold_scripted(&mut self, first: usize, names: &[&str]) {
        let held = self
            .sinks
            .route
            .split_off(first.min(self.sinks.route.len()));
        self.pending
            .extend(names.iter().map(|n| n.to_string()).zip(held));
    }

    /// Routes scripted query `name`, just added at `index`, to the sink held for it.
    pub fn claim_scripted(&mut self, index: usize, name: &str) {
        let Some(i) = self
            .pending
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
        else {
            return;
        };
        let (_, si) = self.pending.remove(i);
        if self.sinks.route.len() <= index {
            self.sinks.route.resize(index + 1, None);
        }
        self.sinks.route[index] = si;
        if self.undelivered.len() <= index {
            self.undelivered.resize(index + 1, 0);
        }
    }

    /// Routes the results of query `query` (just added to the run) to `sink`, or to the
    /// run's stdout sink with `Stdout`, or nowhere.
    pub fn add_route(&mut self, query: usize, sink: AddedSink) {
        let si = match sink {
            AddedSink::None => None,
            AddedSink::Stdout => Some(self.stdout_index()),
            AddedSink::Sink(s) => {
                self.sinks.sinks.push(s);
                self.state.push(State::Open);
                Some(self.sinks.sinks.len() - 1)
            }
        };
        if self.sinks.route.len() <= query {
            self.sinks.route.resize(query + 1, None);
        }
        self.sinks.route[query] = si;
        if self.undelivered.len() <= query {
            self.undelivered.resize(query + 1, 0);
        }
    }

    /// The sink writing to stdout, opened if no query wrote there yet.
    fn stdout_index(&mut self) -> usize {
        if let Some(i) = self.stdout {
            return i;
        }
        self.sinks
            .sinks
            .push(Box::new(super::sink::JsonLines::stdout()));
        self.state.push(State::Open);
        let i = self.sinks.sinks.len() - 1;
        self.stdout = Some(i);
        i
    }

    /// Flushes every sink that has not failed.
    pub fn flush(&mut self) {
        for si in 0..self.sinks.sinks.len() {
            if self.state[si] != State::Open {
                continue;
            }
            let query = self.sinks.route.iter().position(|r| *r == Some(si));
            if let Err(err) = self.sinks.sinks[si].flush() {
                self.fail(si, query.unwrap_or(0), &err);
            }
            self.collect_lost(si, query.unwrap_or(0));
        }
    }

    fn fail(&mut self, si: usize, query: usize, err: &io::Error) {
        if err.kind() == io::ErrorKind::BrokenPipe {
            self.state[si] = State::Closed;
            self.closed = true;
        } else {
            self.state[si] = State::Failed;
            self.failures.push((query, err.to_string()));
        }
    }
}
