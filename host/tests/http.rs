//! The Streamable HTTP transport under abuse, over the real binary and raw
//! HTTP/1.1: descriptor exhaustion, connection and session caps, stalled
//! bodies, oversized bodies, and option validation.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for the server before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

mod support;

const BINARY: &str = env!("CARGO_BIN_EXE_prompt-host");

/// A running `prompt-host serve --http 127.0.0.1:0`, serving the bundled packs.
struct HttpHost {
    child: Child,
    stderr: Arc<Mutex<String>>,
    addr: SocketAddr,
}

impl HttpHost {
    /// Starts the server with these extra options.
    fn start(options: &[&str]) -> HttpHost {
        let mut command = Command::new(BINARY);
        command.args(["serve", "--http", "127.0.0.1:0"]).args(options);
        HttpHost::spawn(command)
    }

    /// Starts the server with its soft and hard descriptor limits both `limit`.
    fn start_with_descriptor_limit(limit: u32) -> HttpHost {
        let mut command = Command::new("sh");
        command.args(["-c", &format!("ulimit -n {limit} && exec \"$0\" serve --http 127.0.0.1:0"), BINARY]);
        HttpHost::spawn(command)
    }

    fn spawn(command: Command) -> HttpHost {
        let (child, stderr, addr) = support::start_http(command, "info,rmcp=warn,prompt_host::handler=debug");
        HttpHost { child, stderr, addr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn wait_for_stderr(&self, text: &str) -> String {
        support::wait_for_text(&self.stderr, text, 1)
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
    }

    /// Sends `initialize` on a new connection and returns the answer.
    fn initialize(&self) -> Answer {
        send(&mut self.connect(), &initialize_request(self.addr))
    }

    /// Ends a session with DELETE.
    fn delete(&self, session: &str) -> Answer {
        let request = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Connection: close\r\n\r\n",
            self.addr
        );
        send(&mut self.connect(), &request)
    }
}

impl Drop for HttpHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP response, read until the server closed the connection.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// Writes `request` and reads the response until the server closes.
fn send(stream: &mut TcpStream, request: &str) -> Answer {
    stream.write_all(request.as_bytes()).unwrap();
    read_answer(stream)
}

fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("the server neither answered nor closed");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP response: {text:?}"));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("no status: {head}"));
    Answer { status, head: head.to_string(), body: body.to_string() }
}

