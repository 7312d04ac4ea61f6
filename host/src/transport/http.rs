//! MCP over Streamable HTTP, at `/mcp`: rmcp's streamable HTTP service behind
//! a small hyper server that adds what rmcp leaves to the embedder: one path,
//! bearer-token authentication, and a bound on everything a client can make
//! the host hold: open connections, time to send headers and body, body size,
//! and sessions.
//!
//! rmcp itself refuses a `Host` or `Origin` not allowed (DNS rebinding
//! protection; the front logs each refusal and answers how to allow it),
//! answers 404 for an unknown session, and keeps one session (one handler)
//! per client. The hot methods of a started session, once rmcp has checked
//! the request, are answered here, as JSON, by the session's handler on the
//! POST's own task, not by rmcp's session worker (see its `sessions` module).
//!
//! `/healthz` and `/readyz` are answered here too, without a session or the
//! token (see [`super::operations`]).
//!
//! Access is open (loopback), a static bearer token, or OAuth 2.1 access
//! tokens (see [`super::authorization`]). With OAuth, a token may name a
//! tenant: each tenant is served by its own handler (its own plugins and
//! catalog) behind its own rmcp service, so a session, a cursor or a list
//! change of one tenant never reaches another. A token naming only tenants
//! not served is refused (403); the default serves only tokens naming none.
//!
//! Each request carries its [`Principal`] (tenant, issuer, subject) to the
//! handler, and a session id is sealed for the principal that opened it,
//! with what any replica needs to serve the session (`session_ids`): the id
//! presented by anyone else is answered as an unknown session (404).
//!
//! Stopping is in stages: no new connection or request, the requests being
//! served finish within a grace, sessions end, connections close.

pub mod session_ids;
mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use session_ids::{EndedSessions, NotOpened, OpenedSession, Restorable, RestoreOffer, SessionIds};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use rmcp::ServerHandler;

use super::TransportError;
use super::authorization::{AuthorizationSettings, Denial, Grant, ResourceServer};
use super::connections::{self, ConnectionCaps, ConnectionSlot, Connections, WriteDeadline};
use super::front::{self, Body, LOOPBACK_HOSTS, ListenOptions, plain};
use super::tokens::{Presented, TOKENS_ISSUER, TokenSet, Tokens};
use crate::handler::DeclaredContent;
use crate::identity::{self, Principal};
use crate::input::RequestStateSeal;
use prompt_host_kernel::log_budget::{Admission, LogBudget, LogWindow};
use sessions::{CappedSessions, HotAnswerSlot};

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long a client may take to send a request's headers, and how long a
/// connection may sit idle between requests (hyper applies it to both).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The defaults of the bounds a client meets (each is an option of `serve`).
pub const DEFAULT_MAX_REQUEST_KIB: usize = 4096;
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
pub const DEFAULT_MAX_STREAMS_PER_USER: usize = 32;
pub const DEFAULT_MAX_STREAMS_PER_TENANT: usize = 256;
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The first pause after a failed accept, and the longest: a failure such as
/// EMFILE repeats until a descriptor is freed, so retrying at once would
/// spin and flood the log.
const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one warning about failed accepts per this long.
const ACCEPT_WARNING_INTERVAL: Duration = Duration::from_secs(1);

/// Origins allowed without configuration: loopback only.
const LOOPBACK_ORIGINS: &[&str] =
    &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://localhost:*", "https://127.0.0.1:*", "https://[::1]:*"];

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
    /// The bearer token every request must carry, if any (in memory; the
    /// server's own come from files, `tokens`).
    pub auth_token: Option<String>,
    /// The bearer tokens of `--auth-token-file` and `--auth-tokens-file`,
    /// one of which every request must carry, read again at SIGHUP.
    pub tokens: Option<Arc<Tokens>>,
    /// OAuth access tokens every request must carry, if set (instead of
    /// `auth_token`).
    pub authorization: Option<AuthorizationSettings>,
    /// The largest request body accepted, in bytes.
    pub max_request_bytes: usize,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Connections one client network (an IPv4 address, an IPv6 /64) may
    /// hold at once; `None`: [`default_connections_per_client`]. One prefix
    /// (an IPv4 /24, an IPv6 /48) holds at most half of `max_connections`,
    /// or this if more.
    pub max_connections_per_client: Option<usize>,
    /// Sessions open at once, per tenant; past it a new session gets 503.
    pub max_sessions: usize,
    /// Long-lived streams (a session's GET stream, `subscriptions/listen`)
    /// open at once for one user (an OAuth token's subject), and for one tenant.
    /// In all, streams leave a quarter of `max_connections` (see
    /// [`stream_connections`]) to other requests.
    pub max_streams_per_user: usize,
    pub max_streams_per_tenant: usize,
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
            tokens: None,
            authorization: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_KIB << 10,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_streams_per_user: DEFAULT_MAX_STREAMS_PER_USER,
            max_streams_per_tenant: DEFAULT_MAX_STREAMS_PER_TENANT,
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
    async fn resolving_for(address: &str, options: &ListenOptions) -> Result<HttpConfig, TransportError> {
        let address = front::resolve(address, options).await?;
        let mut config = HttpConfig::new(address.listen[0]);
        config.listen = address.listen;
        if let Some(name) = address.name {
            config.allowed_hosts.push(name.clone());
            config.listen_name = Some(name);
        }
        Ok(config)
    }
}

/// The HTTP front's sockets, bound and listening, not yet served: binding
/// comes first, so that an address in use is reported before plugins load.
pub struct HttpListener {
    listeners: Vec<tokio::net::TcpListener>,
    local_addrs: Vec<SocketAddr>,
    config: HttpConfig,
    resource_server: Option<Arc<ResourceServer>>,
    /// What seals session ids (`session_ids`): the shared request-state
    /// key, or by default a random key of this process.
    session_seal: Option<RequestStateSeal>,
}

/// The handlers behind the front: one per tenant, and what serves requests
/// that name no tenant (every request, without tenants).
pub struct Tenants<S> {
    pub by_name: std::collections::BTreeMap<String, S>,
    pub default: DefaultTenant<S>,
}

/// What serves requests that name no tenant.
pub enum DefaultTenant<S> {
    /// A handler of its own.
    Own(S),
    /// The tenant of this name (one of `Tenants::by_name`), by its one
    /// service and session table.
    Tenant(String),
}

/// One handler's rmcp service, and its sessions.
struct Served<S: ServerHandler + Clone + Send + Sync + 'static> {
    service: StreamableHttpService<S, CappedSessions>,
    sessions: Arc<CappedSessions>,
    /// The sessions requests are about to restore from their sealed ids.
    restorable: Arc<Restorable>,
    /// The sessions ended here with DELETE.
    ended: Arc<EndedSessions>,
}

