//! Methods of capabilities this server does not declare (tools, and
//! resources and skills while no pack carries content): every one answers
//! -32601 from protocol 2026-07-28 on, which requires it; before it, the list
//! methods answer the empty lists earlier revisions (and their conformance
//! suite) expect, and the others -32601 as they always did. The servers here
//! serve code_review alone, a 0.1 pack that carries no skill or resource.

mod support;

use serde_json::{Value, json};
use support::Server;

/// Each method of tools and resources, with well-formed params for it.
fn undeclared_methods() -> Vec<(&'static str, Value)> {
    vec![
        ("tools/list", json!({})),
        ("tools/call", json!({ "name": "anything", "arguments": {} })),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({ "uri": "file:///etc/hostname" })),
        ("resources/subscribe", json!({ "uri": "file:///etc/hostname" })),
        ("resources/unsubscribe", json!({ "uri": "file:///etc/hostname" })),
        ("skills/list", json!({})),
        ("skills/get", json!({ "uri": "skill://a/SKILL.md" })),
        ("resources/directory/read", json!({ "uri": "skill://a" })),
    ]
}

fn with_meta(mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    params
}

#[test]
fn a_2026_07_28_client_gets_method_not_found_for_every_tools_and_resources_method() {
    let plugins = support::plugin_dir(&["code_review"]);
    let mut server = Server::spawn(&["--plugins", plugins.path().to_str().unwrap()]);
    for (method, params) in undeclared_methods() {
        let error = server.error(method, with_meta(params, support::meta_2026(json!({}))));
        assert_eq!((error["code"].as_i64(), error["message"].as_str()), (Some(-32601), Some(method)), "{method}");
    }
    // The capabilities it does declare are served.
    let page = server.result("prompts/list", json!({ "_meta": support::meta_2026(json!({})) }));
    assert_eq!(page["prompts"][0]["name"], "code_review");
}

#[test]
fn an_earlier_client_gets_empty_lists_and_method_not_found_for_the_rest() {
    let (_plugins, mut server) = support::serve_plugins(&["code_review"], &[]);
    for (method, params) in undeclared_methods() {
        let response = server.request(method, params);
        let expected = match method {
            "tools/list" => json!({ "result": { "tools": [] } }),
            "resources/list" => json!({ "result": { "resources": [] } }),
            "resources/templates/list" => json!({ "result": { "resourceTemplates": [] } }),
            _ => json!({ "error": { "code": -32601, "message": method } }),
        };
        let outcome = response.get("result").map(|result| json!({ "result": result }));
        let outcome = outcome.unwrap_or_else(|| json!({ "error": response["error"] }));
        assert_eq!(outcome, expected, "{method}");
    }
    // logging is declared: an earlier client may set its level.
    assert_eq!(server.result("logging/setLevel", json!({ "level": "info" })), json!({}));
}
