//! The front door's property, stated once: whatever a client sends, the
//! stdio line decoder, the HTTP body reader and the HTTP request path never
//! panic, answer every message that carries an id exactly once, with that
//! id, and bound what they answer.
//!
//! The proptests (`tests/wire_properties.rs`, in CI) and the cargo-fuzz
//! targets (`host/fuzz`, the long run) both include this file with
//! `#[path = "..."] mod front_door;` and check with it; the checks panic on
//! a failure (proptest catches a panic as a failing case, libFuzzer as a
//! crash).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use prompt_host::transport::malformed::http_body;
use prompt_host::transport::stdio::{Incoming, decode_lines};
use prompt_host_kernel::validate::MAX_ERROR_MESSAGE_BYTES;
use rmcp::model::{JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use serde_json::Value;

/// The most an answer of the transport's own (a message it cannot parse, a
/// line over the limit) may take on the wire, besides its id: a reason cut
/// by `validate::error_message` at [`MAX_ERROR_MESSAGE_BYTES`] of printable
/// text, which JSON writes in at most twice its bytes, and the envelope and
/// the cut's marker.
pub const ANSWER_BYTES: usize = 2 * MAX_ERROR_MESSAGE_BYTES + 512;

/// The most an HTTP response body may take, besides the request's id: a
/// JSON-RPC answer of [`ANSWER_BYTES`] (or an answer of the handler's, with
/// no plugins), or a plain refusal quoting a header the client sent, cut at
/// [`MAX_ERROR_MESSAGE_BYTES`], at most twice, once escaped again (at most
/// twice its bytes).
pub const RESPONSE_BYTES: usize = 3 * MAX_ERROR_MESSAGE_BYTES + 1024;

/// The (line limit, read size) pairs every fuzzed input is decoded under: the
/// served default and a whole read buffer; a limit in the size of a reason,
/// reads of an odd size; a limit smaller than most messages, byte by byte.
pub const STDIO_SHAPES: [(usize, usize); 3] = [(1 << 20, 4096), (4096, 7), (64, 1)];

/// The most `<<N*TEXT>>` templates may expand an input to: the committed
/// corpus's deepest message is 2 MB; a template a fuzzer mutated to ask
/// for more is left as it is.
pub const EXPANDED_BYTES: usize = 4 << 20;

/// What a line (stdio) or a body (HTTP) must get.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    /// It carries an `id` member (usable or not): exactly one answer
    /// (stdio: one item, a request for rmcp or the transport's own answer).
    pub answered: bool,
    /// The id its answer carries, where that is known.
    pub id: Carries,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Carries {
    /// Whatever id, or none.
    Any,
    /// This id.
    Id(RequestId),
    /// No id: one cut through is not read.
    NoId,
}

impl Expect {
    pub const NOTHING: Expect = Expect { answered: false, id: Carries::Any };

    /// What a line is known to need from what serde_json reads of it alone:
    /// a JSON object with a `method` and an `id` that is a request id is
    /// answered with that id (within `limit`; past it, only answered when
    /// the id is read from the line's head or its end, which other checks
    /// cover).
    pub fn from_json(line: &[u8], limit: usize) -> Expect {
        let request_id = serde_json::from_slice::<Value>(line)
            .ok()
            .filter(|value| value.get("method").is_some())
            .and_then(|value| serde_json::from_value::<RequestId>(value.get("id")?.clone()).ok());
        match request_id {
            Some(id) if line.len() <= limit => Expect { answered: true, id: Carries::Id(id) },
            _ => Expect::NOTHING,
        }
    }

    fn check(&self, what: &str, answered: Option<Option<RequestId>>, input: &[u8]) {
        let shown = || String::from_utf8_lossy(&input[..input.len().min(512)]).into_owned();
        if self.answered {
            assert!(answered.is_some(), "{what}: a message with an id got no answer: {:?}", shown());
        }
        match (&self.id, answered) {
            (Carries::Id(id), Some(carried)) => assert_eq!(carried.as_ref(), Some(id), "{what}: {:?}", shown()),
            (Carries::NoId, Some(carried)) => assert_eq!(carried, None, "{what}: a cut id was read: {:?}", shown()),
            _ => {}
        }
    }
}

/// The id a decoded item answers or carries, if any.
pub fn item_id(item: &Incoming) -> Option<RequestId> {
    match item {
        Incoming::Message(JsonRpcMessage::Request(request)) => Some(request.id.clone()),
        Incoming::Message(_) => None,
        Incoming::Refused(JsonRpcMessage::Error(error)) => error.id.clone(),
        Incoming::Refused(other) => panic!("the transport answered with no error: {other:?}"),
    }
}

pub fn id_bytes(id: Option<&RequestId>) -> usize {
    id.map_or(0, |id| serde_json::to_vec(id).expect("an id serializes").len())
}

/// An answer of the transport's own is an error, of at most
/// [`ANSWER_BYTES`] besides its id.
pub fn assert_bounded(answer: &ServerJsonRpcMessage) {
    let JsonRpcMessage::Error(error) = answer else { panic!("the transport answered with no error: {answer:?}") };
    let bytes = serde_json::to_vec(answer).expect("an answer serializes").len();
    assert!(bytes <= ANSWER_BYTES + id_bytes(error.id.as_ref()), "an answer of {bytes} bytes");
}

/// `<<N*TEXT>>` replaced by TEXT repeated N times, as long as the whole
/// stays within [`EXPANDED_BYTES`]; anything else (no `>>`, no count, bytes
/// that are not UTF-8, too much) is left as it is.
pub fn expand(template: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.windows(2).position(|window| window == b"<<") {
        out.extend_from_slice(&rest[..start]);
        rest = &rest[start..];
        let repeated = rest.windows(2).position(|window| window == b">>").and_then(|end| {
            let (count, text) = std::str::from_utf8(&rest[2..end]).ok()?.split_once('*')?;
            let count: usize = count.parse().ok()?;
            let grown = count.checked_mul(text.len()).filter(|&grown| out.len() + grown <= EXPANDED_BYTES)?;
            Some((end, text, grown))
        });
        match repeated {
            Some((end, text, grown)) => {
                out.reserve(grown);
                for _ in 0..grown / text.len().max(1) {
                    out.extend_from_slice(text.as_bytes());
                }
                rest = &rest[end + 2..];
            }
            None => {
                out.extend_from_slice(b"<<");
                rest = &rest[2..];
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

/// Decodes `input` as the stdio transport decodes stdin, with lines of at
/// most `limit` bytes arriving in reads of `read` bytes: it holds no more
/// than a line's limit and one read, gives at most one item per line that
/// is not blank, and bounds each answer of its own. Returns the items.
pub fn stdio_stream(limit: usize, read: usize, input: &[u8]) -> Vec<Incoming> {
    let (items, held) = decode_lines(limit, input, read).expect("decoding never fails on bytes alone");
    assert!(held <= limit + 1 + read, "{held} bytes held for a limit of {limit}");
    let lines = input.split(|&byte| byte == b'\n').filter(|line| !line.trim_ascii().is_empty()).count();
    assert!(items.len() <= lines, "{} items for {lines} lines", items.len());
    for item in &items {
        if let Incoming::Refused(answer) = item {
            assert_bounded(answer);
        }
    }
    items
}

/// Decodes one line alone (its newline added) under `limit`: at most one
/// item, as `expect` says, its answer bounded. Returns the items.
pub fn stdio_line(limit: usize, line: &[u8], expect: &Expect) -> Vec<Incoming> {
    let input = [line, b"\n"].concat();
    let (items, _) = decode_lines(limit, &input, input.len()).expect("decoding never fails on bytes alone");
    assert!(items.len() <= 1, "one line gave {} items", items.len());
    for item in &items {
        if let Incoming::Refused(answer) = item {
            assert_bounded(answer);
        }
    }
    expect.check("stdio", items.first().map(item_id), line);
    items
}

/// Reads one HTTP request body as the HTTP transport reads it: a message
/// for rmcp, or the transport's own answer (bounded), or nothing for a
/// client's response; as `expect` says.
pub fn http_message(body: &[u8], expect: &Expect) {
    let answered = match http_body(body) {
        Ok(JsonRpcMessage::Request(request)) => Some(Some(request.id)),
        // A notification, or a client's response: nothing to answer.
        Ok(_) | Err(None) => None,
        Err(Some(answer)) => {
            assert_bounded(&answer);
            let JsonRpcMessage::Error(error) = answer else { unreachable!("assert_bounded passed an error only") };
            Some(error.id)
        }
    };
    expect.check("http body", answered, body);
}

/// The id the framed lines carry.
pub const FRAMED_ID: RequestId = RequestId::Number(7);

/// `params` (its newlines removed) framed as the `params` of a request of
/// id 7, the id first and then the id last, each with what it must get.
/// Both are answered exactly once, whether or not `params` parse. The id
/// first is read before anything `params` can break; the id last when
/// `params` are a JSON value (then, past the limit, from the line's end).
/// Unless `params` could write a top-level `id` of their own (they hold
/// `id`, or an escape that could spell it).
pub fn framed(params: &[u8]) -> [(Vec<u8>, Expect); 2] {
    let params: Vec<u8> = params.iter().copied().filter(|&byte| byte != b'\n').collect();
    let own_id = params.windows(2).any(|window| window == b"id") || params.contains(&b'\\');
    let is_value = serde_json::from_slice::<Value>(&params).is_ok();
    let first = [br#"{"jsonrpc":"2.0","id":7,"method":"x","params":"#.as_slice(), &params, b"}"].concat();
    let last = [br#"{"jsonrpc":"2.0","method":"x","params":"#.as_slice(), &params, br#","id":7}"#].concat();
    let with_id = |known: bool| Expect { answered: true, id: if known { Carries::Id(FRAMED_ID) } else { Carries::Any } };
    [(first, with_id(!own_id)), (last, with_id(!own_id && is_value))]
}

/// The whole stdio property for one fuzzed input, its templates expanded:
/// the input as a stream under each of [`STDIO_SHAPES`], each of its lines
/// alone (answered with its id when serde_json reads one), and the input
/// framed as the params of a request whose id is known ([`framed`]).
pub fn stdio_input(input: &[u8]) {
    let input = expand(input);
    for (limit, read) in STDIO_SHAPES {
        stdio_stream(limit, read, &input);
        for line in input.split(|&byte| byte == b'\n') {
            stdio_line(limit, line, &Expect::from_json(line, limit));
        }
        for (line, expect) in framed(&input) {
            stdio_line(limit, &line, &expect);
        }
    }
}

/// The whole HTTP body property for one fuzzed input, its templates
/// expanded: the input as a body, and framed ([`framed`]).
pub fn http_input(input: &[u8]) {
    let input = expand(input);
    http_message(&input, &Expect::from_json(&input, usize::MAX));
    for (body, expect) in framed(&input) {
        http_message(&body, &expect);
    }
}

// The HTTP request path, headers and body, over a real connection to the
// real front (hyper, the gate, rmcp's service, the handler with no plugins),
// served in this process on loopback.

/// The bearer token the front is served with.
pub const TOKEN: &str = "front-door-token";

/// Stands, in a header's value, for the session the front keeps open.
pub const SESSION: &str = "$session";

/// The protocol revision the kept session speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long a response may take to end, on a machine busy with other work.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The front, served once per process, and the session it keeps open.
pub struct Front {
    addr: SocketAddr,
    /// One session per thread: requests of one id in flight at once on one
    /// session would be a client's error.
    sessions: Mutex<HashMap<ThreadId, String>>,
    _runtime: tokio::runtime::Runtime,
}

impl Front {
    /// The front of this process, served on first use.
    pub fn get() -> &'static Front {
        static FRONT: OnceLock<Front> = OnceLock::new();
        FRONT.get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
            let addr = runtime.block_on(async {
                let mut config = prompt_host::transport::http::HttpConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)));
                config.auth_token = Some(TOKEN.to_string());
                config.body_read_timeout = Duration::from_secs(5);
                // Every expanded body is read whole: a refusal before the
                // body is read (413) would reset the connection under the
                // client's feet, and the 413 says nothing of the client's.
                config.max_request_bytes = 2 * EXPANDED_BYTES;
                let listener = prompt_host::transport::http::HttpListener::bind(config).await.expect("binding loopback");
                let addr = listener.local_addrs()[0];
                let registry = Arc::new(prompt_host::registry::Registry::new(Vec::new()));
                let handler = prompt_host::handler::PromptServer::new(registry, prompt_host::catalog::DEFAULT_PAGE_SIZE);
                // Served until the process ends.
                std::mem::forget(listener.serve(handler));
                addr
            });
            Front { addr, sessions: Mutex::default(), _runtime: runtime }
        })
    }

    /// This thread's session kept open, opened anew if a request closed it.
    fn session(&self) -> String {
        let kept = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&std::thread::current().id()).cloned();
        kept.unwrap_or_else(|| {
            let session = self.open_session();
            self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(std::thread::current().id(), session.clone());
            session
        })
    }

    fn forget_session(&self) {
        self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&std::thread::current().id());
    }

    fn open_session(&self) -> String {
        let initialize = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"front-door","version":"1"}}}}}}"#
        );
        let response = self.exchange(&HttpRequest::post(initialize.into_bytes()).without(SESSION_HEADER));
        assert_eq!(response.status, 200, "initialize: {response:?}");
        let session = response.header(SESSION_HEADER).expect("initialize opens a session").to_string();
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        let response = self.exchange(&HttpRequest::post(initialized).with(SESSION_HEADER, &session));
        assert_eq!(response.status, 202, "notifications/initialized: {response:?}");
        session
    }

    /// Sends `request` on a connection of its own and reads the one
    /// response, whole; of a stream that stays open (a session's GET,
    /// `subscriptions/listen`), what comes within [`STREAM_LOOK`].
    fn exchange(&self, request: &HttpRequest) -> HttpResponse {
        let streaming = request.opens_stream();
        let wait = if streaming { STREAM_LOOK } else { RESPONSE_TIMEOUT };
        let mut stream = TcpStream::connect(self.addr).expect("connecting to the front");
        stream.set_read_timeout(Some(wait)).expect("a timeout");
        // The front may refuse a request before reading it whole and close:
        // what it answered is read all the same.
        let _ = stream.write_all(&request.to_bytes());
        let started = Instant::now();
        let mut received = Vec::new();
        let mut buffer = [0; 16 << 10];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => received.extend_from_slice(&buffer[..read]),
                Err(error) if streaming && matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => break,
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(error) => panic!("no response within {:?}: {error} ({request:?})", started.elapsed()),
            }
            if streaming && started.elapsed() >= wait {
                break;
            }
        }
        HttpResponse::parse(&received, streaming).unwrap_or_else(|| {
            panic!("no whole response: {:?} ({request:?})", String::from_utf8_lossy(&received[..received.len().min(512)]))
        })
    }
}