/// Every handler's service, by tenant.
struct Front<S: ServerHandler + Clone + Send + Sync + 'static> {
    by_tenant: std::collections::BTreeMap<String, Served<S>>,
    default: DefaultTenant<Served<S>>,
}

impl<S: ServerHandler + Clone + Send + Sync + 'static> Front<S> {
    /// The tenant serving a token that names `tenants` ("" for a default of
    /// its own), and its service: the first of them that is a tenant; the
    /// default if it names none; none if it names only tenants not served.
    fn serving(&self, tenants: &[String]) -> Option<(&str, &Served<S>)> {
        if tenants.is_empty() {
            return Some(match &self.default {
                DefaultTenant::Own(served) => ("", served),
                DefaultTenant::Tenant(name) => (name.as_str(), &self.by_tenant[name]),
            });
        }
        tenants.iter().find_map(|tenant| self.by_tenant.get_key_value(tenant)).map(|(name, served)| (name.as_str(), served))
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
    async fn bind_for(config: HttpConfig, options: &ListenOptions) -> Result<HttpListener, TransportError> {
        if config.listen.is_empty() {
            return Err(TransportError::Start("no address to listen on".to_string()));
        }
        if (config.auth_token.is_some() || config.tokens.is_some()) && config.authorization.is_some() {
            return Err(TransportError::Start("static tokens and [authorization] exclude each other: use one".to_string()));
        }
        let resource_server = match &config.authorization {
            Some(settings) => Some(Arc::new(ResourceServer::new(settings.clone()).map_err(TransportError::Start)?)),
            None => None,
        };
        let (listeners, local_addrs) = front::bind(&config.listen, config.listen_name.as_deref(), config.allow_remote, options).await?;
        Ok(HttpListener { listeners, local_addrs, config, resource_server, session_seal: None })
    }

    /// The listener, sealing session ids with `seal` (the shared
    /// request-state key, so that any replica serves any session) when
    /// given; by default with a random key of this process.
    pub fn sealing_sessions_with(self, seal: Option<RequestStateSeal>) -> HttpListener {
        HttpListener { session_seal: seal, ..self }
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
        self.serve_tenants(Tenants { by_name: Default::default(), default: DefaultTenant::Own(server) })
    }

    /// Starts serving, each tenant by its own handler (see [`Tenants`]).
    pub fn serve_tenants<S>(self, tenants: Tenants<S>) -> HttpServer
    where
        S: ServerHandler + Clone + Send + Sync + 'static,
    {
        let HttpListener { listeners, local_addrs, config, resource_server, session_seal } = self;
        let stopping = Stopping::default();
        let rmcp_config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(config.allowed_hosts.iter().cloned()))
            .with_allowed_origins(LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).chain(config.allowed_origins.iter().cloned()))
            .enforce_origin_validation()
            .with_max_request_body_bytes(config.max_request_bytes)
            .with_cancellation_token(stopping.sessions.child_token());
        let served = |server: S| {
            let sessions = Arc::new(CappedSessions::new(config.max_sessions, sessions::EVICTABLE_AFTER));
            CappedSessions::close_idle_in_background(&sessions, sessions::IDLE_CLOSE_AFTER, stopping.sessions.child_token());
            let restorable = Arc::new(Restorable::default());
            let mut rmcp_config = rmcp_config.clone();
            rmcp_config.session_store = Some(restorable.clone());
            let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), rmcp_config);
            Served { service, sessions, restorable, ended: Arc::default() }
        };
        let default = match tenants.default {
            DefaultTenant::Own(server) => DefaultTenant::Own(served(server)),
            DefaultTenant::Tenant(name) => {
                assert!(tenants.by_name.contains_key(&name), "the default tenant {name:?} is one of the tenants");
                DefaultTenant::Tenant(name)
            }
        };
        let front =
            Arc::new(Front { by_tenant: tenants.by_name.into_iter().map(|(name, server)| (name, served(server))).collect(), default });
        let in_memory = config.auth_token.as_deref().map(|token| {
            let set = TokenSet::single(std::path::Path::new("the token given"), token).expect("a token given in memory is not empty");
            Tokens::fixed(set)
        });
        let access = match (config.tokens.clone().or(in_memory), resource_server) {
            (_, Some(server)) => Access::OAuth(server),
            (Some(tokens), None) => {
                // The files are read again at SIGHUP, until the server stops.
                let reloaded = tokens.clone();
                crate::hangup::on_each(move || reloaded.reload(), stopping.streams.clone());
                Access::Tokens(tokens)
            }
            (None, None) => Access::Open,
        };
        let gate = Arc::new(RequestChecks {
            access,
            max_request_bytes: config.max_request_bytes,
            body_read_timeout: config.body_read_timeout,
            calls: stopping.calls.clone(),
            refusals: Default::default(),
            allowed_hosts: config.allowed_hosts.clone(),
            streams: Arc::new(Streams::new(&config, Counted::Streams)),
            requests: Arc::new(Streams::new(&config, Counted::Requests)),
            streams_end: stopping.streams.clone(),
            session_ids: SessionIds::new(session_seal.unwrap_or_else(RequestStateSeal::random)),
        });

        let caps = connection_caps(&config);
        tracing::info!(
            max_connections = config.max_connections,
            max_connections_per_client = caps.per_client,
            max_sessions = config.max_sessions,
            max_streams = stream_connections(config.max_connections),
            "serving MCP over Streamable HTTP at {}{}",
            local_addrs.iter().map(|addr| format!("http://{addr}{MCP_PATH}")).collect::<Vec<_>>().join(" and "),
            match &gate.access {
                Access::Open => "",
                Access::Tokens(_) => " (bearer token required)",
                Access::OAuth(_) => " (OAuth access token required)",
            }
        );
        let connections = Arc::new(Connections::new(connection_caps(&config)));
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
    /// Every long-lived stream (GET, `subscriptions/listen`) ends, cleanly
    /// and at once: a stream is not a call to wait for.
    streams: CancellationToken,
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
        self.stopping.streams.cancel();
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
    connections: Arc<Connections>,
    front: Arc<Front<S>>,
    gate: Arc<RequestChecks>,
    stopping: Stopping,
) {
    let mut failures = AcceptFailures::default();
    loop {
        // Past the cap, the connection that came waits for a place, and the
        // clients after it in the kernel's listen backlog, holding none of
        // the host's descriptors.
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
        let place = tokio::select! {
            place = connections.place(peer.ip()) => match place {
                Ok(place) => Some(place),
                Err(refusal) => {
                    tracing::debug!(%peer, "refusing a connection: {}", refusal.0);
                    connections::refuse(stream, &refusal);
                    continue;
                }
            },
            // Served as the queued ones below are.
            _ = stopping.accepting.cancelled() => None,
        };
        serve_connection(stream, peer, place, &front, &gate, &stopping);
        if stopping.accepting.is_cancelled() {
            break;
        }
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
    place: Option<ConnectionSlot>,
    front: &Arc<Front<S>>,
    gate: &Arc<RequestChecks>,
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
    let shed = place.as_ref().map_or_else(CancellationToken::new, |place| place.shed.clone());
    let place = place.map(Arc::new);
    stopping.open.clone().spawn(async move {
        let handle = hyper::service::service_fn({
            let (started, place) = (started.clone(), place.clone());
            move |request: Request<Incoming>| {
                let (front, gate, arriving) = (front.clone(), gate.clone(), arriving.clone());
                started.cancel();
                // Busy from the request's headers until its response is
                // sent or dropped: only an idle connection is shed.
                let busy = place.as_ref().map(|place| place.busy());
                let place = place.clone();
                async move {
                    let response = gate.route(request, peer, &front).await;
                    arriving.lock().expect("never poisoned").take();
                    if response.status().is_client_error()
                        && let Some(place) = &place
                    {
                        place.refused();
                    }
                    Ok::<_, Infallible>(match busy {
                        Some(busy) => response.map(|body| HeldBody::new(body, busy).boxed()),
                        None => response,
                    })
                }
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .max_buf_size(connections::CONNECTION_BUFFER_BYTES)
            .max_header_size(connections::CONNECTION_BUFFER_BYTES)
            .serve_connection(TokioIo::new(WriteDeadline::new(stream, place.clone())), handle);
        let mut connection = std::pin::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            _ = shed.cancelled() => {
                // Nothing under way, or a client that reads nothing: closed
                // at once, whatever it holds.
                if place.as_ref().is_some_and(|place| place.closes_at_once()) {
                    tracing::debug!(%peer, "closing a connection to make room for a new one");
                    return;
                }
                // A request arrived since it was picked: it is answered, in
                // full, and the connection closes after it.
                tracing::debug!(%peer, "closing a connection after its request, to make room for a new one");
                connection.as_mut().graceful_shutdown();
                tokio::select! {
                    result = connection.as_mut() => result,
                    _ = stopping.connections.cancelled() => return,
                }
            }
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

/// Who may use the front.
enum Access {
    /// Anyone who reaches it (loopback, unless allowed otherwise).
    Open,
    /// Whoever has one of the static tokens in force.
    Tokens(Arc<Tokens>),
    /// Whoever has a valid OAuth access token for this resource.
    OAuth(Arc<ResourceServer>),
}

/// What every request passes before rmcp sees it.
struct RequestChecks {
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
    /// The long-lived streams open, and their caps.
    streams: Arc<Streams>,
    /// The requests under way (streams aside), and their caps.
    requests: Arc<Streams>,
    /// Cancelled when the server stops: every stream ends.
    streams_end: CancellationToken,
    /// Issues and opens the sealed session ids.
    session_ids: SessionIds,
}

/// Who a request is from, as its token says: the issuer, what names its
/// tenants (for a refusal), and the grant; none for open access and the
/// one unnamed token.
type Granted = Option<(String, String, Grant)>;

/// A request admitted to MCP: its head and body (read whole), the JSON-RPC
/// methods it carries, whether it may open a session, and what it holds
/// until its response is sent.
struct Admitted {
    parts: hyper::http::request::Parts,
    body: Bytes,
    may_open_session: bool,
    /// The session (rmcp's id) it restores on this replica, if it does.
    restores: Option<String>,
    /// What a session it opens or restores tells its client of.
    declared: DeclaredContent,
    held: Held,
}

/// What a request holds until its response is sent (until hyper drops the
/// body): its place among the calls stopping waits for, among the requests
/// under way or the streams, and the token that says its client is gone.
struct Held {
    call: Option<tokio_util::task::task_tracker::TaskTrackerToken>,
    under_way: Arc<std::sync::Mutex<Option<StreamHeld>>>,
    stream: Option<StreamHeld>,
    client_gone: tokio_util::sync::DropGuard,
    /// The offer of the session it restores, for rmcp's session store.
    _restore: Option<RestoreOffer>,
}

impl RequestChecks {
    /// One HTTP request, in phases: what is not MCP (health, metadata, 404),
    /// who it is from, which tenant serves it, admission (caps, the body
    /// read whole), and the MCP service's answer, rewritten where clients
    /// expect otherwise.
    async fn route<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        front: &Front<S>,
    ) -> Response<Body> {
        if let Some(answer) = self.outside_mcp(&request, peer) {
            return answer;
        }
        let grant = match self.grant(&request, peer).await {
            Ok(grant) => grant,
            Err(refusal) => return refusal,
        };
        let named = grant.as_ref().map_or(&[][..], |(_, _, grant)| grant.tenants.as_slice());
        let Some((tenant, served)) = front.serving(named) else {
            let claim = grant.as_ref().map(|(_, claim, _)| claim.clone()).unwrap_or_default();
            return Refusal::UnservedTenant { claim, named: named.to_vec() }.answer(peer, &self.refusals);
        };
        let principal = match &grant {
            Some((issuer, _, grant)) => {
                Principal { tenant: tenant.to_string(), issuer: issuer.clone(), subject: grant.subject.clone().unwrap_or_default() }
            }
            None => Principal::http_without_oauth(),
        };
        let mut request = request;
        let session = match self.open_session_id(&mut request, &principal, served) {
            Ok(session) => session,
            Err(refusal) => return refusal.answer(peer, &self.refusals),
        };
        request.extensions_mut().insert(principal.clone());
        // Whose streams are counted together: with OAuth, the user (the
        // token's issuer and subject; tokens without a subject count as one
        // user). A static token or open access names no user: the tenant's
        // cap holds.
        let user = grant.as_ref().map(|_| format!("{}\u{0}{}", principal.issuer, principal.subject));
        let admitted = match self.admitted(request, tenant, user.as_deref(), grant.is_some(), served, session).await {
            Ok(admitted) => admitted,
            Err(answer) => return answer,
        };
        let expires = grant.as_ref().and_then(|(_, _, grant)| grant.expires);
        self.answered(admitted, served, &principal, user.as_deref(), expires, peer).await
    }

    /// Replaces the session id `request` carries, if any, by rmcp's id, when
    /// it names a session for `principal` (`session_ids`) not ended here:
    /// the session it names. Otherwise the refusal, naming the id by its
    /// label.
    fn open_session_id<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        request: &mut Request<Incoming>,
        principal: &Principal,
        served: &Served<S>,
    ) -> Result<Option<OpenedSession>, Refusal> {
        let Some(presented) = request.headers().get(SESSION_ID_HEADER) else {
            return Ok(None);
        };
        // No longer than any issued, before it is copied or checked.
        let presented = &presented.as_bytes()[..presented.len().min(session_ids::MAX_SESSION_ID_BYTES + 1)];
        let presented = String::from_utf8_lossy(presented).into_owned();
        let refused = |label: &str, why| Refusal::SessionNotBound { label: identity::session_label(label), why };
        let session = self.session_ids.open(&presented, principal).map_err(|why| refused(&presented, why))?;
        // Named as the session's other log lines name it.
        if served.ended.ended(&session.id) {
            return Err(refused(&session.id, NotOpened::Ended));
        }
        // Sealed by this key ring from rmcp's own id: a header value.
        let id = hyper::header::HeaderValue::from_str(&session.id).map_err(|_| refused(&session.id, NotOpened::NotBound))?;
        request.headers_mut().insert(SESSION_ID_HEADER, id);
        Ok(Some(session))
    }

    /// The answer to a request for anything but MCP: the health endpoints
    /// and the protected resource's metadata (for an allowed Host), or 404.
    fn outside_mcp(&self, request: &Request<Incoming>, peer: SocketAddr) -> Option<Response<Body>> {
        let metadata = match &self.access {
            Access::OAuth(server) => resource_metadata(request, server),
            _ => None,
        };
        if let Some(answer) = super::operations::health(request).or(metadata) {
            if !front::host_allowed(request, &self.allowed_hosts) {
                return Some(Refusal::Host(header_text(request.headers(), hyper::header::HOST)).answer(peer, &self.refusals));
            }
            return Some(answer);
        }
        (request.uri().path() != MCP_PATH).then(|| plain(StatusCode::NOT_FOUND, &format!("not found: MCP is served at {MCP_PATH}")))
    }

    /// Who the request is from: an OAuth token's grant, or a named token's,
    /// with its issuer and what names its tenants; none for open access and
    /// the one unnamed token. A refusal is the answer.
    async fn grant(&self, request: &Request<Incoming>, peer: SocketAddr) -> Result<Granted, Response<Body>> {
        match &self.access {
            Access::Open => Ok(None),
            Access::Tokens(tokens) => match bearer(request).map(|token| tokens.current().check(token, std::time::SystemTime::now())) {
                None => Err(Refusal::NoToken.answer(peer, &self.refusals)),
                Some(Presented::Unnamed) => Ok(None),
                Some(Presented::Named(grant)) => Ok(Some((TOKENS_ISSUER.to_string(), "the tokens file's tenant".to_string(), grant))),
                Some(Presented::Expired(name)) => Err(Refusal::ExpiredToken(name).answer(peer, &self.refusals)),
                Some(Presented::Unknown) => Err(Refusal::WrongToken.answer(peer, &self.refusals)),
            },
            Access::OAuth(server) => {
                let client =
                    server.client_address(request.headers().get_all("x-forwarded-for").iter().map(|value| value.as_bytes()), peer.ip());
                match server.authorize(request.headers().get(hyper::header::AUTHORIZATION).map(|value| value.as_bytes()), client).await {
                    Ok(grant) => {
                        let settings = server.settings();
                        Ok(Some((settings.issuer.clone(), settings.tenant_claim.clone().unwrap_or_default(), grant)))
                    }
                    Err(denial) => Err(Refusal::Denied { challenge: server.challenge(&denial), denial }.answer(peer, &self.refusals)),
                }
            }
        }
    }

    /// Admits a request of `tenant`'s `user` (OAuth alone names users:
    /// `oauth`): counted among the calls, the requests under way or the
    /// streams, its body read whole (bounded in size and rate), within the
    /// session caps when it opens a session. A refusal is the answer.
    async fn admitted<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        request: Request<Incoming>,
        tenant: &str,
        user: Option<&str>,
        oauth: bool,
        served: &Served<S>,
        session: Option<OpenedSession>,
    ) -> Result<Admitted, Response<Body>> {
        let sessions = &served.sessions;
        // A POST carries a call (or opens or ends a session): stopping waits
        // until its response is sent, unless it opens a stream.
        let mut call = (request.method() == hyper::Method::POST).then(|| self.calls.token());
        // With OAuth, counted from here until its response is sent, per user
        // and per tenant (a stream is counted as a stream instead, below).
        // Without, there is one tenant and no user: a client is bounded by
        // its network's connections.
        let mut under_way = match oauth.then(|| self.requests.admit(tenant, user)) {
            Some(Ok(held)) => Some(held),
            Some(Err((status, refusal))) => return Err(plain(status, &refusal)),
            None => None,
        };
        let (mut parts, body) = request.into_parts();
        // hyper bounds the time to send headers; this bounds the body, read
        // whole (and bounded in size and rate) before rmcp sees it.
        let body = read_body(body, self.max_request_bytes, self.body_read_timeout).await?;
        let methods = json_rpc_methods(&body);
        let has_method = |name: &str| methods.iter().any(|method| method == name);
        // A session's GET stream, or a 2026-07-28 `subscriptions/listen`:
        // open until the client or the server ends it.
        let opens_stream =
            parts.method == hyper::Method::GET || (parts.method == hyper::Method::POST && has_method("subscriptions/listen"));
        let stream = match opens_stream {
            true => Some(self.streams.admit(tenant, user).map_err(|(status, refusal)| plain(status, &refusal))?),
            false => None,
        };
        if opens_stream {
            call = None;
            under_way = None;
        }
        // Shared with the elicitation's place below: a request that comes
        // to wait for its client's answer is counted as a stream from then
        // on, not also as a request under way (its answer is another
        // request, which must find room).
        let under_way = Arc::new(std::sync::Mutex::new(under_way));
        // Only an `initialize` opens a session (the revisions before
        // 2026-07-28; later ones have none): a stateless request is never
        // refused for the session cap. One that names a session opens none
        // (rmcp answers 404 if the session is unknown).
        let (is_post, names_session) = (parts.method == hyper::Method::POST, parts.headers.contains_key(SESSION_ID_HEADER));
        let opens_session = is_post && !names_session && has_method("initialize");
        let restore = restore_here(served, session, &parts).await?;
        if opens_session || restore.is_some() {
            session_room(sessions, user).await?;
        }
        // What the session's client is told of: filled in by the handler of
        // an `initialize`, or, for a restore, what the session's id says.
        let declared = DeclaredContent::default();
        if let Some(content) = restore.as_ref().and_then(|restore| restore.content) {
            let _ = declared.0.set(content);
        }
        if opens_session || restore.is_some() {
            parts.extensions.insert(declared.clone());
        }
        // Cancelled when the response is dropped (sent, or the client
        // gone), or the session it belongs to is closed.
        let session = parts.headers.get(SESSION_ID_HEADER).and_then(|id| id.to_str().ok());
        let client_gone = session.and_then(|id| sessions.closing(id)).map_or_else(CancellationToken::new, |closing| closing.child_token());
        parts.extensions.insert(crate::handler::ClientGone(client_gone.clone()));
        // Where a hot request's call comes back to be answered here.
        if is_post && names_session {
            parts.extensions.insert(HotAnswerSlot::default());
        }
        // A call that asks its client for input (an elicitation) holds the
        // connection until answered, as a stream: it takes a stream's place.
        parts.extensions.insert(crate::app::StreamPlace {
            take: {
                let (streams, tenant, user, under_way) =
                    (self.streams.clone(), tenant.to_string(), user.map(str::to_string), under_way.clone());
                Arc::new(move || {
                    let held = streams.admit(&tenant, user.as_deref()).map_err(|(_, refusal)| refusal)?;
                    under_way.lock().expect("never poisoned").take();
                    Ok(Box::new(held) as Box<dyn std::any::Any + Send + Sync>)
                })
            },
            stopping: self.streams_end.clone(),
        });
        let may_open_session = is_post && !names_session && (opens_session || methods.is_empty());
        let (restore, restores) = match restore {
            Some(OpenedSession { id, initialize: Some(initialize), .. }) => (Some(served.restorable.offer(&id, initialize)), Some(id)),
            _ => (None, None),
        };
        // Armed now: whenever this request ends, even before rmcp answers.
        let held = Held { call, under_way, stream, client_gone: client_gone.drop_guard(), _restore: restore };
        Ok(Admitted { parts, body, may_open_session, restores, declared, held })
    }

    /// The MCP service's answer to an admitted request, rewritten where
    /// clients expect otherwise, holding what the request holds until it is
    /// sent. A new session's id is bound to `principal`; a stream ends when
    /// the server stops, or when the token that opened it `expires`.
    async fn answered<S: ServerHandler + Clone + Send + Sync + 'static>(
        &self,
        admitted: Admitted,
        served: &Served<S>,
        principal: &Principal,
        user: Option<&str>,
        expires: Option<std::time::SystemTime>,
        peer: SocketAddr,
    ) -> Response<Body> {
        let Admitted { parts, body, may_open_session, restores, declared, held } = admitted;
        let Served { service, sessions, ended, .. } = served;
        let ends_session = parts.method == hyper::Method::DELETE;
        let named_session = parts.headers.get(SESSION_ID_HEADER).and_then(|id| id.to_str().ok()).map(str::to_string);
        let retry = restores.as_ref().map(|_| parts.clone());
        let (host, origin) = (header_text(&parts.headers, hyper::header::HOST), header_text(&parts.headers, hyper::header::ORIGIN));
        let hot = parts.extensions.get::<HotAnswerSlot>().cloned();
        let mut response = service.handle(Request::from_parts(parts, Full::new(body.clone()))).await;
        if let (Some(id), Some(parts)) = (&restores, retry)
            && response.status() == StatusCode::INTERNAL_SERVER_ERROR
        {
            response = restore_failed(served, id, Request::from_parts(parts, Full::new(body.clone()))).await;
        }
        // A hot request, checked by rmcp and handed back (`sessions`), by the
        // first attempt or by the retry above (the two share the slot): its
        // call runs here, and its answer is the response, as JSON. One
        // cancelled gets rmcp's response, an event stream without events.
        if let Some(call) = hot.as_ref().and_then(HotAnswerSlot::take)
            && let Some(answer) = call.answer().await
        {
            response = json_answer(&answer);
        }
        if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            response = answer_unparsed(response, &body).await;
        }
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
            if let Some(id) = &named_session {
                ended.end(id);
            }
        }
        // A session restored here counts against its user's share.
        if let (Some(id), Some(user)) = (&restores, user)
            && response.status().is_success()
        {
            sessions.opened_by(id, user);
        }
        // A new session's id, as its client gets it: sealed, for the principal.
        if let Some(id) = response.headers().get(SESSION_ID_HEADER).and_then(|id| id.to_str().ok()) {
            if let Some(user) = user {
                sessions.opened_by(id, user);
            }
            let issued = self.session_ids.issue(id, &body, declared.0.get().copied(), principal);
            let value = hyper::header::HeaderValue::from_str(&issued).expect("a sealed id is base64url and dots");
            response.headers_mut().insert(SESSION_ID_HEADER, value);
        }
        // Two initializes raced for the last place, and this one lost: rmcp
        // answers the cap's refusal with 500; the client gets the 503 above.
        // (So is a body read as no request, that rmcp still took for an
        // initialize.)
        if may_open_session && response.status() == StatusCode::INTERNAL_SERVER_ERROR && !sessions.has_room().await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &sessions.full_message());
        }
        let is_stream = held.stream.is_some();
        // A stream ends when the server stops, or when the token that
        // opened it stops counting.
        // (The child's timer ends with the body.)
        let (stream_end, expiry_timer) = match expires {
            Some(expires) if is_stream => {
                let child = ending_at(&self.streams_end, expires);
                (child.clone(), Some(child.drop_guard()))
            }
            _ => (self.streams_end.clone(), None),
        };
        response.map(|body| {
            // The call is over, the stream's place free and the client gone
            // when hyper drops the body: sent, or the client gone.
            let Held { call, under_way, stream, client_gone, _restore: _ } = held;
            let body = HeldBody::new(body, (call, under_way, stream, client_gone, expiry_timer));
            match is_stream {
                true => body.ending_with(stream_end).boxed(),
                false => body.boxed(),
            }
        })
    }
}

