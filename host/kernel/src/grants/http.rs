//! Granted origins: outgoing HTTP through the standard
//! `wasi:http/outgoing-handler` (wasmtime-wasi-http's implementation of the
//! interface), so that a pack calls out with its language's own HTTP
//! client, while every request is sent by this module's hook
//! ([`CallHttp`]), which keeps control of every step:
//! - **origin**: a request goes out only if an origin given to the pack
//!   ([`Origin::admits`]: scheme, host, port and path prefix) admits it;
//!   a redirect is a new request from the pack, checked the same way;
//! - **address**: a name is resolved here, and every address it resolves
//!   to is checked ([`refused_class`]) before anything is connected: a
//!   loopback, private, link-local, cloud-metadata or other special
//!   address is refused unless the origin granted is that very address;
//!   the connection goes to the address checked, never to a second answer;
//! - **TLS** always verified against the system's roots, no client
//!   certificate, no credential of the host, no proxy;
//! - **budgets**: requests, bytes sent and bytes received count against
//!   the call's budgets ([`super::IoMeter`]); every step ends at the call's
//!   deadline; response heads are bounded ([`MAX_RESPONSE_HEAD`]);
//! - **bounded in all**: each connection holds one of the descriptors
//!   counted for granted folders, in all and for its plugin.
//!
//! A refusal (an origin or address not granted, a budget used up) is
//! recorded on the call's meter, which fails the call however the pack
//! handles the error it is given; nothing is sent before the call begins.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use prompt_host_addresses::AddressClass;
use tokio_rustls::rustls;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::folders::DescriptorHolder;
use super::{Budget, GrantRefusal, GrantedAccess, IoMeter};

mod head;

use head::HeadLimited;

/// The most bytes of a response's status line and headers (with any
/// interim `1xx` heads before them) the host reads, counted as they are
/// read (`head`): a longer head fails the request, and the pack is told
/// `HTTP-response-header-section-size`.
pub const MAX_RESPONSE_HEAD: usize = 64 << 10;

/// The most headers a response may have.
pub const MAX_RESPONSE_HEADERS: usize = 100;

/// The most names one plugin's calls resolve at once (each holds a thread
/// of the runtime's blocking pool until the resolver answers, which no
/// deadline can stop): a pack whose name's servers never answer holds that
/// many threads, and delays only its own lookups.
pub const MAX_LOOKUPS: usize = 2;

/// The most bytes of headers a pack may build for one request (wasi:http's
/// field size limit, which counts their in-memory size: each field's name
/// and value, and the size of the two in a header map). Past it the WASI
/// call that adds a field traps: wasi:http 0.2's `header-error` has no case
/// for a size, so no error the pack could handle says it; the call fails,
/// saying so ([`FIELDS_TOO_LARGE`]).
pub const MAX_REQUEST_FIELDS: usize = 16 << 10;

/// How wasi:http's error reads when a pack's fields pass [`MAX_REQUEST_FIELDS`].
pub const FIELDS_TOO_LARGE: &str = "total size of fields exceeds limit";

/// The request headers a pack may not set, in one list: those of the
/// connection itself (the hop-by-hop headers of RFC 9110, section 7.6.1,
/// and `trailer`, `proxy-authenticate`, `http2-settings`) and `host`, which
/// the host sets itself from the host and port it checked. wasi:http
/// refuses each (`forbidden`) when the pack sets it.
pub const FORBIDDEN_REQUEST_HEADERS: [&str; 11] = [
    "connection",
    "host",
    "http2-settings",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The most bytes one write to a request's body takes; a body buffers at
/// most two such chunks before they are sent (and charged).
pub const OUTGOING_BODY_CHUNK: usize = 4 << 10;

/// An origin a pack may call: a scheme, a host, a port and a path prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    https: bool,
    /// Lowercase; an IPv6 address in brackets.
    host: String,
    port: u16,
    /// Starts with `/`; `/` admits every path.
    path: String,
}

