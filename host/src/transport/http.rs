//! MCP over Streamable HTTP, at `/mcp`: rmcp's streamable HTTP service behind
//! a small hyper server that adds what rmcp leaves to the embedder: one path,
//! bearer-token authentication, and a bound on everything a client can make
//! the host hold: open connections, time to send headers and body, body size,
//! and sessions.
//!
//! rmcp itself refuses a `Host` or `Origin` not allowed (DNS rebinding
//! protection; the front logs each refusal and answers how to allow it),
//! answers 404 for an unknown session, and keeps one session (one handler)
//! per client.
//!
//! `/healthz` and `/readyz` are answered here too, without a session or the
//! token (see [`super::operations`]).
//!
//! Access is open (loopback), a static bearer token, or OAuth 2.1 access
//! tokens (see [`super::authorization`]). With OAuth, a token may name a
//! tenant: each tenant is served by its own handler (its own plugins and
//! catalog) behind its own rmcp service, so a session, a cursor or a list
//! change of one tenant never reaches another.
//!
//! Stopping is in stages: no new connection or request, the requests being
//! served finish within a grace, sessions end, connections close.

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
use tokio_util::task::TaskTracker;

use rmcp::ServerHandler;

use super::TransportError;
use super::authorization::{AuthorizationSettings, Denial, ResourceServer};
use crate::log_budget::{Admission, LogBudget, LogWindow};
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

/// The options that set up a listener, as its error messages name them.
pub(super) struct ListenOptions {
    /// The option giving the address.
    pub address: &'static str,
    /// The option allowing an address other than loopback.
    pub allow_remote: &'static str,
    /// What else to do when allowing one.
    pub remote_advice: &'static str,
}

/// The MCP listener's options.
const HTTP_OPTIONS: ListenOptions = ListenOptions {
    address: "--http",
    allow_remote: "--allow-remote",
    remote_advice: " (and put TLS and --auth-token-file in front of it)",
};

/// How the HTTP transport is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Where to listen: every address is bound.
    pub listen: Vec<SocketAddr>,
    /// The host name `listen` was resolved from, if it was given as a name.
    pub listen_name: Option<String>,
    /// Whether an address other than loopback may be used.
    pub allow_remote: bool,
    /// `Host` values accepted besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides loopback ones (`:*` matches any port).
    pub allowed_origins: Vec<String>,
    /// The bearer token every request must carry, if any.
    pub auth_token: Option<String>,
    /// OAuth access tokens every request must carry, if set (instead of
    /// `auth_token`).
    pub authorization: Option<AuthorizationSettings>,
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
            listen: vec![addr],
            listen_name: None,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth_token: None,
            authorization: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_KIB << 10,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        }
    }

    /// Listens where `address` says: `IP:PORT` (`[::1]:PORT` for IPv6), or
    /// `HOST:PORT`, on every address the name resolves to. A name is also
    /// accepted in the `Host` header.
    pub async fn resolving(address: &str) -> Result<HttpConfig, TransportError> {
        HttpConfig::resolving_for(address, &HTTP_OPTIONS).await
    }

    /// As [`HttpConfig::resolving`], for the listener `options` name.
    pub(super) async fn resolving_for(address: &str, options: &ListenOptions) -> Result<HttpConfig, TransportError> {
        let option = options.address;
        if let Ok(addr) = address.parse::<SocketAddr>() {
            return Ok(HttpConfig::new(addr));
        }
        let what_to_write = "write HOST:PORT or IP:PORT, such as localhost:8080, 127.0.0.1:8080 or [::1]:8080";
        let Some((name, port)) = address.rsplit_once(':').filter(|(name, _)| !name.is_empty()) else {
            return Err(TransportError::Start(format!("{option} {address:?} has no port: {what_to_write}")));
        };
        let Ok(port) = port.parse::<u16>() else {
            return Err(TransportError::Start(format!("{option} {address:?}: {port:?} is not a port (0 to 65535): {what_to_write}")));
        };
        let resolved = tokio::net::lookup_host((name, port)).await.map_err(|error| {
            TransportError::Start(format!("{option} {address:?}: cannot resolve {name:?}: {error}; {what_to_write}"))
        })?;
        let mut listen: Vec<SocketAddr> = Vec::new();
        for addr in resolved {
            if !listen.contains(&addr) {
                listen.push(addr);
            }
        }
        if listen.is_empty() {
            return Err(TransportError::Start(format!("{option} {address:?}: {name:?} resolves to no address; {what_to_write}")));
        }
        let mut config = HttpConfig::new(listen[0]);
        config.listen = listen;
        config.allowed_hosts.push(name.to_string());
        config.listen_name = Some(name.to_string());
        Ok(config)
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

/// The HTTP front's sockets, bound and listening, not yet served: binding
/// comes first, so that an address in use is reported before plugins load.
pub struct HttpListener {
    listeners: Vec<tokio::net::TcpListener>,
    local_addrs: Vec<SocketAddr>,
    config: HttpConfig,
    resource_server: Option<Arc<ResourceServer>>,
}

/// The handlers behind the front: one per tenant, and the one for requests
/// that name no tenant (the only one, without tenants).
pub struct Tenants<S> {
    pub by_name: std::collections::BTreeMap<String, S>,
    pub default: S,
}

/// One handler's rmcp service, and its sessions.
struct Served<S: ServerHandler + Clone + Send + Sync + 'static> {
    service: StreamableHttpService<S, CappedSessions>,
    sessions: Arc<CappedSessions>,
}

