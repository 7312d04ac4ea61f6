//! Methods of capabilities this server does not declare (tools, resources):
//! -32601 from protocol 2026-07-28 on, which requires it; the empty lists
//! earlier revisions, and their conformance suite, expect before it.

mod support;

use serde_json::{Value, json};
use support::Server;

/// The `_meta` a 2026-07-28 client sends with every request, in place of a
/// handshake.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "prompt-host-tests", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[test]
fn a_2026_07_28_client_gets_method_not_found_for_tools_and_resources() {
    let mut server = Server::spawn(&[]);
    for method in ["tools/list", "resources/list", "resources/templates/list"] {
        let error = server.error(method, json!({ "_meta": meta_2026() }));
        assert_eq!((error["code"].as_i64(), error["message"].as_str()), (Some(-32601), Some(method)), "{method}");
    }
    // The capability it does declare is served.
    let page = server.result("prompts/list", json!({ "_meta": meta_2026() }));
    assert_eq!(page["prompts"][0]["name"], "code_review");
}

#[test]
fn an_earlier_client_gets_empty_lists() {
    let mut server = Server::start(&[]);
    assert_eq!(server.result("tools/list", json!({})), json!({ "tools": [] }));
    assert_eq!(server.result("resources/list", json!({})), json!({ "resources": [] }));
    assert_eq!(server.result("resources/templates/list", json!({})), json!({ "resourceTemplates": [] }));
}
