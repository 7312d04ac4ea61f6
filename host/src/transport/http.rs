//! MCP over Streamable HTTP, at `/mcp`: rmcp's streamable HTTP service behind
//! a small hyper server that adds what rmcp leaves to the embedder: one path,
//! bearer-token authentication, and bounded header reads.
//!
//! rmcp itself answers 403 for a `Host` or `Origin` not allowed (DNS
//! rebinding protection), 404 for an unknown session, 413 for a body over the
//! cap, and keeps one session (one handler) per client.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use rmcp::ServerHandler;

use super::TransportError;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

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
            max_request_bytes: 4 << 20,
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
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        rmcp_config,
    );
    let token_digest = config.auth_token.as_deref().map(|token| Sha256::digest(token.as_bytes()));

    tracing::info!(
        "serving MCP over Streamable HTTP at http://{local_addr}{MCP_PATH}{}",
        if token_digest.is_some() { " (bearer token required)" } else { "" }
    );
    let accepting = shutdown.clone();
    let task = tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                _ = accepting.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!("accepting an HTTP connection failed: {error}");
                        continue;
                    }
                },
            };
            // Responses are small and interactive: no Nagle delay.
            let _ = stream.set_nodelay(true);
            let (service, token_digest) = (service.clone(), token_digest);
            let connection_closed = accepting.clone();
            tokio::spawn(async move {
                let handle = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(route(request, &service, token_digest.as_ref()).await) }
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

async fn route<S: ServerHandler + Clone + Send + Sync + 'static>(
    request: Request<Incoming>,
    service: &StreamableHttpService<S, LocalSessionManager>,
    token_digest: Option<&sha2::digest::Output<Sha256>>,
) -> Response<Body> {
    if request.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, &format!("not found: MCP is served at {MCP_PATH}"));
    }
    if let Some(expected) = token_digest
        && !authorized(&request, expected)
    {
        let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized: a valid bearer token is required");
        response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
        return response;
    }
    service.handle(request).await
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