/// Every handler's service, by tenant.
struct Front<S: ServerHandler + Clone + Send + Sync + 'static> {
    by_tenant: std::collections::BTreeMap<String, Served<S>>,
    default: Served<S>,
}

impl<S: ServerHandler + Clone + Send + Sync + 'static> Front<S> {
    /// The service for the first of `tenants` that is one, or the default.
    fn for_tenants(&self, tenants: &[String]) -> &Served<S> {
        tenants.iter().find_map(|tenant| self.by_tenant.get(tenant)).unwrap_or(&self.default)
    }
}

impl HttpListener {
    /// Binds every address of `config`, refusing an address other than
    /// loopback unless `config.allow_remote`. Port 0 asks for a free port;
    /// the other addresses of a name then take the port the first one got.
    pub async fn bind(config: HttpConfig) -> Result<HttpListener, TransportError> {
        HttpListener::bind_for(config, &HTTP_OPTIONS).await
    }

    /// As [`HttpListener::bind`], for the listener `options` name.
    pub(super) async fn bind_for(config: HttpConfig, options: &ListenOptions) -> Result<HttpListener, TransportError> {
        if config.listen.is_empty() {
            return Err(TransportError::Start("no address to listen on".to_string()));
        }
        if config.auth_token.is_some() && config.authorization.is_some() {
            return Err(TransportError::Start("a static token and [authorization] exclude each other: use one".to_string()));
        }
        let resource_server = match &config.authorization {
            Some(settings) => Some(Arc::new(ResourceServer::new(settings.clone()).map_err(TransportError::Start)?)),
            None => None,
        };
        if let Some(remote) = config.listen.iter().find(|addr| !addr.ip().is_loopback())
            && !config.allow_remote
        {
            let resolved = match &config.listen_name {
                Some(name) => format!(" ({name:?} resolves to it)"),
                None => String::new(),
            };
            return Err(TransportError::Start(format!(
                "refusing to listen on {remote}{resolved}, which is not a loopback address: pass {} to do so{}",
                options.allow_remote, options.remote_advice
            )));
        }
        raise_descriptor_limit();
        let mut listeners = Vec::new();
        let mut local_addrs: Vec<SocketAddr> = Vec::new();
        for &asked in &config.listen {
            let mut addr = asked;
            if let Some(first) = local_addrs.first().filter(|_| asked.port() == 0) {
                addr.set_port(first.port());
            }
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|error| TransportError::Start(format!("cannot listen on {addr}: {error}")))?;
            local_addrs.push(listener.local_addr().map_err(|error| TransportError::Start(error.to_string()))?);
            listeners.push(listener);
        }
        Ok(HttpListener { listeners, local_addrs, config, resource_server })
    }

    /// The sockets, bound and listening, for another server to serve.
    pub(super) fn into_listeners(self) -> Vec<tokio::net::TcpListener> {
        self.listeners
    }

    /// The addresses listened on (with the port chosen, if 0 was asked).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Starts serving MCP over Streamable HTTP, one clone of `server` per
    /// session. (Generic so that the benchmark's reference server is served
    /// the same way.)
    pub fn serve<S>(self, server: S) -> HttpServer
    where
        S: ServerHandler + Clone + Send + Sync + 'static,
    {
        self.serve_tenants(Tenants { by_name: Default::default(), default: server })
    }

    /// Starts serving, each tenant by its own handler (see [`Tenants`]).
    pub fn serve_tenants<S>(self, tenants: Tenants<S>) -> HttpServer
    where
        S: ServerHandler + Clone + Send + Sync + 'static,
    {
        let HttpListener { listeners, local_addrs, config, resource_server } = self;
        let stopping = Stopping::default();
        let rmcp_config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(config.allowed_hosts.iter().cloned()))
            .with_allowed_origins(LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).chain(config.allowed_origins.iter().cloned()))
            .enforce_origin_validation()
            .with_max_request_body_bytes(config.max_request_bytes)
            .with_cancellation_token(stopping.sessions.child_token());
        let served = |server: S| {
            let sessions = Arc::new(CappedSessions::new(config.max_sessions, sessions::EVICTABLE_AFTER));
            let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), rmcp_config.clone());
            Served { service, sessions }
        };
        let front = Arc::new(Front {
            by_tenant: tenants.by_name.into_iter().map(|(name, server)| (name, served(server))).collect(),
            default: served(tenants.default),
        });
        let access = match (&config.auth_token, resource_server) {
            (_, Some(server)) => Access::OAuth(server),
            (Some(token), None) => Access::Token(Sha256::digest(token.as_bytes())),
            (None, None) => Access::Open,
        };
        let gate = Arc::new(Gate {
            access,
            max_request_bytes: config.max_request_bytes,
            body_read_timeout: config.body_read_timeout,
            calls: stopping.calls.clone(),
            refusals: Default::default(),
            allowed_hosts: config.allowed_hosts.clone(),
        });

        tracing::info!(
            max_connections = config.max_connections,
            max_sessions = config.max_sessions,
            "serving MCP over Streamable HTTP at {}{}",
            local_addrs.iter().map(|addr| format!("http://{addr}{MCP_PATH}")).collect::<Vec<_>>().join(" and "),
            match &gate.access {
                Access::Open => "",
                Access::Token(_) => " (bearer token required)",
                Access::OAuth(_) => " (OAuth access token required)",
            }
        );
        let connections = Arc::new(Semaphore::new(config.max_connections));
        let accepting = TaskTracker::new();
        for listener in listeners {
            accepting.spawn(accept(listener, connections.clone(), front.clone(), gate.clone(), stopping.clone()));
        }
        accepting.close();
        HttpServer { local_addrs, stopping, accepting }
    }
}