/// `message` as a response of its own, `application/json`.
fn json_answer(message: &rmcp::model::ServerJsonRpcMessage) -> Response<Body> {
    let bytes = serde_json::to_vec(message).expect("a JSON-RPC message serializes");
    let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed());
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

/// How long a request body may take before it must arrive at
/// [`MIN_BODY_BYTES_PER_SECOND`] (within `--body-read-timeout-ms` in all).
const BODY_RATE_GRACE: Duration = Duration::from_secs(2);
/// The slowest a request body may arrive, on average since the request was
/// admitted (its headers read and its token checked), once
/// [`BODY_RATE_GRACE`] is over: a client dripping a byte every few
/// seconds is answered 408 within seconds, not at the total timeout.
const MIN_BODY_BYTES_PER_SECOND: u64 = 1024;

/// Reads a request's body whole: at most `max_bytes`, within `timeout`,
/// and at least [`MIN_BODY_BYTES_PER_SECOND`] after [`BODY_RATE_GRACE`];
/// else the answer to send (and close).
async fn read_body(body: Incoming, max_bytes: usize, timeout: Duration) -> Result<Bytes, Response<Body>> {
    let too_large = || {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("payload too large: the request body is over {} KiB (--max-request-kib)", max_bytes >> 10),
        )
    };
    // A Content-Length over the bound is refused before anything is read.
    if hyper::body::Body::size_hint(&body).lower() > max_bytes as u64 {
        return Err(too_large());
    }
    let started = tokio::time::Instant::now();
    let mut body = std::pin::pin!(body);
    let mut read = bytes::BytesMut::new();
    loop {
        // The time allowed so far: the grace, and a second per KiB arrived.
        let allowed = BODY_RATE_GRACE + Duration::from_millis(read.len() as u64 * 1000 / MIN_BODY_BYTES_PER_SECOND);
        let frame = match tokio::time::timeout_at(started + allowed.min(timeout), body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => return Ok(read.freeze()),
            // The client broke the framing or went away.
            Ok(Some(Err(_))) => return Err(closing(plain(StatusCode::BAD_REQUEST, "bad request: the body could not be read"))),
            Err(_) if allowed >= timeout => {
                return Err(closing(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!("request timeout: the body did not arrive within {} ms", timeout.as_millis()),
                )));
            }
            Err(_) => {
                return Err(closing(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!(
                        "request timeout: the body arrived slower than {MIN_BODY_BYTES_PER_SECOND} bytes a second ({} bytes in {} ms)",
                        read.len(),
                        started.elapsed().as_millis()
                    ),
                )));
            }
        };
        if let Ok(data) = frame.into_data() {
            if read.len() + data.len() > max_bytes {
                return Err(too_large());
            }
            read.extend_from_slice(&data);
        }
    }
}

