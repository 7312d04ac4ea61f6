//! stdio over Unix sockets, as Node-based clients (the official TypeScript
//! SDK, the MCP Inspector) start a server: stdin and stdout are socket pairs,
//! read and written without blocking. Messages larger than a socket's buffer
//! are read and written in parts.

mod support;

use serde_json::json;
use support::{Server, built_plugins, only_text};

const PREFIX: &str = "Please review this Python code:\n";
const SOCKETS: &str = "stdin and stdout are sockets: reading and writing them without blocking";

#[test]
fn a_server_on_socket_pairs_answers_requests_larger_than_the_socket_buffers() {
    let plugins = built_plugins();
    let mut server = Server::spawn_over_sockets(&["--plugins", plugins.to_str().unwrap()]);
    server.initialize("2025-11-25");
    server.wait_for_stderr(SOCKETS);
    let reply = server.get_prompt("code_review", json!({ "code": "fn main() {}" }));
    assert_eq!(only_text(&reply), format!("{PREFIX}fn main() {{}}"));

    // Just under the 1 MiB bound on a request's arguments: the request and
    // the reply are each many times a socket's buffer (about 200 KiB).
    let code = "x".repeat((1 << 20) - 64);
    let reply = server.get_prompt("code_review", json!({ "code": code }));
    assert_eq!(only_text(&reply).len(), PREFIX.len() + code.len());
    assert_eq!(only_text(&reply), format!("{PREFIX}{code}"));

    // Many requests written at once, answered each by its id.
    let ids: Vec<u64> = (0..50)
        .map(|index| server.send_request("prompts/get", json!({ "name": "code_review", "arguments": { "code": index.to_string() } })))
        .collect();
    for (index, id) in ids.into_iter().enumerate() {
        assert_eq!(only_text(&server.response(id)["result"]), format!("{PREFIX}{index}"));
    }
}

#[test]
fn a_server_on_socket_pairs_ends_when_the_client_closes_its_end() {
    let plugins = built_plugins();
    let mut server = Server::spawn_over_sockets(&["--plugins", plugins.to_str().unwrap()]);
    server.initialize("2025-11-25");
    assert_eq!(server.close_stdin(), Some(0));
    server.wait_for_stderr("stdio session ended");
    assert!(server.stderr().contains(SOCKETS), "{}", server.stderr());
}

#[test]
fn a_server_on_pipes_uses_rmcps_streams() {
    let plugins = built_plugins();
    let mut server = Server::spawn(&["--plugins", plugins.to_str().unwrap()]);
    server.initialize("2025-11-25");
    assert_eq!(only_text(&server.get_prompt("code_review", json!({ "code": "1" }))), format!("{PREFIX}1"));
    let stderr = server.wait_for_stderr("stdin and stdout are not both sockets: rmcp's stdio streams");
    assert!(!stderr.contains(SOCKETS), "{stderr}");
}
