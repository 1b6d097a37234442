//! Prometheus metrics: the names (`names`), the observer that mirrors a run into `metrics`
//! handles (`observer`), and the HTTP exporter that serves them on `/metrics`
//! (`exporter`). The monitor's HDR histograms stay the truth for the shedder; this is a
//! mirror, updated once per control tick on the engine thread.

pub mod exporter;
pub mod names;
pub mod observer;

pub use exporter::{MetricsError, MetricsServer, parse_metrics_addr, recorder_builder};
pub use observer::MetricsObserver;