/// A child of `end`, cancelled also at `when` (or at once, if it has
/// passed); the timer goes with the child when the child is cancelled.
fn ending_at(end: &CancellationToken, when: std::time::SystemTime) -> CancellationToken {
    let child = end.child_token();
    let left = when.duration_since(std::time::SystemTime::now()).unwrap_or_default();
    let timer = child.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(left) => timer.cancel(),
            () = timer.cancelled() => {}
        }
    });
    child
}

/// The `method` of each JSON-RPC request in a body: one request, or each
/// request of a batch; none if the body is neither.
fn json_rpc_methods(body: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Request {
        method: String,
    }
    // A batch's members, read without keeping anything but their methods.
    #[derive(serde::Deserialize)]
    struct Member {
        method: Option<String>,
    }
    if let Ok(request) = serde_json::from_slice::<Request>(body) {
        return vec![request.method];
    }
    serde_json::from_slice::<Vec<Member>>(body)
        .map_or_else(|_| Vec::new(), |batch| batch.into_iter().filter_map(|member| member.method).collect())
}

/// How many connections long-lived streams may hold in all: a quarter of
/// `max_connections` (at least one) is kept for other requests and for
/// `/healthz` and `/readyz`.
/// (With one connection, none: no stream opens.)
pub fn stream_connections(max_connections: usize) -> usize {
    max_connections - max_connections.div_ceil(4)
}

