//! Physical query plans: what the SQL planner produces and the pipeline executes. Every
//! column is an index and every type is checked here, before a tuple flows.

use super::expr::Expr;
use super::schema::{DataType, Nanos, Schema};

/// A continuous query compiled against its input stream's schema.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryPlan {
    /// Name of the input stream.
    pub stream: String,
    /// Applied first, to every input tuple.
    pub filter: Option<Expr>,
    pub body: PlanBody,
    /// Names and types of the result columns.
    pub output: Schema,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PlanBody {
    /// Stateless: one result row per input tuple that passes the filter.
    Project(Vec<Expr>),
    /// Windowed GROUP BY: one result row per (window, key) when the window closes.
    Aggregate(AggregatePlan),
}

/// Where window assignment reads time from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSource {
    /// A timestamp column of the input (event time).
    Column(usize),
    /// The arrival time of each tuple (`PROCTIME()`).
    Arrival,
}

/// A tumbling (`slide == size`) or hopping window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    pub size: Nanos,
    pub slide: Nanos,
}

impl WindowSpec {
    pub fn tumbling(size: Nanos) -> WindowSpec {
        WindowSpec { size, slide: size }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

impl AggFunc {
    /// The result type given the argument type.
    pub fn output_type(self, arg: Option<DataType>) -> DataType {
        match (self, arg) {
            (AggFunc::CountStar | AggFunc::Count, _) => DataType::Int,
            (AggFunc::Avg, _) => DataType::Float,
            (AggFunc::Sum, Some(DataType::Float)) => DataType::Float,
            (AggFunc::Sum, _) => DataType::Int,
            (AggFunc::Min | AggFunc::Max, Some(t)) => t,
            (AggFunc::Min | AggFunc::Max, None) => DataType::Int,
        }
    }
}

/// One aggregate call; `arg` is evaluated over the (filtered) input batch.
#[derive(Clone, Debug, PartialEq)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub arg_type: Option<DataType>,
}

/// A windowed aggregation.
///
/// Its *group row* has the columns `keys.., aggregates.., window_start, window_end`;
/// `having` and `project` are expressions over the group row.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregatePlan {
    pub time: TimeSource,
    pub window: WindowSpec,
    /// Tuples may arrive this late (event time) before their window is closed.
    pub lateness: Nanos,
    pub keys: Vec<Expr>,
    pub key_types: Vec<DataType>,
    pub aggs: Vec<AggCall>,
    pub having: Option<Expr>,
    pub project: Vec<Expr>,
}

/// The most GROUP BY keys a query may have besides its window (keys are packed into a
/// fixed-size array so that looking a group up never allocates).
pub const MAX_GROUP_KEYS: usize = 4;

impl AggregatePlan {
    /// Types of the group row.
    pub fn group_row_types(&self) -> Vec<DataType> {
        let mut t = self.key_types.clone();
        t.extend(self.aggs.iter().map(|a| a.func.output_type(a.arg_type)));
        t.push(DataType::Timestamp);
        t.push(DataType::Timestamp);
        t
    }
}

/// Formats a duration in the unit that reads best (`250ms`, `1s`, `1.5s`).
pub fn fmt_nanos(n: Nanos) -> String {
    if n % 1_000_000_000 == 0 {
        format!("{}s", n / 1_000_000_000)
    } else if n % 1_000_000 == 0 {
        format!("{}ms", n / 1_000_000)
    } else if n % 1_000 == 0 {
        format!("{}us", n / 1_000)
    } else {
        format!("{n}ns")
    }
}
