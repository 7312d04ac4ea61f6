//! MCP over Streamable HTTP, at `/mcp`: rmcp's streamable HTTP service behind
//! a small hyper server that adds what rmcp leaves to the embedder: one path,
//! bearer-token authentication, and a bound on everything a client can make
//! the host hold: open connections, time to send headers and body, body size,
//! and sessions.
//!
//! rmcp itself answers 403 for a `Host` or `Origin` not allowed (DNS
//! rebinding protection), 404 for an unknown session, and keeps one session
//! (one handler) per client.

mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use rmcp::ServerHandler;

use super::TransportError;
use sessions::CappedSessions;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long a client may take to send a request's headers, and how long a
/// connection may sit idle between requests (hyper applies it to both).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The defaults of the bounds a client meets (each is an option of `serve`).
pub const DEFAULT_MAX_REQUEST_KIB: usize = 4096;
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The first pause after a failed accept, and the longest: a failure such as
/// EMFILE repeats until a descriptor is freed, so retrying at once would
/// spin and flood the log.
const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one warning about failed accepts per this long.
const ACCEPT_WARNING_INTERVAL: Duration = Duration::from_secs(1);

/// Hosts and origins allowed without configuration: loopback only.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1", "[::1]"];
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How the HTTP transport is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Whether an address other than loopback may be used.
    pub allow_remote: bool,
    /// `Host` values accepted besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides loopback ones (`:*` matches any port).
    pub allowed_origins: Vec<String>,
    /// The bearer token every request must carry, if any.
    pub auth_token: Option<String>,
    /// The largest request body accepted, in bytes.
    pub max_request_bytes: usize,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Sessions open at once; past it a new session gets 503.
    pub max_sessions: usize,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
}

impl HttpConfig {
    /// Listens on `addr`, loopback only, without authentication.
    pub fn new(addr: SocketAddr) -> HttpConfig {
        HttpConfig {
            addr,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth_token: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_KIB << 10,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        }
    }
}

/// Reads a bearer token from a file: its content, trimmed of surrounding
/// whitespace. The token itself never appears in a message.
pub fn read_token_file(path: &std::path::Path) -> Result<String, TransportError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| TransportError::Start(format!("cannot read the token file {}: {error}", path.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TransportError::Start(format!("the token file {} is empty", path.display())));
    }
    Ok(token.to_string())
}

/// A running HTTP server.
pub struct HttpServer {
    /// The address it listens on (with the port chosen, if 0 was asked).
    pub local_addr: SocketAddr,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// Stops accepting, ends every session, and waits for the accept loop.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops.
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Starts serving MCP over Streamable HTTP, one clone of `server` per
/// session. (Generic so that the benchmark's reference server is served the
/// same way.)
pub async fn serve_http<S>(server: S, config: HttpConfig) -> Result<HttpServer, TransportError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    if !config.addr.ip().is_loopback() && !config.allow_remote {
        return Err(TransportError::Start(format!(
            "refusing to listen on {}, which is not a loopback address: pass --allow-remote to do so \
             (and put TLS and --auth-token-file in front of it)",
            config.addr
        )));
    }
    raise_descriptor_limit();
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|error| TransportError::Start(format!("cannot listen on {}: {error}", config.addr)))?;
    let local_addr = listener.local_addr().map_err(|error| TransportError::Start(error.to_string()))?;

    let shutdown = CancellationToken::new();
    let rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(config.allowed_hosts.iter().cloned()))
        .with_allowed_origins(LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).chain(config.allowed_origins.iter().cloned()))
        .enforce_origin_validation()
        .with_max_request_body_bytes(config.max_request_bytes)
        .with_cancellation_token(shutdown.child_token());
    let sessions = Arc::new(CappedSessions::new(config.max_sessions, sessions::EVICTABLE_AFTER));
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), rmcp_config);
    let gate = Arc::new(Gate {
        token_digest: config.auth_token.as_deref().map(|token| Sha256::digest(token.as_bytes())),
        sessions,
        max_request_bytes: config.max_request_bytes,
        body_read_timeout: config.body_read_timeout,
    });

    tracing::info!(
        max_connections = config.max_connections,
        max_sessions = config.max_sessions,
        "serving MCP over Streamable HTTP at http://{local_addr}{MCP_PATH}{}",
        if gate.token_digest.is_some() { " (bearer token required)" } else { "" }
    );
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let accepting = shutdown.clone();
    let task = tokio::spawn(async move {
        let mut failures = AcceptFailures::default();
        loop {
            // A connection is accepted only when it may be served: past the
            // cap, clients wait in the kernel's listen backlog, holding none
            // of the host's descriptors.
            let permit = tokio::select! {
                _ = accepting.cancelled() => return,
                permit = connections.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            };
            let (stream, peer) = tokio::select! {
                _ = accepting.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => {
                        failures.reset();
                        accepted
                    }
                    Err(error) => {
                        let pause = failures.record(&error);
                        tokio::select! {
                            _ = accepting.cancelled() => return,
                            _ = tokio::time::sleep(pause) => continue,
                        }
                    }
                },
            };
            // Responses are small and interactive: no Nagle delay.
            let _ = stream.set_nodelay(true);
            let (service, gate) = (service.clone(), gate.clone());
            let connection_closed = accepting.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let handle = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (service, gate) = (service.clone(), gate.clone());
                    async move { Ok::<_, Infallible>(gate.route(request, &service).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), handle);
                tokio::select! {
                    result = connection => {
                        if let Err(error) = result {
                            tracing::debug!(%peer, "HTTP connection ended: {error}");
                        }
                    }
                    _ = connection_closed.cancelled() => {}
                }
            });
        }
    });
    Ok(HttpServer { local_addr, shutdown, task })
}