/// The default of `--max-connections-per-client`: a quarter of
/// `max_connections`, at least 8 (or all of them, if fewer).
pub fn default_connections_per_client(max_connections: usize) -> usize {
    (max_connections / 4).max(8).min(max_connections)
}

/// The places of the front's connections, as `config` sets them.
fn connection_caps(config: &HttpConfig) -> ConnectionCaps {
    let in_all = config.max_connections;
    let per_client = config.max_connections_per_client.unwrap_or_else(|| default_connections_per_client(in_all)).clamp(1, in_all.max(1));
    ConnectionCaps { in_all, per_client, per_prefix: (in_all / 2).max(per_client), per_client_option: "--max-connections-per-client" }
}

/// The long-lived streams open, or the requests under way, counted per
/// user, per tenant and in all.
struct Streams {
    per_user: usize,
    /// Where `per_user` comes from, as its refusal names it.
    per_user_option: &'static str,
    per_tenant: usize,
    per_tenant_option: &'static str,
    in_all: usize,
    /// What is counted and where `in_all` comes from, as refusals say it.
    what: Counted,
    open: std::sync::Mutex<StreamCounts>,
}

/// What a [`Streams`] counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counted {
    /// Long-lived streams: three quarters of `--max-connections` in all.
    Streams,
    /// Requests under way (headers read, response not yet sent), streams
    /// aside: `--max-connections` in all. One user's slow bodies cannot hold
    /// every connection.
    Requests,
}