/// Binds and starts serving at once (see [`HttpListener`]).
pub async fn serve_http<S>(server: S, config: HttpConfig) -> Result<HttpServer, TransportError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    Ok(HttpListener::bind(config).await?.serve(server))
}

/// The stages of stopping, one token each, and the calls to wait for.
#[derive(Clone, Default)]
struct Stopping {
    /// No new connection is accepted, and each open connection serves the
    /// request it is serving, if any, and closes.
    accepting: CancellationToken,
    /// rmcp ends every session (and each event stream with it).
    sessions: CancellationToken,
    /// Connections still open are dropped.
    connections: CancellationToken,
    /// Each POST from the moment it arrives until its response is sent,
    /// and each connection until its first request arrives.
    calls: TaskTracker,
    /// Each connection being served.
    open: TaskTracker,
}

/// A running HTTP server.
pub struct HttpServer {
    /// Every address it listens on (with the port chosen, if 0 was asked).
    pub local_addrs: Vec<SocketAddr>,
    stopping: Stopping,
    accepting: TaskTracker,
}

impl HttpServer {
    /// Stops accepting connections and requests, lets the requests being
    /// served finish within `grace` (a call still running then is abandoned),
    /// ends every session, and waits, within what is left of `grace`, for
    /// the connections to send what they hold and close.
    pub async fn shutdown(self, grace: Duration) {
        let until = tokio::time::Instant::now() + grace;
        self.stopping.accepting.cancel();
        self.accepting.wait().await;
        super::drain(&self.stopping.calls, grace).await;
        self.stopping.sessions.cancel();
        self.stopping.open.close();
        if tokio::time::timeout_at(until, self.stopping.open.wait()).await.is_err() {
            tracing::debug!(connections = self.stopping.open.len(), "closing connections still open");
        }
        self.stopping.connections.cancel();
    }

