//! Aurora's load model on a DAG of operators: load coefficients (work to push one tuple from
//! an arc to the outputs) and rate coefficients (expected tuples per second on each arc).
//! Invariant: arcs only point downstream (operators are added upstream first), so the graph
//! is acyclic by construction and both coefficients are a single pass.

use super::load::LoadReport;

/// An operator of a `LoadGraph`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpId(usize);

impl OpId {
    pub fn index(self) -> usize {
        self.0
    }
}

/// An arc of a `LoadGraph`: an input (from outside), an arc between operators, or an
/// output (into an application).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArcId(usize);

impl ArcId {
    pub fn index(self) -> usize {
        self.0
    }
}

/// A graph that cannot be built as asked. Graphs are built by code from plans, so these
/// are programming errors, reported rather than panicked on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadGraphError {
    #[error("operator {0} does not exist")]
    UnknownOperator(usize),
    #[error(
        "arc from operator {from} to operator {to} does not point downstream; \
         add operators upstream first"
    )]
    Upstream { from: usize, to: usize },
}

#[derive(Clone, Debug, PartialEq)]
struct Op {
    /// Work per input tuple (ns or cycles); non-negative.
    cost: f64,
    /// Output tuples per input tuple; non-negative (above 1 for operators that multiply).
    selectivity: f64,
    inputs: Vec<ArcId>,
    outputs: Vec<ArcId>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Arc {
    /// `None`: an input arc.
    from: Option<OpId>,
    /// `None`: an output arc into an application.
    to: Option<OpId>,
}

/// A query network for the load model. Build it upstream first: `add_operator`, then
/// `add_input`, `add_arc` and `add_output`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadGraph {
    ops: Vec<Op>,
    arcs: Vec<Arc>,
    /// Input arcs in the order they were added: the order of `input_rates`.
    inputs: Vec<ArcId>,
}

fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

impl LoadGraph {
    pub fn new() -> LoadGraph {
        LoadGraph::default()
    }

    /// Adds an operator with its cost per input tuple and its selectivity (negative or
    /// non-finite values count as 0).
    pub fn add_operator(&mut self, cost: f64, selectivity: f64) -> OpId {
        self.ops.push(Op {
            cost: non_negative(cost),
            selectivity: non_negative(selectivity),
            inputs: Vec::new(),
            outputs: Vec::new(),
        });
        OpId(self.ops.len() - 1)
    }

    fn check(&self, op: OpId) -> Result<(), LoadGraphError> {
        if op.0 < self.ops.len() {
            Ok(())
        } else {
            Err(LoadGraphError::UnknownOperator(op.0))
        }
    }

    fn push_arc(&mut self, from: Option<OpId>, to: Option<OpId>) -> ArcId {
        let id = ArcId(self.arcs.len());
        self.arcs.push(Arc { from, to });
        if let Some(f) = from {
            self.ops[f.0].outputs.push(id);
        }
        if let Some(t) = to {
            self.ops[t.0].inputs.push(id);
        }
        id
    }

    /// An input arc (a stream entering the network) into `to`.
    pub fn add_input(&mut self, to: OpId) -> Result<ArcId, LoadGraphError> {
        self.check(to)?;
        let id = self.push_arc(None, Some(to));
        self.inputs.push(id);
        Ok(id)
    }

    /// An arc from `from` to a later operator `to`.
    pub fn add_arc(&mut self, from: OpId, to: OpId) -> Result<ArcId, LoadGraphError> {
        self.check(from)?;
        self.check(to)?;
        if from.0 >= to.0 {
            return Err(LoadGraphError::Upstream {
                from: from.0,
                to: to.0,
            });
        }
        Ok(self.push_arc(Some(from), Some(to)))
    }

    /// An output arc from `from` into an application (a query's sink).
    pub fn add_output(&mut self, from: OpId) -> Result<ArcId, LoadGraphError> {
        self.check(from)?;
        Ok(self.push_arc(Some(from), None))
    }

    /// The input arcs, in the order `input_rates` lists their rates.
    pub fn inputs(&self) -> &[ArcId] {
        &self.inputs
    }

    pub fn arc_count(&self) -> usize {
        self.arcs.len()
    }

    /// Load coefficient of every arc, indexed by `ArcId::index`:
    /// `L(arc) = c(next) + s(next) * sum of L(out arcs of next)`, and 0 into an application.
    pub fn load_coefficients(&self) -> Vec<f64> {
        // Work per tuple entering each operator; arcs point downstream, so walking the
        // operators backwards sees every successor first.
        let mut op_load = vec![0.0; self.ops.len()];
        for i in (0..self.ops.len()).rev() {
            let op = &self.ops[i];
            let downstream: f64 = op
                .outputs
                .iter()
                .map(|a| self.arcs[a.0].to.map_or(0.0, |t| op_load[t.0]))
                .sum();
            op_load[i] = op.cost + op.selectivity * downstream;
        }
        self.arcs
            .iter()
            .map(|a| a.to.map_or(0.0, |t| op_load[t.0]))
            .collect()
    }

    /// Load coefficient of one arc (0 for an unknown arc).
    pub fn load_coefficient(&self, arc: ArcId) -> f64 {
        self.load_coefficients().get(arc.0).copied().unwrap_or(0.0)
    }

