//! No client of the HTTP front can take every place, over the real binary:
//! long-lived streams (`subscriptions/listen`, a session's GET stream) have
//! caps of their own and leave a quarter of `--max-connections` to other
//! requests and to `/healthz`; idle sockets are shed, the oldest first; the
//! session cap counts only `initialize`, so stateless 2026-07-28 requests are
//! never refused for it; and at SIGTERM the streams end at once instead of
//! holding the stop for the whole grace. (Tenants, with tokens of a real
//! OpenID provider: tests/python/test_fair_share.py.)

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{HTTP_INITIALIZE, send_signal, spawn_http, wait_for_text};

const PATIENCE: Duration = Duration::from_secs(30);

struct HttpHost {
    child: Child,
    stderr: Arc<Mutex<String>>,
    addr: SocketAddr,
}

impl HttpHost {
    fn start(extra: &[&str]) -> HttpHost {
        let (child, stderr, addr) = spawn_http("127.0.0.1:0", extra);
        HttpHost { child, stderr, addr }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
    }

    /// Sends `request` on a new connection and reads the answer until the
    /// server closes it.
    fn exchange(&self, request: &str) -> (u16, String) {
        let mut stream = self.connect();
        stream.write_all(request.as_bytes()).unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).expect("the server neither answered nor closed");
        support::http_status(&String::from_utf8_lossy(&bytes))
    }

    /// A `subscriptions/listen` stream, open (its headers read).
    fn listen(&self) -> TcpStream {
        let mut stream = self.connect();
        stream.write_all(post_2026(self.addr, &listen_body(), false).as_bytes()).unwrap();
        let head = support::read_until_text(&mut stream, "\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        stream
    }
}

impl Drop for HttpHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listen_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": { "notifications": { "promptsListChanged": true }, "_meta": support::meta_2026(json!({})) }
    })
    .to_string()
}

fn discover_body() -> String {
    json!({ "jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": { "_meta": support::meta_2026(json!({})) } }).to_string()
}