    /// Waits until the server stops.
    pub async fn wait(self) {
        self.accepting.wait().await;
    }
}

/// Accepts connections on `listener` while there is room for them, until
/// the server stops accepting; then serves the connections waiting in the
/// listen queue, and closes the listener.
async fn accept<S: ServerHandler + Clone + Send + Sync + 'static>(
    listener: tokio::net::TcpListener,
    connections: Arc<Semaphore>,
    front: Arc<Front<S>>,
    gate: Arc<Gate>,
    stopping: Stopping,
) {
    let mut failures = AcceptFailures::default();
    loop {
        // A connection is accepted only when it may be served: past the
        // cap, clients wait in the kernel's listen backlog, holding none
        // of the host's descriptors.
        let permit = tokio::select! {
            _ = stopping.accepting.cancelled() => break,
            permit = connections.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let (stream, peer) = tokio::select! {
            _ = stopping.accepting.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    failures.reset();
                    accepted
                }
                Err(error) => {
                    let pause = failures.record(&error);
                    tokio::select! {
                        _ = stopping.accepting.cancelled() => break,
                        _ = tokio::time::sleep(pause) => continue,
                    }
                }
            },
        };
        serve_connection(stream, peer, Some(permit), &front, &gate, &stopping);
    }
    // The kernel completed the handshake of the connections in the listen
    // queue, and their clients may have sent a request already: closing the
    // listener would reset them, and a proxy does not resend a POST it has
    // sent. Each is served its request instead (the queue, at most the
    // listen backlog, bounds them; the connection cap is not waited for).
    // A connection that comes after the listener closes is refused, and a
    // proxy tries another replica.
    for (stream, peer) in queued(listener) {
        serve_connection(stream, peer, None, &front, &gate, &stopping);
    }
}

/// The connections the kernel holds in `listener`'s queue, not yet accepted.
fn queued(listener: tokio::net::TcpListener) -> Vec<(tokio::net::TcpStream, SocketAddr)> {
    // The std listener is non-blocking: accept until the queue is empty.
    let Ok(listener) = listener.into_std() else { return Vec::new() };
    let mut queued = Vec::new();
    while let Ok((stream, peer)) = listener.accept() {
        if stream.set_nonblocking(true).is_ok()
            && let Ok(stream) = tokio::net::TcpStream::from_std(stream)
        {
            queued.push((stream, peer));
        }
    }
    queued
}

