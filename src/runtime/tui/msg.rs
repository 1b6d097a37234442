//! What crosses from the engine thread to the dashboard's render thread: small owned
//! messages made from the observer reports, so the render thread never borrows engine
//! state and the engine never waits for a frame. Keys from the terminal are messages too.

use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::qos::Binning;
use crate::runtime::observe::{Event, RunInfo};

/// One input of the dashboard's reducer.
#[derive(Clone, Debug)]
pub enum Msg {
    /// The run started; `columns` names each stream's fields (for drop predicates).
    Started {
        info: Box<RunInfo>,
        columns: Vec<Vec<String>>,
    },
    Tick(Box<TickMsg>),
    /// A run event worth a log line (never `RunStarted` or `RunEnded`).
    Event(Event),
    /// The run is over: the render thread restores the terminal and returns.
    Ended,
    Key(Key),
    /// The policy now asked for (after `s`), by name.
    PolicyRequested(String),
}

/// The keys the dashboard knows, decoded from terminal events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `q`: stop cleanly (a second press aborts).
    Quit,
    /// Ctrl-C: stop as an interrupt (exit code 130; a second press aborts).
    Interrupt,
    /// `p`: freeze the view; the run goes on.
    Pause,
    Up,
    Down,
    /// `+`: every paced source x1.25.
    Faster,
    /// `-`: every paced source x0.8.
    Slower,
    /// `s`: the next shedding policy.
    CyclePolicy,
    /// `?`: the help overlay.
    Help,
    /// Esc: close the help overlay.
    Escape,
}

/// Factors of the `+` and `-` keys.
pub const FASTER: f64 = 1.25;
pub const SLOWER: f64 = 0.8;

/// What a key asks the render thread to do beyond changing the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    /// `StopHandle::request` with this reason (`true`: interrupt, else requested).
    Stop { interrupt: bool },
    /// Multiply every paced source's rate by this.
    ScaleRate(f64),
    /// Switch to the next policy of the cycle.
    CyclePolicy,
}

/// One control tick, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct TickMsg {
    pub elapsed: Nanos,
    /// Model demand and the load the plan aims at (headroom x feedback), as shares of
    /// capacity; the engine's measured busy share.
    pub demand: f64,
    pub target: f64,
    pub busy: f64,
    pub shedding: bool,
    pub utility: f64,
    pub streams: Vec<StreamRow>,
    pub queries: Vec<QueryRow>,
    /// Tuples dropped so far, by reason, over every stream and query drop point.
    pub dropped: [u64; DropReason::COUNT],
    /// Per query, latency percentiles of the results of the last second, from its HDR
    /// histogram (sent once a second).
    pub percentiles: Option<Vec<Percentiles>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamRow {
    pub name: String,
    /// Offered tuples per second.
    pub rate: f64,
    pub keep: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QueryRow {
    pub rate_in: f64,
    pub rate_out: f64,
    pub queued: usize,
    pub queue_delay: Nanos,
    /// 0 when no result came in the window.
    pub p50: Nanos,
    pub p99: Nanos,
    pub target: Option<Nanos>,
    /// The control signal: latency at the target's percentile, recently.
    pub latency: Option<Nanos>,
    /// Effective keep (stream keep x query keep).
    pub keep: f64,
    pub utility: f64,
    pub offered: u64,
    /// Shed and queue-full so far.
    pub lost: u64,
    pub drop: DropDesc,
    /// The value histogram of the value-QoS field, if the query has one.
    pub values: Option<(Binning, Vec<f64>)>,
}

/// The setting of a query's drop point.
#[derive(Clone, Debug, PartialEq)]
pub enum DropDesc {
    KeepAll,
    Random {
        keep: f64,
    },
    /// Keep probability per bin of `binning` on stream column `column`.
    Semantic {
        column: usize,
        binning: Binning,
        keep: Vec<f64>,
    },
    Window {
        keep: f64,
    },
}

/// Latency percentiles of one query over one second (ns) and how many results.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: Nanos,
    pub p90: Nanos,
    pub p99: Nanos,
    pub p999: Nanos,
    pub max: Nanos,
}