impl Origin {
    /// Reads `https://host[:port][/path/prefix]` or `http://...`: no user,
    /// query or fragment.
    pub fn parse(text: &str) -> Result<Origin, String> {
        let url = url::Url::parse(text).map_err(|error| format!("it is not a URL ({error})"))?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return Err("its scheme is neither https nor http".to_string()),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err("it names a user".to_string());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("it has a query or a fragment".to_string());
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => name.to_ascii_lowercase(),
            Some(url::Host::Ipv4(address)) => address.to_string(),
            Some(url::Host::Ipv6(address)) => format!("[{address}]"),
            None => return Err("it has no host".to_string()),
        };
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        Ok(Origin { https, host, port, path: url.path().to_string() })
    }

    /// Whether both name the same scheme, host and port.
    fn same_site(&self, other: &Origin) -> bool {
        self.https == other.https && self.host == other.host && self.port == other.port
    }

    /// What both admit, when one admits all the other does: the narrower.
    pub fn overlap(&self, other: &Origin) -> Option<Origin> {
        if !self.same_site(other) {
            return None;
        }
        if path_within(&self.path, &other.path) {
            Some(self.clone())
        } else if path_within(&other.path, &self.path) {
            Some(other.clone())
        } else {
            None
        }
    }

    /// Whether it admits a request to `host` (as the request names it,
    /// with its port if any) and `path` (without the query), over TLS or not.
    pub fn admits(&self, https: bool, host: &str, port: u16, path: &str) -> bool {
        self.https == https && self.host.eq_ignore_ascii_case(host) && self.port == port && path_within(path, &self.path)
    }

    /// The address it names, when its host is one.
    pub fn address(&self) -> Option<IpAddr> {
        literal_address(&self.host)
    }

    /// Its site alone (`https://api.example.com`), for messages.
    pub fn site(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        let scheme = if self.https { "https" } else { "http" };
        match self.port == default {
            true => format!("{scheme}://{}", self.host),
            false => format!("{scheme}://{}:{}", self.host, self.port),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "/" => f.write_str(&self.site()),
            path => write!(f, "{}{path}", self.site()),
        }
    }
}

/// Whether `path` is `prefix` or beneath it. A path with a `.` or `..`
/// segment (or one spelled with `%2e`), which a server would resolve to
/// somewhere else, is beneath no prefix but `/`.
fn path_within(path: &str, prefix: &str) -> bool {
    if prefix == "/" {
        return path.starts_with('/');
    }
    let dotted = path.split('/').any(|segment| {
        let segment = segment.to_ascii_lowercase().replace("%2e", ".");
        segment == "." || segment == ".."
    });
    // A separator spelled otherwise (`%2f`, `%5c`, a backslash), a path
    // parameter (`..;/`, which some servers drop) or an encoded `%`, which
    // a server might decode into one of those.
    let lower = path.to_ascii_lowercase();
    let disguised = ["%2f", "%5c", "%25", "\\", ";"].iter().any(|spelling| lower.contains(spelling));
    if dotted || disguised {
        return false;
    }
    match prefix.strip_suffix('/') {
        Some(_) => path.starts_with(prefix),
        None => path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/')),
    }
}

/// Why a name's address is refused, unless the grant names the address
/// itself: every class of [`prompt_host_addresses`] (server-side request
/// forgery), or `None` for an address on the internet.
pub fn refused_class(address: IpAddr) -> Option<&'static str> {
    prompt_host_addresses::classify(address).map(AddressClass::name)
}

/// The part of a call's state its outgoing HTTP needs: what the pack was
/// given, the call's meter and deadline, and the descriptors it may hold.
pub struct CallHttp {
    meter: Arc<IoMeter>,
    descriptors: DescriptorHolder,
    /// When the call must be over; set as the call begins.
    deadline: Instant,
    /// Whether the call has begun (nothing is sent while an instance starts).
    begun: bool,
}

impl CallHttp {
    /// The outgoing HTTP of a call metered by `meter`, its connections
    /// counted among its plugin's `descriptors`.
    pub fn new(meter: Arc<IoMeter>, descriptors: DescriptorHolder, deadline: Instant) -> CallHttp {
        CallHttp { meter, descriptors, deadline, begun: false }
    }

