//! `spillway run --tui`: opens the dashboard around a run. It gives the dashboard the
//! run's stop handle, a rate scale for its generators and a policy switch, keeps result
//! rows off the screen, and paces simulated runs to the wall clock.

use std::io::IsTerminal;

use super::Failure;
use crate::runtime::assemble::Sinks;
use crate::runtime::controls::{PolicySwitch, RateScale};
use crate::runtime::observe::Observer;
use crate::runtime::source::{Source, scaled_source_for};
use crate::runtime::stop::StopHandle;
use crate::runtime::tui::{self, Controls, Pacer, TuiObserver};
use crate::spec::{Policy, SinkSpec, Workload};

/// A dashboard attached to a run.
pub struct TuiRun {
    pub observer: TuiObserver,
    /// Simulated runs only: holds virtual time to `speed` x wall time.
    pub pacer: Option<Pacer>,
    pub rate: RateScale,
    pub switch: PolicySwitch,
    /// Queries whose stdout rows were discarded because stdout is the dashboard's terminal.
    pub hidden: Vec<String>,
}

impl TuiRun {
    /// Opens the dashboard; `speed` is `Some` for a simulated run.
    pub fn open(
        w: &Workload,
        policy: &Policy,
        stop: &StopHandle,
        speed: Option<f64>,
        sinks: &mut Sinks,
        out_dir: bool,
    ) -> Result<TuiRun, Failure> {
        if speed.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
            return Err(Failure::BadInput(
                "--speed must be a positive number".into(),
            ));
        }
        if !std::io::stderr().is_terminal() {
            return Err(Failure::BadInput(
                "--tui draws on the terminal, but stderr is not one".into(),
            ));
        }
        // Rows on a terminal stdout would tear through the screen: count them, don't show.
        let mut hidden = Vec::new();
        if !out_dir && std::io::stdout().is_terminal() {
            for (qi, q) in w.queries.iter().enumerate() {
                if matches!(q.sink, SinkSpec::Stdout) {
                    sinks.route[qi] = None;
                    hidden.push(q.name.clone());
                }
            }
        }
        let rate = RateScale::new();
        let switch = PolicySwitch::new();
        let observer = tui::start(
            w,
            Controls {
                stop: stop.clone(),
                // Simulated sources follow their declared profile (reproducible runs).
                rate: speed.is_none().then(|| rate.clone()),
                policy: Some((switch.clone(), policy.clone())),
            },
        )
        .map_err(|e| Failure::Other(anyhow::anyhow!("cannot open the dashboard: {e}")))?;
        Ok(TuiRun {
            observer,
            pacer: speed.map(|s| Pacer::new(s, stop.clone())),
            rate,
            switch,
            hidden,
        })
    }

    /// The live sources, their generators following the dashboard's rate scale.
    pub fn sources(&self, w: &Workload) -> std::io::Result<Vec<Box<dyn Source>>> {
        w.streams
            .iter()
            .map(|s| scaled_source_for(s, &self.rate))
            .collect()
    }

    /// The observers of the run: the dashboard, then the pacer.
    pub fn observers(&mut self) -> Vec<&mut dyn Observer> {
        let mut v: Vec<&mut dyn Observer> = vec![&mut self.observer];
        if let Some(p) = &mut self.pacer {
            v.push(p);
        }
        v
    }

    /// After the terminal is restored: the lines the dashboard could not print.
    pub fn closing_lines(&self) -> String {
        if self.hidden.is_empty() {
            return String::new();
        }
        format!(
            "  results of {} were not shown while the dashboard held the terminal (use --out DIR or redirect stdout)\n",
            self.hidden.join(", ")
        )
    }
}
