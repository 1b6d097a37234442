//! Query pipelines: a filter, then either a projection (stateless) or a windowed
//! aggregate followed by HAVING and the SELECT list. A pipeline turns input batches into
//! result batches whose `arrival` is the arrival of the tuple that made each row due.

mod accumulators;
mod approx;
mod window;

pub use approx::{ColumnApprox, Output, ResultApprox};
pub use window::WindowAggregate;

use super::batch::Batch;
use super::expr::Expr;
use super::plan::{PlanBody, QueryPlan};
use super::schema::{DataType, Nanos};

#[derive(Debug)]
enum Body {
    Project(Vec<Expr>),
    Aggregate {
        op: Box<WindowAggregate>,
        having: Option<Expr>,
        project: Vec<Expr>,
        /// Group rows closed by the operator, before HAVING and projection.
        groups: Batch,
        /// The group rows that passed HAVING.
        kept: Batch,
    },
}

/// The executable form of one `QueryPlan`.
#[derive(Debug)]
pub struct Pipeline {
    filter: Option<Expr>,
    body: Body,
    input_types: Vec<DataType>,
    out_types: Vec<DataType>,
    sel: Vec<u32>,
    filtered: Batch,
}

impl Pipeline {
    pub fn new(plan: &QueryPlan, input_types: &[DataType]) -> Pipeline {
        let body = match &plan.body {
            PlanBody::Project(exprs) => Body::Project(exprs.clone()),
            PlanBody::Aggregate(a) => Body::Aggregate {
                op: Box::new(WindowAggregate::new(a)),
                having: a.having.clone(),
                project: a.project.clone(),
                groups: Batch::new(&a.group_row_types(), 0),
                kept: Batch::new(&a.group_row_types(), 0),
            },
        };
        Pipeline {
            filter: plan.filter.clone(),
            body,
            input_types: input_types.to_vec(),
            out_types: plan.output.types(),
            sel: Vec::new(),
            filtered: Batch::new(input_types, 0),
        }
    }

    pub fn output_types(&self) -> &[DataType] {
        &self.out_types
    }

    /// A fresh, empty result buffer of this pipeline's result type.
    pub fn new_output(&self) -> Output {
        Output {
            rows: Batch::new(&self.out_types, 0),
            approx: ResultApprox::default(),
        }
    }

    /// Tuples dropped as late by a window operator.
    pub fn late(&self) -> u64 {
        match &self.body {
            Body::Aggregate { op, .. } => op.late(),
            Body::Project(_) => 0,
        }
    }

    /// Whether the pipeline holds state that a tick or flush may emit.
    pub fn is_windowed(&self) -> bool {
        matches!(self.body, Body::Aggregate { .. })
    }

    /// Runs one input batch whose tuples each survived random shedding with probability
    /// `keep`; results are appended to `out`.
    pub fn process(&mut self, input: &Batch, keep: f64, out: &mut Output) {
        let input = match &self.filter {
            None => input,
            Some(f) => {
                f.select(input, &mut self.sel);
                if self.sel.len() == input.len() {
                    input
                } else {
                    self.filtered.clear();
                    self.filtered.gather_from(input, &self.sel);
                    &self.filtered
                }
            }
        };
        if input.is_empty() {
            return;
        }
        match &mut self.body {
            Body::Project(exprs) => {
                let before = out.rows.len();
                for (e, col) in exprs.iter().zip(out.rows.columns.iter_mut()) {
                    e.eval_into(input, col);
                }
                out.rows.arrival.extend_from_slice(&input.arrival);
                out.approx.push_uniform(before, input.len(), keep);
            }
            Body::Aggregate { op, groups, .. } => {
                op.process(input, groups);
                self.finish_groups(out);
            }
        }
    }

    /// Closes arrival-time windows ending by `bound`.
    pub fn on_tick(&mut self, bound: Nanos, out: &mut Output) {
        if let Body::Aggregate { op, groups, .. } = &mut self.body {
            op.on_tick(bound, groups);
            self.finish_groups(out);
        }
    }

    /// Emits all remaining state (end of input).
    pub fn flush(&mut self, now: Nanos, out: &mut Output) {
        if let Body::Aggregate { op, groups, .. } = &mut self.body {
            op.flush(now, groups);
            self.finish_groups(out);
        }
    }

    /// Applies HAVING and the SELECT list to the group rows the operator closed.
    fn finish_groups(&mut self, out: &mut Output) {
        let Body::Aggregate {
            having,
            project,
            groups,
            kept,
            ..
        } = &mut self.body
        else {
            return;
        };
        if groups.is_empty() {
            return;
        }
        let rows: &Batch = match having {
            None => groups,
            Some(h) => {
                h.select(groups, &mut self.sel);
                kept.clear();
                kept.gather_from(groups, &self.sel);
                kept
            }
        };
        for (e, col) in project.iter().zip(out.rows.columns.iter_mut()) {
            e.eval_into(rows, col);
        }
        out.rows.arrival.extend_from_slice(&rows.arrival);
        groups.clear();
    }

    pub fn input_types(&self) -> &[DataType] {
        &self.input_types
    }
}