fn post(addr: SocketAddr, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn initialize_request(addr: SocketAddr) -> String {
    post(
        addr,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http-tests","version":"1.0.0"}}}"#,
    )
}

/// Asserts that `answer` is a successful initialize, and returns its session id.
fn assert_initialized(answer: &Answer) -> String {
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    assert!(answer.body.contains(r#""serverInfo":{"name":"prompt-host""#), "{}", answer.body);
    answer.header("mcp-session-id").expect("no session id").to_string()
}

#[test]
fn running_out_of_descriptors_backs_off_with_few_warnings_and_recovers() {
    let host = HttpHost::start_with_descriptor_limit(64);
    let began = Instant::now();
    let idle: Vec<TcpStream> = (0..80).map(|_| host.connect()).collect();
    host.wait_for_stderr("Too many open files");
    std::thread::sleep(Duration::from_secs(2));
    let warnings = host.stderr().matches("Too many open files").count();
    // At most one warning per second, so at most one more than the whole
    // seconds since the first connection (the first failure came after it).
    let bound = began.elapsed().as_secs() as usize + 1;
    assert!(warnings <= bound, "{warnings} warnings in {:?}:\n{}", began.elapsed(), host.stderr());
    assert!(host.stderr().contains("accepting an HTTP connection failed: Too many open files (os error 24); retrying in"));

    drop(idle);
    assert_initialized(&host.initialize());
}

#[test]
fn connections_past_the_cap_shed_the_oldest_idle_one_or_wait_while_all_are_busy() {
    let host = HttpHost::start(&["--max-connections", "2", "--body-read-timeout-ms", "60000"]);
    // Connections kept alive with nothing to do make room, the oldest first.
    let mut oldest = served_connection(&host);
    let mut newer = served_connection(&host);
    assert_initialized(&host.initialize());
    let mut byte = [0u8; 1];
    assert_eq!(oldest.read(&mut byte).unwrap(), 0, "the oldest idle connection was not closed");
    newer.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let error = newer.read(&mut byte).expect_err("the newer idle connection was closed too");
    assert!(matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "{error}");

    // A connection busy with a request (here, a body still coming) is never
    // cut: past the cap, the next waits until one closes.
    let partial = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{",
        host.addr
    );
    let busy: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = host.connect();
            stream.write_all(partial.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            stream
        })
        .collect();
    let mut waiting = host.connect();
    waiting.write_all(initialize_request(host.addr).as_bytes()).unwrap();
    waiting.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let error = waiting.read(&mut byte).expect_err("a connection past the cap was served");
    assert!(matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "{error}");

    drop(busy);
    waiting.set_read_timeout(Some(PATIENCE)).unwrap();
    assert_initialized(&read_answer(&mut waiting));
}

/// A connection the server has accepted (it answered a request on it), kept open.
fn served_connection(host: &HttpHost) -> TcpStream {
    let mut stream = host.connect();
    write!(stream, "GET /elsewhere HTTP/1.1\r\nHost: {}\r\n\r\n", host.addr).unwrap();
    read_until(&mut stream, &mut Vec::new(), "not found: MCP is served at /mcp\n");
    stream
}

/// Reads from `stream` into `seen` until `seen` contains `text`.
fn read_until(stream: &mut TcpStream, seen: &mut Vec<u8>, text: &str) {
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(seen).contains(text) {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before {text:?}: {}", String::from_utf8_lossy(seen));
        seen.extend_from_slice(&buffer[..n]);
    }
}

#[test]
fn a_stalled_body_gets_408_and_the_connection_closes() {
    let host = HttpHost::start(&["--body-read-timeout-ms", "300"]);
    let mut stream = host.connect();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        host.addr
    );
    let answer = send(&mut stream, &request);
    assert_eq!(answer.status, 408, "{}", answer.head);
    assert_eq!(answer.header("connection"), Some("close"));
    assert_eq!(answer.body, "request timeout: the body did not arrive within 300 ms\n");
}

#[test]
fn a_body_over_the_cap_gets_413() {
    let host = HttpHost::start(&["--max-request-kib", "1"]);
    let answer = send(&mut host.connect(), &post(host.addr, &" ".repeat(1025)));
    assert_eq!(answer.status, 413, "{}", answer.head);
    assert_eq!(answer.body, "payload too large: the request body is over 1 KiB (--max-request-kib)\n");
    // The cap itself is accepted.
    let padded = format!(
        "{:<1024}",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"http-tests","version":"1.0.0"}}}"#
    );
    assert_initialized(&send(&mut host.connect(), &post(host.addr, &padded)));
}

#[test]
fn sessions_past_the_cap_get_503_until_one_ends() {
    let host = HttpHost::start(&["--max-sessions", "3"]);
    let sessions: Vec<String> = (0..3).map(|_| assert_initialized(&host.initialize())).collect();

    let refused = host.initialize();
    assert_eq!(refused.status, 503, "{}\n{}", refused.head, refused.body);
    assert_eq!(
        refused.body,
        "service unavailable: the server holds its maximum of 3 sessions (--max-sessions); \
         retry later, or end a session with DELETE\n"
    );

    assert_eq!(host.delete(&sessions[0]).status, 200);
    assert_initialized(&host.initialize());
    assert_eq!(host.initialize().status, 503);
}

/// Opens a session and sends `notifications/initialized`; returns its id
/// and the headers a request on it carries.
fn initialized_session(host: &HttpHost) -> (String, String) {
    let session = assert_initialized(&host.initialize());
    let headers = format!("Host: {}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n", host.addr);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = send(
        &mut host.connect(),
        &format!(
            "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{initialized}",
            initialized.len()
        ),
    );
    assert_eq!(answer.status, 202, "{}\n{}", answer.head, answer.body);
    (session, headers)
}