    fn access(&self) -> &GrantedAccess {
        self.descriptors.access()
    }

    /// The call began at `begun` (or has not), and ends at `deadline`.
    pub fn set_call(&mut self, begun: bool, deadline: Instant) {
        self.begun = begun;
        self.deadline = deadline;
    }

    /// The origin that admits `request`, or the refusal (recorded on the meter).
    fn admitted(&self, request: &http::Request<WasiBody>) -> Result<(), Error> {
        let uri = request.uri();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let authority = uri.authority().map(|authority| authority.as_str()).unwrap_or_default();
        let host = uri.host().unwrap_or_default();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path();
        let admitted = !authority.contains('@')
            && self.access().origins.iter().any(|seen| seen.given.iter().any(|given| given.admits(https, host, port, path)));
        if admitted {
            return Ok(());
        }
        // What the pack asked to call, escaped: it is the pack's text.
        let url = format!("{}://{}{}", if https { "https" } else { "http" }, authority, path).escape_debug().to_string();
        let asked = self.access().origins.iter().find(|seen| seen.asked.admits(https, host, port, path)).map(|seen| seen.asked.clone());
        Err(self.refuse(GrantRefusal::OriginNotGranted { section: self.access().section.clone(), url, asked }))
    }

    fn refuse(&self, refusal: GrantRefusal) -> Error {
        self.meter.refuse(refusal);
        self.meter.denied();
        Error::HttpRequestDenied
    }
}

impl WasiHttpHooks for CallHttp {
    fn forbidden_header_filter(&mut self) -> wasmtime_wasi_http::ForbiddenHeaderFilter {
        Arc::new(|name| FORBIDDEN_REQUEST_HEADERS.contains(&name.as_str()))
    }

    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        1
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        OUTGOING_BODY_CHUNK
    }

    // A pack's failed requests are its own business: said to the pack, and
    // logged at debug, never as the host's warnings (the default hooks warn
    // at every one, which a pack could use to flood the log).
    fn p2_error_from_hyper(&mut self, error: &hyper::Error) -> wasmtime_wasi_http::p2::bindings::http::types::ErrorCode {
        tracing::debug!(%error, "a pack's HTTP request failed");
        wasmtime_wasi_http::p2::bindings::http::types::ErrorCode::HttpProtocolError
    }

    fn p2_error_from_connect(&mut self, error: &std::io::Error) -> wasmtime_wasi_http::p2::bindings::http::types::ErrorCode {
        tracing::debug!(%error, "a pack's HTTP connection failed");
        wasmtime_wasi_http::p2::bindings::http::types::ErrorCode::ConnectionRefused
    }

    fn p2_error_from_tls(&mut self, error: &std::io::Error) -> wasmtime_wasi_http::p2::bindings::http::types::ErrorCode {
        tracing::debug!(%error, "a pack's TLS handshake failed");
        wasmtime_wasi_http::p2::bindings::http::types::ErrorCode::TlsProtocolError
    }

    /// The host sets `host` itself, from the host and port it checked,
    /// never from the pack's authority as written.
    fn set_host_header(&mut self) -> bool {
        false
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _request_done: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Result<(http::Response<WasiBody>, Box<dyn Future<Output = Result<(), Error>> + Send>), Error>> + Send>
    {
        let checked = match self.begun {
            false => Err(Error::HttpRequestDenied),
            true => {
                self.admitted(&request).and_then(|()| self.meter.charge(Budget::HttpRequests, 1).map_err(|refusal| self.refuse(refusal)))
            }
        };
        let sending = Sending {
            plugin: self.access().plugin.clone(),
            meter: self.meter.clone(),
            descriptors: self.descriptors.clone(),
            deadline: tokio::time::Instant::from_std(self.deadline),
            options: options.unwrap_or_default(),
        };
        Box::new(async move {
            checked?;
            sending.send(request).await
        })
    }
}