/// A 2026-07-28 POST of `body`, with the headers that revision requires.
fn post_2026(addr: SocketAddr, body: &str, close: bool) -> String {
    let close = if close { "Connection: close\r\n" } else { "" };
    let method = serde_json::from_str::<serde_json::Value>(body).unwrap()["method"].as_str().unwrap().to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{close}\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn healthz(addr: SocketAddr) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

#[test]
fn a_client_holding_its_stream_cap_and_idle_sockets_leaves_room_for_others_and_healthz() {
    // Four connections: three may stream, one is kept for the rest. Without
    // tokens there are no users: the (default) tenant's cap holds.
    let host = HttpHost::start(&["--max-connections", "4", "--max-streams-per-tenant", "2"]);
    let streams: Vec<TcpStream> = (0..2).map(|_| host.listen()).collect();
    let (status, refused) = host.exchange(&post_2026(host.addr, &listen_body(), true));
    assert_eq!(status, 429, "{refused}");
    assert!(
        refused.ends_with(
            "\r\n\r\ntoo many requests: this tenant holds its maximum of 2 open streams (--max-streams-per-tenant); \
             close one first\n"
        ),
        "{refused}"
    );
    // The same client takes the other places with sockets that send nothing.
    let idle: Vec<TcpStream> = (0..2).map(|_| host.connect()).collect();
    std::thread::sleep(Duration::from_millis(200));

    let started = Instant::now();
    let (status, health) = host.exchange(&healthz(host.addr));
    assert_eq!(status, 200, "{health}");
    let (status, discovered) = host.exchange(&post_2026(host.addr, &discover_body(), true));
    assert_eq!(status, 200, "{discovered}");
    assert!(discovered.contains(r#""id":2,"result":{"resultType":"complete","supportedVersions":["#), "{discovered}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "served in {took:?}");
    // The idle sockets were shed, the oldest first; the streams were not.
    let mut byte = [0u8; 1];
    let mut oldest = idle.into_iter().next().unwrap();
    assert_eq!(oldest.read(&mut byte).unwrap(), 0, "the oldest idle socket is closed");
    for mut stream in streams {
        stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let error = stream.read(&mut byte).map(|n| n.to_string()).expect_err("a stream was closed");
        assert!(matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "{error}");
    }
}

#[test]
fn with_few_connections_one_tenant_takes_at_most_half_of_the_streams() {
    // Four connections, one kept: three streams in all, and one tenant (here
    // the default, without tokens) two of them, whatever
    // --max-streams-per-tenant says (256 by default). The 503 of the streams
    // in all, with two tenants: tests/python/test_fair_share.py.
    let host = HttpHost::start(&["--max-connections", "4"]);
    let _streams: Vec<TcpStream> = (0..2).map(|_| host.listen()).collect();
    let (status, refused) = host.exchange(&post_2026(host.addr, &listen_body(), true));
    assert_eq!(status, 429, "{refused}");
    assert!(
        refused.ends_with(
            "\r\n\r\ntoo many requests: this tenant holds its maximum of 2 open streams (half of the streams in all, \
             below --max-streams-per-tenant); close one first\n"
        ),
        "{refused}"
    );
    let (status, health) = host.exchange(&healthz(host.addr));
    assert_eq!(status, 200, "{health}");
}

#[test]
fn sigterm_ends_open_streams_at_once_instead_of_waiting_the_grace() {
    let host = HttpHost::start(&["--shutdown-grace-ms", "8000"]);
    let mut stream = host.listen();
    let started = Instant::now();
    send_signal(host.child.id(), "TERM");
    // The stream ends cleanly: its last chunk, then the connection closes.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the stream ended");
    assert!(String::from_utf8_lossy(&rest).ends_with("0\r\n\r\n"), "{:?}", String::from_utf8_lossy(&rest));
    let mut child = host;
    let status = child.child.wait().unwrap();
    let took = started.elapsed();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(4), "stopping took {took:?} of an 8 s grace");
    let log = wait_for_text(&child.stderr, "stopped", 1);
    assert!(log.contains("SIGTERM: stopping"), "{log}");
    assert!(!log.contains("abandoning calls still running"), "{log}");
}

#[test]
fn a_full_session_table_refuses_only_initialize() {
    let host = HttpHost::start(&["--max-sessions", "2"]);
    let initialize = support::http_post(&host.addr.to_string(), "", HTTP_INITIALIZE);
    for _ in 0..2 {
        assert_eq!(host.exchange(&initialize).0, 200);
    }
    let (status, refused) = host.exchange(&initialize);
    assert_eq!(status, 503, "{refused}");
    assert!(
        refused.ends_with("the server holds its maximum of 2 sessions (--max-sessions); retry later, or end a session with DELETE\n"),
        "{refused}"
    );
    // So is an initialize in a batch (it was answered 500).
    let batch = support::http_post(&host.addr.to_string(), "", &format!("[{HTTP_INITIALIZE}]"));
    let (status, refused) = host.exchange(&batch);
    assert_eq!(status, 503, "{refused}");
    assert!(
        refused.ends_with("the server holds its maximum of 2 sessions (--max-sessions); retry later, or end a session with DELETE\n"),
        "{refused}"
    );

    // Stateless requests are served: server/discover, and prompts/list.
    let (status, discovered) = host.exchange(&post_2026(host.addr, &discover_body(), true));
    assert_eq!(status, 200, "{discovered}");
    assert!(discovered.contains(r#""id":2,"result":{"resultType":"complete","supportedVersions":["#), "{discovered}");
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": { "_meta": support::meta_2026(json!({})) } });
    let (status, listed) = host.exchange(&post_2026(host.addr, &list.to_string(), true));
    assert_eq!(status, 200, "{listed}");
    assert!(listed.contains(r#""prompts":["#), "{listed}");

    // A made-up session id bypasses nothing: the session is unknown (404),
    // on an initialize as on any legacy request.
    let made_up = "Mcp-Session-Id: 00000000-made-up\r\nMCP-Protocol-Version: 2025-11-25\r\n";
    let (status, answer) = host.exchange(&support::http_post(&host.addr.to_string(), made_up, HTTP_INITIALIZE));
    assert_eq!(status, 404, "{answer}");
    let ping = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    let (status, answer) = host.exchange(&support::http_post(&host.addr.to_string(), made_up, ping));
    assert_eq!(status, 404, "{answer}");
}
