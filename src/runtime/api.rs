//! The control API: HTTP with JSON (axum) on the shell's tokio runtime. Handlers never
//! touch the engine: each request goes over a channel to the live driver's inbox
//! (`inbox.rs`), which answers between scheduler turns through a oneshot.
//!
//! Access: loopback by default; any other address needs a bearer token or the server
//! refuses to start. Every request is held to a body size limit (413) and a rate limit
//! (429); a malformed one gets 400 with a reason.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, Query, Request as HttpRequest, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower_http::limit::RequestBodyLimitLayer;

use super::inbox::{Reply, Request};
use crate::spec::{load_policy, parse_policy};

/// How the control API listens.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    pub addr: SocketAddr,
    /// Required unless `addr` is loopback; then, if set, still required.
    pub token: Option<String>,
    /// Largest request body, bytes.
    pub body_limit: usize,
    /// Requests per second allowed (a burst of as many).
    pub rate: u32,
}

impl ApiConfig {
    pub fn new(addr: SocketAddr, token: Option<String>) -> ApiConfig {
        ApiConfig {
            addr,
            token,
            body_limit: 64 * 1024,
            rate: 100,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(
        "--control-addr {0} is not a loopback address: give a bearer token (--control-token-file FILE or SPILLWAY_CONTROL_TOKEN) or bind 127.0.0.1"
    )]
    NeedsToken(SocketAddr),
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

/// Shared by the handlers.
#[derive(Clone)]
struct Api {
    requests: crossbeam_channel::Sender<Request>,
    token: Option<Arc<str>>,
    bucket: Arc<Mutex<Bucket>>,
}

/// A token bucket: `rate` tokens per second, at most `rate` saved.
struct Bucket {
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    #[allow(clippy::disallowed_methods)] // rate limiting in the shell reads the wall clock
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.rate);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Starts the API on `runtime`, feeding `requests`; returns the address it listens on.
#[allow(clippy::disallowed_methods)] // the bucket's start time
pub fn start(
    runtime: &tokio::runtime::Runtime,
    config: ApiConfig,
    requests: crossbeam_channel::Sender<Request>,
) -> Result<SocketAddr, ApiError> {
    if !config.addr.ip().is_loopback() && config.token.is_none() {
        return Err(ApiError::NeedsToken(config.addr));
    }
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(config.addr))
        .map_err(|e| ApiError::Bind(config.addr, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ApiError::Bind(config.addr, e))?;
    let api = Api {
        requests,
        token: config.token.map(Arc::from),
        bucket: Arc::new(Mutex::new(Bucket {
            rate: config.rate.max(1) as f64,
            tokens: config.rate.max(1) as f64,
            at: Instant::now(),
        })),
    };
    let app = Router::new()
        .route("/queries", get(list).post(add))
        .route("/queries/{name}", get(show).patch(patch).delete(remove))
        .route("/policy", put(policy))
        .route("/status", get(status))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(api.clone(), guard))
        .layer(RequestBodyLimitLayer::new(config.body_limit))
        .with_state(api);
    runtime.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// Token and rate checks before any handler.
async fn guard(State(api): State<Api>, req: HttpRequest, next: Next) -> Response {
    if let Some(token) = &api.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            None => return error(StatusCode::UNAUTHORIZED, "a bearer token is required"),
            Some(g) if g != &**token => {
                return error(StatusCode::UNAUTHORIZED, "the bearer token is not valid");
            }
            Some(_) => {}
        }
    }
    let allowed = api.bucket.lock().map(|mut b| b.take()).unwrap_or(false);
    if !allowed {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests; slow down",
        );
    }
    next.run(req).await
}

/// What the API serves, for the 404 and 405 answers.
const ROUTES: &str =
    "GET/POST /queries, GET/PATCH/DELETE /queries/{name}, PUT /policy, GET /status";

async fn unknown_path(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!(
            "no such path: {method} {}; the API serves {ROUTES}",
            uri.path()
        ),
    )
}

async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        &format!(
            "{method} is not served on {}; the API serves {ROUTES}",
            uri.path()
        ),
    )
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

/// Sends a request to the driver and waits for its answer.
async fn ask(api: &Api, make: impl FnOnce(oneshot::Sender<Reply>) -> Request) -> Response {
    let (tx, rx) = oneshot::channel();
    if api.requests.try_send(make(tx)).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the engine is not taking requests (busy, or the run has ended)",
        );
    }
    match tokio::time::timeout(Duration::from_secs(10), rx).await {
        Ok(Ok(Ok(body))) => (StatusCode::OK, axum::Json(body)).into_response(),
        Ok(Ok(Err((status, body)))) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            axum::Json(body),
        )
            .into_response(),
        _ => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the run ended before answering",
        ),
    }
}

async fn list(State(api): State<Api>) -> Response {
    ask(&api, |reply| Request::List { reply }).await
}

async fn status(State(api): State<Api>) -> Response {
    ask(&api, |reply| Request::Status { reply }).await
}

async fn add(State(api): State<Api>, body: String) -> Response {
    ask(&api, |reply| Request::Add { body, reply }).await
}

async fn show(State(api): State<Api>, Path(name): Path<String>) -> Response {
    ask(&api, |reply| Request::Show { name, reply }).await
}

async fn patch(State(api): State<Api>, Path(name): Path<String>, body: String) -> Response {
    ask(&api, |reply| Request::Patch { name, body, reply }).await
}

#[derive(serde::Deserialize)]
struct RemoveParams {
    flush: Option<bool>,
}

async fn remove(
    State(api): State<Api>,
    Path(name): Path<String>,
    Query(p): Query<RemoveParams>,
) -> Response {
    let flush = p.flush.unwrap_or(true);
    ask(&api, |reply| Request::Remove { name, flush, reply }).await
}

/// `PUT /policy`: `{"file": "policies/random.yaml"}` (read by the server, relative to its
/// working directory) or a policy document inline, as in a policy file.
async fn policy(State(api): State<Api>, body: String) -> Response {
    let file = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("file").and_then(Value::as_str).map(String::from));
    let loaded = match file {
        Some(f) => load_policy(&f),
        None => parse_policy(&body, "request").map(|mut p| {
            p.name = "inline".into();
            p
        }),
    };
    match loaded {
        Ok(policy) => ask(&api, |reply| Request::Policy { policy, reply }).await,
        Err(e) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": e.to_string()})),
        )
            .into_response(),
    }
}