#[derive(Default)]
struct StreamCounts {
    in_all: usize,
    by_tenant: std::collections::HashMap<String, usize>,
    by_user: std::collections::HashMap<String, usize>,
}

impl Streams {
    fn new(config: &HttpConfig, what: Counted) -> Streams {
        // One tenant takes at most half of them in all, and one user at most
        // its tenant's share, whatever the options say: with few
        // connections, the options' defaults would let one user take them all.
        let in_all = match what {
            Counted::Streams => stream_connections(config.max_connections),
            Counted::Requests => config.max_connections,
        };
        let half_option = match what {
            Counted::Streams => "half of the streams in all, below --max-streams-per-tenant",
            Counted::Requests => "half of --max-connections, below --max-streams-per-tenant",
        };
        let (per_tenant, per_tenant_option) = match in_all.div_ceil(2) {
            half if half < config.max_streams_per_tenant => (half, half_option),
            _ => (config.max_streams_per_tenant, "--max-streams-per-tenant"),
        };
        let (per_user, per_user_option) = match per_tenant < config.max_streams_per_user {
            true => (per_tenant, "a tenant's share, below --max-streams-per-user"),
            false => (config.max_streams_per_user, "--max-streams-per-user"),
        };
        Streams { per_user, per_user_option, per_tenant, per_tenant_option, in_all, what, open: Default::default() }
    }

