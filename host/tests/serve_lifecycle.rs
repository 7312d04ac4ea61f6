//! How `serve` starts and stops, over the real binary: what can be wrong
//! without a plugin is reported before any plugin loads; `--http` takes a
//! host name; every refusal of the HTTP front is logged; and SIGTERM lets the
//! calls in flight finish and answer before the process exits.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};

use serde_json::json;
use support::{HTTP_INITIALIZE, Server, http_exchange, http_post, send_signal, serve_plugins, spawn_http, wait_for_text};

/// The last line of a server that stopped.
const STOPPED: &str = " stopped\n";

fn serve(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prompt-host"))
        .arg("serve")
        .args(args)
        .env("RUST_LOG", "info")
        .env("XDG_CACHE_HOME", std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"))
        .output()
        .unwrap()
}

/// Asserts that the log shows no plugin loaded, from the cache or compiled.
fn assert_nothing_loaded(stderr: &str) {
    for sign in ["prompt_host::loader", "prompt_host::startup", "compiling", "plugin loaded"] {
        assert!(!stderr.contains(sign), "a plugin was loaded first ({sign:?}):\n{stderr}");
    }
}

#[test]
fn an_address_in_use_is_reported_before_any_plugin_loads() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let plugins = support::plugin_dir(&["code_review"]);
    let output = serve(&["--http", &addr, "--plugins", plugins.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let port = taken.local_addr().unwrap().port();
    assert!(stderr.contains(&format!("cannot listen on {addr}: port {port} is already in use")), "{stderr}");
    assert_nothing_loaded(&stderr);
}

#[test]
fn an_unreadable_token_file_is_reported_before_any_plugin_loads() {
    let plugins = support::plugin_dir(&["code_review"]);
    let output =
        serve(&["--http", "127.0.0.1:0", "--auth-token-file", "/nonexistent/token", "--plugins", plugins.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot read the token file /nonexistent/token: No such file or directory"), "{stderr}");
    assert_nothing_loaded(&stderr);
}

#[test]
fn a_host_name_resolving_to_loopback_is_served() {
    // A port free a moment ago (a name's addresses are bound on one port).
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (mut child, _stderr, addr) = spawn_http(&format!("localhost:{port}"), &[]);
    assert_eq!(addr.port(), port);
    let (status, answer) = http_exchange(addr, &http_post(&format!("localhost:{port}"), "", HTTP_INITIALIZE));
    let _ = child.kill();
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains(r#""serverInfo":{"name":"prompt-host""#), "{answer}");
}

#[test]
fn an_address_that_is_not_host_and_port_is_refused_with_what_to_write() {
    let output = serve(&["--http", "nosuchhost.invalid:1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(r#"error: the MCP session could not start: --http "nosuchhost.invalid:1": cannot resolve "nosuchhost.invalid": "#),
        "{stderr}"
    );
    assert!(stderr.contains("; write HOST:PORT or IP:PORT, such as localhost:8080, 127.0.0.1:8080 or [::1]:8080"), "{stderr}");

    let output = serve(&["--http", "localhost"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(r#"--http "localhost" has no port: write HOST:PORT or IP:PORT"#), "{stderr}");
}

#[test]
fn every_refusal_of_the_http_front_is_logged_with_the_client_and_the_reason() {
    let token_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token_file.path(), "the-right-token\n").unwrap();
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-token-file", token_file.path().to_str().unwrap()]);
    let host = addr.to_string();
    let authorized = "Authorization: Bearer the-right-token\r\n";

    let (status, _) = http_exchange(addr, &http_post(&host, "", HTTP_INITIALIZE));
    assert_eq!(status, 401);
    let (status, _) = http_exchange(addr, &http_post(&host, "Authorization: Bearer guessed-wrong-4711\r\n", HTTP_INITIALIZE));
    assert_eq!(status, 401);
    let (status, answer) = http_exchange(addr, &http_post("evil.example:8080", authorized, HTTP_INITIALIZE));
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer.ends_with(
            "\r\n\r\nforbidden: Host \"evil.example:8080\" is not allowed; start the server with --allow-host evil.example to accept it\n"
        ),
        "{answer}"
    );
    let origin = format!("{authorized}Origin: http://evil.example\r\n");
    let (status, answer) = http_exchange(addr, &http_post(&host, &origin, HTTP_INITIALIZE));
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer.ends_with(
            "\r\n\r\nforbidden: Origin \"http://evil.example\" is not allowed; start the server with --allow-origin http://evil.example to accept it\n"
        ),
        "{answer}"
    );
    // The right token, Host and Origin pass.
    let (status, answer) = http_exchange(addr, &http_post(&host, authorized, HTTP_INITIALIZE));
    assert_eq!(status, 200, "{answer}");

    let logged = wait_for_text(&stderr, "refused an HTTP request (403): Origin", 1);
    let _ = child.kill();
    for line in [
        "refused an HTTP request (401): no bearer token peer=127.0.0.1:",
        "refused an HTTP request (401): wrong bearer token peer=127.0.0.1:",
        "refused an HTTP request (403): Host not allowed (start with --allow-host HOST) peer=127.0.0.1:",
        "refused an HTTP request (403): Origin not allowed (start with --allow-origin ORIGIN) peer=127.0.0.1:",
    ] {
        assert_eq!(logged.matches(line).count(), 1, "{line:?} in:\n{logged}");
    }
    assert!(logged.contains(r#"host="evil.example:8080""#), "{logged}");
    assert!(logged.contains(r#"origin="http://evil.example""#), "{logged}");
    // rmcp's own line about the refusal is not logged besides.
    assert!(!logged.contains("rejected request"), "{logged}");
    assert!(!logged.contains("guessed-wrong-4711") && !logged.contains("the-right-token"), "a token was logged:\n{logged}");
}

#[test]
fn refusals_past_twenty_in_ten_seconds_are_counted_not_logged() {
    let token_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token_file.path(), "the-right-token\n").unwrap();
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--auth-token-file", token_file.path().to_str().unwrap()]);
    let host = addr.to_string();
    for _ in 0..25 {
        let (status, _) = http_exchange(addr, &http_post(&host, "", HTTP_INITIALIZE));
        assert_eq!(status, 401);
    }
    let logged = wait_for_text(&stderr, "refusal log rate limit reached", 1);
    let _ = child.kill();
    assert_eq!(logged.matches("refused an HTTP request (401): no bearer token").count(), 20, "{logged}");
    assert!(
        logged.contains("refusal log rate limit reached: at most 20 refused requests every 10 s are logged; the rest are counted"),
        "{logged}"
    );
}

#[test]
fn sigterm_lets_a_call_in_flight_over_stdio_answer_before_the_exit() {
    let (_dir, mut server) = serve_plugins(&["hostile"], &["--deadline-ms", "1500"]);
    let call = server.send_request("prompts/get", json!({ "name": "sleep" }));
    // Requests are read in order: once the ping is answered, the call is in flight.
    server.result("ping", json!({}));
    assert_eq!(server.terminate(), Some(0), "{}", server.stderr());
    let response = server.response(call);
    assert_eq!(response["error"]["code"], -32603, "{response}");
    assert_eq!(response["error"]["message"], "plugin 'hostile' exceeded its 1500 ms deadline");
    let stderr = server.wait_for_stderr(STOPPED);
    assert!(stderr.contains("SIGTERM: stopping; calls in flight have 10000 ms to finish"), "{stderr}");
    assert!(!stderr.contains("abandoning"), "{stderr}");
}

#[test]
fn a_call_still_running_after_the_grace_is_abandoned_and_logged() {
    let (_dir, mut server) = serve_plugins(&["hostile"], &["--deadline-ms", "60000", "--shutdown-grace-ms", "200"]);
    let call = server.send_request("prompts/get", json!({ "name": "sleep" }));
    server.result("ping", json!({}));
    assert_eq!(server.terminate(), Some(0), "{}", server.stderr());
    let stderr = server.wait_for_stderr(STOPPED);
    assert!(stderr.contains("SIGTERM: stopping; calls in flight have 200 ms to finish"), "{stderr}");
    assert!(
        stderr.contains("abandoning calls still running after the shutdown grace (--shutdown-grace-ms) calls=1 grace_ms=200"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("requests left unanswered count=1 ids=[Number({call})]")), "{stderr}");
}

#[test]
fn sigterm_stops_an_idle_stdio_server() {
    let mut server = Server::start(&[]);
    assert_eq!(server.terminate(), Some(0));
    let stderr = server.wait_for_stderr(STOPPED);
    assert!(stderr.contains("SIGTERM: stopping"), "{stderr}");
}

#[test]
fn a_sighup_while_plugins_load_is_said_and_a_sigterm_stops_the_server() {
    // A pack that lists its prompts until its deadline: loading it takes a
    // minute, and the signal comes while it does.
    let plugins = support::plugin_dir(&["hostile_list_loop"]);
    let mut server = Server::spawn(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--no-cache",
        "--fuel",
        "100000000000000",
        "--deadline-ms",
        "60000",
    ]);
    server.wait_for_stderr("compiled hostile_list_loop in ");
    // No reader of files listens yet: the SIGHUP ends nothing, and is said.
    support::send_signal(server.pid(), "HUP");
    server.wait_for_stderr(
        "SIGHUP while loading plugins: only what has finished loading reads its files again; send it again once the server serves",
    );
    assert_eq!(server.terminate(), Some(0));
    let stderr = server.wait_for_stderr("SIGTERM while loading plugins: stopped");
    assert!(!stderr.contains("serving "), "{stderr}");
}

#[test]
fn the_shutdown_grace_is_range_checked() {
    let output = serve(&["--shutdown-grace-ms", "3600001"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid value '3600001' for '--shutdown-grace-ms <MS>': 3600001 is not in 0..=3600000"), "{stderr}");
}

/// Reads from `stream` until what was read contains `text`; returns it all.
fn read_until(stream: &mut TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(text) {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before {text:?}: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn sigterm_lets_a_call_in_flight_over_http_answer_before_the_exit() {
    let plugins = support::plugin_dir(&["hostile"]);
    let (mut child, stderr, addr) =
        spawn_http("127.0.0.1:0", &["--plugins", plugins.path().to_str().unwrap(), "--deadline-ms", "1500", "--metrics", "127.0.0.1:0"]);
    let host = addr.to_string();
    let (status, answer) = http_exchange(addr, &http_post(&host, "", HTTP_INITIALIZE));
    assert_eq!(status, 200, "{answer}");
    let session = answer
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: ").or_else(|| line.strip_prefix("Mcp-Session-Id: ")))
        .expect("a session id")
        .trim()
        .to_string();
    let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let (status, answer) = http_exchange(addr, &http_post(&host, &headers, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
    assert_eq!(status, 202, "{answer}");

    let mut call = TcpStream::connect(addr).unwrap();
    call.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let get = r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"sleep"}}"#;
    call.write_all(http_post(&host, &headers, get).as_bytes()).unwrap();
    // Stopped once the call is running in its pack.
    support::wait_for_in_flight(support::metrics_address(&stderr), 1);
    send_signal(child.id(), "TERM");
    let answer = read_until(&mut call, "exceeded its 1500 ms deadline");
    assert!(answer.contains(r#""id":7"#) && answer.contains(r#""code":-32603"#), "{answer}");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let logged = wait_for_text(&stderr, STOPPED, 1);
    assert!(logged.contains("SIGTERM: stopping; calls in flight have 10000 ms to finish, then every session is closed"), "{logged}");
    assert!(!logged.contains("abandoning"), "{logged}");
}

#[test]
fn sigterm_answers_a_request_waiting_in_the_listen_queue() {
    // One connection at a time: while one is open, the next waits in the
    // kernel's listen queue with its request sent, as a proxy's request can
    // when the replica it went to is stopped. It is answered, not reset.
    let plugins = support::plugin_dir(&["code_review"]);
    let (mut child, stderr, addr) = spawn_http("127.0.0.1:0", &["--plugins", plugins.path().to_str().unwrap(), "--max-connections", "1"]);
    let host = addr.to_string();
    let mut open = TcpStream::connect(addr).unwrap();
    open.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let keep_alive = http_post(&host, "", HTTP_INITIALIZE).replace("Connection: close\r\n", "");
    assert_ne!(keep_alive, http_post(&host, "", HTTP_INITIALIZE));
    open.write_all(keep_alive.as_bytes()).unwrap();
    // Answered: the server holds this connection, its only one.
    read_until(&mut open, "serverInfo");

    let mut waiting = TcpStream::connect(addr).unwrap();
    waiting.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    waiting.write_all(http_post(&host, "", HTTP_INITIALIZE).as_bytes()).unwrap();
    send_signal(child.id(), "TERM");
    let mut answer = Vec::new();
    waiting.read_to_end(&mut answer).expect("the queued request was answered, not reset");
    let (status, answer) = support::http_status(&String::from_utf8_lossy(&answer));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains(r#""serverInfo":{"name":"prompt-host""#), "{answer}");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    wait_for_text(&stderr, STOPPED, 1);
}
