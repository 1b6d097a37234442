//! The workload file format, part three: `changes:`, a script of changes to the running
//! query set at given times, so a scenario with queries coming and going is a file (and a
//! deterministic test in simulated mode). Mirrors the control API one to one.
//!
//! ```yaml
//! changes:
//!   - {at: 5s, add: {name: cold, sql: "SELECT sensor FROM readings WHERE temp < 10", cost: 200ns}}
//!   - {at: 10s, patch: {name: hot, qos: {latency: {p99: 50ms}, weight: 3}}}
//!   - {at: 12s, remove: cold}                 # `flush: false` drops its open windows
//!   - {at: 15s, policy: ../policies/random.yaml}
//! ```

use serde::Deserialize;

use super::config::{QosConfig, QueryConfig, SinkConfig};
use super::duration::DurationConfig;

/// `changes[i]`: one change; exactly one of `add`, `patch`, `remove`, `policy`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeConfig {
    /// Required. When the change applies: virtual time in simulated mode, time since the
    /// start live. Changes apply in time order (file order among equal times).
    pub at: DurationConfig,
    /// Registers a query, with the settings of `queries.<name>` plus its `name`.
    #[serde(default)]
    pub add: Option<AddConfig>,
    /// Changes the QoS of a running query: the settings given replace its own.
    #[serde(default)]
    pub patch: Option<PatchConfig>,
    /// Removes the running query of this name; it leaves with a final, balanced ledger.
    #[serde(default)]
    pub remove: Option<String>,
    /// With `remove`: emit the query's open windows (default true) or drop them (counted).
    #[serde(default)]
    pub flush: Option<bool>,
    /// Switches to the policy file at this path (relative to the workload file).
    #[serde(default)]
    pub policy: Option<String>,
}

/// `changes[i].add`: a query to register, as in `queries:` plus its name.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddConfig {
    /// Required. A name no query runs under at that time.
    pub name: String,
    /// Required. As `queries.<name>.sql`.
    pub sql: String,
    #[serde(default)]
    pub qos: Option<QosConfig>,
    #[serde(default)]
    pub cost: Option<DurationConfig>,
    #[serde(default)]
    pub sink: Option<SinkConfig>,
}

impl AddConfig {
    /// The query settings, as `queries.<name>` holds them.
    pub fn query(&self) -> QueryConfig {
        QueryConfig {
            sql: self.sql.clone(),
            qos: self.qos.clone(),
            cost: self.cost,
            sink: self.sink.clone(),
        }
    }
}

/// `changes[i].patch`: new QoS settings for a running query.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchConfig {
    /// Required. The running query.
    pub name: String,
    /// Required. The settings to replace (`latency`, `loss_tolerance`, `value`, `weight`,
    /// `lossless`); the others stay.
    pub qos: QosConfig,
}