/// Serves one connection until it closes; once the server stops accepting,
/// until it has answered the request it is serving, or its first.
fn serve_connection<S: ServerHandler + Clone + Send + Sync + 'static>(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    front: &Arc<Front<S>>,
    gate: &Arc<Gate>,
    stopping: &Stopping,
) {
    // Responses are small and interactive: no Nagle delay.
    let _ = stream.set_nodelay(true);
    // Until its first request has been routed, the connection counts as a
    // call for stopping to wait for, so that a request sent on a connection
    // accepted as the server stops is answered before the sessions end.
    let arriving = Arc::new(std::sync::Mutex::new(Some(stopping.calls.token())));
    // Cancelled when the connection's first request arrives.
    let started = CancellationToken::new();
    let (front, gate, stopping) = (front.clone(), gate.clone(), stopping.clone());
    stopping.open.clone().spawn(async move {
        let _permit = permit;
        let handle = hyper::service::service_fn({
            let started = started.clone();
            move |request: Request<Incoming>| {
                let (front, gate, arriving) = (front.clone(), gate.clone(), arriving.clone());
                started.cancel();
                async move {
                    let response = gate.route(request, peer, &front).await;
                    arriving.lock().expect("never poisoned").take();
                    Ok::<_, Infallible>(response)
                }
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(TokioIo::new(stream), handle);
        let mut connection = std::pin::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            _ = stopping.accepting.cancelled() => {
                // Serve the request under way, or the first, and no other.
                // hyper's graceful shutdown closes a connection that has sent
                // no request yet, although one may be on its way: wait for
                // it first (within the header timeout).
                tokio::select! {
                    result = connection.as_mut() => result,
                    _ = stopping.connections.cancelled() => return,
                    _ = started.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        tokio::select! {
                            result = connection.as_mut() => result,
                            _ = stopping.connections.cancelled() => return,
                        }
                    }
                }
            }
        };
        if let Err(error) = result {
            tracing::debug!(%peer, "HTTP connection ended: {error}");
        }
    });
}

type Body = BoxBody<Bytes, Infallible>;

/// Who may use the front.
enum Access {
    /// Anyone who reaches it (loopback, unless allowed otherwise).
    Open,
    /// Whoever has the static token (its digest).
    Token(sha2::digest::Output<Sha256>),
    /// Whoever has a valid OAuth access token for this resource.
    OAuth(Arc<ResourceServer>),
}

/// What every request passes before rmcp sees it.
struct Gate {
    access: Access,
    max_request_bytes: usize,
    body_read_timeout: Duration,
    /// Every POST, until its response is sent, for stopping to wait for.
    calls: TaskTracker,
    /// The refusals logged in the current window: a client sending requests
    /// without a token cannot flood the log.
    refusals: std::sync::Mutex<LogWindow>,
    /// The `Host` names accepted besides loopback ones, for the health
    /// endpoints (rmcp checks them for MCP).
    allowed_hosts: Vec<String>,
}

impl Gate {
    async fn route<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        front: &Front<S>,
    ) -> Response<Body> {
        let metadata = match &self.access {
            Access::OAuth(server) => resource_metadata(&request, server),
            _ => None,
        };
        if let Some(answer) = super::operations::health(&request).or(metadata) {
            if !super::operations::host_allowed(&request, &self.allowed_hosts) {
                return Refusal::Host(header_text(request.headers(), hyper::header::HOST)).answer(peer, &self.refusals);
            }
            return answer;
        }
        if request.uri().path() != MCP_PATH {
            return plain(StatusCode::NOT_FOUND, &format!("not found: MCP is served at {MCP_PATH}"));
        }
        let tenants = match &self.access {
            Access::Open => Vec::new(),
            Access::Token(expected) => match bearer_refusal(&request, expected) {
                Some(refusal) => return refusal.answer(peer, &self.refusals),
                None => Vec::new(),
            },
            Access::OAuth(server) => {
                let client = server.client_address(request.headers().get_all("x-forwarded-for").iter().map(|value| value.as_bytes()), peer.ip());
                match server.authorize(request.headers().get(hyper::header::AUTHORIZATION).map(|value| value.as_bytes()), client).await {
                    Ok(grant) => grant.tenants,
                    Err(denial) => return Refusal::Denied { challenge: server.challenge(&denial), denial }.answer(peer, &self.refusals),
                }
            }
        };
        let Served { service, sessions } = front.for_tenants(&tenants);
        // A POST carries a call (or opens or ends a session): stopping waits
        // until its response is sent. (A GET is an event stream, which
        // stopping ends.)
        let call = (request.method() == hyper::Method::POST).then(|| self.calls.token());
        // A POST without a session id is how a client opens a session.
        let opens_session = request.method() == hyper::Method::POST && !request.headers().contains_key(SESSION_ID_HEADER);
        if opens_session && !sessions.has_room().await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &sessions.full_message());
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
        let (host, origin) = (header_text(&parts.headers, hyper::header::HOST), header_text(&parts.headers, hyper::header::ORIGIN));
        let mut response = service.handle(Request::from_parts(parts, Full::new(body))).await;
        // rmcp refuses a Host or an Origin not allowed (DNS rebinding
        // protection) with 403: say which, and how to allow it.
        if response.status() == StatusCode::FORBIDDEN {
            return Refusal::from_rmcp(response, host, origin).await.answer(peer, &self.refusals);
        }
        // rmcp answers a session's DELETE with 202. The specification names
        // no status for it, and the official Python SDK takes only 200 or 204
        // as success (it reports "Session termination failed: 202" at every
        // close): answer what clients expect.
        if ends_session && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        // Two initializes raced for the last place, and this one lost: rmcp
        // answers the cap's refusal with 500; the client gets the 503 above.
        if opens_session && response.status() == StatusCode::INTERNAL_SERVER_ERROR && !sessions.has_room().await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &sessions.full_message());
        }
        match call {
            // The call is over when hyper drops the body: sent, or the client gone.
            Some(call) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _held_until_the_body_is_dropped = &call;
                    frame
                })
                .boxed()
            }),
            None => response,
        }
    }
}

