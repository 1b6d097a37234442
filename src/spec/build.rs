//! Validation of a read workload into the runtime `Workload`: engine settings, then every
//! stream, then every query against the catalog of streams. All problems are reported; a
//! `Workload` is returned only if there were none.

use super::build_changes::build_changes;
use super::build_query::{Planner, build_query};
use super::build_retain::build_retain;
use super::build_stream::{build_stream, check_identifier, stream_schema};
use super::config::{EngineConfig, ExperimentConfig, SchedulerConfig, WorkersConfig};
use super::error::{Diagnostics, join};
use super::read::Read;
use super::workload::{
    DEFAULT_EXPERIMENT_POLICIES, EngineSettings, ExperimentSpec, Mode, SchedulerKind, SinkSpec,
    Workload,
};
use crate::sql::Catalog;

/// `engine.max_queries` when not set.
pub const DEFAULT_MAX_QUERIES: usize = 10_000;

pub(crate) fn build(diag: &mut Diagnostics, read: Read, planner: Planner) -> Option<Workload> {
    let c = &read.config;
    if let Some(d) = c.duration
        && d.0 <= 0
    {
        diag.at("duration", "duration must be positive");
    }
    if let Some(policy) = &c.policy
        && policy.trim().is_empty()
    {
        diag.at("policy", "policy must name a policy file");
    }
    let engine = build_engine(diag, &c.engine, c.streams.0.len());
    let experiment = c.experiment.as_ref().map(|e| build_experiment(diag, e));

    let mut catalog = Catalog::default();
    let mut catalog_complete = !read.schemas_missing;
    let mut streams = Vec::new();
    for (i, (name, s)) in c.streams.0.iter().enumerate() {
        let path = join("streams", name);
        check_identifier(diag, &path, "stream name", name);
        if let Some((prev, _)) = c.streams.0[..i]
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            diag.at(
                &path,
                format!("stream `{name}` clashes with `{prev}`: SQL names ignore case"),
            );
        }
        let schema = stream_schema(diag, name, &s.schema, s.event_time.as_deref());
        match &schema {
            Some(schema) => catalog.streams.push((name.clone(), schema.clone())),
            None => catalog_complete = false,
        }
        let retain = build_retain(diag, name, s.retain.as_ref());
        streams.extend(
            build_stream(diag, name, i, s, schema, c.seed).map(|mut st| {
                st.retain = retain;
                st
            }),
        );
    }
    for p in &read.partial_streams {
        match stream_schema(diag, &p.name, &p.schema, p.event_time.as_deref()) {
            Some(s) => catalog.streams.push((p.name.clone(), s)),
            None => catalog_complete = false,
        }
    }

    let max_queries = c.engine.max_queries.unwrap_or(DEFAULT_MAX_QUERIES);
    if max_queries == 0 {
        diag.at("engine.max_queries", "max_queries must be at least 1");
    } else if c.queries.0.len() > max_queries {
        // Not planned one by one: the limit is there to bound what a file can cost.
        diag.at(
            "queries",
            format!(
                "{} queries exceed engine.max_queries ({max_queries}); raise the limit \
                 if the machine has the memory",
                c.queries.0.len()
            ),
        );
        return None;
    }
    let mut queries = Vec::new();
    let catalog = catalog_complete.then_some(&catalog);
    for (name, q) in &c.queries.0 {
        // Query names become file names (`run --out DIR`): identifiers only.
        check_identifier(diag, &join("queries", name), "query name", name);
        queries.extend(build_query(diag, name, q, catalog, planner));
    }
    // Two queries writing one file would truncate each other's rows.
    for (i, q) in queries.iter().enumerate() {
        if let SinkSpec::Jsonl(path) = &q.sink
            && let Some(first) = queries[..i]
                .iter()
                .find(|p| matches!(&p.sink, SinkSpec::Jsonl(o) if same_file(o, path)))
        {
            diag.at(
                &join(&join("queries", &q.name), "sink"),
                format!(
                    "query `{}` writes to `{path}`, as query `{}` does: give each query its own file",
                    q.name, first.name
                ),
            );
        }
    }
    let changes = build_changes(diag, &c.changes, &queries, catalog, planner);
    if !diag.is_empty() {
        return None;
    }
    Some(Workload {
        name: c.name.clone(),
        seed: c.seed,
        duration: c.duration.map(|d| d.0),
        engine,
        streams,
        queries,
        policy: c.policy.clone(),
        experiment,
        changes,
    })
}

fn build_experiment(diag: &mut Diagnostics, e: &ExperimentConfig) -> ExperimentSpec {
    let policies = match &e.policies {
        None => DEFAULT_EXPERIMENT_POLICIES.map(String::from).to_vec(),
        Some(p) => {
            if p.is_empty() {
                diag.at(
                    "experiment.policies",
                    "policies needs at least one policy, e.g. [none, random, semantic]",
                );
            }
            for (i, name) in p.iter().enumerate() {
                let path = format!("experiment.policies[{i}]");
                if name.trim().is_empty() {
                    diag.at(&path, "a policy is a built-in kind or a policy file path");
                } else if p[..i].contains(name) {
                    diag.at(&path, format!("policy `{name}` is listed twice"));
                }
            }
            p.clone()
        }
    };
    let repeat = match e.repeat {
        Some(r) if !(1..=1000).contains(&r) => {
            diag.at("experiment.repeat", "repeat must be between 1 and 1000");
            1
        }
        Some(r) => r,
        None => 1,
    };
    ExperimentSpec { policies, repeat }
}

