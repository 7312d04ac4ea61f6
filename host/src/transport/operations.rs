//! What an operator's tools ask for over HTTP: `/metrics` (Prometheus text
//! format) on the listener `--metrics` opens, and the health endpoints
//! `/healthz` and `/readyz`, on that listener and on the MCP listener.
//!
//! - `/healthz` answers 200 `ok` whenever the process serves.
//! - `/readyz` answers 503 until the initial load of plugins has finished,
//!   and again once the server is stopping (SIGTERM), and in between 200 with JSON: the catalog version, the number of prompts, and each
//!   plugin's state (`loaded` or `failed`) by plugin name. No prompt content.
//!
//! Neither needs a session or the bearer token (a probe carries neither),
//! and neither reveals more than plugin names and the catalog version. The
//! `Host` header is checked as on the MCP endpoint (DNS rebinding protection):
//! on the metrics listener, only loopback names unless it was allowed to
//! listen beyond loopback.
//!
//! The metrics listener bounds what a client can make it hold: a few
//! connections at once, at most a quarter of them per client network and
//! half per prefix, idle ones shed for new ones, the time to send headers,
//! a deadline on every write, and GET only (no body).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::TransportError;
use super::connections::ConnectionSlot;
use super::connections::{self, ConnectionCaps, Connections, WriteDeadline};
use super::front::{self, Body, ListenOptions, host_allowed, plain};
use crate::metrics::{self, Readiness};

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";
/// The liveness endpoint.
pub const HEALTHZ_PATH: &str = "/healthz";
/// The readiness endpoint.
pub const READYZ_PATH: &str = "/readyz";

/// Connections the metrics listener serves at once, and how many one client
/// network and one prefix may hold: a scraper and a probe or two need no
/// more, and a client holding its share leaves the rest to the others (the
/// kubelet's probes come from the node's address, not a pod's).
const CAPS: ConnectionCaps = ConnectionCaps { in_all: 16, per_client: 4, per_prefix: 8, per_client_option: "the metrics listener's cap" };

/// How long a client may take to send a request's headers, and how long a
/// connection may sit idle between requests.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

const METRICS_OPTIONS: ListenOptions = ListenOptions {
    address: "--metrics",
    allow_remote: "--metrics-allow-remote",
    remote_advice: " (the metrics name every plugin: keep them on a network only the scraper reaches)",
};

/// The metrics listener, bound and listening, not yet served.
pub struct MetricsListener {
    listeners: Vec<tokio::net::TcpListener>,
    local_addrs: Vec<SocketAddr>,
    allow_remote: bool,
}

impl MetricsListener {
    /// Binds `address` (as `--http` takes it: IP:PORT or HOST:PORT), refusing
    /// an address other than loopback unless `allow_remote`. Enables the
    /// metrics.
    pub async fn bind(address: &str, allow_remote: bool) -> Result<MetricsListener, TransportError> {
        let address = front::resolve(address, &METRICS_OPTIONS).await?;
        let (listeners, local_addrs) = front::bind(&address.listen, address.name.as_deref(), allow_remote, &METRICS_OPTIONS).await?;
        metrics::enable();
        Ok(MetricsListener { listeners, local_addrs, allow_remote })
    }

    /// The addresses listened on (with the port chosen, if 0 was asked).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` until the process ends.
    pub fn serve(self) {
        let addrs = self.local_addrs().iter().map(|addr| format!("http://{addr}{METRICS_PATH}")).collect::<Vec<_>>();
        tracing::info!("metrics, /healthz and /readyz served on {}", addrs.join(" and "));
        let connections = Arc::new(Connections::new(CAPS));
        let allow_remote = self.allow_remote;
        for listener in self.listeners {
            tokio::spawn(accept(listener, connections.clone(), allow_remote));
        }
    }
}