/// One request on its way, with what it needs of its call.
struct Sending {
    plugin: String,
    meter: Arc<IoMeter>,
    descriptors: DescriptorHolder,
    deadline: tokio::time::Instant,
    options: RequestOptions,
}

/// The connection's own work (hyper's), which runs beside the response.
type Connection = Box<dyn Future<Output = Result<(), Error>> + Send>;

impl Sending {
    /// The earlier of the call's deadline and `timeout` from now.
    fn until(&self, timeout: Option<Duration>) -> tokio::time::Instant {
        timeout.map_or(self.deadline, |timeout| self.deadline.min(tokio::time::Instant::now() + timeout))
    }

    async fn send(self, mut request: http::Request<WasiBody>) -> Result<(http::Response<WasiBody>, Connection), Error> {
        let https = request.uri().scheme() == Some(&http::uri::Scheme::HTTPS);
        let host = request.uri().host().unwrap_or_default().to_string();
        let port = request.uri().port_u16().unwrap_or(if https { 443 } else { 80 });
        let address = self.address(&host, port).await?;
        // An origin that is an address was granted as such; a name was not.
        let by_name = literal_address(&host).is_none();
        // A name that resolves to one of this host's own addresses (its
        // public one, say) reaches this host's own services, past any
        // firewall: refused before anything is connected.
        if by_name && is_own_address(address.ip()) {
            return Err(self.refuse_address(&host, port, address.ip(), "this host's own"));
        }
        let held = self.descriptors.take().ok_or(Error::ConnectionLimitReached)?;
        let until = self.until(self.options.connect_timeout);
        let stream = match tokio::time::timeout_at(until, tokio::net::TcpStream::connect(address)).await {
            Ok(stream) => stream.map_err(Error::Connect)?,
            Err(_) => return Err(self.timed_out(Error::ConnectionTimeout)),
        };
        // The same, told by the connection itself, should the route lookup
        // have failed: a connection to itself leaves from the address it reaches.
        let reached_self = stream.local_addr().ok().map(|local| local.ip()) == Some(address.ip());
        if by_name && reached_self {
            return Err(self.refuse_address(&host, port, address.ip(), "this host's own"));
        }
        let _ = stream.set_nodelay(true);
        let mut builder = hyper::client::conn::http1::Builder::new();
        // hyper's buffer is no bound of its own (the head is counted as it
        // is read): room for a whole head and the start of the body that
        // may come in the same read, and no more per connection.
        builder.max_buf_size(MAX_RESPONSE_HEAD + (16 << 10)).max_headers(MAX_RESPONSE_HEADERS);
        let (sender, connection): (_, Connection) = match https {
            true => {
                let name = server_name(&host)?;
                let connector = tokio_rustls::TlsConnector::from(tls_config()?);
                let stream = tokio::time::timeout_at(until, connector.connect(name, stream))
                    .await
                    .map_err(|_| self.timed_out(Error::ConnectionTimeout))?
                    .map_err(tls_error)?;
                let (sender, connection) = tokio::time::timeout_at(until, builder.handshake(TokioIo::new(HeadLimited::new(stream))))
                    .await
                    .map_err(|_| Error::ConnectionTimeout)??;
                (sender, Box::new(async move { connection.await.map_err(response_error) }))
            }
            false => {
                let (sender, connection) = tokio::time::timeout_at(until, builder.handshake(TokioIo::new(HeadLimited::new(stream))))
                    .await
                    .map_err(|_| Error::ConnectionTimeout)??;
                (sender, Box::new(async move { connection.await.map_err(response_error) }))
            }
        };
        // `host` names what was checked (the pack's authority as written
        // might spell it otherwise); the request line names the path alone.
        let default = if https { 443 } else { 80 };
        let host_header = match port == default {
            true => host.clone(),
            false => format!("{host}:{port}"),
        };
        request
            .headers_mut()
            .insert(http::header::HOST, http::HeaderValue::from_str(&host_header).map_err(|_| Error::HttpRequestUriInvalid)?);
        let path = request.uri().path_and_query().map_or("/", |path| path.as_str()).to_string();
        *request.uri_mut() = http::Uri::builder().path_and_query(path.as_str()).build().map_err(|_| Error::HttpRequestUriInvalid)?;
        let head = request.method().as_str().len() + path.len() + fields_len(request.headers());
        self.charge(Budget::HttpSentBytes, head)?;
        let request =
            request.map(|body| Metered::new(body, self.meter.clone(), Budget::HttpSentBytes, &self.plugin, self.deadline).boxed_unsync());
        let (response, connection) = self.exchange(sender, connection, request).await?;
        let head = response.status().as_str().len() + fields_len(response.headers());
        self.charge(Budget::HttpReceivedBytes, head)?;
        let between = self.options.between_bytes_timeout;
        let response = response.map(|body| {
            let body = Timed::new(body.map_err(Error::from), between);
            Metered::new(body, self.meter.clone(), Budget::HttpReceivedBytes, &self.plugin, self.deadline).boxed_unsync()
        });
        let deadline = self.deadline;
        let connection: Connection = Box::new(async move {
            let _held = held;
            // Its end, whatever it is, reaches the pack through the body;
            // an error here would only be logged by wasmtime, as a warning.
            if let Ok(Err(error)) = tokio::time::timeout_at(deadline, Pin::from(connection)).await {
                tracing::debug!(%error, "a pack's HTTP connection ended");
            }
            Ok(())
        });
        Ok((response, connection))
    }