    /// A place for one more stream (or request) of `user` in `tenant`, held
    /// until the [`StreamHeld`] is dropped; or the refusal saying which cap
    /// is reached.
    fn admit(self: &Arc<Self>, tenant: &str, user: Option<&str>) -> Result<StreamHeld, (StatusCode, String)> {
        let mut open = self.open.lock().expect("never poisoned");
        let user_key = user.map(|user| format!("{tenant}\u{0}{user}"));
        let (counted, advice) = match self.what {
            Counted::Streams => ("open streams", "close one first"),
            Counted::Requests => ("requests under way", "wait for one to be answered"),
        };
        let too_many = |who: &str, limit: usize, option: &str| {
            (
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many requests: this {who} holds its maximum of {limit} {counted} ({option}); {advice}"),
            )
        };
        if let Some(user_key) = &user_key
            && open.by_user.get(user_key).copied().unwrap_or(0) >= self.per_user
        {
            return Err(too_many("user", self.per_user, self.per_user_option));
        }
        if open.by_tenant.get(tenant).copied().unwrap_or(0) >= self.per_tenant {
            return Err(too_many("tenant", self.per_tenant, self.per_tenant_option));
        }
        if open.in_all >= self.in_all {
            let of = match self.what {
                Counted::Streams => "three quarters of --max-connections",
                Counted::Requests => "--max-connections",
            };
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                format!("service unavailable: the server holds its maximum of {} {counted} ({of}); retry later", self.in_all),
            ));
        }
        open.in_all += 1;
        *open.by_tenant.entry(tenant.to_string()).or_default() += 1;
        if let Some(user_key) = &user_key {
            *open.by_user.entry(user_key.clone()).or_default() += 1;
        }
        Ok(StreamHeld { streams: self.clone(), tenant: tenant.to_string(), user: user_key })
    }
}

/// One stream's place in [`Streams`], given back when dropped.
struct StreamHeld {
    streams: Arc<Streams>,
    tenant: String,
    user: Option<String>,
}

impl Drop for StreamHeld {
    fn drop(&mut self) {
        let mut guard = self.streams.open.lock().expect("never poisoned");
        let open = &mut *guard;
        open.in_all -= 1;
        for (counts, key) in [(&mut open.by_tenant, Some(&self.tenant)), (&mut open.by_user, self.user.as_ref())] {
            let Some(key) = key else { continue };
            if let Some(count) = counts.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(key);
                }
            }
        }
    }
}

/// A response body, and what is held until hyper drops it (the response
/// sent, or its client gone); with `end`, it ends, cleanly (its last chunk
/// sent), when `end` completes: how the streams end at once when the server
/// stops.
struct HeldBody<T> {
    body: Body,
    _held: T,
    // In a mutex only to be `Sync`, as a boxed body must be; only ever
    // reached through `get_mut`, which does not lock.
    end: Option<std::sync::Mutex<std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>>>,
}

impl<T> HeldBody<T> {
    fn new(body: Body, held: T) -> HeldBody<T> {
        HeldBody { body, _held: held, end: None }
    }

    /// Ends the body when `end` is cancelled.
    fn ending_with(self, end: CancellationToken) -> HeldBody<T> {
        HeldBody { end: Some(std::sync::Mutex::new(Box::pin(end.cancelled_owned()))), ..self }
    }
}

impl<T: Unpin> hyper::body::Body for HeldBody<T> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        if let Some(end) = &mut self.end
            && end.get_mut().expect("never poisoned").as_mut().poll(context).is_ready()
        {
            return std::task::Poll::Ready(None);
        }
        std::pin::Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A request refused before rmcp handles it (401) or by rmcp (403). Each is
/// logged with the client's address and the reason; the token never is, and
/// the client's Host and Origin are logged escaped.
enum Refusal {
    NoToken,
    WrongToken,
    /// A named token past its expiry: its name.
    ExpiredToken(String),
    /// An OAuth access token missing or not counting, and the challenge.
    Denied {
        denial: Denial,
        challenge: String,
    },
    Host(String),
    Origin(String),
    /// A valid token whose tenant claim (`claim`) names only tenants not
    /// served (`named`).
    UnservedTenant {
        claim: String,
        named: Vec<String>,
    },
    /// A session id that names no session for this request's principal
    /// (`why`: another user's, made up, past its lifetime, or ended here),
    /// answered as rmcp answers an unknown session; the label of the id.
    SessionNotBound {
        label: String,
        why: NotOpened,
    },
    /// A 403 of rmcp's this host does not know: passed on as it is.
    Other(Response<Body>),
}

