//! A request's W3C `traceparent` (from its `_meta`, SEP-414) is carried into
//! its log lines, as an escaped field; one that is not a valid traceparent
//! is ignored, as the client controls it.

mod support;

use serde_json::json;
use support::{Server, serve_plugins};

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

/// The log line of the refused `prompts/get` of the prompt named `name`.
fn refusal_line(server: &Server, name: &str) -> String {
    let log = server.wait_for_stderr(&format!("prompt=\"{name}\""));
    log.lines().find(|line| line.contains(&format!("prompt=\"{name}\""))).unwrap().to_string()
}

#[test]
fn a_failing_prompts_get_logs_the_traceparent_of_its_request() {
    let mut server = Server::start(&[]);
    let error = server.error("prompts/get", json!({ "name": "no_such_prompt", "_meta": { "traceparent": TRACEPARENT } }));
    assert_eq!(error["code"], -32602);
    let line = refusal_line(&server, "no_such_prompt");
    assert!(line.contains("DEBUG"), "{line}");
    assert!(line.contains(&format!("request{{traceparent=\"{TRACEPARENT}\"}}")), "{line}");
    assert!(line.contains("request refused"), "{line}");
}

#[test]
fn a_pack_failure_logs_the_traceparent_on_its_warn_line() {
    let (_dir, mut server) = serve_plugins(&["hostile"], &[]);
    server.error("prompts/get", json!({ "name": "panic", "_meta": { "traceparent": TRACEPARENT } }));
    let log = server.wait_for_stderr("plugin call failed");
    let line = log.lines().find(|line| line.contains("plugin call failed")).unwrap();
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&format!("request{{traceparent=\"{TRACEPARENT}\"}}")), "{line}");
    assert!(line.contains("prompt=\"panic\""), "{line}");
}

#[test]
fn a_traceparent_that_is_not_valid_is_not_logged() {
    let mut server = Server::start(&[]);
    let forged = format!("{TRACEPARENT}\nWARN forged line");
    for (name, traceparent) in [
        ("too_long", json!(format!("{TRACEPARENT}-00"))),
        ("a_newline", json!(forged)),
        ("uppercase", json!(TRACEPARENT.to_uppercase())),
        ("not_a_string", json!(7)),
    ] {
        server.error("prompts/get", json!({ "name": name, "_meta": { "traceparent": traceparent } }));
        let line = refusal_line(&server, name);
        assert!(!line.contains("traceparent"), "{line}");
    }
    assert!(!server.stderr().contains("forged line"), "{}", server.stderr());
}