/// A request refused before rmcp handles it (401) or by rmcp (403). Each is
/// logged with the client's address and the reason; the token never is, and
/// the client's Host and Origin are logged escaped.
enum Refusal {
    NoToken,
    WrongToken,
    /// An OAuth access token missing or not counting, and the challenge.
    Denied { denial: Denial, challenge: String },
    Host(String),
    Origin(String),
    /// A 403 of rmcp's this host does not know: passed on as it is.
    Other(Response<Body>),
}

impl Refusal {
    /// Which header rmcp's 403 refused, read from what it says
    /// ("Forbidden: Host header is not allowed", "Forbidden: Origin header
    /// is not allowed", "Forbidden: Invalid Origin header").
    async fn from_rmcp(response: Response<Body>, host: String, origin: String) -> Refusal {
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_or_else(|never| match never {}, |body| body.to_bytes());
        let said = String::from_utf8_lossy(&body);
        if said.contains("Host") {
            Refusal::Host(host)
        } else if said.contains("Origin") {
            Refusal::Origin(origin)
        } else {
            Refusal::Other(Response::from_parts(parts, Full::new(body).boxed()))
        }
    }

    /// Logs the refusal (within the refusal log's budget) and answers it.
    fn answer(self, peer: SocketAddr, refusals: &std::sync::Mutex<LogWindow>) -> Response<Body> {
        // Busy refusals are logged by the resource server, in a budget of their own.
        let log = !matches!(self, Refusal::Denied { denial: Denial::Busy(_), .. }) && refusal_logged(refusals);
        match self {
            Refusal::NoToken | Refusal::WrongToken => {
                let reason = if matches!(self, Refusal::NoToken) { "no bearer token" } else { "wrong bearer token" };
                log.then(|| tracing::warn!(%peer, "refused an HTTP request (401): {reason}"));
                let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized: a valid bearer token is required");
                response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
                response
            }
            Refusal::Denied { denial, challenge } => {
                let (status, text) = match &denial {
                    Denial::NoToken => (StatusCode::UNAUTHORIZED, "unauthorized: an OAuth access token is required"),
                    Denial::InvalidToken(_) => (StatusCode::UNAUTHORIZED, "unauthorized: the access token is not valid"),
                    Denial::InsufficientScope => (StatusCode::FORBIDDEN, "forbidden: the access token lacks the scope"),
                    Denial::IssuerUnavailable(_) | Denial::Busy(_) => {
                        (StatusCode::SERVICE_UNAVAILABLE, "service unavailable: access tokens cannot be checked now")
                    }
                };
                // What a token says (a key id, an issuer) is the client's: escaped.
                log.then(|| tracing::warn!(%peer, reason = ?denial.to_string(), "refused an HTTP request ({}): access token", status.as_u16()));
                let mut response = plain(status, text);
                if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
                    response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, value);
                }
                response
            }
            Refusal::Host(host) => {
                log.then(|| tracing::warn!(%peer, host = ?host, "refused an HTTP request (403): Host not allowed (start with --allow-host HOST)"));
                // The name without its port: --allow-host NAME accepts any port.
                let name = hyper::http::uri::Authority::try_from(host.as_str()).map_or(host.clone(), |authority| authority.host().to_string());
                plain(
                    StatusCode::FORBIDDEN,
                    &format!("forbidden: Host {host:?} is not allowed; start the server with --allow-host {name} to accept it"),
                )
            }
            Refusal::Origin(origin) => {
                log.then(|| tracing::warn!(%peer, origin = ?origin, "refused an HTTP request (403): Origin not allowed (start with --allow-origin ORIGIN)"));
                plain(
                    StatusCode::FORBIDDEN,
                    &format!("forbidden: Origin {origin:?} is not allowed; start the server with --allow-origin {origin} to accept it"),
                )
            }
            Refusal::Other(response) => {
                log.then(|| tracing::warn!(%peer, "refused an HTTP request (403)"));
                response
            }
        }
    }
}

/// Refusals logged every 10 s; past that they are counted, and the count is
/// logged when the next window opens.
const REFUSAL_LOG: LogBudget = LogBudget { lines: 20, window: Duration::from_secs(10) };