impl Refusal {
    /// A short, stable name for the refusal: the `reason` label of
    /// `prompt_host_http_refusals_total`.
    fn kind(&self) -> &'static str {
        match self {
            Refusal::NoToken => "no-token",
            Refusal::WrongToken => "wrong-token",
            Refusal::ExpiredToken(_) => "expired-token",
            Refusal::Denied { denial: Denial::NoToken, .. } => "no-token",
            Refusal::Denied { denial: Denial::InvalidToken(_), .. } => "invalid-token",
            Refusal::Denied { denial: Denial::InsufficientScope, .. } => "insufficient-scope",
            Refusal::Denied { denial: Denial::IssuerUnavailable(_), .. } => "issuer-unavailable",
            Refusal::Denied { denial: Denial::Busy(_), .. } => "busy",
            Refusal::Host(_) => "host",
            Refusal::Origin(_) => "origin",
            Refusal::UnservedTenant { .. } => "unserved-tenant",
            Refusal::SessionNotBound { .. } => "session",
            Refusal::Other(_) => "other",
        }
    }

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
        crate::metrics::http_refused(self.kind());
        match self {
            Refusal::NoToken | Refusal::WrongToken | Refusal::ExpiredToken(_) => {
                let reason = match &self {
                    Refusal::NoToken => "no bearer token".to_string(),
                    Refusal::ExpiredToken(name) => format!("the bearer token {name:?} has expired"),
                    _ => "wrong bearer token".to_string(),
                };
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
                log.then(
                    || tracing::warn!(%peer, reason = ?denial.to_string(), "refused an HTTP request ({}): access token", status.as_u16()),
                );
                let mut response = plain(status, text);
                if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
                    response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, value);
                }
                response
            }
            Refusal::Host(host) => {
                log.then(|| tracing::warn!(%peer, host = ?host, "refused an HTTP request (403): Host not allowed (start with --allow-host HOST)"));
                // The name without its port: --allow-host NAME accepts any port.
                let name =
                    hyper::http::uri::Authority::try_from(host.as_str()).map_or(host.clone(), |authority| authority.host().to_string());
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
            Refusal::UnservedTenant { claim, named } => {
                // What the token names is the client's: a few values, cut, escaped.
                let named: Vec<&str> = named
                    .iter()
                    .take(MAX_TENANTS_LOGGED)
                    .map(|tenant| &tenant[..tenant.floor_char_boundary(MAX_TENANT_LOGGED_BYTES)])
                    .collect();
                log.then(|| {
                    tracing::warn!(%peer, claim = ?claim, tenants = ?named, "refused an HTTP request (403): the token names no tenant served here")
                });
                plain(StatusCode::FORBIDDEN, &format!("forbidden: the access token's {claim:?} claim names no tenant this server serves"))
            }
            Refusal::SessionNotBound { label, why } => {
                log.then(|| match why {
                    NotOpened::NotBound => tracing::warn!(
                        %peer, session = %label,
                        "refused a session id not given to this token's holder: answered as an unknown session (404)"
                    ),
                    NotOpened::Expired => tracing::info!(
                        %peer, session = %label,
                        "a session id past its lifetime: answered as an unknown session (404), its client opens a new one"
                    ),
                    NotOpened::Ended => tracing::debug!(%peer, session = %label, "a session ended with DELETE named again: 404"),
                });
                unknown_session()
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

/// A header's value as a refusal and the log may show it (bytes that are not
/// UTF-8 replaced, cut as [`prompt_host_kernel::validate::error_message`] cuts: a header
/// may be as long as the head, 64 KiB), or "" when absent.
fn header_text(headers: &hyper::HeaderMap, name: hyper::header::HeaderName) -> String {
    headers
        .get(name)
        .map(|value| prompt_host_kernel::validate::error_message(String::from_utf8_lossy(value.as_bytes())))
        .unwrap_or_default()
}

/// The header carrying a session's id.
const SESSION_ID_HEADER: &str = "mcp-session-id";

/// rmcp's answer to an unknown session (404), word for word: a session id
/// given to someone else gets the same.
const UNKNOWN_SESSION: &str = "Not Found: Session not found";

/// How many of the tenants a refused token names are logged, and how much
/// of each.
const MAX_TENANTS_LOGGED: usize = 4;
const MAX_TENANT_LOGGED_BYTES: usize = 64;

/// Room under `sessions`' caps for one more session of `user`: the
/// tenant's cap, and one user's share of it. A refusal is the answer.
async fn session_room(sessions: &CappedSessions, user: Option<&str>) -> Result<(), Response<Body>> {
    if !sessions.has_room().await {
        return Err(plain(StatusCode::SERVICE_UNAVAILABLE, &sessions.full_message()));
    }
    // One user holds at most half of its tenant's sessions.
    if let Some(user) = user
        && !sessions.user_has_room(user).await
    {
        return Err(plain(StatusCode::TOO_MANY_REQUESTS, &sessions.user_full_message()));
    }
    Ok(())
}

/// The session a request naming `session` restores on this replica: one
/// this replica does not hold (another opened it, or this one before it
/// restarted or closed it idle), whose id carries its `initialize`. A
/// DELETE of such a session ends it here without restoring it: the answer.
///
/// A request of 2026-07-28 or later restores nothing: it belongs to no
/// session, whatever id it carries.
async fn restore_here<S: ServerHandler + Clone + Send + Sync + 'static>(
    served: &Served<S>,
    session: Option<OpenedSession>,
    parts: &hyper::http::request::Parts,
) -> Result<Option<OpenedSession>, Response<Body>> {
    let Some(session) = session.filter(|session| session.initialize.is_some() && !stateless(&parts.headers)) else {
        return Ok(None);
    };
    if served.sessions.has_session(&session.id.clone().into()).await.unwrap_or(false) {
        return Ok(None);
    }
    if parts.method == hyper::Method::DELETE {
        served.ended.end(&session.id);
        return Err(plain(StatusCode::OK, ""));
    }
    Ok(Some(session))
}

/// Whether a request is of protocol 2026-07-28 or later (its
/// `MCP-Protocol-Version`: revisions are dates, which compare as text).
fn stateless(headers: &hyper::HeaderMap) -> bool {
    headers.get("mcp-protocol-version").is_some_and(|version| version.len() == 10 && version.as_bytes() >= b"2026-07-28".as_slice())
}

/// The answer to `request`, whose session this replica could not restore
/// (rmcp answered 500): its own answer, when another request restored the
/// session meanwhile (rmcp refuses a restore that raced another); 503 when
/// there is no room for one more session; otherwise the answer to an
/// unknown session (404), so that the client opens a new one.
async fn restore_failed<S: ServerHandler + Clone + Send + Sync + 'static>(
    served: &Served<S>,
    id: &str,
    request: Request<Full<Bytes>>,
) -> Response<Body> {
    if served.sessions.has_session(&id.to_string().into()).await.unwrap_or(false) {
        return served.service.handle(request).await;
    }
    if !served.sessions.has_room().await {
        return plain(StatusCode::SERVICE_UNAVAILABLE, &served.sessions.full_message());
    }
    let session = identity::session_label(id);
    tracing::warn!(%session, "a session could not be restored on this replica: answered as an unknown session (404)");
    unknown_session()
}

/// rmcp's answer to a session it does not know, 404, word for word.
fn unknown_session() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(UNKNOWN_SESSION.as_bytes())).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

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

/// The bearer token the request carries, if it carries one (compared with
/// the tokens in force by [`TokenSet::check`], in constant time).
fn bearer(request: &Request<Incoming>) -> Option<&str> {
    let header = request.headers().get(hyper::header::AUTHORIZATION)?;
    let (scheme, token) = header.to_str().ok()?.split_once(' ')?;
    // The scheme is case-insensitive (RFC 9110); the token is not.
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
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

/// rmcp answers a body it cannot parse as a message with 415 and a line of
/// text, no JSON-RPC answer, and the client waits for one: such a body gets
/// one, 400 with a JSON-RPC error carrying the message's id when it can be
/// read ([`super::malformed`]). rmcp's other 415 (a wrong Content-Type) is
/// passed on.
async fn answer_unparsed(response: Response<Body>, body: &Bytes) -> Response<Body> {
    let (parts, said) = response.into_parts();
    let said = said.collect().await.map_or_else(|never| match never {}, |said| said.to_bytes());
    if said.starts_with(b"fail to deserialize request body")
        && let Err(Some(answer)) = super::malformed::http_body(body)
    {
        let json = serde_json::to_vec(&answer).expect("a JSON-RPC error serializes");
        let mut response = Response::new(Full::new(Bytes::from(json)).boxed());
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        return response;
    }
    Response::from_parts(parts, Full::new(said).boxed())
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