#[test]
fn a_session_hears_of_catalog_changes_until_it_ends() {
    let dir = support::plugin_dir(&["code_review"]);
    let host = HttpHost::start(&["--plugins", dir.path().to_str().unwrap()]);
    let (session, headers) = initialized_session(&host);
    let mut events = host.connect();
    write!(events, "GET /mcp HTTP/1.1\r\n{headers}Accept: text/event-stream\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    // The stream is open once its headers have come.
    read_until(&mut events, &mut seen, "\r\n\r\n");

    support::install(dir.path(), "media_prompts", "media_prompts.wasm");
    read_until(&mut events, &mut seen, "notifications/prompts/list_changed");

    assert!(!host.stderr().contains("list_changed notifier stopped"));
    assert_eq!(host.delete(&session).status, 200);
    host.wait_for_stderr("a session's list_changed notifier stopped");
}

#[test]
fn max_request_kib_out_of_range_is_refused() {
    for value in ["0", "1048577", "18014398509481984"] {
        let output = Command::new(BINARY).args(["serve", "--http", "127.0.0.1:0", "--max-request-kib", value]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "--max-request-kib {value} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("invalid value '{value}' for '--max-request-kib <KIB>': ")), "{stderr}");
    }
    let output = Command::new(BINARY).args(["serve", "--http", "127.0.0.1:0", "--max-request-kib", "0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("0 is not in 1..=1048576"));
}

/// The events of an open `text/event-stream` response, read from its chunks.
struct Events {
    stream: TcpStream,
    /// Bytes of the body not yet split into events.
    body: Vec<u8>,
    /// Bytes read from the connection not yet de-chunked.
    raw: Vec<u8>,
}

/// One server-sent event: its id and its data.
#[derive(Debug, PartialEq)]
struct Event {
    id: Option<String>,
    data: String,
}

impl Events {
    /// Sends `request` (a GET) on a new connection and reads the head.
    fn open(host: &HttpHost, request: &str) -> Events {
        let mut stream = host.connect();
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        read_until(&mut stream, &mut raw, "\r\n\r\n");
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
        Events { stream, body: Vec::new(), raw: raw[end..].to_vec() }
    }

    /// The next event that carries an id (keep-alive comments are skipped).
    fn next(&mut self) -> Event {
        self.next_within(PATIENCE).expect("no event came")
    }

    /// The next event that carries an id, if one comes within `wait`.
    fn next_within(&mut self, wait: Duration) -> Option<Event> {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        loop {
            if let Some(end) = self.body.windows(2).position(|w| w == b"\n\n") {
                let block = String::from_utf8(self.body.drain(..end + 2).collect()).unwrap();
                let mut event = Event { id: None, data: String::new() };
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        event.id = Some(id.trim().to_string());
                    } else if let Some(data) = line.strip_prefix("data:") {
                        event.data.push_str(data.trim());
                    }
                }
                if event.id.is_some() {
                    return Some(event);
                }
                continue;
            }
            if !self.read_chunk() {
                return None;
            }
        }
    }

    /// Moves one chunk of the body from `raw` to `body`, reading as needed;
    /// false if the read timed out first.
    fn read_chunk(&mut self) -> bool {
        let mut buffer = [0u8; 4096];
        loop {
            if let Some(line_end) = self.raw.windows(2).position(|w| w == b"\r\n") {
                let size = usize::from_str_radix(std::str::from_utf8(&self.raw[..line_end]).unwrap().trim(), 16).unwrap();
                assert!(size > 0, "the event stream ended");
                if self.raw.len() >= line_end + 2 + size + 2 {
                    self.body.extend_from_slice(&self.raw[line_end + 2..line_end + 2 + size]);
                    self.raw.drain(..line_end + 2 + size + 2);
                    return true;
                }
            }
            let n = match self.stream.read(&mut buffer) {
                Ok(n) => n,
                Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => return false,
                Err(error) => panic!("reading the event stream: {error}"),
            };
            assert!(n > 0, "closed mid-stream");
            self.raw.extend_from_slice(&buffer[..n]);
        }
    }
}

#[test]
fn a_resumed_event_stream_sends_only_the_events_after_the_last_one_seen() {
    // Issue "Writing and shipping a pack, round 3": rmcp gave the priming
    // event and the first notification both id 0, and replayed from the
    // event named in Last-Event-ID inclusive, so every reconnect repeated
    // the last list_changed.
    let dir = support::plugin_dir(&["code_review"]);
    let host = HttpHost::start(&["--plugins", dir.path().to_str().unwrap()]);
    let (_session, headers) = initialized_session(&host);
    let list_changed = r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#;

    let mut events = Events::open(&host, &format!("GET /mcp HTTP/1.1\r\n{headers}Accept: text/event-stream\r\n\r\n"));
    assert_eq!(events.next(), Event { id: Some("0".into()), data: String::new() }, "the priming event");
    support::install(dir.path(), "media_prompts", "media_prompts.wasm");
    // Each id carries this process's tag (another process's ids name other
    // events: host/src/transport/http/sessions.rs, `event_ids`).
    let first = events.next();
    let tag = first.id.as_deref().and_then(|id| id.strip_suffix(".1")).expect("a tagged id").to_string();
    assert!(tag.len() == 8 && tag.bytes().all(|byte| byte.is_ascii_hexdigit()), "{tag}");
    let changed = |n: &str| Event { id: Some(format!("{tag}.{n}")), data: list_changed.to_string() };
    assert_eq!(first, changed("1"));
    support::install(dir.path(), "writing_assistant", "writing_assistant.wasm");
    assert_eq!(events.next(), changed("2"));

    // The client goes away having seen event 2; a change comes meanwhile.
    drop(events);
    std::fs::remove_file(dir.path().join("media_prompts.wasm")).unwrap();
    support::wait_for_text(&host.stderr, "plugin removed", 1);

    // Resuming: until the server has noticed that the last stream's client
    // went away, rmcp makes a new stream a "shadow" that is sent nothing,
    // so the stream is opened again until the event missed comes.
    let resume = |last: &str, first: Event| -> Events {
        // The priming event's 0 is untagged; every other id is this process's.
        let last = if last == "0" { last.to_string() } else { format!("{tag}.{last}") };
        for _ in 0..50 {
            let request = format!("GET /mcp HTTP/1.1\r\n{headers}Accept: text/event-stream\r\nLast-Event-ID: {last}\r\n\r\n");
            let mut resumed = Events::open(&host, &request);
            if let Some(event) = resumed.next_within(Duration::from_millis(500)) {
                assert_eq!(event, first, "resumed after {last}");
                return resumed;
            }
        }
        panic!("no stream resumed after {last}");
    };
    let mut resumed = resume("2", changed("3"));
    // Further changes continue the numbering on the resumed stream.
    std::fs::remove_file(dir.path().join("writing_assistant.wasm")).unwrap();
    assert_eq!(resumed.next(), changed("4"));
    drop(resumed);

    // A client that saw only the priming event gets every event.
    let mut everything = resume("0", changed("1"));
    for id in ["2", "3", "4"] {
        assert_eq!(everything.next(), changed(id));
    }
    drop(everything);
    // One that saw every event gets only the next.
    support::install(dir.path(), "media_prompts", "media_prompts.wasm");
    let mut up_to_date = resume("4", changed("5"));
    assert_eq!(up_to_date.next_within(Duration::from_millis(300)), None, "nothing after event 5");
}

/// A POST of `body` on the session whose request headers are `headers`.
fn post_on(headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Starts `prompts/get` of the hostile pack's `sleep` (which runs until its
/// deadline) on the session of `headers`, and returns its connection once
/// the call is running (the metrics count it in flight).
fn start_sleeping(host: &HttpHost, headers: &str, id: u64) -> TcpStream {
    let mut call = host.connect();
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/get","params":{{"name":"sleep"}}}}"#);
    call.write_all(post_on(headers, &body).as_bytes()).unwrap();
    support::wait_for_in_flight(support::metrics_address(&host.stderr), 1);
    call
}

/// The hostile pack served over HTTP, each call's deadline `deadline_ms`.
fn hostile_host(deadline_ms: &str) -> (tempfile::TempDir, HttpHost) {
    let dir = support::plugin_dir(&["hostile"]);
    let host = HttpHost::start(&["--plugins", dir.path().to_str().unwrap(), "--deadline-ms", deadline_ms, "--metrics", "127.0.0.1:0"]);
    (dir, host)
}

/// The rest of a response: its status, content type and body, once the
/// server closes the connection (within `PATIENCE`, far less than the
/// call's deadline).
fn rest_of(mut call: TcpStream) -> (u16, String, String) {
    let answer = read_answer(&mut call);
    (answer.status, answer.header("content-type").unwrap_or_default().to_string(), answer.body)
}

#[test]
fn hot_requests_are_answered_as_json_and_the_others_as_event_streams() {
    let (_dir, host) = hostile_host("1000");
    let (_session, headers) = initialized_session(&host);
    let listed = send(&mut host.connect(), &post_on(&headers, r#"{"jsonrpc":"2.0","id":8,"method":"prompts/list"}"#));
    assert_eq!((listed.status, listed.header("content-type")), (200, Some("application/json")));
    assert!(listed.body.starts_with(r#"{"jsonrpc":"2.0","id":8,"result":{"prompts":[{"name":""#), "{}", listed.body);
    let completed = r#"{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"spin"},"argument":{"name":"x","value":""}}}"#;
    let completed = send(&mut host.connect(), &post_on(&headers, completed));
    assert_eq!((completed.status, completed.header("content-type")), (200, Some("application/json")));
    assert!(completed.body.starts_with(r#"{"jsonrpc":"2.0","id":9,"#), "{}", completed.body);
    // Not hot: through rmcp's session, as an event stream.
    let pinged = send(&mut host.connect(), &post_on(&headers, r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#));
    assert_eq!((pinged.status, pinged.header("content-type")), (200, Some("text/event-stream")));
    assert!(pinged.body.contains(r#"data: {"jsonrpc":"2.0","id":10,"result":{}}"#), "{}", pinged.body);
}

#[test]
fn a_hot_request_the_client_cancels_ends_unanswered_and_the_session_serves_on() {
    let (_dir, host) = hostile_host("60000");
    let (_session, headers) = initialized_session(&host);
    let call = start_sleeping(&host, &headers, 7);

    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"no longer needed"}}"#;
    assert_eq!(send(&mut host.connect(), &post_on(&headers, cancel)).status, 202);
    // rmcp sends no answer to a request its client cancelled; nor does the
    // host: an event stream without an event.
    assert_eq!(rest_of(call), (200, "text/event-stream".to_string(), "0\r\n\r\n".to_string()));

    let listed = send(&mut host.connect(), &post_on(&headers, r#"{"jsonrpc":"2.0","id":8,"method":"prompts/list"}"#));
    assert!(listed.body.starts_with(r#"{"jsonrpc":"2.0","id":8,"result":{"prompts":["#), "{}", listed.body);
}

#[test]
fn a_cancellation_naming_another_request_or_session_cancels_nothing_here() {
    let (_dir, host) = hostile_host("1500");
    let (_session, headers) = initialized_session(&host);
    let (_other, other_headers) = initialized_session(&host);
    let call = start_sleeping(&host, &headers, 7);
    for (on, id) in [(&headers, 8), (&other_headers, 7)] {
        let cancel = format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#);
        assert_eq!(send(&mut host.connect(), &post_on(on, &cancel)).status, 202);
    }
    // Still running: it meets its deadline, and that is its answer.
    let (status, content_type, body) = rest_of(call);
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert!(
        body.starts_with(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"plugin 'hostile' exceeded its 1500 ms deadline"#),
        "{body}"
    );
}

#[test]
fn ending_a_session_ends_its_hot_requests() {
    let (_dir, host) = hostile_host("60000");
    let (session, headers) = initialized_session(&host);
    let call = start_sleeping(&host, &headers, 7);
    assert_eq!(host.delete(&session).status, 200);
    assert_eq!(rest_of(call), (200, "text/event-stream".to_string(), "0\r\n\r\n".to_string()));
}
