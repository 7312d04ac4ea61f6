//! What both HTTP fronts share (MCP at `--http`, see [`super::http`], and
//! the operator's endpoints at `--metrics`, see [`super::operations`]):
//! where a front listens and how its sockets are bound, the `Host` check
//! against DNS rebinding, and plain-text answers. Both import it; it imports
//! neither.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};

use super::TransportError;

/// The body of every answer a front makes.
pub(super) type Body = BoxBody<Bytes, Infallible>;

/// Host names allowed without configuration: loopback only (`[::1]` as
/// rmcp's Host check reads it, `::1` as [`host_allowed`] does).
pub(super) const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1", "[::1]"];

/// The options that set up a listener, as its error messages name them.
pub(super) struct ListenOptions {
    /// The option giving the address.
    pub address: &'static str,
    /// The option allowing an address other than loopback.
    pub allow_remote: &'static str,
    /// What else to do when allowing one.
    pub remote_advice: &'static str,
}

/// Where a front listens, as its option gave it.
pub(super) struct ListenAddress {
    /// Every address to bind (at least one).
    pub listen: Vec<SocketAddr>,
    /// The host name `listen` was resolved from, if it was given as a name.
    pub name: Option<String>,
}

/// Where `address` says to listen: `IP:PORT` (`[::1]:PORT` for IPv6), or
/// `HOST:PORT`, every address the name resolves to; errors name `options`'
/// option.
pub(super) async fn resolve(address: &str, options: &ListenOptions) -> Result<ListenAddress, TransportError> {
    let option = options.address;
    if let Ok(addr) = address.parse::<SocketAddr>() {
        return Ok(ListenAddress { listen: vec![addr], name: None });
    }
    let what_to_write = "write HOST:PORT or IP:PORT, such as localhost:8080, 127.0.0.1:8080 or [::1]:8080";
    let Some((name, port)) = address.rsplit_once(':').filter(|(name, _)| !name.is_empty()) else {
        return Err(TransportError::Start(format!("{option} {address:?} has no port: {what_to_write}")));
    };
    let Ok(port) = port.parse::<u16>() else {
        return Err(TransportError::Start(format!("{option} {address:?}: {port:?} is not a port (0 to 65535): {what_to_write}")));
    };
    let resolved = tokio::net::lookup_host((name, port))
        .await
        .map_err(|error| TransportError::Start(format!("{option} {address:?}: cannot resolve {name:?}: {error}; {what_to_write}")))?;
    let mut listen: Vec<SocketAddr> = Vec::new();
    for addr in resolved {
        if !listen.contains(&addr) {
            listen.push(addr);
        }
    }
    if listen.is_empty() {
        return Err(TransportError::Start(format!("{option} {address:?}: {name:?} resolves to no address; {what_to_write}")));
    }
    Ok(ListenAddress { listen, name: Some(name.to_string()) })
}

/// Binds every address of `listen`, refusing an address other than loopback
/// unless `allow_remote` (naming `options`' option, and the name the
/// address was resolved from). Port 0 asks for a free port; the other
/// addresses then take the port the first one got. Returns the listeners
/// and the addresses they listen on.
pub(super) async fn bind(
    listen: &[SocketAddr],
    name: Option<&str>,
    allow_remote: bool,
    options: &ListenOptions,
) -> Result<(Vec<tokio::net::TcpListener>, Vec<SocketAddr>), TransportError> {
    if let Some(remote) = listen.iter().find(|addr| !addr.ip().is_loopback())
        && !allow_remote
    {
        let resolved = match name {
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
    for &asked in listen {
        let mut addr = asked;
        if let Some(first) = local_addrs.first().filter(|_| asked.port() == 0) {
            addr.set_port(first.port());
        }
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|error| TransportError::Start(cannot_listen(addr, &error)))?;
        local_addrs.push(listener.local_addr().map_err(|error| TransportError::Start(error.to_string()))?);
        listeners.push(listener);
    }
    Ok((listeners, local_addrs))
}

/// Whether the request's `Host` names a loopback host or one of `allowed`
/// (a name, or a name and port), whatever the port.
pub(super) fn host_allowed<B>(request: &Request<B>, allowed: &[String]) -> bool {
    let Some(host) = request.headers().get(hyper::header::HOST).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or(bracketed, |(name, _)| name),
        None => host.rsplit_once(':').map_or(host.as_str(), |(name, _)| name),
    };
    LOOPBACK_HOSTS.contains(&name)
        || allowed.iter().any(|allowed| allowed.eq_ignore_ascii_case(name) || allowed.eq_ignore_ascii_case(&host))
}

/// Why `addr` cannot be listened on, in words: a port in use says so.
fn cannot_listen(addr: SocketAddr, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "cannot listen on {addr}: port {} is already in use (another process listens on it): \
             choose another port, or stop that process",
            addr.port()
        ),
        _ => format!("cannot listen on {addr}: {error}"),
    }
}

/// Raises this process's soft limit on open descriptors to the hard limit,
/// so that the connection cap, not a low default soft limit (often 1024),
/// is what bounds connections.
fn raise_descriptor_limit() {
    let limit = prompt_host_files::raise_descriptor_limit();
    tracing::debug!(limit, "open-descriptor limit");
}

/// A plain-text answer: `text` and a newline.
pub(super) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