type Body = BoxBody<Bytes, Infallible>;

/// What every request passes before rmcp sees it.
struct Gate {
    token_digest: Option<sha2::digest::Output<Sha256>>,
    sessions: Arc<CappedSessions>,
    max_request_bytes: usize,
    body_read_timeout: Duration,
}

impl Gate {
    async fn route<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        request: Request<Incoming>,
        service: &StreamableHttpService<S, CappedSessions>,
    ) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return plain(StatusCode::NOT_FOUND, &format!("not found: MCP is served at {MCP_PATH}"));
        }
        if let Some(expected) = &self.token_digest
            && !authorized(&request, expected)
        {
            let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized: a valid bearer token is required");
            response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
            return response;
        }
        // A POST without a session id is how a client opens a session.
        let opens_session = request.method() == hyper::Method::POST && !request.headers().contains_key(SESSION_ID_HEADER);
        if opens_session && !self.sessions.has_room().await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &self.sessions.full_message());
        }
        let (parts, body) = request.into_parts();
        // hyper bounds the time to send headers; this bounds the body, read
        // whole (and bounded in size) before rmcp sees it.
        let body = match tokio::time::timeout(self.body_read_timeout, Limited::new(body, self.max_request_bytes).collect()).await {
            Ok(Ok(body)) => body.to_bytes(),
            Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("payload too large: the request body is over {} KiB (--max-request-kib)", self.max_request_bytes >> 10),
                );
            }
            // The client broke the framing or went away.
            Ok(Err(_)) => return closing(plain(StatusCode::BAD_REQUEST, "bad request: the body could not be read")),
            Err(_) => {
                return closing(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!("request timeout: the body did not arrive within {} ms", self.body_read_timeout.as_millis()),
                ));
            }
        };
        let ends_session = parts.method == hyper::Method::DELETE;
        let mut response = service.handle(Request::from_parts(parts, Full::new(body))).await;
        // rmcp answers a session's DELETE with 202. The specification names
        // no status for it, and the official Python SDK takes only 200 or 204
        // as success (it reports "Session termination failed: 202" at every
        // close): answer what clients expect.
        if ends_session && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        // Two initializes raced for the last place, and this one lost: rmcp
        // answers the cap's refusal with 500; the client gets the 503 above.
        if opens_session && response.status() == StatusCode::INTERNAL_SERVER_ERROR && !self.sessions.has_room().await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &self.sessions.full_message());
        }
        response
    }
}

/// The header carrying a session's id.
const SESSION_ID_HEADER: &str = "mcp-session-id";

/// Asks hyper to close the connection after this response: the rest of the
/// request is not coming, or not wanted.
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(hyper::header::CONNECTION, hyper::header::HeaderValue::from_static("close"));
    response
}

/// Counts failed accepts: how long to pause before the next one (growing
/// while they keep failing) and when to warn (at most once per
/// [`ACCEPT_WARNING_INTERVAL`], saying how many failures went unreported).
#[derive(Default)]
struct AcceptFailures {
    pause: Option<Duration>,
    last_warning: Option<Instant>,
    unreported: u64,
}

impl AcceptFailures {
    fn reset(&mut self) {
        self.pause = None;
    }

    fn record(&mut self, error: &std::io::Error) -> Duration {
        let pause = self.pause.map_or(ACCEPT_BACKOFF_FIRST, |pause| (pause * 2).min(ACCEPT_BACKOFF_MAX));
        self.pause = Some(pause);
        if self.last_warning.is_none_or(|warned| warned.elapsed() >= ACCEPT_WARNING_INTERVAL) {
            tracing::warn!(
                unreported = self.unreported,
                "accepting an HTTP connection failed: {error}; retrying in {} ms",
                pause.as_millis()
            );
            self.last_warning = Some(Instant::now());
            self.unreported = 0;
        } else {
            self.unreported += 1;
        }
        pause
    }
}

/// Raises this process's soft limit on open descriptors to the hard limit,
/// so that the connection cap, not a low default soft limit (often 1024),
/// is what bounds connections.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else { return };
    if soft >= hard {
        return;
    }
    match setrlimit(Resource::Nofile, Rlimit { current: Some(hard), maximum: Some(hard) }) {
        Ok(()) => tracing::debug!(from = soft, to = hard, "raised the open-descriptor limit"),
        Err(error) => tracing::warn!(soft, hard, "cannot raise the open-descriptor limit: {error}"),
    }
}

/// Whether the request carries the bearer token. Compares digests in
/// constant time, so neither the token nor its length leaks through timing.
fn authorized(request: &Request<Incoming>, expected: &sha2::digest::Output<Sha256>) -> bool {
    let Some(header) = request.headers().get(hyper::header::AUTHORIZATION) else { return false };
    let Some((scheme, token)) = header.to_str().ok().and_then(|value| value.split_once(' ')) else { return false };
    // The scheme is case-insensitive (RFC 9110); the token is not.
    scheme.eq_ignore_ascii_case("bearer") && bool::from(Sha256::digest(token.trim().as_bytes()).ct_eq(expected))
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
