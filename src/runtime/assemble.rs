//! Turns a validated `Workload` into the runtime objects a driver needs: the engine with
//! its streams and queries, the source of each stream, the sinks each query writes to, and
//! the tokio runtime sources and signal handling run on.

use std::io;
use std::path::{Path, PathBuf};

use super::live::{LiveRun, run_live};
use super::observe::{Observers, RunSummary};
use super::outputs::Outputs;
use super::sink::{JsonLines, Sink};
use super::source::{Source, source_for};
use super::stop::StopHandle;
use crate::core::engine::{Engine, EngineConfig, EngineError, QueryDef, StreamDef};
use crate::core::schema::Nanos;
use crate::spec::Policy;
use crate::spec::{SinkSpec, Workload};

/// Builds the engine for `w`.
pub fn engine_for(w: &Workload) -> Result<Engine, EngineError> {
    let streams = w
        .streams
        .iter()
        .map(|s| StreamDef {
            name: s.name.clone(),
            schema: s.schema.clone(),
        })
        .collect();
    let queries = w
        .queries
        .iter()
        .map(|q| QueryDef {
            name: q.name.clone(),
            plan: q.plan.clone(),
            latency_target: q.qos.as_ref().and_then(|qos| qos.latency_target()),
            weight: q.qos.as_ref().map_or(1.0, |qos| qos.weight),
            lossless: q.qos.as_ref().is_some_and(|qos| qos.lossless),
        })
        .collect();
    let mut engine = Engine::new(
        streams,
        queries,
        EngineConfig {
            queue_capacity: w.engine.queue_capacity,
            // Workers share the whole budget (`Sharded::new` gives them one total).
            queue_memory: w.engine.queue_memory,
            scheduler: w.engine.scheduler,
            seed: w.seed,
        },
    )?;
    // Streams that keep recent history for ad-hoc queries (`retain:`).
    for (i, s) in w.streams.iter().enumerate() {
        if s.source.flow == crate::spec::Flow::Pull {
            engine.set_pulled(i);
        }
        if let Some(limit) = s.retain {
            engine.retain(i, limit);
        }
    }
    Ok(engine)
}

/// The sinks of a run and, per query, the index of its sink (`None`: results discarded).
pub struct Sinks {
    pub sinks: Vec<Box<dyn Sink>>,
    pub route: Vec<Option<usize>>,
    /// Files written, for the summary.
    pub files: Vec<PathBuf>,
}

impl Sinks {
    /// The sink writing to standard output, if a query of `w` writes there (with no
    /// `--out` directory): queries added later share it.
    pub fn stdout_of(&self, w: &Workload, out_dir: Option<&Path>) -> Option<usize> {
        if out_dir.is_some() {
            return None;
        }
        let q = w.queries.iter().position(|q| q.sink == SinkSpec::Stdout)?;
        self.route.get(q).copied().flatten()
    }
}

/// Opens the sinks of `w`, its queries' then those its `changes:` add (in the order they
/// are added, which is their index). With `out_dir`, every query writes
/// `<out_dir>/<query>.jsonl` instead of what its spec says.
pub fn sinks_for(w: &Workload, out_dir: Option<&Path>) -> io::Result<Sinks> {
    if let Some(dir) = out_dir
        && dir.exists()
        && !dir.is_dir()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--out {}: not a directory", dir.display()),
        ));
    }
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    let mut route = Vec::new();
    let mut files = Vec::new();
    let mut stdout: Option<usize> = None;
    let added = w.changes.iter().filter_map(|c| match &c.action {
        crate::spec::ChangeAction::Add(q) => Some(&**q),
        _ => None,
    });
    for q in w.queries.iter().chain(added) {
        let file = match (out_dir, &q.sink) {
            (Some(dir), _) => Some(dir.join(format!("{}.jsonl", q.name))),
            (None, SinkSpec::Jsonl(path)) => Some(PathBuf::from(path)),
            (None, SinkSpec::Stdout) => None,
            (None, SinkSpec::None) => {
                route.push(None);
                continue;
            }
            (None, SinkSpec::Tcp(t)) => {
                sinks.push(Box::new(super::sinks::TcpSink::start(t)?));
                route.push(Some(sinks.len() - 1));
                continue;
            }
        };
        match file {
            Some(path) => {
                let sink = JsonLines::create(&path).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
                })?;
                sinks.push(Box::new(sink));
                route.push(Some(sinks.len() - 1));
                files.push(path);
            }
            None => {
                let i = *stdout.get_or_insert_with(|| {
                    sinks.push(Box::new(JsonLines::stdout()));
                    sinks.len() - 1
                });
                route.push(Some(i));
            }
        }
    }
    Ok(Sinks {
        sinks,
        route,
        files,
    })
}

/// The source of each stream of `w`, in stream order (listeners bound, files open).
pub fn sources_for(w: &Workload) -> io::Result<Vec<Box<dyn Source>>> {
    w.streams.iter().map(source_for).collect()
}

/// The runtime sources and signal watchers run on: one worker thread, so the engine
/// thread keeps a core of its own.
pub fn shell_runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("spillway-source")
        .enable_all()
        .build()
}

/// A live run of `w` with its generated sources, results discarded (calibration,
/// benchmarks); `observers` see it as usual.
pub fn run_headless(
    w: &Workload,
    engine: Engine,
    policy: Policy,
    duration: Option<Nanos>,
    observers: &mut Observers<'_>,
) -> io::Result<RunSummary> {
    let runtime = shell_runtime()?;
    let mut sinks = Sinks {
        sinks: Vec::new(),
        route: vec![None; w.queries.len()],
        files: Vec::new(),
    };
    let mut outputs = Outputs::new(&mut sinks, w.queries.len());
    let run = LiveRun {
        workload: w,
        policy,
        sources: sources_for(w)?,
        duration,
        stop: StopHandle::new(),
        policy_switch: None,
    };
    let summary = run_live(run, &runtime, engine, &mut outputs, observers);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(summary)
}
