//! The `/metrics` endpoint: a Prometheus recorder with the latency buckets set, served by
//! the exporter's own HTTP listener on the shell runtime (never on the engine thread).
//! Invariant: the listener is bound before the run starts, so a bad address fails the
//! command up front, and it keeps serving through the linger after the run.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use metrics::Recorder;
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use super::names;
use crate::runtime::stop::StopHandle;

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot serve metrics on {addr}: {message}")]
    Listen { addr: SocketAddr, message: String },
}

/// A Prometheus builder with Spillway's histogram buckets: the latency histogram renders
/// as a classic histogram (not a summary) with `names::LATENCY_BUCKETS`.
pub fn recorder_builder() -> PrometheusBuilder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(names::QUERY_LATENCY.to_string()),
            &names::LATENCY_BUCKETS,
        )
        .expect("the bucket list is not empty")
}

/// `--metrics-addr`: `HOST:PORT`, or a bare `PORT` / `:PORT` meaning 127.0.0.1.
pub fn parse_metrics_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let port = s.strip_prefix(':').unwrap_or(s);
    if let Ok(p) = port.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], p)));
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!("`{s}` is not an address: expected HOST:PORT or PORT (e.g. 127.0.0.1:9464)")
        })
}

/// The exporter of one run: its recorder (for the observer) and its listener.
pub struct MetricsServer {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` and serves `/metrics` from a fresh recorder on `runtime`.
    pub fn start(
        addr: SocketAddr,
        runtime: &tokio::runtime::Runtime,
    ) -> Result<MetricsServer, MetricsError> {
        // `build` spawns the recorder's upkeep task: it needs the runtime's context.
        let _entered = runtime.enter();
        let (recorder, serve) = recorder_builder()
            .with_http_listener(addr)
            .build()
            .map_err(|e| MetricsError::Listen {
                addr,
                message: e.to_string(),
            })?;
        let handle = recorder.handle();
        runtime.spawn(async move {
            if let Err(e) = serve.await {
                eprintln!("spillway: the metrics listener stopped: {e:?}");
            }
        });
        Ok(MetricsServer {
            recorder: Arc::new(recorder),
            handle,
            addr,
        })
    }

    /// The recorder a `MetricsObserver` writes into.
    pub fn recorder(&self) -> Arc<dyn Recorder + Send + Sync> {
        self.recorder.clone()
    }

    /// The exposition text as a scrape would see it now.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Keeps serving for `linger` after the run so the last scrape sees the final counts;
    /// a new stop request (Ctrl-C) ends the wait early.
    pub fn linger(&self, linger: Duration, stop: &StopHandle) {
        let was_stopping = stop.is_stopping();
        let step = Duration::from_millis(50);
        let mut waited = Duration::ZERO;
        while waited < linger {
            if stop.is_aborted() || (!was_stopping && stop.is_stopping()) {
                return;
            }
            let nap = step.min(linger - waited);
            std::thread::sleep(nap);
            waited += nap;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_means_loopback() {
        let lo = |p| SocketAddr::from(([127, 0, 0, 1], p));
        assert_eq!(parse_metrics_addr("9464"), Ok(lo(9464)));
        assert_eq!(parse_metrics_addr(":9464"), Ok(lo(9464)));
        assert_eq!(
            parse_metrics_addr("0.0.0.0:80"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 80)))
        );
        assert!(parse_metrics_addr("nonsense:port").is_err());
        assert!(parse_metrics_addr("70000").is_err());
    }

    #[test]
    fn a_taken_port_is_an_error_not_a_panic() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let first = MetricsServer::start(SocketAddr::from(([127, 0, 0, 1], 0)), &rt);
        assert!(first.is_ok());
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = MetricsServer::start(addr, &rt)
            .err()
            .expect("the port is taken");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