/// Accepts connections while there is a place for them (see
/// [`super::connections`]: caps per client network, shedding, write
/// deadline), each served until it closes.
async fn accept(listener: tokio::net::TcpListener, connections: Arc<Connections>, allow_remote: bool) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::debug!("accepting a metrics connection failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let place = match connections.place(peer.ip()).await {
            Ok(place) => Arc::new(place),
            Err(refusal) => {
                tracing::debug!(%peer, "refusing a metrics connection: {}", refusal.0);
                connections::refuse(stream, &refusal);
                continue;
            }
        };
        tokio::spawn(async move {
            let handle = hyper::service::service_fn({
                let place = place.clone();
                move |request: Request<Incoming>| {
                    let busy = place.busy();
                    let place = place.clone();
                    async move {
                        let response = answer_on(&place, &request, allow_remote);
                        drop(busy);
                        Ok::<_, Infallible>(response)
                    }
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(connections::CONNECTION_BUFFER_BYTES)
                .max_header_size(connections::CONNECTION_BUFFER_BYTES)
                .serve_connection(TokioIo::new(WriteDeadline::new(stream, Some(place.clone()))), handle);
            let mut connection = std::pin::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = place.shed.cancelled() => {
                    // Nothing under way, or a client that reads nothing: closed at once.
                    if place.closes_at_once() {
                        return;
                    }
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%peer, "metrics connection ended: {error}");
            }
        });
    }
}

/// [`answer`], with a refusal counted against the connection (`place`).
fn answer_on(place: &ConnectionSlot, request: &Request<Incoming>, allow_remote: bool) -> Response<Body> {
    let response = answer(request, allow_remote);
    if response.status().is_client_error() {
        place.refused();
    }
    response
}

/// The metrics listener's answer.
fn answer(request: &Request<Incoming>, allow_remote: bool) -> Response<Body> {
    if !allow_remote && !host_allowed(request, &[]) {
        return plain(StatusCode::FORBIDDEN, "forbidden: the Host header is not a loopback name");
    }
    if request.uri().path() == METRICS_PATH {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed: GET /metrics");
        }
        let rendered = metrics::enabled().map(|metrics| metrics.render()).unwrap_or_default();
        let mut response = Response::new(Full::new(Bytes::from(rendered)).boxed());
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
        return response;
    }
    health(request).unwrap_or_else(|| {
        plain(StatusCode::NOT_FOUND, &format!("not found: {METRICS_PATH}, {HEALTHZ_PATH} and {READYZ_PATH} are served here"))
    })
}

/// The answer to `/healthz` or `/readyz`, or `None` for any other path.
/// (The caller has checked the `Host` header.)
pub(super) fn health<B>(request: &Request<B>) -> Option<Response<Body>> {
    let path = request.uri().path();
    if path != HEALTHZ_PATH && path != READYZ_PATH {
        return None;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Some(plain(StatusCode::METHOD_NOT_ALLOWED, &format!("method not allowed: GET {path}")));
    }
    Some(match (path, metrics::readiness()) {
        (HEALTHZ_PATH, _) => plain(StatusCode::OK, "ok"),
        (_, Readiness::Loading) => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready: plugins are loading"),
        (_, Readiness::Stopping) => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready: stopping"),
        (_, Readiness::Ready(report)) => {
            let mut response = plain(StatusCode::OK, &report);
            response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
            response
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> Request<()> {
        Request::builder().uri("/readyz").header("host", host).body(()).unwrap()
    }

    #[test]
    fn loopback_hosts_and_allowed_ones_pass_whatever_the_port() {
        for host in ["localhost", "localhost:9090", "127.0.0.1:9090", "[::1]:9090", "[::1]", "LOCALHOST:1"] {
            assert!(host_allowed(&with_host(host), &[]), "{host}");
        }
        for host in ["example.com", "example.com:9090", "127.0.0.2:9090", "evil.localhost:9090", ""] {
            assert!(!host_allowed(&with_host(host), &[]), "{host}");
        }
        assert!(host_allowed(&with_host("prompts.example.com:8080"), &["prompts.example.com".to_string()]));
        assert!(!host_allowed(&Request::builder().body(()).unwrap(), &[]));
    }
}