    /// Sends `request` and waits for the response's head, driving the
    /// connection meanwhile; the connection, if not done, to drive the body.
    async fn exchange(
        &self,
        mut sender: hyper::client::conn::http1::SendRequest<WasiBody>,
        connection: Connection,
        request: http::Request<WasiBody>,
    ) -> Result<(http::Response<hyper::body::Incoming>, Connection), Error> {
        let until = self.until(self.options.first_byte_timeout);
        let mut connection = Pin::from(connection);
        let mut done = false;
        let mut response = std::pin::pin!(sender.send_request(request));
        let answered = tokio::time::timeout_at(
            until,
            std::future::poll_fn(|cx| {
                if let Poll::Ready(result) = response.as_mut().poll(cx) {
                    return Poll::Ready(result.map_err(response_error));
                }
                if !done && let Poll::Ready(result) = connection.as_mut().poll(cx) {
                    done = true;
                    if let Err(error) = result {
                        return Poll::Ready(Err(error));
                    }
                    return response.as_mut().poll(cx).map_err(response_error);
                }
                Poll::Pending
            }),
        )
        .await
        .map_err(|_| self.timed_out(Error::ConnectionReadTimeout))??;
        let connection: Connection = match done {
            true => Box::new(async { Ok(()) }),
            false => Box::new(connection),
        };
        Ok((answered, connection))
    }