/// How long a stream that stays open is read.
const STREAM_LOOK: Duration = Duration::from_millis(500);

const SESSION_HEADER: &str = "mcp-session-id";

/// Headers this harness frames the request with itself, which a fuzzed
/// request may not set: the connection's one request ends where its body
/// does.
const FRAMING_HEADERS: &[&str] = &["content-length", "transfer-encoding", "connection", "expect", "upgrade", "te", "trailer", "keep-alive"];

/// One HTTP request to `/mcp`, or another path.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// Names in lower case, each once.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A POST to `/mcp` as a client of the kept session sends it.
    pub fn post(body: Vec<u8>) -> HttpRequest {
        let bearer = format!("Bearer {TOKEN}");
        let headers = [
            ("host", "localhost".as_bytes()),
            ("accept", b"application/json, text/event-stream"),
            ("content-type", b"application/json"),
            ("authorization", bearer.as_bytes()),
            ("mcp-protocol-version", PROTOCOL_VERSION.as_bytes()),
            (SESSION_HEADER, SESSION.as_bytes()),
        ];
        HttpRequest {
            method: "POST".into(),
            path: "/mcp".into(),
            headers: headers.into_iter().map(|(name, value)| (name.to_string(), value.to_vec())).collect(),
            body,
        }
    }

    /// The request with header `name` set to `value` (a header a
    /// request may not carry, or one hyper would refuse, is left out).
    pub fn with(mut self, name: &str, value: impl AsRef<[u8]>) -> HttpRequest {
        let name = name.to_ascii_lowercase();
        let value = value.as_ref();
        let valid = hyper::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && hyper::header::HeaderValue::from_bytes(value).is_ok()
            && !FRAMING_HEADERS.contains(&name.as_str());
        if valid {
            self.headers.retain(|(kept, _)| *kept != name);
            self.headers.push((name, value.to_vec()));
        }
        self
    }

    pub fn without(mut self, name: &str) -> HttpRequest {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(kept, _)| *kept != name);
        self
    }

    /// The request a fuzzed input stands for: the input is a body, sent as a
    /// client of the kept session sends it; or, where it holds a blank line
    /// (`\n\n`), what is before says how the request differs and what is
    /// after is the body. Each line before is `METHOD [PATH]` (no colon),
    /// `-NAME` (without the header NAME) or `NAME: VALUE`. A value of
    /// `$session` is the kept session's id. Templates are expanded in the
    /// body.
    pub fn from_input(input: &[u8]) -> HttpRequest {
        let (head, body) = match input.windows(2).position(|window| window == b"\n\n") {
            Some(at) => (&input[..at], &input[at + 2..]),
            None => (&b""[..], input),
        };
        let mut request = HttpRequest::post(expand(body));
        for line in head.split(|&byte| byte == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(name) = line.strip_prefix(b"-") {
                request = request.without(&String::from_utf8_lossy(name));
            } else if let Some(colon) = line.iter().position(|&byte| byte == b':') {
                let value = line[colon + 1..].trim_ascii();
                request = request.with(&String::from_utf8_lossy(&line[..colon]), value);
            } else if let Ok(line) = std::str::from_utf8(line) {
                let mut words = line.split(' ');
                let method = words.next().unwrap_or_default();
                if hyper::Method::from_bytes(method.as_bytes()).is_ok() && !method.is_empty() {
                    request.method = method.to_string();
                }
                if let Some(path) = words.next().filter(|path| path.starts_with('/') && path.parse::<hyper::Uri>().is_ok()) {
                    request.path = path.to_string();
                }
            }
        }
        request
    }

    /// Whether the request may open a stream that stays open: a GET (a
    /// session's stream), or a body that mentions `subscriptions/listen`.
    fn opens_stream(&self) -> bool {
        self.method == "GET" || self.body.windows(b"listen".len()).any(|window| window == b"listen")
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = format!("{} {} HTTP/1.1\r\n", self.method, self.path).into_bytes();
        for (name, value) in &self.headers {
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(format!("content-length: {}\r\nconnection: close\r\n\r\n", self.body.len()).as_bytes());
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// One HTTP response, its body de-chunked.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(kept, _)| kept.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The response `received` holds, if it holds one whole (or its head
    /// and what came of its body, when it is `cut`: a stream that stays
    /// open); it panics if anything follows it (a second response).
    fn parse(received: &[u8], cut: bool) -> Option<HttpResponse> {
        let head_end = received.windows(4).position(|window| window == b"\r\n\r\n")?;
        let head = std::str::from_utf8(&received[..head_end]).expect("a response head is text");
        let mut lines = head.split("\r\n");
        let status_line = lines.next()?;
        let status: u16 = status_line.split(' ').nth(1)?.parse().expect("a status code");
        assert!(status >= 200, "an interim response: {status_line}");
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
            .collect();
        let rest = &received[head_end + 4..];
        let mut response = HttpResponse { status, headers, body: Vec::new() };
        let left: &[u8] = if response.header("transfer-encoding").is_some_and(|coding| coding.eq_ignore_ascii_case("chunked")) {
            let mut rest = rest;
            loop {
                let Some(line_end) = rest.windows(2).position(|window| window == b"\r\n") else {
                    return cut.then_some(response);
                };
                let size = std::str::from_utf8(&rest[..line_end]).ok()?.split(';').next()?.trim();
                let size = usize::from_str_radix(size, 16).expect("a chunk size");
                rest = &rest[line_end + 2..];
                if size == 0 {
                    // No trailers are sent.
                    break rest.strip_prefix(b"\r\n")?;
                }
                if rest.len() < size + 2 {
                    response.body.extend_from_slice(&rest[..size.min(rest.len())]);
                    return cut.then_some(response);
                }
                response.body.extend_from_slice(&rest[..size]);
                rest = &rest[size + 2..];
            }
        } else if let Some(length) = response.header("content-length") {
            let length: usize = length.parse().expect("a content length");
            if rest.len() < length {
                return None;
            }
            // (A stream is chunked: its length is not known ahead.)
            response.body = rest[..length].to_vec();
            &rest[length..]
        } else {
            response.body = rest.to_vec();
            &[]
        };
        assert!(left.is_empty(), "bytes after the response: {:?}", String::from_utf8_lossy(left));
        Some(response)
    }

    /// The JSON-RPC messages of the body: one (JSON), or each event's data
    /// (an event stream); none for any other body.
    fn messages(&self) -> Vec<Value> {
        let content_type = self.header("content-type").unwrap_or_default();
        if content_type.starts_with("application/json") {
            return vec![serde_json::from_slice(&self.body).expect("a JSON body is JSON")];
        }
        if content_type.starts_with("text/event-stream") {
            let text = String::from_utf8_lossy(&self.body);
            return text
                .split("\n\n")
                .filter_map(|event| {
                    let data: Vec<&str> =
                        event.lines().filter_map(|line| line.strip_prefix("data:")).map(|data| data.trim_start()).collect();
                    (!data.is_empty() && !data.concat().is_empty())
                        .then(|| serde_json::from_str(&data.join("\n")).expect("an event's data is JSON"))
                })
                .collect();
        }
        Vec::new()
    }
}

/// Sends `request` to the front and checks the response: exactly one, its
/// body bounded; and when the body is a request with an id and the status
/// is not a plain HTTP refusal (4xx or 5xx without JSON), exactly one
/// JSON-RPC answer, as `expect` says. Returns the response.
pub fn http_request(request: HttpRequest, expect: &Expect) -> HttpResponse {
    let front = Front::get();
    let mut request = request;
    let session = request.headers.iter().any(|(_, value)| value == SESSION.as_bytes()).then(|| front.session());
    for (_, value) in &mut request.headers {
        if *value == SESSION.as_bytes() {
            *value = session.clone().expect("the session was opened").into_bytes();
        }
    }
    let response = front.exchange(&request);
    let request_id = match &expect.id {
        Carries::Id(id) => Some(id),
        Carries::Any | Carries::NoId => None,
    };
    let messages = response.messages();
    let answers: Vec<&Value> = messages.iter().filter(|message| message.get("method").is_none()).collect();
    // An answer echoes the id the transport read from the body, where the
    // property could not know it (a body serde_json refuses): the client's
    // own bytes, never more of them than it sent. The bound is then the
    // larger of the two ids.
    let echoed = answers
        .iter()
        .filter_map(|answer| serde_json::from_value::<RequestId>(answer["id"].clone()).ok())
        .map(|id| id_bytes(Some(&id)))
        .max()
        .unwrap_or(0);
    assert!(echoed <= request.body.len(), "an answer's id of {echoed} bytes to a body of {}: {response:?}", request.body.len());
    let bound = RESPONSE_BYTES + 2 * id_bytes(request_id).max(echoed);
    if !request.opens_stream() {
        assert!(response.body.len() <= bound, "a response body of {} bytes: {response:?}", response.body.len());
    }
    let refused = response.status >= 400 && messages.is_empty();
    if expect.answered && request.method == "POST" && !refused && !request.opens_stream() {
        assert_eq!(answers.len(), 1, "one answer to a request with an id: {request:?} {response:?}");
        let carried = serde_json::from_value::<Option<RequestId>>(answers[0]["id"].clone()).ok().flatten();
        expect.check("http request", Some(carried), &request.body);
    }
    for answer in answers {
        if answer.get("error").is_some() {
            let bytes = serde_json::to_vec(answer).expect("JSON").len();
            let id = serde_json::from_value::<RequestId>(answer["id"].clone()).ok();
            assert!(bytes <= ANSWER_BYTES + id_bytes(id.as_ref()), "an error of {bytes} bytes: {answer}");
        }
    }
    // A DELETE of the kept session ends it: the next request opens another.
    if request.method == "DELETE" && response.status < 300 && session.is_some() {
        front.forget_session();
    }
    // A session a fuzzed initialize opened is closed again, lest sessions
    // fill up.
    if let Some(opened) = response.header(SESSION_HEADER).filter(|opened| Some(*opened) != session.as_deref()) {
        front.exchange(&HttpRequest {
            method: "DELETE".into(),
            body: Vec::new(),
            ..HttpRequest::post(Vec::new()).with(SESSION_HEADER, opened)
        });
    }
    response
}

/// The whole HTTP request property for one fuzzed input
/// ([`HttpRequest::from_input`]): the request as the input says, and its
/// body framed ([`framed`]) with the same headers.
pub fn http_request_input(input: &[u8]) {
    let request = HttpRequest::from_input(input);
    let expect = Expect::from_json(&request.body, usize::MAX);
    for (body, expect) in framed(&request.body) {
        http_request(HttpRequest { body, ..request.clone() }, &expect);
    }
    http_request(request, &expect);
}