    /// Expected rate on every arc, indexed by `ArcId::index`: an input arc carries its rate
    /// from `input_rates` (in `inputs()` order; missing rates are 0), an operator's output
    /// arcs each carry `s(op) * sum of the rates into op`.
    pub fn rate_coefficients(&self, input_rates: &[f64]) -> Vec<f64> {
        let mut rates = vec![0.0; self.arcs.len()];
        for (k, a) in self.inputs.iter().enumerate() {
            rates[a.0] = non_negative(input_rates.get(k).copied().unwrap_or(0.0));
        }
        // Forward: every arc into operator i comes from an input or an earlier operator.
        for op in &self.ops {
            let rate_in: f64 = op.inputs.iter().map(|a| rates[a.0]).sum();
            for a in &op.outputs {
                rates[a.0] = op.selectivity * rate_in;
            }
        }
        rates
    }

    /// Stream load `S = sum over inputs of L_i * r_i`.
    pub fn stream_load(&self, input_rates: &[f64]) -> f64 {
        let l = self.load_coefficients();
        self.inputs
            .iter()
            .enumerate()
            .map(|(k, a)| l[a.0] * non_negative(input_rates.get(k).copied().unwrap_or(0.0)))
            .sum()
    }

    /// Queue load `Q = melt * sum of L(arc) * q(arc)` for tuples queued on arcs (in front
    /// of the arc's next operator). Unknown arcs count nothing.
    pub fn queue_load(&self, queues: &[(ArcId, f64)], melt: f64) -> f64 {
        let l = self.load_coefficients();
        let queued: f64 = queues
            .iter()
            .map(|&(a, q)| l.get(a.0).copied().unwrap_or(0.0) * non_negative(q))
            .sum();
        non_negative(melt) * queued
    }

    /// Stream, queue and total load together.
    pub fn load(&self, input_rates: &[f64], queues: &[(ArcId, f64)], melt: f64) -> LoadReport {
        LoadReport::new(self.stream_load(input_rates), self.queue_load(queues, melt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slides' network: op1 (10, 0.5) feeds op2 (10, 0.8) -> op3 (5, 1.0) -> O1 and
    /// op4 (10, 0.9) -> O2. Returns the graph and its arcs in, 1->2, 1->4, 2->3, 3->O1, 4->O2.
    fn slides_network() -> (LoadGraph, [ArcId; 6]) {
        let mut g = LoadGraph::new();
        let op1 = g.add_operator(10.0, 0.5);
        let op2 = g.add_operator(10.0, 0.8);
        let op3 = g.add_operator(5.0, 1.0);
        let op4 = g.add_operator(10.0, 0.9);
        let arcs = [
            g.add_input(op1).unwrap(),
            g.add_arc(op1, op2).unwrap(),
            g.add_arc(op1, op4).unwrap(),
            g.add_arc(op2, op3).unwrap(),
            g.add_output(op3).unwrap(),
            g.add_output(op4).unwrap(),
        ];
        (g, arcs)
    }

    #[test]
    fn worked_example_from_the_slides() {
        let (g, [a_in, a12, a14, a23, a3o, a4o]) = slides_network();
        let eps = 1e-12;
        assert!((g.load_coefficient(a_in) - 22.0).abs() < eps, "L1");
        assert!((g.load_coefficient(a12) - 14.0).abs() < eps, "L2");
        assert!((g.load_coefficient(a23) - 5.0).abs() < eps, "L3");
        assert!((g.load_coefficient(a14) - 10.0).abs() < eps, "L4");
        assert_eq!(g.load_coefficient(a3o), 0.0);
        assert_eq!(g.load_coefficient(a4o), 0.0);

        assert!((g.stream_load(&[10.0]) - 220.0).abs() < eps, "S");
        assert!((g.queue_load(&[(a23, 100.0)], 0.1) - 50.0).abs() < eps, "Q");
        let report = g.load(&[10.0], &[(a23, 100.0)], 0.1);
        assert!((report.total - 270.0).abs() < eps, "T");
        assert!(report.overloaded(0.9, 250.0));
        assert!(!report.overloaded(0.9, 300.0));
    }

    #[test]
    fn rate_coefficients_follow_selectivities() {
        let (g, arcs) = slides_network();
        let r = g.rate_coefficients(&[10.0]);
        let want = [10.0, 5.0, 5.0, 4.0, 4.0, 4.5];
        for (a, w) in arcs.iter().zip(want) {
            assert!((r[a.index()] - w).abs() < 1e-12);
        }
        // Work per second counted per operator equals S: the two views agree.
        let per_op = 10.0 * 10.0 + 10.0 * 5.0 + 5.0 * 4.0 + 10.0 * 5.0;
        assert!((g.stream_load(&[10.0]) - per_op).abs() < 1e-12);
    }

    #[test]
    fn arcs_must_point_downstream() {
        let mut g = LoadGraph::new();
        let a = g.add_operator(1.0, 1.0);
        let b = g.add_operator(1.0, 1.0);
        assert_eq!(
            g.add_arc(b, a),
            Err(LoadGraphError::Upstream { from: 1, to: 0 })
        );
        assert_eq!(
            g.add_arc(a, a),
            Err(LoadGraphError::Upstream { from: 0, to: 0 })
        );
        assert_eq!(
            g.add_input(OpId(7)),
            Err(LoadGraphError::UnknownOperator(7))
        );
        assert_eq!(g.arc_count(), 0);
    }
}