    /// The address to connect to for `host`: its own, when it is one; else
    /// the first it resolves to, once every address it resolves to is
    /// checked. A loopback, private, link-local or other special address is
    /// refused for a name: only an origin that names the address reaches it.
    async fn address(&self, host: &str, port: u16) -> Result<SocketAddr, Error> {
        if let Some(address) = literal_address(host) {
            return Ok(SocketAddr::new(address, port));
        }
        // The system resolver blocks a thread, which a deadline cannot stop:
        // at most MAX_LOOKUPS of them for the plugin, however many calls resolve.
        let lookups = self.descriptors.lookups().clone();
        let turn = tokio::time::timeout_at(self.deadline, lookups.acquire_owned()).await.map_err(|_| self.timed_out(Error::DnsTimeout))?;
        let turn = turn.map_err(|_| Error::DnsTimeout)?;
        let name = (host.to_string(), port);
        let lookup = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            std::net::ToSocketAddrs::to_socket_addrs(&name).map(Iterator::collect::<Vec<SocketAddr>>)
        });
        let addresses: Vec<SocketAddr> = match tokio::time::timeout_at(self.deadline, lookup).await {
            Err(_) => return Err(self.timed_out(Error::DnsTimeout)),
            Ok(Ok(Ok(addresses))) => addresses,
            Ok(_) => return Err(Error::DnsError { rcode: None, info_code: None }),
        };
        if let Some((address, class)) = addresses.iter().find_map(|address| refused_class(address.ip()).map(|class| (address.ip(), class)))
        {
            return Err(self.refuse_address(host, port, address, class));
        }
        addresses.first().copied().ok_or(Error::DestinationNotFound)
    }

    /// Ends the call: `host` reached `address`, of a class a granted name may not reach.
    fn refuse_address(&self, host: &str, port: u16, address: IpAddr, class: &'static str) -> Error {
        let refusal =
            GrantRefusal::AddressRefused { plugin: self.plugin.clone(), host: host.escape_debug().to_string(), port, address, class };
        self.meter.refuse(refusal);
        self.meter.denied();
        Error::DestinationIpProhibited
    }

    /// `error`, after a wait ended; one that ended at the call's deadline
    /// ends the call as the deadline does, whatever the pack makes of it.
    fn timed_out(&self, error: Error) -> Error {
        if tokio::time::Instant::now() >= self.deadline {
            self.meter.reach_deadline();
        }
        error
    }

    fn charge(&self, budget: Budget, amount: usize) -> Result<(), Error> {
        self.meter.charge(budget, amount as u64).map_err(|refusal| {
            self.meter.refuse(refusal);
            Error::HttpRequestDenied
        })
    }
}

/// What a failed exchange tells the pack: a head past [`MAX_RESPONSE_HEAD`],
/// as such.
fn response_error(error: hyper::Error) -> Error {
    match head::is_head_too_large(&error) {
        true => Error::HttpResponseHeaderSectionSize(u32::try_from(MAX_RESPONSE_HEAD).ok()),
        false => Error::from(error),
    }
}

/// Whether `address` is one of this host's own: the route to it leaves
/// from it, or a socket can be bound to it. The route alone misses a
/// secondary address (Linux routes to it from the primary one, as it
/// routes to 127.0.0.2 from 127.0.0.1); binding alone would take every
/// address for this host's where the system lets a socket bind to any
/// (`ip_nonlocal_bind`), so a bind counts only when one to a
/// documentation address of the same family, which is nobody's, fails.
/// Both are told by UDP sockets, which send nothing.
fn is_own_address(address: IpAddr) -> bool {
    // An IPv4 address written in IPv6 (`::ffff:a.b.c.d`) is an IPv4
    // address to the system, bound under IPv4's settings.
    let address = address.to_canonical();
    let any: SocketAddr = match address {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let local = std::net::UdpSocket::bind(any).and_then(|socket| {
        socket.connect((address, 9))?;
        socket.local_addr()
    });
    let routed_from_itself = local.is_ok_and(|local| local.ip() == address);
    let nobodys: IpAddr = match address {
        IpAddr::V4(_) => Ipv4Addr::new(192, 0, 2, 1).into(),
        IpAddr::V6(_) => Ipv6Addr::new(0x2001, 0x0db8, 0, 0, 0, 0, 0, 1).into(),
    };
    let binds = |address: IpAddr| std::net::UdpSocket::bind((address, 0)).is_ok();
    routed_from_itself || (binds(address) && !binds(nobodys))
}

/// The address `host` is, when it is one rather than a name (an IPv6 one
/// in brackets, as a URL writes it).
fn literal_address(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// The bytes of a head's fields as they cross the wire (`name: value\r\n`).
fn fields_len(headers: &http::HeaderMap) -> usize {
    headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum()
}

/// The name the server's certificate must carry.
fn server_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>, Error> {
    if let Some(address) = literal_address(host) {
        return Ok(rustls::pki_types::ServerName::from(address));
    }
    rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|_| Error::HttpRequestUriInvalid)
}

/// What a failed handshake tells the pack: a certificate that does not
/// verify, as such.
fn tls_error(error: std::io::Error) -> Error {
    let certificate = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|inner| matches!(inner, rustls::Error::InvalidCertificate(_)));
    match certificate {
        true => Error::TlsCertificateError,
        false => Error::Tls(error),
    }
}