/// `workers: auto`: live, the available cores less one source thread per stream;
/// simulated, the modelled cores. At least 1, at most one per key shard.
pub fn auto_workers(mode: Mode, cores: f64, streams: usize) -> usize {
    let n = match mode {
        Mode::Simulated => cores.floor() as usize,
        Mode::Live => std::thread::available_parallelism()
            .map_or(1, |c| c.get())
            .saturating_sub(streams),
    };
    n.clamp(1, crate::core::shard::DEFAULT_SHARDS)
}

fn build_engine(diag: &mut Diagnostics, e: &EngineConfig, streams: usize) -> EngineSettings {
    let d = EngineSettings::default();
    let mut at_least_one = |key: &str, v: Option<usize>, default: usize| match v {
        Some(0) => {
            diag.at(&join("engine", key), format!("{key} must be at least 1"));
            default
        }
        Some(v) => v,
        None => default,
    };
    let workers = match e.workers {
        // Resolved below, once the mode and the modelled cores are known.
        Some(WorkersConfig::Auto) => 1,
        Some(WorkersConfig::Count(n)) => {
            at_least_one("workers", Some(usize::try_from(n).unwrap_or(usize::MAX)), 1)
        }
        None => d.workers,
    };
    let batch_size = at_least_one("batch_size", e.batch_size, d.batch_size);
    let close_step = at_least_one("close_step", e.close_step, d.close_step);
    let queue_capacity = at_least_one("queue_capacity", e.queue_capacity, d.queue_capacity);
    let queue_memory = match e.queue_memory {
        Some(b) if b.as_u64() < MIN_QUEUE_MEMORY as u64 => {
            diag.at(
                "engine.queue_memory",
                format!("queue_memory {b} is too small: at least 1MiB, e.g. 64MiB"),
            );
            d.queue_memory
        }
        Some(b) => usize::try_from(b.as_u64()).unwrap_or(usize::MAX),
        None => d.queue_memory,
    };
    if batch_size > 1 << 20 {
        diag.at(
            "engine.batch_size",
            format!("batch_size {batch_size} is too large: at most 1048576 tuples"),
        );
    }
    if workers > crate::core::shard::DEFAULT_SHARDS {
        diag.at(
            "engine.workers",
            format!(
                "at most {} engine workers (one key shard each at least), got {workers}",
                crate::core::shard::DEFAULT_SHARDS
            ),
        );
    }
    let tick = match e.tick {
        // Below a millisecond the control loop would cost more than it saves.
        Some(t) if t.0 < 1_000_000 => {
            diag.at("engine.tick", "tick must be at least 1ms, e.g. 100ms");
            d.tick
        }
        Some(t) => t.0,
        None => d.tick,
    };
    let turn_quantum = match e.turn_quantum {
        // Longer than a second, a round outlasts every latency target worth having; under
        // 10us, a quantum is shorter than a turn's bookkeeping.
        Some(t) if t.0 > 1_000_000_000 || (t.0 > 0 && t.0 < 10_000) => {
            diag.at(
                "engine.turn_quantum",
                "turn_quantum must be 0 (a turn a round) or from 10us to 1s, e.g. 1ms",
            );
            d.turn_quantum
        }
        Some(t) => t.0,
        None => d.turn_quantum,
    };
    let cores = match e.capacity {
        // Below a thousandth of a core one declared turn spans hours of virtual time.
        Some(c) if !(c.cores >= MIN_CORES && c.cores.is_finite()) => {
            diag.at(
                "engine.capacity.cores",
                format!("cores must be a number of at least {MIN_CORES}, e.g. 1 or 0.5"),
            );
            d.cores
        }
        Some(c) => c.cores,
        None => d.cores,
    };
    let mode = e.mode.unwrap_or(d.mode);
    let workers_auto = e.workers == Some(WorkersConfig::Auto);
    EngineSettings {
        mode,
        cores,
        workers: match workers_auto {
            true => auto_workers(mode, cores, streams),
            false => workers,
        },
        workers_auto,
        tick,
        batch_size,
        close_step,
        turn_quantum,
        queue_capacity,
        queue_memory,
        scheduler: match e.scheduler {
            None => d.scheduler,
            Some(SchedulerConfig::RoundRobin) => SchedulerKind::RoundRobin,
            Some(SchedulerConfig::LongestQueue) => SchedulerKind::LongestQueue,
            Some(SchedulerConfig::Qos) => SchedulerKind::Qos,
        },
    }
}

/// The least `engine.queue_memory`: 1 MiB (a few batches).
pub const MIN_QUEUE_MEMORY: usize = 1 << 20;

/// The least simulated capacity a workload may declare, in cores.
pub const MIN_CORES: f64 = 0.001;

/// Whether two sink paths name the same file, as far as can be told without the disk
/// (`out/a.jsonl` and `./out//a.jsonl` do).
pub(crate) fn same_file(a: &str, b: &str) -> bool {
    let norm = |p: &str| -> Vec<String> {
        std::path::Path::new(p)
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    norm(a) == norm(b)
}