/// Whether a refusal's log line is within the budget. Says, once a window,
/// that the budget is reached, and how many lines the last window dropped.
fn refusal_logged(refusals: &std::sync::Mutex<LogWindow>) -> bool {
    let mut window = refusals.lock().expect("never poisoned");
    if let Some(dropped) = window.roll(REFUSAL_LOG) {
        tracing::warn!(
            dropped,
            "{dropped} refused HTTP requests were not logged in the last {} s (at most {} are)",
            REFUSAL_LOG.window.as_secs(),
            REFUSAL_LOG.lines
        );
    }
    match window.admit(REFUSAL_LOG) {
        Admission::Log => true,
        Admission::FirstDropped => {
            tracing::warn!(
                "refusal log rate limit reached: at most {} refused requests every {} s are logged; the rest are counted",
                REFUSAL_LOG.lines,
                REFUSAL_LOG.window.as_secs()
            );
            false
        }
        Admission::Dropped => false,
    }
}

/// A header's value as text (bytes that are not UTF-8 replaced), or "" when absent.
fn header_text(headers: &hyper::HeaderMap, name: hyper::header::HeaderName) -> String {
    headers.get(name).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()).unwrap_or_default()
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

/// Why the request does not carry the bearer token, if it does not.
/// Compares digests in constant time, so neither the token nor its length
/// leaks through timing.
fn bearer_refusal(request: &Request<Incoming>, expected: &sha2::digest::Output<Sha256>) -> Option<Refusal> {
    let Some(header) = request.headers().get(hyper::header::AUTHORIZATION) else { return Some(Refusal::NoToken) };
    let Some((scheme, token)) = header.to_str().ok().and_then(|value| value.split_once(' ')) else {
        return Some(Refusal::NoToken);
    };
    // The scheme is case-insensitive (RFC 9110); the token is not.
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Some(Refusal::NoToken);
    }
    (!bool::from(Sha256::digest(token.trim().as_bytes()).ct_eq(expected))).then_some(Refusal::WrongToken)
}

/// The protected resource metadata (RFC 9728), if `request` asks for it.
fn resource_metadata(request: &Request<Incoming>, server: &ResourceServer) -> Option<Response<Body>> {
    let path = request.uri().path();
    if request.method() != hyper::Method::GET || !server.metadata_paths().iter().any(|served| served == path) {
        return None;
    }
    let mut response = Response::new(Full::new(Bytes::from(server.metadata().to_string())).boxed());
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    Some(response)
}

/// A plain-text answer: `text` and a newline.
pub(super) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_is_ip_and_port_or_a_name_and_port() {
        let ip = HttpConfig::resolving("[::1]:8080").await.unwrap();
        assert_eq!((ip.listen, ip.listen_name), (vec!["[::1]:8080".parse().unwrap()], None));
        let name = HttpConfig::resolving("localhost:8080").await.unwrap();
        assert!(!name.listen.is_empty());
        assert!(name.listen.iter().all(|addr| addr.ip().is_loopback() && addr.port() == 8080), "{:?}", name.listen);
        assert_eq!(name.allowed_hosts, ["localhost"]);
        for (address, problem) in [
            ("localhost", r#"--http "localhost" has no port: "#),
            (":8080", r#"--http ":8080" has no port: "#),
            ("localhost:http", r#"--http "localhost:http": "http" is not a port (0 to 65535): "#),
        ] {
            let error = HttpConfig::resolving(address).await.unwrap_err().to_string();
            assert!(error.contains(problem), "{address}: {error}");
            assert!(error.ends_with("write HOST:PORT or IP:PORT, such as localhost:8080, 127.0.0.1:8080 or [::1]:8080"), "{error}");
        }
    }

    #[tokio::test]
    async fn an_address_other_than_loopback_needs_allow_remote() {
        let mut config = HttpConfig::new("192.0.2.1:0".parse().unwrap());
        config.listen_name = Some("remote.example".into());
        let Err(error) = HttpListener::bind(config).await else { panic!("bound a remote address") };
        assert_eq!(
            error.to_string(),
            "the MCP session could not start: refusing to listen on 192.0.2.1:0 (\"remote.example\" resolves to it), \
             which is not a loopback address: pass --allow-remote to do so (and put TLS and --auth-token-file in front of it)"
        );
    }
}