/// The TLS of every granted origin: the system's roots, read once; no
/// client certificate; HTTP/1.1 alone.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err("the system has no trusted root certificates".to_string());
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        // No session shared between packs or tenants (a resumed session
        // would tell one when another called the same origin).
        config.resumption = rustls::client::Resumption::disabled();
        Ok(Arc::new(config))
    });
    config.clone().map_err(|why| Error::InternalError(Some(why)))
}

/// A body whose data frames count against a budget of the call, and end
/// at the call's deadline.
struct Metered<B> {
    inner: B,
    meter: Arc<IoMeter>,
    budget: Budget,
    plugin: String,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> Metered<B> {
    fn new(inner: B, meter: Arc<IoMeter>, budget: Budget, plugin: &str, deadline: tokio::time::Instant) -> Metered<B> {
        Metered { inner, meter, budget, plugin: plugin.to_string(), deadline: Box::pin(tokio::time::sleep_until(deadline)) }
    }
}

impl<B: Body<Data = Bytes, Error = Error> + Unpin> Body for Metered<B> {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.meter.reach_deadline();
            return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
        }
        let frame = std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if let Some(Ok(frame)) = &frame {
            let amount = frame.data_ref().map_or(0, Bytes::len) + frame.trailers_ref().map_or(0, fields_len);
            let amount = amount as u64;
            if let Err(refusal) = self.meter.charge(self.budget, amount) {
                tracing::debug!(plugin = %self.plugin.escape_debug(), "{refusal}");
                self.meter.refuse(refusal);
                return Poll::Ready(Some(Err(match self.budget {
                    Budget::HttpSentBytes => Error::HttpRequestBodySize(None),
                    _ => Error::HttpResponseBodySize(None),
                })));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that fails when no frame comes for `between` (the
/// request's option; the call's deadline still ends it otherwise).
struct Timed<B> {
    inner: B,
    between: Option<Duration>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B> Timed<B> {
    fn new(inner: B, between: Option<Duration>) -> Timed<B> {
        Timed { inner, between, timer: None }
    }
}

impl<B: Body<Data = Bytes, Error = Error> + Unpin> Body for Timed<B> {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.timer = None;
                Poll::Ready(frame)
            }
            Poll::Pending => {
                let Some(between) = this.between else { return Poll::Pending };
                let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(between)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_admits_its_site_and_paths_beneath_its_prefix() {
        let origin = Origin::parse("https://API.example.com/v1/").unwrap();
        assert_eq!(origin.to_string(), "https://api.example.com/v1/");
        assert!(origin.admits(true, "api.example.com", 443, "/v1/users"));
        assert!(!origin.admits(false, "api.example.com", 443, "/v1/users"), "another scheme");
        assert!(!origin.admits(true, "api.example.com", 8443, "/v1/users"), "another port");
        assert!(!origin.admits(true, "evil.example.com", 443, "/v1/users"), "another host");
        assert!(!origin.admits(true, "api.example.com", 443, "/v2/users"));
        assert!(!origin.admits(true, "api.example.com", 443, "/v1/../admin"), "a dot segment");
        assert!(!origin.admits(true, "api.example.com", 443, "/v1/%2E%2e/admin"), "an encoded dot segment");
        assert!(!origin.admits(true, "api.example.com", 443, "/v1/..\\admin"));
        for disguised in ["/v1/..;/admin", "/v1/%2e%2e%2fadmin", "/v1/..%2Fadmin", "/v1/..%5Cadmin", "/v1/%252e%252e/admin"] {
            assert!(!origin.admits(true, "api.example.com", 443, disguised), "{disguised}");
        }
        assert!(
            Origin::parse("https://api.example.com").unwrap().admits(true, "api.example.com", 443, "/a;b/%2F"),
            "under / anything goes"
        );
        let exact = Origin::parse("http://127.0.0.1:8080/api").unwrap();
        assert!(exact.admits(false, "127.0.0.1", 8080, "/api"));
        assert!(exact.admits(false, "127.0.0.1", 8080, "/api/x"));
        assert!(!exact.admits(false, "127.0.0.1", 8080, "/apix"));
        assert_eq!(exact.address(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(Origin::parse("http://[::1]:81").unwrap().address(), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(Origin::parse("https://h.example").unwrap().to_string(), "https://h.example");
        for (text, why) in [
            ("ftp://h.example", "its scheme is neither https nor http"),
            ("https://user@h.example", "it names a user"),
            ("https://h.example/?q", "it has a query or a fragment"),
        ] {
            assert_eq!(Origin::parse(text).unwrap_err(), why);
        }
    }

    #[test]
    fn what_a_pack_asked_for_and_was_granted_overlaps_to_the_narrower() {
        let asked = Origin::parse("https://api.example.com").unwrap();
        let granted = Origin::parse("https://api.example.com/v1/").unwrap();
        assert_eq!(asked.overlap(&granted), Some(granted.clone()));
        assert_eq!(granted.overlap(&asked), Some(granted.clone()));
        assert_eq!(Origin::parse("https://api.example.com/v2/").unwrap().overlap(&granted), None);
        assert_eq!(Origin::parse("http://api.example.com").unwrap().overlap(&granted), None);
    }

    #[test]
    fn every_special_address_is_refused_for_a_name() {
        let refused = |text: &str| refused_class(text.parse().unwrap());
        for (address, class) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("169.254.169.254", "cloud metadata"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("fd00:ec2::254", "cloud metadata"),
            ("100.100.100.200", "cloud metadata"),
            ("169.254.1.1", "link-local"),
            ("fe80::1", "link-local"),
            ("10.0.0.1", "private"),
            ("172.16.5.4", "private"),
            ("192.168.1.1", "private"),
            ("fc00::1", "private"),
            ("64:ff9b::a00:1", "private"),
            ("2002:c0a8:101::1", "private"),
            ("::10.0.0.1", "private"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("2001::1", "tunnel (Teredo)"),
            ("168.63.129.16", "cloud metadata"),
            ("64:ff9b:1::a00:1", "private"),
            ("::ffff:0:a00:1", "private"),
            ("192.88.99.1", "reserved"),
            ("198.18.0.1", "benchmarking"),
            ("2001:2::1", "benchmarking"),
            ("2001:2:0:ffff::1", "benchmarking"),
            ("64:ff9b::a9fe:a9fe", "cloud metadata"),
            ("64:ff9b::a83f:8110", "cloud metadata"),
            ("2002:a9fe:a9fe::1", "cloud metadata"),
            ("::169.254.169.254", "cloud metadata"),
        ] {
            assert_eq!(refused(address), Some(class), "{address}");
        }
        for address in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8", "172.32.0.1", "2001:3::1"] {
            assert_eq!(refused(address), None, "{address}");
        }
    }

    /// The host's own addresses are told before connecting (no test over the
    /// binary can show it: a name that resolves to this machine's public
    /// address would have to be made, and packets stay on loopback).
    #[test]
    fn this_hosts_own_addresses_are_told_without_connecting() {
        assert!(is_own_address(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        // Routed to from 127.0.0.1, as a secondary address is from the
        // primary one: the route alone took it for another host's.
        assert!(is_own_address("127.0.0.2".parse().unwrap()));
        assert!(is_own_address("::ffff:127.0.0.2".parse().unwrap()));
        // A documentation address is nobody's (with a route or without).
        assert!(!is_own_address("192.0.2.1".parse().unwrap()));
        // The address this machine would send from, if it has a route out.
        let outward = std::net::UdpSocket::bind("0.0.0.0:0").and_then(|socket| {
            socket.connect("192.0.2.1:9")?;
            socket.local_addr()
        });
        if let Ok(outward) = outward {
            assert!(is_own_address(outward.ip()), "{outward}");
        }
    }
}
